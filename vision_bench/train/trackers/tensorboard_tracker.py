"""`tensorboard`: RUN_DIR/tensorboard/, event files for `tensorboard --logdir`.

The run's config goes to the HParams dashboard as its hyper-parameters: only the session-start summary is
written, not an experiment summary, so that TensorBoard builds the table's columns from every run under
the log folder (a bench's runs side by side) and offers every scalar tag as a metric. A resumed session
writes with `purge_step` = the checkpoint's step + 1, so TensorBoard drops the events an interrupted
session logged after its last checkpoint.
"""

from __future__ import annotations

import json

import numpy as np

from vision_bench.io.documents import JSONDict, flatten
from vision_bench.train.trackers.base import TRACKERS, TrackedRun, TrackerSpec

TENSORBOARD_DIR = "tensorboard"


def hyperparameters(config: JSONDict) -> dict[str, bool | int | float | str]:
    """The config's dotted keys and values as the HParams plugin takes them: numbers, booleans and strings
    as they are, lists as JSON text; unset (null) values are left out."""
    return {key: value if isinstance(value, (bool, int, float, str)) else json.dumps(value)
            for key, value in flatten(config).items() if value is not None}


class TensorBoardTracker:
    """A `SummaryWriter` in RUN_DIR/tensorboard."""

    def __init__(self, run: TrackedRun) -> None:
        from torch.utils.tensorboard import SummaryWriter
        from torch.utils.tensorboard.summary import hparams

        purge_step = None if run.resume_step is None else run.resume_step + 1
        self.writer = SummaryWriter(log_dir=str(run.folder / TENSORBOARD_DIR), purge_step=purge_step)
        _, session_start, _ = hparams(hyperparameters(run.config), {})
        self.writer._get_file_writer().add_summary(session_start)

    def log_scalars(self, scalars: dict[str, float], step: int) -> None:
        for tag, value in scalars.items():
            self.writer.add_scalar(tag, value, step)

    def log_image(self, tag: str, image: np.ndarray, step: int) -> None:
        self.writer.add_image(tag, image, step, dataformats="HWC")

    def close(self, failed: bool) -> None:
        self.writer.close()


TRACKERS.add(
    "tensorboard",
    TrackerSpec(start=TensorBoardTracker, package="tensorboard", extra="tensorboard", folders=(TENSORBOARD_DIR,)),
    "TensorBoard event files in RUN_DIR/tensorboard: scalars, sample images, the config as HParams",
)
