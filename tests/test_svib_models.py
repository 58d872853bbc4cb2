"""SVIB's baselines (svib:i2i-cnn, svib:i2i-vit, svib:oracle) and svib:cell-oracle: SVIB's settings, SVIB's
outputs, shapes, learning, the cell oracle's grid input, errors, and the same decoder behind vit:<timm vit>
decoder='transformer'. What only svib:oracle does (reading scenes) is tested in tests/test_svib_oracle.py.

Each SVIB setting is asserted against a literal with the file and line of SVIB's released code
(github.com/systematic-visual-imagination/svib) it comes from; tests/data/svib_differential.npz
(made by tests/fixtures_svib/make_fixture.py with SVIB's own modules) holds SVIB's outputs.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import pytest
import torch
from fixtures_svib.make_fixture import seeded_weights, weights_digest
from torch import nn

from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.models import create_model
from vision_bench.models.patch_transformer import PatchTransformerDecoder, sincos_1d, sincos_2d, unpatchify
from vision_bench.tasks.scenes.factors import SceneObject, draw
from vision_bench.tasks.task_code import TASK_CODE_LENGTH, VOCAB_SIZE
from vision_bench.train import TrainConfig, load_checkpoint
from vision_bench.train.checkpoint import CheckpointError, save_checkpoint
from vision_bench.train.components import build_model, resolve_spec

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PRESETS = ["svib:i2i-cnn", "svib:i2i-vit", "svib:oracle", "svib:cell-oracle"]
SIZE = 16  # the smallest image every preset takes: one 16-pixel ViT patch, 4x4 decoder patches
CELLS = 4  # grids of 4x4 cells, 4 pixels each
SVIB_OUTPUTS = Path(__file__).parent / "data" / "svib_differential.npz"
TOLERANCE = 1e-5  # outputs of order 1; SVIB's and the project's differ by 1.5e-6 at most (float32 summation order)
PALETTE = torch.tensor(
    [[255, 255, 255], [0, 116, 217], [255, 65, 54], [46, 204, 64], [255, 220, 0],
     [170, 170, 170], [240, 18, 190], [255, 133, 27], [127, 219, 255], [135, 12, 37]],
    dtype=torch.float32,
) / 255


def fit_losses(model: nn.Module, batch: dict, *, steps: int, lr: float) -> list[float]:
    """The training losses of `steps` Adam steps on one fixed batch (a model that learns lowers them)."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        loss = model.training_loss(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def grid_batch(batch_size: int, seed: int = 0) -> dict:
    """Random input grids, their images, targets (the grids recolored c -> c + 1) and task codes."""
    generator = torch.Generator().manual_seed(seed)
    grids = torch.randint(0, 10, (batch_size, CELLS, CELLS), generator=generator)

    def image(g: torch.Tensor) -> torch.Tensor:
        cell = SIZE // CELLS
        return PALETTE[g].permute(0, 3, 1, 2).repeat_interleave(cell, 2).repeat_interleave(cell, 3)

    return {
        "input": image(grids),
        "target": image((grids + 1) % 10),
        "input_grid": grids,
        "grid_shape": torch.full((batch_size, 2), CELLS),
        "task_code": torch.randint(0, VOCAB_SIZE, (batch_size, TASK_CODE_LENGTH), generator=generator),
    }


SCENES = [
    [SceneObject(0, 1, 2, 1, 2), SceneObject(3, 3, 1, 9, 10)],
    [SceneObject(2, 0, 0, 8, 1), SceneObject(1, 2, 3, 1, 8)],
    [SceneObject(1, 3, 3, 2, 2), SceneObject(0, 1, 0, 10, 11)],
    [SceneObject(3, 2, 1, 10, 3), SceneObject(2, 0, 2, 2, 9)],
]
"""Scenes of two objects on a 16x16 grid: every colour, shape and size at least once."""


def scene_batch(batch_size: int) -> dict:
    """`SCENES` (cycled) drawn at 16x16 cells, one pixel each, as inputs and the same scenes with every
    colour moved on by one as targets; task codes as in `grid_batch`."""
    scenes = [SCENES[index % len(SCENES)] for index in range(batch_size)]

    def drawn(shift: int) -> torch.Tensor:
        return torch.stack([torch.from_numpy(draw([SceneObject((o.colour + shift) % 4, o.shape, o.size, o.top, o.left)
                                                   for o in scene], SIZE)).long() for scene in scenes])

    grids = drawn(0)
    return {**grid_batch(batch_size), "input": PALETTE[grids].permute(0, 3, 1, 2),
            "target": PALETTE[drawn(1)].permute(0, 3, 1, 2), "input_grid": grids,
            "grid_shape": torch.full((batch_size, 2), SIZE)}


