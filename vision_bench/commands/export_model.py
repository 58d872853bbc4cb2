"""`vision-bench export-model RUN --out DIR [--checkpoint best|last|PATH] [--push-to-hub USER/MODEL[@BRANCH]]`: a
trained model as a portable folder, and on the Hugging Face hub.

DIR gets `model.safetensors`, `config.json`, a `README.md` model card (the training data, the command
lines and config that trained it, and the run's evaluation of this checkpoint when RUN/evaluation/metrics.json,
or `--metrics FILE`, scored it; URLs without credentials or query strings, `pipe:` commands, paths outside the run
and the `tracking` section left out, as the card says) and, for models with a timm encoder, `encoder/` in timm's
own layout (see `vision_bench.models.pretrained`, `vision_bench.models.model_card` and
`vision_bench.models.timm_folder`);
`vision_bench.models.load_pretrained(DIR)` rebuilds the model with the same outputs, without the
run, its data or the weights it started from. `--push-to-hub` then uploads the folder
(`vision_bench.models.push_to_hub`); `load_pretrained("user/model@BRANCH")` reads it back.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vision_bench.commands._common import check_out_folder
from vision_bench.io.documents import JSONDict

NAME = "export-model"
HELP = ("write a trained run's model as model.safetensors + config.json + a README.md model card (+ encoder/ in "
        "timm's layout) for vision_bench.models.load_pretrained; --push-to-hub uploads it")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN", help="a directory written by `vision-bench train`")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR",
                        help="folder for the exported model: new, empty, or an earlier export-model output")
    parser.add_argument("--checkpoint", default="best", help="best, last, or the path of a checkpoint (default best)")
    card = parser.add_argument_group("model card (README.md)")
    card.add_argument("--metrics", type=Path, default=None, metavar="FILE",
                      help="the metrics.json of an evaluation of this checkpoint, for the card's results (default: "
                      "RUN/evaluation/metrics.json when it scored the exported checkpoint's step)")
    card.add_argument("--license", default=None, metavar="ID",
                      help="the card's hub license id (apache-2.0, mit, cc-by-4.0, other, ...); default none")
    hub = parser.add_argument_group("Hugging Face hub (needs the hub client: pip install 'vision-bench[hf]')")
    hub.add_argument("--push-to-hub", metavar="USER/MODEL[@BRANCH]", default=None,
                     help="then upload the folder to this hub repository (created when missing), on BRANCH (created "
                     "when missing) or main; log in first with `hf auth login` or set $HF_TOKEN")
    hub.add_argument("--private", action="store_true", help="create the repository private (default: the account's "
                     "default)")
    hub.add_argument("--commit-message", default=None, help="the hub commit's message")


def run(args: argparse.Namespace) -> int:
    from vision_bench.data.hf_card import check_license
    from vision_bench.evaluation.run import checkpoint_path
    from vision_bench.models import create_model, push_to_hub, save_pretrained
    from vision_bench.models.model_card import TrainingRecord
    from vision_bench.models.pretrained import portable_options, push_target
    from vision_bench.train.checkpoint import config_of, load_model_state, read_checkpoint
    from vision_bench.train.components import model_options, resolve_spec
    from vision_bench.train.environment import recorded_commands

    check_out_folder(args.out, NAME)
    check_license(args.license)
    if args.push_to_hub is not None:
        push_target(args.push_to_hub)  # a bad id, no hub client or the hub switched off: refused before any work
    path = checkpoint_path(args.run_dir, args.checkpoint)
    payload = read_checkpoint(path)
    config = config_of(payload, path)
    spec = resolve_spec(config)
    options = portable_options(model_options(config, spec))
    model = create_model(config.model.name, **options, render_spec=spec)  # exactly as load_pretrained rebuilds it
    load_model_state(model, payload["model"], path)
    step = int(payload["step"])
    training = TrainingRecord(
        dataset=config.to_dict()["dataset"], commands=recorded_commands(args.run_dir), config=config.to_dict(),
        metrics=_evaluation(args.run_dir, args.metrics, step), checkpoint=path.name, run_dir=args.run_dir.absolute(),
    )
    written = save_pretrained(model, args.out, options=options, render_spec=spec, trained_steps=step,
                              training=training, license=args.license)
    print(f"exported {config.model.name} (step {step}) from {path}: "
          f"{', '.join(file.name for file in written)} in {args.out}")
    if args.push_to_hub is not None:
        url = push_to_hub(args.out, args.push_to_hub, private=args.private or None, commit_message=args.commit_message)
        print(f"pushed {args.out} to the Hugging Face hub: {url}")
    return 0


def _evaluation(run_dir: Path, metrics: Path | None, step: int) -> JSONDict | None:
    """The metrics.json the card reports: `metrics` (which must have scored `step`), else the run's own evaluation when
    it scored `step`, else None (said in one line)."""
    from vision_bench.errors import ConfigError
    from vision_bench.evaluation.outputs import METRICS_FILE, read_metrics
    from vision_bench.evaluation.run import evaluation_dir

    path = metrics if metrics is not None else evaluation_dir(run_dir, None, make=False) / METRICS_FILE
    if metrics is None and not path.is_file():
        return None
    document = read_metrics(path)
    if document.get("step") == step:
        return document
    scored = f"{path} scored the checkpoint of step {document.get('step')}, not the exported one of step {step}"
    if metrics is not None:
        raise ConfigError(f"--metrics {scored}; give the metrics.json of an evaluation of this checkpoint "
                          "(vision-bench evaluate RUN --checkpoint ...)")
    print(f"note: the model card reports no evaluation: {scored}")
    return None
