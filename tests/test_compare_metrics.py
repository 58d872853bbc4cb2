"""Which metric should I trust: perturbations, the perturbation study, rank correlations, the command."""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from render.spec import RenderSpec  # noqa: E402
from vision_bench.bench.compare_metrics import Target, correlation_study, findings, perturbation_study  # noqa: E402
from vision_bench.bench.correlation import rank_correlation  # noqa: E402
from vision_bench.bench.perturbations import (  # noqa: E402
    PERTURBATIONS,
    add_object,
    free_anchors,
    move_object,
    next_color,
    recolor_object,
    remove_object,
    shift_image,
)
from vision_bench.tasks.grid import extract_objects  # noqa: E402

SPEC = RenderSpec(size=(64, 64))


def _grid() -> np.ndarray:
    grid = np.zeros((8, 8), np.uint8)
    grid[1:3, 1:3] = 2  # a red 2x2 square
    grid[5, 4:7] = [1, 9, 1]  # a three-cell bar of two colors
    return grid


# ----------------------------------------------------------------------------- perturbations


def test_move_object_moves_one_object_by_one_cell() -> None:
    grid = _grid()
    moved = move_object(grid, np.random.default_rng(0))
    before = {(o.top, o.left, o.pixels.tobytes()) for o in extract_objects(grid)}
    after = {(o.top, o.left, o.pixels.tobytes()) for o in extract_objects(moved)}
    (gone,), (new,) = before - after, after - before
    assert gone[2] == new[2] and abs(gone[0] - new[0]) + abs(gone[1] - new[1]) == 1
    full = np.ones((3, 3), np.uint8)
    assert move_object(full, np.random.default_rng(0)) is None  # nowhere to go


def test_recolor_and_remove_change_exactly_one_object() -> None:
    grid = _grid()
    recolored = recolor_object(grid, np.random.default_rng(1))
    changed = recolored != grid
    assert changed.any() and np.array_equal(recolored[changed], next_color(grid[changed]))
    assert np.array_equal(next_color(np.array([0, 1, 8, 9])), [0, 2, 9, 1])
    removed = remove_object(grid, np.random.default_rng(1))
    assert len(extract_objects(removed)) == 1 and set(np.unique(removed[removed != grid])) == {0}
    assert remove_object(np.zeros((4, 4), np.uint8), np.random.default_rng(0)) is None


def test_free_anchors_keep_a_one_cell_margin() -> None:
    occupied = np.zeros((5, 5), bool)
    occupied[0, 0] = True
    anchors = {tuple(a) for a in free_anchors(occupied, 2, 2)}
    assert (0, 2) in anchors and (2, 0) in anchors and (1, 1) not in anchors and (0, 1) not in anchors
    assert (3, 3) in anchors and (4, 4) not in anchors  # a 2x2 box must fit inside


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 4))
def test_added_object_is_a_copy_that_touches_nothing(seed: int, count: int) -> None:
    rng = np.random.default_rng(seed)
    grid = np.zeros((12, 12), np.uint8)
    for i in range(count):
        grid[3 * i, 1 + 2 * (i % 2)] = rng.integers(1, 10)
    added = add_object(grid, np.random.default_rng(seed))
    if added is None:
        return
    objects = extract_objects(added)
    assert len(objects) == count + 1 and np.count_nonzero(added) == np.count_nonzero(grid) + 1
    assert np.array_equal(added[grid != 0], grid[grid != 0])


def test_shift_moves_every_pixel_by_one_and_repeats_the_edge() -> None:
    image = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3)
    shifted = shift_image(image, np.random.default_rng(0))
    candidates = [
        np.concatenate([image[1:], image[-1:]]), np.concatenate([image[:1], image[:-1]]),
        np.concatenate([image[:, 1:], image[:, -1:]], 1), np.concatenate([image[:, :1], image[:, :-1]], 1),
    ]
    assert sum(np.array_equal(shifted, c) for c in candidates) == 1


def test_registry_lists_semantic_and_pixel_perturbations() -> None:
    kinds = {name: PERTURBATIONS[name].kind for name in PERTURBATIONS}
    assert {"move_object", "recolor_object", "remove_object", "add_object"} <= {
        n for n, k in kinds.items() if k == "grid"
    }
    assert {"shift_1px", "blur_sigma1", "jpeg_q90"} <= {n for n, k in kinds.items() if k == "image"}


# ----------------------------------------------------------------------------- the perturbation study


