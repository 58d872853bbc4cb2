"""The cost of one training step of each named model on real batches of a study, against a baseline model, same run.

    python benchmarks/bench_study_models.py --study gcog/distractor/10 --size 40 --layout cell:2:top-left \
        --option task_conditioning=101 --option grid_size=20 --batch 32 --baseline cogitao:resnet \
        --steps 3 --models gcog:rnn gcog:gru gcog:sst gcog:dst gcog:crossattn gcog:perceiver
    python benchmarks/bench_study_models.py --study carc/systematicity/1860 --size 68 --layout cell:1:top-left \
        --palette c-arc --batch 20 --steps 2 --baseline carc:mlc \
        --models carc:mlc 'carc:mlc[copy_task=false]' 'carc:mlc[drop_study=level-1]' 'carc:mlc[input=image]'

A model is `NAME` or `NAME[key=value,...]` (values read as YAML); every `--option` goes to every model, and a model
reads task codes of the study's length unless `--option task_code_length=N` says otherwise, as training builds it.
The batch is `--batch` samples of the study's training split, collated and put on the device as training does; each
model's step (its own `training_loss`, backward, AdamW) is timed alternately with the baseline's, step by step, so a
drifting machine biases neither side. Prints the median step, the ratio to the baseline's, and `predict_grids` on the
batch once per model (greedy decoding for carc:mlc).
"""

from __future__ import annotations

import argparse
import re
import statistics
from typing import Any

import torch
import yaml
from bench_cogitao_models import timed, training_step

from render.spec import RenderSpec
from vision_bench.data import open_dataset
from vision_bench.data.collate import collate
from vision_bench.data.device import to_device_batch
from vision_bench.models import create_model
from vision_bench.train.components import data_task_config

MODEL = re.compile(r"^(?P<name>[^\[\]]+)(\[(?P<options>.*)\])?$")


def parse_model(text: str) -> tuple[str, dict[str, Any]]:
    """`NAME` or `NAME[key=value,...]` -> (name, options)."""
    match = MODEL.match(text)
    if match is None:
        raise SystemExit(f"bench_study_models: {text!r} is not NAME or NAME[key=value,...]")
    options = dict(pair.split("=", 1) for pair in (match["options"] or "").split(",") if pair)
    return match["name"], {key: yaml.safe_load(value) for key, value in options.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", required=True)
    parser.add_argument("--models", nargs="+", required=True)
    parser.add_argument("--baseline", required=True)
    parser.add_argument("--option", action="append", default=[], help="key=value given to every model")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--layout", default="fit")
    parser.add_argument("--palette", default="arc")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    spec = RenderSpec.from_dict({"size": [args.size, args.size], "layout": args.layout, "palette": args.palette})
    dataset = open_dataset(args.study, "train", spec, n_train=args.batch)
    batch = to_device_batch(collate([dataset[index] for index in range(args.batch)]), spec, device)
    task = data_task_config(dataset)
    shared = {"image_size": args.size, "render_spec": spec,
              **({} if task is None else {"task_code_length": task.task_code_length}),
              **{key: yaml.safe_load(value) for key, value in (o.split("=", 1) for o in args.option)}}

    def build(text: str) -> torch.nn.Module:
        name, options = parse_model(text)
        torch.manual_seed(0)
        return create_model(name, **{**shared, **options}).to(device).train()

    baseline_step = training_step(build(args.baseline), batch)
    print(f"{args.study}, {args.size} px, batch {args.batch}, device {device}, {args.threads} thread(s), median of "
          f"{args.steps} steps, baseline {args.baseline}")
    print("model\tparameters\tstep s\tbaseline step s\tratio\tpredict s")
    for text in args.models:
        model = build(text)
        step = training_step(model, batch)
        step(), baseline_step()
        times, baseline_times = [], []
        for _ in range(args.steps):
            times.append(timed(step, device))
            baseline_times.append(timed(baseline_step, device))
        model.eval()
        with torch.no_grad():
            predict = timed(lambda model=model: model.predict_grids(batch), device)  # type: ignore[operator,misc]
        parameters = sum(p.numel() for p in model.parameters())
        median, base = statistics.median(times), statistics.median(baseline_times)
        print(f"{text}\t{parameters:,}\t{median:.3f}\t{base:.3f}\t{median / base:.2f}x\t{predict:.3f}")


if __name__ == "__main__":
    main()
