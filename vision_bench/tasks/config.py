"""`TaskConfig`: what a generated dataset contains, validated once, loaded from and saved to YAML.

A config fixes the grid size range, the number of objects, the object filter(s), the connectivity
and either a transformation pool with a depth range or an explicit list of sequences; optionally
`rules` (a selector each, see `vision_bench.tasks.selectors`, with its own sequences or the
config's) that pick which objects are transformed, and distractor objects no rule picks; it gives a
sample count per split and, under `splits`, per-split overrides (out-of-distribution splits
usually change the grid size, the object count, the object filter or the sequences). Unknown keys
and bad values raise `ConfigError` naming the key.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BeforeValidator, Field, ValidationError, model_validator

from render.grid import MAX_SIDE
from render.validation import describe_validation_error
from vision_bench.config_base import StrictConfig
from vision_bench.errors import ConfigError, UserError
from vision_bench.tasks.carc.spec import EpisodeSpec
from vision_bench.tasks.objects import ObjectFilter
from vision_bench.tasks.scenes.spec import DEFAULT_GRID_SIZE, SceneSpec
from vision_bench.tasks.selectors import ALL_OBJECTS, Selector
from vision_bench.tasks.task_code import MAX_TASK_CODE_LENGTH, TASK_CODE_LENGTH, selector_tokens
from vision_bench.tasks.transformations import resolve_sequence

SPLITS = ("train", "val_id", "val_ood", "test_id", "test_ood")
PAIRED_SPLITS = {"val_ood": "val_id", "test_ood": "test_id"}
"""Under `paired_ood`, each OOD split and the ID split whose input grids it reuses."""
Split = Literal["train", "val_id", "val_ood", "test_id", "test_ood"]


def _as_range(value: Any) -> Any:
    """`5` -> (5, 5); `[2, 4]` -> (2, 4); anything else is left for the type check to reject."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if isinstance(value, list):
        return tuple(value)
    return value


def _ordered(value: tuple[int, int]) -> tuple[int, int]:
    if value[0] > value[1]:
        raise ValueError(f"the range [{value[0]}, {value[1]}] is empty; write [low, high] with low <= high")
    return value


_Side = Annotated[int, Field(ge=1, le=MAX_SIDE)]
_Count = Annotated[int, Field(ge=1)]
_Distractors = Annotated[int, Field(ge=0)]
_Depth = Annotated[int, Field(ge=1, le=MAX_TASK_CODE_LENGTH)]
# Each range: a [low, high] pair of integers within the bounds, written as one integer or a two-item list.
GridRange = Annotated[tuple[_Side, _Side], BeforeValidator(_as_range), AfterValidator(_ordered)]
CountRange = Annotated[tuple[_Count, _Count], BeforeValidator(_as_range), AfterValidator(_ordered)]
DistractorRange = Annotated[tuple[_Distractors, _Distractors], BeforeValidator(_as_range), AfterValidator(_ordered)]
DepthRange = Annotated[tuple[_Depth, _Depth], BeforeValidator(_as_range), AfterValidator(_ordered)]


def _filters(value: Any) -> Any:
    """One filter (a mapping) or a list of them; each object draws one of them (see the generator)."""
    return (value,) if isinstance(value, (dict, ObjectFilter)) else value


def _names(value: tuple[str, ...]) -> tuple[str, ...]:
    try:
        resolve_sequence(value)
    except UserError as error:
        raise ValueError(str(error)) from None
    return value


def _sequences(value: tuple[tuple[str, ...], ...]) -> tuple[tuple[str, ...], ...]:
    if not value:
        raise ValueError("the list of sequences is empty; give at least one sequence")
    for sequence in value:
        if not 1 <= len(sequence) <= MAX_TASK_CODE_LENGTH:
            raise ValueError(f"sequence {list(sequence)} has {len(sequence)} steps; use 1 to {MAX_TASK_CODE_LENGTH}")
        _names(sequence)
    return tuple(dict.fromkeys(value))


ObjectFilters = Annotated[tuple[ObjectFilter, ...], BeforeValidator(_filters), Field(min_length=1)]
Names = Annotated[tuple[str, ...], AfterValidator(_names), Field(min_length=1)]
Sequences = Annotated[tuple[tuple[str, ...], ...], AfterValidator(_sequences)]


