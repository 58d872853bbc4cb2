"""`TrainConfig`: one YAML file describing a training run, validated strictly.

Defaults follow the COGITAO training recipe (AdamW, lr and weight decay 1e-3, 200 warm-up steps then
cosine annealing, batch 64, 10 epochs). Unknown keys and bad values raise `ConfigError` naming the
dotted key. Everything except `runtime` defines the experiment: its hash is stored in every
checkpoint, and resuming with a different experiment is refused; `runtime` (device, loader
workers, memory layout, compilation, batch-norm sync) may change between sessions.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_serializer, model_validator

from vision_bench.config_files import read_yaml, validate_mapping

VALIDATION_SPLITS = ("val_id", "val_ood")
SELECTION_METRICS = {"loss": "lower", "mse": "lower", "grid_accuracy": "higher"}


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DatasetConfig(_Section):
    """Where samples come from: a study id or an inline generation config (both generated on the fly,
    sized by `n_train` / `n_val`), or data on disk or online (`path`: an export directory, an image
    folder, `hf://ID_OR_FOLDER`, WebDataset shards `shards/{split}-{000000..000003}.tar`, an http(s)
    URL or `pipe:COMMAND`); `spec` says how grids are drawn.

    For data made elsewhere, `columns` names the image columns (or shard fields) of `input` and
    `target`, `splits` maps our split names to the source's (`{val_id: validation}`), and
    `shuffle_buffer` is how many streamed samples are mixed at a time (default 1000). Left unset,
    these three are not written out, so configs and checkpoints without them keep their hash.
    """

    study: str | None = None
    task: dict[str, Any] | None = None
    path: str | None = None
    n_train: int | None = Field(default=None, ge=1)
    n_val: int | None = Field(default=None, ge=1)
    spec: dict[str, Any] = Field(default_factory=dict)
    val_splits: tuple[Literal["val_id", "val_ood"], ...] = VALIDATION_SPLITS
    columns: dict[Literal["input", "target"], str] | None = None
    splits: dict[Literal["train", "val_id", "val_ood", "test_id", "test_ood"], str] | None = None
    shuffle_buffer: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _one_source(self) -> DatasetConfig:
        if sum(source is not None for source in (self.study, self.task, self.path)) != 1:
            raise ValueError(
                "give exactly one of dataset.study (a study id), dataset.task (a generation config) "
                "or dataset.path (an export directory, image folder, hf://ID or shard pattern)"
            )
        if self.path is not None and (self.n_train is not None or self.n_val is not None):
            raise ValueError("dataset.n_train / dataset.n_val size generated data; an export directory has fixed counts")
        unused = [key for key in _SOURCE_OPTIONS if getattr(self, key) is not None]
        if self.path is None and unused:
            raise ValueError(f"dataset.{unused[0]} applies to data given by dataset.path; generated data has none")
        return self

    @model_serializer(mode="wrap")
    def _leave_out_unset_source_options(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        return {key: value for key, value in data.items() if not (key in _SOURCE_OPTIONS and value is None)}


_SOURCE_OPTIONS = ("columns", "splits", "shuffle_buffer")


class ModelConfig(_Section):
    """A `vision_bench.models` name and its `create_model` options."""

    name: str
    options: dict[str, Any] = Field(default_factory=dict)


class OptimizerConfig(_Section):
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


class ScheduleConfig(_Section):
    """Linear warm-up, then cosine decay to `min_lr_ratio * lr` at the last step."""

    warmup_steps: int = Field(default=200, ge=0)
    min_lr_ratio: float = Field(default=0.0, ge=0, le=1)


class TrainingConfig(_Section):
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


class CheckpointConfig(_Section):
    """Which validation split and metric choose best.pt, and how often last.pt is refreshed.

    `select_on: val_id` by default: COGITAO picked its checkpoints on val_ood, which lets the OOD
    distribution leak into model selection; `val_ood` reproduces that choice when asked for.
    """

    select_on: Literal["val_id", "val_ood"] = "val_id"
    metric: Literal["loss", "mse", "grid_accuracy"] = "loss"
    every_steps: int | None = Field(default=None, ge=1)


class RuntimeConfig(_Section):
    """How the run executes; free to change when resuming (not part of the experiment hash)."""

    device: str = "auto"
    num_workers: int = Field(default=0, ge=0)
    channels_last: bool = True
    compile: bool = False
    sync_batchnorm: bool = True


class TrainConfig(_Section):
    """A complete training run; see the module docstring for the resume rule."""

    seed: int = Field(default=0, ge=0)
    dataset: DatasetConfig
    model: ModelConfig
    optimizer: OptimizerConfig = OptimizerConfig()
    schedule: ScheduleConfig = ScheduleConfig()
    training: TrainingConfig = TrainingConfig()
    checkpoint: CheckpointConfig = CheckpointConfig()
    runtime: RuntimeConfig = RuntimeConfig()

    @model_validator(mode="after")
    def _selection_split_is_validated(self) -> TrainConfig:
        if self.checkpoint.select_on not in self.dataset.val_splits:
            raise ValueError(
                f"checkpoint.select_on is {self.checkpoint.select_on} but dataset.val_splits is "
                f"{list(self.dataset.val_splits)}; add it there or select on another split"
            )
        return self

    @classmethod
    def from_dict(cls, data: Any, source: str = "training config") -> TrainConfig:
        """Validate a mapping; every problem is reported with its dotted key."""
        return validate_mapping(cls, data, source, _describe_all)

    @classmethod
    def from_yaml(cls, path: str | Path, overrides: Sequence[str] = ()) -> TrainConfig:
        """The config in a YAML file, with `--set key.path=value` overrides applied before validation."""
        path = Path(path)
        return cls.from_dict(read_yaml(path, overrides), source=f"{path} with --set" if overrides else str(path))

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    def replace(self, **sections: Any) -> TrainConfig:
        """A copy with whole sections or top-level keys replaced, validated again."""
        data = self.to_dict()
        for key, value in sections.items():
            data[key] = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
        return TrainConfig.from_dict(data)

    def experiment(self) -> dict[str, Any]:
        """The keys that define the experiment (everything but `runtime`)."""
        data = self.to_dict()
        del data["runtime"]
        return data

    def experiment_hash(self) -> str:
        canonical = json.dumps(self.experiment(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """{'a': {'b': 1}} -> {'a.b': 1}; lists and scalars are leaves."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, f"{dotted}."))
        else:
            flat[dotted] = value
    return flat


