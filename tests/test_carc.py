"""Compositional-ARC: transformations against the paper's definitions, grammars, episodes, splits, canvas."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vision_bench.tasks.carc import canvas
from vision_bench.tasks.carc.episodes import STUDY_PLAN, episode_of, generate_episode
from vision_bench.tasks.carc.grammar import INDICATORS, draw_grammar, interpret
from vision_bench.tasks.carc.spec import COMPOSITIONS, PAPER_EVAL_COMPOSITIONS, EpisodeSpec
from vision_bench.tasks.grid import GridObject, draw_objects, extract_objects
from vision_bench.tasks.transformations import TRANSFORMATIONS
from vision_bench.tasks.transformations.carc import CARC_TRANSFORMATIONS, KIND_OF, KINDS

Cells = frozenset[tuple[int, int]]


def paper_definition(name: str, cells: Cells) -> Cells:
    """Appendix B.2's Definitions 3-7 on a set of (row, column) cells."""
    rows, cols = [r for r, _ in cells], [c for _, c in cells]
    i0, i1, j0, j1 = min(rows), max(rows), min(cols), max(cols)
    mapped = {
        "translate_right": lambda i, j: {(i, j + 1)},
        "translate_down": lambda i, j: {(i + 1, j)},
        "carc_rotate_cw": lambda i, j: {(i0 + (j - j0), j0 - (i - i0))},
        "carc_rotate_ccw": lambda i, j: {(i0 - (j - j0), j0 + (i - i0))},
        "mirror_horizontal": lambda i, j: {(i1 - (i - i0), j)},
        "mirror_vertical": lambda i, j: {(i, j1 - (j - j0))},
        "extend_up": lambda i, j: {(i, j), (i - 1, j)},
        "extend_left": lambda i, j: {(i, j), (i, j - 1)},
        "recolor_red": lambda i, j: {(i, j)},
        "recolor_orange": lambda i, j: {(i, j)},
    }[name]
    return frozenset(cell for i, j in cells for cell in mapped(i, j))


def _object(cells: Cells, color: int = 5) -> GridObject:
    top, left = min(r for r, _ in cells), min(c for _, c in cells)
    pixels = np.zeros((max(r for r, _ in cells) - top + 1, max(c for _, c in cells) - left + 1), dtype=np.uint8)
    for row, col in cells:
        pixels[row - top, col - left] = color
    return GridObject(pixels, top, left)


def _cells(obj: GridObject) -> Cells:
    return frozenset((obj.top + int(r), obj.left + int(c)) for r, c in np.argwhere(obj.mask))


@settings(max_examples=60, deadline=None)
@given(st.frozensets(st.tuples(st.integers(4, 7), st.integers(4, 7)), min_size=1, max_size=9),
       st.sampled_from(sorted(CARC_TRANSFORMATIONS)))
def test_every_transformation_follows_the_papers_definition(cells: Cells, name: str) -> None:
    result = CARC_TRANSFORMATIONS[name].transform(_object(cells))
    assert _cells(result) == paper_definition(name, cells)
    expected_color = {"recolor_red": 1, "recolor_orange": 2}.get(name, 5)
    assert result.colors == [expected_color]


L_SHAPE = frozenset({(2, 3), (3, 3), (4, 3), (4, 4)})  # an L: a column of 3 with a foot to the right


