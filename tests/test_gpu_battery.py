"""The GPU battery's summary (benchmarks/gpu_battery_summary.py) on hand-made run folders."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_battery_summary.py"


@pytest.fixture(scope="module")
def summary_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_battery_summary", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_run(run: Path, *, started: str, steps: list[tuple[int, float, float]], batch: int,
             resumed_from: int | None = None, finished: bool = True) -> None:
    """A run folder as training writes it: environment.json, config.yaml, step records, maybe an evaluation."""
    run.mkdir(parents=True)
    (run / "environment.json").write_text(json.dumps(
        {"started": started, "device": "cuda:0", "cuda_device": "Test GPU", "resumed_from_step": resumed_from}))
    (run / "config.yaml").write_text(f"seed: 0\ntraining:\n  batch_size: {batch}\n  eval_batch_size: 50\n")
    records = [{"kind": "step", "step": step, "images_per_s": rate, "data_wait_share": wait}
               for step, rate, wait in steps]
    records.append({"kind": "epoch", "step": steps[-1][0], "val_id/loss": 0.1})
    (run / "metrics.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    if finished:
        (run / "evaluation").mkdir()
        (run / "evaluation" / "metrics.json").write_text("{}")


def test_summary_counts_each_run_once_and_a_resumed_run_from_its_resume(
        tmp_path: Path, summary_module: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    study = Path("out/study")
    make_run(study / "runs/e/a/seed0", started="2026-01-01T10:00:10+00:00", batch=32,
             steps=[(10, 1.0, 0.9), (20, 100.0, 0.2), (30, 300.0, 0.4), (40, 200.0, 0.3)])
    make_run(study / "runs/e/b/seed0", started="2026-01-01T10:00:20+00:00", batch=20, resumed_from=100,
             steps=[(50, 900.0, 0.0), (100, 900.0, 0.0),  # the earlier session's records, kept in the file
                    (120, 1.0, 0.9), (150, 50.0, 0.5), (200, 60.0, 0.7)], finished=False)
    make_run(study / "runs/e/c/seed0", started="2026-01-01T09:00:00+00:00", batch=32,  # before the battery
             steps=[(10, 5.0, 0.0)])
    jobs = tmp_path / "jobs.txt"
    jobs.write_text("# a comment\nstudy.yaml out/study 3 0 1\n\nstudy.yaml out/study 3 2\n")  # one folder, twice
    results = tmp_path / "results"
    results.mkdir()
    (results / "started").write_text("2026-01-01T10:00:00+00:00\n")
    (results / "ended").write_text("2026-01-01T10:01:40+00:00\n")
    (results / "gpu_samples.csv").write_text(
        "2026/01/01 10:00:01.000, 80, 1000, 300.0\n2026/01/01 10:00:03.000, 100, 3000, 500.0\n[N/A], x, y, z\n")

    summary = summary_module.summarise(jobs, results)

    assert [run["run"] for run in summary["runs"]] == ["out/study/runs/e/a/seed0", "out/study/runs/e/b/seed0"]
    first, resumed = summary["runs"]
    assert first["images_per_s"] == 200.0  # the median of the records after the first
    assert first["data_wait_share"] == pytest.approx(0.3)
    assert (first["finished"], first["images_trained"]) == (True, 40 * 32)
    assert (resumed["finished"], resumed["images_trained"]) == (False, (200 - 100) * 20)
    assert summary["wall_s"] == 100.0
    assert summary["images_trained"] == 40 * 32 + 100 * 20
    assert summary["images_per_s_total"] == pytest.approx((40 * 32 + 100 * 20) / 100.0)
    assert summary["gpu_samples"] == {"samples": 2, "utilisation_mean": 90.0, "utilisation_max": 100.0,
                                      "memory_max_mib": 3000.0, "power_mean_w": 400.0}
    page = summary_module.markdown(summary)
    assert (resumed["images_per_s"], resumed["data_wait_share"]) == (55.0, pytest.approx(0.6))  # this session's only
    assert "| out/study/runs/e/b/seed0 | Test GPU | no | 200 | 55 | 0.600 |" in page
    assert "mean 90%, max 100%" in page
