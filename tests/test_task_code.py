"""Task codes: token = 1 + position in the transformation table, padded with the identity token."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.tasks.task_code import (
    IDENTITY_TOKEN,
    TASK_CODE_LENGTH,
    VOCAB_SIZE,
    decode_task_code,
    encode_task_code,
)
from vision_bench.tasks.transformations import TRANSFORMATIONS


def test_constants() -> None:
    assert (IDENTITY_TOKEN, VOCAB_SIZE, TASK_CODE_LENGTH) == (0, 29, 4)


def test_hand_encoded_codes() -> None:
    assert encode_task_code(["rot90", "pad_top"]) == [5, 19, 0, 0]
    assert encode_task_code(["translate_up"] * 4) == [1, 1, 1, 1]
    assert encode_task_code(("quadruple_shape",), length=2) == [28, 0]
    assert encode_task_code([]) == [0, 0, 0, 0]
    assert encode_task_code(["crop_contours", "change_shape_color"], length=6) == [12, 13, 0, 0, 0, 0]
    assert decode_task_code([5, 19, 0, 0]) == ("rot90", "pad_top")
    assert decode_task_code(np.array([0, 28, 0, 1])) == ("quadruple_shape", "translate_up")
    assert decode_task_code([]) == ()


def test_bad_codes_raise_clear_errors() -> None:
    with pytest.raises(ConfigError, match="5 transformations does not fit a task code of length 4"):
        encode_task_code(["rot90"] * 5)
    with pytest.raises(UnknownNameError, match="did you mean 'pad_top'"):
        encode_task_code(["pad_tp"])
    for token in (29, -1):
        with pytest.raises(ConfigError, match="tokens must be integers 0..28"):
            decode_task_code([1, token])
    with pytest.raises(ConfigError, match="token 0 is 2.5"):
        decode_task_code([2.5])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.sampled_from(list(TRANSFORMATIONS)), max_size=TASK_CODE_LENGTH))
def test_decode_inverts_encode(names: list[str]) -> None:
    code = encode_task_code(names)
    assert len(code) == TASK_CODE_LENGTH
    assert all(0 <= token < VOCAB_SIZE for token in code)
    assert decode_task_code(code) == tuple(names)


def test_task_codes_and_transformations_do_not_import_torch() -> None:
    code = "import sys, vision_bench.tasks.task_code; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
