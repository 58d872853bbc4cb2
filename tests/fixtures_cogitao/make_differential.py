"""Make tests/data/cogitao_differential.json.gz: COGITAO's own outcomes on a fixed set of cases.

Run from the project root with a Python that has COGITAO's light dependencies and a COGITAO checkout
(ktroyan/COGITAO at 8c4ca621edc9), for example a virtualenv inside the checkout:

    python3.12 -m venv ../COGITAO/.venv
    ../COGITAO/.venv/bin/pip install numpy scipy matplotlib pillow pydantic h5py
    ../COGITAO/.venv/bin/python tests/fixtures_cogitao/make_differential.py ../COGITAO

COGITAO is imported from the checkout without its package `__init__` (which needs torch) and with an
empty stand-in for `arcworld.hdf5_utils` (which needs the shape library file, not used here). Each
case runs COGITAO's released generator step, `Generator.apply_transform_suite_to_grid_2`, on objects
placed in a grid, after the constraint check of `Generator.generate_single_task` (the conditionals of
`get_shape_constraints_from_rule_sampled` evaluated on each initial object). The outcome is
"rejected" (an object breaks a constraint), "invalid" (the step raised or returned None) or the
output grid's non-background region [top, left, rows].

Cases (fixed seed): every object with every transformation; random sequences of depth 2 and 3; every
sequence of every preset of experiment_configs/compositionality.py and generalization.py on several
objects; grids of 2-4 objects, some with small objects inside a larger one's box and a crop first
(where COGITAO's kept boxes meet other objects). Single objects sit at (50, 50) of a 100x100 grid
(COGITAO's largest). Objects are mostly drawn among those COGITAO admits for the sequence.
Each case also lists the events seen in COGITAO's run that the project deliberately handles
otherwise (see tests/test_cogitao_differential.py), so that the test can name every divergence.
"""

from __future__ import annotations

import gzip
import json
import sys
import types
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "data" / "cogitao_differential.json.gz"
SEED = 20250601
BIG = (100, 100)
BIG_ANCHOR = (50, 50)
PRESET_OBJECTS = 6
RANDOM_SEQUENCES = {2: 1500, 3: 1500}
GRID_CASES = 900
NESTED_CASES = 400
CROPS = ("crop_top_side", "crop_bottom_side", "crop_left_side", "crop_right_side", "crop_contours")


def import_cogitao(checkout: Path) -> types.SimpleNamespace:
    """COGITAO's modules, imported from the checkout without its package __init__ and shape library."""
    for name in ("arcworld", "arcworld.shapes", "experiment_configs"):
        package = types.ModuleType(name)
        package.__path__ = [str(checkout / name.replace(".", "/"))]
        sys.modules[name] = package
    sys.modules["arcworld.hdf5_utils"] = types.ModuleType("arcworld.hdf5_utils")
    from arcworld import general_utils, generator
    from arcworld.conditionals import single_shape_conditionals as conditionals
    from arcworld.point_cloud import point_cloud
    from arcworld.shapes import base
    from arcworld.transformations import shape_transformations as transformations
    from experiment_configs import compositionality, generalization

    return types.SimpleNamespace(
        conditionals=conditionals, general_utils=general_utils, generator=generator, point_cloud=point_cloud,
        Shape=base.Shape, transformations=transformations,
        presets=compositionality.compositionality_configs + generalization.generalization_configs,
    )


# ---------------------------------------------------------------- objects


def tight(pixels: np.ndarray) -> bool:
    return bool(pixels[0].any() and pixels[-1].any() and pixels[:, 0].any() and pixels[:, -1].any())


