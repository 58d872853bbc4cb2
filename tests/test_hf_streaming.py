"""`dataset.streaming`: a Hugging Face dataset read with `datasets.load_dataset(..., streaming=True)`, tested
offline on local folders of Parquet files: the same items as the dataset loaded whole, grids included; its
data files dealt to ranks; the same order for any number of workers and an exact resume; a held-out split;
a training run (which needs max_steps); and one line for what cannot stream."""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from render.spec import RenderSpec
from vision_bench.data.collate import collate
from vision_bench.data.datasets import ParquetImageDataset
from vision_bench.data.export import export_dataset
from vision_bench.data.export_formats import ExportOptions
from vision_bench.data.external import ReadOptions
from vision_bench.data.holdout import held_out
from vision_bench.data.opening import open_dataset
from vision_bench.data.streaming import ShardStreamDataset
from vision_bench.errors import ConfigError, DataError
from vision_bench.tasks.config import TaskConfig
from vision_bench.train import TrainConfig, train

datasets = pytest.importorskip("datasets")
pytestmark = pytest.mark.usefixtures("one_torch_thread")

SIZE = 32
ROWS = 10  # six in the first data file, four in the second
STREAM = ReadOptions(streaming=True)


@pytest.fixture(scope="module", autouse=True)
def hf_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    original = datasets.config.HF_DATASETS_CACHE
    datasets.config.HF_DATASETS_CACHE = tmp_path_factory.mktemp("hf-cache")
    yield
    datasets.config.HF_DATASETS_CACHE = original


@pytest.fixture(scope="module")
def parquet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A train-only folder of two Parquet files, row n's input filled with n and its target with 255 - n."""
    folder = tmp_path_factory.mktemp("parquet")
    (folder / "data").mkdir()
    pictures = [np.full((SIZE, SIZE, 3), n, np.uint8) for n in range(ROWS)]
    features = datasets.Features({"input": datasets.Image(), "target": datasets.Image()})
    table = datasets.Dataset.from_dict({"input": pictures, "target": [255 - p for p in pictures]}, features=features)
    table.select(range(6)).to_parquet(str(folder / "data/train-00000-of-00002.parquet"))
    table.select(range(6, ROWS)).to_parquet(str(folder / "data/train-00001-of-00002.parquet"))
    return folder


def numbers(dataset: object) -> list[int]:
    return [round(float(item["input"][0, 0, 0]) * 255) for item in dataset]  # type: ignore[attr-defined]


def test_a_streamed_split_gives_the_rows_of_the_whole_one(parquet: Path) -> None:
    whole = open_dataset(f"hf://{parquet}", "train")
    stream = open_dataset(f"hf://{parquet}", "train", read=STREAM)
    assert isinstance(stream, ShardStreamDataset) and stream.shards == ["0", "1"] and not stream.has_grids
    items = list(stream)
    assert numbers(items) == list(range(ROWS)) and [item["key"] for item in items[5:7]] == ["0/5", "1/0"]
    for got, expected in zip(items, (whole[i] for i in range(ROWS))):
        assert torch.equal(got["input"], expected["input"]) and torch.equal(got["target"], expected["target"])
    assert stream.spec.size == (SIZE, SIZE)
    with pytest.raises(TypeError, match="unknown"):
        len(stream)  # not counted: streaming is for what is too big to read first


def test_streamed_rows_are_dealt_ordered_and_resumed_as_shards_are(parquet: Path) -> None:
    stream = open_dataset(f"hf://{parquet}", "train", read=STREAM)
    stream.train_order(batch_size=2, seed=1, shuffle_buffer=3)

    def order(workers: int, start: int) -> list[int]:
        stream.set_position(0, start)
        loader = DataLoader(stream, batch_size=2, collate_fn=collate, num_workers=workers)
        taken = []
        for number, batch in enumerate(loader):
            if number == 5:
                break
            taken += [round(float(value) * 255) for value in batch["input"][:, 0, 0, 0]]
        return taken

    single = order(0, 0)
    assert sorted(single) == list(range(ROWS)) and single != list(range(ROWS))  # one shuffled pass
    assert order(2, 0) == single  # two workers, the order of one process
    assert order(0, 2)[:6] == single[4:]  # resumed at batch 2: exactly the batches after the first two
    ranks = []
    for rank in range(2):
        dealt = open_dataset(f"hf://{parquet}", "train", read=STREAM)
        dealt.train_order(batch_size=1, seed=1, shuffle_buffer=0, rank=rank, world_size=2)
        ranks.append(set(numbers(itertools.islice(dealt, 4))))  # a training stream goes on pass after pass
    assert len(ranks[0]) == 4 and ranks[0] <= set(range(6))  # rank 0 reads the first data file
    assert ranks[1] == set(range(6, ROWS))  # rank 1 the second


