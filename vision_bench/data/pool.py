"""The project's one local process pool: export shards (`run_tasks`) and generation chunks
(`tasks.generator`) both run on `worker_pool`.

- A worker that dies (killed, out of memory) breaks the pool: waiting on any of its futures raises
  `BrokenProcessPool`, which `result_of` turns into one clear error. Nothing waits for ever.
- Workers watch their parent and exit when it is gone (`kill -9` of the command), so no worker
  outlives the command that started it.

Each task is a module-level function applied to a picklable argument, so the pool works under the
`spawn` start method (macOS, Windows, and Linux with CUDA loaded). With one worker, tasks run in this
process: no start-up cost and plain tracebacks while debugging.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

from vision_bench.data.errors import DataError

Task = TypeVar("Task")
Result = TypeVar("Result")


PARENT_CHECK_S = 0.5
WORKER_DIED = ("a worker process died (killed, or out of memory); re-run the same command to resume, "
               "with fewer --workers if memory is short")


def _exit_with_parent(parent: int) -> None:
    """Exit this worker as soon as its parent process is gone (it is then adopted by another)."""
    while True:
        time.sleep(PARENT_CHECK_S)
        if os.getppid() != parent:
            os._exit(1)


def _start_worker(parent: int, single_threaded: bool) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the command's to handle: no worker traceback
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True, name="parent-watch").start()
    if single_threaded:  # worker processes share the cores; one OpenCV thread each avoids oversubscription
        import cv2

        cv2.setNumThreads(1)


def worker_pool(workers: int, start_method: str = "spawn", single_threaded: bool = True) -> ProcessPoolExecutor:
    """`workers` processes that exit with this one; use as a context manager."""
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(start_method),
                               initializer=_start_worker, initargs=(os.getpid(), single_threaded))


def result_of(future: Future[Result]) -> Result:
    """The future's result; a dead worker becomes one clear `DataError`."""
    try:
        return future.result()
    except BrokenProcessPool:
        raise DataError(WORKER_DIED) from None


def run_tasks(
    function: Callable[[Task], Result], tasks: Sequence[Task], workers: int = 1
) -> Iterator[Result]:
    """Yield `function(task)` for every task as each finishes; the first failure cancels the rest."""
    if workers < 1:
        raise DataError(f"--workers must be at least 1, got {workers}")
    if workers == 1 or len(tasks) <= 1:
        for task in tasks:
            yield function(task)
        return
    with worker_pool(min(workers, len(tasks))) as pool:
        pending: set[Future[Result]] = {pool.submit(function, task) for task in tasks}
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for future in done:
                    yield result_of(future)
        finally:
            for future in pending:
                future.cancel()


__all__ = ["WORKER_DIED", "result_of", "run_tasks", "worker_pool"]
