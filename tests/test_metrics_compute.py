"""The entry points: metric selection, the registry, aggregation, ID/OOD gaps, decoding predictions."""

import math
import sys
import types

import numpy as np
import pytest
import torch

from vision_bench.errors import UnknownNameError
from vision_bench.metrics import (
    METRICS,
    MetricInputError,
    aggregate_gaps,
    compute_metrics,
    decode_predictions,
    generalization_gap,
    mean_sem,
    summarize,
)

IMAGE_METRICS = {"mse", "mse_sum", "psnr", "ssim", "lpips", "fg_mse", "changed_mse"}
GRID_METRICS = {"grid_accuracy", "pixel_accuracy", "object_pixel_accuracy", "object_accuracy",
                "color_accuracy", "shape_accuracy", "paper_ppa", "paper_obj_ppa"}
ERROR_METRICS = {f"error_{name}" for name in ("format", "no_transformation", "primitive", "level_1",
                                              "invalid_position", "invalid_shape", "other")}
FACTOR_METRICS = {"factor_accuracy", "factor_colour_accuracy", "factor_shape_accuracy", "factor_size_accuracy",
                  "factor_position_accuracy"}


def test_registry_holds_every_metric_with_a_direction() -> None:
    stubbornness = {"stubbornness", "stubbornness_strict"}
    assert set(METRICS) == IMAGE_METRICS | GRID_METRICS | ERROR_METRICS | FACTOR_METRICS | stubbornness
    for name, spec in METRICS.items():
        assert spec.name == name and spec.direction in ("higher", "lower") and spec.description
    assert METRICS["ssim"].direction == "higher" and METRICS["mse"].direction == "lower"
    with pytest.raises(UnknownNameError, match="did you mean 'ssim'"):
        compute_metrics(torch.zeros(1, 3, 16, 16), torch.zeros(1, 3, 16, 16), names=["sim"])


def test_default_selection_follows_the_inputs(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))  # LPIPS unavailable: NaN, not an error
    pictures = torch.rand(2, 3, 16, 16)
    grids = torch.zeros(2, 4, 4, dtype=torch.long)
    only_pairs = compute_metrics(pictures, pictures)
    assert set(only_pairs) == {"mse", "mse_sum", "psnr", "ssim", "lpips"}
    with_input = compute_metrics(pictures, pictures, pictures, background_rgb=(0.0, 0.0, 0.0))
    assert set(with_input) == IMAGE_METRICS
    assert set(compute_metrics(pred_grids=grids, target_grids=grids)) == GRID_METRICS | FACTOR_METRICS
    left_out = compute_metrics(pred_grids=grids, target_grids=grids, exclude=FACTOR_METRICS | {"paper_ppa"})
    assert set(left_out) == GRID_METRICS - {"paper_ppa"}
    everything = compute_metrics(pictures, pictures, pictures, background_rgb=(0, 0, 0), pred_grids=grids,
                                 target_grids=grids, input_grids=grids, id_sequences=[["rot90"]],
                                 sequences=[["rot90"], ["rot90"]])
    assert set(everything) == set(METRICS)


def test_identical_prediction_scores_perfectly() -> None:
    target_grid = torch.tensor([[[0, 0, 0], [0, 2, 2], [0, 0, 0]]])
    pictures = torch.rand(1, 3, 24, 24)
    values = compute_metrics(pictures, pictures.clone(), pred_grids=target_grid, target_grids=target_grid.clone(),
                             names=["mse", "psnr", "ssim", *sorted(GRID_METRICS)])
    summary = summarize(values)
    assert summary["mse"] == 0 and summary["psnr"] == 100 and summary["ssim"] == pytest.approx(1)
    assert all(summary[name] == 100 for name in GRID_METRICS)


def test_fg_mse_needs_a_background() -> None:
    pictures = torch.rand(1, 3, 16, 16)
    with pytest.raises(MetricInputError, match="needs input_images with background_rgb, or foreground_mask"):
        compute_metrics(pictures, pictures, pictures, names=["fg_mse"])
    with pytest.raises(MetricInputError, match="expected shape \\(3,\\) or \\(1, 3\\)"):
        compute_metrics(pictures, pictures, pictures, background_rgb=(1.0, 1.0), names=["fg_mse"])


def test_summarize_concatenates_batches_and_reports_percent() -> None:
    summary = summarize({
        "grid_accuracy": [torch.tensor([1.0, 0.0]), torch.tensor([1.0, 1.0])],
        "mse": [torch.tensor([0.1]), torch.tensor([float("nan"), 0.3])],
        "psnr": torch.tensor([math.inf, 20.0]),
    })
    assert summary == pytest.approx({"grid_accuracy": 75.0, "mse": 0.2, "psnr": 60.0})


def test_gaps_by_hand() -> None:
    records = [
        {"experiment": "C1/1", "seed": 0,
         "id": {"grid_accuracy": 90.0, "mse": 0.01}, "ood": {"grid_accuracy": 60.0, "mse": 0.04}},
        {"experiment": "C1/1", "seed": 1,
         "id": {"grid_accuracy": 80.0, "mse": 0.02}, "ood": {"grid_accuracy": 70.0, "mse": 0.02}},
    ]
    gaps = aggregate_gaps(records)
    assert set(gaps) == {"grid_accuracy", "mse"}
    # accuracy gaps 30 and 10 points: mean 20, sample std 14.142, SEM 10
    assert ((gaps["grid_accuracy"].mean, gaps["grid_accuracy"].sem, gaps["grid_accuracy"].n)
            == pytest.approx((20.0, 10.0, 2)))
    # log-MSE gaps log 4 = 1.3863 and 0: mean 0.6931, SEM |1.3863 - 0| / 2 = 0.6931
    assert gaps["mse"].mean == pytest.approx(math.log(4) / 2) and gaps["mse"].sem == pytest.approx(math.log(4) / 2)


