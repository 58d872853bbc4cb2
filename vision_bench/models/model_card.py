"""The model card of an exported model: README.md, written with huggingface_hub's `ModelCard` / `ModelCardData`.

Its YAML metadata gives the library (vision-bench), the pipeline (image-to-image), tags, a license when one is given,
the hub dataset the model was trained on when it was one, and, when the run's evaluation scored the exported
checkpoint, a `model-index` of its results (one `EvalResult` per split and metric). The text says what the model
reads and predicts and how to load it, the training data (study, task config or dataset, and the render spec), the
evaluation as a table (the metrics `vision-bench evaluate` prints, as metrics.json holds them), the command lines that
trained it and the run's config, and how timm reads the encoder.

The card is published, so the run's values are shortened first (`vision_bench.io.redact`: no credentials, query
strings, `pipe:` commands or private paths) and the config's `tracking` section is left out; the card says so.

Everything comes from config.json and a `TrainingRecord` of the run (none for a model saved from Python), so the
same export writes the same bytes.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

import yaml

from vision_bench.data.hf_card import check_license
from vision_bench.io.extras import require
from vision_bench.io.redact import public_data, public_text
from vision_bench.metrics import listed_in
from vision_bench.metrics.registry import label, short_label
from vision_bench.tasks.task_code import TASK_CODE_LENGTH

if TYPE_CHECKING:
    from huggingface_hub import EvalResult, ModelCard

LIBRARY = "vision-bench"
TAGS = ("vision-bench", "image-to-image", "arc", "compositional-generalization")
HUB_DATASET = "hf://"
REDACTED_NOTE = (
    "Values that could hold secrets or private paths are shortened above: URLs lose their `user:password@` and "
    "query string, `pipe:` commands read `pipe:<command>`, absolute paths outside the run keep their last component, "
    "and the config's `tracking` section is left out; put your own back before training again."
)


@dataclass(frozen=True)
class TrainingRecord:
    """What a model card says of the run that made the model.

    `dataset`: the run's `dataset` section (study, task or path, sizes); `commands`: the command line of each
    training session, oldest first (environment.json); `config`: the run's config (config.yaml's data); `metrics`:
    the metrics.json of an evaluation of the exported checkpoint, or None; `checkpoint`: the file exported (best.pt);
    `run_dir`: the run's folder (absolute), whose paths the card writes from its name down.

    The card publishes none of it as it is: every value goes through `vision_bench.io.redact` (URLs without
    credentials or query string, `pipe:` commands and absolute paths outside the run shortened) and the config's
    `tracking` section (tracking server, project) is left out.
    """

    dataset: Mapping[str, Any]
    commands: Sequence[Sequence[str]] = ()
    config: Mapping[str, Any] | None = None
    metrics: Mapping[str, Any] | None = None
    checkpoint: str | None = None
    run_dir: PurePath | None = None


def model_card(config: Mapping[str, Any], record: TrainingRecord | None = None, *,
               license: str | None = None) -> ModelCard:
    """The card of the export described by `config` (its config.json), with the run's `record` when there is one."""
    require("huggingface_hub", "the model card (README.md)")
    from huggingface_hub import ModelCard, ModelCardData

    results = _eval_results(config, record)
    data = ModelCardData(
        library_name=LIBRARY, license=check_license(license), pipeline_tag="image-to-image",
        tags=[*TAGS, config["architecture"].partition(":")[0], *(["timm"] if config.get("encoder") else [])],
        datasets=_hub_datasets(record), model_name=config["architecture"] if results else None,
        eval_results=results or None,
    )
    sections = [_description(config), _usage(config)]
    if record is not None:
        sections += [_training_data(config, record), *_evaluation(record), *_reproduction(record)]
    encoder = config.get("encoder")
    if encoder:
        sections.append("\n".join(encoder_card(encoder)))
    body = "\n\n".join(sections)
    return ModelCard(f"---\n{data.to_yaml()}\n---\n\n# {config['architecture']}\n\n{body}\n")


def _hub_datasets(record: TrainingRecord | None) -> list[str] | None:
    """The hub dataset the model trained on (`dataset.path: hf://user/name`), for the card's `datasets`."""
    path = public_text(str((record.dataset if record else {}).get("path") or ""))
    if not path.startswith(HUB_DATASET) or path.startswith(f"{HUB_DATASET}/"):
        return None
    name = path.removeprefix(HUB_DATASET).removeprefix("datasets/").partition("@")[0].strip("/")
    return [name] if name.count("/") == 1 and not Path(name).expanduser().exists() else None


