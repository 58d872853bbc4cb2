"""`vision-bench export-model RUN --out DIR [--checkpoint best|last|PATH] [--push-to-hub USER/MODEL[@BRANCH]]`: a
trained model as a portable folder, and on the Hugging Face hub.

DIR gets `model.safetensors`, `config.json`, a `README.md` model card and, for models with a timm
encoder, `encoder.safetensors` (see `vision_bench.models.pretrained`);
`vision_bench.models.load_pretrained(DIR)` rebuilds the model with the same outputs, without the
run, its data or the weights it started from. `--push-to-hub` then uploads the folder
(`vision_bench.models.push_to_hub`); `load_pretrained("user/model@BRANCH")` reads it back.
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
    hub = parser.add_argument_group("Hugging Face hub (needs the hub client: pip install 'vision-bench[hf]')")
    hub.add_argument("--push-to-hub", metavar="USER/MODEL[@BRANCH]", default=None,
                     help="then upload the folder to this hub repository (created when missing), on BRANCH (created "
                     "when missing) or main; log in first with `hf auth login` or set $HF_TOKEN")
    hub.add_argument("--private", action="store_true", help="create the repository private (default: the account's "
                     "default)")
    hub.add_argument("--commit-message", default=None, help="the hub commit's message")


def run(args: argparse.Namespace) -> int:
    from vision_bench.evaluation.run import checkpoint_path
    from vision_bench.models import create_model, push_to_hub, save_pretrained
    from vision_bench.models.pretrained import portable_options, push_target
    from vision_bench.train.checkpoint import config_of, load_model_state, read_checkpoint
    from vision_bench.train.components import model_options, resolve_spec

    check_out_folder(args.out, NAME)
    if args.push_to_hub is not None:
        push_target(args.push_to_hub)  # a bad id, no hub client or the hub switched off: refused before any work
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
    if args.push_to_hub is not None:
        url = push_to_hub(args.out, args.push_to_hub, private=args.private or None, commit_message=args.commit_message)
        print(f"pushed {args.out} to the Hugging Face hub: {url}")
    return 0