def differing_keys(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Dotted keys whose values differ between two experiment dicts (present in either)."""
    flat_old, flat_new = flatten(old), flatten(new)
    return sorted(k for k in flat_old.keys() | flat_new.keys() if flat_old.get(k, _MISSING) != flat_new.get(k, _MISSING))


_MISSING = object()


def _describe_all(error: ValidationError) -> str:
    return "; ".join(_describe(issue) for issue in error.errors())


def _describe(issue: dict[str, Any]) -> str:
    location = [str(part) for part in issue["loc"]]
    dotted = ".".join(location) or "config"
    if issue["type"] == "extra_forbidden":
        return f"{dotted}: unknown key{_suggestion(location)}"
    if issue["type"] == "missing":
        return f"{dotted}: required key is missing"
    message = issue["msg"].removeprefix("Value error, ")
    return message if issue["type"] == "value_error" and not location else f"{dotted}: {message}"


def _suggestion(location: list[str]) -> str:
    section: type[BaseModel] = TrainConfig
    for part in location[:-1]:
        field = section.model_fields.get(part)
        annotation = getattr(field, "annotation", None)
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return ""
        section = annotation
    known = list(section.model_fields)
    close = difflib.get_close_matches(location[-1], known, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"{hint} (known keys: {', '.join(known)})"