@pytest.mark.parametrize(("name", "expected"), [
    ("translate_right", {(2, 4), (3, 4), (4, 4), (4, 5)}),
    ("translate_down", {(3, 3), (4, 3), (5, 3), (5, 4)}),
    ("carc_rotate_cw", {(2, 3), (2, 2), (2, 1), (3, 1)}),
    ("carc_rotate_ccw", {(2, 3), (2, 4), (2, 5), (1, 5)}),
    ("mirror_horizontal", {(4, 3), (3, 3), (2, 3), (2, 4)}),
    ("mirror_vertical", {(2, 4), (3, 4), (4, 4), (4, 3)}),
    ("extend_up", {(1, 3), (2, 3), (3, 3), (4, 3), (3, 4), (4, 4)}),
    ("extend_left", {(2, 2), (2, 3), (3, 2), (3, 3), (4, 2), (4, 3), (4, 4)}),
    ("recolor_red", set(L_SHAPE)),
])
def test_transformations_on_a_10x10_grid_with_one_object(name: str, expected: set[tuple[int, int]]) -> None:
    grid = draw_objects((10, 10), [_object(L_SHAPE, 3)])
    [obj] = extract_objects(grid)
    result = draw_objects((10, 10), [CARC_TRANSFORMATIONS[name].transform(obj)])
    assert {(int(r), int(c)) for r, c in np.argwhere(result)} == expected
    assert set(np.unique(result[result > 0]).tolist()) == ({1} if name == "recolor_red" else {3})


def test_coinciding_transformations_are_cogitaos_own_and_the_registry_keeps_its_28() -> None:
    for name in ("translate_right", "translate_down", "mirror_horizontal", "mirror_vertical"):
        assert CARC_TRANSFORMATIONS[name] is TRANSFORMATIONS[name]
    assert len(TRANSFORMATIONS) == 28 and not any(name in TRANSFORMATIONS for name in (
        "carc_rotate_cw", "carc_rotate_ccw", "extend_up", "extend_left", "recolor_red", "recolor_orange"))
    turned = CARC_TRANSFORMATIONS["carc_rotate_ccw"].transform(_object(L_SHAPE))
    cogitao = TRANSFORMATIONS["rot90"].transform(_object(L_SHAPE))
    assert np.array_equal(turned.pixels, cogitao.pixels) and turned.top != cogitao.top  # same turn, other place
    assert [CARC_TRANSFORMATIONS.names().index(name) for names in KINDS.values() for name in names] == list(range(10))


def test_splits_follow_table_7_and_keep_evaluation_compositions_out_of_training() -> None:
    spec = EpisodeSpec(setup="systematicity")
    assert len(COMPOSITIONS) == 10 and spec.eval_compositions == PAPER_EVAL_COMPOSITIONS
    train = spec.compositions("train")
    assert len(train) == 8 and not set(train) & set(spec.eval_compositions)
    assert spec.compositions("val_id") == spec.compositions("test_id") == train
    assert spec.compositions("val_ood") == spec.compositions("test_ood") == spec.eval_compositions
    small = EpisodeSpec(setup="3shot", queries_per_episode=1)
    for index in range(4):
        assert episode_of(small, 0, "train", index).grammar.composition in train
        assert episode_of(small, 0, "test_ood", index).grammar.composition in spec.eval_compositions


def test_compositions_are_checked() -> None:
    from vision_bench.errors import ConfigError

    with pytest.raises(ConfigError, match="three different kinds"):
        EpisodeSpec.from_dict({"setup": "3shot", "eval_compositions": [["translation", "rotation", "zoom"]]})
    with pytest.raises(ConfigError, match="1 to 9 evaluation compositions"):
        EpisodeSpec.from_dict({"setup": "3shot", "eval_compositions": [list(c) for c in COMPOSITIONS]})
    flipped = EpisodeSpec.from_dict({"setup": "3shot", "eval_compositions": [["extension", "rotation", "translation"]]})
    assert flipped.eval_compositions == (("translation", "rotation", "extension"),)