def batch_for(name: str, batch_size: int) -> dict:
    """A batch svib:`name` reads: scenes for svib:oracle, random grids for the others."""
    return scene_batch(batch_size) if name == "svib:oracle" else grid_batch(batch_size)


def xavier_bound(layer: nn.Linear, gain: float) -> float:
    fan_out, fan_in = layer.weight.shape
    return gain * math.sqrt(6 / (fan_in + fan_out))


# --- SVIB's settings ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PRESETS)
def test_the_decoder_has_svibs_settings(name: str) -> None:
    decoder = create_model(name, image_size=128).decoder
    assert isinstance(decoder, PatchTransformerDecoder)
    settings = decoder.settings
    assert settings.depth == 8 == len(decoder.transformer.blocks)  # configs/patch_transformer.py:5
    assert settings.heads == 4  # configs/patch_transformer.py:6
    assert settings.width == 192 == decoder.project.out_features  # configs/patch_transformer.py:7
    assert settings.dropout == 0.1  # configs/patch_transformer.py:8
    assert settings.patch_size == 4 and decoder.grid == 128 // 4  # configs/patch_transformer.py:9
    assert decoder.project.bias is None  # predictors/patch_transformer/model.py:17
    # one query per patch: its 2D sin-cos position and nothing else (model.py:19, 33-34)
    assert torch.equal(decoder.queries, sincos_2d(32, 32, 192))
    assert decoder.head.out_features == 4 * 4 * 3  # model.py:24
    for block in decoder.transformer.blocks:
        attention = block.self_attention
        assert attention.heads == 4 and attention.dropout == 0.1 and block.cross_attention is not None
        assert all(layer.bias is None for layer in (attention.query, attention.key, attention.value, attention.out))
        assert block.feed_forward[0].out_features == 4 * 192  # transformer.py:137-141
        assert isinstance(block.feed_forward[1], nn.ReLU)
    first, second = decoder.transformer.blocks[:2]
    assert first.first and not second.first  # transformer.py:152-159: the first block normalises its input
    gain = (3 * 8) ** -0.5  # transformer.py:176
    out = decoder.transformer.blocks[3].cross_attention.out
    assert 0.9 * xavier_bound(out, gain) < out.weight.abs().max() <= xavier_bound(out, gain)


def test_the_i2i_cnn_encoder_has_svibs_settings() -> None:
    encoder = create_model("svib:i2i-cnn", image_size=128).encoder
    convolutions = [m for m in encoder.convolutions if isinstance(m, nn.Conv2d)]
    assert len(convolutions) == 4  # representers/joint/cnn/cnn.py:10-13
    for convolution in convolutions:
        assert convolution.kernel_size == (5, 5) and convolution.stride == (2, 2) and convolution.padding == (2, 2)
        assert convolution.out_channels == 64  # configs/cnn_single_vector.py:5
    assert encoder.project.in_features == 64 * 8 * 8  # cnn.py:16-17: flattened at image_size / 16
    assert encoder.project.out_features == 64  # configs/cnn_single_vector.py:6
    assert encoder(torch.rand(1, 3, 128, 128)).shape == (1, 1, 64)  # cnn.py:30: a single vector


def test_the_i2i_vit_encoder_has_svibs_settings() -> None:
    encoder = create_model("svib:i2i-vit", image_size=128).encoder
    assert encoder.patchify.kernel_size == (16, 16) == encoder.patchify.stride  # configs/vit.py:6
    assert encoder.patchify.out_channels == 192  # configs/vit.py:5
    assert len(encoder.transformer.blocks) == 8  # configs/vit.py:7
    for block in encoder.transformer.blocks:
        assert block.self_attention.heads == 8  # configs/vit.py:8
        assert block.self_attention.dropout == 0.1  # configs/vit.py:9
        assert block.cross_attention is None
    assert torch.equal(encoder.positions, sincos_2d(8, 8, 192))  # representers/joint/vit/model.py:13-14
    gain = (2 * 8) ** -0.5  # representers/joint/vit/transformer.py:94
    out = encoder.transformer.blocks[5].self_attention.out
    assert 0.9 * xavier_bound(out, gain) < out.weight.abs().max() <= xavier_bound(out, gain)
    assert encoder(torch.rand(1, 3, 128, 128)).shape == (1, 64, 192)  # one vector per patch