def _description(config: Mapping[str, Any]) -> str:
    size = config["image_size"]
    palette = (config.get("render_spec") or {}).get("palette")
    steps = config.get("trained_steps")
    trained = f" for {steps} step{'' if steps == 1 else 's'}" if steps is not None else ""
    drawn = f" (palette {palette})" if palette else ""
    code = f", and a task code (B, {_code_length(config)})" if config.get("task_conditioning") else ""
    version = config["vision_bench_version"]
    if _reads_grids(config):
        return (f"A grid model (one colour class per cell) trained with vision-bench {version}{trained}. It reads "
                f"input grids (B, h, w) of colours 0-9 padded with -1, with their sizes (B, 2){code}; predict_grids "
                f"gives the predicted grids and predict draws them as {size}x{size} RGB images with the render spec "
                f"in config.json{drawn}.")
    return (f"An image-to-image model ({config['head']} head) trained with vision-bench {version}{trained}. It reads "
            f"RGB images of {size}x{size} pixels in [0, 1], drawn with the render spec in config.json{drawn}{code}, "
            "and predicts the output image.")


def _code_length(config: Mapping[str, Any]) -> int:
    return int((config.get("model_args") or {}).get("task_code_length", TASK_CODE_LENGTH))


def _reads_grids(config: Mapping[str, Any]) -> bool:
    return bool(config["architecture"].startswith(("cogitao:", "gcog:", "carc:"))
                and (config.get("model_args") or {}).get("input", "grid") == "grid")


def _usage(config: Mapping[str, Any]) -> str:
    size = config["image_size"]
    inputs = "'input_grid': grids, 'grid_shape': shapes" if _reads_grids(config) else "'input': images"
    batch = f"{{{inputs}, 'task_code': codes}}" if config.get("task_conditioning") else f"{{{inputs}}}"
    return "\n".join([
        "```python",
        "from vision_bench.models import load_pretrained",
        "",
        'model = load_pretrained("PATH_OR_HUB_ID")  # a hub id may name a revision: "user/model@v1"',
        f"prediction = model.predict({batch})  # (B, 3, {size}, {size}) in [0, 1]",
        "```",
    ])


def _training_data(config: Mapping[str, Any], record: TrainingRecord) -> str:
    dataset = record.dataset
    sizes = ", ".join(f"{key} {dataset[key]}" for key in ("n_train", "n_val") if dataset.get(key) is not None)
    if dataset.get("study"):
        source = (f"the study `{dataset['study']}`, generated on the fly{f' ({sizes})' if sizes else ''}; "
                  f"`vision-bench studies --describe {dataset['study']}` shows it")
    elif dataset.get("task") is not None:
        description = str((dataset["task"] or {}).get("description") or "").strip()
        source = (f"a task config given inline (in the run's config below){f' ({sizes})' if sizes else ''}"
                  + (f": {description}" if description else ""))
    else:
        source = f"the dataset `{public_data(dataset.get('path'), record.run_dir)}`"
    lines = ["## Training data", "", f"- **Source**: {source}"]
    spec = config.get("render_spec") or {}
    if spec:
        height, width = spec.get("size", ("?", "?"))
        layout = spec.get("layout")
        layout_name = layout.get("mode") if isinstance(layout, Mapping) else layout
        lines.append(f"- **Images**: {height}x{width} pixels, palette `{spec.get('palette')}`, background "
                     f"`{spec.get('background')}`, layout `{layout_name}` (the full render spec is in config.json)")
    return "\n".join(lines)


def _evaluated_on(metrics: Mapping[str, Any]) -> str:
    """What an evaluation's `data` names: a study id, a dataset's path, or the run's own task config."""
    data = metrics.get("data")
    if isinstance(data, Mapping) and (data.get("study") or data.get("path")):
        return public_text(str(data.get("study") or data.get("path")))
    return "the run's task config"


def scored_metrics(metrics: Mapping[str, Any]) -> list[str]:
    """The metrics of `vision-bench evaluate`'s table that the model's evaluation reports, in that table's order."""
    present = {name for entry in metrics.get("splits", {}).values() for name, value in entry["metrics"].items()
               if value is not None}
    return [name for name in listed_in("evaluate") if name in present]


