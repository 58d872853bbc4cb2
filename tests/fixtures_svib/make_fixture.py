"""Make tests/data/svib_differential.npz: SVIB's own I2I-CNN, I2I-ViT and Oracle run on a fixed input.

Run from the project root, with SVIB's released code (systematic-visual-imagination/svib at 7eec57ef)
beside it, for instance extracted from a snapshot:

    mkdir ../svib && git -C <svib git dir> archive HEAD | tar -x -C ../svib
    python tests/fixtures_svib/make_fixture.py ../svib

For each model, SVIB's representer (representers/joint/cnn CNNSingleVectorEncoder,
representers/joint/vit ViTEncoder or representers/gt GTEncoder) and its decoder
(predictors/patch_transformer PatchTransformer) are built from SVIB's config files
(configs/cnn_single_vector.py, configs/vit.py or configs/gt.py, and configs/patch_transformer.py) as
tasks/image_to_image/train.py and tasks/gt_to_image/train.py build them, at 64-pixel images (SVIB
trains at 128; only the number of patches differs). SVIB's code is run from the checkout, never
copied; yacs, which its configs import, is replaced by a dict with attribute access.

The weights are `seeded_weights` of the project's model (svib:i2i-cnn, svib:i2i-vit or svib:oracle), copied into
SVIB's modules through `svib_to_project`, the one place where the two naming schemes meet; every
trainable SVIB tensor must receive one and every project tensor must be used. Seeded weights rather
than SVIB's initialisation: that one has zero biases and identity LayerNorms, so it could not reveal
a misplaced bias or norm, and the full weights (5 to 8 million numbers a model) would not fit a
small fixture, while the test can re-create seeded ones exactly. SVIB's fixed tensors (its sin-cos
tables, the Oracle's float-factor coefficients, its all-false self-attention mask) stay as SVIB
computes them.

In eval mode, SVIB's modules read a fixed input: 2 images for the I2I models (`input`), and for the
Oracle the factors of 2 scenes of 2 objects (`oracle_discrete`, B x objects x [colour, shape, size],
values up to 127 so that the per-factor rows of the embedding table count; `oracle_float`,
B x objects x [x, y] in [0, 1], the ends included). The fixture holds the inputs, the raw output of
SVIB's decoder head for each model (`<model>_patches`, B x patches x 48, taken with a forward hook
on `head`), SVIB's decoded image (`<model>_image`, clamped to [0, 1] by SVIB's `decode`), the
parameter-name pairs, and a SHA-256 of the weights, so that the test can tell a changed weight
generator from a changed model. tests/test_svib_models.py checks the project against it.
"""

from __future__ import annotations

import hashlib
import re
import sys
import types
import zlib
from pathlib import Path

import numpy as np
import torch
from torch import nn

OUT = Path(__file__).resolve().parents[1] / "data" / "svib_differential.npz"
SEED = 0
IMAGE_SIZE = 64
BATCH = 2
MODELS = {"cnn": "svib:i2i-cnn", "vit": "svib:i2i-vit", "oracle": "svib:oracle"}
ORACLE_DISCRETE = [[[2, 0, 3], [1, 127, 0]], [[3, 2, 64], [0, 1, 2]]]
ORACLE_FLOAT = [[[0.25, 0.75], [0.84375, 0.125]], [[0.5, 0.0], [1.0, 0.40625]]]

# SVIB's parameter names -> the project's within its encoder or decoder, applied in order.
RENAMES = [
    (r"^cnn\.(\d)\.m\.", lambda m: f"convolutions.{2 * int(m[1])}."),  # project: (conv, ReLU) pairs
    (r"^enc_fc\.", "project."),
    (r"^tf\.blocks\.", "transformer.blocks."),
    (r"^tf\.layer_norm\.", "transformer.norm."),
    (r"\.attn_layer_norm\.", ".self_norm."),
    (r"\.self_attn_layer_norm\.", ".self_norm."),
    (r"\.encoder_decoder_attn_layer_norm\.", ".cross_norm."),
    (r"\.encoder_decoder_attn\.", ".cross_attention."),
    (r"\.(self_)?attn\.", ".self_attention."),
    (r"\.proj_q\.", ".query."),
    (r"\.proj_k\.", ".key."),
    (r"\.proj_v\.", ".value."),
    (r"\.proj_o\.", ".out."),
    (r"\.ffn_layer_norm\.", ".feed_forward_norm."),
    (r"\.ffn\.", ".feed_forward."),
    (r"^input_proj\.", "project."),
    (r"^discrete_encoder\.dictionary\.", "discrete."),
    (r"^coupler\.layer_norm\.", "coupler.norm."),
]


def seeded_weights(model: nn.Module, seed: int) -> dict[str, torch.Tensor]:
    """Every parameter of `model` drawn from a normal distribution seeded by `seed` and its name.

    Matrices and kernels get standard deviation 1/sqrt(fan-in), vectors (biases, norms) 0.5: values
    of order one at every layer, none zero and none one, so a swapped or misplaced tensor shows.
    """
    weights = {}
    for name, parameter in sorted(model.named_parameters()):
        generator = torch.Generator().manual_seed(zlib.crc32(f"{seed}:{name}".encode()))
        scale = parameter[0].numel() ** -0.5 if parameter.ndim > 1 else 0.5
        weights[name] = torch.randn(parameter.shape, generator=generator) * scale
    return weights


