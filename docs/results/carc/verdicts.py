"""Apply the verdict rules stated in study.yaml and 3shot/study.yaml (before the runs) to both results.csv files.

    python docs/results/carc/verdicts.py > docs/results/carc/verdicts.md

Printed: every trained run with its gate value (ID exact match) and OOD exact match, copy_input's beside them; per
model and setup, "k of n passed" and the mean +/- SEM over the passed runs' seeds; then the positive control and
rules A and B. The paper's numbers (Tables 1 and 2) stand in their own column.
"""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))
from verdict_stats import leads, mean_sem, shown  # noqa: E402  (what every study's verdicts share)

METRIC, GATE_SPLIT = "grid_accuracy", "test_id"  # exact match; study.yaml's gate split
PAPER = {("MLC", "systematicity"): "78.26 (Table 1); 86.73 +- 6.03 over four splits (Table 2)",
         ("MLC - no copy task", "systematicity"): "69.05 +- 9.23 (Table 2)",
         ("MLC", "3shot"): "98.78 +- 1.99 (Table 2)"}
GENERALISES_AT_LEAST = 50.0  # rule A
CONTROL_AT_LEAST, CONTROL_RUNS = 90.0, 2  # the positive control's rule (3shot/study.yaml)
Run = tuple[str, str, int]  # model, setup, seed


def read(folder: Path, setup: str) -> tuple[dict[Run, tuple[bool, float, float]], dict[str, float]]:
    """Per trained run (passed, ID exact match, OOD exact match) and each baseline's OOD exact match."""
    ids: dict[Run, float] = {}
    oods: dict[Run, float] = {}
    passed: dict[Run, bool] = {}
    baselines: dict[str, float] = {}
    with open(folder / "results.csv", newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["metric"] != METRIC or not row["value"]:
                continue
            if row["baseline"] == "true":
                if row["split"] == "test_ood":
                    baselines[row["model"]] = float(row["value"])
                continue
            run = (row["model"], setup, int(row["seed"]))
            passed[run] = row["gate"] == "passed"
            (ids if row["split"] == GATE_SPLIT else oods)[run] = float(row["value"])
    return {run: (passed[run], ids[run], oods[run]) for run in passed}, baselines


def main() -> None:
    runs, baselines = read(HERE, "systematicity")
    control_runs, control_baselines = read(HERE / "3shot", "3shot")
    runs.update(control_runs)
    out = ["| model | setup | seed | gate | ID exact match (%) | OOD exact match (%) |", "|---|---|---|---|---|---|"]
    for (model, setup, seed), (ok, id_value, ood_value) in sorted(runs.items()):
        gate = "passed" if ok else "failed"
        out.append(f"| {model} | {setup} | {seed} | {gate} | {id_value:.1f} | {ood_value:.1f} |")
    out += ["", "| model | setup | passed | OOD exact match, passed runs (%) | copy_input OOD (%) | paper (%) |",
            "|---|---|---|---|---|---|"]

    def ood(model: str, setup: str) -> list[float]:
        return [value for (m, s, _), (ok, _, value) in sorted(runs.items()) if ok and m == model and s == setup]

    for model, setup in PAPER:
        total = sum(1 for (m, s, _) in runs if m == model and s == setup)
        floor = (control_baselines if setup == "3shot" else baselines).get("copy_input", math.nan)
        out.append(f"| {model} | {setup} | {len(ood(model, setup))} of {total} | {shown(ood(model, setup), 1)} | "
                   f"{floor:.1f} | {PAPER[(model, setup)]} |")
    out += ["", "| rule | verdict |", "|---|---|"]
    control = ood("MLC", "3shot")
    if len(control) < CONTROL_RUNS:
        held, words = False, f"does not hold: {len(control)} of 3 runs passed the gate"
    else:
        mean = mean_sem(control)[0]
        held = mean >= CONTROL_AT_LEAST
        words = f"{'holds' if held else 'does not hold'} (mean OOD {mean:.1f})"
    out.append(f"| positive control: MLC solves 3-Shot | {words} |")
    full, no_copy = ood("MLC", "systematicity"), ood("MLC - no copy task", "systematicity")
    if not full:
        systematic = "no verdict: no passed run of MLC"
    else:
        mean = mean_sem(full)[0]
        systematic = f"{'holds' if mean >= GENERALISES_AT_LEAST else 'does not hold'} (mean OOD {mean:.1f})"
    copy_task = leads("MLC", "MLC - no copy task", full, no_copy)
    if not held:  # the rule stated before the runs: without the control, the model did not learn the task
        systematic, copy_task = (f"no verdict: the positive control does not hold, so the model did not learn the task "
                                 f"at this budget ({said})" for said in (systematic, copy_task))
    out.append(f"| A. MLC generalises systematically | {systematic} |")
    out.append(f"| B. the copy task helps | {copy_task} |")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
