"""The `create_model` options: those every family accepts, and the declared options of each family.

The training engine passes one options dict to whichever model a config names, so every family
(baselines included) accepts the shared ones (`SharedOptions`). A family ignores the ones that do
not concern it (a baseline draws no palette), except the weight sources `pretrained` and
`pretrained_file`, which baselines and SVIB's presets refuse rather than silently skip.

Each family declares its own options as a `FamilyOptions` dataclass (fields made with `option`,
checked in `__post_init__`); `vision-bench models --describe` lists them from that declaration.
An option left at None is unset: the family's default applies.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vision_bench.errors import ConfigError
from vision_bench.models.normalization import check_normalization
from vision_bench.tasks.task_code import MAX_TASK_CODE_LENGTH, TASK_CODE_LENGTH

if TYPE_CHECKING:
    from render.spec import RenderSpec


@dataclass(frozen=True)
class SharedOptions:
    """Image size, output head and loss, task conditioning, starting weights and the input normalisation they
    expect (`models.normalization`), render spec.

    `task_conditioning` None is the model's default: off, except for svib:cell-oracle, which reads the
    task code unless told false. `task_code_length` is the number of tokens of the codes a
    conditioned model reads: the study's `TaskConfig.task_code_length` (4 for COGITAO's studies,
    10 for gCOG's productive presets).
    """

    image_size: int = 128
    head: str = "rgb"
    loss: str | None = None
    palette_colors: Any = None
    background_weight: float = 0.2
    task_conditioning: bool | int | None = None
    task_code_length: int = TASK_CODE_LENGTH
    pretrained: bool = False
    pretrained_file: str | Path | None = None
    input_normalization: Any = None
    render_spec: RenderSpec | None = None

    def __post_init__(self) -> None:
        positive_int(self.image_size, "image_size")
        if positive_int(self.task_code_length, "task_code_length") > MAX_TASK_CODE_LENGTH:
            raise ConfigError(f"task_code_length must be at most {MAX_TASK_CODE_LENGTH}, got {self.task_code_length}; "
                              "use the study's task_code_length")
        if not isinstance(self.pretrained, bool):
            raise ConfigError(f"pretrained must be true or false, got {self.pretrained!r}")
        check_normalization(self.input_normalization)

    @property
    def has_weights(self) -> bool:
        """True when the options name starting weights (timm's pretrained ones or a file)."""
        return self.pretrained or self.pretrained_file is not None


SHARED_OPTION_NAMES = frozenset(field.name for field in fields(SharedOptions))


def split_options(options: dict[str, Any]) -> tuple[SharedOptions, dict[str, Any]]:
    """(shared options, the rest: family options and backbone keyword arguments)."""
    shared = SharedOptions(**{k: v for k, v in options.items() if k in SHARED_OPTION_NAMES})
    rest = {k: v for k, v in options.items() if k not in SHARED_OPTION_NAMES}
    return shared, rest


def check_from_scratch(name: str, shared: SharedOptions, *, like: str, predicts: str) -> None:
    """Refuse, in one line each, pretrained weights and the image heads' options for a paper's own model that trains
    from scratch (`like`: as whose models do) and predicts its own way (`predicts`: what and with which loss)."""
    if shared.has_weights:
        raise ConfigError(f"{name} trains from scratch, as {like}; remove pretrained and pretrained_file")
    if shared.head != "rgb" or shared.loss is not None:
        raise ConfigError(f"{name} {predicts}; drop the options head and loss")


def reject_options(rest: dict[str, Any], model: str, hint: str) -> None:
    """A `ConfigError` naming the options `model` does not take, if any."""
    if rest:
        names = ", ".join(sorted(rest))
        raise ConfigError(f"model {model!r} does not take option(s) {names}; {hint}")


def option(default: Any, help: str) -> Any:
    """A `FamilyOptions` field: its default and one line on what it does."""
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class FamilyOptions:
    """A family's own options; subclasses are frozen dataclasses whose fields are made with `option`."""

    @classmethod
    def names(cls) -> frozenset[str]:
        return frozenset(item.name for item in fields(cls))

    @classmethod
    def split(cls, options: dict[str, Any]) -> tuple[FamilyOptions, dict[str, Any]]:
        """(this family's options from `options`, the options it does not declare)."""
        names = cls.names()
        given = {k: v for k, v in options.items() if k in names and v is not None}
        return cls(**given), {k: v for k, v in options.items() if k not in names}

    @classmethod
    def describe(cls) -> dict[str, dict[str, Any]]:
        """Option name -> {'default', 'help'}, in declaration order."""
        return {item.name: {"default": item.default, "help": item.metadata["help"]} for item in fields(cls)}


@dataclass(frozen=True)
class NoOptions(FamilyOptions):
    """The options of a family that has none of its own."""


def positive_int(value: Any, option: str) -> int:
    """`value` if it is a positive integer, else a `ConfigError` naming `option`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{option} must be a positive integer, got {value!r}")
    return value
