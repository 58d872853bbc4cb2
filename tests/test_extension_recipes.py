"""The recipes "Add a metric" and "Add an export format" of docs/architecture.md, followed once each.

The toy metric (`max_abs_error`) and the toy format (`npz`, whose writer and reader are defined in
this module) are registered by fixtures and removed again afterwards, so the registries are left
as they were.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from render.spec import RenderSpec
from vision_bench.bench.aggregate import CellResult
from vision_bench.bench.tables import format_metric, summary_rows, table1
from vision_bench.cli import main
from vision_bench.commands.evaluate import summary_table
from vision_bench.data.datasets import ExportDataset
from vision_bench.data.export import export_dataset
from vision_bench.data.export_formats import FORMATS, ExportFormat, ExportOptions, open_export
from vision_bench.data.items import add_rendered_images, grid_item
from vision_bench.data.manifest import FileRecord, digest_bytes
from vision_bench.data.shard_context import ShardContext
from vision_bench.data.shards import Shard
from vision_bench.data.sources import generate, load_config
from vision_bench.data.verify import verify_export
from vision_bench.errors import DataError
from vision_bench.io.atomic import atomic_write_bytes
from vision_bench.metrics import METRICS, MetricInputs, compute_metrics, listed_in, metric
from vision_bench.tasks.sample import TaskSample

# --- Add a metric ---------------------------------------------------------------------------------


@pytest.fixture
def max_abs_error() -> Iterator[str]:
    """Step 1 of the recipe: one decorated function (in a real metric, in its module of vision_bench/metrics)."""

    @metric("max_abs_error", "lower", "largest absolute difference of any pixel value in [0, 1]",
            needs=("pred_images", "target_images"), label="max absolute error", short_label="MaxAE",
            listed_in=("evaluate", "bench", "report"), rank=50)
    def function(inputs: MetricInputs) -> torch.Tensor:
        return (inputs.pred_images - inputs.target_images).abs().flatten(1).amax(dim=1)

    yield "max_abs_error"
    METRICS.remove("max_abs_error")


def test_a_registered_metric_is_computed_with_its_exact_values(max_abs_error: str) -> None:
    target = torch.zeros(2, 3, 4, 4)
    pred = target.clone()
    pred[0, 1, 2, 3] = 0.75
    pred[0, 0, 0, 0] = 0.25
    values = compute_metrics(pred, target, names=["mse", max_abs_error])
    assert values[max_abs_error].tolist() == [0.75, 0.0]


def test_a_registered_metric_appears_in_evaluate_and_the_bench_report(max_abs_error: str) -> None:
    assert listed_in("evaluate") == ("grid_accuracy", "object_pixel_accuracy", "mse", "ssim", "lpips", max_abs_error)
    document = {
        "model": "unet",
        "splits": {"test_id": {"n": 2, "metrics": {"grid_accuracy": 50.0, "mse": 0.125, max_abs_error: 0.75}}},
        "baselines": {},
    }
    header, _, row = summary_table(document).splitlines()
    assert header.split() == ["model", "split", "n", "GA", "Obj-PPA", "MSE", "SSIM", "LPIPS", "MaxAE"]
    assert row.split() == ["unet", "test_id", "2", "50", "n/a", "0.125", "n/a", "n/a", "0.75"]

    cells = [CellResult("unet", "C1/1", "C1", 0, False, {"test_id": {max_abs_error: 0.5},
                                                        "test_ood": {max_abs_error: 0.75}})]
    header, rows = summary_rows(cells, listed_in("bench"))
    assert header[-2:] == ["ID MaxAE", "OOD MaxAE"] and rows[0][-2:] == ["0.5", "0.75"]
    table = table1(cells, max_abs_error, ["C1"])
    assert table.title == "max absolute error"
    assert table.groups == [("unet", 3)]
    assert table.rows[0][:3] == ["C1", format_metric(max_abs_error, 0.5), format_metric(max_abs_error, 0.75)]


def test_a_registered_metric_is_listed_by_the_metrics_command(
    max_abs_error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["metrics"]) == 0
    rows = {line.split()[0]: line.split()[1:3] for line in capsys.readouterr().out.splitlines()}
    assert rows[max_abs_error] == ["lower", "MaxAE"] and len(rows) == len(METRICS.names())


def test_removing_a_metric_leaves_the_registry_as_it_was(max_abs_error: str) -> None:
    names = METRICS.names()
    spec = METRICS.remove(max_abs_error)
    assert METRICS.names() == [n for n in names if n != max_abs_error] and max_abs_error not in listed_in("evaluate")
    METRICS.add(max_abs_error, spec, spec.description)  # back, for the fixture to remove
    assert METRICS.names() == names


# --- Add an export format -------------------------------------------------------------------------
# Step 1 of the recipe: a module with `write_shard` and `count_samples` (here: this test module)
# and a Dataset class; a real format puts them in vision_bench/data/<format>.py.


def write_shard(
    root: Path, shard: Shard, samples: Sequence[TaskSample], context: ShardContext
) -> dict[str, FileRecord]:
    """One `{split}/part-{number:05d}.npz` per shard: each sample's input and target grid, and a JSON
    list of the other fields."""
    arrays: dict[str, Any] = {}
    for position, sample in enumerate(samples):
        arrays[f"input_{position}"] = sample.input
        arrays[f"target_{position}"] = sample.output
    fields = [{"task_code": list(s.task_code), "sequence": list(s.sequence), "split": s.split, "index": s.index,
               "task_key": s.task_key, "seed": s.seed} for s in samples]
    arrays["fields"] = np.array(json.dumps(fields))
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    name = f"{shard.split}/part-{shard.number:05d}.npz"
    (root / shard.split).mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(root / name, buffer.getvalue())
    return {name: digest_bytes(buffer.getvalue())}


def _fields(path: Path) -> list[dict[str, Any]]:
    with np.load(path) as archive:
        return list(json.loads(str(archive["fields"])))


def count_samples(root: Path, split: str, files: Sequence[str]) -> int:
    return sum(len(_fields(root / name)) for name in files)


class NpzDataset(ExportDataset):
    """An `npz` export: grids from the archives, images rendered when read."""

    def __init__(self, root: str | Path, split: str, spec: RenderSpec | None = None, **options: Any) -> None:
        super().__init__(root, split, spec, **options)
        self.items = []
        for name in self.files:
            with np.load(self.root / name) as archive:
                fields = json.loads(str(archive["fields"]))
                self.items += [grid_item(archive[f"input_{i}"], archive[f"target_{i}"], **entry)
                               for i, entry in enumerate(fields)]

    def _grid_item(self, row: int) -> dict[str, Any]:
        return dict(self.items[row])

    def _add_images(self, items: list[dict[str, Any]], rows: list[int]) -> None:
        add_rendered_images(items, self.spec)


@pytest.fixture
def npz_format() -> Iterator[str]:
    """Step 2 of the recipe: one registration (in a real format, in data/export_formats.py)."""
    FORMATS.add("npz", ExportFormat(__name__, f"{__name__}:NpzDataset", images=False),
                "grids as NumPy .npz archives, one per shard; images are rendered when read")
    yield "npz"
    FORMATS.remove("npz")


SPEC = RenderSpec(size=(16, 16))


def test_a_registered_format_exports_verifies_and_reads_back(npz_format: str, tmp_path: Path) -> None:
    config = load_config("compgen/C1/1", n_train=5, n_val=1, n_test=1, seed=3)
    npz, grids = tmp_path / "npz", tmp_path / "grids"
    export_dataset(config, SPEC, npz, ExportOptions(format=npz_format, shard_size=3))
    export_dataset(config, SPEC, grids, ExportOptions(format="grids", shard_size=3))
    report = verify_export(npz)
    assert report.ok, str(report)
    assert sorted(p.relative_to(npz).as_posix() for p in npz.glob("train/*")) == [
        "train/part-00000.npz", "train/part-00001.npz"]
    dataset, reference = open_export(npz, "train"), open_export(grids, "train")
    assert isinstance(dataset, NpzDataset) and len(dataset) == len(reference) == 5
    expected = generate(config, "train", 0, 5)
    for index in range(5):
        item, same = dataset[index], reference[index]
        assert np.array_equal(item["input_grid"].numpy(), expected[index].input)
        assert np.array_equal(item["target_grid"].numpy(), expected[index].output)
        assert torch.equal(item["input"], same["input"]) and torch.equal(item["target"], same["target"])


def test_the_export_rules_and_help_read_the_format_entry(
    npz_format: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(DataError, match=r"^--masks: need an image format that stores them "
                                        r"\(folder, parquet, webdataset\), not npz$"):
        ExportOptions(format=npz_format, masks=True)
    with pytest.raises(SystemExit):
        main(["export", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "{grids,folder,parquet,webdataset,npz}" in help_text
    assert "npz: grids as NumPy .npz archives, one per shard" in help_text
