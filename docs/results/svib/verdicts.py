"""Apply the verdict rules stated in study.yaml (before the runs) to results.csv and print them as Markdown.

    python docs/results/svib/verdicts.py > docs/results/svib/verdicts.md

Per model, task and alpha: how many trained runs passed the gate (ID factor accuracy >= 90%), the mean
+/- SEM over the passed runs' seeds of OOD factor accuracy and OOD LPIPS, and the failed runs by seed.
Then the three rules, per model and task; a model with no passed run in a setting gets no verdict there.
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))
from verdict_stats import mean_sem, shown  # noqa: E402  (what every study's verdicts share)

GATE_METRIC, GATE_SPLIT = "factor_accuracy", "test_id"  # study.yaml's gate; results.csv says who passed it
ALPHAS = ("0.0", "0.2", "0.6")
FAILS_BELOW = 50.0  # rule 1: mean OOD factor accuracy at alpha 0.0 below 50%
SOLVES_AT_LEAST = 90.0  # rule 3: every passed Oracle run >= 90% OOD factor accuracy at 0.2 and 0.6


def main() -> None:
    value: dict[tuple[str, str, str, int, str, str], float] = {}
    gate: dict[tuple[str, str, str, int], bool] = {}  # the bench's own verdict per trained run (results.csv)
    with open(HERE / "results.csv", newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            _, task, alpha = row["experiment"].split("/")
            run = (row["model"], task, alpha, int(row["seed"] or 0))  # a baseline has no seed
            if row["value"]:  # an unavailable metric (stubbornness on scenes) has no value
                value[(*run, row["split"], row["metric"])] = float(row["value"])
            if row["baseline"] == "false":
                gate[run] = row["gate"] == "passed"
    runs = sorted({key[:4] for key in value})
    trained = defaultdict(list)  # (model, task, alpha) -> [(seed, passed)]
    for (model, task, alpha, seed), passed in sorted(gate.items()):
        trained[(model, task, alpha)].append((seed, passed))

    def passed_values(model: str, task: str, alpha: str, metric: str) -> list[float]:
        return [value[(model, task, alpha, seed, "test_ood", metric)]
                for seed, ok in trained[(model, task, alpha)] if ok]

    out = ["| model | task | alpha | passed | OOD factor accuracy (%) | OOD LPIPS | failed runs (ID factor acc.) |",
           "|---|---|---|---|---|---|---|"]
    for (model, task, alpha), seeds in sorted(trained.items()):
        failed = [f"seed {seed} ({value[(model, task, alpha, seed, GATE_SPLIT, GATE_METRIC)]:.1f})"
                  for seed, ok in seeds if not ok]
        out.append(f"| {model} | {task} | {alpha} | {sum(ok for _, ok in seeds)} of {len(seeds)} | "
                   f"{shown(passed_values(model, task, alpha, GATE_METRIC), 1)} | "
                   f"{shown(passed_values(model, task, alpha, 'lpips'), 4)} | {', '.join(failed) or '-'} |")
    for model, task, alpha, seed in runs:
        if model == "copy_input" and (model, task, alpha, seed, "test_ood", GATE_METRIC) in value:
            out.append(f"| copy_input | {task} | {alpha} | (baseline) | "
                       f"{value[(model, task, alpha, seed, 'test_ood', GATE_METRIC)]:.1f} | "
                       f"{value[(model, task, alpha, seed, 'test_ood', 'lpips')]:.4f} | - |")
    out += ["", "| rule | model | task | verdict |", "|---|---|---|---|"]
    for model, task in sorted({(m, t) for m, t, _ in trained}):
        ood = {alpha: passed_values(model, task, alpha, GATE_METRIC) for alpha in ALPHAS}
        lpips = {alpha: passed_values(model, task, alpha, "lpips") for alpha in ALPHAS}
        if ood["0.0"]:
            holds = mean_sem(ood["0.0"])[0] < FAILS_BELOW
            out.append(f"| 1. fails at alpha 0.0 | {model} | {task} | {'holds' if holds else 'does not hold'} "
                       f"(mean {mean_sem(ood['0.0'])[0]:.1f}%; the rule: below {FAILS_BELOW:.0f}%) |")
        else:
            out.append(f"| 1. fails at alpha 0.0 | {model} | {task} | no verdict: no run passed the gate at 0.0 |")
        if all(lpips[alpha] for alpha in ALPHAS):
            means = [mean_sem(lpips[alpha])[0] for alpha in ALPHAS]
            holds = means[1] < means[0] and means[2] < means[1]
            out.append(f"| 2. OOD LPIPS falls as alpha grows | {model} | {task} | "
                       f"{'holds' if holds else 'does not hold'} (mean "
                       f"{', '.join(f'{m:.4f} at {alpha}' for m, alpha in zip(means, ALPHAS))}) |")
        else:
            missing = [alpha for alpha in ALPHAS if not lpips[alpha]]
            out.append(f"| 2. OOD LPIPS falls as alpha grows | {model} | {task} | no verdict: no run passed the gate "
                       f"at alpha {', '.join(missing)} |")
        if model.startswith("Oracle"):
            holds = bool(ood["0.2"]) and bool(ood["0.6"]) and min(ood["0.2"] + ood["0.6"]) >= SOLVES_AT_LEAST
            out.append(f"| 3. Oracle solves from alpha 0.2 | {model} | {task} | "
                       f"{'holds' if holds else 'does not hold'} |")
    if not any(model.startswith("Oracle") for model, _, _ in trained):
        out.append("| 3. Oracle solves from alpha 0.2 | - | - | no verdict: the Oracle is not in this run (README.md, "
                   "Amendment) |")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
