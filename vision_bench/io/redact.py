"""Values made safe to publish (a model card on the hub): what could carry a secret or a private path is shortened.

- a URL (`scheme://...`) loses its `user:password@`, its query string (presigned tokens such as
  `?X-Amz-Signature=...`) and its fragment; a `file://` URL keeps only its last path component;
- a `pipe:` command (webdataset's shard source that runs a shell command) becomes `pipe:<command>`;
- an absolute path (`/...`, `~...`, `C:\\...`) outside `inside` becomes its last component; one inside `inside` (the
  run's folder) is written from that folder's name down, so no home directory shows.

A `KEY=VALUE` word (a `--set dataset.path=...` override, `--out=...`) is shortened in its value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePath, PurePosixPath, PureWindowsPath
from typing import Any
from urllib.parse import urlsplit, urlunsplit

PIPE = "pipe:"
PIPE_SHOWN = "pipe:<command>"
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>`]*")
_WINDOWS_PATH = re.compile(r"[A-Za-z]:[\\/]")


def public_text(value: str, inside: PurePath | None = None) -> str:
    """`value` with URLs, `pipe:` commands and absolute paths shortened (see the module docstring)."""
    key, equals, rest = value.partition("=")
    if equals and key and not _URL.search(key) and not key.startswith(("/", "~")) and PIPE not in key:
        return f"{key}={public_text(rest, inside)}"
    if PIPE in value:
        return value[:value.index(PIPE)] + PIPE_SHOWN
    if _is_absolute(value):
        return _public_path(value, inside)
    return _URL.sub(lambda match: _public_url(match.group(0)), value)


def public_data(value: Any, inside: PurePath | None = None) -> Any:
    """`value` (a config's JSON data) with every string in it shortened by `public_text`."""
    if isinstance(value, str):
        return public_text(value, inside)
    if isinstance(value, Mapping):
        return {key: public_data(item, inside) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [public_data(item, inside) for item in value]
    return value


def _is_absolute(value: str) -> bool:
    return value.startswith(("/", "~", "\\\\")) or bool(_WINDOWS_PATH.match(value))


def _public_path(value: str, inside: PurePath | None) -> str:
    path: PurePath = PureWindowsPath(value) if _WINDOWS_PATH.match(value) or "\\" in value else PurePosixPath(value)
    if inside is not None and not value.startswith("~") and path.is_relative_to(inside):
        return str(PurePosixPath(inside.name, *path.relative_to(inside).parts))
    return path.name or "/"


def _public_url(url: str) -> str:
    try:
        parts = urlsplit(url)
        netloc = parts.netloc.rpartition("@")[2]
    except ValueError:  # a malformed URL (bad port, bracket): nothing of it is kept past the scheme
        return f"{url.partition('://')[0]}://..."
    if parts.scheme.lower() == "file":
        return f"file://{PurePosixPath(parts.path).name}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


__all__ = ["PIPE_SHOWN", "public_data", "public_text"]
