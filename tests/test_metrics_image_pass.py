"""The one-pass CPU computation of SSIM and the pixel sums gives what the separate functions give."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vision_bench.metrics import MetricInputError, compute_metrics
from vision_bench.metrics.image_pass import image_statistics
from vision_bench.metrics.pixel import pixel_errors
from vision_bench.metrics.ssim import ssim


def grid_like_batch(batch: int, size: int, dtype: torch.dtype, seed: int) -> tuple[torch.Tensor, ...]:
    """(pred, target, input): blocky palette-like images, the prediction with a little noise."""
    generator = torch.Generator().manual_seed(seed)
    cells = torch.randint(0, 3, (3, batch, 1, size // 4, size // 4), generator=generator).to(dtype) / 2
    pred, target, inputs = cells.repeat_interleave(4, -1).repeat_interleave(4, -2).expand(-1, -1, 3, -1, -1).clone()
    pred = (pred + 0.03 * torch.randn(pred.shape, generator=generator, dtype=dtype)).clamp(0, 1)
    return pred, target, inputs


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("extras", ["none", "input", "input_background", "mask"])
def test_one_pass_equals_the_separate_functions_bit_for_bit(threads: int, dtype: torch.dtype, extras: str) -> None:
    pred, target, inputs = grid_like_batch(7, 24, dtype, seed=3)
    options: dict = {}
    if extras != "none":
        options["input"] = inputs
    if extras == "input_background":
        options["background"] = torch.ones(7, 3, 1, 1, dtype=dtype)
    if extras == "mask":
        options["foreground_mask"] = target[:, 0] > 0
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        fused = image_statistics(pred, target, **options)
        separate = pixel_errors(pred, target, **options)
        alone = ssim(pred, target)
    finally:
        torch.set_num_threads(previous)
    torch.testing.assert_close(fused.ssim, alone, atol=0, rtol=0)
    assert fused.pixel_errors.pixels == separate.pixels
    torch.testing.assert_close(fused.pixel_errors.total, separate.total, atol=0, rtol=0)
    for name in ("foreground", "changed"):
        ours, theirs = getattr(fused.pixel_errors, name), getattr(separate, name)
        assert (ours is None) == (theirs is None)
        if ours is not None:
            torch.testing.assert_close(list(ours), list(theirs), atol=0, rtol=0)


def test_compute_metrics_reads_one_pass_for_ssim_and_the_pixel_metrics() -> None:
    pred, target, inputs = grid_like_batch(5, 16, torch.float32, seed=4)
    together = compute_metrics(pred, target, inputs, background_rgb=(0, 0, 0),
                               names=["ssim", "mse", "psnr", "fg_mse", "changed_mse"])
    for name in together:
        alone = compute_metrics(pred, target, inputs, background_rgb=(0, 0, 0), names=[name])
        torch.testing.assert_close(together[name], alone[name], atol=0, rtol=0, equal_nan=True)


def test_only_what_is_asked_for_is_computed() -> None:
    pred, target, _ = grid_like_batch(2, 16, torch.float32, seed=5)
    assert image_statistics(pred, target, ssim=False).ssim is None
    assert image_statistics(pred, target, pixels=False).pixel_errors is None



@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("batch", "value", "message"), [
    ("pred_images", 1.5, r"pred_images: values span \[0, 1.5\]"),
    ("target_images", float("nan"), "target_images: values span"),
    ("input_images", -0.25, r"input_images: values span \[-0.25, 1\]"),
])
def test_the_one_pass_checks_every_image_batch_range(threads: int, batch: str, value: float, message: str) -> None:
    """A bad value in the last chunk is found, and the error names the batch it is in."""
    pred, target, inputs = grid_like_batch(9, 16, torch.float32, seed=6)
    images = {"pred_images": pred, "target_images": target, "input_images": inputs}
    images[batch][-1, 1, 3, 4] = value
    images[batch][0, 0, 0, 0], images[batch][0, 0, 0, 1] = 0.0, 1.0
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with pytest.raises(MetricInputError, match=message):
            compute_metrics(images["pred_images"], images["target_images"], images["input_images"],
                            names=["ssim", "mse", "changed_mse"])
    finally:
        torch.set_num_threads(previous)


def test_ssim_leaves_its_maps_alone_and_each_call_gets_its_own() -> None:
    """No shared scratch memory: the squared-error map that the pixel sums read stays the squared
    error after SSIM is computed from it, and a second chunk's maps do not overwrite the first's."""
    from vision_bench.metrics.ssim import difference_maps, gaussian_window, ssim_of_maps

    generator = torch.Generator().manual_seed(5)
    a, b, c, d = (torch.rand(2, 3, 16, 16, generator=generator).numpy() for _ in range(4))
    first = difference_maps(a, b, 1.0)
    second = difference_maps(c, d, 1.0)
    values = ssim_of_maps(first, gaussian_window().numpy(), 1.0)
    assert not np.shares_memory(first, second)
    np.testing.assert_array_equal(first[3], np.square(a - b))
    torch.testing.assert_close(torch.from_numpy(values), ssim(torch.from_numpy(a), torch.from_numpy(b)),
                               atol=0, rtol=0)
