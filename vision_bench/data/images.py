"""Image arrays to the tensors items and batches carry: uint8 (H, W, 3) -> float (3, H, W) in [0, 1]; and
images made elsewhere brought to the models' square (`fit_square`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

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


RESIZE_MODES = ("refuse", "pad", "resize")
"""What `dataset.resize` does with images made elsewhere that are not the run's square: refuse them (the default),
letterbox them on black (`pad`) or stretch them (`resize`)."""


def fit_square(image: torch.Tensor, side: int, mode: str) -> torch.Tensor:
    """A (3, H, W) image as (3, side, side). `pad`: scaled (bilinear, antialiased) so that its longer side is
    `side`, then centred on black (zeros; an odd margin's extra row or column goes to the bottom or right);
    `resize`: stretched to side x side. An image already side x side is returned as it is."""
    height, width = int(image.shape[1]), int(image.shape[2])
    if (height, width) == (side, side):
        return image
    if mode == "resize":
        return _scaled(image, side, side)
    scale = side / max(height, width)
    rows, columns = max(1, round(height * scale)), max(1, round(width * scale))
    inner = image if (rows, columns) == (height, width) else _scaled(image, rows, columns)
    top, left = (side - rows) // 2, (side - columns) // 2
    square = image.new_zeros((image.shape[0], side, side))
    square[:, top:top + rows, left:left + columns] = inner
    return square


def _scaled(image: torch.Tensor, rows: int, columns: int) -> torch.Tensor:
    scaled = F.interpolate(image[None], size=(rows, columns), mode="bilinear", antialias=True, align_corners=False)
    return scaled[0].clamp_(0.0, 1.0)


__all__ = ["RESIZE_MODES", "batch_tensor", "fit_square", "image_tensor", "load_image_tensor"]
