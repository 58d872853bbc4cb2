"""Run logging: metrics.jsonl and metrics.csv, train.log, TensorBoard scalars and sample images.

- `metrics.jsonl`: one JSON object per logged record (`kind` step / epoch / note, `step`, `epoch`, metrics).
- `metrics.csv`: the same records as a table, one row per record; the columns are `kind`, `step`,
  `epoch` and every metric name in the order it first appeared. A record with a new metric rewrites
  the file with the wider header; any other record appends one row.
- `train.log`: every message of the `vision_bench` logger during the run, with timestamps (a
  `logging.FileHandler` attached for the duration of the run), plus the notes and the final summary
  that the caller shows from the result.
- TensorBoard (when the optional `tensorboard` package is installed): the numeric values as
  scalars and, at each validation, a grid of a few validation samples (input | target | prediction).

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
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from vision_bench.io.atomic import append_line, atomic_write_text
from vision_bench.io.documents import JSONDict

if TYPE_CHECKING:
    from torch.utils.tensorboard import SummaryWriter

METRICS_FILE = "metrics.jsonl"
METRICS_CSV = "metrics.csv"
LOG_FILE = "train.log"
TENSORBOARD_DIR = "tensorboard"
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


class _RunLogFile(logging.FileHandler):
    """A FileHandler that appends and never writes through a symlink (like `append_line`)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, mode="a", encoding="utf-8")
        self.setFormatter(logging.Formatter(LOG_FORMAT))

    def _open(self) -> io.TextIOWrapper:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        return open(os.open(self.baseFilename, flags, 0o666), "a", encoding=self.encoding)


class RunLogger:
    """Writes a run's records, log file and TensorBoard events (rank 0); does nothing when disabled."""

    def __init__(self, run_dir: Path, *, enabled: bool, resume_step: int | None = None) -> None:
        self.enabled = enabled
        self.path = run_dir / METRICS_FILE
        self.csv_path = run_dir / METRICS_CSV
        self._columns: list[str] = list(FIXED_COLUMNS)
        self._log_file: _RunLogFile | None = None
        self._tensorboard = None
        if not enabled:
            return
        kept = [] if resume_step is None else [r for r in read_records(self.path) if r.get("step", 0) <= resume_step]
        atomic_write_text(self.path, "".join(json.dumps(r) + "\n" for r in kept))
        self._rewrite_csv(kept)
        if resume_step is None:
            atomic_write_text(run_dir / LOG_FILE, "")  # a fresh log (and never a planted link)
        self._log_file = _RunLogFile(run_dir / LOG_FILE)
        logging.getLogger(PACKAGE_LOGGER).addHandler(self._log_file)
        self._tensorboard = _tensorboard_writer(run_dir / TENSORBOARD_DIR, purge_step=resume_step)

    @property
    def wants_images(self) -> bool:
        """Whether `log_samples` writes anything (TensorBoard is there), so callers can skip the predictions."""
        return self._tensorboard is not None

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
        if self._tensorboard is not None:
            prefix = "train" if record.get("kind") == "step" else "epoch"
            for key, value in record.items():
                if key not in FIXED_COLUMNS and isinstance(value, (int, float)):
                    tag = key if "/" in key else f"{prefix}/{key}"
                    self._tensorboard.add_scalar(tag, value, record["step"])

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
        """A TensorBoard image of these samples, a row each: input | target | prediction."""
        if self._tensorboard is not None:
            self._tensorboard.add_image(tag, sample_grid(inputs, targets, predictions), step)

    def close(self) -> None:
        """Flush TensorBoard and detach train.log from the `vision_bench` logger."""
        if self._tensorboard is not None:
            self._tensorboard.close()
            self._tensorboard = None
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


def _tensorboard_writer(folder: Path, purge_step: int | None) -> SummaryWriter | None:
    """A SummaryWriter when the optional `tensorboard` package is installed, else None."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return None
    return SummaryWriter(log_dir=str(folder), purge_step=None if purge_step is None else purge_step + 1)
