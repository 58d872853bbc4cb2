"""Bring your own data: Hugging Face datasets (local folder, save_to_disk, hf://) and WebDataset
shards streamed from a brace pattern, a loopback http server or a `pipe:` command; training and
evaluating on them; one clear line for each kind of bad source."""

from __future__ import annotations

import functools
import http.server
import io
import shutil
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torch.utils.data import DataLoader

from render.spec import RenderSpec
from vision_bench.data.collate import collate
from vision_bench.data.datasets import ParquetImageDataset, WebDatasetDataset
from vision_bench.data.export import export_dataset
from vision_bench.data.export_formats import ExportOptions
from vision_bench.data.external import ReadOptions
from vision_bench.data.hf_datasets import HFImageDataset
from vision_bench.data.opening import open_dataset
from vision_bench.data.shard_stream import expand_braces
from vision_bench.data.streaming import ShardStreamDataset
from vision_bench.errors import ConfigError, DataError
from vision_bench.tasks.config import TaskConfig
from vision_bench.train import TrainConfig, train
from vision_bench.train.logging import read_records

datasets = pytest.importorskip("datasets")
pytestmark = pytest.mark.usefixtures("one_torch_thread")

SIZE = 32
SPEC = RenderSpec(size=(SIZE, SIZE))
COUNTS = {"train": 8, "val_id": 5, "val_ood": 5, "test_id": 5, "test_ood": 5}  # two shards of <= 4 per split
CONFIG = {
    "transformations": ["translate_up"], "depth": [1, 1],
    "grid_height": [4, 6], "grid_width": [4, 6], "n_objects": [1, 2], "seed": 7, "samples": COUNTS,
}
SHARDS = "{split}/part-{00000..00001}.tar"


@pytest.fixture(scope="module", autouse=True)
def hf_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """`datasets` caches what `load_dataset` prepares in a temporary folder, not the user's."""
    original = datasets.config.HF_DATASETS_CACHE
    datasets.config.HF_DATASETS_CACHE = tmp_path_factory.mktemp("hf-cache")
    yield
    datasets.config.HF_DATASETS_CACHE = original


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("exports")
    config = TaskConfig.from_dict(CONFIG)
    for name in ("webdataset", "parquet"):
        export_dataset(config, SPEC, root / name, ExportOptions(format=name, shard_size=4))
    return {"webdataset": root / "webdataset", "parquet": root / "parquet"}


