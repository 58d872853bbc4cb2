"""`open_dataset`: one call from "where the data is" to a torch Dataset of one split.

The source may be an export directory (its `manifest.json` names the format), a folder of image
pairs made elsewhere (SVIB episodes or `*_input.png` / `*_target.png`), a Hugging Face dataset
(`hf://ID_OR_FOLDER`, or a local folder it recognises, see `hf_datasets`), WebDataset shards
streamed from a pattern, URL or `pipe:` command (see `shard_stream`), a task config (a YAML file or
a `TaskConfig`) or a study id; the last two generate and render samples on the fly.

A source read back from a file (a run's checkpoint) was chosen by whoever wrote the file, not by the
user: `check_stored_source` refuses one that would run a command or open a URL unless the user trusts
it (`--trust-stored-data`) or names it again (`--data`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sized
from pathlib import Path

from torch.utils.data import Dataset

from render.spec import RenderSpec
from vision_bench.data import sources
from vision_bench.data.export_formats import open_export
from vision_bench.data.external import READ_AS_STORED, ReadOptions, source_split
from vision_bench.data.hf_datasets import is_hf_source, is_local_hf_source, looks_like_hf_folder, open_hf_dataset
from vision_bench.data.hf_streaming import open_hf_stream
from vision_bench.data.holdout import HELD_OUT_SPLIT, TRAIN_SPLIT, refuse_holdout
from vision_bench.data.imports import looks_like_svib, open_pair_folder, open_svib
from vision_bench.data.manifest import MANIFEST_NAME
from vision_bench.data.onthefly import OnTheFlyDataset
from vision_bench.data.remote_files import URL_MARK
from vision_bench.data.shard_stream import PIPE_PREFIX, SPLIT_PLACEHOLDER, expand_braces, looks_like_shards
from vision_bench.data.streaming import open_shard_stream
from vision_bench.errors import ConfigError, DataError, UnknownNameError
from vision_bench.tasks.config import SPLITS, TaskConfig

_YAML_SUFFIXES = (".yaml", ".yml")
_COLLAPSED_URL = re.compile(r"^(https?|s3|gs|memory):/(?!/)")  # what pathlib makes of http:// (hf:/ is hf_datasets')
TRUST_FLAG = "--trust-stored-data"


ShardPatterns = Mapping[str, str]
"""A WebDataset shard pattern per split (`dataset.path: {train: ..., val_id: ...}`)."""


def open_dataset(
    source: str | Path | TaskConfig | ShardPatterns,
    split: str,
    spec: RenderSpec | None = None,
    *,
    length: int | None = None,
    render_on: str = "cpu",
    n_train: int | None = None,
    n_val: int | None = None,
    n_test: int | None = None,
    seed: int | None = None,
    read: ReadOptions = READ_AS_STORED,
) -> Dataset:
    """The Dataset of `split` from an export, an image folder, a Hugging Face dataset, WebDataset
    shards, a config or a study id.

    `spec` defaults to the export's own spec (exports), the stored images' size (data made
    elsewhere) or `RenderSpec()` (on the fly); `length`, the counts and `seed` apply to on-the-fly
    sources only; `render_on="device"` leaves images to `to_device_batch` on the training device.
    `read` says how data made elsewhere is read (`external.ReadOptions`: which columns / fields hold `input`
    and `target`, our split names -> the source's, what becomes of images that are not the models' square).
    A mapping split -> shard pattern gives each split its own shards.
    """
    if isinstance(source, TaskConfig):
        config = sources.with_overrides(source, n_train=n_train, n_val=n_val, n_test=n_test, seed=seed)
        return OnTheFlyDataset(config, split, spec, length, render_on=render_on)
    if isinstance(source, Mapping):
        return open_shard_stream(source, split, spec, read)
    text = _COLLAPSED_URL.sub(r"\1://", str(source))
    if looks_like_shards(text):  # before hf://, so that hf://datasets/user/name/{split}-{0..3}.tar streams shards
        return open_shard_stream(text, split, spec, read)
    if is_hf_source(text):
        return _open_hf(text, split, spec, read)
    path = Path(source)
    if path.is_dir():
        return _open_folder(path, split, spec, read, render_on=render_on)
    if path.suffix in _YAML_SUFFIXES:
        config = sources.load_config(config_path=path, n_train=n_train, n_val=n_val, n_test=n_test, seed=seed)
        return OnTheFlyDataset(config, split, spec, length, render_on=render_on)
    try:
        config = sources.load_config(text, n_train=n_train, n_val=n_val, n_test=n_test, seed=seed)
    except UnknownNameError:
        if _names_a_study_family(text):
            raise
        raise DataError(f"{text}: no such file or folder, nor a study id; give an export folder, an image folder, "
                        "hf://ID, a shard pattern (.tar), a task-config YAML file or a study id") from None
    return OnTheFlyDataset(config, split, spec, length, render_on=render_on)


def outside_source(source: str | ShardPatterns, splits: Mapping[str, str] | None = None) -> str | None:
    """What reading `source` would start: 'a shell command', 'a URL' or 'a Hugging Face Hub id'; None for
    local data. Judged on every address the source can become, as the shard reader makes them (`{split}`
    filled in with each split's name in `splits`, braces expanded), and on its text: a command or URL
    anywhere in it counts, so no spelling such as `{pi,pi}pe:` or a split named `pipe:` slips through.
    Shard patterns per split: the first of theirs that is not local."""
    if isinstance(source, Mapping):
        return next(filter(None, (outside_source(pattern, splits) for pattern in source.values())), None)
    text = _COLLAPSED_URL.sub(r"\1://", source)
    if is_hf_source(text):
        return None if is_local_hf_source(text) else "a Hugging Face Hub id"
    names = {source_split(split, splits) for split in SPLITS} | set((splits or {}).values())
    patterns = [text, *(text.replace(SPLIT_PLACEHOLDER, name) for name in names)]
    addresses = list(patterns)
    for pattern in patterns:
        try:
            addresses.extend(expand_braces(pattern))
        except DataError:  # the reader refuses this pattern before it opens anything
            pass
    if any(PIPE_PREFIX in address for address in addresses):
        return "a shell command"
    if any(URL_MARK in address for address in addresses):
        return "a URL"
    return None


def check_stored_source(source: str | ShardPatterns | None, stored_in: str, *, splits: Mapping[str, str] | None = None,
                        trusted: bool = False) -> None:
    """Refuse, before anything runs, a data source read back from `stored_in` (a file the user did not write,
    such as a run's checkpoint) that would run a command or open a URL, unless the user trusts it; `splits`
    is the stored mapping of split names that the reader puts into the source's `{split}`."""
    kind = None if trusted or source is None else outside_source(source, splits)
    if kind is not None:
        raise ConfigError(
            f"{stored_in} names the data source {source!r}, {kind}, which vision-bench never runs or fetches "
            f"because a stored file names it (whoever wrote the file chose it); if you trust it, pass {TRUST_FLAG}, "
            "or name the source yourself with --data"
        )


def _open_folder(path: Path, split: str, spec: RenderSpec | None, options: ReadOptions, *, render_on: str) -> Dataset:
    """An export, SVIB episodes, `*_input.png` / `*_target.png` pairs or a Hugging Face dataset folder."""
    keep = options.key_filter(split)
    if (path / MANIFEST_NAME).is_file():
        if keep is not None:
            raise refuse_holdout(str(path), HELD_OUT_SPLIT)  # every export has one
        return open_export(path, split, spec, render_on=render_on)
    read = split if keep is None else TRAIN_SPLIT
    folder = path / read if (path / read).is_dir() else path
    own = options.own_validation(sub.name for sub in sorted(path.iterdir()) if sub.is_dir())
    if keep is not None and own and not looks_like_hf_folder(path):
        raise refuse_holdout(str(path), own[0])
    if looks_like_svib(folder):
        return open_svib(folder, split, spec=spec, resize=options.resize, keep=keep)
    if any(folder.glob("*_input.*")):
        return open_pair_folder(folder, split, spec=spec, resize=options.resize, keep=keep)
    if looks_like_hf_folder(path):
        return _open_hf(str(path), split, spec, options)
    raise DataError(
        f"{path}: not an export (no {MANIFEST_NAME}), nor SVIB episodes, nor *_input.png / *_target.png "
        "pairs, nor a Hugging Face dataset; finish the export (re-run it) or point at the data folder"
    )


def _open_hf(source: str, split: str, spec: RenderSpec | None, read: ReadOptions) -> Dataset:
    """A Hugging Face dataset's split, streamed when `read.streaming` says so."""
    return (open_hf_stream if read.streaming else open_hf_dataset)(source, split, spec, read)


def _names_a_study_family(name: str) -> bool:
    """Does `name` start like a study id (`compgen/...`), so that a close match is the better help?"""
    from vision_bench.tasks.studies import STUDIES

    return name.split("/")[0] in {study.split("/")[0] for study in STUDIES.names()}


def dataset_length(dataset: Dataset) -> int:
    """The sample count of a dataset that has one (torch's `Dataset` type does not declare `__len__`)."""
    assert isinstance(dataset, Sized)
    return len(dataset)


__all__ = ["TRUST_FLAG", "ShardPatterns", "check_stored_source", "dataset_length", "open_dataset", "outside_source"]
