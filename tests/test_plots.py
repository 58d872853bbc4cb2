"""The drawing rules of report figures, checked on the matplotlib objects: legends outside the data and inside
the figure, accuracies in %, MSE-like metrics on a log axis, integer step ticks, undefined cells and zero bars
marked, a look of its own per training run; the sample sheets' fixed error scale, colour bar, column names and
visible word spaces; the terminal summary's reasons for n/a."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from vision_bench.bench import plots
from vision_bench.bench.aggregate import CellResult
from vision_bench.bench.config import experiment_name
from vision_bench.bench.figures import Point, value_scale
from vision_bench.bench.plots import PERCENT_LIMITS
from vision_bench.bench.summary import terminal_summary, training_curves, unavailable_note
from vision_bench.errors import UserError
from vision_bench.evaluation.sheets import (
    COLORBAR_HEIGHT,
    COLUMNS,
    ERROR_RANGE,
    FONT_SIZE,
    GAP,
    LABEL_WIDTH,
    LINE_HEIGHT,
    MIN_PANEL,
    SheetRow,
    colorbar,
    draw_sheet,
    hot_colormap,
)


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[Figure]:
    """The figures the plot functions draw, kept instead of saved (and drawn, so extents are final)."""
    figures: list[Figure] = []

    def keep(figure: Figure, path: Path) -> Path:
        figure.canvas.draw()
        figures.append(figure)
        return path

    monkeypatch.setattr(plots, "save_figure", keep)
    return figures


def _data_axes(figure: Figure) -> list:
    return [axis for axis in figure.axes if axis.get_visible()]


def _legend_is_outside_every_axes(figure: Figure) -> bool:
    assert figure.legends, "the figure has no legend"
    legend = figure.legends[0].get_window_extent()
    return not any(legend.overlaps(axis.get_window_extent()) for axis in _data_axes(figure))


def test_each_metric_is_drawn_on_its_registry_scale() -> None:
    assert value_scale("grid_accuracy") == value_scale("object_pixel_accuracy") == "percent"
    assert value_scale("mse") == value_scale("fg_mse") == value_scale("lpips") == value_scale("mse_sum") == "log"
    assert value_scale("ssim") == value_scale("psnr") == "linear"
    assert value_scale("not a metric") == "linear"


def test_accuracy_bars_are_in_percent_with_the_legend_below(drawn: list[Figure]) -> None:
    models = (("unet", 90.0), ("vit", 60.0), ("copy_input (baseline)", 0.0), ("ground_truth (baseline)", 100.0))
    values = {split: {model: {"C1": Point(value, 2.0), "C2": Point(value / 2)} for model, value in models}
              for split in ("test_id", "test_ood")}
    plots.plot_metric_by_setting(values, metric="GA", settings=["C1", "C2"], path=Path("ga.png"), scale="percent")
    figure = drawn[0]
    for axis in _data_axes(figure):
        assert isinstance(axis.yaxis.get_major_formatter(), PercentFormatter)
        assert axis.get_ylim() == PERCENT_LIMITS
        assert axis.get_legend() is None  # no legend inside a panel
        assert "%" in axis.yaxis.get_major_formatter()(50.0, 0)
    assert _legend_is_outside_every_axes(figure)
    assert [t.get_text() for t in figure.legends[0].get_texts()] == ["unet", "vit", "copy_input (baseline)",
                                                                    "ground_truth (baseline)"]


def test_a_zero_bar_is_drawn_and_labelled_unlike_a_missing_value(drawn: list[Figure]) -> None:
    """A mean of 0 is an outline on the baseline labelled "0"; a missing entry or a NaN mean a hatched "n/a" slot."""
    values = {"test_id": {"unet": {"C1": Point(0.0), "C2": Point(50.0)}, "vit": {"C1": Point(float("nan"))}}}
    plots.plot_metric_by_setting(values, metric="GA", settings=["C1", "C2"], path=Path("ga.png"), scale="percent")
    axis = drawn[0].axes[0]
    bars = [patch for container in axis.containers for patch in container.patches]
    zero = next(patch for patch in bars if patch.get_height() == 0)
    assert zero.get_linewidth() > 0 and zero.get_edgecolor()[3] > 0  # visible though flat
    zero_x = zero.get_x() + zero.get_width() / 2
    assert [(t.get_text(), t.xy[0]) for t in axis.texts if t.get_text() == "0"] == [("0", zero_x)]
    undefined = [patch for patch in axis.patches if patch.get_hatch() == plots.UNDEFINED_HATCH]
    assert len(undefined) == 2  # vit: NaN at C1, nothing at C2
    assert [t.get_text() for t in axis.texts].count("n/a") == 2
    assert not zero.get_hatch()


def test_a_legend_of_long_names_is_never_cut_off(drawn: list[Figure]) -> None:
    names = ["ResNet (cogitao:resnet)", "Vanilla-TF (cogitao:vanilla-tf)", "Grid-TF (cogitao:grid-tf)",
             "copy_input", "mean_target", "ground_truth"]
    values = {"test_id": {name: {"sample-efficiency/S3": Point(50.0)} for name in names}}
    plots.plot_metric_by_setting(values, metric="GA", settings=["sample-efficiency/S3"], path=Path("ga.png"),
                                 scale="percent")
    figure = drawn[0]
    legend, page = figure.legends[0].get_window_extent(), figure.bbox
    assert page.x0 <= legend.x0 and legend.x1 <= page.x1 and page.y0 <= legend.y0
    assert _legend_is_outside_every_axes(figure)


def test_mse_like_values_use_a_log_axis_unless_a_value_is_zero(drawn: list[Figure]) -> None:
    positive = {"test_id": {"unet": {"C1": Point(0.01)}}, "test_ood": {"unet": {"C1": Point(0.2)}}}
    plots.plot_metric_by_setting(positive, metric="MSE", settings=["C1"], path=Path("mse.png"), scale="log")
    with_zero = {split: {"unet": {"C1": Point(0.02)}, "ground_truth": {"C1": Point(0.0)}}
                 for split in ("test_id", "test_ood")}
    plots.plot_metric_by_setting(with_zero, metric="MSE", settings=["C1"], path=Path("mse0.png"), scale="log")
    all_zero = {"test_id": {"ground_truth": {"C1": Point(0.0)}}, "test_ood": {"ground_truth": {"C1": Point(0.0)}}}
    plots.plot_metric_by_setting(all_zero, metric="MSE", settings=["C1"], path=Path("mse00.png"), scale="log")
    assert {axis.get_yscale() for axis in _data_axes(drawn[0])} == {"log"}
    for axis in _data_axes(drawn[1]):  # a 0 cannot be shown on a log axis: log above 0.02, linear below
        assert axis.get_yscale() == "symlog" and axis.yaxis.get_transform().linthresh == 0.02
        assert axis.get_ylim()[0] == 0.0
    assert {axis.get_yscale() for axis in _data_axes(drawn[2])} == {"linear"}  # nothing to put on a log axis


def test_alpha_curves_follow_the_scale_and_keep_the_legend_off_the_data(drawn: list[Figure]) -> None:
    curves = {model: {split: {0.0: Point(0.3), 0.2: Point(0.1, 0.01), 0.6: Point(0.02)}
                      for split in ("test_id", "test_ood")} for model in ("vit", "unet", "oracle")}
    plots.plot_metric_vs_alpha(curves, metric="LPIPS", path=Path("alpha.png"), scale="log")
    figure = drawn[0]
    assert figure.axes[0].get_yscale() == "log"
    assert _legend_is_outside_every_axes(figure)
    assert len(figure.legends[0].get_texts()) == 6


def _metrics_run(folder: Path, epochs: int) -> Path:
    """A run folder whose metrics.jsonl logs three steps per epoch and a validation per epoch."""
    folder.mkdir()
    records = []
    for epoch in range(1, epochs + 1):
        records += [{"kind": "step", "step": step, "epoch": epoch, "loss": 1.0 / step}
                    for step in range(3 * epoch - 2, 3 * epoch + 1)]
        records.append({"kind": "epoch", "step": 3 * epoch, "epoch": epoch, "val_id/mse": 0.02 / epoch,
                        "val_id/grid_accuracy": 0.25 * epoch})
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return folder


def test_training_curves_have_integer_step_ticks_accuracies_in_percent_and_log_losses(
        drawn: list[Figure], tmp_path: Path) -> None:
    cell = CellResult("unet", "envgen/G1/1", "envgen/G1", 0, False, {}, run_dir=_metrics_run(tmp_path / "run", 2))
    training_curves([cell], tmp_path)
    figure = drawn[0]
    panels = {axis.get_title(): axis for axis in _data_axes(figure)}
    assert set(panels) == {"train loss", "val_id/mse", "val_id/grid_accuracy"}
    accuracy = panels["val_id/grid_accuracy"]
    assert list(accuracy.lines[0].get_ydata()) == [25.0, 50.0]  # logged as a fraction, drawn in %
    assert accuracy.lines[0].get_marker() not in (None, "", "None")  # a point per epoch, each visible
    assert isinstance(accuracy.yaxis.get_major_formatter(), PercentFormatter)
    assert panels["train loss"].get_yscale() == panels["val_id/mse"].get_yscale() == "log"
    for axis in panels.values():
        low, high = axis.get_xlim()
        ticks = [t for t in axis.get_xticks() if low <= t <= high]
        assert len(ticks) >= 2 and all(float(t).is_integer() for t in ticks), (axis.get_title(), ticks)
    assert _legend_is_outside_every_axes(figure)


def test_a_single_logged_step_still_gets_whole_number_ticks() -> None:
    figure = Figure()
    axis = figure.subplots()
    axis.plot([3], [0.5])
    plots.integer_ticks(axis)
    low, high = axis.get_xlim()
    ticks = [t for t in axis.get_xticks() if low <= t <= high]
    assert len(ticks) >= 2 and all(float(t).is_integer() for t in ticks)  # never a tick at step 2.5


def _bench_runs() -> list[str]:
    """18 runs as the bench labels them: 3 models x 2 experiments x 3 seeds."""
    models = ("Grid-TF (cogitao:grid-tf)", "ResNet (cogitao:resnet)", "Vanilla-TF (cogitao:vanilla-tf)")
    return [f"{model} sample-efficiency/S3/{e} s{seed}" for model in models for e in (1, 2) for seed in range(3)]


@pytest.mark.parametrize("runs", [_bench_runs(), [f"run {i}" for i in range(18)]], ids=["bench labels", "other"])
def test_every_training_run_has_its_own_look(drawn: list[Figure], runs: list[str]) -> None:
    """18 runs: no two share colour, dash pattern and marker; on bench labels the colour is the model's."""
    steps = list(range(1, 41))
    curves = {"train loss": {run: (steps, [1.0 / (s + i) for s in steps]) for i, run in enumerate(runs)}}
    plots.plot_training_curves(curves, path=Path("curves.png"), scales={"train loss": "log"})
    styles = plots.run_styles(runs)
    assert len({(style.color, str(style.linestyle), style.marker) for style in styles.values()}) == 18
    lines = drawn[0].axes[0].lines
    assert len(lines) == 18
    for line in lines:  # each run drawn in its style, markers included
        style = styles[line.get_label()]
        assert (line.get_color(), line.get_marker()) == (style.color, style.marker)
    if runs == _bench_runs():
        colors = {line.get_label(): line.get_color() for line in lines}
        for model in ("Grid-TF", "ResNet", "Vanilla-TF"):
            assert len({color for label, color in colors.items() if label.startswith(model)}) == 1
        assert len(set(colors.values())) == 3
    assert _legend_is_outside_every_axes(drawn[0])
    assert drawn[0].legends[0].get_window_extent().width <= drawn[0].bbox.width