class Rule(StrictConfig):
    """A selector and what it does to the objects it picks: one of `sequences` (drawn uniformly per
    sample), or, when `sequences` is unset, a sequence drawn as the config draws one (with `depth`,
    when set, in place of the config's depth: its pool of `transformations` is then needed)."""

    selector: Selector = ALL_OBJECTS
    sequences: Sequences | None = None
    depth: DepthRange | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Rule:
        if self.sequences is not None and self.depth is not None:
            raise ValueError("a rule sets 'sequences' or 'depth' (for the config's transformation pool), not both")
        return self

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


MAX_SAMPLES = 10**9
"""The most samples one split may hold: 10,000 times COGITAO's 100,000 training pairs, 12 days of one worker's
generation (50 as images) and 2 TB of PNG images. A larger count is a slip of the keyboard, and would only be found
out (by memory growing) long after the command started."""
MAX_SEED = 2**32 - 1
"""The largest seed: numpy's generators take seeds below 2**32, and a training run seeds numpy with it."""


def _sample_count(count: int) -> int:
    if count > MAX_SAMPLES:
        raise ValueError(f"{count:,} samples is more than a split may hold ({MAX_SAMPLES:,}); ask for fewer")
    return count


def check_seed(seed: int) -> int:
    """`seed` when it is 0 to `MAX_SEED`, else a `ValueError` naming the range."""
    if not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed {seed} is out of range; use a seed from 0 to {MAX_SEED} (2**32 - 1)")
    return seed


SampleCount = Annotated[int, Field(ge=0), AfterValidator(_sample_count)]
Seed = Annotated[int, AfterValidator(check_seed)]
"""A seed of a task or training config, 0 to `MAX_SEED`."""


class SampleCounts(StrictConfig):
    """How many samples each split holds (at most `MAX_SAMPLES` each)."""

    train: SampleCount = 1000
    val_id: SampleCount = 100
    val_ood: SampleCount = 100
    test_id: SampleCount = 100
    test_ood: SampleCount = 100


class SplitConfig(StrictConfig):
    """Overrides for one split; unset fields keep the config's value. Setting `sequences` drops the
    transformation pool and setting `transformations` drops the sequence list."""

    grid_height: GridRange | None = None
    grid_width: GridRange | None = None
    square_grid: bool | None = None
    n_objects: CountRange | None = None
    object_filter: ObjectFilters | None = None
    transformations: Names | None = None
    depth: DepthRange | None = None
    sequences: Sequences | None = None
    rules: tuple[Rule, ...] | None = None
    n_distractors: DistractorRange | None = None


class SplitOverrides(StrictConfig):
    train: SplitConfig | None = None
    val_id: SplitConfig | None = None
    val_ood: SplitConfig | None = None
    test_id: SplitConfig | None = None
    test_ood: SplitConfig | None = None


SEQUENCE_FAMILIES = frozenset({"sequences", "rules", "world_model"})
"""The task families whose samples the COGITAO generator makes: their configs (and configs naming no family and
no `episode`) must say where sequences come from; a config of any other family needs only the fields that
family uses (the episodes family's `episode`; a family's own checks are its entry's `check`)."""