def _targets(count: int = 6) -> list[Target]:
    rng = np.random.default_rng(3)
    targets = []
    for i in range(count):
        output = np.zeros((12, 12), np.uint8)
        output[1:4, 2:5] = rng.integers(1, 10)
        output[7:10, 6:10] = rng.integers(1, 10)
        output[8, 7] = 0
        targets.append(Target(np.roll(output, 1, axis=0), output, i))
    return targets


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory):
    empty_hub = tmp_path_factory.mktemp("torch_home")
    previous = os.environ.get("TORCH_HOME")
    os.environ["TORCH_HOME"] = str(empty_hub)  # no LPIPS backbone here: LPIPS must be reported unavailable
    try:
        return perturbation_study(_targets(), SPEC)
    finally:
        if previous is None:
            del os.environ["TORCH_HOME"]
        else:
            os.environ["TORCH_HOME"] = previous


def _mean(study, perturbation: str, metric: str) -> float:
    return study.values[perturbation][metric].mean


def test_a_moved_object_fails_grid_accuracy_but_looks_close_in_mse(study) -> None:
    assert _mean(study, "move_object", "grid_accuracy") == 0.0
    assert 0 < _mean(study, "move_object", "mse") < _mean(study, "blank", "mse")
    for semantic in ("recolor_object", "remove_object", "add_object"):
        assert _mean(study, semantic, "grid_accuracy") == 0.0
    assert _mean(study, "identity", "mse") == 0.0 and _mean(study, "identity", "grid_accuracy") == 100.0


def test_harmless_pixel_changes_keep_the_grid_but_cost_pixels(study) -> None:
    for harmless in ("shift_1px", "blur_sigma1", "jpeg_q90"):
        assert _mean(study, harmless, "grid_accuracy") == 100.0
        assert _mean(study, harmless, "object_pixel_accuracy") == 100.0
        assert _mean(study, harmless, "mse") > 0
    assert _mean(study, "shift_1px", "ssim") < _mean(study, "jpeg_q90", "ssim")
    assert _mean(study, "blur_sigma1", "ssim") < 1.0 and _mean(study, "jpeg_q90", "ssim") < 1.0
    assert study.penalty_share("move_object", "grid_accuracy") == 1.0
    assert study.penalty_share("shift_1px", "grid_accuracy") == 0.0


def test_fg_mse_does_not_see_an_object_added_on_the_background(study) -> None:
    assert _mean(study, "add_object", "fg_mse") == 0.0 < _mean(study, "add_object", "mse")


def test_lpips_without_weights_is_reported_unavailable(study) -> None:
    assert np.isnan(_mean(study, "move_object", "lpips"))
    message = study.status["lpips"]
    assert message.startswith("unavailable") and "vision-bench weights get lpips --net alex" in message
    assert any(line.startswith("lpips: unavailable") for line in findings(study))


