"""Task codes: a transformation sequence as a fixed-length list of integer tokens for the model.

Token 0 is the identity (padding); token 1 + i is the i-th transformation of `TRANSFORMATIONS`
(the order of the reference table), so a depth-2 sequence ["rot90", "pad_top"] of length 4
encodes as [5, 19, 0, 0].
"""

from __future__ import annotations

import operator
from collections.abc import Iterable

from vision_bench.errors import ConfigError
from vision_bench.tasks.transformations import TRANSFORMATIONS, resolve_sequence

IDENTITY_TOKEN = 0
VOCAB_SIZE = 1 + len(TRANSFORMATIONS)
TASK_CODE_LENGTH = 4

_TOKEN_OF_NAME = {name: token for token, name in enumerate(TRANSFORMATIONS, start=1)}
_NAME_OF_TOKEN = {token: name for name, token in _TOKEN_OF_NAME.items()}


def encode_task_code(names: Iterable[str], length: int = TASK_CODE_LENGTH) -> list[int]:
    """Tokens of `names` in order, padded with `IDENTITY_TOKEN` to `length`."""
    transformations = resolve_sequence(names)
    if len(transformations) > length:
        raise ConfigError(
            f"a sequence of {len(transformations)} transformations does not fit a task code of length "
            f"{length}; use at most {length} transformations or a longer task code"
        )
    tokens = [_TOKEN_OF_NAME[t.name] for t in transformations]
    return tokens + [IDENTITY_TOKEN] * (length - len(tokens))


def decode_task_code(tokens: Iterable[int]) -> tuple[str, ...]:
    """The transformation names of a task code, in order; identity tokens (wherever they are) are skipped.

    Accepts any iterable of integers, including numpy arrays and integer tensors.
    """
    names = []
    for position, token in enumerate(tokens):
        try:
            value = operator.index(token)
        except TypeError:
            raise ConfigError(
                f"task code token {position} is {token!r}; tokens must be integers 0..{VOCAB_SIZE - 1}"
            ) from None
        if value == IDENTITY_TOKEN:
            continue
        if value not in _NAME_OF_TOKEN:
            raise ConfigError(
                f"task code token {position} is {value}; tokens must be integers 0..{VOCAB_SIZE - 1} "
                f"({IDENTITY_TOKEN} = identity)"
            )
        names.append(_NAME_OF_TOKEN[value])
    return tuple(names)