@pytest.mark.parametrize("setup", ["3shot", "systematicity"])
def test_episodes_hold_the_documented_study_examples(setup: str) -> None:
    spec = EpisodeSpec(setup=setup, queries_per_episode=4)  # type: ignore[arg-type]
    for index in range(3):
        episode = episode_of(spec, 7, "train", index)
        levels = [example.indicators for example in episode.study]
        expected = [indicators for indicators, count in STUDY_PLAN[setup] for _ in range(count)]
        assert levels == expected
        if setup == "systematicity":
            assert [example.level for example in episode.study] == [0] * 6 + [1] * 6
            assert len(episode.study) == 12
        else:
            assert [example.level for example in episode.study] == [2, 2, 2]
            assert len({e.input.tobytes() for e in (*episode.study, *episode.queries)}) == 7
        assert len(episode.queries) == 4 and all(query.level == 2 for query in episode.queries)
        assert len({query.input.tobytes() for query in episode.queries}) == 4


def test_each_example_transforms_one_object_as_its_rules_say() -> None:
    spec = EpisodeSpec(setup="systematicity", queries_per_episode=3)
    for index in range(3):
        episode = episode_of(spec, 1, "val_ood", index)
        grammar = episode.grammar
        assert len({KIND_OF[name] for name in grammar.transformations}) == 3
        for example in (*episode.study, *episode.queries):
            assert len(extract_objects(example.input)) == len(example.objects) in (1, 2)
            assert ("neighbor" in example.indicators) == (len(example.objects) == 2)
            assert grammar.picked_by(list(example.objects))[-1] == example.indicators
            if len(example.objects) == 2:  # the indicator is picked by no rule and stays as it was
                assert example.outputs[0] == example.objects[0] == grammar.indicator
            after = interpret(grammar, list(example.objects))
            assert after is not None and np.array_equal(draw_objects((10, 10), after), example.output)
            assert not np.array_equal(example.input, example.output)


def test_grammars_are_resampled_and_keep_their_indicators_apart() -> None:
    rng = random.Random(3)
    grammars = [draw_grammar(COMPOSITIONS[k % 10], rng) for k in range(30)]
    assert len({(g.transformations, g.shape, g.color) for g in grammars}) == 30
    for grammar in grammars:
        indicator_color = grammar.indicator.colors[0]
        assert grammar.color != indicator_color and {grammar.color, indicator_color}.isdisjoint(grammar.free_colors)
        assert len(grammar.free_colors) == 7 and grammar.sequence(INDICATORS) == grammar.transformations


def test_episodes_are_byte_reproducible_and_depend_on_the_seed() -> None:
    spec = EpisodeSpec(setup="3shot", queries_per_episode=2)
    first = generate_episode("3shot", spec.compositions("train"), 2, random.Random(11))
    again = generate_episode("3shot", spec.compositions("train"), 2, random.Random(11))
    other = generate_episode("3shot", spec.compositions("train"), 2, random.Random(12))
    grids = [e.input.tobytes() + e.output.tobytes() for e in (*first.study, *first.queries)]
    assert grids == [e.input.tobytes() + e.output.tobytes() for e in (*again.study, *again.queries)]
    assert grids != [e.input.tobytes() + e.output.tobytes() for e in (*other.study, *other.queries)]


@pytest.mark.parametrize(("setup", "shape"), [("3shot", (21, 44)), ("systematicity", (54, 67))])
def test_the_canvas_holds_the_study_pairs_and_an_empty_query_slot(setup: str, shape: tuple[int, int]) -> None:
    episode = episode_of(EpisodeSpec(setup=setup, queries_per_episode=1), 0, "train", 0)  # type: ignore[arg-type]
    study = [(example.input, example.output) for example in episode.study]
    query = episode.queries[0]
    grid_in = canvas.compose(setup, study, query.input, None)
    grid_out = canvas.compose(setup, study, query.input, query.output)
    assert grid_in.shape == grid_out.shape == shape == canvas.canvas_shape(setup)
    assert canvas.setup_of_canvas(shape) == setup
    corner_in, corner_out = canvas.query_slots(setup)
    assert np.array_equal(canvas.crop(grid_in, corner_in), query.input)
    assert not canvas.crop(grid_in, corner_out).any()
    assert np.array_equal(canvas.crop(grid_out, corner_out), query.output)
    assert np.array_equal(canvas.crop(grid_out, canvas.slot(setup, 1, 1)), episode.study[1].output)
    differs = np.argwhere(grid_in != grid_out)
    assert differs.size and all(corner_out[0] <= r < corner_out[0] + 10 and corner_out[1] <= c < corner_out[1] + 10
                                for r, c in differs)
    n_objects = sum(len(e.objects) for e in (*episode.study, *episode.study)) + len(query.objects) * 2
    assert len(extract_objects(grid_out)) == n_objects  # separators keep every object apart