@pytest.mark.parametrize("runs", [
    [f"cnn sample-efficiency/S1/{e} s{seed}" for e in range(1, 11) for seed in range(3)],  # 10 experiments
    [f"model{m} envgen/G1/1 s{seed}" for m in range(11) for seed in range(2)],  # 11 models
    [f"cnn envgen/G1/1 s{seed}" for seed in range(7)],  # 7 seeds
], ids=["10 experiments", "11 models", "7 seeds"])
def test_runs_past_the_markers_colours_or_dashes_still_look_different(runs: list[str]) -> None:
    styles = plots.run_styles(runs)
    assert len({(style.color, str(style.linestyle), style.marker) for style in styles.values()}) == len(runs)


def test_a_run_label_reads_back_as_its_model_experiment_and_seed() -> None:
    from vision_bench.bench.aggregate import CellResult
    from vision_bench.bench.summary import run_label

    for model, experiment in (("ResNet (cogitao:resnet)", "sample-efficiency/S3/2"), ("cnn", "tasks/my tasks.yaml")):
        cell = CellResult(model, experiment, "s", 2, False, {})
        assert plots._run_parts(run_label(cell)) == (model, experiment_name(experiment).replace(" ", "_"), 2)


def test_single_validation_points_are_spread_out_rather_than_stacked(drawn: list[Figure]) -> None:
    """A one-epoch study logs one validation value per run: drawn as a strip, the models on x, no marker on another."""
    runs = _bench_runs()
    curves = {"train loss": {run: ([1, 2, 3], [0.3, 0.2, 0.1]) for run in runs},
              "val_id/grid_accuracy": {run: ([3], [10.0 * (i % 5)]) for i, run in enumerate(runs)}}
    plots.plot_training_curves(curves, path=Path("curves.png"), scales={"val_id/grid_accuracy": "percent"})
    panels = {axis.get_title(): axis for axis in _data_axes(drawn[0])}
    strip = panels["val_id/grid_accuracy"]
    xs = [float(line.get_xdata()[0]) for line in strip.lines]
    assert len(set(xs)) == 18  # each run its own place
    assert [t.get_text().replace("\n", " ") for t in strip.get_xticklabels()] == [
        "Grid-TF (cogitao:grid-tf)", "ResNet (cogitao:resnet)", "Vanilla-TF (cogitao:vanilla-tf)"]
    assert "step 3" in strip.get_xlabel()
    assert isinstance(strip.yaxis.get_major_formatter(), PercentFormatter)
    assert panels["train loss"].get_xlabel() == "step"  # lines with three points stay lines


