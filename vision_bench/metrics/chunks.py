"""Run a per-chunk kernel over a batch, on several CPU threads when torch is allowed more than one.

The CPU kernels of the pixel metrics and SSIM work on numpy arrays and OpenCV, which release the
GIL, so chunks run truly in parallel. Each thread works through whole chunks with no barrier per
operation, which keeps the speed-up on a busy machine where fine-grained parallel loops stall.
"""

from __future__ import annotations

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
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(kernel, parts))
