"""Selectors: which objects of a grid a rule applies to.

A selector is a small validated config (YAML writes it as a mapping with a `kind`) and
`select(selector, objects)` says, for each object of a grid, whether the selector picks it.
Objects are the `GridObject`s that `vision_bench.tasks.grid.extract_objects` returns (the
generator's objects); positions are absolute grid cells (`top`, `left` plus the box-local cell).

Kinds (each a `StrictConfig`, frozen, hashable):

- `AllObjects` (`{kind: all}`, or the string `all`): every object. A rule with this selector
  is COGITAO's setting, where every object is transformed.
- `ColorSelector` (`{kind: color, color: C}`): objects whose every cell has colour C (1-9);
  multi-coloured objects are never picked by a colour selector.
- `ShapeSelector` (`{kind: shape, shape: NAME}` or `{kind: shape, shape: ["#.", "##"]}`):
  objects whose normalised footprint (`footprint(obj)`: the object's cells in the bounding box
  of its cells, `#` = cell, `.` = no cell) equals the shape exactly, whatever its colours.
  A name is one of `SHAPES`; a list of rows is any shape (validated: rectangular, `#`/`.`,
  every edge row and column holding a cell). `shape` is always stored as rows.
- `NearSelector` (`{kind: near, indicator: SELECTOR, distance: D}`): objects with a cell
  within Chebyshev distance D (1..`MAX_NEAR_DISTANCE`, default 1) of a cell of another object
  that `indicator` picks. D = 1 is 8-neighbourhood adjacency. An object is never near itself;
  the indicator is evaluated on the same objects.
- `AllOf` (`{kind: all_of, selectors: [...]}`), `AnyOf` (`any_of`), `Not`
  (`{kind: not, selector: S}`): conjunction, disjunction and negation; `all_of` / `any_of`
  need at least one selector. They obey the boolean laws element-wise (tests check it).

Functions:

- `select(selector, objects) -> tuple[bool, ...]`: pure; one flag per object, in order.
- `judge_alone(selector, obj) -> bool | None`: what the selector says of one object whatever the
  others are, or None when that depends on them (a `near` part decides). Generators use it to
  draw objects for a role (picked or not) before placing them.
- `footprint(obj) -> tuple[str, ...]`: an object's normalised footprint as rows of `#` / `.`.
- `selector_name(selector) -> str`: a short, stable text form (`color=2`, `shape=plus3`,
  `shape=#./##`, `near<=2(color=5)`, `all_of(color=2, not(shape=dot))`, `all`), used in
  task records and descriptions.
- `parse_selector(data) -> Selector`: a mapping (or `all`) as read from YAML, validated;
  problems raise `ConfigError`.
- `SELECTOR_KINDS`: the kinds' names, in the order the task-code vocabulary lists them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, Union

import numpy as np
from pydantic import BeforeValidator, Field, TypeAdapter, ValidationError, field_validator

from render.validation import describe_validation_error
from vision_bench.config_base import StrictConfig
from vision_bench.errors import ConfigError
from vision_bench.tasks.grid import GridObject

MAX_NEAR_DISTANCE = 5
"""The largest `distance` a near selector takes (task codes give each distance its own token)."""

SHAPES: dict[str, tuple[str, ...]] = {
    "dot": ("#",),
    "domino_h": ("##",),
    "domino_v": ("#", "#"),
    "square2": ("##", "##"),
    "square3": ("###", "###", "###"),
    "plus3": (".#.", "###", ".#."),
    "x3": ("#.#", ".#.", "#.#"),
    "ring3": ("###", "#.#", "###"),
    "corner_l": ("#.", "##"),
    "t3": ("###", ".#.", ".#."),
    "line3_h": ("###",),
    "line3_v": ("#", "#", "#"),
}
"""Named shapes a shape selector may give by name; task codes give each its own token."""

SELECTOR_KINDS = ("all", "color", "shape", "near", "all_of", "any_of", "not")


class AllObjects(StrictConfig):
    """Every object."""

    kind: Literal["all"] = "all"


class ColorSelector(StrictConfig):
    """Objects whose every cell has colour `color`."""

    kind: Literal["color"] = "color"
    color: int = Field(ge=1, le=9)


class ShapeSelector(StrictConfig):
    """Objects whose normalised footprint equals `shape` (a name of `SHAPES`, or rows of `#` and `.`)."""

    kind: Literal["shape"] = "shape"
    shape: tuple[str, ...]

    @field_validator("shape", mode="before")
    @classmethod
    def _named(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value not in SHAPES:
                raise ValueError(f"unknown shape {value!r}; use one of {', '.join(SHAPES)} or rows of '#' and '.'")
            return SHAPES[value]
        return value

    @field_validator("shape")
    @classmethod
    def _rows(cls, rows: tuple[str, ...]) -> tuple[str, ...]:
        if not rows or any(len(row) != len(rows[0]) or not row or set(row) - {"#", "."} for row in rows):
            raise ValueError("a shape is a non-empty list of equally long rows of '#' (cell) and '.' (no cell)")
        mask = _rows_mask(rows)
        if not (mask[0].any() and mask[-1].any() and mask[:, 0].any() and mask[:, -1].any()):
            raise ValueError("a shape's first and last rows and columns must each hold a '#' (write it cropped)")
        return rows


class NearSelector(StrictConfig):
    """Objects within Chebyshev distance `distance` of another object that `indicator` picks."""

    kind: Literal["near"] = "near"
    indicator: Selector
    distance: int = Field(1, ge=1, le=MAX_NEAR_DISTANCE)


class AllOf(StrictConfig):
    """Objects every one of `selectors` picks."""

    kind: Literal["all_of"] = "all_of"
    selectors: tuple[Selector, ...] = Field(min_length=1)


class AnyOf(StrictConfig):
    """Objects at least one of `selectors` picks."""

    kind: Literal["any_of"] = "any_of"
    selectors: tuple[Selector, ...] = Field(min_length=1)


class Not(StrictConfig):
    """Objects `selector` does not pick."""

    kind: Literal["not"] = "not"
    selector: Selector


def _shorthand(value: Any) -> Any:
    """`all` -> `{kind: all}`, so that YAML can write the common case as one word."""
    return {"kind": "all"} if value == "all" else value


Selector = Annotated[
    Union[AllObjects, ColorSelector, ShapeSelector, NearSelector, AllOf, AnyOf, Not],  # noqa: UP007
    Field(discriminator="kind"),
    BeforeValidator(_shorthand),
]
"""Any selector; validated from a mapping with a `kind` key (or the string `all`)."""

for _model in (NearSelector, AllOf, AnyOf, Not):
    _model.model_rebuild()

_ADAPTER: TypeAdapter[Any] = TypeAdapter(Selector)
ALL_OBJECTS = AllObjects()


def parse_selector(data: Any, source: str = "selector") -> Any:
    """A selector from its YAML form; problems raise `ConfigError("SOURCE: ...")`."""
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as error:
        raise ConfigError(f"{source}: {describe_validation_error(error, AllOf)}") from None


def _rows_mask(rows: Sequence[str]) -> np.ndarray:
    return np.array([[cell == "#" for cell in row] for row in rows], dtype=bool)


def footprint(obj: GridObject) -> tuple[str, ...]:
    """The object's cells in the bounding box of its cells, as rows of `#` (cell) and `.` (no cell)."""
    mask = obj.mask
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    if not len(rows):
        return ()
    cropped = mask[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]
    return tuple("".join("#" if cell else "." for cell in row) for row in cropped)


