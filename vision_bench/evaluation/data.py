"""What an evaluation reads: the render spec, the datasets of each split, the training sequences.

Built from a run's `TrainConfig` (its on-the-fly study, export directory or data made elsewhere),
optionally pointed at other data with `--data` (an export, an image folder, a Hugging Face dataset
or WebDataset shards); the run's render spec is kept, since the model was trained on those pixels
and the object-aware metrics decode with it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torch.utils.data import Dataset

from vision_bench.errors import ConfigError

if TYPE_CHECKING:
    from render.spec import RenderSpec
    from vision_bench.data.external import ReadOptions
    from vision_bench.tasks.config import TaskConfig
    from vision_bench.train.config import TrainConfig

MAX_ID_SEQUENCES = 256
"""Stubbornness tries every training sequence on every OOD sample; larger pools are skipped."""
MEAN_TARGET_SAMPLES = 1024
"""`mean_target` averages at most this many training targets (the mean converges long before)."""
MIN_DEFAULT_TEST = 100
"""The smallest default test split of a run that sized its own data: 100 samples give GA to 1 point."""


def default_test_size(n_val: int | None) -> int | None:
    """Samples per test split when `--n-test` is not given: proportionate to the run's validation size.

    A run that set `dataset.n_val` is tested on max(n_val, 100) samples per split, so a smoke run is not
    evaluated on the study's 1,000 (which took 6x its training); a run at the study's sizes keeps them (None).
    """
    return None if n_val is None else max(n_val, MIN_DEFAULT_TEST)


@dataclass
class EvaluationData:
    """Datasets per split (and the training split for `mean_target`), with their render spec."""

    spec: RenderSpec
    splits: dict[str, Dataset]
    train: Dataset | None = None
    id_sequences: list[tuple[str, ...]] | None = None
    source: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    has_grids: bool = True
    canvas: tuple[int, int] | None = None
    """The experiment's largest grid (height, width): the padded canvas of the paper's PPA (`paper_ppa`)."""
    episode_setup: str | None = None
    """The C-ARC setup when the samples are episode canvases (the error taxonomy classifies the query)."""
    connectivity: int | None = None
    """How the task config extracts objects (4 or 8); None for data made elsewhere."""
    true_targets: bool = False
    """The batches carry no rule `ground_truth` could apply (its family's `rule_in_batch` is false): it draws the
    true target grids instead."""
    unavailable: dict[str, str] = field(default_factory=dict)
    """Metric -> why this data cannot support it ('unavailable: ...'): not computed, and reported in metrics.json's
    status."""


def task_facts(task_config: TaskConfig) -> dict[str, Any]:
    """What the evaluation takes from a task config besides its data: the canvas, the C-ARC setup (its
    family's `episode_setup`), whether `ground_truth` draws the true targets, the connectivity."""
    from vision_bench.tasks.config import experiment_canvas
    from vision_bench.tasks.families import family_of

    family = family_of(task_config)
    setup = family.episode_setup
    return {"canvas": experiment_canvas(task_config), "episode_setup": None if setup is None else setup(task_config),
            "true_targets": not family.rule_in_batch,
            "connectivity": task_config.connectivity}


def _stubbornness_status(note: str | None) -> dict[str, str]:
    """The metrics-status entries of both stubbornness metrics when there are no training sequences to try."""
    return {} if note is None else {name: f"unavailable: {note}" for name in ("stubbornness", "stubbornness_strict")}


def family_metric_status(task_config: TaskConfig | None) -> dict[str, str]:
    """The metrics that only some task families support (`TaskFamily.metrics`, such as factor accuracy on SVIB's
    scenes) and this data's family does not, each with its 'unavailable: ...' line; `task_config` None: data made
    elsewhere without grids, which supports none of them."""
    from vision_bench.tasks.families import family_metrics, family_of

    family = None if task_config is None else family_of(task_config)
    whose = "data made elsewhere without grids" if family is None else family.label
    return {name: f"unavailable: defined only for {' and '.join(owners)}, not for {whose}"
            for name, owners in family_metrics().items() if family is None or name not in family.metrics}


def _unavailable(task_config: TaskConfig, note: str | None) -> dict[str, str]:
    """Metric -> why the data of `task_config` cannot support it: stubbornness (`note`), the other families' metrics."""
    return {**_stubbornness_status(note), **family_metric_status(task_config)}


def training_sequences(task_config: TaskConfig) -> tuple[list[tuple[str, ...]] | None, str | None]:
    """The set of sequences the training split draws from, or (None, why) when it is too large or not defined.

    A world-model study trains on one step at a time, so its training "sequences" are the single actions.
    Stubbornness (COGITAO G.4) applies a sequence to every object: it is not defined for rule studies,
    where selectors pick the objects and distractors stay, nor for C-ARC episodes, where a grammar does, nor
    for SVIB scenes, where a rule over both objects' factors sets what changes.
    """
    from vision_bench.tasks.families import family_of

    family = family_of(task_config)
    if "stubbornness" in family.unavailable_metrics:
        return None, (
            f"stubbornness: not defined for {family.label} (it applies a training sequence to every object, "
            "while here a selector, grammar or relational rule decides what changes)"
        )
    train = task_config.for_split("train")
    if family.one_step and train.sequences is not None:
        return sorted({(action,) for sequence in train.sequences for action in sequence}), None
    if train.sequences is not None:
        return [tuple(s) for s in train.sequences], None
    pool = list(train.transformations or ())
    low, high = train.depth
    total = sum(len(pool) ** depth for depth in range(low, high + 1))
    if total > MAX_ID_SEQUENCES:
        return None, (
            f"stubbornness skipped: the training split draws from {total} sequences "
            f"(more than {MAX_ID_SEQUENCES}); list them with `sequences` to measure it"
        )
    sequences = [s for depth in range(low, high + 1) for s in itertools.product(pool, repeat=depth)]
    return sequences, None


def study_data(
    study: str,
    spec: RenderSpec,
    splits: tuple[str, ...],
    *,
    n_train: int | None = None,
    n_val: int | None = None,
    n_test: int | None = None,
) -> EvaluationData:
    """On-the-fly datasets of a registered study (or a task-config YAML file) with these counts."""
    from vision_bench.data.sources import load_config

    is_file = study.endswith((".yaml", ".yml"))
    task_config = load_config(
        None if is_file else study, study if is_file else None, n_train=n_train, n_val=n_val, n_test=n_test
    )
    return task_data(task_config, spec, splits, {"study": study})


def family_notes(task_config: TaskConfig, note: str | None) -> list[str]:
    """The evaluation's notes on a task config's data: `note` (from `training_sequences`) and its family's
    `evaluation_note`."""
    from vision_bench.tasks.families import family_of

    return [text for text in (note, family_of(task_config).evaluation_note) if text]


def task_data(task_config: TaskConfig, spec: RenderSpec, splits: tuple[str, ...],
              source: Mapping[str, str]) -> EvaluationData:
    """On-the-fly datasets of a task config; `source` says where it came from (a study id, an inline task)."""
    from vision_bench.data.opening import open_dataset

    sequences, note = training_sequences(task_config)
    return EvaluationData(
        spec=spec,
        splits={split: open_dataset(task_config, split, spec=spec) for split in splits},
        train=open_dataset(task_config, "train", spec=spec),
        id_sequences=sequences,
        source={**source, "counts": {s: task_config.count(s) for s in ("train", *splits)}},
        notes=family_notes(task_config, note),
        unavailable=_unavailable(task_config, note),
        **task_facts(task_config),
    )


def check_export_spec(path: Path, settings: Mapping[str, Any], spec: RenderSpec) -> None:
    """A `ConfigError` naming the differences when an export of images was drawn with another render spec than
    the run's `spec` (a model reads images as it was trained on them); an export without images (its format's
    `images` is false: `grids`) is drawn with `spec`."""
    from vision_bench.data.export_formats import FORMATS

    kind = settings.get("format")
    if isinstance(kind, str) and kind in FORMATS and not FORMATS[kind].images:
        return
    stored = type(spec).from_dict(dict(settings["render_spec"])).to_dict()  # the export's, read as specs are now
    wanted = spec.to_dict()
    differences = [f"{key} {_shown(stored.get(key))} (the run's: {_shown(wanted.get(key))})"
                   for key in sorted(stored.keys() | wanted.keys()) if stored.get(key) != wanted.get(key)]
    if differences:
        raise ConfigError(
            f"{path}: its images were drawn with another render spec than the run's: {'; '.join(differences)}; "
            "export the data again with the run's spec (its config.yaml's dataset.spec, e.g. `vision-bench export "
            f"... --size {wanted['size'][0]} {wanted['size'][1]}`), or export `--format grids`, which evaluate "
            "draws with the run's spec"
        )


def _shown(value: object) -> str:
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return f"{value[0]}x{value[1]}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items() if v is not None) or "none"
    return str(value)


def export_data(path: str | Path | Mapping[str, str], spec: RenderSpec, splits: tuple[str, ...], *,
                read: ReadOptions | None = None) -> EvaluationData:
    """Datasets of an export directory (training sequences and counts from its manifest), or of data
    made elsewhere: image-pair folders, Hugging Face datasets, WebDataset shards (see `external_data`)."""
    from vision_bench.data.manifest import MANIFEST_NAME, read_manifest
    from vision_bench.data.opening import open_dataset
    from vision_bench.tasks.config import TaskConfig

    if isinstance(path, Mapping):  # shard patterns per split
        return external_data(path, spec, splits, read=read)
    source = str(path)
    if _is_remote_or_pattern(source):
        return external_data(source, spec, splits, read=read)
    path = Path(source)
    if not path.exists():
        raise ConfigError(f"dataset {path} does not exist; pass an export directory written by `vision-bench export`")
    if not (path / MANIFEST_NAME).is_file():
        return external_data(source, spec, splits, read=read)
    manifest = read_manifest(path)
    check_export_spec(path, manifest["settings"], spec)
    counts = {split: int(entry.get("count", 0)) for split, entry in manifest["splits"].items()}
    missing = [split for split in splits if counts.get(split, 0) == 0]
    if missing:
        raise ConfigError(f"export {path} has no samples in {', '.join(missing)}; choose other --splits")
    task_config = TaskConfig.from_dict(dict(manifest["settings"]["config"]))
    sequences, note = training_sequences(task_config)
    return EvaluationData(
        spec=spec,
        splits={split: open_dataset(str(path), split, spec=spec) for split in splits},
        train=open_dataset(str(path), "train", spec=spec) if counts.get("train", 0) else None,
        id_sequences=sequences,
        source={"path": str(path), "counts": {s: counts.get(s, 0) for s in ("train", *splits)}},
        notes=family_notes(task_config, note),
        unavailable=_unavailable(task_config, note),
        **task_facts(task_config),
    )


def external_data(source: str | Mapping[str, str], spec: RenderSpec, splits: tuple[str, ...], *,
                  read: ReadOptions | None = None) -> EvaluationData:
    """Datasets of data made elsewhere: no task config, so no training sequences (stubbornness) and no
    canvas; grids only where the samples carry this project's metadata (with them, the metrics only some task
    families support are computed and check their grids themselves: factor accuracy says when a target is not
    one of SVIB's scenes; without them, they are unavailable). `mean_target` averages the
    training split of a Hugging Face dataset that has one (image folders and streamed shards have
    none it could tell from the evaluated pairs)."""
    from vision_bench.data.external import READ_AS_STORED
    from vision_bench.data.hf_datasets import HFImageDataset
    from vision_bench.data.opening import open_dataset
    from vision_bench.errors import DataError

    def opened(split: str) -> Dataset:
        return open_dataset(source, split, spec=spec, read=read or READ_AS_STORED)

    datasets = {split: opened(split) for split in splits}
    has_grids = all(getattr(dataset, "has_grids", False) for dataset in datasets.values())
    train = None
    if all(isinstance(dataset, HFImageDataset) for dataset in datasets.values()):
        try:
            train = opened("train")
        except DataError:  # no training split
            train = None
    notes = [] if has_grids else [
        "image pairs without grids: object-aware metrics, stubbornness and ground_truth are skipped"]
    path = source if isinstance(source, str) else dict(source)
    return EvaluationData(spec=spec, splits=datasets, train=train, source={"path": path}, notes=notes,
                          has_grids=has_grids, unavailable={} if has_grids else family_metric_status(None))


def _is_remote_or_pattern(source: str) -> bool:
    """A Hub id, URL, command or shard pattern: opened by `open_dataset`, not checked as a path here."""
    from vision_bench.data.hf_datasets import is_hf_source
    from vision_bench.data.remote_files import is_url
    from vision_bench.data.shard_stream import looks_like_shards

    collapsed = source.startswith(("http:/", "https:/"))  # what pathlib makes of http://
    return is_hf_source(source) or looks_like_shards(source) or is_url(source) or collapsed


def run_data(
    config: TrainConfig, spec: RenderSpec, splits: tuple[str, ...], *, data: str | Path | None, n_test: int | None
) -> EvaluationData:
    """The evaluation data of a training run (`TrainConfig`), or of `data` when given."""
    dataset = config.dataset
    read = dataset.read_options()
    if data is not None:
        return export_data(data, spec, splits, read=read)
    if n_test is None:
        n_test = default_test_size(dataset.n_val)
    if dataset.study is not None:
        return study_data(dataset.study, spec, splits, n_train=dataset.n_train, n_val=dataset.n_val, n_test=n_test)
    task = dataset.task_config()
    if task is not None:
        from vision_bench.data.sources import with_overrides

        task = with_overrides(task, n_train=dataset.n_train, n_val=dataset.n_val, n_test=n_test)
        return task_data(task, spec, splits, {"task": "dataset.task"})
    if dataset.source is None:
        raise ConfigError("the run's dataset names neither a study, a task nor a path; pass the data with --data")
    return export_data(dataset.source, spec, splits, read=read)