def test_an_export_streams_with_its_grids_and_a_split_can_be_held_out(parquet: Path, tmp_path: Path) -> None:
    config = TaskConfig.from_dict({
        "transformations": ["translate_up"], "depth": [1, 1], "grid_height": [4, 6], "grid_width": [4, 6],
        "n_objects": [1, 2], "seed": 7, "samples": {"train": 4, "val_id": 3, "val_ood": 3, "test_id": 3,
                                                     "test_ood": 3}})
    export_dataset(config, RenderSpec(size=(SIZE, SIZE)), tmp_path / "export", ExportOptions(format="parquet"))
    folder = tmp_path / "hub-copy"  # a Hub repository of a parquet export, without manifest.json
    shutil.copytree(tmp_path / "export", folder, ignore=shutil.ignore_patterns("manifest.json"))
    stream = open_dataset(f"hf://{folder}", "test_ood", read=STREAM)
    expected = ParquetImageDataset(tmp_path / "export", "test_ood")
    assert stream.has_grids
    for got, want in zip(list(stream), (expected[i] for i in range(3)), strict=True):
        assert torch.equal(got["input_grid"], want["input_grid"]) and torch.equal(got["input"], want["input"])
    read = ReadOptions(streaming=True, val_fraction=0.3)
    held = [item["key"] for item in open_dataset(f"hf://{parquet}", "val_id", read=read)]
    kept = [item["key"] for item in open_dataset(f"hf://{parquet}", "train", read=read)]
    every = [f"0/{n}" for n in range(6)] + [f"1/{n}" for n in range(4)]
    assert held == [key for key in every if held_out(key, 0.3, 0)] and sorted(held + kept) == sorted(every)


def test_what_cannot_stream_is_one_line(parquet: Path, tmp_path: Path) -> None:
    saved = tmp_path / "saved"
    datasets.load_dataset(str(parquet))["train"].save_to_disk(str(saved))
    with pytest.raises(DataError, match="a save_to_disk folder is read from its own files, never streamed; drop "
                                        "dataset.streaming$"):
        open_dataset(f"hf://{saved}", "train", read=STREAM)
    with pytest.raises(DataError, match=r"has no columns 'image', 'mask' \(it has input, target\)"):
        open_dataset(f"hf://{parquet}", "train", read=ReadOptions(streaming=True, columns={"input": "image",
                                                                                            "target": "mask"}))


def test_images_given_by_a_url_alone_are_read_through_fsspec(tmp_path: Path) -> None:
    import fsspec

    from render.codec import encode

    memory = fsspec.filesystem("memory")
    for n in range(3):
        memory.pipe(f"/cells/input-{n}.png", encode(np.full((SIZE, SIZE, 3), 40 * n, np.uint8)))
        memory.pipe(f"/cells/target-{n}.png", encode(np.full((SIZE, SIZE, 3), 200 - n, np.uint8)))
    folder = tmp_path / "by-path"
    (folder / "data").mkdir(parents=True)
    features = datasets.Features({"input": datasets.Image(), "target": datasets.Image()})
    cells = {role: [{"bytes": None, "path": f"memory://cells/{role}-{n}.png"} for n in range(3)]
             for role in ("input", "target")}
    datasets.Dataset.from_dict(cells, features=features).to_parquet(str(folder / "data/train-00000-of-00001.parquet"))
    items = list(open_dataset(f"hf://{folder}", "train", read=STREAM))  # type: ignore[call-overload]
    assert [round(float(item["input"][0, 0, 0]) * 255) for item in items] == [0, 40, 80]
    assert [round(float(item["target"][0, 0, 0]) * 255) for item in items] == [200, 199, 198]


def run_config(path: str, **training: object) -> TrainConfig:
    return TrainConfig.from_dict({
        "dataset": {"path": path, "streaming": True, "val_fraction": 0.3},
        "model": {"name": "unet:test_resnet", "options": {"decoder_width": 4}}, "schedule": {"warmup_steps": 1},
        "training": {"batch_size": 2, "eval_batch_size": 2, **training},
    })


def test_a_run_trains_on_a_streamed_dataset(parquet: Path, tmp_path: Path) -> None:
    result = train(run_config(f"hf://{parquet}", max_steps=2), tmp_path / "run", progress=False)
    assert result.step == 2 and np.isfinite(result.final_metrics["val_id/mse"])
    with pytest.raises(ConfigError, match="length is unknown.*streamed Hugging Face datasets.*set training.max_steps"):
        train(run_config(f"hf://{parquet}", epochs=1), tmp_path / "epochs", progress=False)
    with pytest.raises(ConfigError, match="dataset.streaming streams a Hugging Face dataset, so dataset.path must "
                                          "name one as hf://user/name or hf://FOLDER"):
        run_config(str(parquet), max_steps=2)
    assert "streaming" not in TrainConfig.from_dict({"dataset": {"path": "x.tar"}, "model": {"name": "m"}}).to_dict()[
        "dataset"]