def test_the_oracle_encoder_has_svibs_settings() -> None:
    """SVIB's GTEncoder (representers/gt/model.py, configs/gt.py): its tables, coupler and parameter count."""
    model = create_model("svib:oracle", image_size=128)
    encoder = model.encoder
    assert encoder.discrete.weight.shape == (128 * 32, 192)  # configs/gt.py:5-7; model.py:13
    assert 0.95 < encoder.discrete.weight.std() < 1.05  # nn.Embedding's N(0, 1), as SVIB leaves it
    exponents = torch.arange(0, 192, 2) / 192  # model.py:40: a positive exponent, times 2 pi
    assert torch.allclose(encoder.coefficients, 2 * math.pi * 10000.0 ** exponents, rtol=1e-6)
    assert encoder.coefficients[0] == pytest.approx(2 * math.pi) and encoder.coefficients[-1] > 2 * math.pi * 9000
    assert torch.equal(encoder.positions, sincos_1d(64, 192))  # configs/gt.py:8 (max_len); model.py:62
    assert encoder.positions[3, :2].tolist() == pytest.approx([math.sin(3), math.cos(3)])
    coupler = encoder.coupler
    assert len(coupler.blocks) == 4  # configs/gt.py:9
    for block in coupler.blocks:
        attention = block.self_attention
        assert attention.heads == 4 and attention.dropout == 0.1 and block.cross_attention is None  # gt.py:10-11
    assert coupler.blocks[0].first and not coupler.blocks[1].first  # transformer.py:70-78
    gain = (2 * 4) ** -0.5  # transformer.py:94
    out = coupler.blocks[2].self_attention.out
    assert 0.9 * xavier_bound(out, gain) < out.weight.abs().max() <= xavier_bound(out, gain)
    # the sin-cos tables are fixed (SVIB: parameters with requires_grad=False; here buffers, not saved)
    trainable = sum(p.numel() for p in encoder.parameters() if p.requires_grad)
    assert trainable == sum(p.numel() for p in encoder.parameters()) == 2_563_200
    assert set(model.state_dict()) == {name for name, _ in model.named_parameters()}
    assert model.describe()["parameters"] == 2_563_200 + 4_782_000  # SVIB's decoder reading 192-d tokens
    factors = torch.tensor([[[0, 1, 2, 0.25, 0.75], [3, 3, 3, 0.5, 0.5]]])
    assert encoder(factors[..., :3].long(), factors[..., 3:]).shape == (1, 2 * 5, 192)  # 5 tokens an object


def test_the_cell_oracle_reads_one_token_per_cell_of_the_input_grid() -> None:
    model = create_model("svib:cell-oracle", image_size=SIZE).eval()
    assert model.grid_size == 30 and model.encoder.out_dim == 192  # configs/gt.py:7 (emb_size)
    grids = torch.full((2, 3, 5), -1)
    grids[0, :2, :4] = 7  # a 2x4 grid in a batch padded to 3x5
    grids[1] = 2
    memory = model.encoder(grids)
    assert memory.shape == (2, 3 * 5, 192)
    colors, positions = model.encoder.colors.weight, sincos_2d(30, 30, 192)  # position (r, c): 30 * r + c
    assert torch.allclose(memory[0, 0], colors[7] + positions[0])  # row 0, column 0: color 7
    assert torch.allclose(memory[0, 5 + 1], colors[7] + positions[30 + 1])  # row 1, column 1
    assert torch.allclose(memory[1, 5 * 2 + 4], colors[2] + positions[30 * 2 + 4])  # row 2, column 4


