"""Names that become paths: the one place where a name from a data file, a config or a model is
checked or made safe before it is joined to an output folder.

A path component may not be empty, `.` or `..`, nor hold a separator or NUL; a relative path
(a file listed in a manifest) may not be absolute or climb out of its root. These keep every
write inside the output folder and every read inside the export, whatever a data file says.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from vision_bench.errors import UserError

_UNSAFE_CHARACTERS = re.compile(r"[^A-Za-z0-9._-]+")


class UnsafeNameError(UserError):
    """A name from a data file that would escape its folder (`..`, `/`, an absolute path)."""


def safe_name(name: str) -> str:
    """A file-name-safe form of a label (`unet:resnet18` -> `unet_resnet18`); never `.` or `..`."""
    cleaned = _UNSAFE_CHARACTERS.sub("_", str(name)).strip("_")
    return cleaned if cleaned.strip(".") else "_" + cleaned


def check_component(name: str, what: str, source: str) -> str:
    """`name` as it is when it can be one folder or file name, else an `UnsafeNameError`."""
    text = str(name)
    if text.strip(".") == "" or any(mark in text for mark in ("/", "\\", "\x00")):
        raise UnsafeNameError(
            f"{source}: {what} {text!r} cannot be used as a file or folder name (it would leave the output "
            "folder); fix that value in the data file"
        )
    return text


def check_relative_path(name: str, what: str, source: str) -> str:
    """`name` as it is when it is a relative path that stays inside its root, else an `UnsafeNameError`."""
    text = str(name)
    path = PurePosixPath(text)
    if not text or path.is_absolute() or "\\" in text or "\x00" in text or any(
        part in ("", ".", "..") for part in text.split("/")
    ):
        raise UnsafeNameError(
            f"{source}: {what} {text!r} is not a plain relative path inside the folder; the file is damaged "
            "or was edited by hand, so re-create it"
        )
    return text


__all__ = ["UnsafeNameError", "check_component", "check_relative_path", "safe_name"]
