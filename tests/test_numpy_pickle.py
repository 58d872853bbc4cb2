"""The numpy-only unpickler: nested dicts of numeric arrays (numpy 1 or 2 names) and nothing else;
no pickled code ever runs."""

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from vision_bench.weights.numpy_pickle import UnsafePickleError, load_numpy_pickle


class Payload:
    """A pickle that would create `marker` when unpickled by a plain `pickle.load`."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (Path.touch, (self.marker,))


def test_numpy_unpickler_reads_nested_arrays_and_numpy1_names() -> None:
    tree = {"a": {"kernel": np.arange(6, dtype=np.float32).reshape(2, 3)}, "b": np.ones(2, np.int64)}
    data = pickle.dumps(tree, protocol=3)
    assert b"numpy._core.multiarray" in data or b"numpy.core.multiarray" in data
    numpy1 = data.replace(b"numpy._core.multiarray", b"numpy.core.multiarray")  # as numpy 1 wrote it
    for blob in (data, numpy1):
        loaded = load_numpy_pickle(blob, "test")
        np.testing.assert_array_equal(loaded["a"]["kernel"], tree["a"]["kernel"])
        assert loaded["b"].dtype == np.int64


@pytest.mark.parametrize("make", [
    lambda marker: pickle.dumps({"features.0.weight": Payload(marker)}, protocol=3),
    lambda marker: pickle.dumps({"x": np.array([1, "a"], dtype=object)}, protocol=3),
    lambda marker: pickle.dumps([np.zeros(2)], protocol=3),
    lambda marker: pickle.dumps({"x": 1.5}, protocol=3),
    lambda marker: pickle.dumps({"x": np.zeros(2)}, protocol=3)[:-5],
    lambda marker: pickle.dumps({"x": torch.zeros(2)}, protocol=3),
], ids=["code", "object-array", "list", "float", "truncated", "torch-tensor"])
def test_numpy_unpickler_refuses_anything_but_numeric_arrays(tmp_path: Path, make) -> None:
    marker = tmp_path / "ran"
    with pytest.raises(UnsafePickleError):
        load_numpy_pickle(make(marker), "evil.ckpt")
    assert not marker.exists()
