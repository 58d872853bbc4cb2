"""Task codes: a rule (selector + transformation sequence) as a fixed-length list of integer tokens.

The vocabulary (`TOKENS`, token = position) is, in order:

- 0: the identity (padding);
- 1 .. 28: COGITAO's transformations in the order of its reference table;
- then any transformation registered after COGITAO's 28 (at import, as the package's own are), in
  registration order; `VOCAB_SIZE = 1 + len(TRANSFORMATIONS)` counts these tokens (29 with
  COGITAO's alone) and is what `task_conditioning: true` means;
- from `RESERVED_START` (64) on, a block whose tokens do not depend on how many transformations
  are registered: Compositional-ARC's transformations that COGITAO lacks (`EXTRA_TRANSFORMATIONS`,
  from `transformations.carc`: `carc_rotate_cw`, `carc_rotate_ccw`, `extend_up`, `extend_left`,
  `recolor_red`, `recolor_orange`), which live in a registry view of their own, then the selector
  tokens (`SELECTOR_TOKENS`): `select:all`, `select:color=1..9`, `select:shape=NAME` for each named
  shape of `selectors.SHAPES`, `select:shape` (an unnamed shape), `select:near<=1..MAX_NEAR_DISTANCE`,
  `select:all_of`, `select:any_of`, `select:not`.

Tokens VOCAB_SIZE .. RESERVED_START - 1 are unused (`reserved:N`), room for further
transformations. `FULL_VOCAB_SIZE = len(TOKENS)` (101): the vocabulary a model conditioned on
rule codes needs; it stays the same whichever extensions are registered.

A code without a selector is the transformation tokens in order, padded with the identity token
(a depth-2 sequence ["rot90", "pad_top"] of length 4 encodes as [5, 19, 0, 0]): COGITAO's studies,
where every object is transformed, keep exactly these codes. A code with a selector puts the
selector first, in prefix notation (an operator token, then its operands; `all_of` / `any_of` of
k > 2 selectors nest to the right as k - 1 binary operators), then the transformation tokens:
`color=2 AND shape=plus3 -> translate_up` is [all_of, color=2, shape=plus3, translate_up, 0, ...].
Since selector and transformation tokens never overlap, no separator is needed. The code length
is set per study (`TaskConfig.task_code_length`, default `TASK_CODE_LENGTH`).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any

from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.tasks.selectors import (
    MAX_NEAR_DISTANCE,
    SHAPES,
    AllObjects,
    AllOf,
    AnyOf,
    ColorSelector,
    NearSelector,
    Not,
    ShapeSelector,
    shape_name,
)
from vision_bench.tasks.transformations import TRANSFORMATIONS, resolve_sequence
from vision_bench.tasks.transformations.carc import CARC_TRANSFORMATIONS

IDENTITY_TOKEN = 0
COGITAO_TRANSFORMATIONS = 28
"""COGITAO's transformations: the first 28 of the registry."""
VOCAB_SIZE = 1 + len(TRANSFORMATIONS)
"""The identity and every transformation of the registry (COGITAO's 28 first, then extensions)."""
RESERVED_START = 64
"""The first token of the C-ARC and selector block: fixed, so those codes never depend on the registry."""
TASK_CODE_LENGTH = 4
MAX_TASK_CODE_LENGTH = 32

SELECTOR_TOKENS: tuple[str, ...] = (
    "select:all",
    *(f"select:color={color}" for color in range(1, 10)),
    *(f"select:shape={name}" for name in SHAPES),
    "select:shape",
    *(f"select:near<={distance}" for distance in range(1, MAX_NEAR_DISTANCE + 1)),
    "select:all_of",
    "select:any_of",
    "select:not",
)
EXTRA_TRANSFORMATIONS: tuple[str, ...] = tuple(
    name for name in CARC_TRANSFORMATIONS if name not in TRANSFORMATIONS.names()[:COGITAO_TRANSFORMATIONS])
"""C-ARC's transformations that COGITAO lacks: task codes name them at fixed tokens from `RESERVED_START`."""
if VOCAB_SIZE > RESERVED_START:
    raise ConfigError(f"{VOCAB_SIZE - 1} transformations are registered, task codes number at most "
                      f"{RESERVED_START - 1}; raise task_code.RESERVED_START")
TOKENS: tuple[str, ...] = (
    "identity", *TRANSFORMATIONS, *(f"reserved:{token}" for token in range(VOCAB_SIZE, RESERVED_START)),
    *EXTRA_TRANSFORMATIONS, *SELECTOR_TOKENS,
)
FULL_VOCAB_SIZE = len(TOKENS)

_TOKEN_OF = {name: token for token, name in enumerate(TOKENS)}
_TRANSFORMATION_TOKENS = (*range(1, VOCAB_SIZE), *range(RESERVED_START, RESERVED_START + len(EXTRA_TRANSFORMATIONS)))


def transformation_tokens(names: Iterable[str]) -> list[int]:
    """The tokens of transformation names (the registry's and `EXTRA_TRANSFORMATIONS`); an unknown name raises
    `UnknownNameError` with close matches."""
    if isinstance(names, (str, bytes)):
        resolve_sequence(names)  # raises: a bare string
    tokens = []
    for name in names:
        if not (isinstance(name, str) and name in EXTRA_TRANSFORMATIONS):
            name = resolve_sequence([name])[0].name
        if name not in _TOKEN_OF:
            raise UnknownNameError(
                f"transformation {name!r} was registered after task codes were numbered; register it when its "
                "family module is imported (transformations/registry.py MODULES)")
        tokens.append(_TOKEN_OF[name])
    return tokens


