"""Make tests/data/svib_ssm_differential.npz: SVIB's own SSM-VAE and SSM-Slot run on a fixed video.

Run from the project root, with SVIB's released code (systematic-visual-imagination/svib at 7eec57ef)
beside it, for instance extracted from a snapshot:

    mkdir ../svib && git -C <svib git dir> archive HEAD | tar -x -C ../svib
    python tests/fixtures_svib/make_ssm_fixture.py ../svib

For each model SVIB's module (ssms/dynamic_vae/modules.py `DynamicVAE` and
`NextFrameLatentPredictorVAE`; ssms/dynamic_slot/modules.py `DynamicSlot` and
`NextFrameLatentPredictorSlot`) is built from its config file (configs/dynamic_vae.py,
configs/dynamic_slot.py) as ssms/*/train.py builds it, at 64-pixel images (SVIB trains at 128).
SSM-Slot's decoder broadcasts to 8 x 8 and draws 128 x 128 whatever the image size, so at 64 pixels
`DynamicSlot` cannot reshape its output: its `decoder` is replaced by SVIB's own
`SpatialBroadcastDecoder` at broadcast size 4 (the class's argument, which DynamicSlot leaves at 8).
SVIB's code is run from the checkout, never copied; yacs, which its configs import, is replaced by a
dict with attribute access (`make_fixture._import_svib`).

The weights are `make_fixture.seeded_weights` of the project's module at the same settings, copied
into SVIB's through `svib_to_project`, the one place where the two naming schemes meet; every
trainable SVIB tensor receives one and every project tensor is used. SVIB's fixed Cartesian grids
stay as SVIB computes them.

The models sample: SSM-VAE's eps (`torch.randn_like`) and SAVi's slot initialisation
(`Tensor.normal_`). The project draws them from a `torch.Generator` seeded with NOISE_SEED; here,
while SVIB's module runs, those two functions are replaced by ones drawing the same numbers from a
generator seeded alike (only in this script). SVIB's forward returns the loss and the clamped
reconstructions; its terms, masks and attention are read from the forward's local variables when it
returns (`sys.setprofile`), so the values are SVIB's own.

The fixture holds the input video (B x T x C x H x W, B = 2 videos of T = 2 frames), per model the
loss, its terms, the reconstruction, SSM-Slot's per-slot masked reconstructions, decoder alpha masks
and SAVi attention, the NextFrameLatentPredictor output for frame 0 (under the same noise seed), the
trainable parameter counts of SVIB's module at the fixture's settings and at SVIB's own (128 pixels),
the parameter-name pairs and a SHA-256 of the weights. tests/test_svib_ssm.py checks the project against it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from fixtures_svib.make_fixture import _import_svib, seeded_weights, weights_digest  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "data" / "svib_ssm_differential.npz"
SEED = 0
NOISE_SEED = 1
IMAGE_SIZE = 64
BATCH = 2
FRAMES = 2
BLOCK = 8  # the video is drawn as blocks of 8 x 8 pixels of one colour: a fixture that compresses

# SVIB's parameter names -> the project's, applied in order.
RENAMES = [
    (r"^enc_cnn\.(\d)\.m\.", lambda m: f"encoder_cnn.{2 * int(m[1])}."),  # project: (conv, ReLU) pairs
    (r"^cnn\.(\d)\.m\.", lambda m: f"encoder_cnn.{2 * int(m[1])}."),
    (r"^cnn\.3\.", "encoder_cnn.6."),
    (r"^enc_mlp\.", "encoder_mlp."),
    (r"^dec_mlp\.", "decoder_mlp."),
    (r"^dec_cnn\.", "decoder_cnn."),
    (r"^pos\.", "positions."),
    (r"^layer_norm\.", "encoder_norm."),
    (r"^mlp\.", "encoder_mlp."),
    (r"^decoder\.decoder_pos\.", "decoder.positions."),
    (r"^decoder\.decoder_cnn\.", "decoder.cnn."),
    (r"\.layer_norm\.", ".norm."),  # the transformers' final LayerNorm
    (r"\.attn_layer_norm\.", ".self_norm."),
    (r"\.attn\.", ".self_attention."),
    (r"\.proj_q\.", ".query."),
    (r"\.proj_k\.", ".key."),
    (r"\.proj_v\.", ".value."),
    (r"\.proj_o\.", ".out."),
    (r"\.ffn_layer_norm\.", ".feed_forward_norm."),
    (r"\.ffn\.", ".feed_forward."),
]


def svib_to_project(name: str) -> str:
    """The project's parameter name of SVIB's parameter `name`."""
    for pattern, replacement in RENAMES:
        name = re.sub(pattern, replacement, name)
    return name


def fixture_video(seed: int) -> torch.Tensor:
    """The fixed (BATCH, FRAMES, 3, IMAGE_SIZE, IMAGE_SIZE) video in [0, 1], in blocks of BLOCK pixels."""
    side = IMAGE_SIZE // BLOCK
    blocks = torch.rand(BATCH, FRAMES, 3, side, side, generator=torch.Generator().manual_seed(seed))
    return blocks.repeat_interleave(BLOCK, -2).repeat_interleave(BLOCK, -1)


def trainable_count(module: nn.Module) -> int:
    return sum(parameter.numel() for parameter in module.parameters() if parameter.requires_grad)


@contextmanager
def seeded_noise(seed: int) -> Iterator[None]:
    """While open, `torch.randn_like` and `Tensor.normal_()` draw from a generator seeded with `seed`,
    as the project's modules do when given `torch.Generator().manual_seed(seed)`."""
    generator = torch.Generator().manual_seed(seed)
    randn_like, normal_ = torch.randn_like, torch.Tensor.normal_

    def seeded_randn_like(tensor: torch.Tensor) -> torch.Tensor:
        return torch.randn(tensor.shape, generator=generator, dtype=tensor.dtype, device=tensor.device)

    def seeded_normal_(tensor: torch.Tensor) -> torch.Tensor:
        return normal_(tensor, generator=generator)

    torch.randn_like = seeded_randn_like  # type: ignore[assignment]
    torch.Tensor.normal_ = seeded_normal_  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        torch.randn_like = randn_like
        torch.Tensor.normal_ = normal_  # type: ignore[method-assign]


