"""`vision-bench quickstart`: the whole pipeline in a few minutes on a laptop CPU.

A small EnvGen-style study (paper 000, appendix F, setting G1: more objects out of distribution)
at 64x64 pixels: a 16x16 grid (4-pixel cells), 1-2 objects of at most 4x4 cells in training and
in-distribution tests, 3-4 objects out of distribution, one fixed rule. A timm CNN (U-Net) and a
timm ViT are trained from scratch with palette heads, then evaluated ID and OOD next to the
copy_input, mean_target and ground_truth baselines, with LPIPS, and the bench report is written.

The rule is `change_shape_color`: every object cell takes the next color. It changes every object,
so copying the input scores GA 0, and it is learnable in the few hundred CPU steps the budget
allows. Spatial rules (translate_up, rot90, ...) need the longer runs of docs/results and configs/paper.
The images are 64x64 rather than the renderer's default 128x128 so that the whole command takes
about three minutes on two CPU cores (128x128 took seven); `bench` and `train` keep the default.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from vision_bench.io.documents import JSONDict

if TYPE_CHECKING:
    from vision_bench.bench.runner import BenchResult

QUICKSTART_TASK: JSONDict = {
    "description": "quickstart (EnvGen G1 style): change_shape_color, 1-2 objects -> 3-4 objects in a 16x16 grid",
    "seed": 0,
    "grid_height": [16, 16],
    "grid_width": [16, 16],
    "n_objects": [1, 2],
    "object_filter": [{"max_height": 4, "max_width": 4}],
    "transformations": ["change_shape_color"],
    "splits": {"val_ood": {"n_objects": [3, 4]}, "test_ood": {"n_objects": [3, 4]}},
}

_TASK_FILE = "quickstart_task.yaml"

ESTIMATE = ("about 3 minutes on 2 quiet CPU cores (roughly twice that with other jobs running on them), "
            "under a minute on a GPU")
"""What the whole command takes (docs/benchmarks.md has the measurements behind it)."""
PHASES = ("fetch or check the LPIPS weights", "bench cell 1: train and evaluate the CNN (500 steps)",
          "cell 2: the ViT (400 steps)", "cell 3: the baselines", "the report")
"""The steps the quickstart goes through, in order; the bench logs each cell and the report as it starts them."""


def quickstart_config(task_file: Path) -> JSONDict:
    """The bench config of the quickstart: two models, one experiment, one seed, all baselines."""
    return {
        "name": "quickstart",
        "experiments": [str(task_file)],
        "models": [
            {
                "name": "unet:test_resnet",
                "label": "CNN (unet:test_resnet)",
                "options": {"head": "palette", "decoder_width": 8},
                "train": {"training": {"max_steps": 500}, "optimizer": {"lr": 0.005}},
            },
            {
                "name": "vit:test_vit",
                "label": "ViT (vit:test_vit, patch 4)",
                "options": {"head": "palette", "patch_size": 4},
                "train": {"training": {"max_steps": 400}, "optimizer": {"lr": 0.003}},
            },
        ],
        "seeds": [0],
        "baselines": ["copy_input", "mean_target", "ground_truth"],
        "data": {"n_train": 6400, "n_val": 50, "n_test": 100, "spec": {"size": [64, 64]}},
        "train": {
            "training": {"batch_size": 16, "eval_batch_size": 50, "epochs": 1, "log_every": 10},
            "schedule": {"warmup_steps": 20},
            "runtime": {"num_workers": 0},
        },
        "evaluate": {"checkpoint": "last", "splits": ["test_id", "test_ood"], "sheet_samples": 4, "batch_size": 50},
    }


def run_quickstart(out_dir: str | Path, progress: bool = True, device: str | None = None) -> tuple[BenchResult, str]:
    """Run the quickstart bench into `out_dir` (models on `device`, default auto); return the bench result
    and its summary table. The report, results.csv and results.json are written into `out_dir`."""
    from vision_bench.bench.runner import run_bench, summary_table
    from vision_bench.io.atomic import atomic_write_text, output_folder

    out_dir = output_folder(out_dir)
    task_file = out_dir / _TASK_FILE
    atomic_write_text(task_file, yaml.safe_dump(QUICKSTART_TASK, sort_keys=False))
    result = run_bench(quickstart_config(task_file), out_dir, progress=progress, device=device)
    return result, summary_table(result)
