"""SVIB's relational rules over a scene's two objects, as SVIB's dSprites `rule.py` implements them (`apply_rule`).

A rule is a set of factor updates. Every update reads the INPUT scene, and every object is updated at once
(SVIB's code collects the input factors into lists, `np.roll`s them so that object i reads object i - 1, the
other one of two, and writes afterwards), modulo the vocabulary size 4. Quadrants are read from the input
positions (`SceneObject.quadrant`: 1 top right, 2 top left, 3 bottom left, 4 bottom right; only the value
mod 4 matters). Motions move an object's footprint by `motion` cells: CP to the right; the N- motions by the
OTHER object's size factor, 0 down, 1 up, 2 left, 3 right (SVIB's `DIR`, whose y points up).

Where the paper's Fig. 2 and the code disagree, the code is followed: M-NA's new size reads the OTHER object's
quadrant (`rule.py` lines 211-248), as NCAASi and MNInter do. `NShAASh` is listed in SVIB's `RULES` but has no
branch, so SVIB's code leaves the scene unchanged for it; the project refuses the name (`check_rule_name`)
and points to `NShAC`, the rule that does what the paper's S-NA says (docs/fidelity.md).

The paper's four tasks are presets (`TASKS`), chosen by what each code rule does: S-A (one atomic rule,
Fig. 2's other[shape] -> self[shape]) is `ShAASh`; S-NA (other[shape] + self[shape] -> self[shape]) is
`NShAC`, the only branch that sums shapes; M-A (self[shape] -> self[colour] and other[colour] -> self[size])
is `MMix2`; M-NA (the same two with each object's quadrant added) is `MNMix2`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from vision_bench.errors import UnknownNameError
from vision_bench.registry import Registry, unknown_name_message
from vision_bench.tasks.scenes.factors import VOCABULARY, SceneObject

Update = Callable[[Sequence[SceneObject], int, int, int], dict[str, int]]
"""One factor update of object i: (input objects, i, grid size, motion) -> the fields it sets (`SceneObject` names)."""

DIRECTIONS = {0: (1, 0), 1: (-1, 0), 2: (0, -1), 3: (0, 1)}
"""The N- motions' (row, column) step per size factor of the other object: down, up, left, right (SVIB's DIR:
(0, -0.3), (0, +0.3), (-0.3, 0), (+0.3, 0) with y up)."""

REFUSED = {
    "NShAASh": ("NShAASh has no branch in SVIB's dSprites rule.py, so SVIB's code leaves the scene unchanged for it; "
                "use NShAC for the paper's S-NA (other[shape] + self[shape] -> self[shape], study svib/S-NA/<alpha>) "
                "or None for an unchanged scene"),
}
"""Rule names of SVIB's `RULES` that the project refuses, and why (one line each)."""


def _other(objects: Sequence[SceneObject], i: int) -> SceneObject:
    """The object that object i reads: SVIB's `np.roll(values, 1)[i]`, object i - 1 (the other one of two)."""
    return objects[i - 1]


def _colour_from_shape(objects: Sequence[SceneObject], i: int, grid_size: int, motion: int) -> dict[str, int]:
    return {"colour": objects[i].shape % VOCABULARY}


def _colour_from_shape_and_quadrant(objects: Sequence[SceneObject], i: int, grid_size: int,
                                    motion: int) -> dict[str, int]:
    return {"colour": (objects[i].shape + objects[i].quadrant(grid_size)) % VOCABULARY}


def _shape_from_other(objects: Sequence[SceneObject], i: int, grid_size: int, motion: int) -> dict[str, int]:
    return {"shape": _other(objects, i).shape}


def _shape_sum(objects: Sequence[SceneObject], i: int, grid_size: int, motion: int) -> dict[str, int]:
    return {"shape": (objects[i].shape + _other(objects, i).shape) % VOCABULARY}


def _size_from_other_colour(objects: Sequence[SceneObject], i: int, grid_size: int, motion: int) -> dict[str, int]:
    return {"size": _other(objects, i).colour % VOCABULARY}


def _size_from_other_colour_and_quadrant(objects: Sequence[SceneObject], i: int, grid_size: int,
                                         motion: int) -> dict[str, int]:
    other = _other(objects, i)
    return {"size": (other.colour + other.quadrant(grid_size)) % VOCABULARY}


def _move_right(objects: Sequence[SceneObject], i: int, grid_size: int, motion: int) -> dict[str, int]:
    return {"left": objects[i].left + motion}


def _move_by_other_size(objects: Sequence[SceneObject], i: int, grid_size: int, motion: int) -> dict[str, int]:
    rows, cols = DIRECTIONS[_other(objects, i).size]
    return {"top": objects[i].top + rows * motion, "left": objects[i].left + cols * motion}


