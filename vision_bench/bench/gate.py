"""The gate a study states before its runs, and the verdict rule, applied to evaluated cells.

A gate is one threshold on one metric of one split (`gate: {metric: factor_accuracy, split: test_id,
at_least: 90}`): a trained run that misses it did not learn the in-distribution task, so its
out-of-distribution numbers say nothing about generalization. The report counts "k of n passed" per
model and setting, lists every failed run with its value, and computes its tables and plots over the
runs that passed (baselines are not gated). `verdict` is the rule, in words, by which the study's
finding is read from those numbers. Both live in the bench config, so they are fixed before the
runs: a bench folder refuses a changed config, the gate included.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pydantic import field_validator, model_validator

from vision_bench.bench.aggregate import CellResult
from vision_bench.bench.report import Table
from vision_bench.config_base import StrictConfig
from vision_bench.errors import ConfigError
from vision_bench.metrics import METRICS


class Gate(StrictConfig):
    """Passes when `metric` on `split` is at least `at_least` (or at most `at_most`)."""

    config_name = "gate"
    metric: str
    split: str = "test_id"
    at_least: float | None = None
    at_most: float | None = None

    @field_validator("metric")
    @classmethod
    def _known_metric(cls, metric: str) -> str:
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; `vision-bench metrics` lists them")
        return metric

    @model_validator(mode="after")
    def _one_bound(self) -> Gate:
        if (self.at_least is None) == (self.at_most is None):
            raise ValueError("give exactly one of at_least and at_most")
        bound = self.at_least if self.at_least is not None else self.at_most
        if not math.isfinite(float(bound or 0.0)):
            raise ValueError(f"the bound must be a finite number, got {bound}")
        return self

    def describe(self) -> str:
        bound = f">= {self.at_least:g}" if self.at_least is not None else f"<= {self.at_most:g}"
        return f"{self.metric} on {self.split} {bound}"

    def value(self, cell: CellResult) -> float:
        value = cell.splits.get(self.split, {}).get(self.metric)
        return float("nan") if value is None else float(value)

    def passes(self, cell: CellResult) -> bool:
        """Baselines always pass; a trained run passes when its value is finite and within the bound."""
        if cell.baseline:
            return True
        value = self.value(cell)
        if not math.isfinite(value):
            return False
        return value >= self.at_least if self.at_least is not None else value <= float(self.at_most or 0.0)


def gated(cells: Sequence[CellResult], gate: Gate | None) -> tuple[list[CellResult], list[CellResult]]:
    """(the cells that count, the trained runs that failed the gate); everything counts without a gate."""
    if gate is None:
        return list(cells), []
    return [c for c in cells if gate.passes(c)], [c for c in cells if not gate.passes(c)]


def gate_table(cells: Sequence[CellResult], gate: Gate) -> Table:
    """Per trained model and setting: how many of its runs passed the gate."""
    counts: dict[tuple[str, str], list[bool]] = {}
    for cell in cells:
        if not cell.baseline:
            counts.setdefault((cell.predictor, cell.setting), []).append(gate.passes(cell))
    rows = [[predictor, setting, f"{sum(passed)} of {len(passed)} passed"]
            for (predictor, setting), passed in counts.items()]
    return Table(["model", "setting", "gate"], rows, title=f"Gate: {gate.describe()}")


def failed_runs(failed: Sequence[CellResult], gate: Gate) -> list[str]:
    """One line per failed run: model, experiment, seed and its value of the gated metric."""
    return [f"{c.predictor}, {c.experiment}, seed {c.seed}: {gate.metric} on {gate.split} = {gate.value(c):.4g}"
            for c in failed]


def check_gate(gate: Gate | None, splits: Sequence[str], unavailable: Mapping[str, Mapping[str, str]]) -> None:
    """Refuse a gate no run could pass: on a split the bench does not evaluate, or on a metric that an
    experiment's data cannot support (`unavailable`: experiment -> metric -> reason)."""
    if gate is None:
        return
    if gate.split not in splits:
        raise ConfigError(f"gate.split {gate.split!r} is not evaluated (evaluate.splits: {', '.join(splits)}); "
                          "gate on one of those splits or add it to evaluate.splits")
    for experiment, reasons in unavailable.items():
        if gate.metric in reasons:
            raise ConfigError(f"gate.metric {gate.metric!r} is {reasons[gate.metric]} (experiment {experiment}); "
                              "gate on a metric every experiment computes")


__all__ = ["Gate", "check_gate", "failed_runs", "gate_table", "gated"]
