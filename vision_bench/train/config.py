"""`TrainConfig`: one YAML file describing a training run, validated strictly.

Defaults follow the COGITAO training recipe (AdamW, lr and weight decay 1e-3, 200 warm-up steps then
cosine annealing, batch 64, 10 epochs). Unknown keys and bad values raise `ConfigError` naming the
dotted key. Everything except `runtime` and `tracking` defines the experiment: its hash is stored in every
checkpoint, and resuming with a different experiment is refused; `runtime` (device, loader
workers, memory layout, compilation, batch-norm sync) and `tracking` (experiment trackers) may
change between sessions.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Annotated, Any, Literal

import yaml
from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, field_validator, model_serializer, model_validator

from render.spec import RenderSpec
from render.validation import MappingOf
from vision_bench.config_base import StrictConfig
from vision_bench.data.hf_datasets import is_hf_source
from vision_bench.data.holdout import HELD_OUT_SPLIT
from vision_bench.io.documents import JSONDict, flatten
from vision_bench.metrics import METRICS
from vision_bench.tasks.config import Seed, TaskConfig
from vision_bench.train.trackers import TRACKERS
from vision_bench.train.trackers.base import WandbMode

if TYPE_CHECKING:
    from vision_bench.data.external import ReadOptions

SplitName = Literal["train", "val_id", "val_ood", "test_id", "test_ood"]
ValidationSplit = Literal["val_id", "val_ood"]
VALIDATION_SPLITS: tuple[ValidationSplit, ...] = ("val_id", "val_ood")
MAX_RUN_SAMPLES = 10**7
"""The most generated samples a run reads from one split: 100 times COGITAO's 100,000 training pairs. Each pass
over a split orders its indices in memory (a permutation, then Python lists: about 60 bytes a sample, 600 MB at
this limit), so a larger count would fail in the allocator once the run folder is made, or exhaust memory."""
SELECTION_METRICS = {"loss": "lower", **{name: METRICS[name].direction for name in ("mse", "grid_accuracy")}}
"""The checkpoint selection metrics and their directions (the registry's, plus the training loss)."""


class DatasetConfig(StrictConfig):
    """Where samples come from: a study id or an inline generation config (both generated on the fly,
    sized by `n_train` / `n_val`), or data on disk or online (`path`: an export directory, an image
    folder, `hf://ID_OR_FOLDER`, WebDataset shards `shards/{split}-{000000..000003}.tar`, a URL or
    `pipe:COMMAND`, or a mapping split -> shard pattern when the splits' shards are named apart);
    `spec` says how grids are drawn.

    For data made elsewhere, `columns` names the image columns (or shard fields) of `input` and
    `target`, `splits` maps our split names to the source's (`{val_id: validation}`),
    `shuffle_buffer` is how many streamed samples are mixed at a time (default 1000), and `resize` what
    becomes of images that are not square (`refuse`, the default; `pad`: letterboxed on black to the
    square of `spec.size`, else of their longer side; `resize`: stretched to it). `val_fraction` holds
    that fraction of a train-only dataset's training split out as `val_id` (by sample key, seeded by
    `val_seed`, 0 by default; `vision_bench.data.holdout`), which is then the only validation split
    unless `val_splits` says more. `streaming: true` reads an `hf://` dataset with
    `datasets.load_dataset(..., streaming=True)` (`vision_bench.data.hf_streaming`) instead of downloading
    it first. Left unset, these are not written out, so configs and checkpoints without them keep their hash.

    `task` and `spec` are kept as written (so a config's hash does not depend on how they are
    spelt out) and checked as a `TaskConfig` and a `RenderSpec` when the config is validated;
    `task_config()` and `render_spec()` give them typed.
    """

    study: str | None = None
    task: Annotated[JSONDict, MappingOf(TaskConfig)] | None = None
    path: str | dict[SplitName, str] | None = None
    n_train: int | None = Field(default=None, ge=1)
    n_val: int | None = Field(default=None, ge=1)
    spec: Annotated[JSONDict, MappingOf(RenderSpec)] = Field(default_factory=dict)
    val_splits: tuple[ValidationSplit, ...] = VALIDATION_SPLITS
    columns: dict[Literal["input", "target"], str] | None = None
    splits: dict[SplitName, str] | None = None
    shuffle_buffer: int | None = Field(default=None, ge=0)
    resize: Literal["refuse", "pad", "resize"] | None = None
    val_fraction: float | None = None
    val_seed: int | None = None
    streaming: bool | None = None

    @model_validator(mode="before")
    @classmethod
    def _held_out_validation(cls, data: Any) -> Any:
        """With `val_fraction` the held-out split is the only validation split unless `val_splits` says more."""
        if isinstance(data, dict) and data.get("val_fraction") is not None and "val_splits" not in data:
            return {**data, "val_splits": [HELD_OUT_SPLIT]}
        return data

    @model_validator(mode="after")
    def _one_source(self) -> DatasetConfig:
        if sum(source is not None for source in (self.study, self.task, self.path)) != 1:
            raise ValueError(
                "give exactly one of dataset.study (a study id), dataset.task (a generation config) "
                "or dataset.path (an export directory, image folder, hf://ID or shard pattern)"
            )
        if self.path is not None and (self.n_train is not None or self.n_val is not None):
            raise ValueError(
                "dataset.n_train / dataset.n_val size generated data; an export directory has fixed counts"
            )
        self._check_sizes()
        self._check_holdout()
        if self.streaming and not (isinstance(self.path, str) and is_hf_source(self.path)):
            raise ValueError("dataset.streaming streams a Hugging Face dataset, so dataset.path must name one as "
                             "hf://user/name or hf://FOLDER (WebDataset shards and URLs stream anyway)")
        if isinstance(self.path, dict):
            self._check_patterns(self.path)
        unused = [key for key in _SOURCE_OPTIONS if getattr(self, key) is not None]
        if self.path is None and unused:
            raise ValueError(f"dataset.{unused[0]} applies to data given by dataset.path; generated data has none")
        return self

    def _check_sizes(self) -> None:
        """Each generated split a run reads holds at most `MAX_RUN_SAMPLES` samples (`n_train` / `n_val`, or the
        `task`'s own counts)."""
        task = (self.task or {}).get("samples", {})
        counts = {"n_train": self.n_train, "n_val": self.n_val}
        if self.n_train is None:
            counts["task.samples.train"] = task.get("train")
        if self.n_val is None:
            counts.update({f"task.samples.{split}": task.get(split) for split in VALIDATION_SPLITS})
        for key, count in counts.items():
            if isinstance(count, int) and count > MAX_RUN_SAMPLES:
                raise ValueError(f"{key} is {count:,}, more samples than a run reads from one split "
                                 f"({MAX_RUN_SAMPLES:,}: each pass orders them all in memory); ask for fewer")

    def _check_holdout(self) -> None:
        """`val_fraction` in (0, 1), holding out a split nothing else names; `val_seed` only with it."""
        if self.val_fraction is None:
            if self.val_seed is not None:
                raise ValueError("dataset.val_seed seeds the split dataset.val_fraction holds out; set "
                                 "dataset.val_fraction, or drop dataset.val_seed")
            return
        if not 0 < self.val_fraction < 1:
            raise ValueError(f"dataset.val_fraction is {self.val_fraction:g}; give the fraction of the training split "
                             "to hold out for validation, between 0 and 1 (e.g. 0.05)")
        for key, names in (("splits", self.splits), ("path", self.path)):
            if isinstance(names, dict) and HELD_OUT_SPLIT in names:
                raise ValueError(f"dataset.{key} names a {HELD_OUT_SPLIT} split and dataset.val_fraction holds one "
                                 f"out of train; drop one of the two")

    def _check_patterns(self, patterns: dict[SplitName, str]) -> None:
        """A shard pattern per split: each one a pattern, one for training and for each validation split."""
        from vision_bench.data.shard_stream import check_pattern
        from vision_bench.errors import DataError

        for split, pattern in patterns.items():
            try:
                check_pattern(pattern)
            except DataError as error:
                raise ValueError(f"dataset.path.{split}: {error}") from None
        held_out = (HELD_OUT_SPLIT,) if self.val_fraction is not None else ()
        needed = [name for name in ("train", *self.val_splits) if name not in held_out]
        for name in needed:
            if name not in patterns:
                leave = f", or leave {name} out of dataset.val_splits" if name != "train" else ""
                raise ValueError(f"dataset.path names shards per split but none for {name}; add "
                                 f"`{name}: PATTERN`{leave}")

    @model_serializer(mode="wrap")
    def _leave_out_unset_source_options(self, handler: SerializerFunctionWrapHandler) -> JSONDict:
        data = handler(self)
        return {key: value for key, value in data.items() if not (key in _SOURCE_OPTIONS and value is None)}

    @property
    def source(self) -> str | dict[str, str] | None:
        """`path` as the data readers take it (a mapping keyed by plain strings)."""
        return dict(self.path.items()) if isinstance(self.path, dict) else self.path

    @property
    def split_names(self) -> dict[str, str] | None:
        """`splits` keyed by plain strings, as the data readers take it."""
        return None if self.splits is None else dict(self.splits.items())

    @property
    def column_names(self) -> dict[str, str] | None:
        """`columns` keyed by plain strings, as the data readers take it."""
        return None if self.columns is None else dict(self.columns.items())

    def read_options(self) -> ReadOptions:
        """How the readers read data made elsewhere: `columns`, `splits`, `resize`, `val_fraction`, `val_seed`,
        `streaming`."""
        from vision_bench.data.external import ReadOptions

        return ReadOptions(columns=self.column_names, splits=self.split_names, resize=self.resize or "refuse",
                           val_fraction=self.val_fraction, val_seed=self.val_seed or 0,
                           streaming=bool(self.streaming))

    def task_config(self) -> TaskConfig | None:
        """`task` as a `TaskConfig`; None when the samples come from a study or a path."""
        return None if self.task is None else TaskConfig.from_dict(self.task, source="dataset.task")

    def render_spec(self) -> RenderSpec | None:
        """`spec` as a `RenderSpec`; None when it is empty (the data's own spec, or the default, applies)."""
        return RenderSpec.from_dict(self.spec) if self.spec else None


_SOURCE_OPTIONS = ("columns", "splits", "shuffle_buffer", "resize", "val_fraction", "val_seed", "streaming")


class ModelConfig(StrictConfig):
    """A `vision_bench.models` name and its `create_model` options."""

    name: str
    options: JSONDict = Field(default_factory=dict)


class OptimizerConfig(StrictConfig):
    """AdamW hyper-parameters."""

    lr: float = Field(default=1e-3, gt=0)
    weight_decay: float = Field(default=1e-3, ge=0)
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = Field(default=1e-8, gt=0)

    @field_validator("betas")
    @classmethod
    def _betas_in_range(cls, betas: tuple[float, float]) -> tuple[float, float]:
        if not all(0.0 <= beta < 1.0 for beta in betas):
            raise ValueError(f"each beta must be in [0, 1), got {list(betas)}")
        return betas


class ScheduleConfig(StrictConfig):
    """Linear warm-up, then cosine decay to `min_lr_ratio * lr` at the last step."""

    warmup_steps: int = Field(default=200, ge=0)
    min_lr_ratio: float = Field(default=0.0, ge=0, le=1)


class TrainingConfig(StrictConfig):
    """Length of the run and the optimisation step: global batch, clipping, precision; how often
    to log (steps) and to validate and checkpoint (epochs; the last epoch always is)."""

    batch_size: int = Field(default=64, ge=1)
    eval_batch_size: int = Field(default=50, ge=1)
    epochs: int = Field(default=10, ge=1)
    max_steps: int | None = Field(default=None, ge=1)
    grad_clip: float | None = Field(default=1.0, gt=0)
    precision: Literal["fp32", "bf16", "fp16"] = "fp32"
    log_every: int = Field(default=10, ge=1)
    validate_every: int = Field(default=1, ge=1)


class CheckpointConfig(StrictConfig):
    """Which validation split and metric choose best.pt, and how often last.pt is refreshed.

    `select_on: val_id` by default: COGITAO picked its checkpoints on val_ood, which lets the OOD
    distribution leak into model selection; `val_ood` reproduces that choice when asked for.
    """

    select_on: Literal["val_id", "val_ood"] = "val_id"
    metric: Literal["loss", "mse", "grid_accuracy"] = "loss"
    every_steps: int | None = Field(default=None, ge=1)


class RuntimeConfig(StrictConfig):
    """How the run executes; free to change when resuming (not part of the experiment hash)."""

    device: str = "auto"
    num_workers: int = Field(default=0, ge=0)
    channels_last: bool = True
    compile: bool = False
    sync_batchnorm: bool = True


class WandbConfig(StrictConfig):
    """W&B's team or user (`entity`) and `mode`; None: W&B's own (WANDB_ENTITY / WANDB_MODE, else its defaults)."""

    entity: str | None = None
    mode: WandbMode | None = None


class MlflowConfig(StrictConfig):
    """MLflow's `tracking_uri`; None: MLflow's own (MLFLOW_TRACKING_URI, else its default)."""

    tracking_uri: str | None = None


class TrackingConfig(StrictConfig):
    """Experiment trackers (`train.trackers`), none by default; like `runtime`, free to change when resuming.

    `loggers`: tracker names (tensorboard, wandb, mlflow). `project`: the W&B project and the MLflow
    experiment. `run_name`: the run's name there (default: the run folder's name).
    """

    loggers: tuple[str, ...] = ()
    project: str = Field(default="vision-bench", min_length=1)
    run_name: str | None = Field(default=None, min_length=1)
    wandb: WandbConfig = WandbConfig()
    mlflow: MlflowConfig = MlflowConfig()

    @field_validator("loggers")
    @classmethod
    def _known_trackers(cls, loggers: tuple[str, ...]) -> tuple[str, ...]:
        for name in loggers:
            TRACKERS.check(name)
        if len(set(loggers)) < len(loggers):
            raise ValueError(f"names a tracker twice: {list(loggers)}")
        return loggers


class TrainConfig(StrictConfig):
    """A complete training run; see the module docstring for the resume rule."""

    config_name = "training config"

    seed: Seed = 0
    dataset: DatasetConfig
    model: ModelConfig
    optimizer: OptimizerConfig = OptimizerConfig()
    schedule: ScheduleConfig = ScheduleConfig()
    training: TrainingConfig = TrainingConfig()
    checkpoint: CheckpointConfig = CheckpointConfig()
    runtime: RuntimeConfig = RuntimeConfig()
    tracking: TrackingConfig = TrackingConfig()

    @model_validator(mode="after")
    def _selection_split_is_validated(self) -> TrainConfig:
        if self.checkpoint.select_on not in self.dataset.val_splits:
            raise ValueError(
                f"checkpoint.select_on is {self.checkpoint.select_on} but dataset.val_splits is "
                f"{list(self.dataset.val_splits)}; add it there or select on another split"
            )
        return self

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    def replace(self, **sections: Any) -> TrainConfig:
        """A copy with whole sections or top-level keys replaced, validated again."""
        data = self.to_dict()
        for key, value in sections.items():
            data[key] = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
        return TrainConfig.from_dict(data)

    def experiment(self) -> JSONDict:
        """The keys that define the experiment (everything but `runtime` and `tracking`)."""
        data = self.to_dict()
        del data["runtime"], data["tracking"]
        return data

    def experiment_hash(self) -> str:
        canonical = json.dumps(self.experiment(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()


def check_ood_validation(task: TaskConfig, *, data: str, who: str, key: str) -> None:
    """Refuse to select a checkpoint on val_ood where `task` holds no val_ood samples (Sample-Efficiency's studies):
    there is no OOD validation loss to select on. `data` names the data, `who` what selects, `key` the setting."""
    from vision_bench.errors import ConfigError

    if task.count("val_ood") == 0:
        raise ConfigError(f"{data} has no OOD validation split (val_ood holds no samples), so {who} cannot select "
                          f"a checkpoint on val_ood; select on val_id (--select-on val_id, or {key}: val_id)")


def check_selection(config: TrainConfig) -> None:
    """`check_ood_validation` for a run whose `checkpoint.select_on` is val_ood on generated data (a study or an
    inline task, at the run's `n_train` / `n_val`); data on disk or online is checked when it is read."""
    dataset = config.dataset
    if config.checkpoint.select_on != "val_ood" or dataset.path is not None:
        return
    from vision_bench.data.sources import load_config, with_overrides

    inline = dataset.task_config()
    if dataset.study is not None:
        task = load_config(dataset.study, n_train=dataset.n_train, n_val=dataset.n_val)
        data = f"study {dataset.study}"
    elif inline is not None:
        task, data = with_overrides(inline, n_train=dataset.n_train, n_val=dataset.n_val), "dataset.task"
    else:
        return
    check_ood_validation(task, data=data, who="the run", key="checkpoint.select_on")


def differing_keys(old: JSONDict, new: JSONDict) -> list[str]:
    """Dotted keys whose values differ between two experiment dicts (present in either)."""
    flat_old, flat_new = flatten(old), flatten(new)
    return sorted(k for k in flat_old.keys() | flat_new.keys()
                  if flat_old.get(k, _MISSING) != flat_new.get(k, _MISSING))


_MISSING = object()
