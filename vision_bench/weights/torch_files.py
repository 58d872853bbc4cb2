"""Why a file failed `torch.load(weights_only=True)`, told from its bytes, never by unpickling it.

torch's own message for such a file is the same for a pickle that names code, a plain `pickle.dump`
file and random bytes, and it advises `weights_only=False`, which would run whatever the file asks.
The file's first bytes say what it is instead: a zip archive (what `torch.save` writes), a pickle
stream (`pickle.dump`, or torch's legacy format), or neither.
"""

from __future__ import annotations

import pickle
import warnings
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from vision_bench.errors import first_line

ZIP_MAGIC = b"PK\x03\x04"
PICKLE_PROTOCOL_OPCODE = 0x80  # a pickle of protocol 2 or later starts with PROTO and the protocol number


class LoadFailure(NamedTuple):
    """`refused`: the file is intact but holds a pickle vision-bench will not run; `reason`: one clause."""

    refused: bool
    reason: str


@contextmanager
def foreign_pickle_warnings_off() -> Iterator[None]:
    """Around `torch.load(weights_only=True)`: no warning about a pickle protocol torch did not write (a plain
    `pickle.dump` file), which would be a second line beside the one error `load_failure` words."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Detected pickle protocol", category=UserWarning)
        yield


def load_failure(path: str | Path, error: BaseException) -> LoadFailure:
    """Why `torch.load(path, weights_only=True)` raised `error`, judged from the file's bytes."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(ZIP_MAGIC))
    except OSError as unreadable:
        return LoadFailure(False, f"the file cannot be read ({unreadable.strerror or unreadable})")
    if len(head) >= 2 and head[0] == PICKLE_PROTOCOL_OPCODE and 2 <= head[1] <= pickle.HIGHEST_PROTOCOL:
        return LoadFailure(True, "refused: a plain pickle file (pickle.dump, or torch's legacy format), not the zip "
                                 "archive torch.save writes; unpickling it could run code, so vision-bench never does")
    if head != ZIP_MAGIC:
        return LoadFailure(False, "neither a torch zip archive nor a pickle, so the file is corrupt or truncated (or "
                                  "not a weights file at all)")
    problem = _zip_problem(Path(path))
    if problem is not None:
        return LoadFailure(False, f"a damaged zip archive ({problem}), so the file is corrupt or truncated")
    if isinstance(error, pickle.UnpicklingError):
        return LoadFailure(True, "refused: its pickle asks for objects other than tensors and plain values, which "
                                 "would run code when unpickled; vision-bench never unpickles such files")
    return LoadFailure(False, f"a zip archive torch cannot read ({type(error).__name__}: {first_line(error)})")


def _zip_problem(path: Path) -> str | None:
    """What is wrong with the zip archive at `path` (a missing directory, a member failing its CRC), or None."""
    try:
        with zipfile.ZipFile(path) as archive:
            damaged = archive.testzip()
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as error:
        return first_line(error)
    return None if damaged is None else f"{damaged} fails its CRC check"



__all__ = ["LoadFailure", "foreign_pickle_warnings_off", "load_failure"]
