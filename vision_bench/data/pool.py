"""A spawn-safe local process pool for export shards.

Each task is a module-level function applied to a picklable argument, so the pool works under the
`spawn` start method (macOS, Windows, and Linux with CUDA loaded). With one worker, tasks run in this
process: no start-up cost and plain tracebacks while debugging.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

from vision_bench.data.errors import DataError

Task = TypeVar("Task")
Result = TypeVar("Result")


def _single_threaded_worker() -> None:
    """Worker processes share the cores; one OpenCV thread each avoids oversubscription."""
    import cv2

    cv2.setNumThreads(1)


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
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        max_workers=min(workers, len(tasks)), mp_context=context, initializer=_single_threaded_worker
    ) as pool:
        pending: set[Future[Result]] = {pool.submit(function, task) for task in tasks}
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for future in done:
                    yield future.result()
        except BrokenProcessPool:
            raise DataError(
                "a worker process died (killed, or out of memory); re-run the same command to resume, "
                "with fewer --workers if memory is short"
            ) from None
        finally:
            for future in pending:
                future.cancel()


__all__ = ["run_tasks"]
