"""The chunk runner and the per-thread scratch buffers behind the CPU metric kernels."""

from __future__ import annotations

import threading

import numpy as np
import torch

from vision_bench.metrics.chunks import map_chunks, release_scratch, scratch


def test_map_chunks_covers_the_batch_in_order_with_one_or_two_threads() -> None:
    previous = torch.get_num_threads()
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            parts = map_chunks(lambda part: list(range(7))[part], 7, 2)
            assert parts == [[0, 1], [2, 3], [4, 5], [6]]
    finally:
        torch.set_num_threads(previous)


def test_scratch_reuses_one_buffer_per_name_and_grows_when_needed() -> None:
    first = scratch("test_buffer", (2, 3), np.float32)
    smaller = scratch("test_buffer", (5,), np.float32)
    assert first.shape == (2, 3) and smaller.shape == (5,) and first.dtype == np.float32
    assert np.shares_memory(first, smaller)
    larger = scratch("test_buffer", (4, 4), np.float64)
    assert larger.shape == (4, 4) and larger.dtype == np.float64
    assert not np.shares_memory(first, larger)
    assert not np.shares_memory(larger, scratch("other_buffer", (4, 4), np.float64))


def test_scratch_buffers_are_per_thread() -> None:
    here = scratch("test_thread_buffer", (8,), np.float32)
    found: list[np.ndarray] = []
    worker = threading.Thread(target=lambda: found.append(scratch("test_thread_buffer", (8,), np.float32)))
    worker.start()
    worker.join()
    assert not np.shares_memory(here, found[0])


def test_released_scratch_buffers_are_not_reused() -> None:
    before = scratch("test_released", (16,), np.float32)
    release_scratch()
    assert not np.shares_memory(before, scratch("test_released", (16,), np.float32))