def hand_objects() -> list[np.ndarray]:
    """Named shapes: dots, lines, rectangles, rings, letters, ties between colors, sparse objects."""
    rows = [
        [[4]], [[5, 8]], [[8, 5]], [[1, 9]], [[9, 1]], [[2, 7], [7, 2]], [[3, 3, 3, 3, 3, 3]],
        [[6], [6], [6], [6], [6]], [[1, 0, 0], [0, 1, 0], [0, 0, 1]], [[0, 0, 2], [0, 2, 0], [2, 0, 0]],
        [[3, 3, 3, 3], [3, 0, 0, 0], [3, 0, 0, 0], [3, 3, 3, 3]],  # C
        [[0, 0, 3], [0, 0, 3], [3, 0, 3], [3, 3, 3]],  # J
        [[5, 0, 0, 0], [5, 0, 0, 0], [5, 0, 0, 0], [5, 5, 5, 5]],  # L
        [[7, 7, 7, 7, 7], [0, 0, 7, 0, 0], [0, 0, 7, 0, 0], [0, 0, 7, 0, 0]],  # T
        [[0, 2, 0], [2, 2, 2], [0, 2, 0]],  # plus
        [[0, 0, 4, 0, 0], [0, 4, 4, 4, 0], [4, 4, 4, 4, 4], [0, 4, 4, 4, 0], [0, 0, 4, 0, 0]],  # diamond
        [[1, 1, 1], [1, 0, 1], [1, 1, 1]], [[9, 9, 9, 9], [9, 0, 0, 9], [9, 0, 0, 9], [9, 9, 9, 9]],
        [[0, 1, 0], [1, 0, 1], [0, 1, 0]],  # ring closed by diagonals
        [[2, 2, 2, 2, 2], [2, 0, 2, 0, 2], [2, 2, 2, 2, 2]],  # two holes
        [[6, 6, 6, 6, 6, 6], [6, 0, 0, 0, 0, 6], [6, 0, 6, 6, 0, 6], [6, 0, 0, 0, 0, 6], [6, 6, 6, 6, 6, 6]],
        [[9, 9, 9], [9, 0, 5], [9, 5, 5]], [[2, 2, 3], [2, 0, 3], [3, 3, 2]], [[5, 8, 5], [8, 0, 8], [5, 8, 5]],
        [[1, 1, 1, 1, 1], [1, 2, 2, 2, 1], [1, 2, 3, 2, 1], [1, 1, 1, 1, 1]],
        [[1, 0, 1], [0, 0, 0], [1, 0, 1]], [[3, 0, 0, 3], [0, 0, 0, 0], [0, 0, 0, 0], [3, 0, 0, 3]],
        [[4, 4, 0, 0], [4, 4, 0, 0], [0, 0, 0, 0], [0, 0, 0, 8]],
        [[7] * 7] + [[7] + [0] * 5 + [7]] * 5 + [[7] * 7],  # 7x7 ring
        [[2] * 8 for _ in range(6)],  # 6x8 block
        [[1, 2, 3, 4, 5, 6, 7, 8, 9]], [[8, 8, 9], [9, 1, 1], [1, 9, 8]], [[1, 9, 9, 5], [1, 9, 5, 5]],
        [[2, 2, 2, 2]], [[8], [8], [8], [8]], [[1, 2, 2, 1]], [[5], [9], [9], [5]],  # lines to put in containers
        [[4, 0, 0, 0, 0, 0]] * 5 + [[4] * 6],  # containers: a large L, C and U
        [[6] * 7] + [[6, 0, 0, 0, 0, 0, 0]] * 4 + [[6] * 7],
        [[3, 0, 0, 0, 0, 0, 3]] * 5 + [[3] * 7],
    ]
    return [np.array(r, dtype=np.int64) for r in rows]


def random_objects(rng: np.random.RandomState, count: int) -> list[np.ndarray]:
    """Random tight objects 1x1..6x6: dense or sparse masks, one, two or many colors, sometimes a hole."""
    found = []
    while len(found) < count:
        height, width = rng.randint(1, 7, 2)
        mask = rng.rand(height, width) < rng.choice([0.45, 0.7, 0.9])
        if height >= 3 and width >= 3 and rng.rand() < 0.3:
            mask[0], mask[-1], mask[:, 0], mask[:, -1] = True, True, True, True
            mask[rng.randint(1, height - 1), rng.randint(1, width - 1)] = False
        kind = rng.randint(3)
        palette = rng.choice(np.arange(1, 10), size=[1, 2, rng.randint(3, 6)][kind], replace=False)
        pixels = mask * palette[rng.randint(len(palette), size=mask.shape)]
        if pixels.any() and tight(pixels):
            found.append(pixels.astype(np.int64))
    return found


# ---------------------------------------------------------------- running COGITAO


