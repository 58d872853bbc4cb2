"""Image arrays to the tensors items and batches carry: uint8 (H, W, 3) -> float (3, H, W) in [0, 1]."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from render.codec import load


def image_tensor(image: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1).float().div_(255.0)


def batch_tensor(images: np.ndarray) -> torch.Tensor:
    """(N, H, W, 3) uint8 -> contiguous float (N, 3, H, W) in [0, 1]; layout and type change in one pass."""
    channels_first = torch.from_numpy(images).permute(0, 3, 1, 2)
    return channels_first.to(torch.float32, memory_format=torch.contiguous_format).div_(255.0)


def load_image_tensor(source: bytes | str | Path) -> torch.Tensor:
    """Decode a PNG / JPEG file or its bytes (a corrupt or truncated one raises a `UserError`)."""
    return image_tensor(load(source))


__all__ = ["batch_tensor", "image_tensor", "load_image_tensor"]