@pytest.fixture(scope="module")
def saved_hf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A `save_to_disk` DatasetDict with its own column and split names: image / mask, validation."""
    def rows(count: int, offset: int) -> dict[str, list]:
        pictures = [np.full((SIZE, SIZE, 3), 10 * (offset + i), np.uint8) for i in range(count)]
        return {"image": [Image.fromarray(p) for p in pictures],
                "mask": [Image.fromarray(255 - p).convert("L") for p in pictures]}

    features = datasets.Features({"image": datasets.Image(), "mask": datasets.Image()})
    data = datasets.DatasetDict({
        "train": datasets.Dataset.from_dict(rows(8, 0), features=features),
        "validation": datasets.Dataset.from_dict(rows(3, 8), features=features),
    })
    folder = tmp_path_factory.mktemp("hf") / "saved"
    data.save_to_disk(str(folder))
    return folder


def assert_same_items(got: list[dict], expected: list[dict]) -> None:
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert set(a) == set(b)
        for key, value in b.items():
            assert torch.equal(a[key], value) if isinstance(value, torch.Tensor) else a[key] == value, key


def loader_order(stream: ShardStreamDataset, workers: int, epochs: list[tuple[int, int]]) -> list[list[int]]:
    """The sample indices of each (epoch, start batch), one persistent loader for all of them."""
    loader = DataLoader(stream, batch_size=stream.batch_size, drop_last=True, collate_fn=collate,
                        num_workers=workers, persistent_workers=workers > 0)
    orders = []
    for epoch, start in epochs:
        stream.set_position(epoch, start)
        orders.append([int(i) for batch in loader for i in batch["index"]])
    return orders


# ---------------------------------------------------------------------------- shard patterns and streams


def test_brace_patterns_expand_like_webdataset() -> None:
    assert expand_braces("s/a-{000..002}.tar") == ["s/a-000.tar", "s/a-001.tar", "s/a-002.tar"]
    assert expand_braces("{x,y}-{8..10}.tar") == ["x-8.tar", "x-9.tar", "x-10.tar", "y-8.tar", "y-9.tar", "y-10.tar"]
    with pytest.raises(DataError, match="counts down"):
        expand_braces("a-{3..1}.tar")
    with pytest.raises(DataError, match="cannot expand"):
        expand_braces("a-{x}.tar")


def test_streamed_shards_give_the_exports_items(exports: dict[str, Path]) -> None:
    pattern = str(exports["webdataset"] / SHARDS)
    stream = open_dataset(pattern, "val_ood")
    assert isinstance(stream, ShardStreamDataset) and len(stream) == 5 and stream.has_grids
    assert stream.spec.size == (SIZE, SIZE)
    indexed = WebDatasetDataset(exports["webdataset"], "val_ood")
    assert_same_items(list(stream), [indexed[i] for i in range(5)])
    with pytest.raises(DataError, match="images are 32x32 pixels but dataset.spec.size is 64x64"):
        open_dataset(pattern, "val_ood", RenderSpec(size=(64, 64)))


def test_training_order_is_seeded_per_epoch_and_the_same_for_any_worker_count(exports: dict[str, Path]) -> None:
    stream = open_dataset(str(exports["webdataset"] / SHARDS), "train")
    stream.train_order(batch_size=2, seed=3, shuffle_buffer=3)
    assert stream.batches_per_epoch == 4
    single = loader_order(stream, 0, [(0, 0), (1, 0), (0, 1)])
    assert sorted(single[0]) == list(range(8)) and sorted(single[1]) == list(range(8))
    assert single[0] != single[1]  # a new order each epoch
    assert single[2] == single[0][2:]  # resuming at batch 1 skips exactly the first batch
    assert loader_order(stream, 0, [(0, 0)]) == single[:1]  # a pure function of (seed, epoch)
    # two persistent workers: they see each new position and yield the single-process order
    assert loader_order(stream, 2, [(0, 0), (1, 0), (0, 1)]) == single


def test_shards_are_dealt_to_ranks_with_equal_batch_counts(exports: dict[str, Path]) -> None:
    pattern = str(exports["webdataset"] / SHARDS)
    seen = []
    for rank in range(2):
        stream = open_dataset(pattern, "val_id")  # shards of 4 and 1 samples
        stream.train_order(batch_size=1, seed=0, shuffle_buffer=0, rank=rank, world_size=2)
        assert stream.batches_per_epoch == 1  # the smaller rank's count, on both ranks
        seen.append([int(item["index"]) for item in stream])
    assert [len(indices) for indices in seen] == [1, 1] and set(seen[0]).isdisjoint(seen[1])
    with pytest.raises(DataError, match="2 shard"):
        open_dataset(pattern, "val_id").train_order(batch_size=1, seed=0, shuffle_buffer=0, rank=0, world_size=3)


@pytest.fixture
def http_root(exports: dict[str, Path]) -> Iterator[str]:
    """The webdataset export served by a loopback http server."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(exports["webdataset"]))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_urls_and_commands_stream_the_same_samples(exports: dict[str, Path], http_root: str) -> None:
    expected = list(open_dataset(str(exports["webdataset"] / SHARDS), "test_id"))
    for source in (f"{http_root}/{SHARDS}", f"pipe:cat {exports['webdataset']}/{SHARDS}"):
        stream = open_dataset(source, "test_id")
        assert_same_items(list(stream), expected)
        with pytest.raises(TypeError, match="unknown"):
            len(stream)  # not counted: it would mean reading everything
    with pytest.raises(DataError, match="cannot be read"):
        open_dataset(f"{http_root}/missing-{{split}}.tar", "train")
    with pytest.raises(DataError, match="exit status 3"):
        open_dataset("pipe:exit 3 # {split}.tar", "train")