class Recorder:
    """COGITAO with probes: each records an event that the project deliberately handles otherwise."""

    def __init__(self, cogitao: types.SimpleNamespace) -> None:
        self.cogitao = cogitao
        self.events: set[str] = set()
        self.conditions: dict[tuple[bytes, tuple[int, ...], str], bool] = {}
        self.runner = types.SimpleNamespace(transformations_dict=dict(cogitao.transformations.transformations_dict))
        pc_class = cogitao.point_cloud.PointCloud
        original_color = pc_class.most_frequent_color.fget
        recorder = self

        def most_frequent_color(pc: object) -> int:
            color = original_color(pc)
            colors = [c for c in pc.colors if c != 0]
            if colors and color != max(set(colors), key=colors.count):
                recorder.events.add("kept-bbox-background-color")
            return color

        pc_class.most_frequent_color = property(most_frequent_color)
        fill = self.runner.transformations_dict["fill_holes_different_color"]

        def fill_holes_different_color(shape: object) -> object:
            if cogitao.conditionals.is_shape_hollow(shape) and len(set(shape.colors)) > 1:
                recorder.events.add("fill-different-color-recolors-cells")
            return fill(shape)

        self.runner.transformations_dict["fill_holes_different_color"] = fill_holes_different_color
        position = cogitao.general_utils.position_shape_in_world

        def position_shape_in_world(world: np.ndarray, shape: object, check_for_overlap: bool = True) -> np.ndarray:
            fair = fair_placement(world, shape)
            try:
                placed = position(world, shape, check_for_overlap)
            except Exception:  # recorded, then raised again
                if fair:
                    recorder.events.add("kept-bbox-placement-check")
                raise
            if not fair:
                recorder.events.add("kept-bbox-placement-check")
            if not any(shape.pc.values()):
                recorder.events.add("kept-bbox-empty-object")
            if np.any((world != 0) & (placed == 0)):
                recorder.events.add("kept-bbox-overpaint")
            return placed

        cogitao.generator.position_shape_in_world = position_shape_in_world

    def admitted(self, pixels: np.ndarray, sequence: list[str]) -> bool:
        """Whether COGITAO would sample this object for this sequence (its conditionals table, computed here)."""
        names = self.cogitao.generator.Generator.get_shape_constraints_from_rule_sampled(None, sequence)
        return not any(self.condition(pixels, name) for name in names)

    def condition(self, pixels: np.ndarray, name: str) -> bool:
        key = (pixels.tobytes(), pixels.shape, name)
        if key not in self.conditions:
            self.conditions[key] = bool(self.cogitao.conditionals.conditionals_dict[name](self.cogitao.Shape(pixels)))
        return self.conditions[key]

    def run(self, objects: list[tuple[np.ndarray, int, int]], shape: tuple[int, int],
            sequence: list[str]) -> tuple[object, list[str]]:
        """COGITAO's outcome for objects (pixels, top, left) in an empty grid of `shape`, and the events seen."""
        self.events = set()
        if not all(self.admitted(pixels, sequence) for pixels, _, _ in objects):
            return "rejected", []
        grid = np.zeros(shape)
        shapes = []
        for pixels, top, left in objects:
            placed = self.cogitao.Shape(pixels)
            placed.move_to_position((top, left))
            grid[top : top + pixels.shape[0], left : left + pixels.shape[1]] += pixels
            shapes.append(placed)
        try:
            output, _ = self.cogitao.generator.Generator.apply_transform_suite_to_grid_2(
                self.runner, sequence, grid, shapes)
        except Exception:  # noqa: BLE001 - generate_single_task drops the sample on any exception
            output = None
        return ("invalid" if output is None else region(output)), sorted(self.events)


def fair_placement(world: np.ndarray, shape: object) -> bool:
    """The placement rule the project uses: the box (emptied cells included) inside the grid, no cell on another."""
    if shape.num_points == 0:
        return False
    (top, left), (bottom, right) = shape.bounding_corners
    if top < 0 or left < 0 or bottom >= world.shape[0] or right >= world.shape[1]:
        return False
    return not any(color != 0 and world[cell] != 0 for cell, color in shape.pc.items())


def region(grid: np.ndarray) -> list[object]:
    """[top, left, rows] of the non-background cells' bounding box ([0, 0, []] for an empty grid)."""
    rows, cols = np.nonzero(grid)
    if not len(rows):
        return [0, 0, []]
    top, left = int(rows.min()), int(cols.min())
    return [top, left, grid[top : rows.max() + 1, left : cols.max() + 1].astype(int).tolist()]


# ---------------------------------------------------------------- cases


def place_apart(rng: np.random.RandomState, pieces: list[np.ndarray], shape: tuple[int, int],
                inside_first: bool = False) -> list[tuple[int, int]] | None:
    """Random anchors keeping every object inside the grid and no two touching (8-neighbourhood).

    With `inside_first`, the later objects go inside the first one's box (in its empty part).
    """
    taken = np.zeros(shape, dtype=bool)
    anchors: list[tuple[int, int]] = []
    for pixels in pieces:
        height, width = pixels.shape
        rows, cols = (0, shape[0] - height + 1), (0, shape[1] - width + 1)
        if inside_first and anchors:
            (top, left), (outer_height, outer_width) = anchors[0], pieces[0].shape
            rows = (top, max(top + outer_height - height + 1, top + 1))
            cols = (left, max(left + outer_width - width + 1, left + 1))
        for _ in range(200):
            top, left = rng.randint(*rows), rng.randint(*cols)
            halo = taken[max(top - 1, 0) : top + height + 1, max(left - 1, 0) : left + width + 1]
            if top + height <= shape[0] and left + width <= shape[1] and not halo.any():
                break
        else:
            return None
        taken[top : top + height, left : left + width] |= pixels != 0
        anchors.append((top, left))
    return anchors


