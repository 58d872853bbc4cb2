"""Seeds read from a sample's own tensors, so that a model's random draws at prediction time do not depend on the
batch the sample is in, its place there, or what ran before (PL-TF's halting, SSM-Slot's initial slots)."""

from __future__ import annotations

import hashlib

import torch


def tensor_seed(salt: int, *tensors: torch.Tensor | None) -> int:
    """A 63-bit seed: blake2b (8 bytes) of `salt` (8 bytes, little-endian) and the bytes of each tensor as it is
    (dtype and C order; the caller picks the dtype), skipping None. The same values give the same seed on any
    device."""
    digest = hashlib.blake2b(salt.to_bytes(8, "little"), digest_size=8)
    for tensor in tensors:
        if tensor is not None:
            digest.update(tensor.detach().cpu().numpy().tobytes())
    return int.from_bytes(digest.digest(), "little") >> 1


__all__ = ["tensor_seed"]
