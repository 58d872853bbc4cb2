"""`TaskSample`, what every task family makes, and `sample_rng`, the RNG every family draws a sample from.

The lowest module of the task families: each family imports it, and it imports no family.
Reproducibility: sample `index` of `split` depends only on (config, split, index): its RNG is a
`random.Random` seeded from blake2b(seed, split, index), so any worker count or shard layout
yields the same dataset, and one sample can be regenerated alone.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, fields

import numpy as np

from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.task_code import IDENTITY_TOKEN, TASK_CODE_LENGTH

CHUNK = 128
"""Samples that travel together: one worker's job (`sampling.map_split`) and one batch of a Parquet file (`formats`)."""


@dataclass(frozen=True, eq=False)
class TaskSample:
    """One input/output pair with everything needed to explain or regenerate it.

    `frames` is [input, after step 1, ..., output]; `objects` holds one mapping per input object,
    in the order `extract_objects` finds them (`bbox` and `output_bbox` as [top, left, bottom,
    right), `colors`, `properties`). Imported tasks have no sequence, objects or seed, an
    all-identity task code, and frames (input, output).
    """

    input: np.ndarray
    output: np.ndarray
    sequence: tuple[str, ...] = ()
    frames: tuple[np.ndarray, ...] = ()
    objects: tuple[dict, ...] = ()
    task_code: tuple[int, ...] = (IDENTITY_TOKEN,) * TASK_CODE_LENGTH
    task_key: str = ""
    seed: int | None = None
    split: str = "train"
    index: int = 0

    def __post_init__(self) -> None:
        if not self.frames:
            object.__setattr__(self, "frames", (self.input, self.output))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TaskSample):
            return NotImplemented
        grids = ("input", "output", "frames")
        return (
            len(self.frames) == len(other.frames)
            and all(np.array_equal(a, b) for a, b in zip((self.input, self.output, *self.frames),
                                                          (other.input, other.output, *other.frames)))
            and all(getattr(self, f.name) == getattr(other, f.name) for f in fields(self) if f.name not in grids)
        )


Sampler = Callable[[TaskConfig, str, int], TaskSample]
"""A family's entry point: sample `index` of `split` of a config, the same for the same arguments."""


def sample_rng(seed: int, split: str, index: int) -> random.Random:
    """The RNG of one sample: a function of (seed, split, index) only."""
    digest = hashlib.blake2b(f"{seed}/{split}/{index}".encode(), digest_size=16).digest()
    return random.Random(int.from_bytes(digest, "little"))
