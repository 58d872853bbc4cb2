"""A config's `family:` must fit its fields, and every command refuses one that does not before any work
(one line, exit 2); a world model keeps the metrics of the family it serves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_errors import cli_error

from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.evaluation.data import training_sequences
from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.families import FAMILIES, family_of
from vision_bench.tasks.studies import get_study

COUNTS = {"n_train": 2, "n_val": 2, "n_test": 2}
PLAIN: dict[str, Any] = {"seed": 1, "grid_height": 8, "grid_width": 8, "n_objects": 1,
                         "transformations": ["translate_right"],
                         "samples": {"train": 2, "val_id": 2, "val_ood": 2, "test_id": 2, "test_ood": 2}}


def _study(study: str, **changes: object) -> dict[str, Any]:
    return {**get_study(study, **COUNTS).to_dict(), **changes}


MISFITS = {
    "sequences-on-rules": (lambda: _study("gcog/systematic/depth1", family="sequences"), "'sequences'", "'rules'"),
    "sequences-on-episodes": (lambda: _study("carc/3shot/1860", family="sequences"), "'sequences'", "'episodes'"),
    "rules-without-rules": (lambda: {**PLAIN, "family": "rules"}, "'rules'", "'sequences'"),
    "mistyped": (lambda: {**PLAIN, "family": "sequence"}, "unknown task family 'sequence'", "'sequences'"),
    "sequences-on-world-model": (
        lambda: {**PLAIN, "kind": "world_model", "family": "sequences"},
        "'sequences'",
        "'world_model'",
    ),
    "world-model-without-kind": (lambda: {**PLAIN, "family": "world_model"}, "world_model needs kind: world_model"),
    "episodes-without-episode": (lambda: {**PLAIN, "family": "episodes"}, "episodes needs an `episode` section"),
}


@pytest.mark.parametrize("case", MISFITS)
def test_a_family_that_does_not_fit_the_fields_is_refused(case: str) -> None:
    document, *needles = MISFITS[case]
    with pytest.raises((ConfigError, UnknownNameError)) as caught:
        family_of(TaskConfig.from_dict(document()))
    message = str(caught.value)
    assert "\n" not in message and all(needle in message for needle in needles), message


def test_a_fitting_family_name_is_the_inferred_family() -> None:
    for study in ("compgen/C1/1", "gcog/systematic/depth1", "carc/3shot/1860"):
        inferred = family_of(get_study(study, **COUNTS))
        named = next(name for name, family in FAMILIES.items() if family is inferred)
        assert family_of(TaskConfig.from_dict(_study(study, family=named))) is inferred


def _commands(tmp: Path, document: dict[str, Any]) -> dict[str, list[str]]:
    config = tmp / "task.yaml"
    config.write_text(yaml.safe_dump(document))
    train = tmp / "train.yaml"
    train.write_text(yaml.safe_dump({"dataset": {"task": document, "spec": {"size": [32, 32]}},
                                     "model": {"name": "unet:test_resnet"},
                                     "training": {"batch_size": 2, "epochs": 1, "max_steps": 1}}))
    bench = tmp / "bench.yaml"
    bench.write_text(yaml.safe_dump({"experiments": [str(config)], "models": ["unet:test_resnet"]}))
    return {
        "generate": ["generate", "--config", str(config), "--out", str(tmp / "out"), "--no-progress"],
        "export": ["export", "--config", str(config), "--out", str(tmp / "out"), "--format", "grids",
                   "--no-progress"],
        "train": ["train", str(train), "--out", str(tmp / "out"), "--no-progress"],
        "bench": ["bench", str(bench), "--out", str(tmp / "out"), "--no-progress", "--offline"],
    }


@pytest.mark.parametrize("case", MISFITS)
@pytest.mark.parametrize("command", ["generate", "export", "train", "bench"])
def test_every_command_refuses_a_misfit_family_before_any_work(case: str, command: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    document, *needles = MISFITS[case]
    cli_error(_commands(tmp_path, document())[command], capsys, *needles, seconds=60)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*"))


def test_a_world_model_of_a_rule_study_keeps_stubbornness_undefined() -> None:
    config = TaskConfig.from_dict(_study("gcog/systematic/depth1", kind="world_model"))
    family = family_of(config)
    assert family.one_step and "rollouts" in family.reports and "stubbornness" in family.unavailable_metrics
    sequences, note = training_sequences(config)
    assert sequences is None and note is not None and note.startswith("stubbornness: not defined for rule studies")
    whole = family.whole_sample(config, "train", 0)
    served = family.sample(config, "train", 0)
    assert served.sequence[0] in whole.sequence and len(served.frames) == 2
    assert any(served == step for step in (_step(whole, k) for k in range(len(whole.sequence))))


def _step(whole: Any, k: int) -> Any:
    from vision_bench.tasks.families.world_model import transition

    return transition(whole, k)
