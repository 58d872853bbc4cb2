"""`svib:ssm-vae` and `svib:ssm-slot`: SVIB's two state-space models (`models.svib_ssm`) and the probe that draws
the target image from the latent they predict, trained in one run of two phases.

SVIB evaluates a state-space model (SSM) in two runs: the SSM trains alone on two-frame videos with its own
objective (ssms/*/train.py); then, the SSM frozen, a probe (SVIB's patch-transformer decoder,
configs/patch_transformer.py) learns to draw the target image from the SSM's predicted next-frame latent
(tasks/image_to_image/train.py `--representer dynamic_vae|dynamic_slot --no-joint`: `NextFrameLatentPredictor*`
encodes the input and takes one dynamics step). Here one run does both, switched by `begin_step` from the step:

- phase 1, the steps before `probe_from` x the run's steps: the SSM's own objective on the video [input, target]
  (`SsmVae.loss` / `SsmSlot.loss`); the probe gets no gradient;
- phase 2, the rest: the probe alone, with the loss of the other svib presets (the pixel head's), the latent
  computed under `torch.no_grad()` (SVIB's `--no-joint`).

The probe reads the predicted latent as its memory tokens, as SVIB's predictor reads a representer's output:
SSM-VAE's one vector (B, 1, latent), SSM-Slot's slots (B, slots, slot_size). `predict` is the probe's image.
Validation (eval mode) scores the probe's loss in both phases, so the best checkpoint is chosen on the images the
model draws, never on the SSM's objective. SSM-Slot's initial slots are random: in training they come from the
global RNG, as SVIB's; in eval mode each sample's come from a generator seeded with its own input image
(`seeds.tensor_seed` of its pixels as uint8), so a prediction does not depend on the batch it is in; its
`sheet_images` show each slot's attention on the input on the evaluation's sample sheets. SVIB's SSMs read no task
code: task conditioning is refused.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

import torch
import torch.nn.functional as F

from vision_bench.data.batch import Batch
from vision_bench.errors import ConfigError
from vision_bench.models.base import TrainableModel
from vision_bench.models.options import SharedOptions
from vision_bench.models.patch_transformer import PatchDecoderSettings, PatchTransformerDecoder
from vision_bench.models.seeds import tensor_seed
from vision_bench.models.svib_ssm import SVIB_SSM_SLOT, SVIB_SSM_VAE, SsmSlot, SsmVae
from vision_bench.models.svib_ssm.slot import UPSAMPLING

SSM_PRESETS = ("ssm-vae", "ssm-slot")
PROBE_FROM = 0.5
"""The default fraction of a run's steps that trains the SSM before its probe."""
SLOT_SEED = 0
"""Mixed into the seed of each sample's initial slots in eval mode (`SsmSlotProbeModel.initial_slots`)."""


class SsmProbeModel(TrainableModel):
    """An SSM and the patch-transformer probe reading its predicted next-frame latent; SSM-VAE's latent as is."""

    family = "svib"
    trains_in_phases = True

    def __init__(
        self, preset: str, shared: SharedOptions, ssm: SsmVae | SsmSlot, latent_dim: int,
        decoder: PatchDecoderSettings, probe_from: float,
    ) -> None:
        super().__init__(preset, shared)
        if self.task_vocab_size is not None:
            raise ConfigError(f"svib:{preset} reads no task code (SVIB's state-space models read none); remove "
                              "task_conditioning or set it to false")
        self.ssm = ssm
        self.decoder = PatchTransformerDecoder(latent_dim, shared.image_size, self.pixel_head.channels, decoder)
        self.probe_from = probe_from
        self.probing = False  # phase 2, set by `begin_step`; a new model starts in phase 1

    def begin_step(self, step: int, total_steps: int) -> None:
        self.probing = step >= self.probe_from * total_steps

    def latent(self, images: torch.Tensor) -> torch.Tensor:
        """(B, 3, S, S) -> the SSM's predicted next-frame latent (B, tokens, width), the probe's memory."""
        return self.ssm.predict_latent(images)

    def raw_output(self, inputs: torch.Tensor, task_code: torch.Tensor | None) -> torch.Tensor:
        with torch.no_grad():  # the probe never trains the SSM (SVIB's --no-joint)
            latent = self.latent(inputs)
        return self.decoder(latent)

    def training_loss(self, batch: Batch) -> torch.Tensor:
        """Phase 1 in training: the SSM's objective on [input, target]; else (phase 2, validation) the probe's loss."""
        if self.probing or not self.training:
            return super().training_loss(batch)
        inputs, _ = self._inputs(batch)
        self.check_inputs(inputs)
        return self.ssm.loss(torch.stack([inputs, self._target(batch, inputs)], dim=1)).loss

    def details(self) -> dict[str, Any]:
        settings = self.decoder.settings
        return {**super().details(), "decoder_patch_size": settings.patch_size, "decoder_depth": settings.depth,
                "probe_from": self.probe_from, "ssm": asdict(self.ssm.settings)}


