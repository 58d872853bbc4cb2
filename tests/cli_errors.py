"""What the bad-input tests assert about a refused command, in one place: exit 2, no traceback, exactly
one `: error: ` line (the last one: a bench may log its cell first), naming what the test expects; and a
deadline, so that a command that used to hang or grow without end fails the test in seconds."""

from __future__ import annotations

import signal
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from os import PathLike

import pytest

from vision_bench.cli import main


def assert_one_error(code: int | str | None, err: str, *needles: str) -> str:
    """Exit 2, no traceback, exactly one `: error: ` line, the last, holding every needle; that line."""
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if ": error: " in line]
    assert code == 2, err
    assert "Traceback" not in err, err
    assert len(errors) == 1 and errors[0] == lines[-1], err
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


def cli_error(argv: Sequence[str | PathLike[str]], capsys: pytest.CaptureFixture[str], *needles: str,
              seconds: float | None = None) -> str:
    """Run the command line in-process (within `seconds`, when given) and `assert_one_error` on it."""
    capsys.readouterr()
    with deadline(seconds):
        code = main([str(part) for part in argv])
    return assert_one_error(code, capsys.readouterr().err, *needles)


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """A `TimeoutError` in this (main) thread after `seconds` (None: no limit)."""
    if seconds is None:
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
