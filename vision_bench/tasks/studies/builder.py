"""`Builder`: what every study preset registers, a function from sample counts and seed to its `TaskConfig`."""

from __future__ import annotations

from collections.abc import Callable

from vision_bench.tasks.config import SampleCounts, TaskConfig

Builder = Callable[[SampleCounts, int], TaskConfig]
