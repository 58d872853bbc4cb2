"""Run logging: metrics.jsonl and metrics.csv, train.log, and the experiment trackers the config names.

- `metrics.jsonl`: one JSON object per logged record (`kind` step / epoch / note, `step`, `epoch`, metrics).
- `metrics.csv`: the same records as a table, one row per record; the columns are `kind`, `step`,
  `epoch` and every metric name in the order it first appeared. A record with a new metric rewrites
  the file with the wider header; any other record appends one row.
- `train.log`: every message of the `vision_bench` logger during the run, with timestamps (a
  `logging.FileHandler` attached for the duration of the run), plus the notes and the final summary
  that the caller shows from the result.
- the trackers of `tracking.loggers` (`vision_bench.train.trackers`: TensorBoard, W&B, MLflow; none by
  default): the config as hyper-parameters, every numeric value as a scalar at its step (tagged
  `train/NAME` for step records, `epoch/NAME` for epoch records, a name with a '/' as it is) and, at each
  validation, a grid of a few validation samples (input | target | prediction).

Only rank 0 writes. When a run resumes, records newer than the checkpoint it resumes from are
dropped from both tables first, so the tables of an interrupted-and-resumed run read like an
uninterrupted one; train.log is appended to, so it keeps the story of every session.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import logging
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import torch

from vision_bench.io.atomic import append_line, atomic_write_text
from vision_bench.io.documents import JSONDict
from vision_bench.train.config import TrainConfig
from vision_bench.train.trackers import TrackedRun, Tracker, start_trackers

METRICS_FILE = "metrics.jsonl"
METRICS_CSV = "metrics.csv"
LOG_FILE = "train.log"
FIXED_COLUMNS = ("kind", "step", "epoch")
LOG_FORMAT = "%(asctime)s %(levelname)s %(message)s"
PACKAGE_LOGGER = "vision_bench"
HEARTBEAT_S = 60.0
"""Without a progress bar, a line at most this often says training goes on (a slow or shared machine)."""

logger = logging.getLogger(__name__)


class Heartbeat:
    """'training NAME: step 120/500, loss 0.0123 (61 s)' every `HEARTBEAT_S` seconds, for runs without a bar."""

    def __init__(self, *, enabled: bool, total: int, name: str) -> None:
        self.enabled, self.total, self.name = enabled, total, name
        self.started = self.last = time.perf_counter()

    def beat(self, step: int, loss: torch.Tensor) -> None:
        now = time.perf_counter()
        if self.enabled and now - self.last >= HEARTBEAT_S:
            self.last = now
            logger.info("training %s: step %d/%d, loss %.4g (%.0f s)", self.name, step, self.total, float(loss),
                        now - self.started)


def _json_value(value: object) -> object:
    """Plain JSON: non-finite floats become null (strict JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def read_records(path: Path) -> list[JSONDict]:
    """Every record of a metrics.jsonl file (a torn last line from a crash is ignored)."""
    if not path.is_file():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def csv_columns(records: list[JSONDict]) -> list[str]:
    """`kind`, `step`, `epoch`, then every other key of `records` in the order it first appears."""
    columns = list(FIXED_COLUMNS)
    for record in records:
        columns.extend(key for key in record if key not in columns)
    return columns


def csv_rows(records: list[JSONDict], columns: list[str], *, header: bool = False) -> str:
    """`records` as CSV rows under `columns` (the header line first when asked): missing values and
    nulls are empty cells, lists are joined by '; '."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    if header:
        writer.writerow(columns)
    for record in records:
        writer.writerow([_csv_cell(record.get(column)) for column in columns])
    return buffer.getvalue()


def _csv_cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return "; ".join(str(item) for item in value)
    return value


def sample_grid(inputs: torch.Tensor, targets: torch.Tensor, predictions: torch.Tensor) -> torch.Tensor:
    """One (3, H', W') image in [0, 1]: a row per sample holding its input, target and prediction,
    separated by gray 2-pixel lines."""
    from torchvision.utils import make_grid

    rows = torch.stack([inputs, targets, predictions], dim=1).flatten(0, 1)  # (3B, C, H, W): in, target, pred, ...
    return make_grid(rows.detach().float().cpu().clamp(0, 1), nrow=3, padding=2, pad_value=0.5)


def image_array(image: torch.Tensor) -> np.ndarray:
    """A (3, H, W) image in [0, 1] as the (H, W, 3) uint8 array every tracker takes."""
    return (image.permute(1, 2, 0) * 255).round().to(torch.uint8).numpy()


def tracked_run(config: TrainConfig, run_dir: Path, resume_step: int | None) -> TrackedRun:
    """What the trackers are told about this session of the run in `run_dir`."""
    tracking = config.tracking
    return TrackedRun(
        folder=run_dir, config=config.to_dict(), name=tracking.run_name or run_dir.resolve().name,
        project=tracking.project, resume_step=resume_step, wandb_entity=tracking.wandb.entity,
        wandb_mode=tracking.wandb.mode, mlflow_tracking_uri=tracking.mlflow.tracking_uri,
    )


class _RunLogFile(logging.FileHandler):
    """A FileHandler that appends and never writes through a symlink (like `append_line`)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, mode="a", encoding="utf-8")
        self.setFormatter(logging.Formatter(LOG_FORMAT))

    def _open(self) -> io.TextIOWrapper:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        return open(os.open(self.baseFilename, flags, 0o666), "a", encoding=self.encoding)


