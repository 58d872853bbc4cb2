"""Read pickled numpy arrays without running any code a pickle names.

`pickle.load` calls whatever callables a file names, so a planted file runs its code. This reader
admits exactly what a pickle of plain numeric numpy arrays in nested dicts needs (numpy's
`_reconstruct`, `ndarray` and `dtype`) and refuses every other global. Pickles written by numpy 1
name `numpy.core.multiarray._reconstruct`, which numpy 2 moved to `numpy._core`; both map to the
installed one. Every leaf must be a numeric array: object arrays are refused.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Mapping
from typing import Any

import numpy as np

from vision_bench.errors import UserError

_RECONSTRUCT = np.ndarray.__reduce__(np.zeros(1))[0]  # numpy's own array-reconstruction function
_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy._core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
}

ArrayTree = dict[str, "ArrayTree | np.ndarray"]
"""Nested dicts of numeric arrays, as the pickles read here hold them."""


class UnsafePickleError(UserError):
    """A pickle that names something other than numpy array reconstruction, or holds non-numeric data."""


class _NumpyOnlyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise UnsafePickleError(f"refused to unpickle {module}.{name}: only numpy arrays are read") from None

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickleError("refused a pickle with persistent references: only numpy arrays are read")


def load_numpy_pickle(data: bytes, source: str) -> ArrayTree:
    """The nested dict of numeric arrays pickled in `data`; `source` names the file in errors."""
    try:
        tree = _NumpyOnlyUnpickler(io.BytesIO(data)).load()
    except UnsafePickleError as error:
        raise UnsafePickleError(f"{source}: {error}") from None
    except Exception as error:  # a truncated or garbled pickle
        raise UnsafePickleError(f"{source}: not a readable pickle of numpy arrays ({type(error).__name__})") from None
    if not isinstance(tree, Mapping):
        raise UnsafePickleError(f"{source}: expected a dict of numpy arrays, found {type(tree).__name__}")
    _check_leaves(tree, source, "")
    return dict(tree)


def _check_leaves(tree: Mapping[Any, Any], source: str, prefix: str) -> None:
    for key, value in tree.items():
        path = f"{prefix}/{key}" if prefix else str(key)
        if not isinstance(key, str):
            raise UnsafePickleError(f"{source}: non-string key {key!r}")
        if isinstance(value, Mapping):
            _check_leaves(value, source, path)
        elif not isinstance(value, np.ndarray) or value.dtype.kind not in "fiu":
            raise UnsafePickleError(f"{source}: {path} is {type(value).__name__}, not a numeric array")


def flatten(tree: Mapping[str, ArrayTree | np.ndarray], prefix: str = "") -> dict[str, np.ndarray]:
    """{'a': {'b': x}} -> {'a/b': x}."""
    flat: dict[str, np.ndarray] = {}
    for key, value in tree.items():
        path = f"{prefix}/{key}" if prefix else key
        if isinstance(value, Mapping):
            flat.update(flatten(value, path))
        else:
            flat[path] = value
    return flat
