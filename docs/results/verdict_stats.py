"""What the studies' verdicts.py scripts share: the mean and SEM over seeds, and the rule "A leads B by more than
twice the root of the sum of their squared SEMs"."""

from __future__ import annotations

import math

LEAD_SEMS = 2.0
"""A lead counts when it is larger than this many times the root of the two means' summed squared SEMs."""


def mean_sem(values: list[float]) -> tuple[float, float]:
    """The mean and its standard error over seeds (NaN for a single value)."""
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, math.nan
    variance = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(variance / len(values))


def shown(values: list[float], digits: int) -> str:
    """"mean +/- SEM", "mean" for one value, "-" for none."""
    if not values:
        return "-"
    mean, sem = mean_sem(values)
    return f"{mean:.{digits}f}" + ("" if math.isnan(sem) else f" ± {sem:.{digits}f}")


def leads(better: str, worse: str, a: list[float], b: list[float]) -> str:
    """Whether `a`'s mean exceeds `b`'s by more than `LEAD_SEMS` x the root of their summed squared SEMs, in words;
    no verdict with fewer than 2 values on a side."""
    if len(a) < 2 or len(b) < 2:
        short = [name for name, values in ((better, a), (worse, b)) if len(values) < 2]
        return f"no verdict: fewer than 2 passed runs of {' or '.join(short)}"
    (mean_a, sem_a), (mean_b, sem_b) = mean_sem(a), mean_sem(b)
    bound = LEAD_SEMS * math.sqrt(sem_a**2 + sem_b**2)
    return (f"{'holds' if mean_a - mean_b > bound else 'does not hold'} ({better} {mean_a:.1f}, {worse} {mean_b:.1f}; "
            f"lead {mean_a - mean_b:.1f}, bound {bound:.1f})")
