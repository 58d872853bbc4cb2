"""The report's numbers and tables: mean +- SEM over the seeds of one experiment, never across experiments.

Values are hand-computed. Two experiments of one setting, seeds 0-2 (`sample-efficiency`-like, with OOD):

    ID   A: 100, 100, 97   (mean 99, SEM 1.0)       B: 0, 6, 3  (mean 3, SEM sqrt(3) = 1.7)
    OOD  A:  40,  50, 60   (mean 50, SEM 5.8)       B: 0, 0, 0  (mean 0, SEM 0)
    gap  A:  60,  50, 37   (mean 49)                B: 0, 6, 3  (mean 3)

Each seed's mean over A and B: ID 50, 53, 50 (mean 51, SEM 1.0); OOD 20, 25, 30 (mean 25, SEM sqrt(25/3) =
2.9); gap 30, 28, 20 (mean 26, SEM sqrt(28/3) = 3.1). Pooling the six ID cells would give 51 +- 21.5.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from vision_bench.bench.aggregate import CellResult, summarize_cells, summarize_experiments
from vision_bench.bench.config import BenchConfig, setting_of
from vision_bench.bench.report import Table
from vision_bench.bench.tables import experiment_label, experiment_table, svib_table1, table1
from vision_bench.metrics import mean_sem

A, B = "envgen/G1/1", "envgen/G1/2"
SETTING = "envgen/G1"
ID_GA = {A: (100.0, 100.0, 97.0), B: (0.0, 6.0, 3.0)}
OOD_GA = {A: (40.0, 50.0, 60.0), B: (0.0, 0.0, 0.0)}


def _cell(experiment: str, seed: int | None, id_ga: float, ood_ga: float | None = None, predictor: str = "cnn",
          ) -> CellResult:
    splits = {"test_id": {"grid_accuracy": id_ga}}
    if ood_ga is not None:
        splits["test_ood"] = {"grid_accuracy": ood_ga}
    return CellResult(predictor, experiment, setting_of(experiment), seed, seed is None, splits)


def _cells(ood: bool = True) -> list[CellResult]:
    return [_cell(e, seed, ID_GA[e][seed], OOD_GA[e][seed] if ood else None) for e in (A, B) for seed in range(3)]


BASELINES = [_cell(A, None, 0.0, 0.0, "copy_input"), _cell(B, None, 10.0, 20.0, "copy_input")]


def test_a_setting_is_the_mean_of_its_experiments_with_the_sem_over_seed_means() -> None:
    summary = summarize_cells(_cells(), "grid_accuracy")[("cnn", SETTING)]
    assert (summary.id.mean, summary.id.sem) == pytest.approx((51.0, 1.0))
    assert (summary.ood.mean, summary.ood.sem) == pytest.approx((25.0, math.sqrt(25 / 3)))
    assert (summary.gap.mean, summary.gap.sem) == pytest.approx((26.0, math.sqrt(28 / 3)))  # gaps formed per cell
    pooled = mean_sem([v for values in ID_GA.values() for v in values])
    assert pooled.sem == pytest.approx(21.48, abs=0.01) and summary.id.sem != pytest.approx(pooled.sem)


def test_each_experiment_is_mean_and_sem_over_its_own_seeds() -> None:
    summaries = summarize_experiments(_cells(), "grid_accuracy")
    a, b = summaries[("cnn", A)], summaries[("cnn", B)]
    assert (a.id.mean, a.id.sem, a.id.n) == pytest.approx((99.0, 1.0, 3))
    assert (b.id.mean, b.id.sem) == pytest.approx((3.0, math.sqrt(3.0)))
    assert (a.gap.mean, b.gap.mean) == pytest.approx((49.0, 3.0))


def test_a_setting_of_one_experiment_gives_that_experiments_numbers_exactly() -> None:
    cells = [c for c in _cells() if c.experiment == A]
    summary = summarize_cells(cells, "grid_accuracy")[("cnn", SETTING)]
    assert (summary.id.mean, summary.id.sem, summary.id.n) == pytest.approx((99.0, 1.0, 3))  # A's own seeds
    assert (summary.ood.mean, summary.ood.sem) == pytest.approx((50.0, math.sqrt(100 / 3)))


def test_a_predictor_missing_from_an_experiment_gets_no_number_for_the_setting() -> None:
    """A gate that removes every run of B must not leave the setting's number as A's alone (99 +- 1)."""
    only_a = [c for c in _cells() if c.experiment == A]
    summary = summarize_cells(only_a, "grid_accuracy", experiments={SETTING: [A, B]})[("cnn", SETTING)]
    assert math.isnan(summary.id.mean) and math.isnan(summary.id.sem)
    other = [_cell(B, seed, 50.0, 50.0, "vit") for seed in range(3)]  # another predictor ran B: B is covered
    assert math.isnan(summarize_cells([*only_a, *other], "grid_accuracy")[("cnn", SETTING)].id.mean)
    no_value = [c if c.experiment == A else _cell(B, c.seed, math.nan, 0.0) for c in _cells()]
    assert math.isnan(summarize_cells(no_value, "grid_accuracy")[("cnn", SETTING)].id.mean)
    table = table1(only_a, "grid_accuracy", [SETTING], experiments={SETTING: [A, B]})
    assert table.rows == [[SETTING, "n/a", "n/a", "n/a"]]


def test_unequal_seed_sets_give_the_mean_without_sem() -> None:
    cells = [c for c in _cells() if not (c.experiment == B and c.seed == 2)]  # B keeps seeds 0 and 1: mean 3
    summary = summarize_cells(cells, "grid_accuracy")[("cnn", SETTING)]
    assert summary.id.mean == pytest.approx((99.0 + 3.0) / 2) and math.isnan(summary.id.sem)
    missing = [c if c.experiment != B or c.seed != 1 else _cell(B, 1, math.nan, 0.0) for c in _cells()]
    assert math.isnan(summarize_cells(missing, "grid_accuracy")[("cnn", SETTING)].id.sem)  # a NaN seed: unequal


def test_baselines_have_one_cell_per_experiment_and_no_sem() -> None:
    setting = summarize_cells(BASELINES, "grid_accuracy")[("copy_input", SETTING)]
    assert setting.id.mean == pytest.approx(5.0) and math.isnan(setting.id.sem)
    experiment = summarize_experiments(BASELINES, "grid_accuracy")[("copy_input", B)]
    assert (experiment.id.mean, experiment.ood.mean, experiment.gap.mean) == pytest.approx((10.0, 20.0, -10.0))
    assert math.isnan(experiment.id.sem) and math.isnan(experiment.gap.sem)


def test_table1_has_settings_as_rows_and_a_group_per_predictor() -> None:
    table = table1([*_cells(), *BASELINES], "grid_accuracy", [SETTING])
    assert table.columns == ["setting", "ID", "OOD", "Δ", "ID", "OOD", "Δ"]
    assert table.groups == [("cnn", 3), ("copy_input (baseline)", 3)]
    assert table.rows == [[SETTING, "51.0 ± 1.0", "25.0 ± 2.9", "26.0 ± 3.1", "5.0", "10.0", "-5.0"]]
    assert table.note.startswith("mean over the setting's experiments; ± SEM over seeds of each seed's mean over "
                                 "them, never across experiments; no ± with one seed or unequal seeds; n/a where "
                                 "some experiment of the setting has no (passing) run; Δ = ID − OOD")


def test_the_experiment_table_has_a_row_per_experiment_named_by_what_it_tests() -> None:
    table = experiment_table([*_cells(), *BASELINES], "grid_accuracy")
    assert table.title == "GA: grid accuracy (%), per experiment"
    assert table.columns == ["experiment", "ID", "OOD", "Δ", "ID", "OOD", "Δ"]
    assert table.groups == [("cnn", 3), ("copy_input (baseline)", 3)]
    assert table.rows == [
        ["envgen/G1/1 (translate_up)", "99.0 ± 1.0", "50.0 ± 5.8", "49.0 ± 6.7", "0.0", "0.0", "0.0"],
        ["envgen/G1/2 (rot90)", "3.0 ± 1.7", "0.0 ± 0.0", "3.0 ± 1.7", "10.0", "20.0", "-10.0"],
    ]
    assert experiment_label("sample-efficiency/S3/2") == "sample-efficiency/S3/2 (rot90)"
    assert experiment_label("compgen/C1/1") == "compgen/C1/1"  # several sequences: the id alone
    assert experiment_label("my_task") == "my_task"  # a task file


def test_a_study_without_an_ood_split_shows_id_columns_only() -> None:
    cells = _cells(ood=False)
    table = table1(cells, "grid_accuracy", [SETTING], ood_split=None)
    assert table.columns == ["setting", "ID"] and table.rows == [[SETTING, "51.0 ± 1.0"]]
    assert "Δ" not in table.note
    per_experiment = experiment_table(cells, "grid_accuracy", ood_split=None)
    assert per_experiment.columns == ["experiment", "ID"]
    assert [row[1] for row in per_experiment.rows] == ["99.0 ± 1.0", "3.0 ± 1.7"]


def test_the_experiment_table_says_how_many_runs_passed_the_gate() -> None:
    cells = _cells()
    failed = [c for c in cells if c.experiment == B and c.seed == 0]
    passed = [c for c in cells if c not in failed]
    table = experiment_table(passed, "grid_accuracy", failed=failed)
    assert table.rows[0][1] == "99.0 ± 1.0"  # A: every run passed
    assert table.rows[1][1:4] == ["4.5 ± 1.5 (2 of 3 passed)", "0.0 ± 0.0", "4.5 ± 1.5"]  # B: seeds 1 and 2
    assert "the numbers are over the k that passed" in table.note
    lost = experiment_table(passed, "grid_accuracy", failed=[*failed, _cell(B, 0, 1.0, 0.0, "vit")])
    assert lost.groups[1] == ("vit", 3) and lost.rows[1][4:] == ["— (0 of 1 passed)", "—", "—"]


def _report_tables(tmp_path: Path, cells: list[CellResult], **config: object) -> list[Table]:
    from vision_bench.bench.summary import build_report

    bench = BenchConfig.from_dict({"experiments": [A, B], "models": ["unet:test_resnet"], "baselines": [], **config})
    return [b for b in build_report(bench, cells, tmp_path).blocks if isinstance(b, Table)]


def test_the_report_adds_the_experiment_table_after_table1_and_marks_gated_runs(tmp_path: Path) -> None:
    gate = {"metric": "grid_accuracy", "split": "test_id", "at_least": 2}  # B seed 0 (ID 0.0) fails
    tables = _report_tables(tmp_path, _cells(), gate=gate)
    titles = [t.title for t in tables]
    ga = titles.index("GA: grid accuracy (%)")
    assert titles[ga + 1] == "GA: grid accuracy (%), per experiment"
    assert tables[ga].rows[0][1] == "51.8"  # (99 + 4.5) / 2, B over seeds 1 and 2: unequal seeds, no ±
    assert tables[ga + 1].rows[1][1] == "4.5 ± 1.5 (2 of 3 passed)"


def test_no_table_of_the_report_shows_an_sem_across_experiments(tmp_path: Path) -> None:
    """Two experiments of one seed: every number is one run or a mean over tasks, so no ± anywhere."""
    cells = [_cell(A, 0, 100.0, 40.0), _cell(B, 0, 0.0, 0.0)]
    tables = _report_tables(tmp_path, cells)
    assert tables and not any("±" in text for t in tables for row in t.rows for text in row)


def test_the_plot_draws_a_bar_per_experiment_where_a_setting_has_several(monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path: Path) -> None:
    from vision_bench.bench import plots
    from vision_bench.bench.summary import metric_plot, plot_groups

    drawn: dict[str, object] = {}
    monkeypatch.setattr(plots, "plot_metric_by_setting", lambda values, **options: drawn.update(values=values,
                                                                                                  **options))
    alone = _cell("envgen/G2/1", 0, 80.0, 10.0)
    metric_plot([*_cells(), alone], "grid_accuracy", ["test_id", "test_ood"], tmp_path)
    groups = ["envgen/G1/1\n(translate_up)", "envgen/G1/2\n(rot90)", "envgen/G2"]
    assert drawn["settings"] == groups and list(plot_groups([*_cells(), alone]).values()) == groups
    values = drawn["values"]
    assert isinstance(values, dict)
    bars = values["test_id"]["cnn"]
    assert list(bars) == groups
    assert (bars[groups[0]].mean, bars[groups[0]].sem) == pytest.approx((99.0, 1.0))  # A's seeds alone
    assert (bars[groups[1]].mean, bars[groups[1]].sem) == pytest.approx((3.0, math.sqrt(3.0)))
    assert bars[groups[2]].mean == pytest.approx(80.0) and math.isnan(bars[groups[2]].sem)
    assert values["test_ood"]["cnn"][groups[0]].mean == pytest.approx(50.0)


def _svib_cell(task: str, alpha: float, seed: int | None, lpips: float, predictor: str = "cnn") -> CellResult:
    experiment = f"svib/{task}/{alpha}"
    return CellResult(predictor, experiment, setting_of(experiment), seed, seed is None,
                      {"test_ood": {"lpips": lpips}}, alpha=alpha)


def test_svib_table1_averages_the_tasks_of_each_alpha_with_the_sem_over_seed_means() -> None:
    """SVIB's Table 1: one column per alpha rating, highest first, each the mean over its tasks. At alpha 0.6,
    S-A seeds 0.02, 0.04 and M-A seeds 0.06, 0.08: seed means 0.04, 0.06 -> 0.05 +- 0.01. At alpha 0.2 M-A has no
    run of the model (its only run failed a gate), so the rating is n/a rather than S-A's value alone."""
    cells = [_svib_cell("S-A", 0.6, 0, 0.02), _svib_cell("S-A", 0.6, 1, 0.04),
             _svib_cell("M-A", 0.6, 0, 0.06), _svib_cell("M-A", 0.6, 1, 0.08),
             _svib_cell("S-A", 0.2, 0, 0.10), _svib_cell("S-A", 0.2, 1, 0.12),
             _svib_cell("S-A", 0.6, None, 0.15, "copy_input"), _svib_cell("M-A", 0.6, None, 0.25, "copy_input")]
    failed = _svib_cell("M-A", 0.2, 0, 0.3)
    table = svib_table1(cells, "lpips", "test_ood", every_run=[*cells, failed])
    assert table is not None
    assert table.columns == ["model", "Easy (α = 0.6)", "Hard (α = 0.2)"]
    assert table.rows[0] == ["cnn", "0.05 ± 0.01", "n/a"]
    assert table.rows[1] == ["copy_input (baseline)", "0.2", "—"]  # no baseline cell at alpha 0.2
    every_failed = svib_table1(cells[:4], "lpips", "test_ood", every_run=[*cells[:4], failed])
    assert every_failed is not None and every_failed.rows[0] == ["cnn", "0.05 ± 0.01", "n/a"]  # its one run failed
    assert svib_table1([_cell(A, 0, 50.0, 10.0)], "grid_accuracy", "test_ood") is None  # no alpha rating: no table
