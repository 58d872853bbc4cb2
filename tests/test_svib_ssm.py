"""SVIB's state-space models (`vision_bench.models.svib_ssm`): SSM-VAE and SSM-Slot against SVIB's own modules,
SVIB's settings, parameter counts, the Gaussian terms, masks and learning.

tests/data/svib_ssm_differential.npz (made by tests/fixtures_svib/make_ssm_fixture.py with SVIB's own
modules, github.com/systematic-visual-imagination/svib at 7eec57ef) holds SVIB's outputs for seeded
weights, which the tests re-create with `seeded_weights`, and for the same noise (seed `noise_seed`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from fixtures_svib.make_fixture import seeded_weights, weights_digest
from torch import nn

from vision_bench.errors import ConfigError
from vision_bench.models.svib_ssm import SVIB_SSM_SLOT, SVIB_SSM_VAE, SsmSlot, SsmSlotSettings, SsmVae, SsmVaeSettings
from vision_bench.models.svib_ssm.layers import cartesian_grid, normal_kl, normal_nll

pytestmark = pytest.mark.usefixtures("one_torch_thread")

FIXTURE = Path(__file__).parent / "data" / "svib_ssm_differential.npz"
TOLERANCE = 1e-5  # absolute for outputs of order 1, relative for the losses (SSM-VAE's nll is ~4e3)
SIZE = 64  # the fixture's image size


@pytest.fixture(scope="module")
def svib() -> dict[str, np.ndarray]:
    with np.load(FIXTURE) as data:
        return {name: data[name] for name in data.files}


def seeded(model: nn.Module, svib: dict[str, np.ndarray], prefix: str) -> nn.Module:
    """`model` with the fixture's seeded weights, after checking they are the ones SVIB ran with."""
    weights = seeded_weights(model, int(svib["seed"]))
    assert weights_digest(weights) == str(svib[f"{prefix}_sha256"]), "the weight generator changed"
    model.load_state_dict(weights)
    return model.eval()


def noise(svib: dict[str, np.ndarray]) -> torch.Generator:
    return torch.Generator().manual_seed(int(svib["noise_seed"]))


def close(actual: torch.Tensor, expected: np.ndarray, relative: bool = False) -> float:
    """The largest difference (relative to |expected| when `relative`), asserted within TOLERANCE."""
    reference = torch.as_tensor(np.asarray(expected))
    difference = (actual.detach() - reference).abs()
    if relative:
        difference = difference / reference.abs()
    largest = difference.max().item()
    assert largest <= TOLERANCE, largest
    return largest