class TaskConfig(StrictConfig):
    """A generation config. Sequences come from `transformations` (each step drawn uniformly, repeats
    allowed, `depth` steps) or from `sequences` (one drawn uniformly); exactly one must be set for the
    COGITAO generator's families (`SEQUENCE_FAMILIES`).
    `connectivity` (4 or 8) is the one under which every input object is a single piece, unless an
    object filter asks for connectivity "distance". `square_grid` makes every grid as wide as it is
    high (the height is drawn from `grid_height`; `grid_width` must then be the same range).

    `paired_ood` pairs the evaluation splits as COGITAO's released CompGen configs do: sample i of
    val_ood (test_ood) has the input grid of sample i of val_id (test_id), transformed by an OOD
    sequence, so each input is scored in distribution and out of it. The OOD splits may then change
    only the sequences."""

    description: str = ""
    seed: Seed = 0
    grid_height: GridRange = (20, 20)
    grid_width: GridRange = (20, 20)
    square_grid: bool = False
    n_objects: CountRange = (1, 4)
    object_filter: ObjectFilters = (ObjectFilter(),)
    connectivity: Literal[4, 8] = 8
    transformations: Names | None = None
    depth: DepthRange = (1, 1)
    sequences: Sequences | None = None
    samples: SampleCounts = SampleCounts()
    splits: SplitOverrides = SplitOverrides()
    paired_ood: bool = False
    rules: tuple[Rule, ...] | None = None
    n_distractors: DistractorRange = (0, 0)
    task_code_length: int = Field(TASK_CODE_LENGTH, ge=1, le=MAX_TASK_CODE_LENGTH)
    episode: EpisodeSpec | None = None
    """When set, samples are Compositional-ARC episodes made by `vision_bench.tasks.carc`; transformations,
    sequences, rules and object filters are not used."""
    scene: SceneSpec | None = None
    """When set, samples are SVIB scenes made by `vision_bench.tasks.families.scenes`: two objects and a rule over
    their factors; transformations, sequences, rules and object filters are not used, and `grid_height` and
    `grid_width` (filled in when left out) are `scene.grid_size`."""
    kind: Literal["sequence", "world_model"] = "sequence"
    """`world_model`: datasets serve each sequence sample as one step of it (`vision_bench.tasks.families.world_model`),
    in exports and on the fly alike; such a config is a `WorldModelConfig`."""
    family: str | None = None
    """The task family that makes the samples (`vision_bench.tasks.families`); unset, it is inferred from the
    fields: `episode` -> episodes, `kind: world_model` -> world_model, `rules` -> rules, else sequences."""

    @classmethod
    def from_dict(cls, data: Any, source: str | None = None) -> Any:
        """As `StrictConfig.from_dict`; a mapping with `kind: world_model` gives a `WorldModelConfig`."""
        if cls is TaskConfig and isinstance(data, dict) and data.get("kind") == "world_model":
            return WorldModelConfig.from_dict(data, source)
        return super().from_dict(data, source)

    @model_validator(mode="before")
    @classmethod
    def _scene_grid(cls, data: Any) -> Any:
        """A scene config that leaves out `grid_height` / `grid_width` gets `scene.grid_size` for both."""
        if not isinstance(data, dict) or data.get("scene") is None:
            return data
        scene = data["scene"]
        side = scene.grid_size if isinstance(scene, SceneSpec) else (
            scene.get("grid_size", DEFAULT_GRID_SIZE) if isinstance(scene, dict) else None)
        if not isinstance(side, int) or isinstance(side, bool):
            return data  # a bad grid_size: scene's own check names it
        return {"grid_height": side, "grid_width": side, **data}

    @model_validator(mode="after")
    def _consistent(self) -> TaskConfig:
        if self.episode is not None:
            return self
        if self.scene is not None:
            self._check_scene(self.scene)
            return self
        if self.family is None or self.family in SEQUENCE_FAMILIES:
            self._check_sequences()
        if self.square_grid and self.grid_width != self.grid_height:
            raise ValueError("square_grid needs grid_width equal to grid_height; set both to the same range")
        if self.connectivity == 4 and any(f.connectivity == 8 for f in self.object_filter):
            raise ValueError(
                "an object filter allows diagonally connected objects (connectivity 8), which split into "
                "several objects under connectivity 4; use connectivity 8 or filter connectivity 4"
            )
        if self.paired_ood:
            for ood, id_split in PAIRED_SPLITS.items():
                if self.count(ood) != self.count(id_split):
                    raise ValueError(
                        f"paired_ood: sample i of {ood} reuses the input of sample i of {id_split}, so both need "
                        f"the same count, got {self.count(ood)} and {self.count(id_split)}; set samples.{ood} to "
                        f"{self.count(id_split)} or paired_ood: false"
                    )
                changed = _changed_environment(getattr(self.splits, ood), getattr(self.splits, id_split))
                if changed:
                    raise ValueError(
                        f"paired_ood: {ood} shares the input grids of {id_split}, so it may change only the "
                        f"sequences, but it sets {', '.join(changed)}; remove them or set paired_ood: false"
                    )
        for split in SPLITS:
            if getattr(self.splits, split) is not None:
                try:
                    self.for_split(split)
                except ConfigError as error:
                    raise ValueError(str(error)) from None
        return self

    def _check_scene(self, scene: SceneSpec) -> None:
        """A scene's grid is `scene.grid_size` square; its splits come from `scene`, not from paired inputs."""
        side = (scene.grid_size, scene.grid_size)
        if self.grid_height != side or self.grid_width != side:
            raise ValueError(f"a scene's grid is scene.grid_size ({scene.grid_size}) a side, but grid_height is "
                             f"{_span(self.grid_height)} and grid_width {_span(self.grid_width)}; leave them out "
                             "(scene.grid_size sets both)")
        if self.paired_ood:
            raise ValueError("paired_ood is not available with 'scene' (its OOD splits draw other combinations); "
                             "set paired_ood: false")

    def _check_sequences(self) -> None:
        """The settings of the COGITAO generator's families: where sequences come from, the rules, `depth`."""
        every_rule_has_sequences = self.rules is not None and all(rule.sequences for rule in self.rules)
        if (self.transformations is None) == (self.sequences is None) and not (
                every_rule_has_sequences and self.transformations is None):
            raise ValueError(
                "set exactly one of 'transformations' (a pool, with 'depth') or 'sequences' "
                "(an explicit list of transformation sequences)"
            )
        self._check_rules()
        if self.sequences is not None and "depth" in self.model_fields_set:
            raise ValueError("'depth' applies to a 'transformations' pool; remove it when giving 'sequences'")

    def _check_rules(self) -> None:
        """Rules need no paired splits; distractors need rules; every rule's code fits `task_code_length`."""
        if self.rules is None:
            if self.n_distractors != (0, 0):
                raise ValueError("n_distractors needs 'rules' (distractors are the objects no rule picks); "
                                 "give rules or remove n_distractors")
        elif not self.rules:
            raise ValueError("'rules' is empty; give at least one rule or remove the key")
        elif self.paired_ood:
            raise ValueError("paired_ood is not available with 'rules'; set paired_ood: false")
        length = self.task_code_length
        for rule in self.rules or (None,):
            selector = None if rule is None else rule.selector
            prefix = 0 if selector is None else len(selector_tokens(selector))
            sequences = (rule.sequences if rule is not None and rule.sequences else self.sequences) or ()
            if rule is not None and rule.depth is not None:
                if self.transformations is None:
                    raise ValueError("a rule with 'depth' draws from the config's 'transformations'; set them")
                sequences = ()
            for sequence in sequences:
                if prefix + len(sequence) > length:
                    raise ValueError(self._too_long(f"sequence {list(sequence)} has {len(sequence)} steps", prefix,
                                                    len(sequence)))
            depth = self.depth if rule is None or rule.depth is None else rule.depth
            if not sequences and prefix + depth[1] > length:
                raise ValueError(self._too_long(f"depth {depth[1]}", prefix, depth[1]))

    def _too_long(self, what: str, prefix: int, steps: int) -> str:
        room = self.task_code_length - prefix
        if room < 1:  # the selector alone fills the code: no number of steps fits
            needed = prefix + steps
            raise_it = (f"raise task_code_length to {needed} (now {self.task_code_length}, at most "
                        f"{MAX_TASK_CODE_LENGTH}) or " if needed <= MAX_TASK_CODE_LENGTH else "")
            return (f"{what}; the rule's {prefix} selector tokens leave no room for a step: {raise_it}"
                    "simplify the selector")
        selector = f" besides the rule's {prefix} selector tokens" if prefix else ""
        return (f"{what}; use 1 to {room} steps{selector}, or raise task_code_length "
                f"(now {self.task_code_length}, at most {MAX_TASK_CODE_LENGTH})")

    def to_dict(self) -> dict[str, Any]:
        """A plain mapping that `from_dict` turns back into an equal config (filters list only non-defaults;
        the rule settings only when set, so that configs without rules keep their former form; a scene's grid
        size once, under `scene`)."""
        data: dict[str, Any] = {}
        plain = self.model_dump(mode="json", exclude={"object_filter", "splits", "rules"})
        for name in type(self).model_fields:
            if name in _RULE_DEFAULTS and getattr(self, name) == _RULE_DEFAULTS[name]:
                continue
            if self.scene is not None and name in ("grid_height", "grid_width"):
                continue  # the scene's grid size: `_scene_grid` fills them in again
            if name == "rules":
                data[name] = [rule.to_dict() for rule in self.rules or ()]
            elif name == "object_filter":
                data[name] = _dump_filters(self.object_filter)
            elif name == "splits":
                splits = {split: _dump_override(getattr(self.splits, split)) for split in SPLITS
                          if getattr(self.splits, split) is not None}
                if splits:
                    data[name] = splits
            elif plain[name] is not None and not (name == "depth" and self.sequences is not None):
                data[name] = plain[name]
        return data

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    def for_split(self, split: str) -> TaskConfig:
        """This config with `split`'s overrides applied and no overrides left."""
        if split not in SPLITS:
            raise ConfigError(f"unknown split {split!r}; splits are {', '.join(SPLITS)}")
        override = getattr(self.splits, split)
        update: dict[str, Any] = {"splits": SplitOverrides()}
        if override is not None:
            update.update(override.model_dump(exclude_none=True))
            if override.object_filter is not None:
                update["object_filter"] = override.object_filter
            if override.sequences is not None:
                update["transformations"] = None
            elif override.transformations is not None:
                update["sequences"] = None
        data = {**self.model_dump(exclude={"splits", "object_filter"}), "object_filter": self.object_filter}
        data.update(update)
        if data["sequences"] is not None:
            data.pop("depth")
        try:
            return TaskConfig.model_validate(data)
        except ValidationError as error:
            raise ConfigError(f"splits.{split}: {describe_validation_error(error, TaskConfig)}") from None

    def count(self, split: str) -> int:
        return int(getattr(self.samples, split))


