"""Shard planning: fixed index ranges per split, so every machine agrees on which files exist.

Shard `k` of a split holds samples `[k * shard_size, min((k + 1) * shard_size, count))`. The plan
depends only on the per-split counts and the shard size, never on the number of machines or worker
processes: `--num-shards N --shard-index K` picks every N-th shard of the global list (splits in
order, shards in order within a split), so N separate runs produce disjoint sets of shard files whose
union is exactly the single-machine export.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from vision_bench.errors import DataError

DEFAULT_SHARD_SIZE = 1000


@dataclass(frozen=True)
class Shard:
    """One fixed index range `[start, stop)` of one split."""

    split: str
    number: int
    start: int
    stop: int

    @property
    def name(self) -> str:
        """`{split}-{number:05d}`: the shard's name in file names and progress markers."""
        return f"{self.split}-{self.number:05d}"

    @property
    def size(self) -> int:
        return self.stop - self.start


MAX_SHARDS = 100_000
"""The most shards an export may have: each is a file (or several) and a progress marker, and a run checks every
one; at the default shard size it allows 10**8 samples, and a larger `--shard-size` allows more."""


def count_shards(counts: Mapping[str, int], shard_size: int = DEFAULT_SHARD_SIZE) -> int:
    """How many shards `plan_shards` gives, worked out from the counts alone (nothing is planned)."""
    if shard_size < 1:
        raise DataError(f"shard size must be at least 1, got {shard_size}; pass --shard-size 1000 or so")
    for split, count in counts.items():
        if count < 0:
            raise DataError(f"split {split!r} has a negative sample count ({count}); counts must be >= 0")
    return sum(-(-count // shard_size) for count in counts.values())


def iter_shards(counts: Mapping[str, int], shard_size: int = DEFAULT_SHARD_SIZE) -> Iterator[Shard]:
    """Every shard of every split, splits in the order of `counts`, shards in index order, made one at a time."""
    for split, count in counts.items():
        for number, start in enumerate(range(0, count, shard_size)):
            yield Shard(split, number, start, min(start + shard_size, count))


def plan_shards(counts: Mapping[str, int], shard_size: int = DEFAULT_SHARD_SIZE) -> list[Shard]:
    """Every shard of every split (as `iter_shards`), once their number is known to be at most `MAX_SHARDS`."""
    total = count_shards(counts, shard_size)
    if total > MAX_SHARDS:
        needed = -(-sum(counts.values()) // (MAX_SHARDS - len(counts)))  # a partial last shard per split at most
        raise DataError(f"{sum(counts.values()):,} samples in shards of {shard_size:,} make {total:,} shards, more "
                        f"than an export may have ({MAX_SHARDS:,}); pass --shard-size {needed} or more")
    return list(iter_shards(counts, shard_size))


def select_shards(shards: Sequence[Shard], num_shards: int = 1, shard_index: int = 0) -> list[Shard]:
    """The shards run `shard_index` of `num_shards` is responsible for (every `num_shards`-th one)."""
    if num_shards < 1:
        raise DataError(f"--num-shards must be at least 1, got {num_shards}")
    if not 0 <= shard_index < num_shards:
        raise DataError(
            f"--shard-index must be in 0..{num_shards - 1} for --num-shards {num_shards}, got {shard_index}"
        )
    return [shard for position, shard in enumerate(shards) if position % num_shards == shard_index]


__all__ = [
    "DEFAULT_SHARD_SIZE", "MAX_SHARDS", "Shard", "count_shards", "iter_shards", "plan_shards", "select_shards",
]
