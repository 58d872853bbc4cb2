"""`STUDIES`: every preset by id, and `get_study` to build its config at a chosen size."""

from __future__ import annotations

import importlib

from pydantic import ValidationError

from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.registry import unknown_name_message
from vision_bench.tasks.config import SampleCounts, TaskConfig, check_seed, describe_validation_error
from vision_bench.tasks.studies.builder import ALPHA_STUDIES, COGITAO_STUDIES, PAPER_COUNTS, STUDIES

PAPER_TRAIN = 100_000
PAPER_EVAL = 1_000

MODULES = ("compgen", "envgen", "alpha", "sample_efficiency", "experiment0", "worldmodel", "gcog", "carc", "svib")
"""The study modules, in listing order; each registers its presets in `STUDIES` when imported."""

for _module in MODULES:
    importlib.import_module(f"vision_bench.tasks.studies.{_module}")


def paper_counts(study_id: str) -> tuple[int, int, int]:
    """(train, per validation split, per test split) of a study at paper scale: its family's `PAPER_COUNTS`, else
    COGITAO's 100,000 / 1,000 / 1,000."""
    prefix = study_id.split("/", 1)[0] + "/"
    return PAPER_COUNTS.get(prefix, (PAPER_TRAIN, PAPER_EVAL, PAPER_EVAL))


def is_cogitao_study(study_id: str) -> bool:
    """Whether `study_id`, or every id under a prefix such as `envgen/G1` or `compgen`, is one of COGITAO's paper's
    own studies (`COGITAO_STUDIES`)."""
    named = study_id.rstrip("/") + "/"  # a prefix without its slash names the same studies
    return any(named.startswith(prefix) for prefix in COGITAO_STUDIES)


def get_study(study_id: str, n_train: int | None = None, n_val: int | None = None, n_test: int | None = None,
              seed: int = 0) -> TaskConfig:
    """The config of a study: `n_train` training samples, `n_val` per validation split, `n_test` per test split
    (each left out: the study's paper scale, `paper_counts`).

    Besides the registered ids, any `<prefix><task>/<alpha>` of a family in `ALPHA_STUDIES` is built by that
    family (`alpha/<transformation>/<alpha>` with alpha in [0, 1], `svib/<task>/<alpha>` in [0, 0.8]).
    """
    paper_train, paper_val, paper_test = paper_counts(study_id)
    n_train = paper_train if n_train is None else n_train
    n_val = paper_val if n_val is None else n_val
    n_test = paper_test if n_test is None else n_test
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
    if len(parts) == 3 and f"{parts[0]}/" in ALPHA_STUDIES:
        return ALPHA_STUDIES[f"{parts[0]}/"](parts[1], parts[2], counts, seed)
    raise UnknownNameError(unknown_name_message("study", study_id, STUDIES.names()))
