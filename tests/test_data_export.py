"""Exports: identical bytes for any worker / shard layout, resume, verify, and clean failures."""

from __future__ import annotations

import errno
import hashlib
import json
import os
from pathlib import Path

import pytest

from render.spec import RenderSpec
from vision_bench.cli import main
from vision_bench.data.export import PROGRESS_DIR, export_dataset
from vision_bench.data.export_formats import ExportOptions
from vision_bench.data.manifest import MANIFEST_NAME, read_manifest, write_manifest
from vision_bench.data.sources import load_config
from vision_bench.data.verify import verify_export
from vision_bench.errors import DataError, ManifestError
from vision_bench.io import atomic
from vision_bench.tasks.config import TaskConfig

COUNTS = {"train": 9, "val_id": 2, "val_ood": 2, "test_id": 1, "test_ood": 1}
SPEC = RenderSpec(size=(24, 24), background="random")
OPTIONS = ExportOptions(format="folder", shard_size=4, frames=True, masks=True)


@pytest.fixture(scope="module")
def config() -> TaskConfig:
    """CompGen C1-1 (depth-1 and depth-2 sequences, so frames exist) with tiny counts."""
    return load_config("compgen/C1/1", n_train=9, n_val=2, n_test=1, seed=3)


def tree(root: Path) -> dict[str, str]:
    """Relative path -> SHA-256 of every file under root."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*")) if p.is_file()
    }


def interrupt(_shard: object) -> None:
    """Stand-in for a kill after the first shard: stop the export right there."""
    raise KeyboardInterrupt


@pytest.fixture(scope="module")
def reference(config: TaskConfig, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("single") / "export"
    result = export_dataset(config, SPEC, out, OPTIONS)
    assert result.manifest == out / MANIFEST_NAME and result.incomplete == 0
    return tree(out)


def test_single_export_layout(reference: dict[str, str]) -> None:
    names = set(reference)
    assert {"train/00000000_input.png", "train/00000000_target.png", "train/00000000_input_mask.png",
            "train/metadata-00000.parquet", "train/metadata-00002.parquet", MANIFEST_NAME} <= names
    assert any(name.endswith("_frame1.png") for name in names)
    assert not any(PROGRESS_DIR in name or atomic.TEMP_MARK in name for name in names)
    assert sum(name.endswith("_input.png") for name in names) == sum(COUNTS.values())


@pytest.mark.slow  # two worker processes export the whole config
def test_two_workers_give_identical_bytes(config: TaskConfig, reference: dict[str, str], tmp_path: Path) -> None:
    export_dataset(config, SPEC, tmp_path, OPTIONS, workers=2)
    assert tree(tmp_path) == reference


def test_three_shard_runs_merge_to_identical_bytes(config: TaskConfig, reference: dict[str, str],
                                                   tmp_path: Path) -> None:
    first = export_dataset(config, SPEC, tmp_path, OPTIONS, num_shards=3, shard_index=0)
    assert first.manifest is None and first.incomplete > 0 and not (tmp_path / MANIFEST_NAME).exists()
    second = export_dataset(config, SPEC, tmp_path, OPTIONS, num_shards=3, shard_index=2)
    assert second.manifest is None and not {s.name for s in first.written} & {s.name for s in second.written}
    last = export_dataset(config, SPEC, tmp_path, OPTIONS, num_shards=3, shard_index=1)
    assert last.manifest is not None and last.incomplete == 0
    assert tree(tmp_path) == reference


def test_resume_after_lost_shard_and_leftover_temp_file(config: TaskConfig, reference: dict[str, str],
                                                        tmp_path: Path) -> None:
    export_dataset(config, SPEC, tmp_path, OPTIONS)
    (tmp_path / "train/00000005_target.png").unlink()
    (tmp_path / "val_id/.00000001_input.png.tmp-999-dead").write_bytes(b"half a png")
    again = export_dataset(config, SPEC, tmp_path, OPTIONS)
    assert [s.name for s in again.written] == ["train-00001"] and again.manifest is not None
    assert tree(tmp_path) == reference


def test_resume_after_interrupted_run(config: TaskConfig, reference: dict[str, str], tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt):
        export_dataset(config, SPEC, tmp_path, OPTIONS, on_shard_done=interrupt)
    assert not (tmp_path / MANIFEST_NAME).exists()
    assert [p.name for p in (tmp_path / PROGRESS_DIR).glob("*-*.json")] == ["train-00000.json"]
    resumed = export_dataset(config, SPEC, tmp_path, OPTIONS)
    assert len(resumed.skipped) == 1 and resumed.manifest is not None
    assert tree(tmp_path) == reference
    again = export_dataset(config, SPEC, tmp_path, OPTIONS)
    assert not again.written and again.manifest is not None


def test_full_disk_names_the_file_and_leaves_no_manifest(config: TaskConfig, reference: dict[str, str],
                                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = open
    writes = []

    def fill_up(path: os.PathLike[str], mode: str = "r", *args: object, **kwargs: object):  # noqa: ANN202
        if "w" in mode:
            writes.append(path)
            if len(writes) == 7:
                raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(atomic, "open", fill_up, raising=False)
    with pytest.raises(OSError) as error:
        export_dataset(config, SPEC, tmp_path, OPTIONS)
    assert error.value.errno == errno.ENOSPC
    assert error.value.filename.startswith(str(tmp_path)) and ".tmp-" not in error.value.filename
    assert not (tmp_path / MANIFEST_NAME).exists()
    assert not [p for p in tmp_path.rglob("*") if atomic.is_temp_file(p)]
    monkeypatch.undo()
    export_dataset(config, SPEC, tmp_path, OPTIONS)
    assert tree(tmp_path) == reference


def test_verify_names_a_flipped_byte(config: TaskConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    export_dataset(config, SPEC, tmp_path, OPTIONS)
    assert verify_export(tmp_path).ok
    assert main(["verify", str(tmp_path)]) == 0
    victim = tmp_path / "train/00000003_input.png"
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0x01
    victim.write_bytes(bytes(data))
    (tmp_path / "val_id/00000001_target.png").unlink()
    report = verify_export(tmp_path)
    assert [(p.path, p.message.split(" ")[0]) for p in report.problems] == [
        ("train/00000003_input.png", "SHA-256"), ("val_id/00000001_target.png", "missing"),
    ]
    assert verify_export(tmp_path, checksums=False).problems[0].path == "val_id/00000001_target.png"
    capsys.readouterr()
    assert main(["verify", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"{victim}: SHA-256 differs" in err and "00000001_target.png: missing" in err


def test_verify_catches_a_wrong_count(config: TaskConfig, tmp_path: Path) -> None:
    export_dataset(config, SPEC, tmp_path, OPTIONS)
    manifest = read_manifest(tmp_path)
    manifest["splits"]["train"]["count"] = 10
    write_manifest(tmp_path, manifest)
    assert [str(p) for p in verify_export(tmp_path).problems] == ["train: 9 samples, the manifest says 10"]


def test_manifest_from_another_version_is_refused(config: TaskConfig, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    export_dataset(config, SPEC, tmp_path, OPTIONS)
    manifest = json.loads((tmp_path / MANIFEST_NAME).read_text())
    manifest["format_version"] = 99
    (tmp_path / MANIFEST_NAME).write_text(json.dumps(manifest))
    with pytest.raises(ManifestError, match="export format version 99"):
        export_dataset(config, SPEC, tmp_path, OPTIONS)
    assert main(["verify", str(tmp_path)]) == 2
    assert "manifest.json: export format version 99" in capsys.readouterr().err


def test_other_settings_into_the_same_directory_are_refused(config: TaskConfig, tmp_path: Path) -> None:
    export_dataset(config, SPEC, tmp_path, OPTIONS)
    with pytest.raises(ManifestError, match="already holds an export with other settings"):
        export_dataset(config, RenderSpec(size=(32, 32)), tmp_path, OPTIONS)
    (tmp_path / MANIFEST_NAME).unlink()
    with pytest.raises(DataError, match="is not empty and holds no export"):
        export_dataset(config, SPEC, tmp_path, OPTIONS)
    other = tmp_path / "other"
    with pytest.raises(KeyboardInterrupt):
        export_dataset(config, SPEC, other, OPTIONS, on_shard_done=interrupt)
    with pytest.raises(DataError, match="holds another export in progress"):
        export_dataset(config, SPEC, other, ExportOptions(format="folder", shard_size=5))


def test_bad_options_are_user_errors() -> None:
    with pytest.raises(DataError, match="need an image format"):
        ExportOptions(format="grids", masks=True)
    with pytest.raises(DataError, match="unknown image format 'gif'"):
        ExportOptions(format="folder", image_format="gif")
    with pytest.raises(Exception, match="did you mean 'parquet'"):
        ExportOptions(format="parqet")


def test_grids_export_full_disk_leaves_nothing(config: TaskConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from vision_bench.tasks import formats

    def half_written(samples: object, path: Path) -> int:
        Path(path).write_bytes(b"PAR1")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(formats, "write_parquet", half_written)
    with pytest.raises(OSError) as error:
        export_dataset(config, SPEC, tmp_path, ExportOptions(format="grids"))
    assert error.value.filename == str(tmp_path / "train/part-00000.parquet")
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == ["export.json"]
    out = tmp_path / "cli"
    assert main(["export", "--study", "envgen/G1/1", "--n-train", "2", "--out", str(out)]) == 2
    assert f"No space left on device: {out / 'train/part-00000.parquet'}" in capsys.readouterr().err
    assert not (out / MANIFEST_NAME).exists()


def test_export_and_verify_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "g1"
    common = ["export", "--study", "envgen/G1/1", "--out", str(out), "--n-train", "5", "--n-val", "1",
              "--n-test", "1", "--size", "16", "16", "--format", "webdataset", "--shard-size", "2"]
    assert main([*common, "--num-shards", "2", "--shard-index", "1"]) == 0
    assert "shard(s) of other runs are not finished yet" in capsys.readouterr().out
    assert main([*common, "--num-shards", "2", "--shard-index", "0"]) == 0
    assert "manifest.json: written" in capsys.readouterr().out
    assert main(["verify", str(out)]) == 0
    assert "samples: train 5, val_id 1, val_ood 1, test_id 1, test_ood 1" in capsys.readouterr().out
    manifest = read_manifest(out)
    assert manifest["settings"]["render_spec"]["size"] == [16, 16] and manifest["splits"]["train"]["shards"] == 3
    assert main([*common, "--num-shards", "2", "--shard-index", "2"]) == 2
    assert "--shard-index must be in 0..1" in capsys.readouterr().err
    assert main([*common[:-2], "--masks", "--format", "grids"]) == 2
    assert "need an image format" in capsys.readouterr().err
    assert main(["verify", str(tmp_path)]) == 2
    assert "no manifest" in capsys.readouterr().err


@pytest.mark.slow  # an export in a subprocess, killed and resumed
def test_kill_9_mid_export_then_resume(reference: dict[str, str], tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "killed"
    command = [sys.executable, "-m", "vision_bench", "export", "--study", "compgen/C1/1", "--n-train", "9",
               "--n-val", "2", "--n-test", "1", "--seed", "3", "--size", "24", "24", "--background", "random",
               "--format", "folder", "--frames", "--masks", "--shard-size", "4", "--out", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first_marker = out / PROGRESS_DIR / "train-00000.json"
    while not first_marker.exists() and process.poll() is None:
        time.sleep(0.002)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (out / MANIFEST_NAME).exists()
    assert main(command[3:]) == 0
    assert tree(out) == reference
