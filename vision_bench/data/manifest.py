"""`manifest.json`: what an export contains (settings, versions, counts) and every file's SHA-256.

The manifest is written last, atomically, once every shard's files are complete, so a manifest that
exists never lies about files that an interrupted run did not finish. Its JSON is canonical (sorted
keys, no timestamps), so the same export made on one machine or as shards on many is byte-identical.
"""

from __future__ import annotations

import hashlib
import json
import platform
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from vision_bench import __version__
from vision_bench.data.names import check_relative_path
from vision_bench.errors import ManifestError
from vision_bench.io.atomic import atomic_write_text
from vision_bench.io.documents import JSONDict

MANIFEST_NAME = "manifest.json"
MANIFEST_KIND = "vision-bench export"
FORMAT_VERSION = 1
_HASH_CHUNK = 1 << 20
_RECORDED_PACKAGES = ("numpy", "pyarrow", "pillow", "opencv-python-headless")


@dataclass(frozen=True)
class FileRecord:
    """A file's SHA-256 (hex) and size in bytes."""

    sha256: str
    size: int

    def to_dict(self) -> JSONDict:
        return {"sha256": self.sha256, "size": self.size}

    @classmethod
    def from_dict(cls, data: JSONDict) -> FileRecord:
        return cls(str(data["sha256"]), int(data["size"]))


def digest_bytes(data: bytes) -> FileRecord:
    return FileRecord(hashlib.sha256(data).hexdigest(), len(data))


def digest_file(path: str | Path) -> FileRecord:
    """Hash a file in 1 MiB chunks (constant memory for multi-gigabyte shards)."""
    sha = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            sha.update(chunk)
            size += len(chunk)
    return FileRecord(sha.hexdigest(), size)


def canonical_json(data: Any) -> str:
    """Sorted keys and fixed separators: equal data gives equal bytes."""
    return json.dumps(data, sort_keys=True, indent=1, ensure_ascii=True) + "\n"


def fingerprint(settings: JSONDict) -> str:
    """SHA-256 of the canonical JSON of everything that decides an export's bytes."""
    return hashlib.sha256(canonical_json(dict(settings)).encode()).hexdigest()


def library_versions() -> dict[str, str]:
    """Versions of Python and of the libraries whose output bytes an export depends on."""
    versions = {"vision-bench": __version__, "python": platform.python_version()}
    for package in _RECORDED_PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "absent"
    return versions


def write_manifest(root: str | Path, manifest: JSONDict) -> Path:
    path = Path(root) / MANIFEST_NAME
    atomic_write_text(path, canonical_json(dict(manifest)), fsync=True)
    return path


DAMAGED_FIX = ("the manifest is damaged, and a re-run cannot repair it (it holds every file's checksum): delete {root} "
               "and run the `vision-bench export` command again")


def read_manifest(root: str | Path) -> JSONDict:
    """Load and check `root/manifest.json`: kind, format version and the fields readers rely on."""
    path = Path(root) / MANIFEST_NAME
    if not path.is_file():
        raise ManifestError(
            f"{path}: no manifest; the export is incomplete or this is not an export directory "
            "(re-run the same `vision-bench export` command to finish it)"
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ManifestError(f"{path}: not valid JSON ({error}); {DAMAGED_FIX.format(root=path.parent)}") from None
    if not isinstance(manifest, dict) or manifest.get("kind") != MANIFEST_KIND:
        raise ManifestError(f"{path}: not a vision-bench export manifest (no kind {MANIFEST_KIND!r}); give a folder "
                            "written by `vision-bench export`")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise ManifestError(
            f"{path}: export format version {version!r}, but this vision-bench ({__version__}) reads "
            f"version {FORMAT_VERSION}; re-export the data with this version"
        )
    missing = [key for key in ("format", "splits", "shards", "settings") if key not in manifest]
    if missing:
        raise ManifestError(f"{path}: missing field(s) {', '.join(missing)}; {DAMAGED_FIX.format(root=path.parent)}")
    try:
        _ManifestLayout.model_validate(manifest)
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise ManifestError(f"{path}: {where}: {problem['msg']}; {DAMAGED_FIX.format(root=path.parent)}") from None
    return manifest


class _FileEntry(BaseModel):
    size: int = Field(ge=0)
    sha256: str = Field(pattern="^[0-9a-f]{64}$")


class _ShardEntry(BaseModel):
    split: str = Field(pattern=r"^[A-Za-z0-9_-]+$")
    start: int = Field(ge=0)
    stop: int = Field(ge=0)
    files: dict[str, _FileEntry]


class _SplitEntry(BaseModel):
    count: int = Field(ge=0)
    shards: int = Field(ge=0)


class _ManifestLayout(BaseModel):
    """The parts of a manifest that `verify`, resumes and readers rely on (other keys are free)."""

    format: str
    splits: dict[str, _SplitEntry]
    shards: dict[str, _ShardEntry]
    settings: dict[str, object]
    documents: dict[str, _FileEntry] = Field(default_factory=dict)


def shard_file_records(manifest: Mapping[str, Any]) -> dict[str, dict[str, FileRecord]]:
    """Shard name -> {file name -> record}, as listed under the manifest's `shards`; every file name
    is checked to be a relative path inside the export before anything opens it."""
    return {
        shard: {check_relative_path(name, "file name", MANIFEST_NAME): FileRecord.from_dict(record)
                for name, record in entry["files"].items()}
        for shard, entry in manifest["shards"].items()
    }


def document_records(manifest: Mapping[str, Any]) -> dict[str, FileRecord]:
    """Files that describe the export rather than hold samples (the `parquet` format's dataset card)."""
    return {check_relative_path(name, "file name", MANIFEST_NAME): FileRecord.from_dict(record)
            for name, record in manifest.get("documents", {}).items()}


def file_records(manifest: Mapping[str, Any]) -> dict[str, FileRecord]:
    """Every file of the export (relative path -> record): the shards' files and the documents."""
    shard_files = {name: record for files in shard_file_records(manifest).values() for name, record in files.items()}
    return {**shard_files, **document_records(manifest)}


__all__ = [
    "FORMAT_VERSION",
    "MANIFEST_KIND",
    "MANIFEST_NAME",
    "FileRecord",
    "canonical_json",
    "digest_bytes",
    "digest_file",
    "document_records",
    "file_records",
    "fingerprint",
    "library_versions",
    "read_manifest",
    "shard_file_records",
    "write_manifest",
]
