"""Pixel metrics and SSIM: hand-computed values, scikit-image agreement, laws."""

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from skimage.metrics import structural_similarity

from vision_bench.metrics import MetricInputError, compute_metrics, pixel, summarize
from vision_bench.metrics import ssim as ssim_module
from vision_bench.metrics.ssim import ssim

WHITE, RED, BLUE, BLACK = (1.0, 1.0, 1.0), (1.0, 0.0, 0.0), (0.0, 0.0, 1.0), (0.0, 0.0, 0.0)


def image(pixels: dict[tuple[int, int], tuple[float, float, float]], size: int = 2,
          fill: tuple[float, float, float] = WHITE) -> torch.Tensor:
    """A (3, size, size) image of `fill` with some pixels set."""
    out = torch.tensor(fill).view(3, 1, 1).repeat(1, size, size)
    for (row, col), rgb in pixels.items():
        out[:, row, col] = torch.tensor(rgb)
    return out


# target: a red cell at (0, 0); input: the same red cell plus a blue cell at (1, 1) that the
# transformation removed; prediction: all white except a black cell at (0, 1).
TARGET = image({(0, 0): RED})[None]
INPUT = image({(0, 0): RED, (1, 1): BLUE})[None]
PRED = image({(0, 1): BLACK})[None]


def test_hand_computed_pixel_metrics() -> None:
    # squared errors per pixel (channel mean): (0,0) white vs red -> 2/3; (0,1) black vs white -> 1
    values = compute_metrics(PRED, TARGET, INPUT, background_rgb=(255, 255, 255),
                             names=["mse", "mse_sum", "psnr", "fg_mse", "changed_mse"])
    assert values["mse"].item() == pytest.approx(5 / 12)
    assert values["mse_sum"].item() == pytest.approx(5.0)
    assert values["psnr"].item() == pytest.approx(10 * math.log10(12 / 5), rel=1e-6)
    # foreground = target or input not white = {(0,0), (1,1)}: (2/3 + 0) / 2
    assert values["fg_mse"].item() == pytest.approx(1 / 3)
    # changed = target differs from input = {(1,1)}, where the prediction is right
    assert values["changed_mse"].item() == pytest.approx(0.0)


def test_one_white_pixel_on_black() -> None:
    target = image({(1, 0): WHITE}, fill=BLACK)[None]
    blank = torch.zeros_like(target)
    assert pixel.mse(blank, target).item() == pytest.approx(0.25)
    assert pixel.mse_sum(blank, target).item() == pytest.approx(3.0)
    assert pixel.psnr(blank, target).item() == pytest.approx(10 * math.log10(4), rel=1e-6)


def test_identical_images_give_zero_error_and_capped_psnr() -> None:
    values = compute_metrics(TARGET, TARGET.clone(), names=["mse", "psnr"])
    assert values["mse"].item() == 0.0
    assert values["psnr"].item() == math.inf
    assert summarize(values) == {"mse": 0.0, "psnr": pixel.PSNR_CAP_DB}


def test_empty_masks_are_nan_and_left_out_of_the_mean() -> None:
    blank = image({})[None]  # all white: no foreground, nothing changed
    pred = torch.cat([PRED, image({(0, 0): BLACK})[None]])
    target = torch.cat([TARGET, blank])
    inputs = torch.cat([INPUT, blank])
    values = compute_metrics(pred, target, inputs, background_rgb=WHITE, names=["fg_mse", "changed_mse"])
    assert values["fg_mse"][0].item() == pytest.approx(1 / 3) and values["fg_mse"][1].isnan()
    assert values["changed_mse"][1].isnan()
    assert summarize(values)["fg_mse"] == pytest.approx(1 / 3)
    only_nan = compute_metrics(pred[1:], target[1:], inputs[1:], background_rgb=WHITE, names=["fg_mse"])
    assert math.isnan(summarize(only_nan)["fg_mse"])


def test_small_noise_is_not_foreground_but_a_palette_color_is() -> None:
    target = image({(0, 0): (1.0, 1.0, 1 - 3 / 255)})[None]  # JPEG-like noise on the background
    assert not pixel.differs(target, torch.ones(1, 3, 1, 1)).any()
    grey = image({(0, 0): (170 / 255,) * 3})[None]  # the lightest cogitao-rgb color
    assert pixel.differs(grey, torch.ones(1, 3, 1, 1)).tolist() == [[[True, False], [False, False]]]


