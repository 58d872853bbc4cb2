"""Bench: config validation, Table-1 tables with mean +- SEM, reports, plots, and an end-to-end run."""

from __future__ import annotations

import base64
import json
import math
import os
import re
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from vision_bench.bench.aggregate import CellResult, summarize_cells  # noqa: E402
from vision_bench.bench.config import BenchConfig, resolve_experiments, setting_of  # noqa: E402
from vision_bench.bench.figures import Point  # noqa: E402
from vision_bench.bench.plots import plot_metric_by_setting, plot_metric_vs_alpha  # noqa: E402
from vision_bench.bench.report import (  # noqa: E402
    Figure,
    Heading,
    Paragraph,
    Report,
    Table,
    format_mean_sem,
    write_report,
)
from vision_bench.bench.tables import table1, text_table  # noqa: E402
from vision_bench.errors import ConfigError, UserError  # noqa: E402
from vision_bench.tasks.studies.builder import alpha_of  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SMOKE_CONFIG = REPO / "configs" / "bench_smoke.yaml"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# ----------------------------------------------------------------------------- config


def test_config_accepts_model_names_and_reports_unknown_keys() -> None:
    config = BenchConfig.from_dict({"experiments": "envgen/G1", "models": ["unet:test_resnet"], "seeds": [0, 1]})
    assert config.models[0].name == "unet:test_resnet" and config.models[0].display == "unet:test_resnet"
    assert config.experiments == ("envgen/G1",)
    with pytest.raises(ConfigError, match=r"evaluate\.split: unknown key; did you mean 'splits'\?"):
        BenchConfig.from_dict({"experiments": ["x"], "models": ["m"], "evaluate": {"split": ["test_id"]}})
    with pytest.raises(ConfigError, match="list them under `baselines`"):
        BenchConfig.from_dict({"experiments": ["x"], "models": ["ground_truth"]})
    with pytest.raises(ConfigError, match="train.model is set per cell"):
        BenchConfig.from_dict({"experiments": ["x"], "models": ["m"], "train": {"model": {"name": "m"}}})
    with pytest.raises(ConfigError, match="labels must be unique"):
        BenchConfig.from_dict({"experiments": ["x"], "models": ["m", "m"]})


def test_experiment_prefixes_expand_and_unknown_ids_suggest_close_matches() -> None:
    known = ["compgen/C1/1", "compgen/C1/2", "envgen/G1/1", "envgen/G2/1", "alpha/translate_up/0.4"]
    assert resolve_experiments(("envgen", "compgen/C1/2"), known) == ["envgen/G1/1", "envgen/G2/1", "compgen/C1/2"]
    with pytest.raises(ConfigError, match="did you mean 'envgen/G1/1'"):
        resolve_experiments(("envgen/G1/7",), known)
    assert setting_of("compgen/C1/3") == "compgen/C1"
    assert setting_of("alpha/translate_up/0.4") == "alpha/translate_up/0.4"
    assert setting_of("configs/my_task.yaml") == "my_task"
    assert alpha_of("alpha/translate_up/0.4") == 0.4 and alpha_of("envgen/G1/1") is None


TINY_BENCH = {"experiments": ["envgen/G1/1"], "models": [{"name": "unet:test_resnet", "options": {"decoder_width": 4}}],
              "baselines": ["copy_input"], "data": {"n_train": 4, "n_val": 2, "n_test": 2, "spec": {"size": [32, 32]}},
              "train": {"training": {"batch_size": 2, "max_steps": 1}}}


