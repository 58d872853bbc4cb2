"""Atomic file writes: write to a temporary name in the same directory, then rename over the target.

A reader (or a re-run after `kill -9`) therefore sees either the complete old file, the complete new
file or no file, never half of one. The temporary file is created exclusively (`O_EXCL`, never
through a symlink) under a random name, and the rename replaces a symlink at the target rather than
writing through it, so nothing pre-placed in the folder can redirect a write. A failing write (a
full disk) removes its temporary file and re-raises the `OSError` with the target's path, so the
message names the file that could not be written. Folders get the same care: `output_folder` makes
each sub-folder of an output folder (or checks that it is a real folder, not a link placed there)
before anything goes in it.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TEMP_MARK = ".tmp-"


def temp_path_for(path: Path) -> Path:
    """A unique hidden sibling of `path` to write into before the rename."""
    return path.with_name(f".{path.name}{TEMP_MARK}{os.getpid()}-{secrets.token_hex(4)}")


def is_temp_file(path: Path) -> bool:
    return path.name.startswith(".") and TEMP_MARK in path.name


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, fsync: bool = False) -> None:
    """Write `data` to `path` atomically (fsync first when the file must survive a power cut)."""
    with atomic_output(path) as temp, open(temp, "wb") as handle:
        handle.write(data)
        if fsync:
            handle.flush()
            os.fsync(handle.fileno())


@contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path for a writer that takes a file name; rename it to `path` on success.

    On failure the temporary file is removed and an `OSError` is re-raised naming `path`.
    """
    target = Path(path)
    temp = _create_exclusively(target)
    try:
        yield temp
        os.replace(temp, target)
    except OSError as error:
        temp.unlink(missing_ok=True)
        raise OSError(error.errno, error.strerror or str(error), str(target)) from error
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def _create_exclusively(target: Path) -> Path:
    """A new, empty temporary sibling of `target` that this call created (permissions as the umask allows)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(100):
        temp = temp_path_for(target)
        try:
            os.close(os.open(temp, flags, 0o666))
            return temp
        except FileExistsError:
            continue
        except OSError as error:
            raise OSError(error.errno, error.strerror or str(error), str(target)) from error
    raise FileExistsError(f"cannot create a temporary file beside {target}")


def append_line(path: str | os.PathLike[str], line: str) -> None:
    """Append `line` to a log file, never through a symlink (`O_NOFOLLOW`)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(path, flags, 0o666)
    with os.fdopen(descriptor, "a", encoding="utf-8") as handle:
        handle.write(line)


def atomic_write_text(path: str | os.PathLike[str], text: str, *, fsync: bool = False) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), fsync=fsync)


def output_folder(root: str | os.PathLike[str], *parts: str, make: bool = True) -> Path:
    """ROOT/PARTS..., every folder below ROOT made by this call or checked to be a real folder.

    ROOT is the output folder the caller was given (made when missing, and may be a link the user
    made); a part that already exists as a symbolic link or a file is refused, so that no write goes
    through a folder link placed there beforehand (the file-level guard above covers files only).
    With `make=False` nothing is made and only the parts that exist are checked (for folders that a
    writer makes later, when it has something to put in them).
    """
    from vision_bench.errors import ConfigError  # here: this module stays free of numpy and Pillow

    folder = Path(root)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder} is a file, not a folder; move it away or choose another output folder")
    if make:
        folder.mkdir(parents=True, exist_ok=True)
    for part in parts:
        folder = folder / part
        if make:
            try:
                folder.mkdir()
                continue
            except FileExistsError:
                pass
        _check_real_folder(folder)
    return folder


def _check_real_folder(folder: Path) -> None:
    """Nothing at `folder`, or a folder that is not a symbolic link; else a `ConfigError` naming it."""
    from vision_bench.errors import ConfigError

    try:
        mode = os.lstat(folder).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        raise ConfigError(
            f"{folder} is a symbolic link (to {os.readlink(folder)}), and vision-bench writes only into folders "
            f"it made: remove the link (rm {folder}) and run again"
        )
    if not stat.S_ISDIR(mode):
        raise ConfigError(f"{folder} is a file where vision-bench makes a folder; move it away and run again")


def check_writable(folder: str | os.PathLike[str]) -> None:
    """Create and remove a temporary file in `folder`: an `OSError` naming it now (a read-only folder or
    file system) rather than after a long computation."""
    try:
        _create_exclusively(Path(folder) / "write-check").unlink()
    except OSError as error:
        raise OSError(error.errno, error.strerror or str(error), str(folder)) from None


__all__ = ["TEMP_MARK", "append_line", "atomic_output", "atomic_write_bytes", "atomic_write_text",
           "check_writable", "is_temp_file", "output_folder", "temp_path_for"]