class WorldModelConfig(TaskConfig):
    """A sequence study whose samples are served as one-step transitions (`kind: world_model`)."""

    kind: Literal["world_model"] = "world_model"


_RULE_DEFAULTS: dict[str, Any] = {"rules": None, "n_distractors": (0, 0), "task_code_length": TASK_CODE_LENGTH,
                                  "episode": None, "scene": None, "kind": "sequence", "family": None}
"""The settings added for rules, episodes, scenes, world models and task families, and their defaults, which `to_dict`
leaves out."""


def experiment_canvas(task_config: TaskConfig) -> tuple[int, int]:
    """The largest grid any split of the experiment allows, (rows, columns): COGITAO pads every grid to "the max
    size which can be observed during the experiment" (paper 000, appendix F), in and out of distribution alike;
    the evaluation's canvas, and the canvas of a model that reads grids on a fixed one (training fills its size)."""
    resolved = [task_config.for_split(split) for split in SPLITS]
    return max(config.grid_height[1] for config in resolved), max(config.grid_width[1] for config in resolved)


def _span(bounds: tuple[int, int]) -> str:
    low, high = bounds
    return str(low) if low == high else f"[{low}, {high}]"


def _changed_environment(ood: SplitConfig | None, id_split: SplitConfig | None) -> list[str]:
    """Fields other than the sequences on which an OOD split's overrides differ from its ID split's."""
    sequence_fields = {"transformations", "depth", "sequences"}
    return [name for name in SplitConfig.model_fields if name not in sequence_fields
            and getattr(ood, name, None) != getattr(id_split, name, None)]


def _dump_override(override: SplitConfig) -> dict[str, Any]:
    entry = override.model_dump(mode="json", exclude_none=True, exclude={"object_filter", "rules"})
    if override.rules is not None:
        entry["rules"] = [rule.to_dict() for rule in override.rules]
    if override.object_filter is not None:
        entry["object_filter"] = _dump_filters(override.object_filter)
    return entry


def _dump_filters(filters: tuple[ObjectFilter, ...]) -> dict[str, Any] | list[dict[str, Any]]:
    dumped = [f.model_dump(mode="json", exclude_defaults=True) for f in filters]
    return dumped[0] if len(dumped) == 1 else dumped