def run_keeping_locals(call: Callable[[], Any], function: Callable[..., Any]) -> tuple[Any, dict[str, Any]]:
    """`call()`'s result and the local variables of `function` when (its first call) returned."""
    kept: dict[str, Any] = {}

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "return" and frame.f_code is function.__code__ and not kept:
            kept.update(frame.f_locals)

    sys.setprofile(profile)
    try:
        result = call()
    finally:
        sys.setprofile(None)
    return result, kept


def copy_weights(svib: nn.Module, weights: dict[str, torch.Tensor]) -> list[tuple[str, str]]:
    """Copy `weights` into `svib`'s trainable parameters; the (SVIB, project) name pairs. Every
    trainable SVIB tensor must receive one and every project tensor be used."""
    pairs = []
    remaining = dict(weights)
    with torch.no_grad():
        for name, parameter in svib.named_parameters():
            if not parameter.requires_grad:  # SVIB's Cartesian grids
                continue
            project_name = svib_to_project(name)
            parameter.copy_(remaining.pop(project_name))
            pairs.append((name, project_name))
    if remaining:
        raise SystemExit(f"project parameters without an SVIB counterpart: {sorted(remaining)}")
    return pairs


def numpy(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().numpy()


def vae_arrays(video: torch.Tensor) -> dict[str, np.ndarray]:
    from configs.dynamic_vae import dynamic_vae_configs
    from ssms.dynamic_vae.modules import DynamicVAE, NextFrameLatentPredictorVAE
    from yacs.config import CfgNode

    from vision_bench.models.svib_ssm import SsmVae, SsmVaeSettings

    args = CfgNode({**dynamic_vae_configs, "image_size": IMAGE_SIZE, "image_channels": 3})
    weights = seeded_weights(SsmVae(SsmVaeSettings(image_size=IMAGE_SIZE)), SEED)
    svib = DynamicVAE(args)
    pairs = copy_weights(svib, weights)
    with seeded_noise(NOISE_SEED):
        (loss, recon), kept = run_keeping_locals(lambda: svib(video), DynamicVAE.forward)
    predictor = NextFrameLatentPredictorVAE(args)
    copy_weights(predictor, weights)
    default = CfgNode({**dynamic_vae_configs, "image_size": 128, "image_channels": 3})
    return {
        "vae_loss": numpy(loss), "vae_recon": numpy(recon), "vae_nll": numpy(kept["nll"]),
        "vae_kl": numpy(kept["kl"]), "vae_dynamics_mse": numpy(kept["dynamics_mse"]),
        "vae_predict_latent": numpy(predictor(video[:, 0])),
        "vae_parameters": np.array(trainable_count(svib)),
        "vae_parameters_128": np.array(trainable_count(DynamicVAE(default))),
        "vae_names": np.array(pairs), "vae_sha256": np.array(weights_digest(weights)),
    }


def slot_arrays(video: torch.Tensor) -> dict[str, np.ndarray]:
    from configs.dynamic_slot import dynamic_slot_configs
    from ssms.dynamic_slot.modules import DynamicSlot, NextFrameLatentPredictorSlot, SpatialBroadcastDecoder
    from yacs.config import CfgNode

    from vision_bench.models.svib_ssm import SsmSlot, SsmSlotSettings

    args = CfgNode({**dynamic_slot_configs, "image_size": IMAGE_SIZE, "image_channels": 3})
    weights = seeded_weights(SsmSlot(SsmSlotSettings(image_size=IMAGE_SIZE, broadcast_size=IMAGE_SIZE // 16)), SEED)
    parameters_128 = trainable_count(DynamicSlot(CfgNode({**args, "image_size": 128})))
    svib, predictor = DynamicSlot(args), NextFrameLatentPredictorSlot(args)
    for module in (svib, predictor):  # at 64 pixels: SVIB's decoder, broadcast to 4 x 4 instead of 8 x 8
        module.decoder = SpatialBroadcastDecoder(args.slot_size, args.image_channels + 1, IMAGE_SIZE // 16)
    pairs = copy_weights(svib, weights)
    copy_weights(predictor, weights)
    with seeded_noise(NOISE_SEED):
        (loss, recon, recons_masked), kept = run_keeping_locals(lambda: svib(video), DynamicSlot.forward)
    with seeded_noise(NOISE_SEED):
        predicted = predictor(video[:, 0])
    return {
        "slot_loss": numpy(loss), "slot_recon": numpy(recon), "slot_recons_masked": numpy(recons_masked),
        "slot_attention": numpy(kept["_"]),  # slots, _ = self.savi(emb_set): SAVi's attns_collect
        "slot_alpha": numpy(kept["mask_probs"]), "slot_autoencoding_mse": numpy(kept["autoencoding_mse"]),
        "slot_dynamics_mse": numpy(kept["dynamics_mse"]), "slot_predict_latent": numpy(predicted),
        "slot_parameters": np.array(trainable_count(svib)), "slot_parameters_128": np.array(parameters_128),
        "slot_names": np.array(pairs), "slot_sha256": np.array(weights_digest(weights)),
    }


def main(checkout: str) -> None:
    _import_svib(Path(checkout).resolve())
    torch.manual_seed(SEED)  # SVIB's own initialisation, overwritten by the seeded weights
    video = fixture_video(SEED)
    arrays = {"seed": np.array(SEED), "noise_seed": np.array(NOISE_SEED), "video": video.numpy()}
    with torch.no_grad():
        arrays |= vae_arrays(video) | slot_arrays(video)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({OUT.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
