"""`open_dataset`: one call from "where the data is" to a torch Dataset of one split.

The source may be an export directory (its `manifest.json` names the format), a folder of image
pairs made elsewhere (SVIB episodes or `*_input.png` / `*_target.png`), a task config (a YAML file
or a `TaskConfig`) or a study id; the last two generate and render samples on the fly.
"""

from __future__ import annotations

from pathlib import Path

from torch.utils.data import Dataset

from render.spec import RenderSpec
from vision_bench.data import sources
from vision_bench.data.datasets import open_export
from vision_bench.data.errors import DataError
from vision_bench.data.imports import looks_like_svib, open_pair_folder, open_svib
from vision_bench.data.manifest import MANIFEST_NAME
from vision_bench.data.onthefly import OnTheFlyDataset
from vision_bench.tasks.config import TaskConfig

_YAML_SUFFIXES = (".yaml", ".yml")


def open_dataset(
    source: str | Path | TaskConfig,
    split: str,
    spec: RenderSpec | None = None,
    *,
    length: int | None = None,
    render_on: str = "cpu",
    n_train: int | None = None,
    n_val: int | None = None,
    n_test: int | None = None,
    seed: int | None = None,
) -> Dataset:
    """The Dataset of `split` from an export, an image-pair folder, a config or a study id.

    `spec` defaults to the export's own spec (exports) or `RenderSpec()` (on the fly); `length`,
    the counts and `seed` apply to on-the-fly sources only; `render_on="device"` leaves images to
    `to_device_batch` on the training device.
    """
    if isinstance(source, TaskConfig):
        config = sources.with_overrides(source, n_train=n_train, n_val=n_val, n_test=n_test, seed=seed)
        return OnTheFlyDataset(config, split, spec, length, render_on=render_on)
    path = Path(source)
    if path.is_dir():
        if (path / MANIFEST_NAME).is_file():
            return open_export(path, split, spec, render_on=render_on)
        folder = path / split if (path / split).is_dir() else path
        if looks_like_svib(folder):
            return open_svib(folder, split)
        if any(folder.glob("*_input.*")):
            return open_pair_folder(folder, split)
        raise DataError(
            f"{path}: not an export (no {MANIFEST_NAME}), nor SVIB episodes, nor *_input.png / *_target.png "
            "pairs; finish the export (re-run it) or point at the data folder"
        )
    if path.suffix in _YAML_SUFFIXES:
        config = sources.load_config(config_path=path, n_train=n_train, n_val=n_val, n_test=n_test, seed=seed)
    else:
        config = sources.load_config(str(source), n_train=n_train, n_val=n_val, n_test=n_test, seed=seed)
    return OnTheFlyDataset(config, split, spec, length, render_on=render_on)


__all__ = ["open_dataset"]
