"""docs/architecture.md's "Add a task family" recipe, followed once, and the families of the built-in configs.

The toy family (`toy_sample`, its module's one entry point, defined in this test) is registered
by a fixture with the recipe's one line and removed again afterwards, so the registry is left as it
was. A config names it with `family: toy`; `vision-bench generate` and `export` write its samples,
a model trains on the export for one step and `vision-bench evaluate` scores it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml

from render.spec import RenderSpec
from vision_bench.cli import main
from vision_bench.errors import UnknownNameError
from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.families import FAMILIES, TaskFamily, family_of, study_family
from vision_bench.tasks.formats import read_tasks
from vision_bench.tasks.sample import TaskSample, sample_rng
from vision_bench.tasks.sampling import generate_split
from vision_bench.tasks.studies import get_study

SPEC = RenderSpec(size=(32, 32))
TOY = {
    "family": "toy",
    "seed": 3,
    "grid_height": 6,
    "grid_width": 6,
    "transformations": ["translate_right"],
    "samples": {"train": 8, "val_id": 4, "val_ood": 4, "test_id": 4, "test_ood": 4},
}


# --- the toy family's module: one entry point ------------------------------------------------------------------


def toy_sample(config: TaskConfig, split: str, index: int) -> TaskSample:
    """One cell of a drawn colour, moved one cell right: a pure function of (config, split, index)."""
    rng = sample_rng(config.seed, split, index)
    height, width = config.grid_height[1], config.grid_width[1]
    row, col, color = rng.randrange(height), rng.randrange(width - 1), rng.randint(1, 9)
    grid_in = np.zeros((height, width), dtype=np.uint8)
    grid_out = np.zeros_like(grid_in)
    grid_in[row, col] = grid_out[row, col + 1] = color
    return TaskSample(grid_in, grid_out, ("translate_right",), task_key="toy", seed=config.seed, split=split,
                      index=index)


@pytest.fixture
def toy() -> Iterator[str]:
    """The recipe's registration line (in a real family, beside `toy_sample` in its module)."""
    FAMILIES.add("toy", TaskFamily(toy_sample, "toy studies"), "one cell moved one cell right")
    yield "toy"
    FAMILIES.remove("toy")


# --- the recipe --------------------------------------------------------------------------------------------------


def test_a_config_naming_the_family_is_made_by_its_entry_point(toy: str) -> None:
    config = TaskConfig.from_dict(TOY)
    assert family_of(config) is FAMILIES[toy]
    assert config.to_dict()["family"] == toy and TaskConfig.from_dict(config.to_dict()) == config
    samples = generate_split(config, "train")
    assert samples == [toy_sample(config, "train", index) for index in range(8)]
    assert all(np.count_nonzero(sample.output) == 1 for sample in samples)


def test_the_toy_family_generates_exports_trains_and_evaluates(toy: str, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from vision_bench.train import TrainConfig, train

    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(TOY))
    config = TaskConfig.from_dict(TOY)

    assert main(["generate", "--config", str(path), "--out", str(tmp_path / "grids"), "--no-progress"]) == 0
    made = read_tasks(tmp_path / "grids" / "test_id.parquet")
    assert made == [toy_sample(config, "test_id", index) for index in range(4)]

    assert main(["export", "--config", str(path), "--out", str(tmp_path / "data"), "--format", "grids",
                 "--size", "32", "32", "--no-progress"]) == 0
    manifest = json.loads((tmp_path / "data" / "manifest.json").read_text())
    assert manifest["settings"]["config"]["family"] == toy

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
    assert metrics["baselines"]["ground_truth"]["splits"]["test_id"]["metrics"]["grid_accuracy"] == 100.0


def test_an_unknown_family_is_one_line_with_close_matches() -> None:
    config = TaskConfig.from_dict({**TOY, "family": "sequence"})
    with pytest.raises(UnknownNameError, match="unknown task family 'sequence'; did you mean 'sequences'"):
        family_of(config)


# --- the built-in families ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("study", "family"), [
    ("compgen/C1/1", "sequences"),
    ("alpha/rot90/0.2", "sequences"),
    ("gcog/systematic/depth1", "rules"),
    ("carc/3shot/1860", "episodes"),
    ("worldmodel/compgen/C1/1", "world_model"),
])
def test_configs_without_a_family_key_and_study_ids_find_the_family_of_their_fields(study: str, family: str) -> None:
    config = get_study(study, n_train=2, n_val=2, n_test=2)
    assert "family" not in config.to_dict()
    assert family_of(config) is FAMILIES[family]
    assert study_family(study) is FAMILIES[family]


def test_what_the_pipeline_asks_a_family() -> None:
    assert FAMILIES["episodes"].episodes and not FAMILIES["sequences"].episodes
    assert "rollouts" in FAMILIES["world_model"].reports and "error_taxonomy" in FAMILIES["episodes"].reports
    assert FAMILIES["sequences"].reports == frozenset() and FAMILIES["rules"].reports == frozenset()
    assert "stubbornness" in FAMILIES["rules"].unavailable_metrics
    world_model = FAMILIES["world_model"]
    assert world_model.one_step and world_model.whole_sample is not world_model.sample