def _cells(obj: GridObject) -> np.ndarray:
    """The object's cells as absolute (row, column) pairs, shape (n, 2)."""
    return np.argwhere(obj.mask) + np.array([obj.top, obj.left])


def chebyshev_distance(first: GridObject, second: GridObject) -> int:
    """The smallest Chebyshev distance between a cell of `first` and a cell of `second`."""
    a, b = _cells(first), _cells(second)
    return int(np.abs(a[:, None, :] - b[None, :, :]).max(axis=2).min())


def select(selector: Any, objects: Sequence[GridObject]) -> tuple[bool, ...]:
    """For each object, in order, whether `selector` picks it (see the module docstring for each kind)."""
    if isinstance(selector, AllObjects):
        return (True,) * len(objects)
    if isinstance(selector, ColorSelector):
        return tuple(obj.colors == [selector.color] for obj in objects)
    if isinstance(selector, ShapeSelector):
        return tuple(footprint(obj) == selector.shape for obj in objects)
    if isinstance(selector, NearSelector):
        indicators = [k for k, picked in enumerate(select(selector.indicator, objects)) if picked]
        return tuple(any(j != k and chebyshev_distance(obj, objects[j]) <= selector.distance for j in indicators)
                     for k, obj in enumerate(objects))
    if isinstance(selector, AllOf):
        flags = [select(part, objects) for part in selector.selectors]
        return tuple(all(column) for column in zip(*flags)) if objects else ()
    if isinstance(selector, AnyOf):
        flags = [select(part, objects) for part in selector.selectors]
        return tuple(any(column) for column in zip(*flags)) if objects else ()
    if isinstance(selector, Not):
        return tuple(not picked for picked in select(selector.selector, objects))
    raise ConfigError(f"unknown selector {selector!r}; use a selector of kind {', '.join(SELECTOR_KINDS)}")


