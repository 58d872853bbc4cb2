"""`RenderSpec`: everything that decides how a grid becomes pixels, frozen and validated.

One spec describes a whole dataset, so it round-trips through a dict and YAML and is hashable
(the rasterizer caches cell geometry per spec and grid shape). Fields accept short forms
(`layout: fit`, `blur: gaussian:1.5`, `background: white`) and store one canonical form.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from render.errors import UserError
from render.palettes import (
    PALETTES,
    background_candidates,
    palette_array,
    parse_color,
    resolve_palette,
    to_hex,
)
from render.validation import describe_validation_error

MIN_SIDE, MAX_SIDE = 8, 1024
MAX_ANTIALIAS = 8
BACKGROUND_STREAM, SCALE_STREAM, SHIFT_Y_STREAM, SHIFT_X_STREAM = 0, 1, 2, 3
ANCHORS = (
    "center", "top", "bottom", "left", "right", "top-left", "top-right", "bottom-left", "bottom-right"
)


class SpecError(UserError):
    """A render spec field with a bad value, or a spec that cannot draw a given grid."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Layout(_Frozen):
    """Cells to pixels: `stretch` fills the canvas, `fit` keeps square cells, `cell` fixes their size."""

    mode: Literal["stretch", "fit", "cell"] = "stretch"
    cell_size: int | None = None
    anchor: str = "center"

    @model_validator(mode="after")
    def _check(self) -> Layout:
        if self.mode == "cell":
            if self.cell_size is None or not 1 <= self.cell_size <= MAX_SIDE:
                raise ValueError(f"layout 'cell' needs cell_size 1..{MAX_SIDE} pixels, e.g. 'cell:4'")
        elif self.cell_size is not None:
            raise ValueError(f"cell_size applies to layout 'cell' only, not {self.mode!r}")
        if self.anchor not in ANCHORS:
            raise ValueError(f"unknown anchor {self.anchor!r}; use one of {', '.join(ANCHORS)}")
        if self.mode != "cell" and self.anchor != "center":
            raise ValueError(f"anchor applies to layout 'cell' only; {self.mode!r} is always centered")
        return self


class Gridlines(_Frozen):
    """Lines between and around cells (the ARC viewer look), `width` pixels wide."""

    color: str = "#555555"
    width: int = 1

    @field_validator("color", mode="before")
    @classmethod
    def _color(cls, value: object) -> str:
        return to_hex(parse_color(value, "gridline color"))

    @field_validator("width")
    @classmethod
    def _width(cls, value: int) -> int:
        if not 1 <= value <= 16:
            raise ValueError(f"gridline width must be 1..16 pixels, got {value}")
        return value


class Blur(_Frozen):
    """A blur applied after drawing: `gaussian` with `sigma` pixels or a `box` of odd `size`."""

    kind: Literal["none", "gaussian", "box"] = "none"
    sigma: float | None = None
    size: int | None = None

    @model_validator(mode="after")
    def _check(self) -> Blur:
        if self.kind == "gaussian":
            if self.sigma is None or not 0 < self.sigma <= 32 or self.size is not None:
                raise ValueError("gaussian blur needs sigma in (0, 32] pixels and no size, e.g. 'gaussian:1.5'")
        elif self.kind == "box":
            if self.size is None or not 3 <= self.size <= 65 or self.size % 2 == 0 or self.sigma is not None:
                raise ValueError("box blur needs an odd size 3..65 pixels and no sigma, e.g. 'box:3'")
        elif self.sigma is not None or self.size is not None:
            raise ValueError("blur 'none' takes no sigma or size")
        return self


class Jitter(_Frozen):
    """A seeded per-image shift (up to `max_shift` pixels each way) and scale of the drawn grid."""

    max_shift: int = 0
    scale: tuple[float, float] = (1.0, 1.0)

    @model_validator(mode="after")
    def _check(self) -> Jitter:
        if not 0 <= self.max_shift <= MAX_SIDE // 2:
            raise ValueError(f"jitter max_shift must be 0..{MAX_SIDE // 2} pixels, got {self.max_shift}")
        low, high = self.scale
        if not 0.25 <= low <= high <= 4.0:
            raise ValueError(
                f"jitter scale must be [low, high] with 0.25 <= low <= high <= 4, got {list(self.scale)}"
            )
        return self


def _shorthand(value: object, field: str, keys: tuple[str, ...], types: tuple[type, ...]) -> object:
    """'name:a:b' -> {keys[0]: 'name', keys[1]: a, ...}; other values pass through unchanged."""
    if not isinstance(value, str):
        return value
    parts = value.split(":")
    if len(parts) > len(keys):
        raise ValueError(f"{field} {value!r} has too many ':' parts (at most {len(keys)})")
    result: dict[str, object] = {keys[0]: parts[0].strip()}
    for key, kind, part in zip(keys[1:], types, parts[1:]):
        try:
            result[key] = kind(part) if kind is not str else part.strip()
        except ValueError:
            raise ValueError(f"{field} {value!r}: {key} {part!r} is not a {kind.__name__}") from None
    return result


