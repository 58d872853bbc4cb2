"""One way to describe a pydantic validation error to a user, shared by every config.

The render spec and vision_bench's task, train and bench configs all report a problem the same
way: the dotted key as the user wrote it, then what is wrong ("training.epoch: unknown key; did
you mean 'epochs'? (known keys: ...)", "dataset: required key is missing"). A section kept as the
mapping the user wrote but checked against its own model (`MappingOf`, e.g. a render spec inside
a training config) is described with its full dotted key too, so `dataset.spec.palete` is named
down to the last key. It lives in `render` because `render` must not import vision_bench.
"""

from __future__ import annotations

import difflib
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, GetCoreSchemaHandler, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import core_schema

_SHOWN_INPUT_LENGTH = 60
"""How many characters of a rejected value an error message quotes."""


@dataclass(frozen=True)
class MappingOf:
    """`Annotated[dict[str, Any], MappingOf(Model)]`: a mapping kept exactly as written, checked
    against `Model` when the config is validated.

    Used where a config stores a nested section in the user's own words (its dict form, and so an
    experiment's hash, must not change) but its mistakes must still be found at load time.
    """

    model: type[BaseModel]

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self.check, handler(source))

    def check(self, data: dict[str, Any]) -> dict[str, Any]:
        """`data` unchanged, once `model` accepts it; a `ValidationError` raised here joins the
        enclosing config's, each problem keyed below this mapping's key."""
        # Validated into a bare instance rather than by `model_validate`, which would run the
        # model's own `__init__`: RenderSpec's turns the error into one line and loses the keys.
        self.model.__pydantic_validator__.validate_python(data, self_instance=self.model.__new__(self.model))
        return data


def describe_validation_error(error: ValidationError, model: type[BaseModel], data: Any = None) -> str:
    """Every problem in `error` (raised validating `data` as `model`) as 'KEY: what is wrong',
    joined by '; '. Unknown keys get the closest known key and the list of known keys.

    `data` is what was validated: list positions that exist only because a single mapping was
    accepted as a one-item list are left out of the key, as the user did not write them.
    """
    problems = []
    for issue in error.errors():
        location = _as_written(data, issue["loc"])
        key = ".".join(location)
        if issue["type"] == "extra_forbidden":
            known = keys_at(model, location[:-1])
            listed = f" (known keys: {', '.join(known)})" if known else ""  # so one suggestion is enough
            problems.append(f"{key}: unknown key{did_you_mean(location[-1], known, most=1)}{listed}")
        elif issue["type"] == "missing":
            problems.append(f"{key or 'config'}: required key is missing")
        elif issue["type"] == "value_error":
            message = issue["msg"].removeprefix("Value error, ")
            problems.append(f"{key}: {message}" if key else message)
        elif issue["type"] in _BOUNDS:
            bound = next(iter(issue.get("ctx", {}).values()), "?")
            problems.append(f"{key or 'config'}: " + _BOUNDS[issue["type"]].format(
                bound=bound, got=_shown(issue.get("input"))))
        else:
            problems.append(f"{key or 'config'}: {issue['msg']}, got {_shown(issue.get('input'))}")
    return "; ".join(problems)


_BOUNDS = {
    "greater_than_equal": "must be at least {bound}, got {got}; set it to {bound} or more",
    "greater_than": "must be more than {bound}, got {got}; set it above {bound}",
    "less_than_equal": "must be at most {bound}, got {got}; set it to {bound} or less",
    "less_than": "must be less than {bound}, got {got}; set it below {bound}",
}
"""pydantic's bound checks ('Input should be greater than or equal to 1'), said as the limit and the fix."""


def _as_written(data: Any, loc: tuple[Any, ...]) -> list[str]:
    """The parts of `loc` the user wrote: a list position under a value given as one mapping is dropped."""
    parts = []
    for part in loc:
        if isinstance(part, int) and isinstance(data, dict):
            continue
        parts.append(str(part))
        if isinstance(data, dict):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and part < len(data):
            data = data[part]
        else:
            data = None
    return parts


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_INPUT_LENGTH else text[: _SHOWN_INPUT_LENGTH - 3] + "..."


def keys_at(model: type[BaseModel], path: Sequence[str]) -> list[str]:
    """The keys of the section at dotted `path` under `model` (list positions and union tags are
    skipped); empty when `path` leads to a free-form mapping or a plain value."""
    section: type[BaseModel] | None = model
    for part in path:
        if section is None:
            return []
        field = section.model_fields.get(part)
        if field is not None:
            section = section_model(field)
    return list(section.model_fields) if section is not None else []


def section_model(field: FieldInfo) -> type[BaseModel] | None:
    """The model a field's value is checked against: a nested model (also inside `X | None` or
    `tuple[X, ...]`) or a `MappingOf` model; None for plain values and free-form mappings."""
    for annotation in (field.annotation, *field.metadata):
        found = _model_in(annotation)
        if found is not None:
            return found
    return None


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, MappingOf):
        return annotation.model
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in typing.get_args(annotation):  # X | None, tuple[X, ...], Annotated[X, metadata]
        found = _model_in(argument)
        if found is not None:
            return found
    return None


def did_you_mean(key: str, known: Sequence[str], most: int = 3) -> str:
    """"; did you mean 'a' or 'b'?" for up to `most` known names close to `key` in spelling or
    starting with it; empty when none is."""
    close = difflib.get_close_matches(key, known, n=most, cutoff=0.6)
    close += [name for name in known if name.startswith(key) and name not in close]
    names = [repr(name) for name in close[:most]]
    if not names:
        return ""
    return "; did you mean " + (f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]) + "?"
