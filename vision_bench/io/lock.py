"""An advisory lock on a file that dies with its holder: two processes never compute the same thing at once.

`fcntl.flock` on an open file: the operating system drops the lock when the holder closes the file or exits,
killed or not, so a lock file left on disk never blocks a later run (no stale locks to clean up by hand). Windows
has no `flock`; there the lock always succeeds and guards nothing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def exclusive(path: Path) -> Iterator[bool]:
    """Hold the lock of `path` (created, empty, if missing; never through a symlink) for the block and yield True;
    yield False at once, holding nothing, when another process holds it."""
    if sys.platform == "win32":
        yield True
        return
    import fcntl

    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(descriptor, fcntl.LOCK_UN)
    finally:
        os.close(descriptor)


__all__ = ["exclusive"]
