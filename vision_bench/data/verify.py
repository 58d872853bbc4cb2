"""Check an export against its manifest: every file present, unchanged, and the sample counts right.

Each problem names its file, so a damaged shard can be deleted and re-made by running the same
`vision-bench export` command again (it redoes only the shards whose files are missing or wrong, and
removes the files the manifest does not list).

The data files are checked byte for byte; the documents that describe them (the `parquet` export's dataset
card) only for what the data needs of them (`hf_card.card_problem`: the card's `configs` keep the splits apart
as written), since a user may edit a card: add a license, a citation, prose.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vision_bench.data.export_formats import FORMATS
from vision_bench.data.hf_card import CARD_NAME, card_problem
from vision_bench.data.manifest import (
    MANIFEST_NAME,
    FileRecord,
    digest_file,
    document_records,
    file_records,
    read_manifest,
)
from vision_bench.errors import DataError
from vision_bench.tasks.config import SPLITS


@dataclass(frozen=True)
class Problem:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass
class VerifyReport:
    root: Path
    n_files: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _check_file(root: Path, name: str, expected: FileRecord, checksums: bool) -> str | None:
    path = root / name
    if not path.is_file():
        return "missing"
    size = path.stat().st_size
    if size != expected.size:
        return f"{size} bytes, the manifest says {expected.size} (truncated or replaced)"
    if checksums and digest_file(path).sha256 != expected.sha256:
        return "SHA-256 differs from the manifest (the file is damaged)"
    return None


def unlisted_files(root: Path, manifest: Mapping[str, Any]) -> list[str]:
    """The files under `root` that its manifest does not list (relative paths): what `verify` reports as
    left over, and what a re-run of `export` removes."""
    on_disk = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    return sorted(on_disk - set(file_records(manifest)) - {MANIFEST_NAME})


def _split_rank(split: str) -> tuple[int, str]:
    """Known splits in their usual order (train, val_id, ...), others after them by name."""
    return (SPLITS.index(split) if split in SPLITS else len(SPLITS), split)


def verify_export(root: str | Path, *, checksums: bool = True) -> VerifyReport:
    """Compare `root` with its manifest; `checksums=False` checks presence and sizes only (fast)."""
    root = Path(root)
    manifest = read_manifest(root)
    records = file_records(manifest)
    report = VerifyReport(root, n_files=len(records))
    documents = document_records(manifest)
    bad: set[str] = set()
    for name in sorted(set(records) - set(documents)):
        message = _check_file(root, name, records[name], checksums)
        if message:
            bad.add(name)
            report.problems.append(Problem(name, message))
    card = card_problem(root, manifest) if CARD_NAME in documents else None
    if card is not None:
        report.problems.append(Problem(CARD_NAME, card))
    for name in unlisted_files(root, manifest):
        report.problems.append(Problem(name, "not in the manifest (left over from another run?)"))
    module = FORMATS[manifest["format"]].module()
    for split, info in sorted(manifest["splits"].items(), key=lambda entry: _split_rank(entry[0])):
        files = sorted(name for name in records if name.startswith(f"{split}/"))
        if bad.intersection(files):
            continue
        try:
            count = module.count_samples(root, split, files)
        except DataError as error:
            report.problems.append(Problem(split, str(error)))
            continue
        report.counts[split] = count
        if count != info["count"]:
            report.problems.append(Problem(split, f"{count} samples, the manifest says {info['count']}"))
    return report


__all__ = ["Problem", "VerifyReport", "unlisted_files", "verify_export"]