def test_bad_shards_get_one_clear_line(exports: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"no such shard file"):
        open_dataset(str(exports["webdataset"] / "{split}/part-{00000..00002}.tar"), "train")
    with pytest.raises(DataError, match="matches no file"):
        open_dataset(str(tmp_path / "{split}-*.tar"), "train")
    with pytest.raises(DataError, match=r"needs \{split\}"):
        open_dataset(str(tmp_path / "train-{0..1}.tar"), "train")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name in ("a.jpg", "a.cls"):
            archive.addfile(tarfile.TarInfo(name), io.BytesIO(b""))
    (tmp_path / "train.tar").write_bytes(buffer.getvalue())
    with pytest.raises(DataError, match=r"sample 'a' has no 'input' member \(it has cls, jpg\)"):
        open_dataset(str(tmp_path / "{split}.tar"), "train")
    with pytest.raises(DataError, match="data/nowhere: no such file or folder"):
        open_dataset("data/nowhere", "train")


# ---------------------------------------------------------------------------- Hugging Face datasets


def test_save_to_disk_folder_with_named_columns_and_splits(saved_hf: Path) -> None:
    columns = {"input": "image", "target": "mask"}
    dataset = open_dataset(saved_hf, "val_id", read=ReadOptions(columns=columns, splits={"val_id": "validation"}))
    assert isinstance(dataset, HFImageDataset) and len(dataset) == 3 and not dataset.has_grids
    item = dataset[2]
    assert item["input"].shape == (3, SIZE, SIZE) and item["input"].dtype == torch.float32
    assert torch.equal(item["input"], torch.full((3, SIZE, SIZE), 100 / 255))  # row 2 of validation: 10 * 10
    assert torch.equal(item["target"], torch.full((3, SIZE, SIZE), 155 / 255))  # grey mask, as RGB
    assert (item["split"], item["index"]) == ("val_id", 2)
    with pytest.raises(DataError, match=r"has no columns 'input', 'target' \(it has image, mask\)"):
        open_dataset(saved_hf, "train")
    with pytest.raises(DataError, match=r"has no split 'val_id' \(it has train, validation\); map ours to its "
                       r"names with dataset.splits, e.g. \{val_id: validation\}, or leave val_id out of "
                       r"dataset.val_splits"):
        open_dataset(saved_hf, "val_id", read=ReadOptions(columns=columns))


def test_split_fixes_point_to_the_closest_split_or_to_val_splits() -> None:
    from vision_bench.data.hf_datasets import split_fix

    assert split_fix("test_ood", ["train", "validation", "test"]) == (
        "map ours to its names with dataset.splits, e.g. {test_ood: test}")
    assert split_fix("val_ood", ["train"]) == (
        "leave val_ood out of dataset.val_splits (and pick checkpoint.select_on among those kept)")
    assert split_fix("test_id", ["train"]) == "map ours to its names with dataset.splits, e.g. {test_id: train}"


def test_a_folder_load_dataset_reads_gives_items_with_grids(exports: dict[str, Path], tmp_path: Path) -> None:
    folder = tmp_path / "hub-copy"  # what a Hub repository of a parquet export holds, without manifest.json
    shutil.copytree(exports["parquet"], folder, ignore=shutil.ignore_patterns("manifest.json"))
    expected = ParquetImageDataset(exports["parquet"], "test_ood")
    for source in (folder, f"hf://{folder}"):
        dataset = open_dataset(source, "test_ood")
        assert isinstance(dataset, HFImageDataset) and dataset.has_grids
        assert_same_items(dataset.__getitems__(range(5)), [expected[i] for i in range(5)])


