"""`dataset.val_fraction`: a validation split held out of a train-only dataset by sample key, disjoint from
training, fixed by the seed and the same for any number of workers or shards, in streamed shards, Hugging Face
datasets and image-pair folders; refused in one line when the data has validation splits of its own or the
fraction is not in (0, 1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from torch.utils.data import DataLoader

from render.codec import encode
from vision_bench.data.collate import collate
from vision_bench.data.external import ReadOptions
from vision_bench.data.holdout import held_out
from vision_bench.data.opening import open_dataset
from vision_bench.data.webdataset import sample_members, tar_bytes
from vision_bench.errors import ConfigError, DataError
from vision_bench.train import TrainConfig, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SIZE = 32
COUNT = 40
KEYS = [f"k{number:03d}" for number in range(COUNT)]


def picture(number: int) -> np.ndarray:
    return np.full((SIZE, SIZE, 3), number, np.uint8)


def write_shards(folder: Path, shards: int) -> str:
    """The COUNT samples in `shards` train shards; the pattern that names them."""
    folder.mkdir(parents=True)
    for shard in range(shards):
        members: list[tuple[str, bytes]] = []
        for number in range(shard, COUNT, shards):
            members += sample_members(KEYS[number], {"input.png": encode(picture(number)),
                                                     "target.png": encode(255 - picture(number))})
        (folder / f"train-{shard}.tar").write_bytes(tar_bytes(members))
    return str(folder / f"{{split}}-{{0..{shards - 1}}}.tar")


def keys_read(dataset: object, workers: int = 0) -> list[str]:
    if hasattr(dataset, "eval_order") and not dataset.training:  # type: ignore[attr-defined]
        dataset.eval_order(batch_size=4)  # type: ignore[attr-defined]  # as validation loaders deal streams
    size = getattr(dataset, "batch_size", 4)
    loader = DataLoader(dataset, batch_size=size, collate_fn=collate, num_workers=workers)  # type: ignore[arg-type]
    return [key for batch in loader for key in batch["key"]]


def test_the_hold_out_is_a_seeded_function_of_the_key() -> None:
    keys = [f"sample-{number}" for number in range(20_000)]
    held = {key for key in keys if held_out(key, 0.1, 0)}
    assert 0.09 < len(held) / len(keys) < 0.11  # the expected fraction
    assert held == {key for key in keys if held_out(key, 0.1, 0)}  # fixed by the seed
    assert held != {key for key in keys if held_out(key, 0.1, 1)}  # another seed, another set
    assert {key for key in keys if held_out(key, 0.05, 0)} <= held  # a smaller fraction, a subset


def test_streamed_shards_hold_out_the_same_keys_for_any_workers_and_shards(tmp_path: Path) -> None:
    four = write_shards(tmp_path / "four", 4)
    read = ReadOptions(val_fraction=0.25, val_seed=3)
    held = keys_read(open_dataset(four, "val_id", read=read))
    kept = keys_read(open_dataset(four, "train", read=read))
    assert set(held).isdisjoint(kept) and sorted(held + kept) == KEYS
    assert set(held) == {key for key in KEYS if held_out(key, 0.25, 3)} and 0 < len(held) < COUNT / 2
    assert len(open_dataset(four, "val_id", read=read)) == len(held)  # local shards counted through the filter
    assert keys_read(open_dataset(four, "val_id", read=read), workers=2) == held
    one = write_shards(tmp_path / "one", 1)
    assert sorted(keys_read(open_dataset(one, "val_id", read=read))) == sorted(held)
    other = keys_read(open_dataset(four, "val_id", read=ReadOptions(val_fraction=0.25, val_seed=4)))
    assert set(other) != set(held)
    stream = open_dataset(four, "train", read=read)
    stream.train_order(batch_size=2, seed=0, shuffle_buffer=4)
    trained = keys_read(stream, workers=2)  # training reads only the rest, in whole batches
    assert set(trained) <= set(kept) and len(trained) == 2 * stream.batches_per_epoch >= len(kept) - 5


def test_hugging_face_rows_and_image_pairs_are_held_out_alike(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    rows = {"input": [picture(n) for n in range(COUNT)], "target": [255 - picture(n) for n in range(COUNT)]}
    features = datasets.Features({"input": datasets.Image(), "target": datasets.Image()})
    folder = tmp_path / "saved"
    datasets.DatasetDict({"train": datasets.Dataset.from_dict(rows, features=features)}).save_to_disk(str(folder))
    read = ReadOptions(val_fraction=0.2)
    values = {split: [round(float(open_dataset(folder, split, read=read)[i]["input"][0, 0, 0]) * 255)
                      for i in range(len(open_dataset(folder, split, read=read)))] for split in ("train", "val_id")}
    assert values["val_id"] == [n for n in range(COUNT) if held_out(str(n), 0.2, 0)]  # rows by their number
    assert sorted(values["train"] + values["val_id"]) == list(range(COUNT))
    pairs = tmp_path / "pairs"
    pairs.mkdir()
    for number, key in enumerate(KEYS):
        (pairs / f"{key}_input.png").write_bytes(encode(picture(number)))
        (pairs / f"{key}_target.png").write_bytes(encode(255 - picture(number)))
    held = [item["key"] for item in open_dataset(pairs, "val_id", read=read)]  # type: ignore[attr-defined]
    kept = [item["key"] for item in open_dataset(pairs, "train", read=read)]  # type: ignore[attr-defined]
    assert held == [key for key in KEYS if held_out(key, 0.2, 0)] and sorted(held + kept) == KEYS


def test_data_with_validation_splits_of_its_own_is_refused(tmp_path: Path) -> None:
    pattern = write_shards(tmp_path / "shards", 2)
    (tmp_path / "shards/val_id-0.tar").write_bytes((tmp_path / "shards/train-0.tar").read_bytes())
    (tmp_path / "shards/val_id-1.tar").write_bytes((tmp_path / "shards/train-1.tar").read_bytes())
    read = ReadOptions(val_fraction=0.1)
    with pytest.raises(DataError, match=r"val_id-\{0..1\}.tar: has a validation split of its own \('val_id'\), so "
                                        r"dataset.val_fraction would hold out a second one; drop dataset.val_fraction"):
        open_dataset(pattern, "train", read=read)
    datasets = pytest.importorskip("datasets")
    table = datasets.Dataset.from_dict({"input": [picture(0)], "target": [picture(1)]})
    datasets.DatasetDict({"train": table, "validation": table}).save_to_disk(str(tmp_path / "hf"))
    with pytest.raises(DataError, match=r"\('validation'\).*e.g. \{val_id: validation\}"):
        open_dataset(tmp_path / "hf", "val_id", read=read)
    pairs = tmp_path / "pairs"
    for split in ("train", "validation"):
        (pairs / split).mkdir(parents=True)
        (pairs / split / "a_input.png").write_bytes(encode(picture(0)))
        (pairs / split / "a_target.png").write_bytes(encode(picture(1)))
    with pytest.raises(DataError, match=r"pairs: has a validation split of its own \('validation'\)"):
        open_dataset(pairs, "train", read=read)


def test_val_ood_comes_from_the_data_beside_a_held_out_val_id(tmp_path: Path) -> None:
    read = ReadOptions(val_fraction=0.25, val_seed=3)
    held = sorted(key for key in KEYS if held_out(key, 0.25, 3))
    pattern = write_shards(tmp_path / "shards", 2)
    for shard in range(2):
        (tmp_path / "shards" / f"val_ood-{shard}.tar").write_bytes(tar_bytes(sample_members(
            f"ood{shard}", {"input.png": encode(picture(1)), "target.png": encode(picture(2))})))
    patterns = {split: pattern.replace("{split}", split) for split in ("train", "val_ood")}
    for source in (patterns, pattern):  # a pattern per split, or one with {split}
        assert sorted(keys_read(open_dataset(source, "val_id", read=read))) == held
        assert sorted(keys_read(open_dataset(source, "train", read=read)) + held) == KEYS
        assert sorted(keys_read(open_dataset(source, "val_ood", read=read))) == ["ood0", "ood1"]
    run = config(path=patterns, val_fraction=0.25, val_seed=3, val_splits=["val_id", "val_ood"])
    assert run.dataset.val_splits == ("val_id", "val_ood")
    pairs = tmp_path / "pairs"
    for split, keys in (("train", KEYS), ("val_ood", ["ood"])):
        (pairs / split).mkdir(parents=True)
        for key in keys:
            (pairs / split / f"{key}_input.png").write_bytes(encode(picture(0)))
            (pairs / split / f"{key}_target.png").write_bytes(encode(picture(1)))
    assert [item["key"] for item in open_dataset(pairs, "val_id", read=read)] == held  # type: ignore[attr-defined]
    assert [item["key"] for item in open_dataset(pairs, "val_ood", read=read)] == ["ood"]  # type: ignore[attr-defined]
    datasets = pytest.importorskip("datasets")
    features = datasets.Features({"input": datasets.Image(), "target": datasets.Image()})
    table = datasets.Dataset.from_dict({"input": [picture(0)] * 8, "target": [picture(1)] * 8}, features=features)
    datasets.DatasetDict({"train": table, "val_ood": table.select([0, 1])}).save_to_disk(str(tmp_path / "hf"))
    assert len(open_dataset(tmp_path / "hf", "val_ood", read=read)) == 2
    assert len(open_dataset(tmp_path / "hf", "val_id", read=read)) == sum(held_out(str(n), 0.25, 3) for n in range(8))
    datasets.DatasetDict({"train": table, "validation_ood": table}).save_to_disk(str(tmp_path / "hf2"))
    with pytest.raises(DataError, match=r"\('validation_ood'\).*read it as ours with dataset.splits "
                                        r"\{val_ood: validation_ood\} \(the hold-out is in-distribution\)"):
        open_dataset(tmp_path / "hf2", "val_id", read=read)
    mapped = ReadOptions(val_fraction=0.25, val_seed=3, splits={"val_ood": "validation_ood"})
    assert len(open_dataset(tmp_path / "hf2", "val_ood", read=mapped)) == 8


def config(**dataset: object) -> TrainConfig:
    return TrainConfig.from_dict({
        "dataset": {"path": "shards/{split}-0.tar", **dataset},
        "model": {"name": "unet:test_resnet", "options": {"decoder_width": 4}}, "schedule": {"warmup_steps": 1},
        "training": {"batch_size": 4, "max_steps": 2, "eval_batch_size": 4},
    })


def test_the_config_takes_a_fraction_in_0_1_and_nothing_that_names_val_id() -> None:
    assert config(val_fraction=0.05).dataset.val_splits == ("val_id",)  # the held-out split alone
    assert config(val_fraction=0.05, val_splits=["val_id", "val_ood"]).dataset.val_splits == ("val_id", "val_ood")
    assert "val_fraction" not in config().to_dict()["dataset"]  # unset, not written: older configs keep their hash
    for fraction in (0, 1, 1.5, -0.1):
        with pytest.raises(ConfigError, match=f"dataset.val_fraction is {fraction}; give the fraction of the training "
                                              r"split to hold out for validation, between 0 and 1 \(e.g. 0.05\)"):
            config(val_fraction=fraction)
    with pytest.raises(ConfigError, match="dataset.splits names a val_id split and dataset.val_fraction holds one out "
                                          "of train; drop one of the two"):
        config(val_fraction=0.1, splits={"val_id": "validation"})
    with pytest.raises(ConfigError, match="dataset.path names a val_id split"):
        config(path={"train": "t-0.tar", "val_id": "v-0.tar"}, val_fraction=0.1)
    assert config(path={"train": "t-0.tar"}, val_fraction=0.1).dataset.val_splits == ("val_id",)
    with pytest.raises(ConfigError, match="dataset.val_seed seeds the split"):
        config(val_seed=3)
    with pytest.raises(ConfigError, match="dataset.val_fraction applies to data given by dataset.path"):
        TrainConfig.from_dict({"dataset": {"study": "compgen/translate_up", "val_fraction": 0.1},
                               "model": {"name": "unet:test_resnet"}})


def test_a_run_validates_on_the_held_out_split(tmp_path: Path) -> None:
    pattern = write_shards(tmp_path / "shards", 2)
    run = config(path=pattern, val_fraction=0.25, val_seed=3)
    result = train(run, tmp_path / "run", progress=False)
    assert result.step == 2 and np.isfinite(result.final_metrics["val_id/mse"])
    assert "val_ood/mse" not in result.final_metrics
