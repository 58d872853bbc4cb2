"""Experiment trackers: TensorBoard, Weights & Biases and MLflow, chosen by a training config's
`tracking.loggers` (none by default) or `vision-bench train --logger NAME`.

`TRACKERS` (defined in `vision_bench.train.trackers.base` with the `Tracker` interface and its
`TrackerSpec` entry, filled by each backend module when `vision_bench.train.trackers.registry` imports
it), `check_installed(names)`, `start_trackers(names, run)`, `tracker_folders()` and `STATE_FILE`
(RUN_DIR/tracking.json, the trackers' own run ids).
"""

from vision_bench.train.trackers.base import STATE_FILE, TRACKERS, TrackedRun, Tracker, TrackerSpec
from vision_bench.train.trackers.registry import check_installed, start_trackers, tracker_folders

__all__ = ["STATE_FILE", "TRACKERS", "TrackedRun", "Tracker", "TrackerSpec", "check_installed", "start_trackers",
           "tracker_folders"]
