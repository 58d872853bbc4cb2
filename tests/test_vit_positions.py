"""vit:'s positions: a fixed 2D sin-cos table (`positions='sincos'`) and timm's RoPE ViTs (task tokens unrotated)."""

from __future__ import annotations

import math
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest
import torch
from timm.layers import apply_rot_embed_cat

from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.models import create_model
from vision_bench.models.vit import identity_rotations

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROPE_VIT = "vit:vit_small_patch16_rope_224"
TINY = {"embed_dim": 32, "depth": 1, "num_heads": 2, "patch_size": 8}


def test_sincos_table_is_the_2d_formula_and_stays_fixed() -> None:
    """Token (row r, column c) of a 2x2 patch grid holds sin(r b), sin(c b), cos(r b), cos(c b), with
    b_k = 10000^(-k / (D/4)); the class token's row is zero; training leaves the table as it is."""
    model = create_model("vit:test_vit", image_size=32, patch_size=16, positions="sincos")
    table = model.encoder.pos_embed.detach().clone()[0]
    dim = table.shape[-1]
    quarter = dim // 4
    bands = [10000 ** (-k / quarter) for k in range(quarter)]
    assert torch.equal(table[0], torch.zeros(dim)), "the class token has no place on the grid"
    for token, (row, col) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)], start=1):
        expected = ([math.sin(row * b) for b in bands] + [math.sin(col * b) for b in bands]
                    + [math.cos(row * b) for b in bands] + [math.cos(col * b) for b in bands])
        assert torch.allclose(table[token], torch.tensor(expected), atol=1e-6), (row, col)
    assert not model.encoder.pos_embed.requires_grad
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    images = torch.rand(2, 3, 32, 32)
    batch = {"input": images, "target": images.flip(-1)}
    for _ in range(3):
        optimizer.zero_grad()
        model.training_loss(batch).backward()  # type: ignore[arg-type]
        optimizer.step()
    assert torch.equal(model.encoder.pos_embed.detach()[0], table)
    assert model.describe()["positions"] == "sincos" and model.describe()["rope"] is False


def test_identity_rotation_rows_leave_their_tokens_alone() -> None:
    torch.manual_seed(0)
    rope_vit = create_model(ROPE_VIT, image_size=32, **TINY)
    rope = rope_vit.encoder.rope.get_embed()  # (16 patches, 2 x head dim)
    x = torch.randn(2, 2, 3 + rope.shape[0], rope.shape[1] // 2)
    rotated = apply_rot_embed_cat(x, identity_rotations(rope, 3))
    assert torch.equal(rotated[:, :, :3], x[:, :, :3])
    assert torch.allclose(rotated[:, :, 3:], apply_rot_embed_cat(x[:, :, 3:], rope))
    assert not torch.allclose(rotated[:, :, 3:], x[:, :, 3:]), "the patch tokens are rotated"


def test_a_rope_vit_reads_the_task_code_and_learns() -> None:
    torch.manual_seed(0)
    # timm's RoPE ViTs start their layer scales at 1e-5, which hides the task tokens' effect below allclose
    model = create_model(ROPE_VIT, image_size=32, task_conditioning=True, init_values=1.0, **TINY)
    assert model.describe()["rope"] is True and model.describe()["positions"] == "none"
    images = torch.rand(4, 3, 32, 32)
    codes = torch.tensor([[1, 0, 0, 0], [2, 0, 0, 0], [1, 0, 0, 0], [2, 0, 0, 0]])
    model.eval()
    same = model(images[:1].expand(2, -1, -1, -1), codes[:2])
    assert not torch.allclose(same[0], same[1]), "another task code, another output"
    model.train()
    batch = {"input": images, "target": images.flip(-1), "task_code": codes}
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(15):
        optimizer.zero_grad()
        loss = model.training_loss(batch)  # type: ignore[arg-type]
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] * 0.8


def test_a_rope_vit_saves_and_loads_to_the_same_outputs() -> None:
    model = create_model(ROPE_VIT, image_size=32, task_conditioning=True, **TINY).eval()
    copy = create_model(ROPE_VIT, image_size=32, task_conditioning=True, **TINY).eval()
    copy.load_state_dict(model.state_dict())
    images, codes = torch.rand(2, 3, 32, 32), torch.tensor([[1, 0, 0, 0], [3, 4, 0, 0]])
    assert torch.equal(model(images, codes), copy(images, codes))


@pytest.mark.parametrize(("name", "options", "error", "needle"), [
    ("vit:test_vit", {"positions": "rope"}, UnknownNameError, "unknown vit positions 'rope'"),
    (ROPE_VIT, {"positions": "sincos", **TINY}, ConfigError, "has no absolute position table"),
    ("vit:vit_small_patch16_rope_mixed_224", {"task_conditioning": True, **TINY}, ConfigError,
     "learns its rotary frequencies per layer"),
])
def test_position_options_that_cannot_apply_are_one_line(name: str, options: dict[str, object],
                                                        error: type[Exception], needle: str) -> None:
    with pytest.raises(error, match=needle) as raised:
        create_model(name, image_size=32, **options)
    assert "\n" not in str(raised.value)