@pytest.mark.parametrize("source, repo, revision", [
    ("hf://datasets/user/name", "user/name", None),  # the Hub's own path form
    ("hf://datasets/user/name@v1.0", "user/name", "v1.0"),
    ("hf://user/name@0123abc", "user/name", "0123abc"),
    ("hf://user/name", "user/name", None),
])
def test_hub_ids_and_revisions_reach_load_dataset(exports: dict[str, Path], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch, source: str, repo: str,
                                                  revision: str | None) -> None:
    """`datasets.load_dataset` receives the repository id and the revision (here answered from a local copy, as the
    Hub would send the same files)."""
    import datasets

    from vision_bench.data.hf_datasets import load_splits

    folder = tmp_path / "hub-copy"
    shutil.copytree(exports["parquet"], folder, ignore=shutil.ignore_patterns("manifest.json"))
    asked: list[tuple[str, str | None]] = []
    real = datasets.load_dataset

    def from_the_hub(path: str, revision: str | None = None, **options: object) -> object:
        asked.append((path, revision))
        return real(str(folder), **options)

    monkeypatch.setattr(datasets, "load_dataset", from_the_hub)
    load_splits.cache_clear()
    try:
        dataset = open_dataset(source, "test_ood")
    finally:
        load_splits.cache_clear()
    assert asked == [(repo, revision)] and len(dataset) == len(ParquetImageDataset(exports["parquet"], "test_ood"))


# ---------------------------------------------------------------------------- training and evaluation


def train_config(path: str, **dataset: object) -> TrainConfig:
    return TrainConfig.from_dict({
        "seed": 0,
        "dataset": {"path": path, **dataset},
        "model": {"name": "unet:test_resnet", "options": {"decoder_width": 4}},
        "schedule": {"warmup_steps": 1},
        "training": {"batch_size": 4, "max_steps": 3, "log_every": 1, "eval_batch_size": 4},
    })


def step_losses(run_dir: Path) -> list[float]:
    return [r["loss"] for r in read_records(run_dir / "metrics.jsonl") if r["kind"] == "step"]


@pytest.mark.slow
def test_training_on_streamed_shards_resumes_exactly_and_evaluates(exports: dict[str, Path], tmp_path: Path) -> None:
    from vision_bench.evaluation import evaluate_run

    config = train_config(str(exports["webdataset"] / SHARDS), shuffle_buffer=4)
    whole = train(config, tmp_path / "whole", progress=False)
    assert whole.finished and whole.step == 3 and "val_ood/grid_accuracy" in whole.final_metrics
    train(config, tmp_path / "split", progress=False, stop_at_step=1)  # mid-epoch (2 batches per epoch)
    train(config, tmp_path / "split", resume=True, progress=False)
    assert step_losses(tmp_path / "split") == step_losses(tmp_path / "whole")
    result = evaluate_run(tmp_path / "whole", checkpoint="last", splits=("test_ood",), baselines=("copy_input",),
                          device="cpu", lpips=None, data=str(exports["webdataset"] / SHARDS))
    assert result.metrics["splits"]["test_ood"]["n"] == 5


def test_training_on_a_hugging_face_folder(saved_hf: Path, tmp_path: Path) -> None:
    config = train_config(str(saved_hf), columns={"input": "image", "target": "mask"},
                          splits={"val_id": "validation", "val_ood": "validation"})
    result = train(config, tmp_path / "run", progress=False)
    assert result.step == 3 and np.isfinite(result.final_metrics["val_id/mse"])
    assert config.to_dict()["dataset"]["columns"] == {"input": "image", "target": "mask"}


def test_streams_of_unknown_length_need_max_steps(exports: dict[str, Path], http_root: str, tmp_path: Path) -> None:
    config = train_config(f"{http_root}/{SHARDS}")
    with pytest.raises(ConfigError, match="length is unknown.*set training.max_steps"):
        train(config.replace(training={"batch_size": 4, "epochs": 1}), tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()
