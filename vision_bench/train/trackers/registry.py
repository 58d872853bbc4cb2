"""The built-in trackers, registered by importing their modules, and what a run asks of them:
`check_installed` before any work, `start_trackers` on rank 0 when a session starts.

None of the backend modules imports its tracker's package until the tracker starts.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Iterable, Sequence

from vision_bench.errors import ConfigError
from vision_bench.train.trackers.base import TRACKERS, TrackedRun, Tracker

# isort: off
# Importing a backend's module registers it; `TRACKERS` lists them in this order.
from vision_bench.train.trackers import tensorboard_tracker, wandb_tracker, mlflow_tracker  # noqa: F401
# isort: on

logger = logging.getLogger(__name__)


def check_installed(names: Iterable[str]) -> None:
    """A one-line `ConfigError` naming the extra to install for the first tracker whose package is missing."""
    for name in names:
        spec = TRACKERS[name]
        if importlib.util.find_spec(spec.package) is None:
            raise ConfigError(f"tracker {name} needs the `{spec.package}` package, which is not installed; "
                              f"pip install 'vision-bench[{spec.extra}]'")


def start_trackers(names: Sequence[str], run: TrackedRun) -> list[Tracker]:
    """Each named tracker started for `run`; when one fails to start, those started before it are closed."""
    started: list[Tracker] = []
    try:
        for name in names:
            started.append(TRACKERS[name].start(run))
    except BaseException:
        for name, tracker in zip(names, started):
            try:
                tracker.close(failed=True)
            except Exception as error:  # the start's own error is the one to show
                logger.warning("tracker %s could not be closed: %s", name, error)
        raise
    return started


def tracker_folders() -> tuple[str, ...]:
    """The folders any tracker may write in a run folder (RUN_DIR/tensorboard, ...)."""
    return tuple(folder for _, spec in TRACKERS.items() for folder in spec.folders)
