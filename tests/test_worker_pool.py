"""The one process pool: a dead worker is one clear error within seconds, never a hang, and no
worker outlives the command that started it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process parents from /proc")


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def command(*argv: str) -> subprocess.Popen:
    """The command in a session of its own, so that Ctrl-C can be sent to its whole process group, with
    Ctrl-C handled as in a terminal (a suite started in the background inherits SIGINT ignored)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "vision_bench", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
                            preexec_fn=default_sigint)


def default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def long_generate(tmp_path: Path) -> Iterator[tuple[subprocess.Popen, list[int]]]:
    """A `generate --workers 2` that runs for minutes, once its helper has started; killed on the way out."""
    process = command("generate", "--study", "envgen/G1/1", "--n-train", "400000", "--n-val", "1", "--n-test", "1",
                      "--workers", "2", "--out", str(tmp_path / "tasks"))
    try:
        assert wait_for(lambda: children(process.pid), 60), "no worker started"
        time.sleep(1.0)
        yield process, [pid for pid in children(process.pid) if alive(pid)]
    finally:
        if process.poll() is None:
            process.kill()


@pytest.mark.slow
def test_a_killed_generate_worker_is_a_clear_error_within_seconds(tmp_path: Path) -> None:
    with long_generate(tmp_path) as (process, workers):
        os.kill(workers[0], signal.SIGKILL)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 2
    assert "a worker process died" in err and "Traceback" not in err
    assert not list((tmp_path / "tasks").glob("*.parquet"))


@pytest.mark.slow
def test_no_export_worker_outlives_a_killed_parent(tmp_path: Path) -> None:
    process = command("export", "--study", "envgen/G1/1", "--n-train", "20000", "--n-val", "1", "--n-test", "1",
                      "--workers", "2", "--shard-size", "500", "--out", str(tmp_path / "data"))
    try:
        assert wait_for(lambda: len(children(process.pid)) >= 2, 60), "no workers started"
        time.sleep(2.0)
        spawned = children(process.pid)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
    assert wait_for(lambda: not any(alive(pid) for pid in spawned), 15), [p for p in spawned if alive(p)]
    assert "Traceback" not in process.stderr.read()  # a worker finding its parent gone exits quietly


@pytest.mark.slow
def test_ctrl_c_during_generate_prints_no_worker_traceback(tmp_path: Path) -> None:
    with long_generate(tmp_path) as (process, workers):
        os.killpg(process.pid, signal.SIGINT)  # what a terminal sends on Ctrl-C
        _, err = process.communicate(timeout=30)
    assert process.returncode == 130
    assert err.strip().splitlines()[-1] == "vision-bench generate: interrupted" and "Traceback" not in err
    assert wait_for(lambda: not any(alive(pid) for pid in workers), 15)


def big_result(size: int) -> bytes:
    return b"x" * size


class TwoArguments(Exception):
    def __init__(self, first: str, second: str) -> None:
        super().__init__(f"{first} {second}")


def raise_two_arguments(_: object) -> None:
    raise TwoArguments("cannot", "rebuild")


def raise_with_a_lock(_: object) -> None:
    import threading

    error = RuntimeError("holds a lock")
    error.lock = threading.Lock()  # type: ignore[attr-defined]
    raise error


def test_large_jobs_and_results_do_not_deadlock() -> None:
    from vision_bench.io.pool import WorkerPool

    with WorkerPool(2, "fork", single_threaded=False) as pool:
        tickets = [pool.submit(big_result, 4 << 20) for _ in range(6)]
        assert [len(pool.result(ticket)) for ticket in tickets] == [4 << 20] * 6
        with pytest.raises(ValueError, match="not pending"):
            pool.result(tickets[0])


@pytest.mark.parametrize(("function", "message"), [(raise_two_arguments, "could not be read"),
                                                    (raise_with_a_lock, "could not be sent back")])
def test_worker_exceptions_that_do_not_pickle_are_reported_as_such(function, message: str) -> None:
    from vision_bench.io.pool import WorkerPool

    with WorkerPool(1, "fork", single_threaded=False) as pool:
        ticket = pool.submit(function, None)
        with pytest.raises(RuntimeError, match=message):
            pool.result(ticket)
        assert pool.result(pool.submit(big_result, 3)) == b"xxx"  # the worker is still there