def test_presets_generate_reproducible_query_samples() -> None:
    from vision_bench.tasks.config import TaskConfig
    from vision_bench.tasks.sampling import generate_sample, generate_split
    from vision_bench.tasks.studies import STUDIES, get_study
    from vision_bench.tasks.task_code import IDENTITY_TOKEN

    assert [s for s in STUDIES if s.startswith("carc/")] == [
        f"carc/{setup}/{split}" for setup in ("3shot", "systematicity") for split in ("1860", "1870", "1880", "1890")]
    config = get_study("carc/3shot/1870", n_train=12, n_val=2, n_test=2, seed=5)
    assert TaskConfig.from_dict(config.to_dict()) == config
    samples = generate_split(config, "train")
    corner_in, corner_out = canvas.query_slots("3shot")
    study_part = (slice(0, 10), slice(0, 44))  # the first row of pairs: two study pairs
    assert all(np.array_equal(s.input[study_part], samples[0].input[study_part]) for s in samples[:10])
    assert not np.array_equal(samples[10].input[study_part], samples[0].input[study_part])
    train = {"+".join(c) for c in config.episode.compositions("train")}  # type: ignore[union-attr]
    for sample in samples:
        assert sample.input.shape == (21, 44) and not canvas.crop(sample.input, corner_out).any()
        assert sample.task_key in train and len(sample.sequence) == 3
        assert all(name in CARC_TRANSFORMATIONS for name in sample.sequence)
        assert set(sample.task_code) == {IDENTITY_TOKEN}
    episode_of.cache_clear()
    assert generate_sample(config, "train", 11) == samples[11]
    ood = generate_split(config, "test_ood")
    evaluation = {"+".join(c) for c in config.episode.eval_compositions}  # type: ignore[union-attr]
    assert {s.task_key for s in ood} <= evaluation and not evaluation & train


def test_the_episode_sheet_draws_every_pair(tmp_path) -> None:
    from PIL import Image

    from vision_bench.tasks.carc.sheet import CELL, main

    out = tmp_path / "episode.png"
    assert main(["--study", "carc/3shot/1860", "--out", str(out)]) == 0
    sheet = Image.open(out)
    assert sheet.width > 6 * 10 * CELL and sheet.height > 2 * 10 * CELL  # 4 pairs: 3 to a row, 2 rows


def test_episode_samples_follow_the_config_s_task_code_length_and_slots() -> None:
    from vision_bench.tasks.config import TaskConfig
    from vision_bench.tasks.sampling import generate_sample
    from vision_bench.tasks.studies import get_study

    data = get_study("carc/3shot/1860", n_train=2, n_val=1, n_test=1).to_dict()
    config = TaskConfig.from_dict({**data, "task_code_length": 10})
    sample = generate_sample(config, "train", 1)
    assert sample.task_code == (0,) * 10
    (in_top, in_left), (out_top, out_left) = canvas.query_slots("3shot")
    for obj in sample.objects:
        top, left, bottom, right = obj["bbox"]
        assert in_top <= top < bottom <= in_top + 10 and in_left <= left < right <= in_left + 10
        assert sample.input[top:bottom, left:right].any()
        top, left, bottom, right = obj["output_bbox"]
        assert out_top <= top < bottom <= out_top + 10 and out_left <= left < right <= out_left + 10
        assert sample.output[top:bottom, left:right].any() and not sample.input[top:bottom, left:right].any()