@dataclass(frozen=True)
class SceneRule:
    """One of SVIB's rules: its factor updates (applied together, each reading the input scene), the factors it
    reads and writes (`position` for a motion; `quadrant` is read from the input position)."""

    updates: tuple[Update, ...]
    reads: tuple[str, ...]
    writes: tuple[str, ...]

    @property
    def moves(self) -> bool:
        """Whether the rule moves objects (so a position can be scored)."""
        return "position" in self.writes

    def apply(self, objects: Sequence[SceneObject], grid_size: int, motion: int) -> tuple[SceneObject, ...]:
        """The target scene: every object updated from the input `objects` at once."""
        changed = []
        for i, obj in enumerate(objects):
            fields: dict[str, int] = {}
            for update in self.updates:
                fields.update(update(objects, i, grid_size, motion))
            changed.append(replace(obj, **fields))
        return tuple(changed)


RULES: Registry[SceneRule] = Registry("scene rule")
"""SVIB's dSprites rules by their code names, in `rule.py`'s order (`NShAASh` left out: `REFUSED`)."""

_RULES: tuple[tuple[str, tuple[Update, ...], tuple[str, ...], tuple[str, ...], str], ...] = (
    ("None", (), (), (), "identity: the target is the input scene"),
    ("CP", (_move_right,), (), ("position",), "every object moves right"),
    ("ShAC", (_colour_from_shape,), ("shape",), ("colour",), "self[shape] -> self[colour]"),
    ("ShAASh", (_shape_from_other,), ("shape",), ("shape",), "other[shape] -> self[shape] (shape swap)"),
    ("CAASi", (_size_from_other_colour,), ("colour",), ("size",), "other[colour] -> self[size]"),
    ("MIntra", (_move_right, _colour_from_shape), ("shape",), ("position", "colour"),
     "CP + ShAC: move right; self[shape] -> self[colour]"),
    ("MMix2", (_colour_from_shape, _size_from_other_colour), ("shape", "colour"), ("colour", "size"),
     "ShAC + CAASi: self[shape] -> self[colour]; other[colour] -> self[size]"),
    ("MMix1", (_move_right, _shape_from_other), ("shape",), ("position", "shape"),
     "CP + ShAASh: move right; other[shape] -> self[shape]"),
    ("MInter", (_shape_from_other, _size_from_other_colour), ("shape", "colour"), ("shape", "size"),
     "ShAASh + CAASi: other[shape] -> self[shape]; other[colour] -> self[size]"),
    ("NCP", (_move_by_other_size,), ("size",), ("position",),
     "move by other[size]: 0 down, 1 up, 2 left, 3 right"),
    ("NShAC", (_shape_sum,), ("shape",), ("shape",),
     "other[shape] + self[shape] -> self[shape] (a shape sum, despite the name)"),
    ("NCAASi", (_size_from_other_colour_and_quadrant,), ("colour", "quadrant"), ("size",),
     "other[colour] + other[quadrant] -> self[size]"),
    ("MNIntra", (_colour_from_shape_and_quadrant, _move_by_other_size), ("shape", "quadrant", "size"),
     ("colour", "position"), "self[shape] + self[quadrant] -> self[colour]; move by other[size]"),
    ("MNMix2", (_colour_from_shape_and_quadrant, _size_from_other_colour_and_quadrant),
     ("shape", "quadrant", "colour"), ("colour", "size"),
     "self[shape] + self[quadrant] -> self[colour]; other[colour] + other[quadrant] -> self[size]"),
    ("MNMix1", (_move_by_other_size, _shape_sum), ("size", "shape"), ("position", "shape"),
     "move by other[size]; other[shape] + self[shape] -> self[shape]"),
    ("MNInter", (_shape_sum, _size_from_other_colour_and_quadrant), ("shape", "colour", "quadrant"),
     ("shape", "size"), "other[shape] + self[shape] -> self[shape]; other[colour] + other[quadrant] -> self[size]"),
)

for _name, _updates, _reads, _writes, _description in _RULES:
    RULES.add(_name, SceneRule(_updates, _reads, _writes), _description)

TASKS = {"S-A": "ShAASh", "S-NA": "NShAC", "M-A": "MMix2", "M-NA": "MNMix2"}
"""The paper's four tasks (Fig. 2) and the code rule that does what each says (see the module docstring)."""


def check_rule_name(name: str) -> str:
    """`name` when it is a rule of `RULES`; else a one-line error: why `NShAASh` is refused, or close matches."""
    if name in REFUSED:
        raise UnknownNameError(REFUSED[name])
    if name not in RULES:
        raise UnknownNameError(unknown_name_message("scene rule", name, RULES.names()))
    return name


def task_rule(task: str) -> str:
    """The code rule of a study id's task: a paper task (`S-A` ...) or a code rule name (`CP` ...); else a one-line
    error (close matches among both)."""
    if task in TASKS:
        return TASKS[task]
    if task in REFUSED or task in RULES:
        return check_rule_name(task)
    raise UnknownNameError(unknown_name_message("SVIB task or rule", task, [*TASKS, *RULES.names()]))


def task_name(rule: str) -> str:
    """'ShAASh (S-A)' for a paper task's rule, else the rule's name."""
    tasks = [task for task, name in TASKS.items() if name == rule]
    return f"{rule} ({tasks[0]})" if tasks else rule


__all__ = ["DIRECTIONS", "REFUSED", "RULES", "TASKS", "SceneRule", "check_rule_name", "task_name", "task_rule"]
