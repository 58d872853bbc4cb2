"""What the report's figures need without drawing them: the points and scales the tables and plots share, and
whether matplotlib (the `reports` extra) is there to draw them.

`plots` imports matplotlib at its top; every report imports it only after `figures_missing()` said it can, so a
core install (no matplotlib) still runs `bench`, `compare-metrics` and rollouts, writing the tables, results and
sample sheets with one line in place of the figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from vision_bench.metrics import METRICS

REPORTS_EXTRA = "pip install 'vision-bench[reports]'"
"""The command that installs matplotlib, which draws every figure of a report."""

Scale = Literal["linear", "log", "percent"]
"""How values are drawn: as they are, on a log axis, or as percentages 0-100 % (values already x100)."""


@dataclass(frozen=True)
class Point:
    """A mean with its standard error (NaN when there is a single value)."""

    mean: float
    sem: float = float("nan")


def value_scale(metric: str) -> Scale:
    """A registered metric's scale: 'percent' for accuracies (the registry's `percent`), 'log' for
    errors whose gap is a log ratio (MSE-like metrics and LPIPS, which span decades), else 'linear'.
    A name that is not a registered metric is drawn 'linear'."""
    if metric not in METRICS:
        return "linear"
    spec = METRICS[metric]
    if spec.percent:
        return "percent"
    return "log" if spec.gap == "log_ratio" else "linear"


def figures_missing() -> str | None:
    """None when matplotlib imports; else the line a report shows in place of its figures, naming the fix."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return f"Figures are left out: matplotlib, which draws them, is not installed ({REPORTS_EXTRA})."
    return None


__all__ = ["REPORTS_EXTRA", "Point", "Scale", "figures_missing", "value_scale"]
