"""Does a file's state dict fit a model? One line naming the first missing, unexpected, wrong-shape and
wrong-dtype keys; and whether a file's weights belong to a model that was renamed.

`nn.Module.load_state_dict` reports a mismatch as a long multi-line error, and timm loads
weights non-strictly (a resnet34 file fills a resnet18 with only a logged warning). Every place
that loads weights from a user's file (a run's checkpoint, an exported model, a timm weights
file) compares first and refuses a mismatch with `StateMismatch.describe()`. Dtypes are compared too:
`load_state_dict` would cast an int64 tensor into a float weight without a word. Weights saved under
a model name that now names another model are told apart by a key only the old model has
(`renamed_weights`), so that loading them says so rather than listing a hundred mismatched keys.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

import torch

SHOWN_KEYS = 3
RENAMED_WEIGHTS = {
    "svib:oracle": ("encoder.colors.weight", "svib:cell-oracle",
                    "svib:oracle is now SVIB's Oracle, which reads each object's factors"),
}
"""Model names that now name another model -> (a weight only the old model has, the old model's new name, what
the name means now)."""


def renamed_weights(name: str, keys: Collection[str]) -> str | None:
    """Why weights with `keys`, saved for the model `name`, belong to a renamed model (`RENAMED_WEIGHTS`); None
    when they do not."""
    if name not in RENAMED_WEIGHTS:
        return None
    key, new_name, meaning = RENAMED_WEIGHTS[name]
    if key not in keys:
        return None
    return f"these weights are of the model called {name} before it was renamed {new_name} ({meaning})"


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


__all__ = ["RENAMED_WEIGHTS", "SHOWN_KEYS", "StateMismatch", "compare_state", "renamed_weights"]
