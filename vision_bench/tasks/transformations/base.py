"""`Transformation`: one named, documented object transformation with its object constraints, and
`TRANSFORMATIONS`, the registry that the family modules fill with `register(...)`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from vision_bench.errors import TransformationError
from vision_bench.registry import Registry
from vision_bench.tasks.grid import GridObject

ANY_OBJECT = "any object"


@dataclass(frozen=True)
class Transformation:
    """A transformation of one object, e.g. `rot90`.

    `transform` maps any `GridObject` with at least one cell to a new one (new pixels and new
    anchor), whether or not it meets `constraints`: as in COGITAO, constraints are checked on the
    input objects of a whole sequence, so later steps see whatever the earlier ones made. The
    result may have no cell left (a crop); sequence runners count that as an invalid sample.
    `rejection`, when set, says in a few words why an object does not meet `constraints` (or
    returns None), so that generators can filter objects with `accepts` and `apply` can fail with
    a clear message. Pixel arrays are treated as immutable: results may share memory with their input.
    """

    name: str
    description: str
    constraints: str
    transform: Callable[[GridObject], GridObject] = field(repr=False, compare=False)
    rejection: Callable[[GridObject], str | None] | None = field(default=None, repr=False, compare=False)

    def accepts(self, obj: GridObject) -> bool:
        """Whether `obj` meets this transformation's constraints."""
        return self.rejection is None or self.rejection(obj) is None

    def check(self, obj: GridObject) -> None:
        """Raise `TransformationError` saying which constraint `obj` breaks, if it breaks one."""
        if self.rejection is not None:
            reason = self.rejection(obj)
            if reason is not None:
                raise TransformationError(
                    f"{self.name} cannot be applied to the {obj.height}x{obj.width} object at row "
                    f"{obj.top}, column {obj.left}: {reason}. It needs {self.constraints}; filter such "
                    "objects out or choose another transformation"
                )

    def apply(self, obj: GridObject) -> GridObject:
        """`obj` transformed as the only step of a sequence, or `TransformationError` saying which
        constraint it breaks."""
        self.check(obj)
        return self.transform(obj)


TRANSFORMATIONS: Registry[Transformation] = Registry("transformation")
"""Every transformation by name, in registration order (see `transformations.registry` for why it matters)."""


def register(transformation: Transformation) -> Transformation:
    """Add `transformation` to `TRANSFORMATIONS` under its name and description, and return it."""
    return TRANSFORMATIONS.add(transformation.name, transformation, transformation.description)
