"""The reduced-scale study configs under docs/results stay valid: each loads, and one runs at tiny scale."""

from pathlib import Path

import pytest
import yaml

from vision_bench.bench import run_bench
from vision_bench.bench.config import BenchConfig

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
STUDIES = sorted(RESULTS.rglob("study.yaml"))


def test_the_studies_exist() -> None:
    assert {path.parent.name for path in STUDIES} >= {"compgen_c1", "envgen", "alpha_sweep", "gcog", "carc", "3shot"}


@pytest.mark.parametrize("path", STUDIES, ids=lambda path: path.parent.relative_to(RESULTS).as_posix())
def test_study_config_loads_and_names_its_command(path: Path) -> None:
    config = BenchConfig.from_yaml(path)
    assert config.models and config.seeds
    folder = path.parent.relative_to(RESULTS.parents[1]).as_posix()
    assert f"vision-bench bench {folder}/study.yaml --out {folder}" in path.read_text(encoding="utf-8")


@pytest.mark.slow
def test_a_study_config_runs_at_tiny_scale(tmp_path: Path) -> None:
    config = yaml.safe_load((RESULTS / "envgen" / "study.yaml").read_text(encoding="utf-8"))
    config["experiments"] = config["experiments"][:1]
    config["seeds"] = [0]
    config["data"].update(n_train=8, n_val=4, n_test=4)
    config["train"]["training"].update(max_steps=2, batch_size=4, eval_batch_size=4, log_every=1)
    config["evaluate"].update(sheet_samples=1, batch_size=4)
    for model in config["models"]:  # a model's own step count would override the tiny one
        model.get("train", {}).get("training", {}).pop("max_steps", None)
    result = run_bench(config, tmp_path / "bench", progress=False, device="cpu")
    assert len(result.computed) == len(config["models"]) + 1  # every model, then the baselines
    assert result.results_csv is not None and result.results_csv.is_file()
