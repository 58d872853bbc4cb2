"""`BenchConfig`: a matrix of models x experiments x seeds over a study, validated strictly.

Experiments are study ids (`compgen/C1/1`, `envgen/G3/2`, `alpha/translate_up/0.4`, `svib/S-A/0.2`), prefixes
that select every registered id below them (`compgen`, `envgen/G1`, `alpha/translate_up`), or
paths to task-config YAML files (a custom study). A *setting* groups experiments into one row
of the report, as the experiment settings (ES) of COGITAO's Table 1: the study id without its
last part (`compgen/C1`), each alpha value of an alpha sweep, or a custom file's stem.

`check_layout` refuses a render layout whose cell size follows the grid size (`stretch`, `fit`)
for an experiment whose grid sizes differ between splits (EnvGen G2 and G5): its OOD images
would differ from the ID ones in pixels per cell as well as in grid size.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import yaml
from pydantic import Field, SerializerFunctionWrapHandler, field_validator, model_serializer

from render.spec import RenderSpec
from render.validation import MappingOf
from vision_bench.bench.gate import Gate
from vision_bench.config_base import StrictConfig
from vision_bench.config_files import resolve_config
from vision_bench.errors import ConfigError
from vision_bench.evaluation.run import BASELINES, check_baselines
from vision_bench.io.documents import JSONDict
from vision_bench.tasks.config import Seed
from vision_bench.tasks.studies.builder import alpha_of
from vision_bench.train.config import (
    CheckpointConfig,
    OptimizerConfig,
    RuntimeConfig,
    ScheduleConfig,
    TrackingConfig,
    TrainingConfig,
    ValidationSplit,
    check_ood_validation,
)

if TYPE_CHECKING:
    from vision_bench.tasks.config import TaskConfig

EVALUATION_SPLITS = ("val_id", "val_ood", "test_id", "test_ood")


class TrainSections(StrictConfig):
    """The `TrainConfig` sections a bench sets for its cells (each cell sets dataset, model and
    seed itself). Used to check a bench's `train` mappings, which are kept as written: a model's
    own sections are merged over the shared ones key by key."""

    optimizer: OptimizerConfig = OptimizerConfig()
    schedule: ScheduleConfig = ScheduleConfig()
    training: TrainingConfig = TrainingConfig()
    checkpoint: CheckpointConfig = CheckpointConfig()
    runtime: RuntimeConfig = RuntimeConfig()
    tracking: TrackingConfig = TrackingConfig()


SharedSections = Annotated[JSONDict, MappingOf(TrainSections)]


def _without_cell_keys(train: object) -> object:
    """Reject `train` sections that every cell sets itself (before the sections are checked, which
    would call them unknown keys)."""
    if not isinstance(train, dict):
        return train
    reserved = sorted(set(train) & {"dataset", "model", "seed"})
    if reserved:
        raise ValueError(
            f"train.{reserved[0]} is set per cell from `experiments`, `data`, `models` and `seeds`; remove it"
        )
    return train


class ModelEntry(StrictConfig):
    """A `vision_bench.models` name, its options, the label the report shows for it, its own
    `train` sections, merged key by key over the bench's shared `train` (a ViT may take more steps
    than a CNN in the same time), and its own `seeds` in place of the bench's (a configuration that
    passed a gate on one seed gets the others, as a study's rule may say)."""

    name: str
    options: JSONDict = Field(default_factory=dict)
    label: str | None = None
    train: SharedSections = Field(default_factory=dict)
    seeds: tuple[Seed, ...] | None = None

    @field_validator("train", mode="before")
    @classmethod
    def _train_sections(cls, train: object) -> object:
        return _without_cell_keys(train)

    @model_serializer(mode="wrap")
    def _without_unset_seeds(self, handler: SerializerFunctionWrapHandler) -> JSONDict:
        """No `seeds` key when the model runs the bench's: a bench.yaml written before the key existed stays the
        same bench."""
        data: JSONDict = handler(self)
        if data.get("seeds") is None:
            data.pop("seeds", None)
        return data

    def train_sections(self, shared: JSONDict) -> JSONDict:
        merged = dict(shared)
        for section, values in self.train.items():
            base = merged.get(section)
            merged[section] = {**base, **values} if isinstance(base, dict) and isinstance(values, dict) else values
        return merged

    def checkpoint(self, shared: JSONDict) -> CheckpointConfig:
        """The model's checkpoint choice: its own `train.checkpoint` over the bench's."""
        return CheckpointConfig.model_validate(self.train_sections(shared).get("checkpoint", {}))

    def training(self, shared: JSONDict) -> TrainingConfig:
        """The model's run length and batch: its own `train.training` over the bench's."""
        return TrainingConfig.model_validate(self.train_sections(shared).get("training", {}))

    @property
    def display(self) -> str:
        return self.label or self.name