def test_rank_agreement_marks_undefined_cells_visibly(drawn: list[Figure]) -> None:
    plots.plot_correlations({"test_ood vs GA": {"MSE": 0.5, "SSIM": float("nan"), "LPIPS": -0.25}},
                            path=Path("rank.png"), title="agreement")
    axis = drawn[0].axes[0]
    bars = {round(patch.get_y() + patch.get_height() / 2): patch for patch in axis.patches}
    undefined = bars[1]
    assert undefined.get_hatch() == plots.UNDEFINED_HATCH
    assert (undefined.get_x(), undefined.get_width()) == (-1.0, 2.0)  # the whole row, not a zero-length bar
    assert [t.get_text() for t in axis.texts] == ["n/a"]
    assert (bars[0].get_width(), bars[2].get_width()) == (0.5, -0.25) and not bars[0].get_hatch()


def test_the_perturbation_heatmap_has_a_colorbar_and_labels_undefined_cells(drawn: list[Figure]) -> None:
    plots.plot_sensitivity_heatmap(np.array([[0.2, math.nan]]), rows=["shift"], columns=["MSE", "PSNR"],
                                   path=Path("heat.png"), title="penalty")
    figure = drawn[0]
    assert len(figure.axes) == 2  # the heatmap and its colour bar
    assert [t.get_text() for t in figure.axes[0].texts] == ["0.20", "n/a"]


