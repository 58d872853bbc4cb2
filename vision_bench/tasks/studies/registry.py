"""`STUDIES`: every preset by id, and `get_study` to build its config at a chosen size."""

from __future__ import annotations

import importlib

from pydantic import ValidationError

from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.registry import unknown_name_message
from vision_bench.tasks.config import SampleCounts, TaskConfig, check_seed, describe_validation_error
from vision_bench.tasks.studies.builder import STUDIES
from vision_bench.tasks.transformations import TRANSFORMATIONS

PAPER_TRAIN = 100_000
PAPER_EVAL = 1_000

MODULES = ("compgen", "envgen", "alpha", "sample_efficiency", "experiment0", "worldmodel", "gcog", "carc")
"""The study modules, in listing order; each registers its presets in `STUDIES` when imported."""

for _module in MODULES:
    importlib.import_module(f"vision_bench.tasks.studies.{_module}")


def get_study(study_id: str, n_train: int = PAPER_TRAIN, n_val: int = PAPER_EVAL, n_test: int = PAPER_EVAL,
              seed: int = 0) -> TaskConfig:
    """The config of a study: `n_train` training samples, `n_val` per validation split, `n_test` per test split.

    Besides the registered ids, any `alpha/<transformation>/<alpha>` with alpha in [0, 1] is accepted.
    """
    try:
        counts = SampleCounts(train=n_train, val_id=n_val, val_ood=n_val, test_id=n_test, test_ood=n_test)
        check_seed(seed)
    except ValidationError as error:
        raise ConfigError(f"study {study_id!r}: {describe_validation_error(error, SampleCounts)}") from None
    except ValueError as error:
        raise ConfigError(f"study {study_id!r}: {error}") from None
    if study_id in STUDIES:
        return STUDIES[study_id](counts, seed)
    parts = study_id.split("/")
    if len(parts) == 3 and parts[0] == "alpha":
        from vision_bench.tasks.studies import alpha  # imported above, by the MODULES loop

        rule, value = parts[1], parts[2]
        TRANSFORMATIONS.check(rule)
        try:
            fraction = float(value)
        except ValueError:
            fraction = -1.0
        if not 0.0 <= fraction <= 1.0:
            raise UnknownNameError(f"study {study_id!r}: alpha must be a number from 0 to 1, got {value!r}")
        return alpha.build(rule, fraction, counts, seed)
    raise UnknownNameError(unknown_name_message("study", study_id, STUDIES.names()))