class DataSection(StrictConfig):
    """Sample counts per split and the render spec for every cell (kept as written, checked as a
    `render.RenderSpec`)."""

    n_train: int = Field(default=1000, ge=1)
    n_val: int = Field(default=100, ge=1)
    n_test: int = Field(default=200, ge=1)
    spec: Annotated[JSONDict, MappingOf(RenderSpec)] = Field(default_factory=dict)


class EvaluateSection(StrictConfig):
    """Which checkpoint and splits are evaluated, and how many best / worst samples each sheet shows."""

    checkpoint: Literal["best", "last"] = "best"
    splits: tuple[str, ...] = ("test_id", "test_ood")
    sheet_samples: int = Field(default=4, ge=1, le=32)
    batch_size: int = Field(default=64, ge=1)

    @field_validator("splits")
    @classmethod
    def _known_splits(cls, splits: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [s for s in splits if s not in EVALUATION_SPLITS]
        if unknown or not splits:
            raise ValueError(f"splits must be a non-empty list of {', '.join(EVALUATION_SPLITS)}; got {list(splits)}")
        return splits


class BenchConfig(StrictConfig):
    """The whole benchmark; `train` holds `TrainConfig` sections shared by every cell;
    `allow_cell_size_confound` keeps a `stretch` / `fit` layout for grid sizes that differ between
    splits (see `check_layout`)."""

    config_name = "bench config"

    name: str = "bench"
    experiments: tuple[str, ...]
    models: tuple[ModelEntry, ...]
    seeds: tuple[Seed, ...] = (0,)
    baselines: tuple[str, ...] = BASELINES
    data: DataSection = DataSection()
    train: SharedSections = Field(default_factory=dict)
    evaluate: EvaluateSection = EvaluateSection()
    allow_cell_size_confound: bool = False
    gate: Gate | None = None
    """The threshold a trained run must pass for its numbers to count (`vision_bench.bench.gate`)."""
    verdict: str = ""
    """The rule, stated before the runs, by which the study's finding is read from the gated numbers."""

    def to_dict(self) -> JSONDict:
        """As `StrictConfig.to_dict`, without `gate` and `verdict` when unset, so that a bench without them keeps
        the resolved config (and the folder) it had before they existed."""
        data = super().to_dict()
        for key, unset in (("gate", None), ("verdict", "")):
            if data.get(key) == unset:
                data.pop(key, None)
        return data

    @field_validator("models", mode="before")
    @classmethod
    def _names_as_entries(cls, models: object) -> object:
        if isinstance(models, (list, tuple)):
            return [{"name": m} if isinstance(m, str) else m for m in models]
        return models

    @field_validator("experiments", mode="before")
    @classmethod
    def _one_or_many(cls, experiments: object) -> object:
        return [experiments] if isinstance(experiments, str) else experiments

    @field_validator("experiments", "models", "seeds")
    @classmethod
    def _not_empty(cls, values: tuple) -> tuple:
        if not values:
            raise ValueError("must list at least one entry")
        return values

    @field_validator("models")
    @classmethod
    def _unique_labels(cls, models: tuple[ModelEntry, ...]) -> tuple[ModelEntry, ...]:
        labels = [m.display for m in models]
        repeated = sorted({label for label in labels if labels.count(label) > 1})
        if repeated:
            raise ValueError(f"model labels must be unique; give a `label` to each of {repeated}")
        clash = sorted(set(labels) & set(BASELINES))
        if clash:
            raise ValueError(f"{clash} are evaluated as baselines; list them under `baselines`, not `models`")
        return models

    @field_validator("baselines")
    @classmethod
    def _known_baselines(cls, baselines: tuple[str, ...]) -> tuple[str, ...]:
        check_baselines(baselines)  # the old name 'oracle' points to 'ground_truth'
        return baselines

    @field_validator("train", mode="before")
    @classmethod
    def _train_sections(cls, train: object) -> object:
        return _without_cell_keys(train)

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str], overrides: Sequence[str] = ()) -> BenchConfig:
        """The config in a YAML file (`--set` overrides applied first); custom experiment files
        named relative to it resolve next to it."""
        config = super().from_yaml(path, overrides)
        folder = resolve_config(Path(path)).parent
        experiments = tuple(_relative_to(e, folder) for e in config.experiments)
        return config.model_copy(update={"experiments": experiments})

    def with_select_on(self, split: ValidationSplit) -> BenchConfig:
        """Every cell's best checkpoint chosen on `split` (`bench --select-on`): the shared
        `train.checkpoint.select_on` set as `--set train.checkpoint.select_on=SPLIT` sets it, and the models that
        set their own as well."""
        models = tuple(model.model_copy(update={"train": _selecting_on(model.train, split)})
                       if "select_on" in model.train.get("checkpoint", {}) else model for model in self.models)
        return self.model_copy(update={"train": _selecting_on(self.train, split), "models": models})


