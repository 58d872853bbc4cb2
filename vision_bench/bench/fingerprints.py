"""Data fingerprints: a short hash of the first samples of every split of an experiment.

A bench records one per experiment, so that re-running it in a folder whose results were computed on
other data (an older version of a study, a changed generator) is refused instead of mixing the two.
"""

from __future__ import annotations

import hashlib

from vision_bench.tasks.config import SPLITS, TaskConfig
from vision_bench.tasks.sampling import generate_sample

SAMPLES_PER_SPLIT = 2


def data_fingerprint(config: TaskConfig) -> str:
    """16 hex digits over the input and output grids and sequences of the first samples of each split."""
    digest = hashlib.sha256()
    for split in SPLITS:
        for index in range(min(SAMPLES_PER_SPLIT, config.count(split))):
            sample = generate_sample(config, split, index)
            for grid in (sample.input, sample.output):
                digest.update(repr(grid.shape).encode() + grid.tobytes())
            digest.update(repr(sample.sequence).encode())
    return digest.hexdigest()[:16]
