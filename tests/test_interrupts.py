"""A Ctrl-C whose KeyboardInterrupt a C extension swallowed still stops the command at its next step."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from vision_bench import interrupts
from vision_bench.commands.generate import _checked


@pytest.fixture
def no_ctrl_c_recorded() -> Iterator[None]:
    interrupts.reset()
    yield
    interrupts.reset()  # also disarms the forced exit that handle_sigint armed


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


def test_a_command_still_running_after_ctrl_c_exits_on_its_own() -> None:
    script = (
        "import os, signal, time\n"
        "from vision_bench import interrupts\n"
        "interrupts.FORCE_EXIT_S = 0.3\n"
        "interrupts.install('vision-bench probe')\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(5)\n"
        "except KeyboardInterrupt:\n"
        "    pass  # swallowed, as a C extension may\n"
        "time.sleep(20)\n"
    )
    finished = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=15,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as in a terminal
    assert finished.returncode == 130
    assert finished.stderr == "vision-bench probe: interrupted\n"