class RenderSpec(_Frozen):
    """How to draw grids: canvas size, colors, layout, gridlines, blur, antialiasing and jitter."""

    size: tuple[int, int] = (128, 128)
    palette: str | tuple[str, ...] = "cogitao-rgb"
    background: str = "palette"
    layout: Layout = Layout()
    gridlines: Gridlines | None = None
    blur: Blur = Blur()
    antialias: int = 1
    jitter: Jitter | None = None

    def __init__(self, **fields: Any) -> None:
        try:
            super().__init__(**fields)
        except ValidationError as error:
            raise _spec_error(error) from None

    @field_validator("size")
    @classmethod
    def _size(cls, value: tuple[int, int]) -> tuple[int, int]:
        if not all(MIN_SIDE <= side <= MAX_SIDE for side in value):
            raise ValueError(f"each side must be {MIN_SIDE}..{MAX_SIDE} pixels, got {list(value)}")
        return value

    @field_validator("palette", mode="before")
    @classmethod
    def _palette(cls, value: object) -> str | tuple[str, ...]:
        colors = resolve_palette(value)
        return value if isinstance(value, str) else colors

    @field_validator("background", mode="before")
    @classmethod
    def _background(cls, value: object) -> str:
        if isinstance(value, str) and value.strip().lower() in ("palette", "random"):
            return value.strip().lower()
        return to_hex(parse_color(value, "background"))

    @field_validator("layout", mode="before")
    @classmethod
    def _layout(cls, value: object) -> object:
        return _shorthand(value, "layout", ("mode", "cell_size", "anchor"), (int, str))

    @field_validator("blur", mode="before")
    @classmethod
    def _blur(cls, value: object) -> object:
        if isinstance(value, str) and value.startswith("box"):
            return _shorthand(value, "blur", ("kind", "size"), (int,))
        return _shorthand(value, "blur", ("kind", "sigma"), (float,))

    @field_validator("gridlines", mode="before")
    @classmethod
    def _gridlines(cls, value: object) -> object:
        if value is False or value in ("off", "none"):
            return None
        if value is True or value == "on":
            return {}
        return _shorthand(value, "gridlines", ("color", "width"), (int,))

    @field_validator("antialias")
    @classmethod
    def _antialias(cls, value: int) -> int:
        if not 1 <= value <= MAX_ANTIALIAS:
            raise ValueError(f"antialias is a supersampling factor 1..{MAX_ANTIALIAS} (1 = off), got {value}")
        return value

    @model_validator(mode="after")
    def _background_differs_from_objects(self) -> RenderSpec:
        if self.background.startswith("#") and self.background in self.palette_colors[1:]:
            index = self.palette_colors.index(self.background, 1)
            raise ValueError(
                f"background {self.background} equals object color {index} of the palette; "
                "choose another background so objects stay visible"
            )
        return self

    @property
    def palette_colors(self) -> tuple[str, ...]:
        """The palette's ten '#RRGGBB' colors, before the background choice."""
        return PALETTES[self.palette] if isinstance(self.palette, str) else self.palette

    def colors(self, seed: int | None = None) -> np.ndarray:
        """(10, 3) uint8: the colors drawn for cells 0-9; index 0 is the background actually drawn."""
        return self.colors_batch([check_seed(seed)])[0]

    def colors_batch(self, seeds: Sequence[int]) -> np.ndarray:
        """(N, 10, 3) uint8: `colors(seed)` for each seed, vectorized."""
        colors = np.repeat(palette_array(self.palette_colors)[None], len(seeds), axis=0)
        if self.background == "random":
            candidates = background_candidates(self.palette_colors[1:])
            pick = seeded_uniform(seeds, BACKGROUND_STREAM) * len(candidates)
            colors[:, 0] = candidates[pick.astype(np.intp)]
        elif self.background != "palette":
            colors[:, 0] = parse_color(self.background)
        return colors

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON/YAML-compatible dict; `RenderSpec.from_dict` restores an equal spec."""
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> RenderSpec:
        if not isinstance(data, Mapping):
            raise SpecError(f"a render spec is a mapping of fields, got {type(data).__name__}")
        return cls(**dict(data))

    def to_yaml(self) -> str:
        import yaml

        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    @classmethod
    def from_yaml(cls, source: str | os.PathLike[str]) -> RenderSpec:
        """Read a spec from YAML text (a `str`) or from a file (a `Path`)."""
        import yaml

        where = "render spec"
        if isinstance(source, os.PathLike):
            where = str(source)
            source = Path(source).read_text(encoding="utf-8")
        try:
            data = yaml.safe_load(source)
        except yaml.YAMLError as error:
            raise SpecError(f"{where}: not valid YAML ({error})") from None
        try:
            return cls.from_dict(data or {})
        except SpecError as error:
            raise SpecError(f"{where}: {error}") from None


def seeded_uniform(seeds: Sequence[int], stream: int) -> np.ndarray:
    """One float in [0, 1) per seed from a splitmix64 hash of (seed, stream).

    An image's random choices depend on its own seed only, never on the rest of its batch, and
    hashing is cheap enough to run per image inside `render_batch`.
    """
    state = np.asarray(seeds, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    state += np.uint64((stream + 1) * 0xD1B54A32D192ED03 % 2**64)
    state ^= state >> np.uint64(30)
    state *= np.uint64(0xBF58476D1CE4E5B9)
    state ^= state >> np.uint64(27)
    state *= np.uint64(0x94D049BB133111EB)
    state ^= state >> np.uint64(31)
    return (state >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def check_seed(seed: int | None) -> int:
    """The seed as a non-negative int; None means 0 so that unseeded renders are reproducible."""
    if seed is None:
        return 0
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**64:
        raise SpecError(f"seed must be an integer 0 <= seed < 2**64, got {seed!r}")
    return int(seed)


def _spec_error(error: ValidationError) -> UserError:
    """The problems as one sentence, keeping a `PaletteError` a `PaletteError`."""
    causes = [issue.get("ctx", {}).get("error") for issue in error.errors()]
    kind = next((type(cause) for cause in causes if isinstance(cause, UserError)), SpecError)
    return kind(f"render spec: {describe_validation_error(error, RenderSpec)}")
