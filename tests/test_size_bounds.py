"""Sizes, counts, seeds and pixels beyond what the machine can hold are refused first, in one line.

Each case runs the real hostile input (a count of 10**15, a seed of 10**23, a 10**7-wide decoder, a PNG
whose header claims 400 million pixels) and asserts exit 2, no traceback, one `: error:` line naming the
limit and the fix, and nothing written. Cases that used to run away (memory growing, an export writing
for days) run under a deadline, so that a regression fails in seconds instead of filling the machine.
"""

from __future__ import annotations

import struct
import time
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_errors import cli_error
from PIL import Image

from vision_bench.cli import main

ROOT = Path(__file__).resolve().parents[1]
TASK = "transformations: [translate_up]\ngrid_height: [8, 8]\ngrid_width: [8, 8]\nn_objects: [1, 1]\n"
SMALL = ["--n-train", "2", "--n-val", "1", "--n-test", "1"]








def task_file(tmp_path: Path) -> str:
    path = tmp_path / "task.yaml"
    path.write_text(TASK)
    return str(path)


def train_file(tmp_path: Path) -> str:
    path = tmp_path / "train.yaml"
    path.write_text((ROOT / "configs" / "train_smoke.yaml").read_text())
    return str(path)


COUNTS: dict[str, Callable[[Path], list[str]]] = {
    "export-n-train": lambda t: ["export", "--config", task_file(t), "--n-train", str(10**15)],
    "export-set-samples": lambda t: ["export", "--config", task_file(t), "--set", f"samples.train={10**15}"],
    "export-study": lambda t: ["export", "--study", "envgen/G1/1", "--n-train", str(10**15)],
    "generate-n-train": lambda t: ["generate", "--config", task_file(t), "--n-train", str(10**15)],
}


