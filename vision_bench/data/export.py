"""Generate, render and write a dataset in one pass: sharded, parallel, resumable, verifiable.

The export is a set of shards (fixed index ranges per split, see `shards`). One worker writes a
shard: its files go through temporary names and renames, then a progress marker
(`_progress/{shard}.json`) records their SHA-256 and sizes. A shard whose record exists and whose
files still have the recorded sizes is complete and skipped on a re-run. Whoever finds every shard
complete (the end of a single run, or any run of a sharded export) writes the `parquet` format's
dataset card (`README.md`, see `hf_card`), then `manifest.json` from the records, last, then
removes the markers and every file the manifest does not list (temporary files a killed run left).
A manifest therefore never describes an unfinished file, and the union of sharded runs plus the
manifest is byte-identical to a single-machine export. Re-running a finished export rewrites a lost,
unreadable or mis-configured card (one the user edited otherwise is kept) and removes the files the manifest
does not list, which `verify` reports. The card's `license` and `citation` (`hf_card.CardOptions`) are recorded
in the manifest beside the settings, not in them: they do not change the export's fingerprint.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from render.spec import RenderSpec
from vision_bench.data import sources
from vision_bench.data.export_formats import FORMATS, ExportOptions
from vision_bench.data.hf_card import OPTIONS_KEY, CardOptions, repair_card, write_card
from vision_bench.data.manifest import (
    FORMAT_VERSION,
    MANIFEST_KIND,
    MANIFEST_NAME,
    FileRecord,
    canonical_json,
    digest_file,
    fingerprint,
    library_versions,
    read_manifest,
    shard_file_records,
    write_manifest,
)
from vision_bench.data.shards import Shard, plan_shards, select_shards
from vision_bench.data.verify import unlisted_files
from vision_bench.errors import DataError, ManifestError
from vision_bench.io.atomic import atomic_write_text, is_temp_file
from vision_bench.io.pool import run_tasks
from vision_bench.tasks.config import TaskConfig

PROGRESS_DIR = "_progress"
CLAIM_NAME = "export.json"
Records = dict[str, FileRecord]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ShardJob:
    """One shard to write, in picklable form for spawned worker processes."""

    root: str
    settings: dict[str, Any]
    fingerprint: str
    shard: Shard


@dataclass
class ExportResult:
    root: Path
    written: list[Shard] = field(default_factory=list)
    skipped: list[Shard] = field(default_factory=list)
    incomplete: int = 0
    manifest: Path | None = None


def export_shard(job: ShardJob) -> Shard:
    """Generate, render and write one shard, then mark it complete (runs in a worker process)."""
    root = Path(job.root)
    options = ExportOptions(**job.settings["options"])
    config = sources.config_from_dict(job.settings["config"])
    context = options.context(RenderSpec.from_dict(job.settings["render_spec"]))
    samples = sources.generate(config, job.shard.split, job.shard.start, job.shard.stop)
    files = FORMATS[options.format].module().write_shard(root, job.shard, samples, context)
    _write_marker(root, job.shard, job.fingerprint, files)
    return job.shard


def _marker_path(root: Path, shard: Shard) -> Path:
    return root / PROGRESS_DIR / f"{shard.name}.json"


def _write_marker(root: Path, shard: Shard, expected_fingerprint: str, files: Mapping[str, FileRecord]) -> None:
    marker = {
        "fingerprint": expected_fingerprint,
        "shard": _shard_entry(shard, files),
    }
    atomic_write_text(_marker_path(root, shard), canonical_json(marker), fsync=True)


def _shard_entry(shard: Shard, files: Mapping[str, FileRecord]) -> dict[str, Any]:
    return {
        "split": shard.split,
        "start": shard.start,
        "stop": shard.stop,
        "files": {name: record.to_dict() for name, record in sorted(files.items())},
    }


def _read_marker(root: Path, shard: Shard, expected_fingerprint: str) -> Records | None:
    """The shard's recorded files, None without a (readable) marker; another export's marker is an error."""
    path = _marker_path(root, shard)
    try:
        marker = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if marker.get("fingerprint") != expected_fingerprint:
        raise DataError(
            f"{path}: {root} holds another export in progress (other settings); "
            "use another --out directory or delete this one"
        )
    return {name: FileRecord.from_dict(record) for name, record in marker["shard"]["files"].items()}


def _is_complete(root: Path, records: Records | None) -> bool:
    """Recorded, and every recorded file present with its recorded size and SHA-256 (damage that
    keeps a file's size is found too, so a re-run rewrites that shard)."""
    if not records:
        return False
    for name, record in records.items():
        path = root / name
        if not path.is_file() or path.stat().st_size != record.size or digest_file(path).sha256 != record.sha256:
            return False
    return True


def _finished_records(root: Path, expected_fingerprint: str) -> dict[str, Records] | None:
    """Per-shard records of a finished export with the same settings; None without a manifest."""
    if not (root / MANIFEST_NAME).is_file():
        return None
    manifest = read_manifest(root)
    if manifest.get("fingerprint") != expected_fingerprint:
        raise ManifestError(
            f"{root / MANIFEST_NAME}: {root} already holds an export with other settings; "
            "use another --out directory or delete this one"
        )
    return shard_file_records(manifest)


def _claim(root: Path, settings: dict[str, Any], expected_fingerprint: str, finished: bool) -> None:
    """Mark `root` as holding this export in progress, or refuse a directory that holds something else.

    The claim (`_progress/export.json`, written before any data file) is what lets a re-run after
    `kill -9` tell its own half-written files from a foreign directory's.
    """
    path = root / PROGRESS_DIR / CLAIM_NAME
    if path.parent.is_symlink() or path.is_symlink():
        raise DataError(
            f"{path.parent if path.parent.is_symlink() else path} is a symbolic link, which an export never makes; "
            "remove it (or use another --out directory) and re-run"
        )
    if path.is_file():
        try:
            claimed = json.loads(path.read_text(encoding="utf-8")).get("fingerprint")
        except (UnicodeDecodeError, json.JSONDecodeError):
            claimed = None
        if claimed == expected_fingerprint:
            return
        if not _holds_only_a_failed_start(root, path):
            raise DataError(
                f"{path}: {root} holds another export in progress (other settings); "
                "use another --out directory or delete this one"
            )
    if not finished and any(entry.name != PROGRESS_DIR for entry in root.iterdir()):
        raise DataError(
            f"{root} is not empty and holds no export (no {MANIFEST_NAME}, no {PROGRESS_DIR}/{CLAIM_NAME}); "
            "choose an empty or new --out directory"
        )
    path.parent.mkdir(exist_ok=True)
    atomic_write_text(path, canonical_json({"fingerprint": expected_fingerprint, "settings": settings}), fsync=True)


def _holds_only_a_failed_start(root: Path, claim: Path) -> bool:
    """True when `root` holds nothing but a claim (and temporary files): an export that failed
    before finishing any file, which a corrected command may take over."""
    return all(p == claim or (p.is_dir() and not p.is_symlink()) or is_temp_file(p) for p in root.rglob("*"))


def settings_of(config: TaskConfig, spec: RenderSpec, options: ExportOptions) -> dict[str, Any]:
    """The full settings of an export, as stored in its manifest and hashed into its fingerprint."""
    return {
        "format": options.format,
        "config": sources.config_to_dict(config),
        "render_spec": spec.to_dict(),
        "options": asdict(options),
    }


def _write_final_manifest(root: Path, settings: dict[str, Any], expected_fingerprint: str,
                          records: Mapping[Shard, Records], counts: Mapping[str, int], card: CardOptions) -> Path:
    """The dataset card (parquet), then the manifest from every shard's record; then drop the markers
    and stray temporary files.

    Two runs finishing together both get here with the same records and write the same bytes.
    """
    shards = list(records)
    manifest = {
        "kind": MANIFEST_KIND,
        "format_version": FORMAT_VERSION,
        "format": settings["format"],
        "fingerprint": expected_fingerprint,
        "settings": settings,
        "versions": library_versions(),
        "splits": {
            split: {"count": count, "shards": sum(1 for shard in shards if shard.split == split)}
            for split, count in counts.items()
        },
        "shards": {shard.name: _shard_entry(shard, files) for shard, files in records.items()},
        **({OPTIONS_KEY: card.to_dict()} if card.to_dict() else {}),
    }
    manifest.update(write_card(root, manifest))
    path = write_manifest(root, manifest)
    shutil.rmtree(root / PROGRESS_DIR, ignore_errors=True)
    _remove_unlisted(root, manifest)
    return path


def _remove_unlisted(root: Path, manifest: Mapping[str, Any]) -> None:
    """Remove the files the manifest does not list (temporary files a killed run left, a stray file),
    exactly those `verify` reports, so that the re-run it recommends leaves an export that verifies."""
    names = unlisted_files(root, manifest)
    for name in names:
        (root / name).unlink(missing_ok=True)
    if names:
        logger.info("%s: removed %d file(s) the manifest does not list: %s", root, len(names), ", ".join(names))


def _withdraw_manifest(root: Path, records: Mapping[Shard, Records | None], complete: set[Shard],
                       expected_fingerprint: str) -> None:
    """A finished export lost files: keep its complete shards as markers, then remove the manifest."""
    for shard in complete:
        if not _marker_path(root, shard).is_file():
            _write_marker(root, shard, expected_fingerprint, records[shard] or {})
    (root / MANIFEST_NAME).unlink()


def export_dataset(
    config: TaskConfig,
    spec: RenderSpec,
    out: str | Path,
    options: ExportOptions | None = None,
    *,
    workers: int = 1,
    num_shards: int = 1,
    shard_index: int = 0,
    on_shard_done: Callable[[Shard], None] | None = None,
    on_plan: Callable[[list[Shard]], None] | None = None,
    card: CardOptions | None = None,
) -> ExportResult:
    """Export `config` rendered with `spec` into `out`; the same call again resumes or confirms it.

    `num_shards` / `shard_index` pick this run's share of the shards (for many machines);
    `workers` local processes write them. The manifest is written once every shard is complete.
    `on_plan` hears once which shards this run will write (a progress bar's total), `on_shard_done`
    each one as it is finished. `card`: the license and citation of the dataset card (formats that write one).
    """
    options = options or ExportOptions()
    card = card or CardOptions()
    if workers < 1:
        raise DataError(f"--workers must be at least 1, got {workers}")
    card.check_format(options.format)
    root = Path(out)
    counts = sources.split_counts(config)
    shards = plan_shards(counts, options.shard_size)
    mine = select_shards(shards, num_shards, shard_index)
    settings = settings_of(config, spec, options)
    expected = fingerprint(settings)
    root.mkdir(parents=True, exist_ok=True)
    finished = _finished_records(root, expected)
    records = {s: _read_marker(root, s, expected) or (finished or {}).get(s.name) for s in shards}
    complete = {s for s in shards if _is_complete(root, records[s])}
    if finished is not None and len(complete) == len(shards):
        repair_card(root, read_manifest(root), card)
        _remove_unlisted(root, read_manifest(root))  # read again: the repair may have recorded a new card
        return ExportResult(root, skipped=mine, manifest=root / MANIFEST_NAME)
    _claim(root, settings, expected, finished is not None)
    if finished is not None:
        _withdraw_manifest(root, records, complete, expected)
    result = ExportResult(root, skipped=[s for s in mine if s in complete])
    jobs = [ShardJob(str(root), settings, expected, s) for s in mine if s not in complete]
    if on_plan is not None:
        on_plan([job.shard for job in jobs])
    for shard in run_tasks(export_shard, jobs, workers):
        result.written.append(shard)
        if on_shard_done is not None:
            on_shard_done(shard)
    position = {shard: number for number, shard in enumerate(shards)}  # list.index would be quadratic
    result.written.sort(key=position.__getitem__)
    final = {s: _read_marker(root, s, expected) for s in shards}
    result.incomplete = sum(1 for s in shards if not _is_complete(root, final[s]))
    if result.incomplete == 0:
        complete_records = {s: final[s] or {} for s in shards}
        result.manifest = _write_final_manifest(root, settings, expected, complete_records, counts, card)
    elif _finished_records(root, expected) is not None:
        result.incomplete, result.manifest = 0, root / MANIFEST_NAME
    return result


__all__ = ["ExportResult", "export_dataset", "export_shard", "settings_of"]
