"""A re-run of `export` checks what it skips: damage that keeps a file's size is rewritten."""

from __future__ import annotations

from pathlib import Path

import pytest

from render import RenderSpec
from vision_bench.cli import main
from vision_bench.data.export import ExportOptions, export_dataset
from vision_bench.data.verify import verify_export
from vision_bench.tasks.config import TaskConfig

CONFIG = {"transformations": ["translate_up"], "grid_height": [8, 8], "grid_width": [8, 8], "n_objects": [1, 1],
          "samples": {"train": 4, "val_id": 1, "val_ood": 1, "test_id": 1, "test_ood": 1}}


def test_a_flipped_byte_is_repaired_by_the_same_export_again(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    config, spec = TaskConfig.from_dict(CONFIG), RenderSpec(size=(16, 16))
    options = ExportOptions(format="folder", shard_size=2)
    export_dataset(config, spec, tmp_path, options)
    victim = tmp_path / "train" / "00000001_target.png"
    original = victim.read_bytes()
    damaged = bytearray(original)
    damaged[len(damaged) // 2] ^= 0x01
    victim.write_bytes(bytes(damaged))
    assert main(["verify", str(tmp_path)]) == 1
    assert "re-run the `vision-bench export` command that made it" in capsys.readouterr().err
    result = export_dataset(config, spec, tmp_path, options)
    assert [shard.name for shard in result.written] == ["train-00000"]
    assert victim.read_bytes() == original
    assert verify_export(tmp_path).ok


def test_a_failed_start_does_not_block_the_corrected_command(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "data"
    base = ["export", "--study", "envgen/G1/1", "--n-train", "2", "--n-val", "1", "--n-test", "1", "--out", str(out)]
    assert main([*base, "--workers", "0"]) == 2
    assert not out.exists() or not any(out.rglob("*"))  # a settings error writes nothing
    infeasible = tmp_path / "infeasible.yaml"
    infeasible.write_text("transformations: [translate_up]\\ngrid_height: [3, 3]\\ngrid_width: [3, 3]\\n"
                          "n_objects: [9, 9]\\n")
    code = main(["export", "--config", str(infeasible), "--out", str(out)])
    assert code == 2
    capsys.readouterr()
    assert main(base) == 0  # the corrected command takes the folder over
    assert verify_export(out).ok
