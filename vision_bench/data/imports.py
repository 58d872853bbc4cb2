"""Image-pair datasets made elsewhere, as torch Datasets without grids.

Two layouts are read:

- SVIB: one folder per episode holding `source.png` (the input) and `target.png` (any depth below
  the root, e.g. `train/00001/source.png`).
- A plain folder of `NAME_input.png` / `NAME_target.png` pairs (any image suffix PIL reads).

Items carry `input`, `target`, `split`, `index` and `key` (the episode folder or `NAME`) but no
grid keys, so models can still be scored on pixel and perceptual metrics. The images' size (the
first input's) is the dataset's `spec`; non-square ones are refused unless `resize` pads or
stretches them (`external.stored_spec`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from torch.utils.data import Dataset

from render.spec import RenderSpec
from vision_bench.data.batch import PairItem
from vision_bench.data.external import square_images, stored_spec
from vision_bench.data.images import load_image_tensor
from vision_bench.errors import DataError

SVIB_INPUT = "source.png"
SVIB_TARGET = "target.png"
_INPUT_SUFFIX = "_input"
_TARGET_SUFFIX = "_target"


class ImagePairDataset(Dataset):
    """Input / target image files, one pair per item, in a fixed (sorted) order; `spec` and `resize` as
    `external.stored_spec` has them, judged on the first pair."""

    def __init__(self, pairs: list[tuple[str, Path, Path]], split: str, *, spec: RenderSpec | None = None,
                 resize: str = "refuse") -> None:
        self.pairs = pairs
        self.split = split
        self.spec = stored_spec(load_image_tensor(pairs[0][1]), spec, str(pairs[0][1]), resize)
        self.resize = resize

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, index: int) -> PairItem:
        key, input_path, target_path = self.pairs[index]
        images = square_images({"input": load_image_tensor(input_path), "target": load_image_tensor(target_path)},
                               self.spec, self.resize)
        return {"input": images["input"], "target": images["target"], "split": self.split, "index": index,
                "key": key}


def _existing_folder(root: str | Path) -> Path:
    path = Path(root)
    if not path.is_dir():
        raise DataError(f"{path}: not a folder; pass the folder that holds the image pairs")
    return path


def svib_pairs(root: str | Path) -> list[tuple[str, Path, Path]]:
    """Every SVIB episode under `root`: (episode path relative to root, source, target)."""
    folder = _existing_folder(root)
    pairs = []
    for source in sorted(folder.rglob(SVIB_INPUT)):
        target = source.with_name(SVIB_TARGET)
        if not target.is_file():
            raise DataError(f"{target}: missing; every SVIB episode folder needs {SVIB_INPUT} and {SVIB_TARGET}")
        pairs.append((source.parent.relative_to(folder).as_posix(), source, target))
    if not pairs:
        raise DataError(f"{folder}: no SVIB episodes (folders with {SVIB_INPUT} and {SVIB_TARGET}) found; give the "
                        "folder that holds the episode folders")
    return pairs


def folder_pairs(root: str | Path) -> list[tuple[str, Path, Path]]:
    """Every `NAME_input.*` / `NAME_target.*` pair directly in `root`, sorted by NAME."""
    folder = _existing_folder(root)
    inputs = {p.stem[: -len(_INPUT_SUFFIX)]: p for p in folder.iterdir() if p.stem.endswith(_INPUT_SUFFIX)}
    targets = {p.stem[: -len(_TARGET_SUFFIX)]: p for p in folder.iterdir() if p.stem.endswith(_TARGET_SUFFIX)}
    unpaired = sorted(set(inputs) ^ set(targets))
    if unpaired:
        name = unpaired[0]
        have, lack = (inputs[name], _TARGET_SUFFIX) if name in inputs else (targets[name], _INPUT_SUFFIX)
        raise DataError(f"{have}: has no matching {name}{lack} image; add it or remove {have.name}")
    if not inputs:
        raise DataError(f"{folder}: no NAME{_INPUT_SUFFIX}.png / NAME{_TARGET_SUFFIX}.png pairs found; give the "
                        "folder that holds the image pairs, or an export directory")
    return [(name, inputs[name], targets[name]) for name in sorted(inputs)]


def open_svib(root: str | Path, split: str | None = None, *, spec: RenderSpec | None = None,
              resize: str = "refuse", keep: Callable[[str], bool] | None = None) -> ImagePairDataset:
    """SVIB episodes under `root`; `split` labels the items (default: the folder's name); `keep` picks episodes
    by their folder (a split held out, `holdout`)."""
    return ImagePairDataset(_kept(svib_pairs(root), keep, root), split or Path(root).name, spec=spec, resize=resize)


def open_pair_folder(root: str | Path, split: str | None = None, *, spec: RenderSpec | None = None,
                     resize: str = "refuse", keep: Callable[[str], bool] | None = None) -> ImagePairDataset:
    """`*_input.png` / `*_target.png` pairs in `root`; `split` labels the items (default: folder name); `keep`
    picks pairs by their NAME (a split held out, `holdout`)."""
    return ImagePairDataset(_kept(folder_pairs(root), keep, root), split or Path(root).name, spec=spec, resize=resize)


def _kept(pairs: list[tuple[str, Path, Path]], keep: Callable[[str], bool] | None,
          root: str | Path) -> list[tuple[str, Path, Path]]:
    if keep is None:
        return pairs
    kept = [pair for pair in pairs if keep(pair[0])]
    if not kept:
        raise DataError(f"{root}: dataset.val_fraction leaves none of its {len(pairs)} pairs to one side; choose a "
                        "fraction that leaves pairs to both")
    return kept


def looks_like_svib(root: str | Path) -> bool:
    return next(Path(root).rglob(SVIB_INPUT), None) is not None


__all__ = [
    "ImagePairDataset",
    "folder_pairs",
    "looks_like_svib",
    "open_pair_folder",
    "open_svib",
    "svib_pairs",
]
