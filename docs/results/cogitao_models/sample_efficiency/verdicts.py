"""Apply the verdict rule stated in study.yaml (before the runs) to the finished cells and print it as Markdown.

    cd docs/results/cogitao_models/sample_efficiency && python verdicts.py > verdicts.md

It reads each finished cell's evaluation (runs/*/*/seed*/evaluation/metrics.json and the baselines'), the numbers
results.csv collects, so it also works while cells are still running. Per model and experiment: every run's test
grid accuracy (no gate: every run counts), the mean +/- SEM over seeds
0-2 and the paper's Table 2 value; the value is reproduced when the mean is within 20 points of it (rotate: every
model at most 5.7, so a mean of at most 25.7). A row with fewer than the three seeds gets no verdict yet. Then the
finding: "with 1,000 samples, translate is learned by ResNet and Grid-TF and not by Vanilla-TF".
"""

from __future__ import annotations

import json
import math
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parents[1]))
from verdict_stats import mean_sem  # noqa: E402  (what every study's verdicts share)

SEEDS = (0, 1, 2)
WITHIN = 20.0
EXPERIMENTS = {"sample-efficiency/S2/1": "translate", "sample-efficiency/S2/2": "rotate"}
PAPER = {  # paper 000, Table 2, S2 (1,000 samples); LLaDA's translate value is not in the paper's text
    ("cogitao:resnet", "translate"): 100.0, ("cogitao:vanilla-tf", "translate"): 0.0,
    ("cogitao:grid-tf", "translate"): 100.0, ("cogitao:pl-tf", "translate"): 83.7,
}
ROTATE_AT_MOST = 5.7  # every model on rotate at S2
FINDING = ("cogitao:resnet", "cogitao:grid-tf", "cogitao:vanilla-tf")


def model_name(label: str) -> str:
    """'ResNet (cogitao:resnet)' -> 'cogitao:resnet'; a baseline's name as it is."""
    return label[label.index("(") + 1:-1] if label.endswith(")") else label


def verdict(model: str, family: str, mean: float) -> tuple[str, bool | None]:
    """(the paper's value as the rule reads it, reproduced or None when the rule gives no verdict)."""
    if family == "rotate":
        return f"at most {ROTATE_AT_MOST}", mean <= ROTATE_AT_MOST + WITHIN
    if (model, family) not in PAPER:
        return "not in the paper's text", None
    paper = PAPER[(model, family)]
    return f"{paper:.1f}", abs(mean - paper) <= WITHIN


def read_cells() -> tuple[dict[tuple[str, str], dict[int, float]], dict[tuple[str, str], dict[int, float]]]:
    """(model, family) -> seed -> test grid accuracy, and the same for Obj-PPA, from every finished cell."""
    accuracy: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    object_ppa: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)

    def add(model: str, experiment: str, seed: int, splits: dict) -> None:
        metrics = splits["test_id"]["metrics"]
        accuracy[(model, EXPERIMENTS[experiment])][seed] = metrics["grid_accuracy"]
        object_ppa[(model, EXPERIMENTS[experiment])][seed] = metrics["object_pixel_accuracy"]

    for path in sorted(HERE.glob("runs/*/*/seed*/evaluation/metrics.json")):
        cell = json.loads(path.read_text(encoding="utf-8"))
        add(cell["model"], cell["data"]["study"], int(path.parents[1].name.removeprefix("seed")), cell["splits"])
    for path in sorted(HERE.glob("baselines/*/evaluation/metrics.json")):
        cell = json.loads(path.read_text(encoding="utf-8"))
        for name, baseline in cell["baselines"].items():
            if name != "ground_truth":
                add(name, cell["experiment"], 0, baseline["splits"])
    return accuracy, object_ppa


def main() -> None:
    accuracy, object_ppa = read_cells()
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
        paper, holds = verdict(model, family, mean)
        if set(by_seed) != set(SEEDS):
            holds, text = None, f"no verdict yet ({len(by_seed)} of {len(SEEDS)} seeds)"
        else:
            text = "no verdict" if holds is None else ("yes" if holds else "no")
        reproduced[(model, family)] = holds
        out.append(f"| {model} | {family} | {runs} | {shown} | {ppa:.1f} | {paper} | {text} |")
    rows = [reproduced.get((model, "translate")) for model in FINDING]
    finding = "does not hold" if False in rows else "no verdict yet" if None in rows else "holds"
    out += ["", "The finding \"with 1,000 samples, translate is learned by ResNet and Grid-TF and not by "
            f"Vanilla-TF\": {finding} (it needs the translate rows of {', '.join(FINDING)} to reproduce)."]
    print("\n".join(out))


if __name__ == "__main__":
    main()