def test_foreground_mask_argument_and_per_sample_background() -> None:
    mask = torch.tensor([[[True, False], [False, True]]])
    by_mask = compute_metrics(PRED, TARGET, INPUT, foreground_mask=mask, names=["fg_mse"])
    by_color = compute_metrics(PRED, TARGET, INPUT, background_rgb=torch.tensor([[1.0, 1.0, 1.0]]), names=["fg_mse"])
    assert by_mask["fg_mse"].item() == pytest.approx(by_color["fg_mse"].item())


def test_device_kernel_matches_the_cpu_kernel() -> None:
    """The torch arithmetic used on GPUs gives the sums of the numpy kernel used on CPU."""
    generator = torch.Generator().manual_seed(1)
    pred, target, inputs = torch.rand(3, 5, 3, 6, 7, generator=generator).round()
    background = torch.ones(5, 3, 1, 1)
    cpu = pixel.pixel_errors(pred, target, inputs, background=background)
    device = pixel.error_sums((pred - target) ** 2, target, inputs, background, None, pixel.PIXEL_TOLERANCE)
    torch.testing.assert_close(device[0], cpu.total)
    torch.testing.assert_close(device[1:3], list(cpu.foreground))
    torch.testing.assert_close(device[3:5], list(cpu.changed))


def test_uint8_images_match_float_images() -> None:
    as_uint8 = (PRED * 255).round().to(torch.uint8)
    target_uint8 = (TARGET * 255).round().to(torch.uint8)
    assert pixel.mse(as_uint8, target_uint8).item() == pytest.approx(pixel.mse(PRED, TARGET).item())


@pytest.mark.parametrize(
    ("pred", "target", "message"),
    [
        (torch.zeros(1, 2, 2, 3), torch.zeros(1, 2, 2, 3), "expected shape \\(B, 3, H, W\\)"),
        (torch.zeros(1, 3, 4, 4), torch.zeros(1, 3, 2, 2), "render both at the same size"),
        (torch.full((1, 3, 2, 2), 2.0), torch.zeros(1, 3, 2, 2), "must lie in \\[0, 1\\]"),
        (torch.zeros(1, 3, 2, 2, dtype=torch.int32), torch.zeros(1, 3, 2, 2), "expected float"),
    ],
)
def test_bad_images_raise_one_clear_error(pred: torch.Tensor, target: torch.Tensor, message: str) -> None:
    with pytest.raises(MetricInputError, match=message):
        compute_metrics(pred, target, names=["mse"])


def skimage_ssim(a: torch.Tensor, b: torch.Tensor) -> np.ndarray:
    return np.array([
        structural_similarity(x.permute(1, 2, 0).double().numpy(), y.permute(1, 2, 0).double().numpy(),
                              channel_axis=-1, gaussian_weights=True, sigma=1.5,
                              use_sample_covariance=False, data_range=1.0)
        for x, y in zip(a, b)
    ])


@pytest.mark.parametrize(("height", "width"), [(11, 11), (23, 40), (64, 64)])
def test_ssim_matches_scikit_image_on_random_images(height: int, width: int) -> None:
    generator = torch.Generator().manual_seed(height * width)
    a = torch.rand(5, 3, height, width, generator=generator)
    b = (a + 0.3 * torch.randn(5, 3, height, width, generator=generator)).clamp(0, 1)
    np.testing.assert_allclose(ssim(a, b).numpy(), skimage_ssim(a, b), atol=1e-4)


def rendered_like(grid: np.ndarray, colors: np.ndarray, cell: int) -> torch.Tensor:
    pixels = np.repeat(np.repeat(colors[grid], cell, axis=0), cell, axis=1)
    return torch.from_numpy(pixels).permute(2, 0, 1).float() / 255


def test_ssim_matches_scikit_image_on_rendered_grids() -> None:
    palette = np.array([[255, 255, 255], [0, 116, 217], [255, 65, 54], [46, 204, 64], [255, 220, 0]], dtype=np.uint8)
    rng = np.random.default_rng(3)
    pairs = []
    for _ in range(4):
        grid = np.zeros((8, 8), dtype=np.int64)
        grid[rng.integers(0, 6):, rng.integers(0, 6)] = rng.integers(1, 5)
        moved = np.roll(grid, 1, axis=1)
        pairs.append((rendered_like(moved, palette, 16), rendered_like(grid, palette, 16)))
    pred, target = (torch.stack(side) for side in zip(*pairs))
    blurred = torch.nn.functional.avg_pool2d(pred, 3, stride=1, padding=1, count_include_pad=False)
    np.testing.assert_allclose(ssim(pred, target).numpy(), skimage_ssim(pred, target), atol=1e-4)
    np.testing.assert_allclose(ssim(blurred, target).numpy(), skimage_ssim(blurred, target), atol=1e-4)
    np.testing.assert_allclose(ssim(target, target).numpy(), 1.0, atol=1e-6)


