"""The chunk runner behind the CPU metric kernels."""

from __future__ import annotations

import torch

from vision_bench.metrics.chunks import map_chunks


def test_map_chunks_covers_the_batch_in_order_with_one_or_two_threads() -> None:
    previous = torch.get_num_threads()
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            parts = map_chunks(lambda part: list(range(7))[part], 7, 2)
            assert parts == [[0, 1], [2, 3], [4, 5], [6]]
    finally:
        torch.set_num_threads(previous)
