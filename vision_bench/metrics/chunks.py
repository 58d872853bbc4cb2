"""Run a per-chunk kernel over a batch, on several CPU threads when torch is allowed more than one.

The CPU kernels of the pixel metrics and SSIM work on numpy arrays and OpenCV, which release the
GIL, so chunks run truly in parallel. Each thread takes the next chunk as soon as it is done with
one, with no barrier per operation, which keeps the speed-up on a busy machine where fine-grained
parallel loops stall; taking chunks from a shared counter, not one future per chunk, keeps the
bookkeeping (which holds the GIL) to a few microseconds per chunk.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import torch

T = TypeVar("T")

def map_chunks(kernel: Callable[[slice], T], batch: int, chunk: int) -> list[T]:
    """`kernel(part)` for consecutive slices of `chunk` items covering `batch`, in order."""
    parts = [slice(start, start + chunk) for start in range(0, batch, chunk)]
    workers = min(torch.get_num_threads(), len(parts))
    if workers <= 1:
        return [kernel(part) for part in parts]
    results: list[T] = [None] * len(parts)  # type: ignore[list-item]
    next_index = itertools.count()  # next() on a count is atomic under the GIL

    def work() -> None:
        while (index := next(next_index)) < len(parts):
            results[index] = kernel(parts[index])

    with ThreadPoolExecutor(workers) as pool:
        for future in [pool.submit(work) for _ in range(workers)]:
            future.result()
    return results
