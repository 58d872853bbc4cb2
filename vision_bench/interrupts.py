"""Ctrl-C that always stops the command.

A SIGINT that arrives while a C extension runs can have its KeyboardInterrupt swallowed there
(pyarrow's Parquet writer was seen to do so), and the command then runs on for minutes. The
command line installs `handle_sigint`, which records the signal before raising; long loops call
`check()` at each step, so a swallowed Ctrl-C still stops the command at the next one. As a last
resort, a command that has not finished `FORCE_EXIT_S` seconds after Ctrl-C exits at once with
status 130 (its outputs are written atomically, so a re-run repairs what it left).
"""

from __future__ import annotations

import os
import signal
import threading
from types import FrameType

FORCE_EXIT_S = 15.0
EXIT_INTERRUPTED = 130

_received = threading.Event()
_command = "vision-bench"
_timer: threading.Timer | None = None


def handle_sigint(signum: int, frame: FrameType | None) -> None:
    """Record the Ctrl-C, arm the forced exit, then raise KeyboardInterrupt as Python's own handler does."""
    global _timer
    if not _received.is_set():
        _received.set()
        _timer = threading.Timer(FORCE_EXIT_S, _force_exit)
        _timer.daemon = True
        _timer.start()
    raise KeyboardInterrupt


def _force_exit() -> None:
    os.write(2, f"{_command}: interrupted\n".encode())
    os._exit(EXIT_INTERRUPTED)


def install(command: str = "vision-bench") -> None:
    """Use `handle_sigint` for SIGINT (main thread only; a SIGINT ignored by the parent stays ignored)."""
    global _command
    main_thread = threading.current_thread() is threading.main_thread()
    if main_thread and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        _command = command
        reset()
        signal.signal(signal.SIGINT, handle_sigint)


def reset() -> None:
    """Forget a recorded Ctrl-C and disarm the forced exit (for callers that carry on after one, and tests)."""
    if _timer is not None:
        _timer.cancel()
    _received.clear()


def check() -> None:
    """Raise KeyboardInterrupt if a Ctrl-C arrived and was swallowed on its way."""
    if _received.is_set():
        raise KeyboardInterrupt
