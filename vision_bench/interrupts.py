"""Ctrl-C that is never lost.

A SIGINT that arrives while a C extension runs can have its KeyboardInterrupt swallowed there
(pyarrow's Parquet writer was seen to do so), and the command then runs on for minutes. The
command line installs `handle_sigint`, which also records the signal; long loops call `check()`
at each step, so a swallowed Ctrl-C still stops the command at the next one.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

_received = threading.Event()


def handle_sigint(signum: int, frame: FrameType | None) -> None:
    """Record the Ctrl-C, then raise KeyboardInterrupt as Python's own handler does."""
    _received.set()
    raise KeyboardInterrupt


def install() -> None:
    """Use `handle_sigint` for SIGINT (main thread only; a SIGINT ignored by the parent stays ignored)."""
    main_thread = threading.current_thread() is threading.main_thread()
    if main_thread and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        _received.clear()
        signal.signal(signal.SIGINT, handle_sigint)


def check() -> None:
    """Raise KeyboardInterrupt if a Ctrl-C arrived and was swallowed on its way."""
    if _received.is_set():
        raise KeyboardInterrupt
