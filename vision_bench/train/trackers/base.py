"""`Tracker`, what every experiment tracker does, and `TRACKERS`, the registry each backend adds itself to.

A tracker is started once per training session on rank 0 (`TrackerSpec.start(run)`), is sent the
numeric values of every record (`log_scalars`) and the validation sample images (`log_image`), and is
closed when the session ends. Its entry says which package it needs and which extra of vision-bench
installs it, so a run that names a missing one is refused before it trains, and which folders it
writes inside the run folder. A tracker that continues its own run across sessions (W&B, MLflow)
keeps that run's id in RUN_DIR/tracking.json (`stored_id`, `store_id`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

import numpy as np

from vision_bench.io.atomic import atomic_write_text
from vision_bench.io.documents import JSONDict
from vision_bench.registry import Registry

STATE_FILE = "tracking.json"
"""RUN_DIR/tracking.json: tracker name -> the id of the tracker's own run, for the next session."""
WandbMode = Literal["online", "offline", "disabled"]


@dataclass(frozen=True)
class TrackedRun:
    """What a tracker is told about the run it follows.

    `config`: the run's resolved config, as config.yaml holds it (the run's hyper-parameters). `name`:
    the run's name in the tracker (`tracking.run_name`, else the run folder's name). `project`: the W&B
    project and the MLflow experiment. `resume_step`: the step this session resumes from, None for a
    new run. The backends' own options are None where the tracker's own default (or environment
    variable) applies.
    """

    folder: Path
    config: JSONDict
    name: str
    project: str
    resume_step: int | None = None
    wandb_entity: str | None = None
    wandb_mode: WandbMode | None = None
    mlflow_tracking_uri: str | None = None


class Tracker(Protocol):
    """A started tracker: scalars and images at a global step, then `close`."""

    def log_scalars(self, scalars: dict[str, float], step: int) -> None:
        """Values by tag (`train/loss`, `val_id/mse`, ...) at a global step."""

    def log_image(self, tag: str, image: np.ndarray, step: int) -> None:
        """An (H, W, 3) uint8 image at a global step."""

    def close(self, failed: bool) -> None:
        """Flush and end this session's part of the run (`failed`: the session ended by an error)."""


@dataclass(frozen=True)
class TrackerSpec:
    """A registered tracker: `start(run) -> Tracker`, the module it imports (`package`), the vision-bench
    extra that installs it (`pip install 'vision-bench[EXTRA]'`) and the folders it writes in the run folder."""

    start: Callable[[TrackedRun], Tracker]
    package: str
    extra: str
    folders: tuple[str, ...] = ()


TRACKERS: Registry[TrackerSpec] = Registry("tracker")


def stored_id(run: TrackedRun, tracker: str) -> str | None:
    """The id of `tracker`'s own run that an earlier session stored, when this session resumes (else None)."""
    value = _state(run.folder).get(tracker) if run.resume_step is not None else None
    return value if isinstance(value, str) else None


def store_id(run: TrackedRun, tracker: str, run_id: str) -> None:
    """Keep `tracker`'s run id in RUN_DIR/tracking.json, beside the other trackers' ids."""
    state = {**_state(run.folder), tracker: run_id}
    atomic_write_text(run.folder / STATE_FILE, json.dumps(state, indent=2, sort_keys=True) + "\n")


def _state(folder: Path) -> JSONDict:
    """RUN_DIR/tracking.json's ids ({} when it is missing or unreadable: the trackers start new runs)."""
    try:
        state = json.loads((folder / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}
