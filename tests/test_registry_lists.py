"""The registries are the only lists: `vision-bench score` computes what the `MetricSpec` declarations
allow, and `vision-bench export` takes its estimate from the `ExportFormat` entry.

Both were bugs (issue 26): a metric added with `@metric` was refused by `score` as needing the input
image, and a format added to `FORMATS` crashed `export` with a `KeyError`. The toy metric and the toy
format are registered by fixtures and removed again afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from vision_bench.cli import main
from vision_bench.commands._scale import estimate
from vision_bench.data.export_formats import FORMATS, ExportFormat
from vision_bench.data.manifest import FileRecord, digest_file
from vision_bench.data.shard_context import ShardContext
from vision_bench.data.shards import Shard
from vision_bench.io.atomic import atomic_write_text
from vision_bench.metrics import METRICS, MetricInputs, metric
from vision_bench.scoring import check_metrics
from vision_bench.tasks.sample import TaskSample

BUILT_IN_IMAGE = ["mse", "mse_sum", "psnr", "ssim", "lpips"]
BUILT_IN_GRID = ["grid_accuracy", "pixel_accuracy", "object_pixel_accuracy", "paper_obj_ppa", "object_accuracy",
                 "color_accuracy", "shape_accuracy"]

# --- score: the metrics it computes are the registered ones whose needs it gives ------------------


@pytest.fixture
def toy_metric() -> Iterator[str]:
    """A metric registered with `@metric` only: the largest absolute difference of any pixel value."""

    @metric("toy_max_error", "lower", "largest absolute difference of any pixel value in [0, 1]",
            needs=("pred_images", "target_images"), label="toy max error", short_label="ToyMax")
    def function(inputs: MetricInputs) -> torch.Tensor:
        pred, target = inputs.image_pair()
        return (pred - target).abs().flatten(1).amax(dim=1)

    yield "toy_max_error"
    METRICS.remove("toy_max_error")


def _pair(folder: Path) -> tuple[str, str]:
    """A 16 x 16 black target and a prediction with one red value of 51 / 255 = 0.2 (max error 0.2)."""
    target = np.zeros((16, 16, 3), np.uint8)
    pred = target.copy()
    pred[3, 5, 0] = 51
    paths = folder / "pred.png", folder / "target.png"
    for path, image in zip(paths, (pred, target)):
        Image.fromarray(image).save(path)
    return str(paths[0]), str(paths[1])


def test_a_registered_metric_is_scored_by_default_and_on_request(
    toy_metric: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pred, target = _pair(tmp_path)
    assert main(["score", pred, target, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["metrics"] == [*BUILT_IN_IMAGE, toy_metric]
    assert result["pairs"][0][toy_metric] == pytest.approx(0.2) and result["mean"][toy_metric] == pytest.approx(0.2)
    assert result["pairs"][0]["mse"] == pytest.approx(0.2**2 / (3 * 16 * 16))
    assert main(["score", pred, target, "--metrics", toy_metric]) == 0
    header, _, row = capsys.readouterr().out.splitlines()
    assert header.split() == ["pair", "ToyMax"] and row.split() == ["pred", "0.2"]


def test_the_built_in_defaults_and_messages_are_as_before() -> None:
    assert list(check_metrics((), decodable=False)) == BUILT_IN_IMAGE
    assert list(check_metrics((), decodable=True)) == BUILT_IN_IMAGE + BUILT_IN_GRID
    assert check_metrics(("paper_ppa", "ssim"), decodable=True) == ("paper_ppa", "ssim")  # asked for: computed
    for name in ("stubbornness", "fg_mse", "changed_mse", "error_other"):
        with pytest.raises(Exception, match=rf"^metric '{name}' needs the input image or training sequences; "):
            check_metrics((name,), decodable=True)
    with pytest.raises(Exception, match=r"^metric 'paper_ppa' decodes grids: pass --spec SPEC.yaml and --grid HxW$"):
        check_metrics(("paper_ppa",), decodable=False)


def test_unknown_and_unscorable_metrics_exit_2_with_one_line(
    toy_metric: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pred, target = _pair(tmp_path)
    assert main(["score", pred, target, "--metrics", "stubbornness"]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "metric 'stubbornness' needs the input image or training sequences; score it with `vision-bench evaluate`")
    assert main(["score", pred, target, "--metrics", "toy_max_eror"]) == 2
    error = capsys.readouterr().err.strip()
    assert "unknown metric 'toy_max_eror'; score computes mse, mse_sum" in error and error.endswith(toy_metric)


# --- export: the estimate comes from the format's entry -------------------------------------------
# The toy format's writer is this module: one `{split}/part-{number:05d}.jsonl` per shard.


def write_shard(
    root: Path, shard: Shard, samples: Sequence[TaskSample], context: ShardContext
) -> dict[str, FileRecord]:
    """Each sample's input and target grid as one JSON line."""
    lines = [json.dumps({"index": s.index, "input": s.input.tolist(), "output": s.output.tolist()}) for s in samples]
    name = f"{shard.split}/part-{shard.number:05d}.jsonl"
    (root / shard.split).mkdir(parents=True, exist_ok=True)
    atomic_write_text(root / name, "".join(line + "\n" for line in lines))
    return {name: digest_file(root / name)}


def count_samples(root: Path, split: str, files: Sequence[str]) -> int:
    return sum(len((root / name).read_text().splitlines()) for name in files)


@pytest.fixture
def toy_format() -> Iterator[str]:
    """A format added to `FORMATS` with no estimate of its own (the entry's defaults apply)."""
    FORMATS.add("toy", ExportFormat(__name__, "vision_bench.data.datasets:GridsDataset", images=False),
                "grids as JSON lines, one file per shard")
    yield "toy"
    FORMATS.remove("toy")


def test_a_registered_format_exports_through_the_cli(
    toy_format: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "toy"
    code = main(["export", "--study", "compgen/C1/1", "--format", toy_format, "--out", str(out), "--n-train", "3",
                 "--n-val", "1", "--n-test", "1", "--seed", "3"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "Traceback" not in captured.err
    # 7 pairs at the defaults' 2,100 bytes each (not images: no scaling by area), 3 s to start and 0.0045 s each
    assert "7 pairs (3 train, 1 val_id, 1 val_ood, 1 test_id, 1 test_ood); about 3 s and 15 kB (rough)" in captured.err
    assert "wrote 5 shard(s) (7 samples)" in captured.out
    lines = (out / "train" / "part-00000.jsonl").read_text().splitlines()
    assert [json.loads(line)["index"] for line in lines] == [0, 1, 2]


def test_the_estimate_reads_the_entry() -> None:
    FORMATS.add("toy_images", ExportFormat(__name__, "vision_bench.data.datasets:GridsDataset", bytes_per_pair=1_000,
                                           seconds_per_pair=0.5), "images as JSON lines")
    try:
        # 3 s + 2 x 3 s / 2 cores + 400 pairs x 0.5 s / 2 workers = 106 s; 400 x 1,000 bytes x 4 = 1.6 MB
        assert estimate(400, kind="toy_images", workers=2, pixels=256 * 256, cores=2) == "about 2 min and 1.6 MB"
    finally:
        FORMATS.remove("toy_images")
    assert estimate(400, kind="grids") == "about 3 s and 60 kB"  # the built-in entries keep their figures
