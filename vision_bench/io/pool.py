"""The project's one local process pool: export shards (`run_tasks`) and generation chunks
(`tasks.sampling`) both run on `WorkerPool`.

- Each worker has its own pipe. A worker that dies (killed, out of memory), even halfway through
  sending a result, closes its end, so the wait for its result ends at once in one clear error
  instead of hanging (a shared result queue can be left with half a message and wait for ever).
- Workers watch their parent and exit when it is gone (`kill -9` of the command), and ignore
  Ctrl-C, which the command handles: no worker outlives the command, none prints a traceback.

Each task is a module-level function applied to a picklable argument, so the pool works under the
`spawn` start method (macOS, Windows, and Linux with CUDA loaded). With one worker, `run_tasks`
runs tasks in this process: no start-up cost and plain tracebacks while debugging.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.context import DefaultContext
from multiprocessing.process import BaseProcess
from types import TracebackType
from typing import Any, TypeVar, cast

from vision_bench.errors import DataError

Task = TypeVar("Task")
Result = TypeVar("Result")

PARENT_CHECK_S = 0.5
STOP_GRACE_S = 5.0
WORKER_DIED = ("a worker process died (killed, or out of memory); re-run the same command to resume, "
               "with fewer --workers if memory is short")


def _exit_with_parent(parent: int) -> None:
    """Exit this worker as soon as its parent process is gone (it is then adopted by another)."""
    while True:
        time.sleep(PARENT_CHECK_S)
        if os.getppid() != parent:
            os._exit(1)


def _serve(connection: Connection, parent: int, single_threaded: bool) -> None:
    """A worker: run (function, argument) pairs from `connection` and send back (ok, value)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the command's to handle: no worker traceback
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True, name="parent-watch").start()
    if single_threaded:  # worker processes share the cores; one OpenCV thread each avoids oversubscription
        import cv2

        cv2.setNumThreads(1)
    while True:
        try:
            job = connection.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        function, argument = job
        try:
            reply: tuple[bool, Any] = (True, function(argument))
        except BaseException as error:  # sent back and raised in the parent
            reply = (False, error)
        try:
            connection.send(reply)
        except OSError:  # the parent is gone (kill -9) and nobody reads the result: exit quietly
            return
        except Exception as error:  # a result or exception that cannot be pickled: say so, with the cause
            cause = reply[1] if not reply[0] else error
            detail = "".join(traceback.format_exception(cause)).strip()
            message = f"a worker's {type(cause).__name__} could not be sent back: {detail}"
            try:
                connection.send((False, RuntimeError(message)))
            except OSError:
                return


@dataclass
class _Worker:
    process: BaseProcess
    connection: Connection
    tickets: deque[int] = field(default_factory=deque)


class WorkerPool:
    """`workers` processes with a pipe each. `submit` returns a ticket; `done(ticket)` and
    `result(ticket)` read results as they come. Jobs are sent by a thread of their own, so a large
    job never waits on a worker that is itself waiting to hand back a large result. Use as a context
    manager: leaving it normally stops the workers, leaving it on an error (or Ctrl-C) kills them."""

    def __init__(self, workers: int, start_method: str = "spawn", single_threaded: bool = True) -> None:
        # every context has a Process class; get_context(str) is typed as the base, which lacks it
        context = cast(DefaultContext, multiprocessing.get_context(start_method))
        self._workers: list[_Worker] = []
        self._results: dict[int, tuple[bool, Any]] = {}
        self._next_ticket = 0
        self._outbox: queue.SimpleQueue[tuple[Connection, Any] | None] = queue.SimpleQueue()
        try:
            for _ in range(workers):
                ours, theirs = context.Pipe()
                process = context.Process(target=_serve, args=(theirs, os.getpid(), single_threaded), daemon=True)
                process.start()
                theirs.close()  # only the worker holds its end: its death is an end of file here
                self._workers.append(_Worker(process, ours))
        except BaseException:
            for worker in self._workers:
                worker.process.kill()
            raise
        self._sender = threading.Thread(target=self._send_jobs, daemon=True, name="pool-sender")
        self._sender.start()

    def _send_jobs(self) -> None:
        while (item := self._outbox.get()) is not None:
            connection, job = item
            try:
                connection.send(job)
            except OSError:  # the worker is gone: waiting for its result reports that
                pass

    def submit(self, function: Callable[[Task], Result], argument: Task) -> int:
        worker = min(self._workers, key=lambda w: len(w.tickets))
        ticket = self._next_ticket
        self._next_ticket += 1
        worker.tickets.append(ticket)
        self._outbox.put((worker.connection, (function, argument)))
        return ticket

    def done(self, ticket: int) -> bool:
        self._collect(timeout=0)
        return ticket in self._results

    def result(self, ticket: int) -> Any:
        if ticket not in self._results and not any(ticket in worker.tickets for worker in self._workers):
            raise ValueError(f"ticket {ticket} is not pending (its result was already read)")
        while ticket not in self._results:
            self._collect(timeout=None)
        ok, value = self._results.pop(ticket)
        if not ok:
            raise value
        return value

    def _collect(self, timeout: float | None) -> None:
        busy = {worker.connection: worker for worker in self._workers if worker.tickets}
        for connection in wait(list(busy), timeout):
            worker = busy[connection]  # type: ignore[index]
            try:
                reply = worker.connection.recv()
            except (EOFError, OSError):
                raise DataError(WORKER_DIED) from None
            except Exception as error:  # a result that arrived but cannot be rebuilt here
                reply = (False, RuntimeError(f"a worker's result could not be read: {type(error).__name__}: {error}"))
            self._results[worker.tickets.popleft()] = reply

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        for worker in self._workers:
            if kind is None:
                self._outbox.put((worker.connection, None))  # after every job already queued
            else:
                worker.process.kill()
        self._outbox.put(None)
        self._sender.join(STOP_GRACE_S)
        for worker in self._workers:
            worker.process.join(STOP_GRACE_S)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.connection.close()


def run_tasks(
    function: Callable[[Task], Result], tasks: Sequence[Task], workers: int = 1
) -> Iterator[Result]:
    """Yield `function(task)` for every task, in order; the first failure stops the rest."""
    if workers < 1:
        raise DataError(f"--workers must be at least 1, got {workers}")
    if workers == 1 or len(tasks) <= 1:
        for task in tasks:
            yield function(task)
        return
    count = min(workers, len(tasks))
    with WorkerPool(count) as pool:
        pending: deque[int] = deque()
        upcoming = iter(tasks)
        for task in upcoming:  # two tasks queued per worker keeps every worker busy
            pending.append(pool.submit(function, task))
            if len(pending) >= 2 * count:
                break
        while pending:
            result = pool.result(pending.popleft())
            for task in upcoming:
                pending.append(pool.submit(function, task))
                break
            yield result


__all__ = ["WORKER_DIED", "WorkerPool", "run_tasks"]
