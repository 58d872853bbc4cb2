"""Run a per-chunk kernel over a batch, on several CPU threads when torch is allowed more than one.

The CPU kernels of the pixel metrics and SSIM work on numpy arrays and OpenCV, which release the
GIL, so chunks run truly in parallel. Each thread takes the next chunk as soon as it is done with
one, with no barrier per operation, which keeps the speed-up on a busy machine where fine-grained
parallel loops stall; taking chunks from a shared counter, not one future per chunk, keeps the
bookkeeping (which holds the GIL) to a few microseconds per chunk.

Kernels take their large temporaries from `scratch`, per-thread buffers reused from chunk to
chunk. Fresh arrays of a chunk's size would cost a page fault per 4 KiB on every chunk: the
allocator hands such blocks back to the operating system when they are freed (in the main
thread's heap in particular), which made SSIM twice as slow there as in a worker thread.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np
import torch

T = TypeVar("T")

_BUFFERS = threading.local()


def map_chunks(kernel: Callable[[slice], T], batch: int, chunk: int) -> list[T]:
    """`kernel(part)` for consecutive slices of `chunk` items covering `batch`, in order.

    The scratch buffers the kernel took are released once its chunks are done.
    """
    parts = [slice(start, start + chunk) for start in range(0, batch, chunk)]
    workers = min(torch.get_num_threads(), len(parts))
    if workers <= 1:
        try:
            return [kernel(part) for part in parts]
        finally:
            release_scratch()
    results: list[T] = [None] * len(parts)  # type: ignore[list-item]
    next_index = itertools.count()  # next() on a count is atomic under the GIL

    def work() -> None:
        try:
            while (index := next(next_index)) < len(parts):
                results[index] = kernel(parts[index])
        finally:
            release_scratch()

    with ThreadPoolExecutor(workers) as pool:
        for future in [pool.submit(work) for _ in range(workers)]:
            future.result()
    return results


def scratch(name: str, shape: tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
    """This thread's buffer `name` viewed as `shape` (uninitialized; the next call with `name` reuses its memory)."""
    buffers: dict[str, np.ndarray] = _BUFFERS.__dict__.setdefault("buffers", {})
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    found = buffers.get(name)
    if found is None or found.size < size:
        found = buffers[name] = np.empty(size, dtype=np.uint8)
    return found[:size].view(dtype).reshape(shape)


def release_scratch() -> None:
    """Free this thread's scratch buffers (`map_chunks` does, once a thread's chunks are done)."""
    _BUFFERS.__dict__.pop("buffers", None)
