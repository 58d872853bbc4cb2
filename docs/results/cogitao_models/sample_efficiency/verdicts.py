"""Apply the verdict rule stated in a study.yaml (before the runs) to its finished cells and print it as Markdown.

    cd docs/results/cogitao_models/sample_efficiency && python verdicts.py > verdicts.md          # S2 (this folder)
    cd docs/results/cogitao_models/sample_efficiency && python verdicts.py s3 > s3/verdicts.md    # S3 (s3/)

It reads each finished cell's evaluation (runs/*/*/seed*/evaluation/metrics.json and the baselines'), the numbers
results.csv collects, so it also works while cells are still running. Per model and experiment: every run's test
grid accuracy (no gate: every run counts), the mean +/- SEM over seeds 0-2 and the paper's Table 2 value; the value
is reproduced when the mean is within 20 points of it (S2 rotate: every model at most 5.7, so a mean of at most
25.7). A row with fewer than the three seeds gets no verdict yet. Then each setting's findings.
"""

from __future__ import annotations

import json
import math
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parents[1]))
from verdict_stats import mean_sem  # noqa: E402  (what every study's verdicts share)

SEEDS = (0, 1, 2)
WITHIN = 20.0
ROTATE_AT_MOST = 5.7  # every model on rotate at S2


@dataclass(frozen=True)
class Finding:
    """A sentence of the paper's and the (model, family) rows that must reproduce for it to hold."""

    text: str
    rows: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Setting:
    """One Sample-Efficiency setting's bench: its folder, experiments, Table 2 values and findings."""

    folder: Path
    experiments: dict[str, str]
    paper: dict[tuple[str, str], float]
    findings: tuple[Finding, ...]
    rotate_at_most: float | None = None  # S2: the rule reads "every model at most 5.7" on rotate


SETTINGS = {
    "s2": Setting(  # paper 000, Table 2, S2 (1,000 samples); LLaDA's translate value is not in the paper's text
        HERE, {"sample-efficiency/S2/1": "translate", "sample-efficiency/S2/2": "rotate"},
        {("cogitao:resnet", "translate"): 100.0, ("cogitao:vanilla-tf", "translate"): 0.0,
         ("cogitao:grid-tf", "translate"): 100.0, ("cogitao:pl-tf", "translate"): 83.7},
        (Finding("with 1,000 samples, translate is learned by ResNet and Grid-TF and not by Vanilla-TF",
                 (("cogitao:resnet", "translate"), ("cogitao:grid-tf", "translate"),
                  ("cogitao:vanilla-tf", "translate"))),),
        rotate_at_most=ROTATE_AT_MOST),
    "s3": Setting(  # paper 000, Table 2, S3 (10,000 samples)
        HERE / "s3", {"sample-efficiency/S3/1": "translate", "sample-efficiency/S3/2": "rotate"},
        {("cogitao:resnet", "translate"): 100.0, ("cogitao:vanilla-tf", "translate"): 100.0,
         ("cogitao:grid-tf", "translate"): 100.0, ("cogitao:resnet", "rotate"): 94.4,
         ("cogitao:vanilla-tf", "rotate"): 0.0, ("cogitao:grid-tf", "rotate"): 96.6},
        (Finding("with 10,000 samples Vanilla-TF learns translate", (("cogitao:vanilla-tf", "translate"),)),
         Finding("with 10,000 samples rotate is learned by ResNet and Grid-TF and not by Vanilla-TF",
                 (("cogitao:resnet", "rotate"), ("cogitao:grid-tf", "rotate"), ("cogitao:vanilla-tf", "rotate"))))),
}


def verdict(setting: Setting, model: str, family: str, mean: float) -> tuple[str, bool | None]:
    """(the paper's value as the rule reads it, reproduced or None when the rule gives no verdict)."""
    if family == "rotate" and setting.rotate_at_most is not None:
        return f"at most {setting.rotate_at_most}", mean <= setting.rotate_at_most + WITHIN
    if (model, family) not in setting.paper:
        return "not in the paper's text", None
    paper = setting.paper[(model, family)]
    return f"{paper:.1f}", abs(mean - paper) <= WITHIN


def read_cells(setting: Setting) -> tuple[dict[tuple[str, str], dict[int, float]],
                                          dict[tuple[str, str], dict[int, float]]]:
    """(model, family) -> seed -> test grid accuracy, and the same for Obj-PPA, from every finished cell."""
    accuracy: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    object_ppa: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)

    def add(model: str, experiment: str, seed: int, splits: dict) -> None:
        metrics = splits["test_id"]["metrics"]
        accuracy[(model, setting.experiments[experiment])][seed] = metrics["grid_accuracy"]
        object_ppa[(model, setting.experiments[experiment])][seed] = metrics["object_pixel_accuracy"]

    for path in sorted(setting.folder.glob("runs/*/*/seed*/evaluation/metrics.json")):
        cell = json.loads(path.read_text(encoding="utf-8"))
        add(cell["model"], cell["data"]["study"], int(path.parents[1].name.removeprefix("seed")), cell["splits"])
    for path in sorted(setting.folder.glob("baselines/*/evaluation/metrics.json")):
        cell = json.loads(path.read_text(encoding="utf-8"))
        for name, baseline in cell["baselines"].items():
            if name != "ground_truth":
                add(name, cell["experiment"], 0, baseline["splits"])
    return accuracy, object_ppa


def main(name: str) -> None:
    setting = SETTINGS[name]
    accuracy, object_ppa = read_cells(setting)
    out = ["| model | experiment | runs (GA by seed) | mean GA ± SEM (%) | Obj-PPA (%) | paper | reproduced? |",
           "|---|---|---|---|---|---|---|"]
    reproduced: dict[tuple[str, str], bool | None] = {}
    for (model, family), by_seed in sorted(accuracy.items(), key=lambda item: (item[0][1] != "translate", item[0])):
        values = [by_seed[seed] for seed in sorted(by_seed)]
        runs = ", ".join(f"{seed}: {value:.1f}" for seed, value in sorted(by_seed.items()))
        mean, sem = mean_sem(values)
        ppa = mean_sem(list(object_ppa[(model, family)].values()))[0]
        shown = f"{mean:.1f}" + ("" if math.isnan(sem) else f" ± {sem:.1f}")
        if not model.startswith("cogitao:"):
            out.append(f"| {model} (baseline) | {family} | - | {shown} | {ppa:.1f} | - | - |")
            continue
        paper, holds = verdict(setting, model, family, mean)
        if set(by_seed) != set(SEEDS):
            holds, text = None, f"no verdict yet ({len(by_seed)} of {len(SEEDS)} seeds)"
        else:
            text = "no verdict" if holds is None else ("yes" if holds else "no")
        reproduced[(model, family)] = holds
        out.append(f"| {model} | {family} | {runs} | {shown} | {ppa:.1f} | {paper} | {text} |")
    out.append("")
    for finding in setting.findings:
        rows = [reproduced.get(row) for row in finding.rows]
        held = "does not hold" if False in rows else "no verdict yet" if None in rows else "holds"
        needed = ", ".join(f"{model} on {family}" for model, family in finding.rows)
        out.append(f"The finding \"{finding.text}\": {held} (it needs the rows of {needed} to reproduce).")
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "s2")
