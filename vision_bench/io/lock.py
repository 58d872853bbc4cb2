"""An advisory lock on a file that dies with its holder, so that two processes do not compute the same thing at once.

`fcntl.flock` on an open file: the operating system drops the lock when the holder closes the file or exits,
killed or not, so a lock file left on disk never blocks a later run (no stale locks to clean up by hand); a child
forked while the lock is held (a DataLoader worker) holds it until it exits too. Where it guards nothing, the lock
is granted: on Windows (no `flock`), on a file system that refuses `flock` (one warning), across machines where the
file system keeps locks local to each (NFS mounted with `nolock` or `local_lock=flock`, BeeGFS by default; no
error shows it), and for a lock file deleted while it is held.
"""

from __future__ import annotations

import errno
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

logger = logging.getLogger(__name__)

UNSUPPORTED = {errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOLCK}
"""`flock`'s errors on a file system that does not lock (Lustre without `-o flock`, some FUSE and CIFS mounts)."""
_warned: set[int] = set()
"""The file systems (`st_dev`) this process has warned about."""


def _warn_unsupported(path: Path) -> None:
    """One warning per file system that refuses `flock`."""
    device = os.stat(path).st_dev
    if device not in _warned:
        _warned.add(device)
        logger.warning("the file system of %s does not support file locks (flock); its lock files guard nothing, so "
                       "do not run two commands on the same cells at once", path.parent)


@contextmanager
def exclusive(path: Path) -> Iterator[bool]:
    """Hold the lock of `path` (created, empty, if missing; never through a symlink) for the block and yield True;
    yield False at once, holding nothing, when another process holds it."""
    if sys.platform == "win32":
        yield True
        return
    import fcntl

    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        except OSError as error:
            if error.errno not in UNSUPPORTED:
                raise
            _warn_unsupported(path)
            yield True
            return
        try:
            yield True
        finally:
            fcntl.flock(descriptor, fcntl.LOCK_UN)
    finally:
        os.close(descriptor)


__all__ = ["exclusive"]
