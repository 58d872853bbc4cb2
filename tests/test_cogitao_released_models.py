"""cogitao:resnet and cogitao:vanilla-tf compute what COGITAO's released models compute.

tests/data/cogitao_models_differential.npz holds the logits of COGITAO's own modules (ktroyan/visualreasoning:
`CustomResNet`, `VisionTransformer` at the paper's Vanilla-TF settings, each with its MLP head and task-token table,
assembled as `BEFOREARCModel` assembles them) on fixed grids and task tokens, with seeded weights
(tests/fixtures_cogitao/make_model_fixture.py, run once from a checkout of that code; it is not needed here). Each
test re-creates the released state dict from its names, shapes and seed, loads it into the project's model through
`RENAMES` (the one place where the two naming schemes meet) and compares the logits of every cell.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from fixtures_cogitao.make_model_fixture import fixture_weights
from torch import nn

from vision_bench.models import create_model
from vision_bench.models.cogitao.grid_io import CLASSES

pytestmark = pytest.mark.usefixtures("one_torch_thread")

FIXTURE = Path(__file__).parent / "data" / "cogitao_models_differential.npz"
TOLERANCE = 1e-5  # logits of order 1-10; the two implementations differ by float32 summation order only
CANVAS = 6
MODELS = {"resnet": "cogitao:resnet", "vit": "cogitao:vanilla-tf"}
Rename = tuple[str, str | Callable[[re.Match[str]], str]]
RENAMES: dict[str, list[Rename]] = {
    "resnet": [  # CustomResNet.backbone = [conv, BN, ReLU, 5 blocks, conv]; block names (conv1, bn1, ...) shared
        (r"^encoder\.backbone\.([01])\.", r"encoder.stem.\1."),
        (r"^encoder\.backbone\.([3-7])\.", lambda match: f"encoder.blocks.{int(match[1]) - 3}."),
        (r"^encoder\.backbone\.8\.", "encoder.final."),
        (r"^decoder\.", "classifier."),
    ],
    "vit": [
        (r"^encoder\.patch_embed\.patch_proj\.", "encoder.stem."),
        (r"^encoder\.ape\.static_ape$", "encoder.positions"),
        (r"^encoder\.transformer_layers\.", "encoder.layers."),
        (r"\.first_norm\.", ".attention_norm."),
        (r"\.attn\.qkv_proj\.", ".attention.qkv."),
        (r"\.attn\.proj\.", ".attention.out."),
        (r"\.second_norm\.", ".ffn_norm."),
        (r"\.ff\.fc1\.", ".ffn.0."),
        (r"\.ff\.fc2\.", ".ffn.3."),
        (r"^encoder\.last_layer_norm\.", "encoder.norm."),
        (r"^decoder\.", "classifier."),
        (r"^embed_task_tokens_seq\.", "encoder.task_tokens."),
    ],
}
"""Released name -> the project's, per model (regular-expression substitutions applied in order)."""
UNREAD = {"resnet": {"embed_task_tokens_seq.weight"}, "vit": set()}
"""Released tensors without a project counterpart: the ResNet's task table, whose tokens' logits COGITAO cuts off
before the loss (the project's unconditioned ResNet has none)."""


def project_name(kind: str, name: str) -> str:
    for pattern, replacement in RENAMES[kind]:
        name = re.sub(pattern, replacement, name)
    return name


def fixture() -> np.lib.npyio.NpzFile:
    return np.load(FIXTURE, allow_pickle=False)


def released_state(kind: str) -> dict[str, torch.Tensor]:
    """The released model's seeded weights, re-created from the fixture's names, shapes and seed."""
    return fixture_weights(fixture(), kind, "make_model_fixture.py")