def test_ssim_gives_the_same_values_whatever_ran_before_in_its_reused_buffers() -> None:
    generator = torch.Generator().manual_seed(11)
    a, b = torch.rand(2, 3, 3, 32, 32, generator=generator)
    first = ssim(a, b)
    ssim(torch.rand(5, 3, 48, 40, generator=generator), torch.rand(5, 3, 48, 40, generator=generator))
    torch.testing.assert_close(ssim(a, b), first, atol=0, rtol=0)


def test_ssim_never_reads_the_rows_where_stacked_planes_mix(monkeypatch: pytest.MonkeyPatch) -> None:
    """Near a plane's top and bottom the stacked filter mixes planes, and a denominator there can be
    exactly zero (it happened for 1 of 1,000 benchmark images). Forcing zeros there must change
    nothing and warn nothing."""
    generator = torch.Generator().manual_seed(12)
    a, b = torch.rand(2, 3, 3, 24, 20, generator=generator)
    expected = ssim(a, b)
    real_filter = ssim_module.gaussian_filter_opencv
    c2 = 2 * ssim_module.K2**2

    def filter_with_zero_denominators_near_plane_edges(maps: np.ndarray, taps: np.ndarray) -> np.ndarray:
        stats = real_filter(maps, taps)
        mixed = np.r_[0:5, -5:0]
        mu_s, mu_d, ss, dd = stats
        mu_s[..., mixed, :], mu_d[..., mixed, :] = -1.0, 0.0  # centered: both local means 0
        ss[..., mixed, :], dd[..., mixed, :] = 1.0, -c2  # var_s + var_d + 2 C2 = 0: a zero denominator
        return stats

    monkeypatch.setattr(ssim_module, "gaussian_filter_opencv", filter_with_zero_denominators_near_plane_edges)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.testing.assert_close(ssim(a, b), expected, atol=0, rtol=0)


def test_both_filter_backends_agree() -> None:
    maps = torch.rand(4, 2, 3, 20, 17, generator=torch.Generator().manual_seed(0))
    taps = ssim_module.gaussian_window()
    opencv = torch.from_numpy(ssim_module.gaussian_filter_opencv(maps.numpy(), taps.numpy()))[..., 5:-5, 5:-5]
    conv = ssim_module.filter_valid_conv(maps, taps)
    assert opencv.shape == conv.shape == (4, 2, 3, 10, 7)
    torch.testing.assert_close(opencv, conv, atol=1e-6, rtol=1e-5)


def test_device_path_matches_scikit_image() -> None:
    """The torch-only arithmetic used on GPUs, run here on CPU tensors."""
    generator = torch.Generator().manual_seed(7)
    a = torch.rand(3, 3, 20, 30, generator=generator)
    b = (a + 0.2 * torch.randn(3, 3, 20, 30, generator=generator)).clamp(0, 1)
    values = ssim_module._ssim_device(a, b, ssim_module.gaussian_window(), 1.0)
    np.testing.assert_allclose(values.numpy(), skimage_ssim(a, b), atol=1e-4)


def test_ssim_needs_a_full_window() -> None:
    with pytest.raises(MetricInputError, match="at least 11x11"):
        ssim(torch.zeros(1, 3, 10, 30), torch.zeros(1, 3, 10, 30))


image_pairs = st.integers(min_value=0, max_value=2**31 - 1).map(
    lambda seed: torch.rand(2, 3, 12, 13, generator=torch.Generator().manual_seed(seed)).split(1)
)


@settings(max_examples=25, deadline=None)
@given(image_pairs)
def test_pixel_metric_laws(pair: tuple[torch.Tensor, torch.Tensor]) -> None:
    a, b = pair
    error = pixel.mse(a, b)
    assert error.item() >= 0 and pixel.mse(a, a).item() == 0
    assert error.item() == pytest.approx(pixel.mse(b, a).item())
    assert pixel.mse_sum(a, b).item() == pytest.approx(error.item() * 3 * 12 * 13, rel=1e-5)
    similarity = ssim(a, b).item()
    assert similarity <= 1 and similarity == pytest.approx(ssim(b, a).item(), abs=1e-6)