def _evaluation(record: TrainingRecord) -> list[str]:
    metrics = record.metrics
    if not metrics:
        return []
    names = scored_metrics(metrics)
    rows = [f"| split | n | {' | '.join(short_label(name) for name in names)} |", f"|---|---|{'---|' * len(names)}"]
    for split, entry in metrics["splits"].items():
        values = [entry["metrics"].get(name) for name in names]
        rows.append(f"| {split} | {entry['n']} | {' | '.join('n/a' if v is None else f'{v:.4g}' for v in values)} |")
    legend = "; ".join(label(name) for name in names)
    step = metrics.get("step")
    return ["\n".join([
        "## Evaluation",
        "",
        f"`vision-bench evaluate` of this checkpoint (step {step}) on `{_evaluated_on(metrics)}`: the mean over each "
        "split's samples (the card's `model-index` holds the same values unrounded).",
        "",
        *rows,
        "",
        f"{legend}.",
    ])]


def _eval_results(config: Mapping[str, Any], record: TrainingRecord | None) -> list[EvalResult]:
    """One `EvalResult` per split and metric of the evaluation, for the card's `model-index`."""
    if record is None or not record.metrics:
        return []
    from huggingface_hub import EvalResult

    metrics = record.metrics
    hub = _hub_datasets(record)
    dataset_name = _evaluated_on(metrics)
    return [
        EvalResult(task_type="image-to-image", dataset_type=hub[0] if hub else LIBRARY, dataset_name=dataset_name,
                   dataset_split=split, metric_type=name, metric_value=entry["metrics"][name], metric_name=label(name))
        for split, entry in metrics["splits"].items()
        for name in scored_metrics(metrics) if entry["metrics"].get(name) is not None
    ]


def _reproduction(record: TrainingRecord) -> list[str]:
    sections = []
    if record.commands:
        commands = "\n".join(command_line([public_text(str(part), record.run_dir) for part in command])
                             for command in record.commands)
        resumed = ", then resumed with the next" if len(record.commands) > 1 else ""
        checkpoint = f" (this is its checkpoint `{record.checkpoint}`)" if record.checkpoint else ""
        sections.append(f"## Training\n\nTrained with this command{resumed}{checkpoint}:\n\n```bash\n{commands}\n```")
    if record.config:
        config = {key: value for key, value in public_data(record.config, record.run_dir).items() if key != "tracking"}
        sections.append("\n".join([
            "<details><summary>The run's config (config.yaml): <code>vision-bench train config.yaml</code> "
            "trains the model again</summary>",
            "",
            "```yaml",
            yaml.safe_dump(config, sort_keys=False).rstrip("\n"),
            "```",
            "",
            "</details>",
        ]))
    if sections:
        sections.append(REDACTED_NOTE)
    return sections


def command_line(command: Sequence[str]) -> str:
    """A recorded command line, its program as `vision-bench` when it was the command line or `python -m`."""
    program, *arguments = [str(part) for part in command] or [""]
    if Path(program).name in ("vision-bench", "__main__.py"):
        program = "vision-bench"
    return shlex.join([program, *arguments])


def encoder_card(encoder: Mapping[str, Any]) -> list[str]:
    """How timm builds the encoder from the export's `encoder/` folder (timm's layout), and what it holds untrained."""
    folder = encoder["folder"]
    features = encoder.get("features") or {}
    untrained = encoder["untrained_keys"]
    lines = [
        "## Encoder",
        "",
        f"`{folder}/` holds the `{encoder['timm_name']}` encoder in timm's own layout (config.json, "
        "model.safetensors), so timm builds it with the trained weights by name:",
        "",
        "```python",
        "import timm",
        "from huggingface_hub import snapshot_download",
        "",
        f'folder = snapshot_download("USER/MODEL", allow_patterns="{folder}/*")  # or the exported folder itself',
        f'encoder = timm.create_model(f"local-dir:{{folder}}/{folder}", pretrained=True)',
        "config = timm.data.resolve_data_config(model=encoder)  # the image size, mean and std it was trained with",
        "```",
    ]
    if features:
        options = ", ".join(f"{key}={value!r}" for key, value in features.items())
        arguments = "".join(f", {key}={value!r}" for key, value in encoder["timm_kwargs"].items())
        lines += ["", f"It is the feature extractor the decoder read ({options}, in its config's `model_args`): a "
                      "list of feature maps, shallow to deep. The whole network loads the same file:", "",
                  "```python", "from safetensors.torch import load_file", "",
                  f"network = timm.create_model({encoder['timm_name']!r}{arguments})",
                  f'network.load_state_dict(load_file(f"{{folder}}/{folder}/model.safetensors"))', "```"]
    if untrained:
        lines += ["", (f"The network has {len(untrained)} keys the model never used (stages after its last feature "
                       f"map): the file holds them at timm's initialisation, untrained, and `features_only` drops them "
                       f"again: {', '.join(untrained)}.")]
    return lines


__all__ = ["LIBRARY", "TAGS", "TrainingRecord", "command_line", "encoder_card", "model_card", "scored_metrics"]
