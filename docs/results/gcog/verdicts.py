"""Apply the verdict rules stated in study.yaml (before the runs) to results.csv and the extra evaluations.

    python docs/results/gcog/verdicts.py > docs/results/gcog/verdicts.md

results.csv (the bench's) gives each trained run's gate and its test_ood grid accuracy on the three experiments;
run.sh's extra evaluations (`evaluation_distractor_40/metrics.json` and the like in each run folder) give the levels
that share a training split. Printed: every trained run with its gate value and OOD grid accuracy per level; per model
and level, "k of n passed" and the mean +/- SEM over the passed runs' seeds; then rules A, B and C.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))
from verdict_stats import leads, mean_sem, shown  # noqa: E402  (what every study's verdicts share)

GATE_METRIC, GATE_SPLIT, METRIC = "grid_accuracy", "test_id", "grid_accuracy"  # study.yaml's gate
MODELS = ("SSTfmr", "CrossAttn", "Perceiver")
LEVELS = {  # the column name -> (the bench experiment that trained the run, the extra evaluation folder or None)
    "distractors 10": ("gcog/distractor/10", None),
    "distractors 20": ("gcog/distractor/10", "evaluation_distractor_20"),
    "distractors 30": ("gcog/distractor/10", "evaluation_distractor_30"),
    "distractors 40": ("gcog/distractor/10", "evaluation_distractor_40"),
    "systematic depth 1": ("gcog/systematic/depth1", None),
    "productive depth 5": ("gcog/productive/5", None),
    "productive depth 7": ("gcog/productive/5", "evaluation_productive_7"),
}
FAILS_BELOW = 10.0  # rule C: mean OOD grid accuracy below 10% at both productive depths
Run = tuple[str, str, int]  # model, experiment, seed


def main() -> None:
    gate: dict[Run, tuple[bool, float]] = {}
    ood: dict[tuple[Run, str], float] = {}
    baseline: dict[tuple[str, str], float] = {}  # (baseline, level) -> OOD grid accuracy
    with open(HERE / "results.csv", newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            run = (row["model"], row["experiment"], int(row["seed"] or 0))  # a baseline has no seed
            if row["baseline"] == "false" and row["split"] == GATE_SPLIT and row["metric"] == GATE_METRIC:
                gate[run] = (row["gate"] == "passed", float(row["value"] or "nan"))  # no value fails the gate
            if not row["value"]:
                continue
            if row["baseline"] == "true":
                if row["split"] == "test_ood" and row["metric"] == METRIC:
                    for level, (experiment, folder) in LEVELS.items():
                        if experiment == row["experiment"] and folder is None:
                            baseline[(row["model"], level)] = float(row["value"])
                continue
            if row["split"] == "test_ood" and row["metric"] == METRIC:
                for level, (experiment, folder) in LEVELS.items():
                    if experiment == run[1] and folder is None:
                        ood[(run, level)] = float(row["value"])
    for (model, experiment, seed) in gate:
        for level, (trained_on, folder) in LEVELS.items():
            path = HERE / "runs" / trained_on.replace("/", "_") / model / f"seed{seed}" / str(folder) / "metrics.json"
            if trained_on == experiment and folder is not None and path.is_file():
                ood[((model, experiment, seed), level)] = extra_value(path)
                for name, value in extra_baselines(path).items():
                    baseline[(name, level)] = value

    out = ["| model | experiment | seed | gate | ID grid accuracy (%) | OOD grid accuracy (%) |",
           "|---|---|---|---|---|---|"]
    for run, (ok, id_value) in sorted(gate.items()):
        values = ", ".join(f"{level}: {ood[(run, level)]:.1f}" if (run, level) in ood else f"{level}: not evaluated"
                           for level, (e, _) in LEVELS.items() if e == run[1])
        out.append(f"| {run[0]} | {run[1]} | {run[2]} | {'passed' if ok else 'failed'} | {id_value:.1f} | {values} |")
    out += ["", "| model | " + " | ".join(LEVELS) + " |", "|---|" + "---|" * len(LEVELS)]

    def runs(model: str, level: str, *, passing: bool) -> list[Run]:
        return [run for run, (ok, _) in sorted(gate.items())
                if run[0] == model and run[1] == LEVELS[level][0] and (ok or not passing)]

    def passed(model: str, level: str) -> list[float]:
        """The passed runs' OOD grid accuracy at `level`, of those that have it (`unevaluated` names the others)."""
        return [ood[(run, level)] for run in runs(model, level, passing=True) if (run, level) in ood]

    def cell(model: str, level: str) -> str:
        missing = [run for run in runs(model, level, passing=True) if (run, level) not in ood]
        scored = f"{len(runs(model, level, passing=True))} of {len(runs(model, level, passing=False))} passed: "
        return scored + (f"{len(missing)} not evaluated (run.sh)" if missing else shown(passed(model, level), 1))

    for model in MODELS:
        out.append(f"| {model} | " + " | ".join(cell(model, level) for level in LEVELS) + " |")
    for name in ("copy_input", "ground_truth"):
        cells = [f"{baseline[(name, level)]:.1f}" if (name, level) in baseline else "-" for level in LEVELS]
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    def unevaluated(*pairs: tuple[str, str]) -> str | None:
        """'no verdict' when a passed run of a compared model lacks a level's evaluation, else None."""
        short = [f"{model} at {level}" for model, level in pairs
                 if len(passed(model, level)) < len(runs(model, level, passing=True))]
        return f"no verdict: passed runs not evaluated ({', '.join(short)}): run run.sh again" if short else None

    out += ["", "| rule | verdict |", "|---|---|"]
    for rule, level, words in (("A", "distractors 40", "at 40 distractors"),
                               ("B", "systematic depth 1", "on unseen pairings (systematic depth 1)")):
        for better in ("CrossAttn", "Perceiver"):
            verdict = unevaluated((better, level), ("SSTfmr", level)) or leads(
                better, "SSTfmr", passed(better, level), passed("SSTfmr", level))
            out.append(f"| {rule}. {better} beats SSTfmr {words} | {verdict} |")
    for model in MODELS:
        verdict = unevaluated((model, "productive depth 5"), (model, "productive depth 7")) or fails(
            passed(model, "productive depth 5"), passed(model, "productive depth 7"))
        out.append(f"| C. {model} does not generalise productively | {verdict} |")
    sys.stdout.write("\n".join(out) + "\n")


def extra_value(path: Path) -> float:
    """A trained run's test_ood grid accuracy in one of run.sh's extra evaluations."""
    return float(json.loads(path.read_text(encoding="utf-8"))["splits"]["test_ood"]["metrics"][METRIC])


def extra_baselines(path: Path) -> dict[str, float]:
    """The baselines' test_ood grid accuracy in one of run.sh's extra evaluations (the same samples for every run)."""
    baselines = json.loads(path.read_text(encoding="utf-8"))["baselines"]
    return {name: float(entry["splits"]["test_ood"]["metrics"][METRIC]) for name, entry in baselines.items()}


def fails(depth5: list[float], depth7: list[float]) -> str:
    """Whether the mean OOD grid accuracy is below `FAILS_BELOW` at both productive depths."""
    if len(depth5) < 2 or len(depth7) < 2:
        return "no verdict: fewer than 2 passed runs"
    mean5, mean7 = mean_sem(depth5)[0], mean_sem(depth7)[0]
    holds = mean5 < FAILS_BELOW and mean7 < FAILS_BELOW
    return f"{'holds' if holds else 'does not hold'} (depth 5: {mean5:.1f}, depth 7: {mean7:.1f})"


if __name__ == "__main__":
    main()