# ----------------------------------------------------------------------------- sample sheets


def _row(error: float) -> SheetRow:
    target = np.zeros((8, 8, 3), np.uint8)
    prediction = target.copy()
    prediction[:4] = round(error * 255)  # the top half off by `error`, the bottom half exact
    return SheetRow(target, target, prediction, "sample")


ERROR_X = LABEL_WIDTH + (len(COLUMNS) - 1) * (MIN_PANEL + GAP)
"""Where the error column starts on a sheet of 8 x 8 images (each enlarged to MIN_PANEL pixels)."""


def _error_panel_pixel(sheet: np.ndarray, value_row: int) -> np.ndarray:
    """The error panel's colour at image row `value_row` (sheets without a title: the panels start under the
    column names)."""
    top = GAP + LINE_HEIGHT
    return sheet[top + value_row * (MIN_PANEL // 8) + 2, ERROR_X + 2]


def test_error_maps_share_one_fixed_scale_across_sheets() -> None:
    small, large = np.asarray(draw_sheet([_row(0.2)])), np.asarray(draw_sheet([_row(1.0)]))
    assert ERROR_RANGE == (0.0, 1.0)
    expected = hot_colormap(np.float32(round(0.2 * 255) / 255))
    assert (_error_panel_pixel(small, 0) == expected).all()  # not stretched to the sheet's own maximum
    assert (_error_panel_pixel(large, 0) == hot_colormap(np.float32(1.0))).all()
    assert (_error_panel_pixel(small, 7) == _error_panel_pixel(large, 7)).all()  # exact: the same black


def test_every_sheet_carries_the_error_colour_bar() -> None:
    sheet = np.asarray(draw_sheet([_row(0.5), _row(0.1)], title="t"))
    strip = colorbar(MIN_PANEL)
    assert (strip[0, 0] == hot_colormap(np.float32(0.0))).all() and (strip[0, -1] == 255).all()
    rows = np.nonzero((sheet[:, ERROR_X : ERROR_X + MIN_PANEL] == strip[0]).all(axis=(1, 2)))[0]
    assert len(rows) == COLORBAR_HEIGHT and rows[-1] - rows[0] == COLORBAR_HEIGHT - 1  # one bar, under the column
    assert rows[0] > 2 * MIN_PANEL  # below both samples


def test_a_models_extra_images_are_columns_after_the_error_map() -> None:
    """`SheetRow.extras` (a model's `sheet_images`): named columns after the error map, each panel the row's image;
    every row must carry the same columns."""
    extra = np.full((8, 8, 3), 200, np.uint8)
    row = _row(0.5)
    with_extras = SheetRow(row.input, row.target, row.prediction, "sample", (("slot 1", extra), ("slot 2", extra // 2)))
    plain, sheet = np.asarray(draw_sheet([row])), np.asarray(draw_sheet([with_extras]))
    assert sheet.shape[1] == plain.shape[1] + 2 * (MIN_PANEL + GAP) and sheet.shape[0] == plain.shape[0]
    top = GAP + LINE_HEIGHT
    for column, value in ((len(COLUMNS), 200), (len(COLUMNS) + 1, 100)):
        x = LABEL_WIDTH + column * (MIN_PANEL + GAP)
        assert (sheet[top + 2 : top + MIN_PANEL - 2, x + 2 : x + MIN_PANEL - 2] == value).all()
    end = ERROR_X + MIN_PANEL + 1  # the error panel's frame
    assert (sheet[:, :end] == plain[:, :end]).all()  # the four columns unchanged
    with pytest.raises(UserError, match="sheet row 1: extra columns"):
        draw_sheet([with_extras, row])


def _ink_width(sheet: np.ndarray, top: int) -> int:
    """The width of the text in the label column's line starting at pixel row `top`."""
    band = sheet[top : top + LINE_HEIGHT, : LABEL_WIDTH - 2]
    columns = np.nonzero((band != 255).any(axis=(0, 2)))[0]
    return int(columns[-1] - columns[0] + 1)


def test_sheet_text_shows_the_space_between_words() -> None:
    """"worst test_ood" must not read "worsttest_ood": a space adds at least a quarter of the font size, in the
    title and in a row's label."""
    def title_width(text: str) -> int:
        return _ink_width(np.asarray(draw_sheet([_row(0.0)], title=text)), GAP)

    def label_width(text: str) -> int:
        row = _row(0.0)
        sheet = np.asarray(draw_sheet([SheetRow(row.input, row.target, row.prediction, text)]))
        return _ink_width(sheet, GAP + LINE_HEIGHT)

    for width in (title_width, label_width):
        assert width("a b") - width("ab") >= 0.25 * FONT_SIZE
        assert width("a  b") > width("a b")  # two spaces stay two


def test_every_sheet_names_its_columns() -> None:
    """Above each panel column its name (input, target, prediction, error map): ink in the line over the panels."""
    sheet = np.asarray(draw_sheet([_row(0.5)]))
    names = sheet[GAP : GAP + LINE_HEIGHT - 1]
    for column in range(len(COLUMNS)):
        x = LABEL_WIDTH + column * (MIN_PANEL + GAP)
        assert (names[:, x : x + MIN_PANEL] != 255).any(), COLUMNS[column]


# ----------------------------------------------------------------------------- terminal summary


def _cell(predictor: str, lpips: float, status: dict[str, str], baseline: bool = False) -> CellResult:
    values = {"grid_accuracy": 50.0, "mse": 0.01, "ssim": 0.9, "lpips": lpips}
    return CellResult(predictor, "envgen/G1/1", "envgen/G1", None if baseline else 0, baseline,
                      {"test_id": dict(values), "test_ood": dict(values)}, status=status)


def test_the_terminal_summary_says_why_a_metric_is_unavailable_in_one_line() -> None:
    reason = {"lpips": "unavailable: LPIPS-alex needs its weights; run `vision-bench weights get lpips`"}
    cells = [_cell("unet", math.nan, reason), _cell("copy_input", math.nan, reason, baseline=True)]
    text = terminal_summary(cells, ["grid_accuracy", "mse", "ssim", "lpips"], id_split="test_id", ood_split="test_ood")
    lines = text.splitlines()
    assert lines[-1] == "LPIPS unavailable: LPIPS-alex needs its weights; run `vision-bench weights get lpips`"
    assert sum("LPIPS" in line and "unavailable" in line for line in lines) == 1
    assert "n/a" in lines[2]  # the table row still shows n/a where the number would be


def test_a_metric_missing_for_some_predictors_names_them() -> None:
    cells = [_cell("unet", 0.1, {}), _cell("svib", math.nan, {"lpips": "unavailable: images are not RGB"})]
    assert unavailable_note(cells, "lpips") == "LPIPS n/a for svib: images are not RGB"
    assert unavailable_note(cells, "mse") is None
    text = terminal_summary(cells, ["mse", "lpips"], id_split="test_id", ood_split="test_ood")
    assert text.splitlines()[-1] == "LPIPS n/a for svib: images are not RGB"


@pytest.mark.parametrize("values", [[0.019, 0.032, 0.067], [0.0, 0.019, 0.032, 0.067]])
def test_a_log_axis_within_two_decades_labels_1_2_5_steps(values: list[float]) -> None:
    figure = Figure()
    axis = figure.subplots()
    axis.plot(range(len(values)), values)
    plots.apply_scale(axis, "log", values)
    low, high = axis.get_ylim()
    labelled = [tick for tick in axis.get_yticks() if low <= tick <= high and tick > 0]
    assert {0.02, 0.05} <= {round(tick, 6) for tick in labelled}
    assert axis.yaxis.get_major_formatter()(0.05, 0) == "0.05"