def test_gap_edge_cases() -> None:
    assert generalization_gap("psnr", 30.0, 25.0) == 5.0
    assert math.isnan(generalization_gap("mse", 0.0, 0.1))  # a perfect ID error has no log ratio
    with pytest.raises(MetricInputError, match="no ID/OOD gap"):
        generalization_gap("stubbornness", 10.0, 20.0)
    single = mean_sem([4.0, math.nan])
    assert single.mean == 4.0 and math.isnan(single.sem) and single.n == 1
    with pytest.raises(MetricInputError, match="missing from run record"):
        aggregate_gaps([{"id": {"mse": 0.1}, "ood": {}}], names=["mse"])
    with pytest.raises(MetricInputError, match="needs 'id' and 'ood'"):
        aggregate_gaps([{"id": {"mse": 0.1}}])


def test_decode_predictions_pads_with_minus_one(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def decode_batch(images: np.ndarray, spec: object, grid_shapes: list, seeds: list) -> list[np.ndarray]:
        calls.append((images.dtype, images.shape, [tuple(s) for s in grid_shapes], seeds))
        return [np.full(shape, int(image[0, 0, 0] == 255), dtype=np.uint8) for image, shape in zip(images, grid_shapes)]

    monkeypatch.setitem(sys.modules, "render.decode", types.SimpleNamespace(decode_batch=decode_batch))
    pictures = torch.stack([torch.ones(3, 8, 8), torch.zeros(3, 8, 8)])
    grids = decode_predictions(pictures, "spec", torch.tensor([[2, 3], [1, 1]]), seeds=[5, 6])
    assert grids.tolist() == [[[1, 1, 1], [1, 1, 1]], [[0, -1, -1], [-1, -1, -1]]]
    assert calls == [(np.uint8, (2, 8, 8, 3), [(2, 3), (1, 1)], [5, 6])]
    decode_predictions(pictures, "spec", [[2, 3], [1, 1]])
    assert calls[-1][-1] == [None, None]  # unseeded: every image decoded as with seed=None
    with pytest.raises(MetricInputError, match="as many grid shapes"):
        decode_predictions(pictures, "spec", [[2, 3]])


def test_decode_predictions_round_trip_with_the_renderer() -> None:
    raster = pytest.importorskip("render.raster")
    spec_module = pytest.importorskip("render.spec")
    spec = spec_module.RenderSpec()
    grids = np.zeros((2, 6, 7), dtype=np.uint8)
    grids[0, 1:3, 2:5] = 3
    grids[1, 4, 1] = 9
    images = torch.from_numpy(raster.render_batch(list(grids), spec, seeds=[0, 0])).permute(0, 3, 1, 2)
    decoded = decode_predictions(images.float() / 255, spec, [[6, 7], [6, 7]])
    assert decoded.tolist() == grids.tolist()


LISTINGS = {
    "evaluate": ("grid_accuracy", "object_pixel_accuracy", "mse", "ssim", "lpips"),
    "bench": ("grid_accuracy", "mse", "ssim", "lpips"),
    "report": ("grid_accuracy", "object_pixel_accuracy", "mse", "ssim", "lpips", "fg_mse"),
    "alpha_plot": ("grid_accuracy", "mse", "lpips"),
    "perturbation_study": ("grid_accuracy", "object_pixel_accuracy", "mse", "ssim", "lpips", "fg_mse", "psnr"),
    "rank_study": ("mse", "ssim", "lpips", "fg_mse", "psnr", "changed_mse", "mse_sum"),
    "rank_reference": ("grid_accuracy", "object_pixel_accuracy"),
}


@pytest.mark.parametrize("listing", sorted(LISTINGS))
def test_each_table_lists_the_metrics_its_registry_entries_name(listing: str) -> None:
    from vision_bench.metrics import listed_in

    assert listed_in(listing) == LISTINGS[listing]  # type: ignore[arg-type]


def test_every_metric_has_its_own_labels() -> None:
    from vision_bench.bench.tables import short, title

    shorts = [spec.short_label for _, spec in METRICS.items()]
    assert len(set(shorts)) == len(shorts) and all(shorts)
    assert (title("grid_accuracy"), short("grid_accuracy")) == ("GA: grid accuracy (%)", "GA")
    assert (title("object_pixel_accuracy"), short("paper_ppa")) == ("Obj-PPA: object pixel accuracy (%)", "PPA (G.2)")
    assert short("not_a_metric") == "not_a_metric"


def test_checkpoint_selection_reads_directions_from_the_registry() -> None:
    from vision_bench.train.config import SELECTION_METRICS

    assert SELECTION_METRICS == {"loss": "lower", "mse": "lower", "grid_accuracy": "higher"}
    assert all(SELECTION_METRICS[name] == METRICS[name].direction for name in SELECTION_METRICS if name != "loss")
