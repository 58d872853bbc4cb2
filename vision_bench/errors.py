"""User-facing errors: one clear sentence, shown without a traceback by the command line."""

from render.errors import UserError
from render.grid import GridError


class ConfigError(UserError):
    """A configuration file or option that is missing, malformed or inconsistent."""


class UnknownNameError(UserError):
    """A name (transformation, model, metric, study, palette) that is not registered."""


class InfeasibleConfigError(UserError):
    """A generation config that cannot produce samples (for example ten objects in a 5x5 grid)."""


class TransformationError(UserError):
    """A transformation that cannot be applied: an object leaves the grid or overlaps another."""


class DataError(UserError):
    """An export directory, image folder or option that cannot be used as asked."""


class ManifestError(DataError):
    """A `manifest.json` that is missing, malformed, from another version or from another export."""


class CorruptFileError(DataError):
    """A data file whose bytes are not what they should be (truncated, damaged or not an image)."""


def first_line(error: BaseException) -> str:
    """The first line of an error's message (its type's name when it has none): what a one-line message quotes."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


__all__ = [
    "ConfigError",
    "CorruptFileError",
    "DataError",
    "GridError",
    "InfeasibleConfigError",
    "ManifestError",
    "TransformationError",
    "UnknownNameError",
    "UserError",
    "first_line",
]
