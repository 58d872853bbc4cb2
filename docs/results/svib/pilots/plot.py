"""Draw the three Oracle pilots' training losses (docs/results/svib/pilots/)."""
import json
from pathlib import Path

from vision_bench.bench.plots import plot_training_curves

root = Path("docs/results/svib/pilots")
panels = {"oracle-rgb-lr1e-3": "train loss: RGB head (MSE)",
          "oracle-palette-lr1e-3": "train loss: palette head (cross-entropy)",
          "oracle-palette-lr3e-3": "train loss: palette head (cross-entropy)"}
curves: dict = {}
for run, panel in panels.items():
    steps = [json.loads(line) for line in (root / run / "metrics.jsonl").open()]
    steps = [r for r in steps if r.get("kind") == "step"]
    curves.setdefault(panel, {})[run] = ([r["step"] for r in steps], [r["loss"] for r in steps])
plot_training_curves(curves, path=root / "training_curves.png", scales={p: "log" for p in curves})
