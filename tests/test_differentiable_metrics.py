"""SSIM and LPIPS as differentiable functions for a user's own loop: the evaluation's values, and gradients."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from vision_bench.metrics import LpipsLoss, MetricInputError, ssim_differentiable
from vision_bench.metrics.perceptual import LpipsScorer
from vision_bench.metrics.ssim import ssim
from vision_bench.weights import lpips as lpips_weights

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def images(count: int, size: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.rand(count, 3, size, size, generator=torch.Generator().manual_seed(seed), dtype=dtype)


@pytest.mark.parametrize("dtype, tolerance", [(torch.float32, 1e-6), (torch.float64, 1e-12)])
def test_ssim_equals_the_evaluations(dtype: torch.dtype, tolerance: float) -> None:
    pred, target = images(4, 40, 0, dtype), images(4, 40, 1, dtype)
    close = (target + 0.05 * pred).clamp(0, 1)  # similar images too, not only unrelated noise
    for a, b in ((pred, target), (close, target), (target, target)):
        torch.testing.assert_close(ssim_differentiable(a, b), ssim(a, b), atol=tolerance, rtol=0)
    assert torch.allclose(ssim_differentiable(target, target), torch.ones(4, dtype=dtype))


def test_ssim_gradients_are_right_and_climb() -> None:
    """torch's finite-difference check in float64; a few gradient steps from noise raise SSIM to the target."""
    target = images(1, 12, 2, torch.float64)
    pred = images(1, 12, 3, torch.float64).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda x: ssim_differentiable(x, target), (pred,))
    start = images(2, 24, 4).requires_grad_(True)
    goal = images(2, 24, 5)
    optimizer = torch.optim.Adam([start], lr=0.05)
    scores = []
    for _ in range(20):
        score = ssim_differentiable(start, goal)
        scores.append(float(score.mean().detach()))
        optimizer.zero_grad()
        (1 - score).mean().backward()
        optimizer.step()
    assert scores[-1] > scores[0] + 0.3, scores


def test_ssim_refuses_small_images() -> None:
    with pytest.raises(MetricInputError, match="at least 11x11 pixels, got 8x8"):
        ssim_differentiable(images(1, 8, 0), images(1, 8, 1))


def test_lpips_loss_equals_the_evaluation_and_passes_gradients(random_lpips_weights: Path) -> None:
    loss = LpipsLoss("alex").train()
    assert not loss.network.training and not any(p.requires_grad for p in loss.parameters())
    pred, target = images(3, 64, 6).requires_grad_(True), images(3, 64, 7)
    values = loss(pred, target)
    with torch.no_grad():
        expected = LpipsScorer(loss.network)(pred.detach(), target)
    torch.testing.assert_close(values.detach(), expected, atol=1e-6, rtol=0)
    assert values.shape == (3,) and torch.equal(loss(target, target), torch.zeros(3))
    values.sum().backward()
    assert pred.grad is not None and bool(pred.grad.abs().sum() > 0)
    assert all(p.grad is None for p in loss.parameters())


def test_lpips_loss_without_weights_names_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VISION_BENCH_WEIGHTS", str(tmp_path / "empty"))
    with pytest.raises(lpips_weights.WeightsProblem, match="vision-bench weights get lpips"):
        LpipsLoss("alex")


def test_ssim_equals_torchmetrics_once_the_border_convention_is_the_same() -> None:
    """torchmetrics' SSIM pads each image by reflection (5 pixels, half the 11-tap window) and averages the map over
    the whole image; the project's, like scikit-image's, averages over the windows that fit inside it. On the
    reflect-padded images the two are the same number (measured 1e-16 in float64); on the images themselves they
    differ only by the border windows."""
    functional = pytest.importorskip("torchmetrics.functional.image")
    generator = torch.Generator().manual_seed(0)
    pred = torch.rand(3, 3, 24, 40, generator=generator, dtype=torch.float64)
    target = (pred + 0.2 * torch.randn(pred.shape, generator=generator, dtype=torch.float64)).clamp(0, 1)
    theirs = functional.structural_similarity_index_measure(pred, target, data_range=1.0, reduction="none")
    padded = [torch.nn.functional.pad(image, (5, 5, 5, 5), mode="reflect") for image in (pred, target)]
    torch.testing.assert_close(ssim_differentiable(*padded), theirs, rtol=0, atol=1e-12)
    assert (ssim_differentiable(pred, target) - theirs).abs().max() > 1e-4  # the conventions do differ
