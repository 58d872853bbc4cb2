"""Draw the training loss of every finished run of the sweep (docs/results/cogitao_models/vit_g1/), log scale, and
the envgen study's ViT (learned positions, 1,000 steps) beside it; run from the repository root."""

import json
from pathlib import Path

from vision_bench.bench.plots import plot_training_curves

root = Path("docs/results/cogitao_models/vit_g1")
SHORT = {"ViT_2D_RoPE": "RoPE", "ViT_2D_sin-cos": "sin-cos", "ViT_learned": "learned"}  # run folder -> legend


def short(folder: str) -> str:
    return next(label for prefix, label in SHORT.items() if folder.startswith(prefix))


runs = {f"{short(path.parent.parent.name)} s{path.parent.name.removeprefix('seed')}": path.parent / "metrics.jsonl"
        for path in sorted(root.glob("runs/envgen_G1_1/*/seed*/evaluation"))}
runs["learned, 1k steps (envgen) s0"] = Path(
    "docs/results/envgen/runs/envgen_G1_1/ViT_vit_test_vit_patch_4/seed0/metrics.jsonl")
curves: dict = {"train loss (cross-entropy over the palette)": {}}
for label, path in runs.items():
    steps = [record for record in map(json.loads, path.open()) if record.get("kind") == "step"]
    curves["train loss (cross-entropy over the palette)"][label] = ([r["step"] for r in steps],
                                                                   [r["loss"] for r in steps])
plot_training_curves(curves, path=root / "training_curves.png", scales={panel: "log" for panel in curves})
