"""What an evaluation reads: the render spec, the datasets of each split, the training sequences.

Built from a run's `TrainConfig` (its on-the-fly study or export directory), optionally pointed
at another export directory with `--data`; the run's render spec is kept, since the model was
trained on those pixels and the object-aware metrics decode with it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torch.utils.data import Dataset

from vision_bench.errors import ConfigError

MAX_ID_SEQUENCES = 256
"""Stubbornness tries every training sequence on every OOD sample; larger pools are skipped."""
MEAN_TARGET_SAMPLES = 1024
"""`mean_target` averages at most this many training targets (the mean converges long before)."""


@dataclass
class EvaluationData:
    """Datasets per split (and the training split for `mean_target`), with their render spec."""

    spec: Any
    splits: dict[str, Dataset]
    train: Dataset | None = None
    id_sequences: list[tuple[str, ...]] | None = None
    source: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    has_grids: bool = True
    canvas: tuple[int, int] | None = None
    """The experiment's largest grid (height, width): the padded canvas of the paper's PPA (`paper_ppa`)."""


def experiment_canvas(task_config: Any) -> tuple[int, int]:
    """The largest grid any split of the experiment allows: COGITAO pads every grid to "the max size which can
    be observed during the experiment" (paper 000, appendix F), in and out of distribution alike."""
    from vision_bench.tasks.config import SPLITS

    resolved = [task_config.for_split(split) for split in SPLITS]
    return max(config.grid_height[1] for config in resolved), max(config.grid_width[1] for config in resolved)


def training_sequences(task_config: Any) -> tuple[list[tuple[str, ...]] | None, str | None]:
    """The set of sequences the training split draws from, or (None, why) when it is too large."""
    train = task_config.for_split("train")
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
    spec: Any,
    splits: tuple[str, ...],
    *,
    n_train: int | None = None,
    n_val: int | None = None,
    n_test: int | None = None,
) -> EvaluationData:
    """On-the-fly datasets of a registered study (or a task-config YAML file) with these counts."""
    from vision_bench.data.opening import open_dataset
    from vision_bench.data.sources import load_config

    is_file = study.endswith((".yaml", ".yml"))
    task_config = load_config(
        None if is_file else study, study if is_file else None, n_train=n_train, n_val=n_val, n_test=n_test
    )
    sequences, note = training_sequences(task_config)
    return EvaluationData(
        spec=spec,
        splits={split: open_dataset(task_config, split, spec=spec) for split in splits},
        train=open_dataset(task_config, "train", spec=spec),
        id_sequences=sequences,
        source={"study": study, "counts": {s: task_config.count(s) for s in ("train", *splits)}},
        notes=[note] if note else [],
        canvas=experiment_canvas(task_config),
    )


def export_data(path: str | Path, spec: Any, splits: tuple[str, ...]) -> EvaluationData:
    """Datasets of an export directory (training sequences and counts from its manifest), or of a
    folder of image pairs made elsewhere (SVIB episodes, `*_input.png` / `*_target.png`)."""
    from vision_bench.data.manifest import MANIFEST_NAME, read_manifest
    from vision_bench.data.opening import open_dataset
    from vision_bench.tasks.config import TaskConfig

    path = Path(path)
    if not path.exists():
        raise ConfigError(f"dataset {path} does not exist; pass an export directory written by `vision-bench export`")
    if not (path / MANIFEST_NAME).is_file():
        return EvaluationData(
            spec=spec,
            splits={split: open_dataset(str(path), split, spec=spec) for split in splits},
            source={"path": str(path)},
            notes=["image pairs without grids: object-aware metrics, stubbornness and ground_truth are skipped"],
            has_grids=False,
        )
    manifest = read_manifest(path)
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
        notes=[note] if note else [],
        canvas=experiment_canvas(task_config),
    )


def run_data(
    config: Any, spec: Any, splits: tuple[str, ...], *, data: str | Path | None, n_test: int | None
) -> EvaluationData:
    """The evaluation data of a training run (`TrainConfig`), or of `data` when given."""
    if data is not None:
        return export_data(data, spec, splits)
    dataset = config.dataset
    if dataset.study is not None:
        return study_data(dataset.study, spec, splits, n_train=dataset.n_train, n_val=dataset.n_val, n_test=n_test)
    return export_data(dataset.path, spec, splits)
