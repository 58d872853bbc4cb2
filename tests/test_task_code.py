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


# ----------------------------------------------------------------------------- rule codes: selectors and C-ARC


def test_the_vocabulary_extends_cogitao_s_without_moving_it() -> None:
    from vision_bench.tasks.task_code import (
        EXTRA_TRANSFORMATIONS,
        FULL_VOCAB_SIZE,
        RESERVED_START,
        SELECTOR_TOKENS,
        TOKENS,
    )

    assert TOKENS[:29] == ("identity", *list(TRANSFORMATIONS)[:28])
    assert TOKENS[:VOCAB_SIZE] == ("identity", *TRANSFORMATIONS)
    assert TOKENS[VOCAB_SIZE:RESERVED_START] == tuple(f"reserved:{t}" for t in range(VOCAB_SIZE, RESERVED_START))
    assert TOKENS[RESERVED_START:] == (*EXTRA_TRANSFORMATIONS, *SELECTOR_TOKENS)
    assert len(set(TOKENS)) == len(TOKENS) == FULL_VOCAB_SIZE
    assert {"extend_up", "recolor_red", "carc_rotate_cw"} <= set(EXTRA_TRANSFORMATIONS)


def test_c_arc_and_selector_tokens_sit_at_fixed_positions() -> None:
    """The reserved block starts at 64 whatever the registry holds, so rule codes never move."""
    from vision_bench.tasks.task_code import FULL_VOCAB_SIZE, RESERVED_START, TOKENS

    assert (RESERVED_START, FULL_VOCAB_SIZE) == (64, 101)
    assert [TOKENS.index(name) for name in ("carc_rotate_cw", "recolor_orange", "select:all", "select:color=1",
                                            "select:not")] == [64, 69, 70, 71, 100]


def test_a_transformation_registered_after_codes_are_numbered_is_a_one_line_error() -> None:
    from vision_bench.tasks.grid import GridObject
    from vision_bench.tasks.transformations import Transformation
    from vision_bench.tasks.transformations.base import ANY_OBJECT, register

    saved = {key: dict(value) if isinstance(value, dict) else value for key, value in vars(TRANSFORMATIONS).items()}
    try:
        register(Transformation("late_shift", "one cell down", ANY_OBJECT,
                                lambda obj: GridObject(obj.pixels, obj.top + 1, obj.left)))
        with pytest.raises(UnknownNameError, match="'late_shift' was registered after task codes were numbered") \
                as caught:
            encode_task_code(["late_shift"])
        assert "\n" not in str(caught.value)
    finally:
        vars(TRANSFORMATIONS).clear()
        vars(TRANSFORMATIONS).update(saved)
    assert "late_shift" not in TRANSFORMATIONS


def test_unused_tokens_do_not_decode_as_selectors() -> None:
    from vision_bench.tasks.task_code import decode_rule_code, decode_selector

    with pytest.raises(ConfigError, match="task code token 40 is unused"):
        decode_rule_code([40, 1])
    with pytest.raises(ConfigError, match="task code token 63 is unused"):
        decode_selector([63, 1])


def test_hand_encoded_rule_codes() -> None:
    from vision_bench.tasks.selectors import AllOf, ColorSelector, NearSelector, Not, ShapeSelector
    from vision_bench.tasks.task_code import TOKENS, decode_rule_code

    token = TOKENS.index
    red_plus = AllOf(selectors=(ColorSelector(color=2), ShapeSelector(shape="plus3")))
    assert encode_task_code(["translate_up"], 4, red_plus) == [
        token("select:all_of"), token("select:color=2"), token("select:shape=plus3"), 1]
    three = AllOf(selectors=(ColorSelector(color=1), ColorSelector(color=2), ColorSelector(color=3)))
    assert encode_task_code([], 5, three) == [token("select:all_of"), token("select:color=1"), token("select:all_of"),
                                              token("select:color=2"), token("select:color=3")]
    near = NearSelector(indicator=Not(selector=ShapeSelector(shape=["#.#", "###"])), distance=3)
    code = encode_task_code(["rot90", "extend_up"], 6, near)
    assert code == [token("select:near<=3"), token("select:not"), token("select:shape"), 5, token("extend_up"), 0]
    assert decode_rule_code(code) == (("select:near<=3", "select:not", "select:shape"), ("rot90", "extend_up"))
    with pytest.raises(ConfigError, match="a rule of 5 tokens \\(3 for its selector\\) does not fit a task code of "
                                          "length 4"):
        encode_task_code(["rot90", "rot90"], 4, red_plus)
    with pytest.raises(ConfigError, match="tokens must be integers 0..28"):
        decode_task_code(code)  # a code with a selector is read by decode_rule_code


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(list(TRANSFORMATIONS)), max_size=6), st.integers(1, 9))
def test_decode_rule_code_inverts_encode(names: list[str], color: int) -> None:
    from vision_bench.tasks.selectors import ColorSelector
    from vision_bench.tasks.task_code import decode_rule_code

    code = encode_task_code(names, 8, ColorSelector(color=color))
    assert decode_rule_code(code) == ((f"select:color={color}",), tuple(names))
    assert decode_rule_code(encode_task_code(names, 8)) == ((), tuple(names))
