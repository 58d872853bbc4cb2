"""`Builder`: what every study preset registers, a function from sample counts and seed to its
`TaskConfig`; `STUDIES`: the registry of them."""

from __future__ import annotations

from collections.abc import Callable

from vision_bench.registry import Registry
from vision_bench.tasks.config import SampleCounts, TaskConfig

Builder = Callable[[SampleCounts, int], TaskConfig]

STUDIES: Registry[Builder] = Registry("study")
"""Every preset by id; the study modules add theirs when imported (`studies.registry` imports them)."""
