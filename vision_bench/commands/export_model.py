"""`vision-bench export-model RUN --out DIR [--checkpoint best|last|PATH]`: a trained model as a portable folder.

DIR gets `model.safetensors`, `config.json`, a `README.md` model card and, for models with a timm
encoder, `encoder.safetensors` (see `vision_bench.models.pretrained`);
`vision_bench.models.load_pretrained(DIR)` rebuilds the model with the same outputs, without the
run, its data or the weights it started from.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vision_bench.commands._common import check_out_folder

NAME = "export-model"
HELP = ("write a trained run's model as model.safetensors + config.json (+ encoder.safetensors, README.md) "
        "for vision_bench.models.load_pretrained")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN", help="a directory written by `vision-bench train`")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR",
                        help="folder for the exported model: new, empty, or an earlier export-model output")
    parser.add_argument("--checkpoint", default="best", help="best, last, or the path of a checkpoint (default best)")


def run(args: argparse.Namespace) -> int:
    from vision_bench.evaluation.run import checkpoint_path
    from vision_bench.models import create_model, save_pretrained
    from vision_bench.models.pretrained import portable_options
    from vision_bench.train.checkpoint import config_of, load_model_state, read_checkpoint
    from vision_bench.train.components import model_options, resolve_spec

    check_out_folder(args.out, NAME)
    path = checkpoint_path(args.run_dir, args.checkpoint)
    payload = read_checkpoint(path)
    config = config_of(payload, path)
    spec = resolve_spec(config)
    options = portable_options(model_options(config, spec))
    model = create_model(config.model.name, **options, render_spec=spec)  # exactly as load_pretrained rebuilds it
    load_model_state(model, payload["model"], path)
    written = save_pretrained(model, args.out, options=options, render_spec=spec, trained_steps=int(payload["step"]))
    print(f"exported {config.model.name} (step {int(payload['step'])}) from {path}: "
          f"{', '.join(file.name for file in written)} in {args.out}")
    return 0