def selector_tokens(selector: Any) -> list[int]:
    """The tokens of a selector in prefix notation (see the module docstring)."""
    if isinstance(selector, AllObjects):
        return [_TOKEN_OF["select:all"]]
    if isinstance(selector, ColorSelector):
        return [_TOKEN_OF[f"select:color={selector.color}"]]
    if isinstance(selector, ShapeSelector):
        name = shape_name(selector.shape)
        return [_TOKEN_OF["select:shape" if name is None else f"select:shape={name}"]]
    if isinstance(selector, NearSelector):
        return [_TOKEN_OF[f"select:near<={selector.distance}"], *selector_tokens(selector.indicator)]
    if isinstance(selector, Not):
        return [_TOKEN_OF["select:not"], *selector_tokens(selector.selector)]
    if isinstance(selector, (AllOf, AnyOf)):
        tokens: list[int] = []
        for part in selector.selectors[:-1]:
            tokens += [_TOKEN_OF[f"select:{selector.kind}"], *selector_tokens(part)]
        return tokens + selector_tokens(selector.selectors[-1])
    raise ConfigError(f"unknown selector {selector!r}; task codes name selectors of vision_bench.tasks.selectors")


def encode_task_code(names: Iterable[str], length: int = TASK_CODE_LENGTH, selector: Any = None) -> list[int]:
    """Tokens of `selector` (if given) then of `names` in order, padded with `IDENTITY_TOKEN` to `length`."""
    steps = transformation_tokens(names)
    tokens = [] if selector is None else selector_tokens(selector)
    tokens += steps
    if len(tokens) > length:
        what = (f"a sequence of {len(steps)} transformations" if selector is None else
                f"a rule of {len(tokens)} tokens ({len(tokens) - len(steps)} for its selector)")
        raise ConfigError(
            f"{what} does not fit a task code of length {length}; use at most {length} "
            f"{'transformations' if selector is None else 'tokens'} or a longer task code"
        )
    return tokens + [IDENTITY_TOKEN] * (length - len(tokens))


def _token_values(tokens: Iterable[int], vocab_size: int) -> list[int]:
    """The tokens as integers, or `ConfigError` naming the first one outside 0..vocab_size - 1."""
    values = []
    for position, token in enumerate(tokens):
        try:
            value = operator.index(token)
        except TypeError:
            raise ConfigError(
                f"task code token {position} is {token!r}; tokens must be integers 0..{vocab_size - 1}"
            ) from None
        if not 0 <= value < vocab_size:
            raise ConfigError(
                f"task code token {position} is {value}; tokens must be integers 0..{vocab_size - 1} "
                f"({IDENTITY_TOKEN} = identity)"
            )
        values.append(value)
    return values


def _rule_values(tokens: Iterable[int]) -> list[int]:
    """The non-identity tokens of a rule code, or `ConfigError` naming one in the unused range."""
    values = [value for value in _token_values(tokens, FULL_VOCAB_SIZE) if value]
    unused = [value for value in values if VOCAB_SIZE <= value < RESERVED_START]
    if unused:
        raise ConfigError(f"task code token {unused[0]} is unused; transformations are 1..{VOCAB_SIZE - 1}, "
                          f"C-ARC's and the selectors {RESERVED_START}..{FULL_VOCAB_SIZE - 1}")
    return values


def decode_task_code(tokens: Iterable[int]) -> tuple[str, ...]:
    """The transformation names of a code without a selector, in order; identity tokens (wherever they are)
    are skipped. Codes with a selector are read by `decode_rule_code`.

    Accepts any iterable of integers, including numpy arrays and integer tensors.
    """
    return tuple(TOKENS[value] for value in _token_values(tokens, VOCAB_SIZE) if value)


def decode_selector(tokens: Iterable[int]) -> Any:
    """The selector at the start of a task code (None when the code has none), read back from its prefix
    notation; `all_of` / `any_of` come back nested in pairs, which pick the same objects. An unnamed
    shape's token does not say which shape, so it raises `ConfigError`."""
    values = _rule_values(tokens)
    if not values or values[0] in _TRANSFORMATION_TOKENS:
        return None
    position = 0

    def read() -> Any:
        nonlocal position
        if position >= len(values) or values[position] in _TRANSFORMATION_TOKENS:
            raise ConfigError(f"task code {values}: a selector ends early at token {position}")
        name = TOKENS[values[position]].removeprefix("select:")
        position += 1
        kind, _, value = name.partition("=")
        if name == "all":
            return AllObjects()
        if kind == "color":
            return ColorSelector(color=int(value))
        if kind == "shape":
            if not value:
                raise ConfigError("task code names an unnamed shape; only shapes of selectors.SHAPES decode")
            return ShapeSelector(shape=SHAPES[value])
        if kind == "near<":
            return NearSelector(distance=int(value), indicator=read())
        if kind == "not":
            return Not(selector=read())
        first = read()
        return (AllOf if kind == "all_of" else AnyOf)(selectors=(first, read()))

    return read()


def decode_rule_code(tokens: Iterable[int]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(selector token names, transformation names) of any task code, each in order, identity tokens skipped."""
    values = _rule_values(tokens)
    return (tuple(TOKENS[value] for value in values if value not in _TRANSFORMATION_TOKENS),
            tuple(TOKENS[value] for value in values if value in _TRANSFORMATION_TOKENS))
