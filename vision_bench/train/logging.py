"""Run logging: metrics.jsonl (one JSON object per logged step or epoch), TensorBoard when installed.

Only rank 0 writes. When a run resumes, records newer than the checkpoint it resumes from are
dropped first, so the log of an interrupted-and-resumed run reads like an uninterrupted one.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from vision_bench.data.atomic import append_line, atomic_write_text

METRICS_FILE = "metrics.jsonl"
TENSORBOARD_DIR = "tensorboard"


def _json_value(value: Any) -> Any:
    """Plain JSON: non-finite floats become null (strict JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def read_records(path: Path) -> list[dict[str, Any]]:
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


class RunLogger:
    """Appends records to RUN_DIR/metrics.jsonl and mirrors numeric values to TensorBoard."""

    def __init__(self, run_dir: Path, *, enabled: bool, resume_step: int | None = None) -> None:
        self.enabled = enabled
        self.path = run_dir / METRICS_FILE
        self._tensorboard = None
        if not enabled:
            return
        if resume_step is None:
            atomic_write_text(self.path, "")
        else:
            kept = [r for r in read_records(self.path) if r.get("step", 0) <= resume_step]
            atomic_write_text(self.path, "".join(json.dumps(r) + "\n" for r in kept))
        self._tensorboard = _tensorboard_writer(run_dir / TENSORBOARD_DIR, purge_step=resume_step)

    def log(self, record: dict[str, Any]) -> None:
        """Write one record: `kind` ('step' or 'epoch'), `step`, `epoch` and any metrics."""
        if not self.enabled:
            return
        clean = {key: _json_value(value) for key, value in record.items()}
        append_line(self.path, json.dumps(clean) + "\n")
        if self._tensorboard is not None:
            prefix = "train" if record.get("kind") == "step" else "epoch"
            for key, value in record.items():
                if key not in ("kind", "step", "epoch") and isinstance(value, (int, float)):
                    tag = key if "/" in key else f"{prefix}/{key}"
                    self._tensorboard.add_scalar(tag, value, record["step"])

    def close(self) -> None:
        if self._tensorboard is not None:
            self._tensorboard.close()
            self._tensorboard = None


def _tensorboard_writer(folder: Path, purge_step: int | None) -> Any:
    """A SummaryWriter when the optional `tensorboard` package is installed, else None."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return None
    return SummaryWriter(log_dir=str(folder), purge_step=None if purge_step is None else purge_step + 1)
