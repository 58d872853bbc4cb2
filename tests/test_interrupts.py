"""A Ctrl-C whose KeyboardInterrupt a C extension swallowed still stops the command at its next step."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from vision_bench import interrupts
from vision_bench.commands.generate import _checked


@pytest.fixture
def no_ctrl_c_recorded() -> Iterator[None]:
    interrupts._received.clear()
    yield
    interrupts._received.clear()


def test_check_is_silent_until_a_ctrl_c_arrives(no_ctrl_c_recorded: None) -> None:
    interrupts.check()
    with pytest.raises(KeyboardInterrupt):
        interrupts.handle_sigint(signal.SIGINT, None)
    with pytest.raises(KeyboardInterrupt):
        interrupts.check()


def test_a_swallowed_ctrl_c_stops_the_next_progress_step(no_ctrl_c_recorded: None) -> None:
    steps: list[int] = []
    step = _checked(steps.append)
    step(3)
    try:
        interrupts.handle_sigint(signal.SIGINT, None)
    except KeyboardInterrupt:
        pass  # what pyarrow did to it
    with pytest.raises(KeyboardInterrupt):
        step(4)
    assert steps == [3]


def test_install_replaces_only_the_default_handler(no_ctrl_c_recorded: None) -> None:
    previous = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        interrupts.install()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # an ignored Ctrl-C stays ignored
        signal.signal(signal.SIGINT, signal.default_int_handler)
        interrupts.install()
        assert signal.getsignal(signal.SIGINT) is interrupts.handle_sigint
    finally:
        signal.signal(signal.SIGINT, previous)
