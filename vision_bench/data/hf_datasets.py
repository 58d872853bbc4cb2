"""Hugging Face datasets as torch Datasets: a local folder that `datasets.load_dataset` reads, a
`save_to_disk` folder, or a Hub id (`hf://user/name`, downloaded by `datasets` when online).

`hf://` forces this route for any id or folder; a local folder is also recognised without it when it
is a `save_to_disk` folder or holds Parquet / Arrow files or a dataset card with `configs:`. The
`datasets` package is needed only here and imported on first use.

A local folder is read from local files only: one holding a loading script (which older `datasets`
run) or a card naming remote data files (which `datasets` would fetch) is refused.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import yaml
from torch.utils.data import Dataset

from render.spec import RenderSpec
from vision_bench.data.batch import Item
from vision_bench.data.external import (
    ReadOptions,
    image_fields,
    image_item,
    record_item,
    square_images,
    stored_spec,
)
from vision_bench.data.holdout import refuse_holdout
from vision_bench.data.images import image_tensor, load_image_tensor
from vision_bench.data.remote_files import RetryingReader, is_url
from vision_bench.errors import DataError
from vision_bench.io.extras import require

if TYPE_CHECKING:
    import datasets

HF_PREFIX = "hf://"
_PREFIX = re.compile(r"^hf://?")  # `hf://ID` or `hf:///abs/folder`; also `hf:/ID`, what pathlib makes of `hf://ID`
_SAVED_MARKERS = ("dataset_dict.json", "state.json")
_DATA_SUFFIXES = (".parquet", ".arrow")
_CARD = "README.md"
_CARD_HEADER = re.compile(r"^(\s*---[\r\n]+)([\S\s]*?)([\r\n]+---(\r\n|\n|$))")  # huggingface_hub's


def is_hf_source(source: str) -> bool:
    return _PREFIX.match(source) is not None


def is_local_hf_source(source: str) -> bool:
    """`hf://FOLDER` (a path, or a folder that exists) rather than a Hub id, which is downloaded."""
    name = _PREFIX.sub("", source)
    return name.startswith(("/", ".", "~")) or Path(name).expanduser().is_dir()


def looks_like_hf_folder(folder: Path) -> bool:
    """A `save_to_disk` folder, or one holding Parquet / Arrow files or a card that configures splits."""
    if any((folder / marker).is_file() for marker in _SAVED_MARKERS):
        return True
    card = folder / _CARD
    if card.is_file() and "\nconfigs:" in card.read_text(encoding="utf-8", errors="replace"):
        return True
    near = [*folder.glob("*"), *folder.glob("*/*")]  # the top two levels: a large image tree is not walked
    return any(path.suffix in _DATA_SUFFIXES and path.is_file() for path in near)


@functools.lru_cache(maxsize=4)
def load_splits(source: str, streaming: bool = False) -> Mapping[str, Any]:
    """Split name -> `datasets.Dataset` of a Hub id or local folder (loaded once per process); with `streaming`,
    a `datasets.IterableDataset` read as it is iterated (nothing downloaded or prepared first)."""
    require("datasets", f"{source}: reading Hugging Face datasets")
    import datasets

    name = _PREFIX.sub("", source)
    folder = Path(name).expanduser()
    if name.startswith(("/", ".", "~")) and not folder.is_dir():
        raise DataError(f"{source}: no such folder; give a folder that datasets.load_dataset reads, or a Hub id")
    if folder.is_dir():
        _check_local_only(folder, source)
    saved = folder.is_dir() and any((folder / marker).is_file() for marker in _SAVED_MARKERS)
    if saved and streaming:
        raise DataError(f"{source}: a save_to_disk folder is read from its own files, never streamed; "
                        "drop dataset.streaming")
    try:
        if saved:
            loaded = datasets.load_from_disk(str(folder))
        elif folder.is_dir():
            loaded = datasets.load_dataset(str(folder), streaming=streaming)
        else:
            repo, revision = hub_reference(name)
            loaded = datasets.load_dataset(repo, revision=revision, streaming=streaming)
    except Exception as error:  # datasets raises many types (hub, network, builder, file errors)
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise DataError(f"{source}: cannot be loaded as a Hugging Face dataset ({first_line}); give a Hub id "
                        "(online) or a folder that datasets.load_dataset reads") from None
    if isinstance(loaded, (datasets.Dataset, datasets.IterableDataset)):  # one split
        return {str(loaded.split or "train"): loaded}
    return dict(loaded)


def hub_reference(name: str) -> tuple[str, str | None]:
    """(repository id, revision or None) of a Hub dataset named as `USER/NAME`, `datasets/USER/NAME` (the Hub's
    own `hf://datasets/...` path) or either with `@REVISION` (a branch, tag or commit)."""
    repo, _, revision = name.partition("@")
    repo = repo.removeprefix("datasets/").strip("/")
    return repo, revision or None


def _check_local_only(folder: Path, source: str) -> None:
    """Refuse a folder that would make `datasets` run code (a loading script) or fetch files (a card's remote
    `data_files`): a local dataset is read from its own files."""
    scripts = sorted(path.name for path in folder.glob("*.py"))
    if scripts:
        raise DataError(f"{source}: holds a loading script ({scripts[0]}), which vision-bench never runs; keep the "
                        "data as Parquet / Arrow files (or a save_to_disk folder) and remove the script")
    remote = [name for name in _card_data_files(folder / _CARD) if "://" in name or "::" in name]
    if remote:
        raise DataError(f"{source}: its {_CARD} names remote data files ({remote[0]!r}), which a local folder is not "
                        "read from; download them into the folder and name them by relative path, or give the Hub id")


def _card_data_files(card: Path) -> list[str]:
    """The `data_files` and `data_dir` entries of the `configs:` block of a dataset card's YAML header."""
    if not card.is_file():
        return []
    block = _CARD_HEADER.match(card.read_text(encoding="utf-8", errors="replace"))
    try:
        header = yaml.safe_load(block.group(2)) if block else None
    except yaml.YAMLError:
        return []  # `datasets` refuses the card itself
    configs = header.get("configs") if isinstance(header, dict) else None
    names: list[str] = []
    for config in configs if isinstance(configs, list) else []:
        if isinstance(config, dict):
            names += _strings(config.get("data_dir")) + _strings(config.get("data_files"))
    return names


