"""Samples of any task family, one at a time or whole splits on several processes.

`served_sample` is what datasets hold (the family's `sample`); `generate_sample` the whole sequence
(the family's `sequence_sample`: a world-model study's sequence, which rollouts and fingerprints read;
the same sample for every other family). `map_split` runs a function over chunks of a split's samples
on worker processes; `iter_split` and `generate_split` give a split's whole samples in order.
"""

from __future__ import annotations

import gc
import multiprocessing
from collections.abc import Callable, Iterator
from typing import TypeVar

from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.families import family_of
from vision_bench.tasks.sample import CHUNK, TaskSample

T = TypeVar("T")


def served_sample(config: TaskConfig, split: str, index: int) -> TaskSample:
    """Sample `index` of `split` as datasets serve it: the family's `sample` (a world-model study's is one
    step of its sequence)."""
    return family_of(config).sample(config, split, index)


def generate_sample(config: TaskConfig, split: str, index: int) -> TaskSample:
    """Sample `index` of `split` whole: the family's `sequence_sample` where it has one (a world-model study's
    whole sequence), else its `sample`. The same (config, split, index) always gives the same sample."""
    return family_of(config).whole_sample(config, split, index)


def prepare_split(config: TaskConfig, split: str) -> None:
    """The family's shared work for `split` (for COGITAO configs, the split's cached plan), done before any
    sample is made: an infeasible config fails here with its one-line error."""
    prepare = family_of(config).prepare
    if prepare is not None:
        prepare(config, split)


SampleMaker = Callable[[TaskConfig, str, int], TaskSample]
"""`served_sample` (what datasets hold) or `generate_sample` (whole sequences of world-model studies too)."""


Job = tuple[TaskConfig, str, int, int, Callable[[list[TaskSample]], T], SampleMaker]
"""(config, split, start, stop, function, make): `function` of samples start..stop-1, made by `make`."""


def _generate_range(job: Job[T]) -> T:
    config, split, start, stop, function, make = job
    return function([make(config, split, index) for index in range(start, stop)])


def map_split(config: TaskConfig, split: str, function: Callable[[list[TaskSample]], T], start: int = 0,
              stop: int | None = None, workers: int = 1,
              progress: Callable[[int], object] | None = None, make: SampleMaker = served_sample) -> Iterator[T]:
    """`function(chunk)` for consecutive chunks of `CHUNK` samples of start..stop-1 (stop defaults to the
    split's count), in order, computed by `workers` processes: this one and `workers - 1` helpers.
    Samples are made by `make`: by default `served_sample`, what datasets hold (`vision-bench generate`
    and `export` write a world-model study's one-step transitions, as training reads them). The family's
    `prepare` runs here first, so helpers start with its shared work (a COGITAO split's plan).

    Running `function` where the samples are made keeps the traffic small: only what `function`
    returns travels (for example an Arrow table instead of thousands of sample objects). `function`
    must be picklable (a module-level function). This process takes a chunk itself whenever the
    next result it needs is not ready, so no core waits. Helpers are forked where the platform allows,
    so they start with this process's object library and caches; its objects are frozen out of the
    garbage collector's reach meanwhile (`gc.freeze`), so that neither side rescans them and shared
    memory pages stay shared. `progress`, if given, is called with the number of samples just finished.
    """
    stop = config.count(split) if stop is None else stop
    if stop <= start:
        return
    prepare_split(config, split)
    jobs = [(config, split, first, min(first + CHUNK, stop), function, make) for first in range(start, stop, CHUNK)]
    results = _run_jobs(jobs, workers) if workers > 1 and len(jobs) > 1 else map(_generate_range, jobs)
    for job, result in zip(jobs, results):
        yield result
        if progress is not None:
            progress(job[3] - job[2])


def _run_jobs(jobs: list[Job[T]], workers: int) -> Iterator[T]:
    """The results of `_generate_range` over `jobs`, in order, from `workers - 1` helper processes and this one."""
    from vision_bench.io.pool import WorkerPool

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    window = 2 * (workers - 1)
    slots: dict[int, int | list[T]] = {}  # job -> a pool ticket, or [the result made here]
    upcoming = 0
    freezing = gc.get_freeze_count() == 0  # a caller's own freeze is left as it is
    if freezing:
        gc.freeze()
    try:
        with WorkerPool(workers - 1, method, single_threaded=False) as pool:
            for wanted in range(len(jobs)):
                while upcoming < len(jobs) and sum(isinstance(s, int) for s in slots.values()) < window:
                    slots[upcoming] = pool.submit(_generate_range, jobs[upcoming])
                    upcoming += 1
                ticket = slots[wanted]
                while upcoming < len(jobs) and isinstance(ticket, int) and not pool.done(ticket):
                    slots[upcoming] = [_generate_range(jobs[upcoming])]
                    upcoming += 1
                slot = slots.pop(wanted)
                yield slot[0] if isinstance(slot, list) else pool.result(slot)
    finally:
        if freezing:
            gc.unfreeze()


def iter_split(config: TaskConfig, split: str, start: int = 0, stop: int | None = None, workers: int = 1,
               progress: Callable[[int], object] | None = None) -> Iterator[TaskSample]:
    """`generate_sample`'s samples start..stop-1 of `split` in order (stop defaults to the split's count;
    whole sequences, world-model studies too), on `workers` processes (see `map_split`)."""
    for chunk in map_split(config, split, list, start, stop, workers, progress, make=generate_sample):
        yield from chunk


def generate_split(config: TaskConfig, split: str, start: int = 0, stop: int | None = None, workers: int = 1,
                   progress: Callable[[int], object] | None = None) -> list[TaskSample]:
    """`iter_split` as a list."""
    return list(iter_split(config, split, start, stop, workers, progress))
