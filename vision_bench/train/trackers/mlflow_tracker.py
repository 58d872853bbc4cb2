"""`mlflow`: an MLflow run in the experiment `tracking.project`, at `tracking.mlflow.tracking_uri` (else MLflow's
own: MLFLOW_TRACKING_URI, or its default).

The config's dotted keys are the run's parameters (values as JSON text, strings as they are; keys made of the
characters MLflow allows; both cut to MLflow's lengths; sent 100 at a time, MLflow's batch limit); scalars
are metrics at their step and the sample images are MLflow's step images (`log_image(key=, step=)`). The
MLflow run's id is kept in RUN_DIR/tracking.json, so a resumed session continues the same run. MLflow's
parameters cannot change: a resumed session logs the keys the run lacks, and a key whose value changed (a
longer run's `training.epochs`) as a tag of the same name holding the value in force. The id is stored as soon
as the run exists, and a start that fails after that ends the run FAILED (no run is left RUNNING).

The `mlflow` extra installs `mlflow-skinny`, which tracks to a server (`http://HOST:5000`) or, with
MLFLOW_ALLOW_FILE_STORE=true, to a folder (`file:./mlruns`); MLflow 3's default, `sqlite:///mlflow.db`, needs the
full `mlflow` package.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterator, Sequence
from typing import TypeVar

import numpy as np

from vision_bench.errors import ConfigError
from vision_bench.io.documents import JSONDict, flatten
from vision_bench.train.trackers.base import TRACKERS, TrackedRun, TrackerSpec, store_id, stored_id

T = TypeVar("T")
logger = logging.getLogger(__name__)


def mlflow_key(key: str, length: int) -> str:
    """`key` with each character MLflow refuses on some system replaced by '_', cut to `length`."""
    return re.sub(r"[^\w./ -]", "_", key)[:length]


def parameters(config: JSONDict, key_length: int, value_length: int) -> dict[str, str]:
    """The config's dotted keys (`mlflow_key`) and values as MLflow parameters: JSON text (strings as they
    are), cut to `value_length`."""
    return {mlflow_key(key, key_length): (value if isinstance(value, str) else json.dumps(value))[:value_length]
            for key, value in flatten(config).items()}


def batches(items: Sequence[T], size: int) -> Iterator[list[T]]:
    """`items` in lists of at most `size`."""
    for start in range(0, len(items), size):
        yield list(items[start: start + size])


class MlflowTracker:
    """One session of an MLflow run."""

    def __init__(self, run: TrackedRun) -> None:
        from mlflow import get_tracking_uri
        from mlflow.entities import Metric, Param, RunTag
        from mlflow.exceptions import MlflowException
        from mlflow.tracking import MlflowClient
        from mlflow.utils.validation import MAX_ENTITY_KEY_LENGTH, MAX_PARAM_VAL_LENGTH, MAX_PARAMS_TAGS_PER_BATCH

        self.metric, self.key_length = Metric, MAX_ENTITY_KEY_LENGTH
        where = run.mlflow_tracking_uri or get_tracking_uri()
        started: str | None = None  # the run's id once it exists
        try:
            self.client = MlflowClient(run.mlflow_tracking_uri)
            self.run_id = started = stored_id(run, "mlflow") or self._new_run(run)
            store_id(run, "mlflow", self.run_id)  # at once: whatever fails next, the run is found again
            self.client.update_run(self.run_id, status="RUNNING")
            logged = self.client.get_run(self.run_id).data.params
            config = parameters(run.config, MAX_ENTITY_KEY_LENGTH, MAX_PARAM_VAL_LENGTH)
            new = [Param(key, value) for key, value in config.items() if key not in logged]
            changed = [RunTag(key, value) for key, value in config.items() if logged.get(key, value) != value]
            for params in batches(new, MAX_PARAMS_TAGS_PER_BATCH):
                self.client.log_batch(self.run_id, params=params)
            for tags in batches(changed, MAX_PARAMS_TAGS_PER_BATCH):
                self.client.log_batch(self.run_id, tags=tags)
        except MlflowException as error:
            self._end_failed_start(started)
            message = " ".join(str(error).split())
            raise ConfigError(f"MLflow could not start the run at {where}: {message}; set "
                              "tracking.mlflow.tracking_uri (or MLFLOW_TRACKING_URI)") from None
        except BaseException:
            self._end_failed_start(started)
            raise

    def _end_failed_start(self, run_id: str | None) -> None:
        """A start that failed after the run existed ends it FAILED, so that no run stays RUNNING forever."""
        if run_id is None:
            return
        try:
            self.client.set_terminated(run_id, status="FAILED")
        except Exception as error:  # the start's own error is the one to show
            logger.warning("MLflow run %s could not be marked FAILED: %s", run_id, error)

    def _new_run(self, run: TrackedRun) -> str:
        experiment = self.client.get_experiment_by_name(run.project)
        experiment_id = experiment.experiment_id if experiment is not None else self.client.create_experiment(
            run.project)
        return str(self.client.create_run(experiment_id, run_name=run.name).info.run_id)

    def log_scalars(self, scalars: dict[str, float], step: int) -> None:
        now = int(time.time() * 1000)
        metrics = [self.metric(mlflow_key(tag, self.key_length), value, now, step) for tag, value in scalars.items()]
        self.client.log_batch(self.run_id, metrics=metrics)

    def log_image(self, tag: str, image: np.ndarray, step: int) -> None:
        self.client.log_image(self.run_id, image, key=tag, step=step)

    def close(self, failed: bool) -> None:
        self.client.set_terminated(self.run_id, status="FAILED" if failed else "FINISHED")


TRACKERS.add(
    "mlflow",
    TrackerSpec(start=MlflowTracker, package="mlflow", extra="mlflow"),
    "MLflow: the config as parameters, scalars as metrics and sample images in an MLflow run",
)
