"""Rules in the task model: a selector picks the objects a sequence transforms; the others are distractors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vision_bench.errors import ConfigError
from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.formats import read_tasks, write_parquet
from vision_bench.tasks.grid import draw_objects, extract_objects
from vision_bench.tasks.sample import TaskSample
from vision_bench.tasks.sampling import generate_sample
from vision_bench.tasks.selectors import parse_selector, select, selector_name
from vision_bench.tasks.task_code import encode_task_code
from vision_bench.tasks.transformations import transform_objects

RED_OR_NEAR_GREY: dict[str, Any] = {
    "grid_height": 12, "grid_width": 12, "n_objects": [1, 2], "n_distractors": [2, 4],
    "object_filter": {"n_colors": 1, "max_height": 3, "max_width": 3},
    "transformations": ["translate_up", "rot90", "change_shape_color"], "depth": [1, 2], "task_code_length": 6,
    "rules": [
        {"selector": {"kind": "color", "color": 2}},
        {"selector": {"kind": "shape", "shape": "square2"}, "sequences": [["translate_right"]]},
        {"selector": {"kind": "near", "indicator": {"kind": "color", "color": 5}, "distance": 2},
         "sequences": [["translate_down"]]},
    ],
    "samples": {"train": 30, "val_id": 3, "val_ood": 3, "test_id": 3, "test_ood": 3},
}


def rule_of(config: TaskConfig, sample: TaskSample) -> Any:
    name = sample.task_key.rsplit(":", 1)[0]
    return next(rule.selector for rule in config.rules or () if selector_name(rule.selector) == name)


def test_rule_samples_transform_exactly_the_selected_objects() -> None:
    config = TaskConfig.from_dict(RED_OR_NEAR_GREY)
    seen = set()
    for index in range(30):
        sample = generate_sample(config, "train", index)
        selector = rule_of(config, sample)
        seen.add(selector.kind)
        objects = extract_objects(sample.input)
        picked = select(selector, objects)
        assert list(picked) == [record["selected"] for record in sample.objects]
        assert 1 <= sum(picked) <= 2 and 2 <= len(objects) - sum(picked) <= 4
        targets = [obj for obj, flag in zip(objects, picked) if flag]
        moved = transform_objects(targets, sample.sequence, sample.input.shape)[-1]
        still = [obj for obj, flag in zip(objects, picked) if not flag]
        assert np.array_equal(draw_objects(sample.input.shape, still + moved), sample.output)
        assert sample.task_code == tuple(encode_task_code(sample.sequence, 6, selector))
    assert seen == {"color", "shape", "near"}


def test_rule_samples_are_reproducible_and_round_trip_through_parquet(tmp_path: Path) -> None:
    config = TaskConfig.from_dict(RED_OR_NEAR_GREY)
    samples = [generate_sample(config, "val_id", index) for index in range(3)]
    assert samples == [generate_sample(config, "val_id", index) for index in range(3)]
    write_parquet(samples, tmp_path / "val_id.parquet")
    assert read_tasks(tmp_path / "val_id.parquet") == samples
    assert all(":" in sample.task_key for sample in samples)  # the key names the rule: SELECTOR:SEQUENCE


def test_the_all_objects_rule_is_cogitao_s_setting() -> None:
    """A config with one all-objects rule transforms every object, as the same config without rules."""
    with_rule = TaskConfig.from_dict({"grid_height": 10, "grid_width": 10, "sequences": [["translate_up"]],
                                      "rules": [{"selector": "all"}]})
    sample = generate_sample(with_rule, "train", 0)
    assert all(record["selected"] for record in sample.objects)
    objects = extract_objects(sample.input)
    assert np.array_equal(draw_objects(sample.input.shape, transform_objects(objects, ("translate_up",),
                                                                             sample.input.shape)[-1]), sample.output)
    assert list(sample.task_code) == encode_task_code(["translate_up"], selector=parse_selector("all"))
    assert sample.task_key == "all:translate_up"


def test_configs_without_rules_keep_their_dict_form() -> None:
    plain = TaskConfig.from_dict({"transformations": ["rot90"]})
    assert not {"rules", "n_distractors", "task_code_length", "episode"} & set(plain.to_dict())
    ruled = TaskConfig.from_dict(RED_OR_NEAR_GREY)
    assert TaskConfig.from_dict(ruled.to_dict()) == ruled


def test_split_overrides_replace_rules_and_distractors() -> None:
    config = TaskConfig.from_dict({**RED_OR_NEAR_GREY, "splits": {"test_ood": {
        "rules": [{"selector": {"kind": "color", "color": 3}}], "n_distractors": 6}}})
    ood = config.for_split("test_ood")
    assert [selector_name(rule.selector) for rule in ood.rules or ()] == ["color=3"]
    assert ood.n_distractors == (6, 6)
    sample = generate_sample(config, "test_ood", 0)
    assert sample.task_key.startswith("color=3:")
    assert sum(not record["selected"] for record in sample.objects) == 6


@pytest.mark.parametrize(("change", "message"), [
    ({"rules": None}, "n_distractors needs 'rules'"),
    ({"rules": []}, "'rules' is empty"),
    ({"paired_ood": True}, "paired_ood is not available with 'rules'"),
    ({"task_code_length": 2}, "depth 2; use 1 to 1 steps besides the rule's 1 selector tokens, or raise "
                              "task_code_length"),
    ({"rules": [{"selector": "all", "sequences": [["rot90"]], "depth": 2}]}, "not both"),
    ({"rules": [{"selector": {"kind": "colour", "color": 2}}]}, "rules.0.selector"),
])
def test_bad_rule_configs_raise_config_errors(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        TaskConfig.from_dict({**RED_OR_NEAR_GREY, **change})


def test_a_rule_depth_needs_the_transformation_pool() -> None:
    with pytest.raises(ConfigError, match="draws from the config's 'transformations'"):
        TaskConfig.from_dict({"sequences": [["rot90"]], "rules": [{"selector": "all", "depth": 2}]})


def test_rule_codes_put_the_selector_first() -> None:
    config = TaskConfig.from_dict(RED_OR_NEAR_GREY)
    sample = next(s for s in (generate_sample(config, "train", i) for i in range(30)) if s.task_key.startswith("near"))
    near = rule_of(config, sample)
    assert sample.task_code[:2] == tuple(encode_task_code([], 2, near))


def test_apply_rule_recomputes_outputs_from_input_and_task_code() -> None:
    from vision_bench.tasks.rules import apply_rule
    from vision_bench.tasks.studies.registry import get_study
    from vision_bench.tasks.task_code import decode_selector

    config = TaskConfig.from_dict(RED_OR_NEAR_GREY)
    for index in range(12):
        sample = generate_sample(config, "train", index)
        selector = decode_selector(sample.task_code)
        assert selector_name(selector) == selector_name(rule_of(config, sample))
        assert np.array_equal(apply_rule(sample.input, sample.sequence, selector), sample.output)
    cogitao = generate_sample(get_study("compgen/C1/1", n_train=2), "train", 0)
    assert decode_selector(cogitao.task_code) is None
    assert np.array_equal(apply_rule(cogitao.input, cogitao.sequence), cogitao.output)


def test_apply_rule_refuses_a_step_onto_a_distractor() -> None:
    from vision_bench.errors import TransformationError
    from vision_bench.tasks.rules import apply_rule

    grid = np.zeros((4, 4), dtype=np.uint8)
    grid[1, 0], grid[1, 2] = 2, 3
    with pytest.raises(TransformationError, match="covers row 1, column 2"):
        apply_rule(grid, ["translate_right", "translate_right"], parse_selector({"kind": "color", "color": 2}))
    moved = apply_rule(grid, ["translate_right"], parse_selector({"kind": "color", "color": 2}))
    assert moved[1].tolist() == [0, 2, 3, 0]


def test_a_rule_that_picks_no_library_object_fails_up_front() -> None:
    from vision_bench.errors import InfeasibleConfigError

    config = TaskConfig.from_dict({**RED_OR_NEAR_GREY, "rules": [{"selector": {"kind": "shape", "shape": "x3"}}]})
    with pytest.raises(InfeasibleConfigError, match="rule 0 \\(shape=x3\\) picks no library object"):
        generate_sample(config, "train", 0)


def test_a_rule_that_picks_every_object_cannot_have_distractors() -> None:
    """Distractors are objects the rule leaves alone: with `all`, none can be, and the error says so at once
    instead of blaming the grid size after every attempt."""
    from vision_bench.errors import InfeasibleConfigError

    config = TaskConfig.from_dict({**RED_OR_NEAR_GREY, "n_distractors": [1, 1], "rules": [{"selector": "all"}]})
    with pytest.raises(InfeasibleConfigError, match="rule 0 \\(all\\) picks every library object") as caught:
        generate_sample(config, "train", 0)
    assert "\n" not in str(caught.value) and "attempts" not in str(caught.value)
    alone = TaskConfig.from_dict({**RED_OR_NEAR_GREY, "n_distractors": [0, 0], "rules": [{"selector": "all"}]})
    assert generate_sample(alone, "train", 0).objects