def _strings(value: object) -> list[str]:
    """The file names in a `data_files` value: a name, a list of names or of {split, path}, or split -> names."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        entries = list(value.values())
    elif isinstance(value, list):
        entries = value
    else:
        return []
    names: list[str] = []
    for entry in entries:
        if isinstance(entry, dict):
            entry = entry.get("path")
        if isinstance(entry, str):
            names.append(entry)
        elif isinstance(entry, list):
            names += [name for name in entry if isinstance(name, str)]
    return names


class HFImageDataset(Dataset):
    """One split of a Hugging Face dataset: its two image columns as RGB float tensors.

    Rows that carry this project's metadata columns (a vision-bench export loaded from the Hub) give
    full items with grids; others give `input`, `target`, `split`, `index` and `key`.
    """

    def __init__(self, table: datasets.Dataset, source: str, split: str, *, columns: Mapping[str, str] | None = None,
                 spec: RenderSpec | None = None, resize: str = "refuse") -> None:
        self.table = table
        self.source = source
        self.split = split
        self.fields = image_fields(columns)
        self.resize = "refuse"  # the first row is read as stored, to judge the images' size
        check_columns(source, f"split {split!r}", self.fields, table.column_names)
        if len(table) == 0:
            raise DataError(f"{source}: split {split!r} holds no rows; choose another split")
        first = self[0]
        self.has_grids = "input_grid" in first
        self.spec = stored_spec(first["input"], spec, source, resize)
        self.resize = resize

    def __len__(self) -> int:
        return len(self.table)

    def __getitem__(self, index: int) -> Item:
        return self.__getitems__([index])[0]

    def __getitems__(self, indices: Sequence[int]) -> list[Item]:
        """Items of a whole batch: one read of the table for all of them."""
        rows = [int(index) for index in indices]
        columns = self.table[rows]
        items: list[Item] = []
        for position, row in enumerate(rows):
            record = {name: values[position] for name, values in columns.items()}
            item = record_item(record)
            images = {role: cell_image(record[name], self.source, name, row) for role, name in self.fields.items()}
            if self.resize != "refuse":
                images = square_images(images, self.spec, self.resize)
            items.append(image_item(item, images, self.split, row, str(row)))
        return items



def cell_image(value: Any, source: str, column: str, row: int | str) -> torch.Tensor:
    """An image cell: a decoded `Image` feature (PIL), its undecoded `{bytes, path}` form, or an (H, W, 3) array.
    An undecoded cell without bytes is read from its path: a local file, or a URL (hf://, zip://...::, https://, what
    a streamed dataset's images may point into) read through fsspec (`remote_files.RetryingReader`)."""
    if hasattr(value, "convert"):
        return image_tensor(np.array(value.convert("RGB")))
    if isinstance(value, dict) and value.get("bytes"):
        return load_image_tensor(value["bytes"])
    if isinstance(value, dict) and value.get("path"):
        path = str(value["path"])
        if is_url(path):
            with RetryingReader(path) as reader:
                return load_image_tensor(reader.read())
        return load_image_tensor(path)
    array = np.asarray(value)
    if array.ndim == 3 and array.shape[2] == 3 and array.dtype == np.uint8:
        return image_tensor(array)
    raise DataError(f"{source}: column {column!r} of row {row} is not an image (it holds "
                    f"{type(value).__name__}); name the image columns with dataset.columns")


def check_columns(source: str, where: str, fields: Mapping[str, str], columns: Sequence[str]) -> None:
    """Refuse a split (`where`: "split 'train'") or row that lacks an image column, naming the columns it has."""
    missing = [name for name in fields.values() if name not in columns]
    if missing:
        raise DataError(
            f"{source}: {where} has no column{'s' if len(missing) > 1 else ''} "
            f"{', '.join(map(repr, missing))} (it has {', '.join(columns)}); name the image columns with "
            "dataset.columns: {input: ..., target: ...}"
        )


def open_hf_dataset(source: str, split: str, spec: RenderSpec | None,
                    options: ReadOptions) -> HFImageDataset:
    """Our `split` of a Hugging Face dataset, read as `options` say (a split held out of the training split is
    the rows `holdout` picks by their numbers)."""
    table, name = pick_split(source, load_splits(source), split, options)
    keep = options.key_filter(split)
    if keep is not None:
        table = table.select([row for row in range(len(table)) if keep(str(row))])
        if len(table) == 0:
            raise DataError(f"{source}: dataset.val_fraction {options.val_fraction} leaves no row of {name!r} to "
                            f"{split}; choose a fraction that leaves rows to both sides")
    return HFImageDataset(table, source, split, columns=options.columns, spec=spec, resize=options.resize)


def pick_split(source: str, available: Mapping[str, Any], split: str, options: ReadOptions) -> tuple[Any, str]:
    """The source's split our `split` reads, and its name: the one `options.splits` maps it to, or for a split held
    out (`options.val_fraction`) the training split, refused when the source has a validation split of its own
    (its val_ood, or the split `options.splits` maps val_ood to, is not one: it is read as it is)."""
    own = options.own_validation(available)
    if options.key_filter(split) is not None and own:
        raise refuse_holdout(source, own[0])
    name = options.read_split(split)
    if name not in available:
        raise DataError(f"{source}: has no split {name!r} (it has {', '.join(available)}); "
                        f"{split_fix(split, list(available))}")
    return available[name], name


def split_fix(split: str, available: list[str]) -> str:
    """How to give our `split` a split of a dataset that has `available` ones: map it to the closest (a validation
    split to one named like `validation`, a test split to one named like `test`) with dataset.splits; a
    validation split with nothing to map to can be left out of dataset.val_splits instead."""
    kind = "val" if split.startswith("val") else "test" if split.startswith("test") else split
    fitting = [name for name in available if kind in name.lower()] or [n for n in available if n != "train"]
    hint = f"map ours to its names with dataset.splits, e.g. {{{split}: {fitting[0]}}}" if fitting else ""
    if kind == "val":
        leave = f"leave {split} out of dataset.val_splits (and pick checkpoint.select_on among those kept)"
        return f"{hint}, or {leave}" if hint else leave
    return hint or f"map ours to its names with dataset.splits, e.g. {{{split}: {available[0]}}}"


__all__ = ["HF_PREFIX", "HFImageDataset", "cell_image", "check_columns", "is_hf_source", "is_local_hf_source",
           "load_splits", "looks_like_hf_folder", "open_hf_dataset", "pick_split", "split_fix"]
