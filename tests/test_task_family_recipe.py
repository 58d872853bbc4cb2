"""docs/architecture.md's "Add a task family" recipe, followed once, and what the pipeline does with each
built-in family's studies.

The toy family's module (`TOY_MODULE`: its entry point `sample`, a `check`, and its registration
line) is written into a package of its own and imported, as the recipe says, and unregistered
again afterwards. Its config names it with `family: toy` and sets no `transformations`;
`vision-bench generate` and `export` write its samples, a model trains on the export for one step
and `vision-bench evaluate` scores those samples.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import yaml
from cli_errors import cli_error

from render.spec import RenderSpec
from vision_bench.bench.rollout_report import is_rollout_experiment
from vision_bench.cli import main
from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.evaluation.data import task_facts, training_sequences
from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.families import FAMILIES, family_of, study_family
from vision_bench.tasks.formats import read_tasks
from vision_bench.tasks.sampling import generate_split
from vision_bench.tasks.studies import get_study

SPEC = RenderSpec(size=(32, 32))
TOY = {
    "family": "toy",
    "seed": 3,
    "grid_height": 6,
    "grid_width": 6,
    "samples": {"train": 8, "val_id": 4, "val_ood": 4, "test_id": 4, "test_ood": 4},
}
"""A toy config: only the fields the toy family uses (no `transformations` or `sequences`)."""

TOY_MODULE = '''"""The toy family: one cell of a drawn colour, moved one cell right."""

import numpy as np

from vision_bench.errors import ConfigError
from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.families.base import FAMILIES, TaskFamily
from vision_bench.tasks.sample import TaskSample, sample_rng


def sample(config: TaskConfig, split: str, index: int) -> TaskSample:
    rng = sample_rng(config.seed, split, index)
    height, width = config.grid_height[1], config.grid_width[1]
    row, col, color = rng.randrange(height), rng.randrange(width - 1), rng.randint(1, 9)
    grid_in = np.zeros((height, width), dtype=np.uint8)
    grid_out = np.zeros_like(grid_in)
    grid_in[row, col] = grid_out[row, col + 1] = color
    return TaskSample(grid_in, grid_out, ("translate_right",), task_key="toy", seed=config.seed, split=split,
                      index=index)


def check(config: TaskConfig) -> None:
    if config.grid_width[1] < 2:
        raise ConfigError("the toy family moves a cell right: grid_width must be at least 2")


FAMILIES.add("toy", TaskFamily(sample, "toy studies", check=check), "one cell moved one cell right")
'''
"""The recipe's step 1, as written: the family's module, its entry point and its registration line."""


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The toy module written into a package of its own and imported, as `families/registry.py` imports a
    built-in family (the recipe's step 2); unregistered again afterwards, so the registry is left as it was."""
    package = tmp_path / "toy_families"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "toy.py").write_text(TOY_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("toy_families.toy")
    yield module
    FAMILIES.remove("toy")
    for name in ("toy_families.toy", "toy_families"):
        sys.modules.pop(name, None)


# --- the recipe ---------------------------------------------------------------------------------------------------


def test_a_config_naming_the_family_is_made_by_its_entry_point(toy: ModuleType) -> None:
    config = TaskConfig.from_dict(TOY)
    assert config.transformations is None and config.sequences is None
    assert family_of(config) is FAMILIES["toy"]
    assert config.to_dict()["family"] == "toy" and TaskConfig.from_dict(config.to_dict()) == config
    samples = generate_split(config, "train")
    assert samples == [toy.sample(config, "train", index) for index in range(8)]
    assert all(np.count_nonzero(sample.output) == 1 for sample in samples)


def test_the_family_checks_its_own_settings(toy: ModuleType) -> None:
    with pytest.raises(ConfigError, match="grid_width must be at least 2"):
        family_of(TaskConfig.from_dict({**TOY, "grid_width": 1}))


def test_the_toy_family_generates_exports_trains_and_evaluates(toy: ModuleType, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from vision_bench.train import TrainConfig, train

    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(TOY))
    config = TaskConfig.from_dict(TOY)
    expected = {split: [toy.sample(config, split, index) for index in range(4)] for split in ("test_id", "test_ood")}

    assert main(["generate", "--config", str(path), "--out", str(tmp_path / "grids"), "--no-progress"]) == 0
    assert read_tasks(tmp_path / "grids" / "test_id.parquet") == expected["test_id"]

    assert main(["export", "--config", str(path), "--out", str(tmp_path / "data"), "--format", "grids",
                 "--size", "32", "32", "--no-progress"]) == 0
    manifest_path = tmp_path / "data" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    assert manifest["settings"]["config"]["family"] == "toy"

    run = TrainConfig.from_dict({
        "dataset": {"path": str(tmp_path / "data"), "spec": SPEC.to_dict()},
        "model": {"name": "vit:test_vit", "options": {"patch_size": 16}},
        "training": {"batch_size": 4, "eval_batch_size": 4, "epochs": 1, "max_steps": 1},
        "schedule": {"warmup_steps": 1},
    })
    train(run, tmp_path / "run", progress=False)
    capsys.readouterr()

    assert main(["evaluate", str(tmp_path / "run"), "--batch-size", "4", "--no-progress"]) == 0
    metrics = json.loads((tmp_path / "run" / "evaluation" / "metrics.json").read_text())
    assert set(metrics["splits"]) == {"test_id", "test_ood"} and metrics["splits"]["test_id"]["n"] == 4
    baselines = metrics["baselines"]
    assert baselines["ground_truth"]["splits"]["test_id"]["metrics"]["grid_accuracy"] == 100.0
    # every toy sample moves its one cell, so copying the input is never right: the scored pairs are the toy's
    assert all(baselines["copy_input"]["splits"][split]["metrics"]["grid_accuracy"] == 0.0 for split in expected)
    assert {key: value for key, value in metrics.items() if key.startswith("stubbornness")} == {}

    manifest["settings"]["config"]["family"] = "toys"
    manifest_path.write_text(json.dumps(manifest))
    cli_error(["evaluate", tmp_path / "run", "--batch-size", "4", "--no-progress"], capsys,
              "unknown task family 'toys'; did you mean 'toy'")


def test_an_unknown_family_is_one_line_with_close_matches() -> None:
    config = TaskConfig.from_dict({**TOY, "family": "sequence", "transformations": ["translate_right"]})
    with pytest.raises(UnknownNameError, match="unknown task family 'sequence'; did you mean 'sequences'"):
        family_of(config)


# --- the built-in families ---------------------------------------------------------------------------------------

STUDIES = {
    "compgen/C1/1": "sequences",
    "alpha/rot90/0.2": "sequences",
    "gcog/systematic/depth1": "rules",
    "carc/3shot/1860": "episodes",
    "worldmodel/compgen/C1/1": "world_model",
    "svib/S-A/0.2": "scenes",
}


@pytest.mark.parametrize(("study", "family"), STUDIES.items())
def test_configs_without_a_family_key_and_study_ids_find_the_family_of_their_fields(study: str, family: str) -> None:
    config = get_study(study, n_train=2, n_val=2, n_test=2)
    assert "family" not in config.to_dict()
    inferred = family_of(config)
    assert study_family(study) is FAMILIES[family]
    assert inferred.claims is FAMILIES[family].claims and inferred.over is None  # a world model: over sequences
    assert inferred is FAMILIES[family] or inferred.sequence_sample is FAMILIES["sequences"].sample


@pytest.mark.parametrize("study", STUDIES)
def test_what_the_pipeline_does_with_each_family(study: str) -> None:
    """Rollouts for world models only; the C-ARC setup (the error taxonomy) for episodes only; stubbornness
    undefined for rules, episodes and scenes; a world model's training sequences are single actions; scenes have
    no sequence, and only they support factor accuracy."""
    config = get_study(study, n_train=2, n_val=2, n_test=2)
    family = STUDIES[study]
    assert is_rollout_experiment(study) == (family == "world_model")
    assert task_facts(config)["episode_setup"] == ("3shot" if family == "episodes" else None)
    sequences, note = training_sequences(config)
    if family in ("rules", "episodes", "scenes"):
        assert sequences is None and note is not None and note.startswith("stubbornness: not defined for")
    elif family == "world_model":
        assert sequences and all(len(sequence) == 1 for sequence in sequences) and note is None
    else:
        assert note is None or note.startswith("stubbornness skipped")
    sample = family_of(config).sample(config, "train", 0)
    if family == "world_model":
        assert len(sample.sequence) == 1
    else:
        assert bool(sample.sequence) == (family != "scenes")
    assert bool(family_of(config).metrics) == (family == "scenes")