def judge_alone(selector: Any, obj: GridObject) -> bool | None:
    """Whether `selector` picks `obj` whatever the other objects are; None when a `near` part makes it depend
    on them."""
    if isinstance(selector, NearSelector):
        return None
    if isinstance(selector, Not):
        verdict = judge_alone(selector.selector, obj)
        return None if verdict is None else not verdict
    if isinstance(selector, (AllOf, AnyOf)):
        verdicts = [judge_alone(part, obj) for part in selector.selectors]
        decisive = isinstance(selector, AnyOf)  # the verdict that settles it: True for any_of, False for all_of
        if decisive in verdicts:
            return decisive
        return None if None in verdicts else not decisive
    return select(selector, [obj])[0]


def shape_name(rows: tuple[str, ...]) -> str | None:
    """The `SHAPES` name of a shape, or None when it has none."""
    return next((name for name, named in SHAPES.items() if named == rows), None)


def selector_name(selector: Any) -> str:
    """A short, stable text form of a selector (see the module docstring)."""
    if isinstance(selector, AllObjects):
        return "all"
    if isinstance(selector, ColorSelector):
        return f"color={selector.color}"
    if isinstance(selector, ShapeSelector):
        return f"shape={shape_name(selector.shape) or '/'.join(selector.shape)}"
    if isinstance(selector, NearSelector):
        return f"near<={selector.distance}({selector_name(selector.indicator)})"
    if isinstance(selector, (AllOf, AnyOf)):
        return f"{selector.kind}({', '.join(selector_name(part) for part in selector.selectors)})"
    if isinstance(selector, Not):
        return f"not({selector_name(selector.selector)})"
    raise ConfigError(f"unknown selector {selector!r}; use a selector of kind {', '.join(SELECTOR_KINDS)}")


__all__ = [
    "ALL_OBJECTS", "MAX_NEAR_DISTANCE", "SELECTOR_KINDS", "SHAPES", "AllObjects", "AllOf", "AnyOf", "ColorSelector",
    "NearSelector", "Not", "Selector", "ShapeSelector", "chebyshev_distance", "footprint", "judge_alone",
    "parse_selector", "select", "selector_name", "shape_name",
]
