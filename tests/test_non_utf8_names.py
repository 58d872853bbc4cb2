"""File and folder names that are not valid UTF-8 (bytes such as 0xff, which Python carries as
surrogate escapes) work end to end, and printing them never fails, whatever stdout's encoding."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest

from vision_bench.cli import main

pytestmark = pytest.mark.skipif(sys.platform == "win32" or os.fsencode("x") != b"x",
                                reason="needs byte file names (POSIX)")

SMALL = ["--n-train", "2", "--n-val", "1", "--n-test", "1"]


def odd(parent: Path, stem: bytes) -> Path:
    return parent / os.fsdecode(stem)


def test_generate_and_export_into_a_non_utf8_folder(tmp_path: Path) -> None:
    tasks = odd(tmp_path, b"out\xff")
    assert main(["generate", "--study", "envgen/G1/1", "--out", str(tasks), *SMALL]) == 0
    assert (tasks / "train.parquet").is_file()
    export = odd(tmp_path, b"data\xfe")
    assert main(["export", "--study", "envgen/G1/1", "--format", "grids", "--out", str(export), *SMALL]) == 0
    assert main(["verify", str(export)]) == 0
    assert main(["render", str(tasks / "train.parquet"), "--out", str(odd(tmp_path, b"img\xff"))]) == 0


def test_show_titles_a_non_utf8_task_name(tmp_path: Path) -> None:
    folder = tmp_path / "arc"
    folder.mkdir()
    odd(folder, b"task\xff\xfe.json").write_text(json.dumps({"train": [{"input": [[1]], "output": [[2]]}],
                                                            "test": []}))
    assert main(["show", str(folder), "--out", str(tmp_path / "sheet.png")]) == 0
    assert (tmp_path / "sheet.png").stat().st_size > 0


def test_a_strict_ascii_stdout_does_not_fail_after_the_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    strict = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="strict")
    monkeypatch.setattr(sys, "stdout", strict)
    source = tmp_path / "task.json"
    source.write_text(json.dumps({"train": [{"input": [[1]], "output": [[2]]}], "test": []}))
    out = odd(tmp_path, "imagés\udcff".encode("utf-8", "surrogateescape"))
    assert main(["render", str(source), "--out", str(out)]) == 0
    strict.flush()
    assert b"\\udcff" in strict.buffer.getvalue() or b"\\xff" in strict.buffer.getvalue()
