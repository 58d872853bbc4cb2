"""Where samples come from: task configs (a study id or a YAML file) and the generator.

The data package reaches the generator only through these functions, so exports and on-the-fly
datasets agree on the config round trip, the split counts, the sample order and the render seed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vision_bench.tasks.config import SPLITS, TaskConfig
from vision_bench.tasks.families import family_of
from vision_bench.tasks.sample import TaskSample
from vision_bench.tasks.sampling import map_split, served_sample

_RENDER_SEED_BITS = 63


def config_to_dict(config: TaskConfig) -> dict[str, Any]:
    return config.to_dict()


def config_from_dict(data: Mapping[str, Any]) -> TaskConfig:
    return TaskConfig.from_dict(dict(data))


def split_counts(config: TaskConfig) -> dict[str, int]:
    """Samples per split, in the fixed split order."""
    return {split: config.count(split) for split in SPLITS}


def generate(config: TaskConfig, split: str, start: int, stop: int) -> list[TaskSample]:
    """Samples start..stop-1 of `split`, each `sample(config, split, index)`."""
    return [made for chunk in map_split(config, split, list, start, stop) for made in chunk]


def sample(config: TaskConfig, split: str, index: int) -> TaskSample:
    """Sample `index` of `split`; a world-model study's (`kind: world_model`) is one step of its sequence."""
    return served_sample(config, split, index)


def render_seed(seed: int | None, split: str, index: int) -> int:
    """The seed that draws sample `index`'s images (random background, jitter): (seed, split, index) only.

    Input and target share it, so a random background or palette choice is the same in both.
    Below 2**63, so it fits a torch long.
    """
    digest = hashlib.blake2b(f"render/{seed}/{split}/{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> (64 - _RENDER_SEED_BITS)


def with_overrides(
    config: TaskConfig,
    *,
    n_train: int | None = None,
    n_val: int | None = None,
    n_test: int | None = None,
    seed: int | None = None,
) -> TaskConfig:
    """`config` with new sample counts (`n_val` sets val_id and val_ood, `n_test` both test splits) or seed."""
    data = config.to_dict()
    counts = dict(data.get("samples", {}))
    for value, splits in ((n_train, ("train",)), (n_val, ("val_id", "val_ood")), (n_test, ("test_id", "test_ood"))):
        if value is not None:
            counts.update(dict.fromkeys(splits, value))
    data["samples"] = counts
    if seed is not None:
        data["seed"] = seed
    return type(config).from_dict(data)  # a world-model study stays one


def load_config(
    study: str | None = None,
    config_path: str | Path | None = None,
    *,
    n_train: int | None = None,
    n_val: int | None = None,
    n_test: int | None = None,
    seed: int | None = None,
    overrides: Sequence[str] = (),
) -> TaskConfig:
    """A study preset by id (its own counts and seed handling) or a YAML config file, with `--set`
    overrides (`key.path=value`, validated like the file) and then the count and seed overrides; a
    `family` that does not fit the config's fields is refused here, before any work."""
    if (study is None) == (config_path is None):
        from vision_bench.errors import ConfigError

        raise ConfigError("give exactly one of a study id (--study) or a config file (--config)")
    if study is not None:
        from vision_bench.config_files import apply_overrides
        from vision_bench.tasks.studies import get_study

        counts = {"n_train": n_train, "n_val": n_val, "n_test": n_test, "seed": seed}
        preset = get_study(study, **{name: value for name, value in counts.items() if value is not None})
        if not overrides:
            return preset
        return type(preset).from_dict(apply_overrides(preset.to_dict(), overrides), source=f"study {study} with --set")
    config = TaskConfig.from_yaml(config_path, overrides)  # type: ignore[arg-type]
    config = with_overrides(config, n_train=n_train, n_val=n_val, n_test=n_test, seed=seed)
    family_of(config)
    return config


__all__ = [
    "config_from_dict",
    "config_to_dict",
    "generate",
    "load_config",
    "render_seed",
    "sample",
    "split_counts",
    "with_overrides",
]
