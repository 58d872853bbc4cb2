"""Non-square images made elsewhere: refused by default with one line naming `dataset.resize`; `pad` letterboxes
them on black (exact pixels checked on hand-made images), `resize` stretches them, in image-pair folders and
streamed shards alike, and a run trains on them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from render.codec import encode
from render.spec import RenderSpec
from vision_bench.data.external import ReadOptions
from vision_bench.data.images import fit_square
from vision_bench.data.opening import open_dataset
from vision_bench.data.webdataset import sample_members, tar_bytes
from vision_bench.errors import ConfigError, DataError
from vision_bench.train import TrainConfig, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

WIDE = np.arange(4 * 8 * 3, dtype=np.uint8).reshape(4, 8, 3) * 2  # 4 rows, 8 columns, every value its own


def as_tensor(image: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(image).permute(2, 0, 1).float() / 255


def test_pad_centres_the_image_on_black_and_resize_stretches() -> None:
    padded = fit_square(as_tensor(WIDE), 8, "pad")
    assert padded.shape == (3, 8, 8)
    assert torch.equal(padded[:, 2:6], as_tensor(WIDE))  # rows 2 to 5: the image, unscaled
    assert torch.equal(padded[:, [0, 1, 6, 7]], torch.zeros(3, 4, 8))  # two black rows above and below
    tall = WIDE.transpose(1, 0, 2)  # 8 rows, 4 columns: two columns of margin each side
    assert torch.equal(fit_square(as_tensor(tall), 8, "pad")[:, :, 2:6], as_tensor(tall))
    thin = fit_square(as_tensor(tall[:, :1]), 8, "pad")  # 1 column: three left, four right (the extra goes right)
    assert torch.equal(thin[:, :, 3:4], as_tensor(tall[:, :1])) and thin[:, :, [0, 1, 2, 4, 5, 6, 7]].sum() == 0
    odd = fit_square(as_tensor(WIDE[:1]), 8, "pad")  # 1 row: three above, four below (the extra goes down)
    assert torch.equal(odd[:, 3], as_tensor(WIDE[:1])[:, 0]) and odd[:, [0, 1, 2, 4, 5, 6, 7]].sum() == 0
    flat = as_tensor(np.full((4, 8, 3), 200, np.uint8))
    scaled = fit_square(flat, 16, "pad")  # scaled to 8 x 16, then 4 rows above and below
    assert torch.allclose(scaled[:, 4:12], torch.full((3, 8, 16), 200 / 255))
    assert scaled[:, :4].sum() == 0 and scaled[:, 12:].sum() == 0
    assert torch.allclose(fit_square(flat, 16, "resize"), torch.full((3, 16, 16), 200 / 255))
    square = as_tensor(WIDE[:, :4])
    assert fit_square(square, 4, "pad") is square  # already the run's square


@pytest.fixture
def pairs(tmp_path: Path) -> Path:
    """Two 4 x 8 pairs: the input WIDE (plus the pair's number), the target its negative."""
    folder = tmp_path / "pairs"
    folder.mkdir()
    for number in range(2):
        picture = WIDE + number
        (folder / f"p{number}_input.png").write_bytes(encode(picture))
        (folder / f"p{number}_target.png").write_bytes(encode(255 - picture))
    return folder


def test_non_square_pairs_are_refused_or_padded(pairs: Path, tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"p0_input.png: its images are 4x8 pixels, not square, and the models take "
                                        r"square images; set dataset.resize: pad \(letterboxed on black\) or resize "
                                        r"\(stretched\), or make them square$"):
        open_dataset(pairs, "train")
    padded = open_dataset(pairs, "train", read=ReadOptions(resize="pad"))
    assert padded.spec.size == (8, 8)
    item = padded[1]
    assert torch.equal(item["input"][:, 2:6], as_tensor(WIDE + 1)) and item["input"][:, [0, 1, 6, 7]].sum() == 0
    assert torch.equal(item["target"][:, 2:6], as_tensor(255 - (WIDE + 1)))
    assert item["target"][:, [0, 1, 6, 7]].sum() == 0
    resized = open_dataset(pairs, "train", RenderSpec(size=(16, 16)), read=ReadOptions(resize="resize"))
    assert resized.spec.size == (16, 16) and resized[0]["input"].shape == (3, 16, 16)
    with pytest.raises(DataError, match="dataset.spec.size is 16x12, but dataset.resize brings images to the "
                                        "models' square; give one size for both sides"):
        open_dataset(pairs, "train", RenderSpec(size=(16, 12)), read=ReadOptions(resize="pad"))
    with pytest.raises(DataError, match=r"its images are 4x8 pixels but dataset.spec.size is 16x16; .* or set "
                                        r"dataset.resize: pad \(letterboxed on black\) or resize"):
        open_dataset(pairs, "train", RenderSpec(size=(16, 16)))


def test_streamed_shards_are_padded_alike(tmp_path: Path) -> None:
    members = sample_members("a", {"input.png": encode(WIDE), "target.png": encode(255 - WIDE)})
    (tmp_path / "train-0.tar").write_bytes(tar_bytes(members))
    with pytest.raises(DataError, match="4x8 pixels, not square"):
        open_dataset(str(tmp_path / "{split}-0.tar"), "train")
    item = next(iter(open_dataset(str(tmp_path / "{split}-0.tar"), "train", read=ReadOptions(resize="pad"))))
    assert torch.equal(item["input"][:, 2:6], as_tensor(WIDE)) and item["input"][:, [0, 1, 6, 7]].sum() == 0


def test_a_run_trains_on_padded_images(tmp_path: Path) -> None:
    folder = tmp_path / "pairs"
    folder.mkdir()
    for number in range(4):
        picture = np.full((24, 32, 3), 40 * number, np.uint8)
        (folder / f"p{number}_input.png").write_bytes(encode(picture))
        (folder / f"p{number}_target.png").write_bytes(encode(255 - picture))

    def config(**dataset: object) -> TrainConfig:
        return TrainConfig.from_dict({
            "dataset": {"path": str(folder), "val_splits": ["val_id"], **dataset},
            "model": {"name": "unet:test_resnet", "options": {"decoder_width": 4}}, "schedule": {"warmup_steps": 1},
            "training": {"batch_size": 2, "max_steps": 1, "eval_batch_size": 2},
        })

    with pytest.raises(DataError, match="24x32 pixels, not square.*dataset.resize"):
        train(config(), tmp_path / "refused", progress=False)
    result = train(config(resize="pad"), tmp_path / "run", progress=False)
    assert result.step == 1 and config(resize="pad").to_dict()["dataset"]["resize"] == "pad"
    assert "resize" not in config().to_dict()["dataset"]  # unset, not written: older configs keep their hash
    with pytest.raises(ConfigError, match="dataset.resize"):
        config(resize="crop")