def _selecting_on(train: JSONDict, split: ValidationSplit) -> JSONDict:
    """`train` sections with `checkpoint.select_on` set to `split`, the other keys kept."""
    return {**train, "checkpoint": {**train.get("checkpoint", {}), "select_on": split}}


def _relative_to(experiment: str, folder: Path) -> str:
    """A custom experiment file named relative to the bench config resolves next to it."""
    candidate = folder / experiment
    return str(candidate) if is_file_reference(experiment) and candidate.is_file() else experiment


def is_file_reference(experiment: str) -> bool:
    """True for an experiment given as a task-config YAML file rather than a study id."""
    return experiment.endswith((".yaml", ".yml"))


def resolve_experiments(patterns: tuple[str, ...], known: list[str]) -> list[str]:
    """Expand prefixes to the registered study ids below them; keep exact ids, any
    `alpha/<rule>/<alpha>` or `svib/<task>/<alpha>` (`alpha_of`) and YAML paths.

    An entry that is neither raises `ConfigError` naming it and the closest registered ids.
    """
    resolved: list[str] = []
    for pattern in patterns:
        if is_file_reference(pattern):
            if not Path(pattern).is_file():
                raise ConfigError(f"experiment file {pattern} does not exist; give a task-config YAML path")
            matches = [pattern]
        elif pattern in known or alpha_of(pattern) is not None:
            matches = [pattern]
        else:
            prefix = pattern.rstrip("/") + "/"
            matches = [k for k in known if k.startswith(prefix)]
        if not matches:
            from vision_bench.registry import unknown_name_message

            raise ConfigError(f"experiments: {unknown_name_message('study', pattern, known)}")
        resolved.extend(m for m in matches if m not in resolved)
    return resolved


def experiment_name(experiment: str) -> str:
    """How tables name an experiment: its study id, or a task-config file's stem."""
    return Path(experiment).stem if is_file_reference(experiment) else experiment


def setting_of(experiment: str) -> str:
    """The report row an experiment belongs to (see the module docstring)."""
    if is_file_reference(experiment):
        return Path(experiment).stem
    if alpha_of(experiment) is not None:
        return experiment
    return experiment.rsplit("/", 1)[0] if "/" in experiment else experiment