def weights_digest(weights: dict[str, torch.Tensor]) -> str:
    """SHA-256 over the names and float32 bytes of `weights`, in name order."""
    digest = hashlib.sha256()
    for name in sorted(weights):
        digest.update(name.encode())
        digest.update(weights[name].to(torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()


def fixture_input(seed: int) -> torch.Tensor:
    """The fixed (BATCH, 3, IMAGE_SIZE, IMAGE_SIZE) images in [0, 1]."""
    return torch.rand(BATCH, 3, IMAGE_SIZE, IMAGE_SIZE, generator=torch.Generator().manual_seed(seed))


def oracle_input() -> tuple[torch.Tensor, torch.Tensor]:
    """The Oracle's fixed factors: (BATCH, 2, 3) long discrete and (BATCH, 2, 2) float32 x and y."""
    return torch.tensor(ORACLE_DISCRETE), torch.tensor(ORACLE_FLOAT)


def svib_to_project(name: str) -> str:
    """The project's name (relative to its encoder or decoder) of SVIB's parameter `name`."""
    for pattern, replacement in RENAMES:
        name = re.sub(pattern, replacement, name)
    return name


def _import_svib(checkout: Path) -> None:
    config_module = types.ModuleType("yacs.config")

    class CfgNode(dict):
        """yacs.config.CfgNode as SVIB's configs use it: a dict with attribute access."""

        __getattr__ = dict.__getitem__
        __setattr__ = dict.__setitem__

    config_module.CfgNode = CfgNode  # type: ignore[attr-defined]
    sys.modules.update({"yacs": types.ModuleType("yacs"), "yacs.config": config_module})
    sys.path.insert(0, str(checkout))


def _svib_modules(kind: str) -> tuple[nn.Module, nn.Module]:
    """SVIB's representer and decoder, built as tasks/image_to_image/train.py builds them."""
    from configs.patch_transformer import patch_transformer_configs
    from predictors.patch_transformer import PatchTransformer
    from yacs.config import CfgNode

    if kind == "cnn":
        from configs.cnn_single_vector import cnn_single_vector_configs as representer_configs
        from representers.joint.cnn import CNNSingleVectorEncoder as Representer
    elif kind == "vit":
        from configs.vit import vit_configs as representer_configs
        from representers.joint.vit import ViTEncoder as Representer
    else:
        from configs.gt import gt as representer_configs
        from representers.gt import GTEncoder as Representer
    script = {"image_size": IMAGE_SIZE, "image_channels": 3}
    args_representer = CfgNode({**representer_configs, **script})
    args_predictor = CfgNode({**patch_transformer_configs, **script})
    args_predictor.__representation_size__ = args_representer.__representation_size__
    return Representer(args_representer), PatchTransformer(args_predictor)


def _copy_weights(svib: nn.Module, prefix: str, weights: dict[str, torch.Tensor]) -> list[tuple[str, str]]:
    """Copy `weights` (popped) into `svib`'s trainable parameters; the (SVIB, project) name pairs."""
    pairs = []
    with torch.no_grad():
        for name, parameter in svib.named_parameters():
            if not parameter.requires_grad:  # SVIB's sin-cos tables and attention mask
                continue
            project_name = prefix + svib_to_project(name)
            parameter.copy_(weights.pop(project_name))
            pairs.append((name, project_name))
    return pairs


def _decode(
    representer: nn.Module, predictor: nn.Module, inputs: tuple[torch.Tensor, ...]
) -> tuple[torch.Tensor, torch.Tensor]:
    """SVIB's raw head output (B, patches, 48) and its decoded image, in eval mode."""
    representer.eval()
    predictor.eval()
    patches: list[torch.Tensor] = []
    predictor.head.register_forward_hook(lambda module, inputs, output: patches.append(output))
    with torch.no_grad():
        image = predictor.decode(representer(*inputs))
    return patches[0], image


def main(checkout: str) -> None:
    from vision_bench.models import create_model

    _import_svib(Path(checkout).resolve())
    images = fixture_input(SEED)
    discrete, floats = oracle_input()
    arrays: dict[str, np.ndarray] = {"seed": np.array(SEED), "input": images.numpy(),
                                     "oracle_discrete": discrete.numpy(), "oracle_float": floats.numpy()}
    for kind, name in MODELS.items():
        model = create_model(name, image_size=IMAGE_SIZE, task_conditioning=False)
        weights = seeded_weights(model, SEED)
        digest = weights_digest(weights)
        representer, predictor = _svib_modules(kind)
        pairs = _copy_weights(representer, "encoder.", weights) + _copy_weights(predictor, "decoder.", weights)
        if weights:
            raise SystemExit(f"project parameters without an SVIB counterpart: {sorted(weights)}")
        patches, image = _decode(representer, predictor, (discrete, floats) if kind == "oracle" else (images,))
        arrays |= {
            f"{kind}_patches": patches.numpy(),
            f"{kind}_image": image.numpy(),
            f"{kind}_names": np.array(pairs),
            f"{kind}_sha256": np.array(digest),
        }
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({OUT.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