def project_model(kind: str, weights: dict[str, torch.Tensor]) -> nn.Module:
    """The project's model on the fixture's canvas with the released weights: the ViT's task table has COGITAO's
    32 rows (11 classes + 21 task ids), and its first layer reads the 11 class channels of the released one-hot's
    32 (channels 11-31 are the task ids', never hot in a grid)."""
    options = {"grid_size": CANVAS, "task_conditioning": 32 if kind == "vit" else False}
    model = create_model(MODELS[kind], **options)
    state = {project_name(kind, name): value for name, value in weights.items() if name not in UNREAD[kind]}
    if kind == "vit":
        state["encoder.stem.weight"] = state["encoder.stem.weight"][:, :CLASSES]
        state["encoder.positions"] = state["encoder.positions"][0]
    model.load_state_dict(state, strict=True)
    return model.eval()


def cell_logits(model: nn.Module, kind: str) -> torch.Tensor:
    """The project's logits on the fixture's inputs as COGITAO lays them out: (B, cells row-major, CLASSES)."""
    data = fixture()
    tokens = torch.from_numpy(data["task_tokens"]) if kind == "vit" else None
    with torch.no_grad():
        return model(torch.from_numpy(data["grids"]), tokens).flatten(2).transpose(1, 2)


def max_difference(model: nn.Module, kind: str, mode: str = "eval") -> float:
    return float((cell_logits(model, kind) - torch.from_numpy(fixture()[f"{kind}_{mode}"])).abs().max())


@pytest.mark.parametrize("kind", list(MODELS))
def test_with_the_released_weights_the_models_give_the_released_logits(kind: str) -> None:
    """Eval mode: dropout off, BatchNorm's running statistics."""
    model = project_model(kind, released_state(kind))
    assert max_difference(model, kind) < TOLERANCE


def test_the_resnet_in_training_mode_normalises_with_the_batchs_statistics_as_released() -> None:
    model = project_model("resnet", released_state("resnet")).train()
    assert max_difference(model, "resnet", "train") < TOLERANCE


def test_every_released_tensor_has_one_project_tensor() -> None:
    for kind in MODELS:
        names = [project_name(kind, name) for name in fixture()[f"{kind}_names"] if name not in UNREAD[kind]]
        model = create_model(MODELS[kind], grid_size=CANVAS, task_conditioning=32 if kind == "vit" else False)
        assert sorted(names) == sorted(model.state_dict())


def _swap_activation(model: nn.Module) -> None:
    model.classifier[1] = nn.GELU()


def _drop_skip_norm(model: nn.Module) -> None:
    model.encoder.blocks[0].skip[1] = nn.Identity()


def _drop_final_norm(model: nn.Module) -> None:
    model.encoder.norm = nn.Identity()


def _tanh_gelu(model: nn.Module) -> None:
    for layer in model.encoder.layers:
        layer.ffn[1] = nn.GELU(approximate="tanh")


@pytest.mark.parametrize(
    "kind,change",
    [("resnet", _swap_activation), ("resnet", _drop_skip_norm), ("vit", _swap_activation), ("vit", _drop_final_norm),
     ("vit", _tanh_gelu)],
    ids=["resnet_head_gelu", "resnet_skip_without_bn", "vit_head_gelu", "vit_without_final_norm", "vit_tanh_gelu"],
)
def test_the_fixture_catches_a_changed_layer(kind: str, change: Callable[[nn.Module], None]) -> None:
    """A changed layer moves the logits by more than five times the tolerance: a head's or a norm's by 0.25 or more,
    GELU's tanh approximation in every layer by 8e-5 (the project's logits are the released ones to the bit)."""
    model = project_model(kind, released_state(kind))
    change(model)
    assert max_difference(model, kind) > 5 * TOLERANCE


def test_the_vanilla_tf_sees_the_task_tokens_as_a_set_as_released() -> None:
    """COGITAO appends the task tokens without positions: their order changes nothing, their values do."""
    model = project_model("vit", released_state("vit"))
    grids = torch.from_numpy(fixture()["grids"])
    tokens = torch.from_numpy(fixture()["task_tokens"])
    with torch.no_grad():
        logits = model(grids, tokens)
        torch.testing.assert_close(model(grids, tokens.flip(1)), logits, atol=TOLERANCE, rtol=0)
        assert (model(grids, tokens.roll(1, dims=0)) - logits).abs().max() > 5 * TOLERANCE
