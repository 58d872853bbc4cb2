"""docs/architecture.md's "Add a study" and "Add a transformation" recipes, followed once each.

A toy study (`@STUDIES.register(id, description)`) and a toy transformation
(`register(Transformation(...))`) are registered the documented way, used through the public entry
points (`get_study`, `generate_split`, `apply_sequence`, the `studies` and `transformations`
commands), and removed again when the test ends, so no other test sees them.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

from vision_bench.cli import main
from vision_bench.errors import UnknownNameError
from vision_bench.registry import Registry
from vision_bench.tasks.config import SampleCounts, TaskConfig
from vision_bench.tasks.grid import GridObject
from vision_bench.tasks.objects import ObjectFilter
from vision_bench.tasks.sampling import generate_split
from vision_bench.tasks.studies import STUDIES, get_study
from vision_bench.tasks.transformations import (
    TRANSFORMATIONS,
    Transformation,
    apply_sequence,
)
from vision_bench.tasks.transformations.base import ANY_OBJECT, register

TOY_STUDY = "toy/translate_up"
TOY_TRANSFORMATION = "shift_down_right"


@contextmanager
def registered_for_the_test(registry: Registry[Any]) -> Iterator[Registry[Any]]:
    """`registry` as it is, restored to exactly that state afterwards (whatever a test registers in it)."""
    saved = {key: dict(value) if isinstance(value, dict) else value for key, value in vars(registry).items()}
    try:
        yield registry
    finally:
        vars(registry).clear()
        vars(registry).update(saved)


def build_toy_study(counts: SampleCounts, seed: int) -> TaskConfig:
    """One object of at most 3x3 cells on a 6x6 to 8x8 grid, moved up one cell: the recipe's builder."""
    return TaskConfig(
        description="toy: one small object moved up one cell",
        seed=seed,
        grid_height=(6, 8),
        grid_width=(6, 8),
        n_objects=(1, 1),
        object_filter=ObjectFilter(max_height=3, max_width=3),
        sequences=(("translate_up",),),
        samples=counts,
    )


@pytest.fixture
def toy_study() -> Iterator[str]:
    with registered_for_the_test(STUDIES):
        STUDIES.register(TOY_STUDY, "toy: one small object moved up one cell")(build_toy_study)
        yield TOY_STUDY
    assert TOY_STUDY not in STUDIES


def shift_down_right(obj: GridObject) -> GridObject:
    return GridObject(obj.pixels, obj.top + 1, obj.left + 1)


@pytest.fixture
def toy_transformation() -> Iterator[str]:
    with registered_for_the_test(TRANSFORMATIONS):
        register(Transformation(TOY_TRANSFORMATION, "move the object one cell down and one cell right", ANY_OBJECT,
                                shift_down_right))
        yield TOY_TRANSFORMATION
    assert TOY_TRANSFORMATION not in TRANSFORMATIONS


def test_registered_study_generates_its_task(toy_study: str) -> None:
    config = get_study(toy_study, n_train=6, n_val=2, n_test=3, seed=4)
    assert (config.samples.train, config.samples.val_ood, config.samples.test_id) == (6, 2, 3)
    samples = generate_split(config, "train")
    assert len(samples) == 6
    for sample in samples:
        height, width = sample.input.shape
        assert 6 <= height <= 8 and 6 <= width <= 8
        assert sample.sequence == ("translate_up",)
        # translate_up moves every cell up one row; the generator keeps the object inside the grid
        assert not sample.input[0].any()
        np.testing.assert_array_equal(sample.output, np.vstack([sample.input[1:], np.zeros((1, width), int)]))
    assert generate_split(get_study(toy_study, n_train=6, seed=4), "train") == samples


def test_registered_study_is_listed(toy_study: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["studies", "toy"]) == 0
    assert capsys.readouterr().out == f"{toy_study}  toy: one small object moved up one cell\n"


def test_registration_is_undone_after_the_test() -> None:
    names = STUDIES.names()
    with registered_for_the_test(STUDIES):
        STUDIES.register(TOY_STUDY, "toy")(build_toy_study)
        assert STUDIES.names() == [*names, TOY_STUDY]
    assert STUDIES.names() == names
    with pytest.raises(UnknownNameError, match="unknown study 'toy/translate_up'"):
        get_study(TOY_STUDY)


def test_registered_transformation_applies_and_is_listed(toy_transformation: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    grid = np.zeros((5, 5), dtype=np.uint8)
    grid[1, 1:3] = 3
    expected = np.zeros((5, 5), dtype=np.uint8)
    expected[2, 2:4] = 3
    np.testing.assert_array_equal(apply_sequence(grid, [toy_transformation]), expected)
    np.testing.assert_array_equal(apply_sequence(grid, [toy_transformation, "translate_up"]),
                                  np.roll(grid, 1, axis=1))
    assert TRANSFORMATIONS.names()[-1] == toy_transformation
    assert main(["transformations"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"{toy_transformation}\tmove the object one cell down and one cell right"
    )


GENERATE_WITH_A_NEW_TRANSFORMATION = """
import numpy as np
from vision_bench.tasks.grid import GridObject
from vision_bench.tasks.transformations import Transformation
from vision_bench.tasks.transformations.base import ANY_OBJECT, register

# registered at import time, before task codes are numbered, as a transformation in the package is
register(Transformation("shift_down_right", "move the object one cell down and one cell right", ANY_OBJECT,
                        lambda obj: GridObject(obj.pixels, obj.top + 1, obj.left + 1)))

from vision_bench.tasks.config import TaskConfig
from vision_bench.tasks.sampling import generate_split
from vision_bench.tasks.objects import ObjectFilter
from vision_bench.tasks.task_code import FULL_VOCAB_SIZE, TOKENS, VOCAB_SIZE

config = TaskConfig(seed=1, grid_height=(7, 7), grid_width=(7, 7), n_objects=(1, 2),
                    object_filter=ObjectFilter(max_height=3, max_width=3),
                    sequences=(("shift_down_right",),), samples={"train": 5})
for sample in generate_split(config, "train"):
    assert not sample.input[-1].any() and not sample.input[:, -1].any()
    shifted = np.zeros_like(sample.input)
    shifted[1:, 1:] = sample.input[:-1, :-1]
    assert np.array_equal(sample.output, shifted), sample.index
    assert sample.task_code == (29, 0, 0, 0), sample.task_code
print(VOCAB_SIZE, FULL_VOCAB_SIZE, TOKENS.index("select:all"))
"""


@pytest.mark.slow
def test_transformation_added_at_import_generates_tasks_with_the_next_token() -> None:
    """A new transformation registered before task codes are numbered (as one in the package is) gets
    token 29, the vocabulary grows to 30, and the generator applies it (in a fresh interpreter); the C-ARC and
    selector tokens keep their fixed places, so rule codes and `FULL_VOCAB_SIZE` do not move."""
    done = subprocess.run([sys.executable, "-c", GENERATE_WITH_A_NEW_TRANSFORMATION], check=False,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "30 101 70"