class HalfL1(torch.nn.Module):
    """Stands in for an LPIPS network (same call on [-1, 1] inputs): half the mean absolute difference."""

    def __init__(self) -> None:
        super().__init__()
        self.unused = torch.nn.Parameter(torch.zeros(1))

    def forward(self, first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
        both = torch.cat([first, second])
        assert both.min() == -1 and both.max() == 1  # LPIPS takes [-1, 1]: black and white channels at the ends
        return (first - second).abs().mean(dim=(1, 2, 3), keepdim=True) / 2


def test_an_injected_lpips_network_scores_the_perturbed_images() -> None:
    from render.raster import render_batch

    targets = _targets(2)
    result = perturbation_study(targets, SPEC, perturbations=["blur_sigma1"], metrics=("lpips",), lpips=HalfL1())
    assert result.values["identity"]["lpips"].mean == 0.0
    seeds = [t.render_seed for t in targets]
    target = render_batch([t.output for t in targets], SPEC, seeds).astype(np.float64) / 255
    blank = render_batch([0 * t.output for t in targets], SPEC, seeds).astype(np.float64) / 255
    assert result.values["blank"]["lpips"].mean == pytest.approx(np.abs(blank - target).mean(), rel=1e-5)


# ----------------------------------------------------------------------------- rank correlations


def test_rank_correlation_hand_computed() -> None:
    # ranks of the values 1..4; reference [0, 0, 1, 1] has ranks 1.5, 1.5, 3.5, 3.5: rho = 4 / sqrt(5 * 4) = 0.894
    result = rank_correlation(np.array([1, 2, 3, 4]), np.array([0, 0, 1, 1]), split="test_id", metric="ssim",
                              reference_name="grid_accuracy", lower_is_better=False)
    assert result.spearman == pytest.approx(4 / np.sqrt(20)) and result.agreement == pytest.approx(result.spearman)
    assert result.kendall == pytest.approx(4 / np.sqrt(6 * 4))  # tau-b: 4 concordant, 2 ties in reference
    mse = rank_correlation(np.array([0.4, 0.3, 0.0, 0.1]), np.array([0, 0, 1, 1]), split="test_id", metric="mse",
                           reference_name="grid_accuracy", lower_is_better=True)
    assert mse.spearman < 0 < mse.agreement
    constant = rank_correlation(np.ones(4), np.array([0, 1, 0, 1]), split="s", metric="mse",
                                reference_name="grid_accuracy", lower_is_better=True)
    assert np.isnan(constant.spearman) and constant.note == "mse is constant"


def test_correlation_study_runs_per_split_and_reference() -> None:
    columns = {"mse": np.array([0.1, 0.2, 0.0, 0.3]), "grid_accuracy": np.array([0.0, 0.0, 1.0, 0.0]),
               "object_pixel_accuracy": np.array([0.8, 0.5, 1.0, 0.2])}
    results = correlation_study(columns, np.array(["test_id", "test_id", "test_ood", "test_ood"]))
    assert {(r.split, r.reference, r.metric) for r in results} == {
        (s, ref, "mse") for s in ("test_id", "test_ood") for ref in ("grid_accuracy", "object_pixel_accuracy")
    }


# ----------------------------------------------------------------------------- the command


def _fake_evaluation(folder: Path) -> None:
    rng = np.random.default_rng(0)
    n = 20
    ga = (rng.random(2 * n) < 0.5).astype(float)
    mse = np.where(ga == 1, 0.001, 0.02) + rng.random(2 * n) * 0.01
    folder.mkdir(parents=True)
    pq.write_table(pa.table({
        "predictor": ["unet"] * (2 * n), "split": ["test_id"] * n + ["test_ood"] * n, "index": list(range(2 * n)),
        "sequence": [["translate_up"]] * (2 * n), "mse": mse, "ssim": 1 - mse, "grid_accuracy": ga,
        "object_pixel_accuracy": 0.5 + ga / 2,
    }), folder / "samples.parquet")
    (folder / "metrics.json").write_text(json.dumps({"format": "vision-bench-evaluation", "model": "unet"}))


@pytest.mark.slow  # the whole command: a study, its tables and plots
def test_cli_compare_metrics_writes_tables_plots_and_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("vision_bench.tasks.studies")
    from vision_bench.cli import main

    run = tmp_path / "run"
    _fake_evaluation(run / "evaluation")
    out = tmp_path / "out"
    monkeypatch.chdir(tmp_path)  # a relative --out, as users type it
    assert main(["compare-metrics", "--out", "out", "--run", str(run), "--n", "4"]) == 0
    for link in re.findall(r"\]\(([^)]+\.png)\)", (out / "report.md").read_text(encoding="utf-8")):
        assert (out / link).is_file(), link
    with (out / "perturbations.csv").open() as handle:
        rows = {row["perturbation"]: row for row in csv.DictReader(handle)}
    assert float(rows["move_object"]["grid_accuracy"]) == 0.0
    semantic = [float(row["mse"]) for row in rows.values() if row["kind"] == "grid"]
    harmless = [float(row["mse"]) for row in rows.values() if row["kind"] == "image"]
    assert min(semantic) > max(harmless) > 0  # on these targets MSE ranks every semantic error above pixel noise
    correlations = json.loads((out / "correlations.json").read_text())["correlations"]
    assert all(c["agreement"] > 0.5 for c in correlations if c["metric"] in ("mse", "ssim"))
    assert (out / "plots" / "perturbation_penalty.png").is_file() and (out / "plots" / "rank_agreement.png").is_file()
    assert "Rank correlations" in (out / "report.md").read_text()


@pytest.mark.slow  # the whole command on an export
def test_cli_compare_metrics_perturbs_the_targets_of_an_export(tmp_path: Path) -> None:
    from vision_bench.cli import main
    from vision_bench.data.export import export_dataset
    from vision_bench.data.export_formats import ExportOptions
    from vision_bench.tasks.config import TaskConfig

    config = TaskConfig.from_dict({"transformations": ["rot90"], "grid_height": [8, 8], "grid_width": [8, 8],
                                   "samples": {"train": 1, "val_id": 1, "val_ood": 1, "test_id": 3, "test_ood": 1}})
    export_dataset(config, SPEC, tmp_path / "data", ExportOptions(format="grids"))
    assert main(["compare-metrics", "--out", str(tmp_path / "out"), "--data", str(tmp_path / "data")]) == 0
    result = json.loads((tmp_path / "out" / "perturbations.json").read_text())
    assert result["perturbations"]["identity"]["n"] == 3
    assert result["perturbations"]["blur_sigma1"]["values"]["grid_accuracy"]["mean"] == 100.0
    assert main(["compare-metrics", "--out", str(tmp_path / "o2"), "--data", str(tmp_path / "data"),
                 "--study", "envgen/G1/1"]) == 2
