"""The torch backend draws the numpy renderer's pixels / 255 on the grids' device; `import render` stays torch-free."""

from __future__ import annotations

import os
import subprocess
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import pytest
import torch

from render import GridError, RenderSpec, SpecError, render_batch
from render.torch_backend import render_grids


def padded(grids: list[np.ndarray]) -> torch.Tensor:
    """Grids padded with -1 to the largest height and width, as the data collate function does."""
    height, width = max(g.shape[0] for g in grids), max(g.shape[1] for g in grids)
    batch = torch.full((len(grids), height, width), -1, dtype=torch.long)
    for i, grid in enumerate(grids):
        batch[i, : grid.shape[0], : grid.shape[1]] = torch.from_numpy(grid)
    return batch


@pytest.fixture(scope="module")
def grids() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    return [rng.integers(0, 10, (rng.integers(1, 13), rng.integers(1, 13))) for _ in range(12)]


EXACT_SPECS = [
    RenderSpec(size=(48, 40)),
    RenderSpec(size=(48, 48), layout="fit", gridlines=True, background="random"),
    RenderSpec(size=(40, 48), layout="cell:3:bottom-left", background="black", antialias=3),
    RenderSpec(size=(48, 48), jitter={"max_shift": 5, "scale": [0.7, 1.4]}, background="random", antialias=2),
    RenderSpec(size=(48, 48), blur="box:5", antialias=2, palette="c-arc"),
]


@pytest.mark.parametrize("spec", EXACT_SPECS, ids=lambda s: f"{s.layout.mode}-{s.background}-aa{s.antialias}")
def test_equals_numpy_render_exactly_without_gaussian_blur(grids: list[np.ndarray], spec: RenderSpec) -> None:
    seeds = [5 * i + 1 for i in range(len(grids))]
    expected = torch.from_numpy(render_batch(grids, spec, seeds).astype(np.float32) / 255).permute(0, 3, 1, 2)
    images = render_grids(padded(grids), spec, seeds=seeds)
    assert images.dtype == torch.float32 and images.shape == (len(grids), 3, *spec.size)
    assert torch.equal(images, expected)


@pytest.mark.parametrize("blur", ["gaussian:0.8", "gaussian:1.5", "gaussian:6"])
def test_gaussian_blur_within_one_level(grids: list[np.ndarray], blur: str) -> None:
    spec = RenderSpec(size=(32, 32), blur=blur, background="random")
    expected = torch.from_numpy(render_batch(grids, spec).astype(np.float32) / 255).permute(0, 3, 1, 2)
    difference = (render_grids(padded(grids), spec) - expected).abs().max().item()
    assert difference <= 1 / 255 + 1e-6


def test_result_stays_on_the_grids_device_and_defaults_seeds_like_render_batch(grids: list[np.ndarray]) -> None:
    spec = RenderSpec(size=(16, 16), background="random")
    batch = padded(grids[:3]).to(torch.int16)
    images = render_grids(batch, spec)
    assert images.device == batch.device
    assert torch.equal(images, render_grids(padded(grids[:3]), spec, seeds=[0, 1, 2]))
    assert render_grids(batch[:0], spec).shape == (0, 3, 16, 16)


@pytest.mark.parametrize(
    ("batch", "message"),
    [
        (torch.tensor([[[1, -1], [-1, 2]]]), "grids\\[0\\]: not a top-left-aligned grid"),
        (torch.tensor([[[-1, -1]]]), "grids\\[0\\]"),
        (torch.tensor([[[1, 12]]]), "values must be 0-9"),
        (torch.tensor([[1.0, 2.0]]), "integer tensor"),
    ],
)
def test_malformed_padding_is_a_grid_error(batch: torch.Tensor, message: str) -> None:
    with pytest.raises(GridError, match=message):
        render_grids(batch, RenderSpec(size=(8, 8)))


def test_seed_count_must_match() -> None:
    with pytest.raises(SpecError, match="2 grids but 1 seeds"):
        render_grids(torch.zeros((2, 2, 2), dtype=torch.long), RenderSpec(size=(8, 8)), seeds=[1])


def test_import_render_does_not_import_torch() -> None:
    code = "import render, render.decode, sys; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