def make_cases(cogitao: types.SimpleNamespace) -> dict[str, object]:
    rng = np.random.RandomState(SEED)
    library = hand_objects() + random_objects(rng, 110)
    names = list(cogitao.transformations.transformations_dict)
    presets = sorted({tuple(s) for entry in cogitao.presets for s in entry.cfg.allowed_combinations})
    recorder = Recorder(cogitao)
    cases = []

    def add(kind: str, placed: list[tuple[int, int, int]], shape: tuple[int, int], sequence: list[str]) -> None:
        if len(cases) % 1000 == 0:
            print(f"{len(cases)} cases ({kind})", file=sys.stderr, flush=True)
        objects = [(library[index], top, left) for index, top, left in placed]
        expected, events = recorder.run(objects, shape, list(sequence))
        cases.append({"kind": kind, "objects": [list(p) for p in placed], "grid": list(shape),
                      "sequence": list(sequence), "expected": expected, "events": events})

    def admitted(sequence: list[str], among: list[int]) -> list[int]:
        return [i for i in among if recorder.admitted(library[i], sequence)]

    def random_sequence(depth: int, crop_first: bool = False) -> list[str]:
        sequence = [names[i] for i in rng.randint(len(names), size=depth)]
        if crop_first:
            sequence[0] = CROPS[rng.randint(len(CROPS))]
        return sequence

    everything = list(range(len(library)))
    for index in everything:
        for name in names:
            add("single", [(index, *BIG_ANCHOR)], BIG, [name])
    for depth, count in RANDOM_SEQUENCES.items():
        for k in range(count):
            sequence = random_sequence(depth)
            if k % 2:  # half the sequences hold a crop, followed by anything
                sequence[rng.randint(depth - 1)] = CROPS[rng.randint(len(CROPS))]
            candidates = admitted(sequence, everything) if rng.rand() < 0.75 else everything
            add(f"depth{depth}", [(int(rng.choice(candidates or everything)), *BIG_ANCHOR)], BIG, sequence)
    for sequence in presets:
        for index in rng.choice(len(library), PRESET_OBJECTS, replace=False):
            add("preset", [(int(index), *BIG_ANCHOR)], BIG, list(sequence))
    small = [i for i, pixels in enumerate(library) if max(pixels.shape) <= 5]
    containers = [i for i, pixels in enumerate(library) if min(pixels.shape) >= 4 and np.mean(pixels != 0) <= 0.6]
    thin = [i for i, pixels in enumerate(library) if min(pixels.shape) == 1 and max(pixels.shape) <= 4]
    for kind, count in (("grid", GRID_CASES), ("nested", NESTED_CASES)):
        done = tries = 0
        while done < count:
            tries += 1
            if tries > 1000 * count:
                raise RuntimeError(f"could not make {count} {kind} cases; change the objects or the sequences")
            shape = (int(rng.randint(8, 25)), int(rng.randint(8, 25)))
            if kind == "grid":
                sequence = (list(presets[rng.randint(len(presets))]) if rng.rand() < 0.5 else
                            random_sequence(rng.randint(1, 4)))
                first, others, n_others = admitted(sequence, small), admitted(sequence, small), rng.randint(1, 4)
            else:
                sequence = random_sequence(rng.randint(2, 4), crop_first=True)
                first, others, n_others = admitted(sequence, containers), admitted(sequence, thin), rng.randint(1, 3)
            if not first or not others:
                continue
            chosen = [int(rng.choice(first))] + [int(rng.choice(others)) for _ in range(n_others)]
            anchors = place_apart(rng, [library[i] for i in chosen], shape, inside_first=kind == "nested")
            if anchors is None:
                continue
            placed = [(i, top, left) for i, (top, left) in zip(chosen, anchors)]
            order = (sorted(range(len(placed)), key=lambda k: anchors[k]) if kind == "grid"
                     else rng.permutation(len(placed)))
            add(kind, [placed[k] for k in order], shape, sequence)  # COGITAO pastes objects in this order
            done += 1
    return {"library": [pixels.tolist() for pixels in library], "cases": cases}


def main(checkout: str) -> None:
    data = make_cases(import_cogitao(Path(checkout).resolve()))
    text = json.dumps(data, separators=(",", ":"))
    OUT.write_bytes(gzip.compress(text.encode(), mtime=0))
    outcomes = [c["expected"] if isinstance(c["expected"], str) else "grid" for c in data["cases"]]
    print(f"wrote {OUT}: {len(data['cases'])} cases, "
          + ", ".join(f"{o} {outcomes.count(o)}" for o in sorted(set(outcomes))))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../COGITAO")
