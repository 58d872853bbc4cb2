"""C-ARC's training feed: one shuffled epoch of a Systematicity split, with the episode cache at its old size and now.

    python benchmarks/bench_carc_feed.py --queries 1500

Training reads a split's queries in shuffled order; query i belongs to episode i // 10, and an episode is drawn
(seeded, so the same every time) on its first query and kept in an LRU cache. The baseline is the same pure
function behind the old 64-episode cache, in the same run; both read the same shuffled order, and both return the
same samples (checked). Prints the episode draws and seconds of each, and the ratio.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from vision_bench.tasks.carc import episodes
from vision_bench.tasks.studies import get_study

OLD_CACHE = 64


def epoch(order: list[int], draw: Callable[..., Any], spec: Any, seed: int) -> tuple[float, list[Any]]:
    """Seconds to read every query of `order` through `draw` (an episode_of), and the queries read."""
    start = time.perf_counter()
    read = [draw(spec, seed, "train", i // spec.queries_per_episode).queries[i % spec.queries_per_episode]
            for i in order]
    return time.perf_counter() - start, read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", default="carc/systematicity/1860")
    parser.add_argument("--queries", type=int, default=1500, help="queries in the split (10 per episode)")
    args = parser.parse_args()
    config = get_study(args.study, n_train=args.queries, n_val=1, n_test=1)
    spec, seed = config.episode, config.seed
    assert spec is not None
    order = list(range(args.queries))
    random.Random(0).shuffle(order)
    old = lru_cache(maxsize=OLD_CACHE)(episodes.episode_of.__wrapped__)
    episodes.episode_of.cache_clear()
    old_s, old_read = epoch(order, old, spec, seed)
    new_s, new_read = epoch(order, episodes.episode_of, spec, seed)
    assert [q.input.tobytes() for q in old_read] == [q.input.tobytes() for q in new_read], "the samples differ"
    print(f"{args.study}, {args.queries} queries ({args.queries // spec.queries_per_episode} episodes), one shuffled "
          "epoch")
    print(f"cache {OLD_CACHE:>5}: {old.cache_info().misses:>6} episode draws, {old_s:7.1f} s")
    print(f"cache {episodes.EPISODE_CACHE:>5}: {episodes.episode_of.cache_info().misses:>6} episode draws, "
          f"{new_s:7.1f} s ({old_s / new_s:.1f}x faster)")


if __name__ == "__main__":
    main()
