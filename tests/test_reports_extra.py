"""matplotlib is the `reports` extra: without it every module but `bench.plots` imports, `bench` writes its tables,
results and sheets with one line in place of the figures, and `show`, which is only a figure, refuses in one line."""

from __future__ import annotations

import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest
from cli_errors import cli_error

import vision_bench
from vision_bench.bench.figures import REPORTS_EXTRA, figures_missing

REPO = Path(__file__).resolve().parents[1]
TINY_BENCH = {"experiments": ["envgen/G1/1"], "models": [{"name": "unet:test_resnet", "options": {"decoder_width": 4}}],
              "baselines": ["copy_input"], "data": {"n_train": 4, "n_val": 2, "n_test": 2, "spec": {"size": [32, 32]}},
              "train": {"training": {"batch_size": 2, "max_steps": 1}}}


@pytest.fixture
def no_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    """`import matplotlib` raises ImportError, as in an install without the extra (a None entry in sys.modules is
    how the import system marks a module that cannot be imported)."""
    for name in [name for name in sys.modules if name == "matplotlib" or name.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)


def test_every_module_but_the_plots_imports_without_matplotlib() -> None:
    """No module imports matplotlib at its top except `bench.plots`, which only the reports import, after asking."""
    modules = sorted(info.name for info in pkgutil.walk_packages(vision_bench.__path__, "vision_bench.")
                     if info.name != "vision_bench.bench.plots" and not info.name.endswith("__main__"))
    code = ("import importlib, sys\nsys.modules['matplotlib'] = None\n"
            f"for name in {modules!r}:\n    importlib.import_module(name)\n"
            "from vision_bench.bench.figures import figures_missing\nprint(figures_missing())\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert REPORTS_EXTRA in done.stdout
    assert len(modules) > 100  # the walk found the package


def test_figures_missing_names_the_extra(no_matplotlib: None) -> None:
    assert figures_missing() == (f"Figures are left out: matplotlib, which draws them, is not installed "
                                 f"({REPORTS_EXTRA}).")


def test_with_matplotlib_the_figures_are_drawn() -> None:
    assert figures_missing() is None


def test_a_bench_without_matplotlib_writes_everything_but_the_figures(tmp_path: Path, no_matplotlib: None) -> None:
    from vision_bench.bench import run_bench

    run_bench(TINY_BENCH, tmp_path / "out", progress=False)
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert f"Figures are left out: matplotlib, which draws them, is not installed ({REPORTS_EXTRA})." in report
    assert not list((tmp_path / "out").rglob("plots/*.png"))
    assert (tmp_path / "out" / "results.csv").read_text(encoding="utf-8").count("\n") > 10
    assert "| copy_input (baseline) ID |" in report and "**GA: grid accuracy (%)**" in report  # the tables


def test_model_ranks_without_matplotlib_keep_the_table(tmp_path: Path, no_matplotlib: None) -> None:
    from vision_bench.bench.correlation import PairCounts
    from vision_bench.bench.model_ranks import ModelRankAgreement, RankViews, SampleAgreement, write_model_ranks

    results = [ModelRankAgreement("mse", 4, 0.75, 0.5, 1)]
    views = RankViews(("bench",), {"bench": ""}, results, results, [SampleAgreement("mse", 0, PairCounts())])
    write_model_ranks(views, tmp_path)
    markdown = (tmp_path / "model_ranks.md").read_text(encoding="utf-8")
    assert "| 4 | 75% | +0.50 (1) |" in markdown and REPORTS_EXTRA in markdown
    assert not (tmp_path / "model_ranks.png").exists() and (tmp_path / "model_ranks.csv").is_file()


def test_show_without_matplotlib_refuses_in_one_line(tmp_path: Path, no_matplotlib: None,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps([{"input": [[1]], "output": [[2]]}]), encoding="utf-8")
    message = cli_error(["show", tasks, "--out", tmp_path / "sheet.png"], capsys,
                        f"show draws its sheet with matplotlib, which is not installed ({REPORTS_EXTRA})")
    assert message.endswith(f"({REPORTS_EXTRA})") and sorted(tmp_path.iterdir()) == [tasks]
