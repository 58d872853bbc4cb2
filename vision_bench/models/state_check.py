"""Does a file's state dict fit a model? One line naming the first missing, unexpected, wrong-shape and
wrong-dtype keys.

`nn.Module.load_state_dict` reports a mismatch as a long multi-line error, and timm loads
weights non-strictly (a resnet34 file fills a resnet18 with only a logged warning). Every place
that loads weights from a user's file (a run's checkpoint, an exported model, a timm weights
file) compares first and refuses a mismatch with `StateMismatch.describe()`. Dtypes are compared too:
`load_state_dict` would cast an int64 tensor into a float weight without a word.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import torch

SHOWN_KEYS = 3


@dataclass(frozen=True)
class StateMismatch:
    """Keys the model has and the file lacks, keys the file has and the model lacks, tensors of another shape
    or dtype."""

    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    wrong_shape: list[str] = field(default_factory=list)
    wrong_dtype: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.missing or self.unexpected or self.wrong_shape or self.wrong_dtype)

    def describe(self) -> str:
        """'2 missing (a, b), 1 unexpected (c), 1 of another shape (d: file (3,), model (4,)),
        1 of another dtype (e: file int64, model float32)'."""
        parts = [
            _listed(self.missing, "missing"),
            _listed(self.unexpected, "unexpected"),
            _listed(self.wrong_shape, "of another shape"),
            _listed(self.wrong_dtype, "of another dtype"),
        ]
        return ", ".join(part for part in parts if part)


def compare_state(model_state: Mapping[str, torch.Tensor], file_state: Mapping[str, torch.Tensor],
                  *, ignored: Iterable[str] = (), check_shapes: bool = True,
                  check_dtypes: bool = True) -> StateMismatch:
    """How `file_state` differs from `model_state` (keys in `ignored` may be absent from or extra in the file).

    `check_dtypes=False` still refuses a tensor of another kind (an integer or bool tensor for a float weight,
    or the reverse) but lets a float file of another precision in (timm's half-precision weights files).
    """
    ignored = set(ignored)
    wrong_shape = []
    if check_shapes:
        wrong_shape = [
            f"{key}: file {tuple(value.shape)}, model {tuple(model_state[key].shape)}"
            for key, value in file_state.items()
            if key in model_state and tuple(value.shape) != tuple(model_state[key].shape)
        ]
    wrong_dtype = [
        f"{key}: file {_dtype(value)}, model {_dtype(model_state[key])}"
        for key, value in file_state.items()
        if key in model_state and _differs(value.dtype, model_state[key].dtype, exact=check_dtypes)
    ]
    return StateMismatch(
        missing=[key for key in model_state if key not in file_state and key not in ignored],
        unexpected=[key for key in file_state if key not in model_state and key not in ignored],
        wrong_shape=wrong_shape,
        wrong_dtype=wrong_dtype,
    )


def _differs(file: torch.dtype, model: torch.dtype, *, exact: bool) -> bool:
    if exact:
        return file != model
    return (file.is_floating_point, file.is_complex) != (model.is_floating_point, model.is_complex)


def _dtype(tensor: torch.Tensor) -> str:
    return str(tensor.dtype).removeprefix("torch.")


def _listed(keys: list[str], what: str) -> str:
    if not keys:
        return ""
    more = f", ... {len(keys) - SHOWN_KEYS} more" if len(keys) > SHOWN_KEYS else ""
    return f"{len(keys)} {what} ({', '.join(keys[:SHOWN_KEYS])}{more})"


__all__ = ["SHOWN_KEYS", "StateMismatch", "compare_state"]