@pytest.mark.parametrize("case", sorted(COUNTS))
def test_a_huge_count_is_refused_at_once_naming_the_limit(case: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    argv = [*COUNTS[case](tmp_path), "--out", str(out)]
    line = cli_error(argv, capsys, seconds=30)
    assert "1,000,000,000,000,000 samples" in line and "(1,000,000,000)" in line and "ask for fewer" in line
    assert not out.exists()
    started = time.monotonic()  # again, with the command's modules imported: the refusal itself is timed
    assert cli_error(argv, capsys, seconds=10) == line
    assert time.monotonic() - started < 1.0


def test_too_many_shards_are_refused_before_any_is_planned(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """2 * 10**8 samples are allowed, but not in 200,000 shards of 1,000: the fix is a larger --shard-size."""
    out = tmp_path / "out"
    line = cli_error(["export", "--config", task_file(tmp_path), "--out", str(out), "--n-train", str(2 * 10**8),
                     "--n-val", "1", "--n-test", "1"], capsys, seconds=30)
    assert "200,004 shards" in line and "--shard-size 2001 or more" in line
    assert not out.exists()


def test_shard_planning_takes_constant_time_and_memory_until_shards_are_made() -> None:
    from vision_bench.data.shards import MAX_SHARDS, count_shards, iter_shards, plan_shards
    from vision_bench.errors import DataError

    counts = {"train": 10**9, "val_id": 10**9}
    tracemalloc.start()
    try:
        started = time.monotonic()
        assert count_shards(counts, 1) == 2 * 10**9
        first = next(iter_shards(counts, 1))
        with pytest.raises(DataError, match=r"2,000,000,000 shards.*pass --shard-size 20001 or more"):
            plan_shards(counts, 1)
        elapsed = time.monotonic() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (first.split, first.start, first.stop) == ("train", 0, 1)
    assert elapsed < 0.5 and peak < 1_000_000
    assert count_shards(counts, 20001) <= MAX_SHARDS  # the size the message suggests is enough


SEEDS: dict[str, Callable[[Path], list[str]]] = {
    "generate-seed": lambda t: ["generate", "--config", task_file(t), *SMALL, "--seed", str(10**23)],
    "generate-study-seed": lambda t: ["generate", "--study", "envgen/G1/1", *SMALL, "--seed", str(10**23)],
    "export-seed": lambda t: ["export", "--config", task_file(t), *SMALL, "--seed", str(10**23)],
    "export-set-seed": lambda t: ["export", "--config", task_file(t), *SMALL, "--set", f"seed={2**32}"],
    "train-seed": lambda t: ["train", train_file(t), "--seed", str(2**32)],
    "train-set-seed": lambda t: ["train", train_file(t), "--set", f"seed={10**23}"],
}


@pytest.mark.parametrize("case", sorted(SEEDS))
def test_an_out_of_range_seed_is_one_line_and_leaves_nothing(case: str, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    line = cli_error([*SEEDS[case](tmp_path), "--out", str(out)], capsys, seconds=20)
    assert "out of range; use a seed from 0 to 4294967295" in line
    assert not out.exists()  # in particular no _progress/export.json


@pytest.mark.parametrize("setting", [f"dataset.n_train={10**17}", f"dataset.n_val={10**9}"])
def test_a_run_over_the_sample_limit_is_refused_before_the_run_folder(setting: str, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    line = cli_error(["train", train_file(tmp_path), "--set", setting, "--out", str(out)], capsys, seconds=20)
    assert "more samples than a run reads from one split (10,000,000" in line and "ask for fewer" in line
    assert not out.exists()


def test_a_model_too_large_to_build_is_refused_before_the_run_folder(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    line = cli_error(["train", train_file(tmp_path), "--set", "model.options.decoder_width=10000000",
                     "--out", str(out)], capsys, seconds=20)
    assert "would have" in line and "more than the 2,000,000,000 allowed" in line and "decoder_width" in line
    assert not out.exists()


def test_create_model_counts_parameters_without_allocating_them() -> None:
    """The one check `train` and `load_pretrained` share: 4e11 parameters are refused using no memory."""
    from vision_bench.errors import ConfigError
    from vision_bench.models import create_model

    tracemalloc.start()
    try:
        with pytest.raises(ConfigError, match=r"unet:test_resnet.*would have [\d,]+ parameters"):
            create_model("unet:test_resnet", image_size=64, decoder_width=10_000_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50_000_000


def test_an_exported_model_with_a_huge_width_is_refused_on_load(tmp_path: Path) -> None:
    import json

    from vision_bench.errors import ConfigError
    from vision_bench.models import create_model, load_pretrained, save_pretrained

    options = {"image_size": 32, "decoder_width": 4}
    save_pretrained(create_model("unet:test_resnet", **options), tmp_path / "model", options=options)
    config_path = tmp_path / "model" / "config.json"
    config = json.loads(config_path.read_text())
    config["model_args"]["decoder_width"] = 10_000_000
    config_path.write_text(json.dumps(config))
    with pytest.raises(ConfigError, match="decoder_width"):
        load_pretrained(tmp_path / "model")


def png_bomb(path: Path, side: int) -> Path:
    """A real decompression bomb: a 1-bit grayscale PNG of `side` x `side` black pixels, a few kB on disk
    (decoded as RGB: 3 bytes a pixel), compressed row by row so that making it takes no memory."""
    row = bytes(1 + (side + 7) // 8)  # filter byte, then the row's bits
    packer = zlib.compressobj(9)
    data = b"".join(packer.compress(row) for _ in range(side)) + packer.flush()

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b""))
    return path


@pytest.mark.parametrize("side", [3000, 20000])
def test_score_refuses_an_image_over_the_pixel_limit_before_decoding(side: int, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """3000 x 3000 (a few kB, 9 million pixels) is over the default limit; 20000 x 20000 is also over Pillow's
    decompression-bomb limit, which used to end in a traceback."""
    bomb = png_bomb(tmp_path / "pred.png", side)
    assert bomb.stat().st_size < 200_000
    out = tmp_path / "scores.csv"
    line = cli_error(["score", str(bomb), str(bomb), "--metrics", "mse", "--out", str(out)], capsys, seconds=20)
    assert f"is {side}x{side} pixels ({side * side:,}), more than --max-pixels 4,194,304" in line
    assert f"pass --max-pixels {side * side} to score it anyway" in line
    assert not out.exists()


def test_max_pixels_lowers_and_raises_the_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pred, target = tmp_path / "a.png", tmp_path / "b.png"
    Image.new("RGB", (64, 64)).save(pred)
    Image.new("RGB", (64, 64), (255, 0, 0)).save(target)
    line = cli_error(["score", str(pred), str(target), "--metrics", "mse", "--max-pixels", "4095"], capsys, seconds=20)
    assert "more than --max-pixels 4,095" in line and "pass --max-pixels 4096" in line
    assert main(["score", str(pred), str(target), "--metrics", "mse", "--max-pixels", "4096", "--json"]) == 0


def test_codec_load_names_a_bomb_instead_of_calling_it_corrupt(tmp_path: Path) -> None:
    from render.codec import ImageError, ImageTooLargeError, load

    bomb = png_bomb(tmp_path / "bomb.png", 20000)
    with pytest.raises(ImageError, match="more pixels than Pillow decodes"):
        load(bomb)
    with pytest.raises(ImageTooLargeError, match=r"20000x20000 pixels \(400,000,000\), more than the limit of 1,000"):
        load(bomb, max_pixels=1000)