def test_the_cell_oracle_ignores_the_cells_outside_each_grid() -> None:
    """Outside cells are masked out of cross-attention: a grid's output does not depend on the padding
    around it, on the other grids of its batch or on grid_size (positions depend on (row, column) only)."""
    torch.manual_seed(0)
    grids = torch.randint(0, 10, (2, 5, 6))
    grids[1, 3:] = -1  # a 3x6 grid padded to 5x6
    task_code = torch.tensor([[1, 2, 0, 0], [3, 0, 0, 0]])
    small = create_model("svib:cell-oracle", image_size=SIZE, grid_size=6).eval()
    large = create_model("svib:cell-oracle", image_size=SIZE, grid_size=30).eval()
    large.load_state_dict(small.state_dict())
    output = small(grids, task_code)
    padded = torch.full((2, 20, 25), -1)
    padded[:, :5, :6] = grids
    torch.testing.assert_close(large(padded, task_code), output, atol=1e-6, rtol=0)
    torch.testing.assert_close(small(grids[1:, :3], task_code[1:]), output[1:], atol=1e-6, rtol=0)
    changed = padded.clone()
    changed[1, 2, 5] = (changed[1, 2, 5] + 1) % 10  # a cell inside the 3x6 grid
    assert not torch.allclose(large(changed, task_code)[1], output[1], atol=1e-3)
    plain = create_model("svib:cell-oracle", image_size=SIZE, task_conditioning=False).eval()  # no task tokens
    assert plain(padded, None).isfinite().all()


def test_sincos_2d_encodes_the_row_then_the_column() -> None:
    table = sincos_2d(3, 4, 8).view(3, 4, 8)
    assert torch.equal(table[:, 0, :4], table[:, 3, :4])  # first half: the row only
    assert torch.equal(table[0, :, 4:], table[2, :, 4:])  # second half: the column only
    frequency = 10000 ** (-2 / 4)  # second frequency of a 4-wide half
    expected = [math.sin(2), math.cos(2), math.sin(2 * frequency), math.cos(2 * frequency)]
    assert table[2, 0, :4].tolist() == pytest.approx(expected, abs=1e-6)
    with pytest.raises(ConfigError, match="divisible by 4"):
        sincos_2d(2, 2, 6)


def test_unpatchify_puts_each_patch_in_place() -> None:
    image = torch.rand(2, 3, 8, 8)
    patches = image.view(2, 3, 2, 4, 2, 4).permute(0, 2, 4, 3, 5, 1).reshape(2, 4, 48)  # row-major, (py, px, c)
    assert torch.equal(unpatchify(patches, 2, 4, 3), image)


# --- SVIB's outputs ------------------------------------------------------------------------------------


FIXTURE_MODELS = {"cnn": "svib:i2i-cnn", "vit": "svib:i2i-vit", "oracle": "svib:oracle"}