GridSizes = tuple[tuple[int, int], tuple[int, int]]
"""A split's grid height and width ranges, ((low, high), (low, high))."""


def check_layout(config: BenchConfig, experiments: Sequence[str], spec: RenderSpec) -> None:
    """Refuse an experiment whose largest grid does not fit the canvas, or whose grid sizes differ
    between splits under a layout that sizes cells by the grid (unless `allow_cell_size_confound`)."""
    from render import SpecError, placement
    from vision_bench.tasks.config import SPLITS

    for experiment in experiments:
        task = task_config(experiment, config.data)
        sizes = {split: _grid_sizes(task.for_split(split)) for split in SPLITS}
        largest = (max(h[1] for h, _ in sizes.values()), max(w[1] for _, w in sizes.values()))
        try:
            placement(largest, spec)
        except SpecError as error:
            raise ConfigError(f"data.spec: experiment {experiment}: {error}") from None
        shifted = next((split for split in SPLITS if sizes[split] != sizes["train"]), None)
        if shifted is None or spec.layout.mode == "cell" or config.allow_cell_size_confound:
            continue
        cell = min(spec.size[0] // largest[0], spec.size[1] // largest[1])
        raise ConfigError(
            f"experiment {experiment}: grids are {_describe_sizes(sizes['train'])} in train but "
            f"{_describe_sizes(sizes[shifted])} in {shifted}, so layout '{spec.layout.mode}' draws ID and OOD cells "
            f"at different pixel sizes (a confound); set data.spec.layout: cell:{cell} (fixed {cell}-pixel cells), "
            "or allow_cell_size_confound: true in the bench config to keep it"
        )


def check_selection(config: BenchConfig, experiments: Sequence[str]) -> None:
    """Refuse a model that selects its checkpoint on val_ood in an experiment whose val_ood split holds no
    samples (Sample-Efficiency's): there is no OOD validation loss to select on."""
    selecting = [m.display for m in config.models if m.checkpoint(config.train).select_on == "val_ood"]
    if not selecting:
        return
    for experiment in experiments:
        check_ood_validation(task_config(experiment, config.data), data=f"experiment {experiment}",
                             who=", ".join(selecting), key="train.checkpoint.select_on")


def task_config(experiment: str, data: DataSection) -> TaskConfig:
    """The task config of one experiment (a study id or a task-config file) at the bench's sample counts."""
    from vision_bench.data.sources import load_config

    study, path = (None, experiment) if is_file_reference(experiment) else (experiment, None)
    return load_config(study, path, n_train=data.n_train, n_val=data.n_val, n_test=data.n_test)


def _grid_sizes(task: TaskConfig) -> GridSizes:
    return (task.grid_height[0], task.grid_height[1]), (task.grid_width[0], task.grid_width[1])


def _describe_sizes(sizes: GridSizes) -> str:
    """'10-15 x 10-15' (height range x width range), a fixed side written once: '15 x 15'."""
    return " x ".join(f"{low}" if low == high else f"{low}-{high}" for low, high in sizes)


BENCH_FILE = "bench.yaml"
"""The resolved config a bench writes at the top of its --out (`bench.runner`)."""
FINGERPRINTS = "data_fingerprints"
"""Key of bench.yaml holding each experiment's `data_fingerprint`: results computed on other data are refused."""


def stored_bench(folder: str | os.PathLike[str]) -> BenchConfig:
    """The bench a bench folder holds: its bench.yaml read back without the data fingerprints; a one-line
    ConfigError when the folder has none."""
    path = Path(folder) / BENCH_FILE
    if not path.is_file():
        raise ConfigError(f"{folder} is not a bench folder (no {BENCH_FILE}); give the --out of `vision-bench bench`")
    try:
        stored = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError:
        stored = None
    if not isinstance(stored, dict):
        raise ConfigError(f"{path} is not a bench config (a YAML mapping); run or collect the bench again")
    stored.pop(FINGERPRINTS, None)
    return BenchConfig.from_dict(stored)