class SsmSlotProbeModel(SsmProbeModel):
    """SSM-Slot and its probe: the initial slots from the global RNG in training, per sample seeded in eval mode."""

    ssm: SsmSlot

    def latent(self, images: torch.Tensor) -> torch.Tensor:
        if self.training:
            return self.ssm.predict_latent(images)
        return self.ssm.predict_latent(images, noise=self.initial_slots(images))

    @torch.no_grad()
    def sheet_images(self, batch: Batch) -> dict[str, torch.Tensor]:
        """Each slot's SAVi attention on the input (the last iteration's, summing to 1 over the slots at every
        feature pixel), as a grey image at the image's size: where the slot that predicts the next frame looks."""
        inputs, _ = self._inputs(batch)
        noise = None if self.training else self.initial_slots(inputs)
        _, attention = self.ssm.encode(inputs.unsqueeze(1), noise=noise)  # (B, 1, side^2, slots)
        side, size = self.ssm.settings.feature_side, self.image_size
        maps = attention[:, 0].transpose(1, 2).reshape(-1, 1, side, side).float()
        maps = F.interpolate(maps, size=(size, size), mode="nearest").reshape(inputs.shape[0], -1, 1, size, size)
        return {f"slot {k + 1} attention": maps[:, k].expand(-1, 3, -1, -1) for k in range(maps.shape[1])}

    def initial_slots(self, images: torch.Tensor) -> torch.Tensor:
        """(B, slots, slot_size) N(0, 1): each sample's from a generator seeded with `SLOT_SEED` and its image."""
        settings = self.ssm.settings
        pixels = (images.detach().float().clamp(0, 1) * 255).round().to("cpu", torch.uint8)
        noise = [torch.randn(settings.slots, settings.slot_size,
                             generator=torch.Generator().manual_seed(tensor_seed(SLOT_SEED, image)))
                 for image in pixels]
        return torch.stack(noise).to(images.device)


def ssm_probe_model(
    preset: str, shared: SharedOptions, decoder: PatchDecoderSettings, *, width: int | None, depth: int | None,
    latent_dim: int | None, probe_from: float | None,
) -> SsmProbeModel:
    """svib:`preset` (one of `SSM_PRESETS`) with SVIB's settings, or smaller ones: `width` the convolutions'
    channels, `depth` the dynamics' blocks, `latent_dim` the latent's (or each slot's) size."""
    size = shared.image_size
    probe_from = PROBE_FROM if probe_from is None else probe_from
    if preset == "ssm-vae":
        vae = replace(SVIB_SSM_VAE, image_size=size, cnn_hidden=width or SVIB_SSM_VAE.cnn_hidden,
                      latent=latent_dim or SVIB_SSM_VAE.latent,
                      dynamics_blocks=depth or SVIB_SSM_VAE.dynamics_blocks)
        return SsmProbeModel(preset, shared, SsmVae(vae), vae.latent, decoder, probe_from)
    if size % UPSAMPLING:
        raise ConfigError(f"image_size={size} is not a multiple of {UPSAMPLING}; svib:ssm-slot's decoder doubles "
                          f"a slot's square four times (use a multiple of {UPSAMPLING}, such as 64 or 128)")
    width = width or SVIB_SSM_SLOT.cnn_hidden
    slot = replace(SVIB_SSM_SLOT, image_size=size, broadcast_size=size // UPSAMPLING, cnn_hidden=width,
                   decoder_hidden=width, slot_size=latent_dim or SVIB_SSM_SLOT.slot_size,
                   dynamics_blocks=depth or SVIB_SSM_SLOT.dynamics_blocks)
    return SsmSlotProbeModel(preset, shared, SsmSlot(slot), slot.slot_size, decoder, probe_from)


__all__ = ["PROBE_FROM", "SLOT_SEED", "SSM_PRESETS", "SsmProbeModel", "SsmSlotProbeModel", "ssm_probe_model"]