def run_with_svibs_input(kind: str, weights: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """The fixture's model `kind` with `weights`, on the fixture's input (the oracle: its factors, packed as the
    model reads them): its decoder head's output and its image."""
    fixture = np.load(SVIB_OUTPUTS, allow_pickle=False)
    model = create_model(FIXTURE_MODELS[kind], image_size=64, task_conditioning=False).eval()
    model.load_state_dict(weights)
    if kind == "oracle":
        inputs = torch.cat([torch.from_numpy(fixture["oracle_discrete"]).float(),
                            torch.from_numpy(fixture["oracle_float"])], dim=-1)
    else:
        inputs = torch.from_numpy(fixture["input"])
    model.check_inputs(inputs)
    patches: list[torch.Tensor] = []
    model.decoder.head.register_forward_hook(lambda module, inputs, output: patches.append(output))
    with torch.no_grad():
        image = model.raw_output(inputs, None)
    return patches[0], image.clamp(0, 1)  # SVIB's decode clamps; the project's rgb head takes a sigmoid


@pytest.mark.parametrize("kind", list(FIXTURE_MODELS))
def test_with_svibs_weights_the_models_give_svibs_outputs(kind: str) -> None:
    """SVIB's own modules, given the same (seeded) weights, produced the fixture's outputs."""
    fixture = np.load(SVIB_OUTPUTS, allow_pickle=False)
    model = create_model(FIXTURE_MODELS[kind], image_size=64, task_conditioning=False)
    weights = seeded_weights(model, int(fixture["seed"]))
    assert sorted(weights) == sorted(fixture[f"{kind}_names"][:, 1]), "a parameter was added, dropped or renamed"
    assert weights_digest(weights) == str(fixture[f"{kind}_sha256"]), (
        "seeded_weights no longer draws the fixture's weights; re-run tests/fixtures_svib/make_fixture.py"
    )
    patches, image = run_with_svibs_input(kind, weights)
    torch.testing.assert_close(patches, torch.from_numpy(fixture[f"{kind}_patches"]), atol=TOLERANCE, rtol=0)
    torch.testing.assert_close(image, torch.from_numpy(fixture[f"{kind}_image"]), atol=TOLERANCE, rtol=0)


@pytest.mark.parametrize(
    "kind,first,second",
    [
        ("vit", "decoder.transformer.blocks.3.cross_attention.query.weight",
         "decoder.transformer.blocks.3.cross_attention.key.weight"),
        ("vit", "decoder.transformer.blocks.0.self_norm.weight", "decoder.transformer.blocks.0.self_norm.bias"),
        ("vit", "encoder.transformer.blocks.7.feed_forward.0.bias", "encoder.transformer.blocks.7.feed_forward.2.bias"),
        ("oracle", "encoder.coupler.blocks.0.self_norm.weight", "encoder.coupler.blocks.0.self_norm.bias"),
        ("oracle", "encoder.coupler.blocks.3.self_attention.query.weight",
         "encoder.coupler.blocks.3.self_attention.key.weight"),
    ],
    ids=["cross_query_key", "first_norm_weight_bias", "feed_forward_biases", "coupler_first_norm",
         "coupler_query_key"],
)
def test_the_fixture_catches_a_misplaced_weight(kind: str, first: str, second: str) -> None:
    """The tolerance is far below what one misplaced tensor changes, even a query swapped with its key
    (2e-4: the seeded weights give mild attention). On i2i-vit and the oracle: with i2i-cnn's single memory
    vector, cross-attention's softmax is 1 whatever its query and key."""
    fixture = np.load(SVIB_OUTPUTS, allow_pickle=False)
    weights = seeded_weights(create_model(FIXTURE_MODELS[kind], image_size=64, task_conditioning=False), 0)
    size = min(weights[first].numel(), weights[second].numel())
    kept = weights[first].flatten()[:size].clone()
    weights[first].view(-1)[:size] = weights[second].view(-1)[:size]
    weights[second].view(-1)[:size] = kept
    patches, _ = run_with_svibs_input(kind, weights)
    assert (patches - torch.from_numpy(fixture[f"{kind}_patches"])).abs().max() > 10 * TOLERANCE


def test_the_fixture_catches_another_factor_table_row() -> None:
    """The oracle's factor slots have their own rows (value + 128 * slot): the fixture's shape of 127 read as
    row 127 (the colour's) instead of 255 is far off."""
    fixture = np.load(SVIB_OUTPUTS, allow_pickle=False)
    weights = seeded_weights(create_model("svib:oracle", image_size=64, task_conditioning=False), 0)
    weights["encoder.discrete.weight"][255] = weights["encoder.discrete.weight"][127]
    patches, _ = run_with_svibs_input("oracle", weights)
    assert (patches - torch.from_numpy(fixture["oracle_patches"])).abs().max() > 10 * TOLERANCE


# --- shapes and learning --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.parametrize("head", ["rgb", "palette"])
@pytest.mark.parametrize("conditioned", [False, True], ids=["plain", "task_code"])
def test_output_shapes(name: str, head: str, conditioned: bool) -> None:
    model = create_model(name, image_size=SIZE, head=head, task_conditioning=conditioned,
                         palette_colors=(PALETTE * 255).round().numpy().astype(np.uint8) if head == "palette" else None)
    batch = batch_for(name, 2)
    raw = model(model.batch_inputs(batch), batch["task_code"])
    assert raw.shape == (2, 3 if head == "rgb" else 10, SIZE, SIZE)
    loss = model.training_loss(batch)
    loss.backward()
    unused = [n for n, p in model.named_parameters() if p.grad is None]
    assert not unused, f"parameters without gradient (DDP would fail): {unused[:5]}"
    prediction = model.predict(batch)
    assert prediction.shape == (2, 3, SIZE, SIZE) and 0 <= prediction.min() and prediction.max() <= 1
    description = model.describe()
    assert (description["family"], description["backbone"]) == ("svib", name.split(":")[1])
    assert description["task_conditioning"] == (VOCAB_SIZE if conditioned else None)
    assert description["decoder_patch_size"] == 4 and description["decoder_depth"] == 8


@pytest.mark.parametrize("name", PRESETS)
def test_a_few_training_steps_lower_the_loss(name: str) -> None:
    torch.manual_seed(0)
    model = create_model(name, image_size=SIZE)
    batch = batch_for(name, 4)
    losses = fit_losses(model, batch, steps=12, lr=1e-3)
    assert losses[-1] < 0.8 * losses[0], losses


def test_the_cell_oracle_trains_in_the_training_loop(tmp_path) -> None:
    """Generated data carries the input grids to the model through the loader and the device feed."""
    from vision_bench.train import train

    config = TrainConfig.from_dict({
        "dataset": {"study": "envgen/G1/1", "n_train": 4, "n_val": 2, "spec": {"size": [SIZE, SIZE]}},
        "model": {"name": "svib:cell-oracle"},
        "training": {"batch_size": 2, "eval_batch_size": 2, "max_steps": 2, "log_every": 1},
        "schedule": {"warmup_steps": 1},
    })
    result = train(config, tmp_path / "run", progress=False)
    assert result.step == 2 and math.isfinite(result.final_metrics["val_id/loss"])
    model, _, _ = load_checkpoint(result.last_checkpoint)
    assert model.name == "svib:cell-oracle" and model.describe()["task_conditioning"] == VOCAB_SIZE


# --- the cell oracle reads grids and the task code ------------------------------------------------------


def test_the_cell_oracle_reads_the_grid_not_the_pixels() -> None:
    model = create_model("svib:cell-oracle", image_size=SIZE, grid_size=CELLS).eval()
    batch = grid_batch(2)
    prediction = model.predict(batch)
    assert torch.equal(model.predict({**batch, "input": torch.rand_like(batch["input"])}), prediction)
    assert not torch.allclose(model.predict({**batch, "input_grid": (batch["input_grid"] + 1) % 10}), prediction)


def test_the_cell_oracle_reads_the_task_code_unless_told_not_to() -> None:
    model = create_model("svib:cell-oracle", image_size=SIZE, grid_size=CELLS).eval()
    assert model.describe()["task_conditioning"] == VOCAB_SIZE
    batch = grid_batch(2)
    same_grid = batch["input_grid"][:1].expand(2, -1, -1)
    output = model(same_grid, torch.tensor([[1, 0, 0, 0], [0, 1, 0, 0]]))
    assert not torch.allclose(output[0], output[1]), "the same token at another position is another task"
    plain = create_model("svib:cell-oracle", image_size=SIZE, grid_size=CELLS, task_conditioning=False)
    assert plain.describe()["task_conditioning"] is None
    assert plain.predict({key: value for key, value in batch.items() if key != "task_code"}).shape == (2, 3, SIZE, SIZE)


@pytest.mark.parametrize("with_shapes", [True, False], ids=["grid_shape", "no_grid_shape"])
def test_the_cell_oracle_reads_inputs_padded_to_larger_targets(with_shapes: bool) -> None:
    """collate pads input grids to the largest grid of the batch, targets included: the padding is cut
    from the grids themselves, so it never counts against grid_size, with or without 'grid_shape'."""
    model = create_model("svib:cell-oracle", image_size=SIZE, grid_size=CELLS).eval()
    batch = grid_batch(2)
    padded = torch.full((2, CELLS + 2, CELLS + 2), -1)
    padded[:, :CELLS, :CELLS] = batch["input_grid"]
    padded_batch = {**batch, "input_grid": padded}
    if not with_shapes:
        del padded_batch["grid_shape"]
    assert torch.equal(model.predict(padded_batch), model.predict(batch))
    assert torch.isfinite(model.training_loss(padded_batch))


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda b: {k: v for k, v in b.items() if k not in ("input_grid", "grid_shape")}, "has images only"),
        (lambda b: {**b, "input_grid": torch.zeros(2, 5, 5, dtype=torch.long), "grid_shape": torch.full((2, 2), 5)},
         "grid_size=5 or more"),
        (lambda b: {**b, "input_grid": b["input_grid"].float()}, "integer grids"),
        (lambda b: {**b, "input_grid": b["input_grid"] + 10}, r"colors 0\.\.9"),
        (lambda b: {**b, "input_grid": b["input_grid"] - 3}, r"colors 0\.\.9"),
        (lambda b: {**b, "input_grid": torch.cat([b["input_grid"][:1], torch.full((1, 4, 4), -1)])}, "no cells"),
    ],
    ids=["no_grids", "grid_too_large", "float_grid", "bad_color", "below_minus_one", "empty_grid"],
)
def test_cell_oracle_batch_errors(change, message: str) -> None:
    model = create_model("svib:cell-oracle", image_size=SIZE, grid_size=4)
    with pytest.raises(ConfigError, match=message) as caught:
        model.training_loss(change(grid_batch(2)))
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "name,options,error,message",
    [
        ("svib:i2i-rnn", {}, UnknownNameError, "did you mean 'i2i-cnn'"),
        ("svib", {}, ConfigError, "after the colon"),
        ("svib:i2i-cnn", {"image_size": 40}, ConfigError, "multiple of 16"),
        ("svib:i2i-vit", {"image_size": 40}, ConfigError, "multiple of svib:i2i-vit's 16-pixel patches"),
        ("svib:oracle", {"image_size": 18}, ConfigError, "multiple of 4"),
        ("svib:cell-oracle", {"image_size": 18}, ConfigError, "multiple of 4"),
        ("svib:i2i-vit", {"decoder_depth": 0}, ConfigError, "decoder_depth"),
        ("svib:oracle", {"grid_size": 30}, ConfigError, "does not take option\\(s\\) grid_size"),
        ("svib:cell-oracle", {"patch_size": 8}, ConfigError, "takes grid_size"),
        ("svib:cell-oracle", {"grid_size": 0}, ConfigError, "grid_size must be a positive integer"),
        ("svib:oracle", {"pretrained": True}, ConfigError, "from scratch"),
        ("svib:i2i-cnn", {"pretrained_file": "weights.pth"}, ConfigError, "from scratch"),
    ],
)
def test_bad_options_raise_one_clear_error(name: str, options: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        create_model(name, **options)


# --- the same decoder behind a timm ViT ------------------------------------------------------------------


@pytest.mark.parametrize("conditioned", [False, True], ids=["plain", "task_code"])
def test_vit_transformer_decoder_trains(conditioned: bool) -> None:
    model = create_model("vit:test_vit", image_size=SIZE, patch_size=8, decoder="transformer", decoder_depth=1,
                         task_conditioning=conditioned)
    batch = grid_batch(2)
    assert model(batch["input"], batch["task_code"]).shape == (2, 3, SIZE, SIZE)
    model.training_loss(batch).backward()
    unused = [n for n, p in model.named_parameters() if p.grad is None]
    assert not unused, f"parameters without gradient (DDP would fail): {unused[:5]}"


def test_vit_transformer_decoder_is_svibs_patch_decoder() -> None:
    model = create_model("vit:test_vit", image_size=32, decoder="transformer")
    decoder = model.decoder
    assert isinstance(decoder, PatchTransformerDecoder)
    assert (decoder.settings.depth, decoder.settings.width, decoder.settings.heads) == (8, 192, 4)
    assert decoder.project.in_features == model.encoder.embed_dim
    assert model.describe()["decoder_depth"] == 8
    shallow = create_model("vit:test_vit", image_size=32, decoder="transformer", decoder_depth=2)
    assert len(shallow.decoder.transformer.blocks) == 2


def test_a_vit_checkpoint_from_before_svibs_decoder_fails_with_one_line(tmp_path) -> None:
    """vit: decoder: transformer was timm blocks over the patch tokens (`decoder.position`, `decoder.blocks.*`)."""
    from timm.models.vision_transformer import Block

    config = TrainConfig.from_dict({
        "dataset": {"study": "envgen/G1/1", "spec": {"size": [SIZE, SIZE]}},
        "model": {"name": "vit:test_vit", "options": {"patch_size": 8, "decoder": "transformer"}},
    })
    model = build_model(config, resolve_spec(config))
    dim = model.encoder.embed_dim
    old_decoder = nn.Module()  # the decoder's modules before SVIB's, with their default 2 blocks
    old_decoder.position = nn.Parameter(torch.zeros(1, 4, dim))
    old_decoder.blocks = nn.Sequential(Block(dim, 2, qkv_bias=True), Block(dim, 2, qkv_bias=True))
    old_decoder.norm = nn.LayerNorm(dim)
    old_decoder.project = nn.Linear(dim, 8 * 8 * 3)
    state = {name: value for name, value in model.state_dict().items() if not name.startswith("decoder.")}
    state |= {f"decoder.{name}": value for name, value in old_decoder.state_dict().items()}
    path = tmp_path / "last.pt"
    save_checkpoint(path, {
        "config": config.to_dict(), "config_hash": config.experiment_hash(), "model": state, "optimizer": {},
        "scheduler": {}, "scaler": {}, "rng": {}, "epoch": 0, "step": 0,
    })
    with pytest.raises(CheckpointError, match="predates SVIB's patch-transformer decoder.*retrain the model") as caught:
        load_checkpoint(path)
    assert "\n" not in str(caught.value)