def fit_losses(model: nn.Module, video: torch.Tensor, steps: int, lr: float) -> list[float]:
    """SVIB's objective over `steps` Adam steps on one video batch, the noise fixed per step."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for step in range(steps):
        loss = model.loss(video, torch.Generator().manual_seed(step)).loss  # type: ignore[operator]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


# --- the shared pieces -------------------------------------------------------------------------------


def test_normal_kl_and_nll_by_hand() -> None:
    # KL(N(1, e^0) || N(0, e^0)) = 1/2; KL(N(0, e^2) || N(1, e^0)) = (-1 + 0 - 2 + e^2 + 1) / 2
    kl = normal_kl(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 2.0]), torch.tensor([0.0, 1.0]), torch.zeros(2))
    assert torch.allclose(kl, torch.tensor([0.5, (math.exp(2) - 2) / 2]))
    # -log N(3; 1, e^0) = (log 2 pi + 4) / 2; -log N(0; 0, e^-2) = (-2 + log 2 pi) / 2
    nll = normal_nll(torch.tensor([1.0, 0.0]), torch.tensor([0.0, -2.0]), torch.tensor([3.0, 0.0]))
    assert torch.allclose(nll, torch.tensor([(math.log(2 * math.pi) + 4) / 2, (math.log(2 * math.pi) - 2) / 2]))


def test_cartesian_grid_is_pixel_centres() -> None:
    grid = cartesian_grid(2)  # centres at 0.25 and 0.75
    assert torch.equal(grid[0], torch.tensor([[0.25, 0.75], [0.25, 0.75]]))  # x along the columns
    assert torch.equal(grid[1], torch.tensor([[0.25, 0.25], [0.75, 0.75]]))
    assert torch.equal(grid[2:], 1 - grid[:2])


# --- SSM-VAE ------------------------------------------------------------------------------------------


def test_vae_defaults_are_svibs() -> None:
    assert SVIB_SSM_VAE.cnn_hidden == 64  # configs/dynamic_vae.py:5
    assert SVIB_SSM_VAE.latent == 64  # configs/dynamic_vae.py:6
    assert SVIB_SSM_VAE.dynamics_blocks == 4  # configs/dynamic_vae.py:7
    assert SVIB_SSM_VAE.sigma == 0.01  # configs/dynamic_vae.py:8
    assert SVIB_SSM_VAE.beta == 1.0  # configs/dynamic_vae.py:9
    assert SVIB_SSM_VAE.dynamics_heads == 1  # ssms/dynamic_vae/modules.py:47 TransformerEncoder(..., 1, dropout=0.)
    assert SVIB_SSM_VAE.image_size == 128  # ssms/dynamic_vae/train.py:35
    assert SVIB_SSM_VAE.image_channels == 3  # ssms/dynamic_vae/train.py:36


def block_parameters(d: int) -> int:
    """One transformer block of width d: two LayerNorms, four bias-free projections, the 4x feed-forward."""
    return 2 * 2 * d + 4 * d * d + (d * 4 * d + 4 * d) + (4 * d * d + d)


def vae_parameters(s: SsmVaeSettings) -> int:
    """SSM-VAE's parameter count by hand: convolutions, MLPs, transposed convolutions, the dynamics."""
    c, h, d = s.image_channels, s.cnn_hidden, s.latent
    flat = h * (s.image_size // 16) ** 2
    encoder_cnn = (c * h * 25 + h) + 3 * (h * h * 25 + h)
    encoder_mlp = (flat * 4 * d + 4 * d) + (4 * d * 2 * d + 2 * d)
    decoder_mlp = (d * 4 * d + 4 * d) + (4 * d * flat + flat)
    decoder_cnn = 3 * (h * h * 25 + h) + (h * c * 25 + c)
    return encoder_cnn + encoder_mlp + decoder_mlp + decoder_cnn + s.dynamics_blocks * block_parameters(d) + 2 * d


def test_vae_parameter_count(svib: dict[str, np.ndarray]) -> None:
    small = SsmVaeSettings(image_size=SIZE)
    assert sum(p.numel() for p in SsmVae(small).parameters()) == vae_parameters(small) == svib["vae_parameters"]
    assert sum(p.numel() for p in SsmVae().parameters()) == vae_parameters(SVIB_SSM_VAE) == svib["vae_parameters_128"]
    assert svib["vae_parameters_128"] == 2_974_531


def test_vae_matches_svib(svib: dict[str, np.ndarray]) -> None:
    model = seeded(SsmVae(SsmVaeSettings(image_size=SIZE)), svib, "vae")
    video = torch.from_numpy(svib["video"])
    with torch.no_grad():
        out = model.loss(video, noise(svib))
        predicted = model.predict_latent(video[:, 0])
    for term in ("loss", "nll", "kl", "dynamics_mse"):
        close(getattr(out, term), svib[f"vae_{term}"], relative=True)
    close(out.recon, svib["vae_recon"])
    close(predicted, svib["vae_predict_latent"])
    assert svib["vae_recon"].min() == 0 and svib["vae_recon"].max() == 1  # SVIB clamps the reconstruction


def test_vae_swapped_dynamics_rows_break_the_match(svib: dict[str, np.ndarray]) -> None:
    model = seeded(SsmVae(SsmVaeSettings(image_size=SIZE)), svib, "vae")
    with torch.no_grad():
        # the value projection: over a sequence of one latent, the attention weights are all 1 and the
        # query and key projections change nothing
        value = model.dynamics.blocks[1].self_attention.value.weight
        value[[0, 1]] = value[[1, 0]]
        video = torch.from_numpy(svib["video"])
        out = model.loss(video, noise(svib))
        predicted = model.predict_latent(video[:, 0])
    with pytest.raises(AssertionError):
        close(out.dynamics_mse, svib["vae_dynamics_mse"], relative=True)
    with pytest.raises(AssertionError):
        close(predicted, svib["vae_predict_latent"])
    close(out.nll, svib["vae_nll"], relative=True)  # the autoencoder does not read the dynamics


def test_vae_noise_from_generator_or_global_rng() -> None:
    model = SsmVae(SsmVaeSettings(image_size=16, cnn_hidden=4, latent=4, dynamics_blocks=1))
    video = torch.rand(2, 2, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        first = model.loss(video, torch.Generator().manual_seed(5)).loss
        again = model.loss(video, torch.Generator().manual_seed(5)).loss
        other = model.loss(video, torch.Generator().manual_seed(6)).loss
        torch.manual_seed(3)
        global_rng = model.loss(video).loss
        torch.manual_seed(3)
        global_again = model.loss(video).loss
    assert first == again and first != other and global_rng == global_again


def test_vae_objective_is_svibs_sum() -> None:
    settings = SsmVaeSettings(image_size=16, cnn_hidden=4, latent=4, dynamics_blocks=1, beta=0.5, sigma=0.1)
    model = SsmVae(settings)
    video = torch.rand(2, 3, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        out = model.loss(video, torch.Generator().manual_seed(0))
    assert torch.allclose(out.loss, out.nll + 0.5 * out.kl + out.dynamics_mse)
    assert out.recon.shape == video.shape
    # sigma enters only as the nll's constant log-variance: nll - (log sigma^2 + log 2 pi) / 2 is the scaled MSE
    assert out.nll > (math.log(0.01) + math.log(2 * math.pi)) / 2


def test_vae_learns() -> None:
    torch.manual_seed(0)
    model = SsmVae(SsmVaeSettings(image_size=16, cnn_hidden=8, latent=8, dynamics_blocks=1))
    video = torch.rand(2, 2, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    losses = fit_losses(model, video, steps=10, lr=3e-3)
    assert losses[-1] < 0.8 * losses[0], losses


@pytest.mark.parametrize(
    ("change", "words"),
    [({"image_size": 72}, "multiple of 16"), ({"latent": 0}, "latent must be a positive integer"),
     ({"sigma": 0.0}, "sigma must be positive")],
)
def test_vae_settings_refused(change: dict, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        replace(SVIB_SSM_VAE, **change)


# --- SSM-Slot -----------------------------------------------------------------------------------------

SLOT_64 = SsmSlotSettings(image_size=SIZE, broadcast_size=SIZE // 16)
TINY_SLOT = SsmSlotSettings(image_size=16, broadcast_size=1, slots=3, slot_size=8, cnn_hidden=4, mlp_hidden=8,
                            input_size=8, dynamics_blocks=1, dynamics_heads=2, predictor_heads=2, decoder_hidden=8)


def test_slot_defaults_are_svibs() -> None:
    assert SVIB_SSM_SLOT.slots == 4  # configs/dynamic_slot.py:5
    assert SVIB_SSM_SLOT.slot_size == 64  # configs/dynamic_slot.py:6
    assert SVIB_SSM_SLOT.iterations == 3  # configs/dynamic_slot.py:7
    assert SVIB_SSM_SLOT.cnn_hidden == 64  # configs/dynamic_slot.py:8
    assert SVIB_SSM_SLOT.mlp_hidden == 192  # configs/dynamic_slot.py:9
    assert SVIB_SSM_SLOT.input_size == 192  # configs/dynamic_slot.py:10
    assert SVIB_SSM_SLOT.dynamics_blocks == 4  # configs/dynamic_slot.py:12
    assert SVIB_SSM_SLOT.dynamics_heads == 4  # configs/dynamic_slot.py:13
    assert SVIB_SSM_SLOT.predictor_blocks == 1  # ssms/dynamic_slot/modules.py:9 SAVi(num_predictor_blocks=1)
    assert SVIB_SSM_SLOT.predictor_heads == 4  # ssms/dynamic_slot/modules.py:10
    assert SVIB_SSM_SLOT.epsilon == 1e-8  # ssms/dynamic_slot/modules.py:12
    assert SVIB_SSM_SLOT.broadcast_size == 8  # ssms/dynamic_slot/modules.py:101 (broadcast_size=8)
    assert SVIB_SSM_SLOT.decoder_hidden == 64  # ssms/dynamic_slot/modules.py:107-113 ConvTranspose2d(..., 64, ...)
    assert SVIB_SSM_SLOT.image_size == 128  # ssms/dynamic_slot/train.py:35
    assert SVIB_SSM_SLOT.image_channels == 3  # ssms/dynamic_slot/train.py:36


@pytest.mark.parametrize(("size", "stride", "side"), [(64, 1, 64), (128, 2, 64), (32, 2, 16)])
def test_slot_first_stride_keeps_64_pixels(size: int, stride: int, side: int) -> None:
    # ssms/dynamic_slot/modules.py:147 stride 1 if image_size == 64 else 2; :153-154 positions at the same side
    model = SsmSlot(replace(TINY_SLOT, image_size=size, broadcast_size=size // 16))
    first = model.encoder_cnn[0]
    assert isinstance(first, nn.Conv2d) and first.stride == (stride, stride)
    assert model.positions.grid.shape == (1, 4, side, side)
    with torch.no_grad():
        out = model.loss(torch.rand(1, 2, 3, size, size), torch.Generator().manual_seed(0))
    assert out.attention.shape == (1, 2, side * side, 3) and out.recon.shape == (1, 2, 3, size, size)


def slot_parameters(s: SsmSlotSettings) -> int:
    """SSM-Slot's parameter count by hand: encoder, SAVi, decoder, dynamics (the Cartesian grids are fixed)."""
    c, h, i, d, m, g = s.image_channels, s.cnn_hidden, s.input_size, s.slot_size, s.mlp_hidden, s.decoder_hidden
    encoder = (c * h * 25 + h) + 2 * (h * h * 25 + h) + (h * i * 25 + i) + (4 * i + i) + 2 * i + 2 * (i * i + i)
    savi = (2 * d + 2 * i + 4 * d + d * d + 2 * i * d + 2 * (3 * d * d + 3 * d) + (d * m + m) + (m * d + d)
            + s.predictor_blocks * block_parameters(d) + 2 * d)
    decoder = (4 * d + d) + (d * g * 25 + g) + 2 * (g * g * 25 + g) + (g * (c + 1) * 25 + c + 1)
    return encoder + savi + decoder + s.dynamics_blocks * block_parameters(d) + 2 * d


def test_slot_parameter_count(svib: dict[str, np.ndarray]) -> None:
    small, full = SsmSlot(SLOT_64), SsmSlot()
    assert sum(p.numel() for p in small.parameters()) == slot_parameters(SLOT_64) == svib["slot_parameters"]
    assert sum(p.numel() for p in full.parameters()) == slot_parameters(SVIB_SSM_SLOT) == svib["slot_parameters_128"]
    assert svib["slot_parameters_128"] == 1_234_884


@pytest.fixture(scope="module")
def slot_outputs(svib: dict[str, np.ndarray]) -> tuple:
    model = seeded(SsmSlot(SLOT_64), svib, "slot")
    video = torch.from_numpy(svib["video"])
    with torch.no_grad():
        return model.loss(video, noise(svib)), model.predict_latent(video[:, 0], noise(svib))


def test_slot_matches_svib(svib: dict[str, np.ndarray], slot_outputs: tuple) -> None:
    out, predicted = slot_outputs
    for term in ("loss", "autoencoding_mse", "dynamics_mse"):
        close(getattr(out, term), svib[f"slot_{term}"], relative=True)
    for name in ("recon", "recons_masked", "attention", "alpha"):
        close(getattr(out, name), svib[f"slot_{name}"])
    close(predicted, svib["slot_predict_latent"])


def test_slot_masks_sum_to_one_over_slots(slot_outputs: tuple) -> None:
    out, _ = slot_outputs
    assert torch.allclose(out.attention.sum(-1), torch.ones(()), atol=1e-6)  # B, T, inputs, slots
    assert torch.allclose(out.alpha.sum(2), torch.ones(()), atol=1e-6)  # B, T, slots, 1, H, W


def test_slot_swapped_dynamics_rows_break_the_match(svib: dict[str, np.ndarray]) -> None:
    model = seeded(SsmSlot(SLOT_64), svib, "slot")
    with torch.no_grad():
        query = model.dynamics.blocks[1].self_attention.query.weight
        query[[0, 1]] = query[[1, 0]]
        video = torch.from_numpy(svib["video"])
        out = model.loss(video, noise(svib))
        predicted = model.predict_latent(video[:, 0], noise(svib))
    with pytest.raises(AssertionError):
        close(out.dynamics_mse, svib["slot_dynamics_mse"], relative=True)
    with pytest.raises(AssertionError):
        close(predicted, svib["slot_predict_latent"])
    close(out.autoencoding_mse, svib["slot_autoencoding_mse"], relative=True)  # the autoencoder does not read it


def test_slot_noise_from_generator_or_global_rng() -> None:
    model = SsmSlot(TINY_SLOT)
    images = torch.rand(2, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        first = model.predict_latent(images, torch.Generator().manual_seed(5))
        again = model.predict_latent(images, torch.Generator().manual_seed(5))
        other = model.predict_latent(images, torch.Generator().manual_seed(6))
        torch.manual_seed(3)
        global_rng = model.predict_latent(images)
        torch.manual_seed(3)
        global_again = model.predict_latent(images)
    assert torch.equal(first, again) and not torch.equal(first, other) and torch.equal(global_rng, global_again)


def test_slot_objective_is_svibs_sum() -> None:
    model = SsmSlot(TINY_SLOT)
    video = torch.rand(2, 3, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        out = model.loss(video, torch.Generator().manual_seed(0))
    assert torch.allclose(out.loss, out.autoencoding_mse + out.dynamics_mse)
    assert out.recons_masked.shape == (2, 3, 3, 3, 16, 16) and out.alpha.shape == (2, 3, 3, 1, 16, 16)
    assert out.attention.shape == (2, 3, 64, 3)


def test_slot_learns() -> None:
    torch.manual_seed(0)
    model = SsmSlot(TINY_SLOT)
    video = torch.rand(2, 2, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    losses = fit_losses(model, video, steps=10, lr=3e-3)
    assert losses[-1] < 0.8 * losses[0], losses


@pytest.mark.parametrize(
    ("change", "words"),
    [({"image_size": 64}, "broadcast_size = image_size / 16"), ({"slots": 0}, "slots must be a positive integer")],
)
def test_slot_settings_refused(change: dict, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        replace(SVIB_SSM_SLOT, **change)