class RunLogger:
    """Writes a run's records and log file and feeds the trackers that `config` names (rank 0); does
    nothing when disabled."""

    def __init__(
        self, run_dir: Path, *, enabled: bool, resume_step: int | None = None, config: TrainConfig | None = None
    ) -> None:
        self.enabled = enabled
        self.path = run_dir / METRICS_FILE
        self.csv_path = run_dir / METRICS_CSV
        self._columns: list[str] = list(FIXED_COLUMNS)
        self._log_file: _RunLogFile | None = None
        self._trackers: list[tuple[str, Tracker]] = []  # (name, tracker); one that fails is dropped
        if not enabled:
            return
        kept = [] if resume_step is None else [r for r in read_records(self.path) if r.get("step", 0) <= resume_step]
        atomic_write_text(self.path, "".join(json.dumps(r) + "\n" for r in kept))
        self._rewrite_csv(kept)
        if resume_step is None:
            atomic_write_text(run_dir / LOG_FILE, "")  # a fresh log (and never a planted link)
        self._log_file = _RunLogFile(run_dir / LOG_FILE)
        logging.getLogger(PACKAGE_LOGGER).addHandler(self._log_file)
        if config is not None:
            try:
                names = config.tracking.loggers
                self._trackers = list(zip(names, start_trackers(names, tracked_run(config, run_dir, resume_step))))
            except BaseException:
                self.close(failed=True)
                raise

    @property
    def wants_images(self) -> bool:
        """Whether `log_samples` sends anything (a tracker is on), so callers can skip the predictions."""
        return bool(self._trackers)

    def log(self, record: JSONDict) -> None:
        """Write one record: `kind` ('step', 'epoch' or 'note'), `step`, `epoch` and any metrics."""
        if not self.enabled:
            return
        clean = {key: _json_value(value) for key, value in record.items()}
        append_line(self.path, json.dumps(clean) + "\n")
        if all(key in self._columns for key in clean):
            append_line(self.csv_path, csv_rows([clean], self._columns))
        else:
            self._rewrite_csv(read_records(self.path))
        scalars = _scalars(record)
        if scalars:
            self._feed_trackers(lambda tracker: tracker.log_scalars(scalars, record["step"]))

    def notes(self, step: int, messages: tuple[str, ...]) -> None:
        """Notes about the run (e.g. an option dropped on this device): one `note` record, a train.log line each.

        Not sent through the logger: the caller shows notes from the result (`TrainResult.notes`),
        and the console should show each once.
        """
        self.log({"kind": "note", "step": step, "notes": list(messages)})
        for message in messages:
            self.write_log_line(f"note: {message}", logging.WARNING)

    def write_log_line(self, message: str, level: int = logging.INFO) -> None:
        """A line in train.log alone (for what the caller prints itself, such as the final summary)."""
        if self._log_file is not None:
            self._log_file.handle(logging.LogRecord(PACKAGE_LOGGER, level, __file__, 0, message, None, None))

    def log_samples(
        self, tag: str, inputs: torch.Tensor, targets: torch.Tensor, predictions: torch.Tensor, step: int
    ) -> None:
        """An image of these samples for each tracker, a row each: input | target | prediction."""
        if self._trackers:
            image = image_array(sample_grid(inputs, targets, predictions))
            self._feed_trackers(lambda tracker: tracker.log_image(tag, image, step))

    def _feed_trackers(self, send: Callable[[Tracker], None]) -> None:
        """`send` to each tracker; one that raises is named in one warning and dropped, and training goes on (the
        run's own records, metrics.jsonl and metrics.csv, are complete without it)."""
        kept = []
        for name, tracker in self._trackers:
            try:
                send(tracker)
            except Exception as error:
                logger.warning("tracker %s failed and is dropped for the rest of this session: %s", name,
                               _one_line(error))
                _close_quietly(name, tracker, failed=True)
            else:
                kept.append((name, tracker))
        self._trackers = kept

    def close(self, failed: bool = False) -> None:
        """Close the trackers (`failed`: the session ended by an error) and detach train.log from the
        `vision_bench` logger. Never raises for a tracker: one whose `close` fails is named in a warning and the
        others are closed all the same."""
        trackers, self._trackers = self._trackers, []
        try:
            for name, tracker in trackers:
                _close_quietly(name, tracker, failed)
        finally:
            if self._log_file is not None:
                logging.getLogger(PACKAGE_LOGGER).removeHandler(self._log_file)
                self._log_file.close()
                self._log_file = None

    def _rewrite_csv(self, records: list[JSONDict]) -> None:
        self._columns = csv_columns(records)
        atomic_write_text(self.csv_path, csv_rows(records, self._columns, header=True))


