"""SVIB's two state-space models (paper 003, section 4.2; released code ssms/dynamic_vae and ssms/dynamic_slot),
as PyTorch modules of their own: `vae.SsmVae` (SSM-VAE) and `slot.SsmSlot` (SSM-Slot), each built from a
frozen settings dataclass whose defaults are SVIB's, with SVIB's objective (`loss(video)`) and the
next-frame latent its probe decodes (`predict_latent(image)`); `layers` holds what they share. They train on
videos (here an input frame and a target frame); `vision_bench.models.svib_probe` makes each, with its probe, the
image-to-image models `svib:ssm-vae` and `svib:ssm-slot`.
"""

from vision_bench.models.svib_ssm.slot import SVIB_SSM_SLOT, SsmSlot, SsmSlotLoss, SsmSlotSettings
from vision_bench.models.svib_ssm.vae import SVIB_SSM_VAE, SsmVae, SsmVaeLoss, SsmVaeSettings

__all__ = [
    "SVIB_SSM_SLOT",
    "SVIB_SSM_VAE",
    "SsmSlot",
    "SsmSlotLoss",
    "SsmSlotSettings",
    "SsmVae",
    "SsmVaeLoss",
    "SsmVaeSettings",
]
