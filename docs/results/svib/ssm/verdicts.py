"""Apply the verdict rules stated in study.yaml (before the runs) to results.csv and print them as Markdown.

    python docs/results/svib/ssm/verdicts.py > docs/results/svib/ssm/verdicts.md

First every trained run, with its gate value and its ID and OOD LPIPS, and copy_input's; then, per model, "k of n
passed" and the mean +/- SEM over the passed runs' seeds; then the three comparisons (A, B, C). A comparison that
involves a model with no passed run gets no verdict.
"""

from __future__ import annotations

import csv
import math
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parents[1]))
from verdict_stats import mean_sem, shown  # noqa: E402  (what every study's verdicts share)

GATE_METRIC, GATE_SPLIT = "factor_accuracy", "test_id"  # study.yaml's gate; results.csv says who passed it
MATCH_SEMS = 2.0  # rule B: means within twice the root of the sum of the squared SEMs


def main() -> None:
    value: dict[tuple[str, int, str, str], float] = {}
    gate: dict[tuple[str, int], bool] = {}
    with open(HERE / "results.csv", newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            run = (row["model"], int(row["seed"] or 0))  # a baseline has no seed
            if row["value"]:
                value[(*run, row["split"], row["metric"])] = float(row["value"])
            if row["baseline"] == "false":
                gate[run] = row["gate"] == "passed"
    passed: dict[str, list[int]] = defaultdict(list)
    trained: dict[str, list[int]] = defaultdict(list)
    for (model, seed), ok in sorted(gate.items()):
        trained[model].append(seed)
        if ok:
            passed[model].append(seed)

    def ood_lpips(model: str) -> list[float]:
        return [value[(model, seed, "test_ood", "lpips")] for seed in passed[model]]

    out = ["| model | seed | gate | ID factor accuracy (%) | ID LPIPS | OOD LPIPS | OOD factor accuracy (%) |",
           "|---|---|---|---|---|---|---|"]
    def listed(model: str, seed: int, label: str) -> str:
        id_gate, ood_gate = value[(model, seed, GATE_SPLIT, GATE_METRIC)], value[(model, seed, "test_ood", GATE_METRIC)]
        id_lpips, ood = value[(model, seed, "test_id", "lpips")], value[(model, seed, "test_ood", "lpips")]
        return f"| {model} | {label} | {id_gate:.1f} | {id_lpips:.4f} | {ood:.4f} | {ood_gate:.1f} |"

    for (model, seed), ok in sorted(gate.items()):
        out.append(listed(model, seed, f"{seed} | {'passed' if ok else 'failed'}"))
    if ("copy_input", 0, "test_id", "lpips") in value:
        out.append(listed("copy_input", 0, "- | (baseline)"))
    out += ["", "| model | passed | OOD LPIPS (passed runs) |", "|---|---|---|"]
    for model, seeds in sorted(trained.items()):
        out.append(f"| {model} | {len(passed[model])} of {len(seeds)} | {shown(ood_lpips(model), 4)} |")
    out += ["", "| rule | verdict |", "|---|---|"]
    out.append(f"| A. SSM-Slot beats SSM-VAE | {lower('SSM-Slot', 'SSM-VAE', ood_lpips)} |")
    out.append(f"| B. SSM-Slot matches I2I-ViT | {matches('SSM-Slot', 'I2I-ViT', ood_lpips)} |")
    for ssm in ("SSM-VAE", "SSM-Slot"):
        out.append(f"| C. {ssm} stays behind the Oracle | {lower('Oracle', ssm, ood_lpips)} |")
    sys.stdout.write("\n".join(out) + "\n")


def lower(better: str, worse: str, ood_lpips: Callable[[str], list[float]]) -> str:
    """Whether `better`'s mean OOD LPIPS over its passed runs is below `worse`'s."""
    a, b = ood_lpips(better), ood_lpips(worse)
    if not a or not b:
        return f"no verdict: no passed run of {' or '.join(m for m, v in ((better, a), (worse, b)) if not v)}"
    mean_a, mean_b = mean_sem(a)[0], mean_sem(b)[0]
    return f"{'holds' if mean_a < mean_b else 'does not hold'} ({better} {mean_a:.4f}, {worse} {mean_b:.4f})"


def matches(one: str, other: str, ood_lpips: Callable[[str], list[float]]) -> str:
    """Whether two models' mean OOD LPIPS differ by at most `MATCH_SEMS` x the root of their summed squared SEMs."""
    a, b = ood_lpips(one), ood_lpips(other)
    if len(a) < 2 or len(b) < 2:
        short = [m for m, v in ((one, a), (other, b)) if len(v) < 2]
        return f"no verdict: fewer than 2 passed runs of {' or '.join(short)}"
    (mean_a, sem_a), (mean_b, sem_b) = mean_sem(a), mean_sem(b)
    bound = MATCH_SEMS * math.sqrt(sem_a**2 + sem_b**2)
    holds = abs(mean_a - mean_b) <= bound
    return (f"{'holds' if holds else 'does not hold'} ({one} {mean_a:.4f}, {other} {mean_b:.4f}; "
            f"difference {abs(mean_a - mean_b):.4f}, bound {bound:.4f})")


if __name__ == "__main__":
    main()