@contextlib.contextmanager
def messages_above_progress_bar(enabled: bool) -> Iterator[None]:
    """While a progress bar is drawn, the `vision_bench` logger's console handlers print through
    `tqdm.write`, so a message appears above the bar instead of inside it (other handlers, such as
    train.log, are left alone; nothing is added where no console handler exists)."""
    package = logging.getLogger(PACKAGE_LOGGER)
    if not (enabled and any(_is_console_handler(handler) for handler in package.handlers)):
        yield
        return
    from tqdm.contrib.logging import logging_redirect_tqdm

    with logging_redirect_tqdm(loggers=[package]):
        yield


def _is_console_handler(handler: logging.Handler) -> bool:
    return isinstance(handler, logging.StreamHandler) and handler.stream in (sys.stdout, sys.stderr)


def _one_line(error: BaseException) -> str:
    """An error as one line: its type and its message's words."""
    return " ".join(f"{type(error).__name__}: {error}".split())


def _close_quietly(name: str, tracker: Tracker, failed: bool) -> None:
    """`tracker.close(failed)`, a failure a warning naming the tracker."""
    try:
        tracker.close(failed)
    except Exception as error:
        logger.warning("tracker %s could not be closed: %s", name, _one_line(error))


def _scalars(record: JSONDict) -> dict[str, float]:
    """The record's numeric values by tracker tag: `train/NAME` in a step record, `epoch/NAME` in any other,
    a name that has a '/' (`val_id/mse`) as it is."""
    prefix = "train" if record.get("kind") == "step" else "epoch"
    return {key if "/" in key else f"{prefix}/{key}": float(value) for key, value in record.items()
            if key not in FIXED_COLUMNS and isinstance(value, (int, float))}
