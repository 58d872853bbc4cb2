"""Errors of the data package: bad export directories, manifests and image files."""

from vision_bench.errors import UserError


class DataError(UserError):
    """An export directory, image folder or option that cannot be used as asked."""


class ManifestError(DataError):
    """A `manifest.json` that is missing, malformed, from another version or from another export."""


class CorruptFileError(DataError):
    """A data file whose bytes are not what they should be (truncated, damaged or not an image)."""


__all__ = ["CorruptFileError", "DataError", "ManifestError"]