@pytest.mark.parametrize(("change", "message"), [
    ({"train": {"training": {"batch_size": 2, "max_step": 1}}},
     r"^bench config: train\.training\.max_step: unknown key; did you mean 'max_steps'\?"),
    ({"models": [{"name": "unet:test_resnet", "train": {"optimizer": {"betas": [0.9, 1.5]}}}]},
     r"^bench config: models\.0\.train\.optimizer\.betas: each beta must be in "),
    ({"seeds": [0, -1]}, r"^bench config: seeds\.1: seed -1 is out of range; use a seed from 0 to 4294967295"),
    ({"data": {"spec": {"size": [32, 32], "palete": "arc"}}},
     r"^bench config: data\.spec\.palete: unknown key; did you mean 'palette'\?"),
    ({"data": {"spec": {"size": [32, 32], "blur": "gaussian:-1"}}},
     r"^bench config: data\.spec\.blur: gaussian blur needs sigma"),
    ({"experiments": ["envgen/G1/1", "envgen/G7/1"]}, "^experiments: unknown study 'envgen/G7/1'"),
    ({"train": {"runtime": {"device": "cuda:7"}}}, "^train.runtime.device: cuda:7 (was requested|does not exist)"),
])
def test_a_bad_key_anywhere_fails_before_anything_is_written(tmp_path: Path, change: dict, message: str) -> None:
    """The whole config, down to the last cell's training config, is checked before the first cell."""
    import torch

    from vision_bench.bench import run_bench

    if "cuda:7" in message and torch.cuda.device_count() > 7:
        pytest.skip("this machine has a cuda:7")
    with pytest.raises(ConfigError, match=message):
        run_bench({**TINY_BENCH, **change}, tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------- tables


def _cell(predictor: str, experiment: str, seed: int | None, ga: tuple[float, float], mse: tuple[float, float],
          baseline: bool = False) -> CellResult:
    splits = {"test_id": {"grid_accuracy": ga[0], "mse": mse[0]}, "test_ood": {"grid_accuracy": ga[1], "mse": mse[1]}}
    return CellResult(predictor, experiment, setting_of(experiment), seed, baseline, splits)


CELLS = [
    _cell("unet", "envgen/G1/1", 0, (80.0, 20.0), (0.01, 0.04)),
    _cell("unet", "envgen/G1/2", 0, (60.0, 0.0), (0.02, 0.02)),
    _cell("copy_input", "envgen/G1/1", None, (0.0, 0.0), (0.05, 0.05), baseline=True),
    _cell("copy_input", "envgen/G1/2", None, (0.0, 0.0), (0.05, 0.05), baseline=True),
]


def test_a_setting_averages_its_experiments_and_forms_gaps_per_cell() -> None:
    """Two experiments of one seed each: the setting's value is the mean of the two, with no ± (one seed; an SEM
    over the two experiments would be 10.0)."""
    ga = summarize_cells(CELLS, "grid_accuracy")[("unet", "envgen/G1")]
    assert ga.id.mean == pytest.approx(70.0) and math.isnan(ga.id.sem)
    assert ga.ood.mean == pytest.approx(10.0) and math.isnan(ga.ood.sem)
    assert ga.gap.mean == pytest.approx(60.0) and math.isnan(ga.gap.sem)  # both drops are 60 points
    mse = summarize_cells(CELLS, "mse")[("unet", "envgen/G1")]
    assert mse.gap.mean == pytest.approx((math.log(4.0) + 0.0) / 2)  # SVIB: log OOD - log ID per cell


def test_table1_layout_has_a_row_per_setting_and_a_column_group_per_predictor() -> None:
    table = table1(CELLS, "grid_accuracy", ["envgen/G1", "envgen/G2"])
    assert table.columns == ["setting", "ID", "OOD", "Δ", "ID", "OOD", "Δ"]
    assert table.groups == [("unet", 3), ("copy_input (baseline)", 3)]
    assert table.rows == [["envgen/G1", "70.0", "10.0", "60.0", "0.0", "0.0", "0.0"],
                          ["envgen/G2", "—", "—", "—", "—", "—", "—"]]
    assert "never across experiments" in table.note
    single = table1(CELLS[:1], "mse", ["envgen/G1"])
    assert single.rows[0][1:] == ["0.01", "0.04", f"{math.log(4.0):.3g}"]  # one run: no ± part


def test_text_table_aligns_columns() -> None:
    text = text_table(["model", "ID GA"], [["unet", "70.0"], ["copy_input (baseline)", "0.0"]])
    lines = text.splitlines()
    assert lines[0].startswith("model") and set(lines[1]) <= {"-", " "}
    assert len({len(line) for line in lines}) == 1


# ----------------------------------------------------------------------------- report files


def _png(path: Path) -> Path:
    plot_metric_vs_alpha({"vit": {"test_ood": {0.2: Point(0.3, 0.01), 0.6: Point(0.1)}}}, metric="LPIPS", path=path)
    return path


def test_report_markdown_links_images_and_html_embeds_them(tmp_path: Path) -> None:
    figure = _png(tmp_path / "plots" / "alpha.png")
    assert figure.read_bytes().startswith(PNG_MAGIC)
    report = Report("Demo", [
        Heading("Results"),
        Paragraph("a < b & c"),
        Table(["model", "ID", "OOD"], [["unet", "1.0", "2|3"]], title="GA", groups=[("C1", 2)], note="n=1"),
        Figure(figure, "alpha plot"),
    ])
    markdown_path, html_path = write_report(report, tmp_path)
    markdown = markdown_path.read_text(encoding="utf-8")
    assert "| model | C1 ID | C1 OOD |" in markdown and "| unet | 1.0 | 2\\|3 |" in markdown
    assert "![alpha plot](plots/alpha.png)" in markdown
    html = html_path.read_text(encoding="utf-8")
    assert "a &lt; b &amp; c" in html and '<th colspan="2">C1</th>' in html
    embedded = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    assert len(embedded) == 1 and base64.b64decode(embedded[0]) == figure.read_bytes()
    assert "plots/alpha.png" not in html
    with pytest.raises(UserError, match="2 cells for 3 columns"):
        Table(["a", "b", "c"], [["1", "2"]])


def test_format_mean_sem() -> None:
    assert format_mean_sem(81.04, 1.25, 1, fixed=True) == "81.0 ± 1.2"
    assert format_mean_sem(0.012345, float("nan")) == "0.01235"
    assert format_mean_sem(float("nan"), 1.0) == "n/a"


def test_metric_by_setting_plot_writes_a_png(tmp_path: Path) -> None:
    values = {"test_id": {"unet": {"C1": Point(70.0, 10.0)}}, "test_ood": {"unet": {"C1": Point(10.0)}}}
    path = plot_metric_by_setting(values, metric="GA", settings=["C1", "C2"], path=tmp_path / "ga.png")
    assert path.read_bytes().startswith(PNG_MAGIC)


def test_alpha_sweep_report_plots_metrics_against_alpha(tmp_path: Path) -> None:
    from vision_bench.bench.aggregate import summarize_alpha
    from vision_bench.bench.summary import build_report

    unavailable = {"lpips": "unavailable: LPIPS-alex needs alexnet-owt-7be5be79.pth"}
    cells = [
        CellResult("vit", f"alpha/translate_up/{alpha}", setting_of(f"alpha/translate_up/{alpha}"), seed, False,
                   {"test_id": {"mse": 0.01, "grid_accuracy": 90.0, "lpips": float("nan")},
                    "test_ood": {"mse": mse, "grid_accuracy": ga, "lpips": float("nan")}},
                   alpha=alpha, status=unavailable)
        for alpha, seed, mse, ga in [(0.2, 0, 0.05, 10.0), (0.2, 1, 0.07, 20.0), (0.6, 0, 0.02, 60.0)]
    ]
    curves = summarize_alpha(cells, "mse", ["test_ood"])
    assert curves["vit"]["test_ood"][0.2].mean == pytest.approx(0.06)
    assert curves["vit"]["test_ood"][0.2].sem == pytest.approx(0.01)
    config = BenchConfig.from_dict({"experiments": ["alpha/translate_up/0.2", "alpha/translate_up/0.6"],
                                    "models": ["vit:test_vit"], "baselines": []})
    report = build_report(config, cells, tmp_path)
    figures = [b.path.name for b in report.blocks if isinstance(b, Figure)]
    assert "mse_vs_alpha.png" in figures and "grid_accuracy_vs_alpha.png" in figures
    assert "lpips_vs_alpha.png" not in figures
    texts = [b.text for b in report.blocks if isinstance(b, Paragraph)]
    assert "LPIPS unavailable: LPIPS-alex needs alexnet-owt-7be5be79.pth" in texts
    tables = [b for b in report.blocks if isinstance(b, Table)]
    assert tables[0].groups == [("vit", 3)]
    assert tables[0].rows == [["alpha/translate_up/0.2", "90.0 ± 0.0", "15.0 ± 5.0", "75.0 ± 5.0"],
                              ["alpha/translate_up/0.6", "90.0", "60.0", "30.0"]]
    assert not any(t.title.endswith("per experiment") for t in tables)  # one experiment per setting


# ----------------------------------------------------------------------------- end to end


def _numbers_in(text: str) -> set[str]:
    return set(re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", text))


@pytest.fixture(scope="module")
def smoke_bench(tmp_path_factory: pytest.TempPathFactory):
    pytest.importorskip("vision_bench.tasks.studies")
    import yaml

    from vision_bench.bench import run_bench

    config = yaml.safe_load(SMOKE_CONFIG.read_text(encoding="utf-8"))
    # A report label and a per-model train override must not lose the model's sheets or settings.
    config["models"][-1].update(label="ViT (labelled)", train={"optimizer": {"lr": 0.002}})
    out = tmp_path_factory.mktemp("bench")
    return run_bench(config, out, progress=False)


@pytest.mark.slow  # trains and evaluates the smoke bench (module fixture)
def test_smoke_bench_writes_report_with_the_evaluated_numbers(smoke_bench) -> None:
    from vision_bench.bench.tables import format_metric

    result = smoke_bench
    config = result.config
    markdown = result.report_md.read_text(encoding="utf-8")
    experiments = {c.experiment for c in result.cells}
    assert len(result.computed) == len(experiments) * (len(config.models) * len(config.seeds) + 1)
    trained = [c for c in result.cells if not c.baseline]
    assert trained and {c.predictor for c in result.cells if c.baseline} == set(config.baselines)
    for cell in trained:
        metrics = json.loads((cell.run_dir / "evaluation" / "metrics.json").read_text())
        mse = metrics["splits"]["test_id"]["metrics"]["mse"]
        assert format_metric("mse", mse) in markdown  # one experiment, one seed: the cell's own number
        assert format_metric("grid_accuracy", metrics["splits"]["test_ood"]["metrics"]["grid_accuracy"]) in markdown
    header, _, row = markdown.split("**GA: grid accuracy (%)**\n\n")[1].splitlines()[:3]
    assert header.endswith("| ground_truth (baseline) ID | ground_truth (baseline) OOD | ground_truth (baseline) Δ |")
    assert row.startswith("| envgen/G1 |") and row.endswith("| 100.0 | 100.0 | 0.0 |")  # the ceiling, last
    assert "LPIPS unavailable" in markdown or "**LPIPS**" in markdown
    for name in ("grid_accuracy_by_setting.png", "mse_by_setting.png", "training_curves.png"):
        assert (result.out_dir / "plots" / name).read_bytes().startswith(PNG_MAGIC)
    sheets = sorted((result.out_dir / "sheets").glob("*.png"))
    assert len(sheets) == len(config.models) * 2 * 2  # every model: test_id / test_ood, best / worst
    assert any(s.name.startswith("ViT_labelled") for s in sheets)
    labelled = next(c for c in trained if c.predictor == "ViT (labelled)")
    run_config = (labelled.run_dir / "config.yaml").read_text(encoding="utf-8")
    assert "lr: 0.002" in run_config and "batch_size: 16" in run_config
    html = result.report_html.read_text(encoding="utf-8")
    assert html.count("data:image/png;base64,") == markdown.count("![")


@pytest.mark.slow  # trains and evaluates the smoke bench (module fixture)
def test_smoke_bench_writes_results_with_each_cells_numbers(smoke_bench) -> None:
    import csv

    result = smoke_bench
    with open(result.results_csv, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    labelled = next(c for c in result.cells if c.predictor == "ViT (labelled)")
    metrics = json.loads((labelled.run_dir / "evaluation" / "metrics.json").read_text())
    expected = {(split, name): "" if value is None else repr(float(value))
                for split, entry in metrics["splits"].items() for name, value in entry["metrics"].items()}
    mine = [row for row in rows if row["model"] == "ViT (labelled)"]  # the report label names the model
    assert {(row["split"], row["metric"]): row["value"] for row in mine} == expected and len(mine) == len(expected)
    assert {(row["study"], row["experiment"], row["seed"], row["baseline"]) for row in mine} == {
        ("envgen/G1", "envgen/G1/1", "0", "false")}
    assert {row["model"] for row in rows if row["baseline"] == "true"} == set(result.config.baselines)
    document = json.loads(result.results_json.read_text())
    assert (document["bench"], len(document["rows"])) == ("smoke", len(rows))


@pytest.mark.slow  # trains and evaluates the smoke bench (module fixture)
def test_smoke_bench_resumes_by_skipping_finished_cells(smoke_bench, monkeypatch: pytest.MonkeyPatch) -> None:
    from vision_bench.bench import run_bench, summary_table

    monkeypatch.chdir(smoke_bench.out_dir.parent)  # a relative output folder, as users type it
    again = run_bench(smoke_bench.config, Path(smoke_bench.out_dir.name), progress=False)
    assert again.computed == [] and len(again.skipped) == len(smoke_bench.computed)
    for link in re.findall(r"\]\(([^)]+\.png)\)", again.report_md.read_text(encoding="utf-8")):
        assert (smoke_bench.out_dir / link).is_file(), link
    summary = summary_table(again)
    assert summary.splitlines()[0].split()[:5] == ["model", "ID", "GA", "OOD", "GA"]
    ground_truth = next(line for line in summary.splitlines() if line.startswith("ground_truth"))
    assert ground_truth.split()[2:4] == ["100.0", "100.0"]


def test_cli_bench_rejects_a_missing_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vision_bench.cli import main

    assert main(["bench", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "out")]) == 2
    assert "missing.yaml does not exist" in capsys.readouterr().err


def test_each_alpha_sweep_gets_its_own_plot(tmp_path: Path) -> None:
    """Two sweeps in one bench (two rules) are drawn apart, as SVIB's Figure 4 has one panel per task."""
    from vision_bench.bench.summary import alpha_series, build_report

    cells = [
        CellResult("cnn", f"alpha/{rule}/{alpha}", setting_of(f"alpha/{rule}/{alpha}"), 0, False,
                   {"test_id": {"grid_accuracy": 90.0}, "test_ood": {"grid_accuracy": 10.0 * alpha}}, alpha=alpha)
        for rule in ("translate_up", "translate_down") for alpha in (0.2, 0.6)
    ]
    assert {sweep: len(members) for sweep, members in alpha_series(cells).items()} == {
        "alpha/translate_up": 2, "alpha/translate_down": 2}
    config = BenchConfig.from_dict({"experiments": [c.experiment for c in cells], "models": ["vit:test_vit"],
                                    "baselines": []})
    figures = [b.path.name for b in build_report(config, cells, tmp_path).blocks if isinstance(b, Figure)]
    assert {"grid_accuracy_vs_alpha_alpha_translate_up.png", "grid_accuracy_vs_alpha_alpha_translate_down.png"} <= set(
        figures)


def test_family_metrics_get_tables_only_where_computed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Factor accuracy (SVIB scenes only) gets a results table in a bench that computed it, and no
    'unavailable' heading in one that could not."""
    from vision_bench.bench import summary
    from vision_bench.bench.summary import build_report
    from vision_bench.bench.tables import title

    monkeypatch.setattr(summary, "family_metrics", lambda: {"factor_accuracy": ["SVIB scenes"]})

    def cells(factor: float) -> list[CellResult]:
        splits = {split: {"grid_accuracy": 50.0, "factor_accuracy": factor} for split in ("test_id", "test_ood")}
        return [CellResult("cnn", "alpha/translate_up/0.2", "a", 0, False, splits, alpha=0.2)]

    config = BenchConfig.from_dict({"experiments": ["alpha/translate_up/0.2"], "models": ["vit:test_vit"],
                                    "baselines": []})
    for factor, shown in ((75.0, True), (float("nan"), False)):
        blocks = build_report(config, cells(factor), tmp_path).blocks
        texts = [getattr(b, "title", "") or getattr(b, "text", "") for b in blocks]
        assert (title("factor_accuracy") in texts) is shown


def test_a_study_without_an_ood_split_reports_in_distribution_only(tmp_path: Path) -> None:
    """Sample-Efficiency evaluates test_id alone: the tables, the summary and the report show ID columns only,
    never the ID numbers again under OOD."""
    from vision_bench.bench.aggregate import id_ood
    from vision_bench.bench.summary import build_report, terminal_summary
    from vision_bench.bench.tables import Table, summary_rows

    assert id_ood(("test_id",)) == ("test_id", None)
    assert id_ood(("test_ood", "test_id")) == ("test_id", "test_ood")
    assert id_ood(("test_ood",)) == ("test_ood", None)
    cells = [CellResult("cnn", "sample-efficiency/S2/1", setting_of("sample-efficiency/S2/1"), seed, False,
                        {"test_id": {"grid_accuracy": ga, "mse": 0.01}}) for seed, ga in ((0, 100.0), (1, 80.0))]
    table = table1(cells, "grid_accuracy", ["sample-efficiency/S2"], ood_split=None)
    assert table.columns == ["setting", "ID"] and table.groups == [("cnn", 1)]
    assert table.rows == [["sample-efficiency/S2", "90.0 ± 10.0"]]
    header, rows = summary_rows(cells, ["grid_accuracy", "mse"], ood_split=None)
    assert header == ["model", "ID GA", "ID MSE"] and rows == [["cnn", "90.0", "0.01"]]
    assert "OOD" not in terminal_summary(cells, ["grid_accuracy"], id_split="test_id", ood_split=None)
    config = BenchConfig.from_dict({"experiments": ["sample-efficiency/S2/1"], "models": ["vit:test_vit"],
                                    "baselines": [], "evaluate": {"splits": ["test_id"]}})
    blocks = build_report(config, cells, tmp_path).blocks
    assert all("OOD" not in block.columns for block in blocks if isinstance(block, Table))
    assert any("OOD = none" in getattr(block, "text", "") for block in blocks)
