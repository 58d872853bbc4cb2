"""vision_bench.models: every family and head trains, conditioning works, baselines, errors, weights files.

SVIB's presets (svib:i2i-cnn, svib:i2i-vit, svib:oracle, svib:cell-oracle) have their own files,
tests/test_svib_models.py and tests/test_svib_oracle.py."""

from __future__ import annotations

import json
import math
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from vision_bench.cli import main
from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.models import MODELS, create_model
from vision_bench.models.blocks import halvings
from vision_bench.models.heads import PaletteHead
from vision_bench.models.vit import TokenDecoder
from vision_bench.tasks.task_code import TASK_CODE_LENGTH, VOCAB_SIZE

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# The COGITAO-RGB palette (white background), as RenderSpec.colors() gives it.
PALETTE = np.array(
    [
        [255, 255, 255], [0, 116, 217], [255, 65, 54], [46, 204, 64], [255, 220, 0],
        [170, 170, 170], [240, 18, 190], [255, 133, 27], [127, 219, 255], [135, 12, 37],
    ],
    dtype=np.uint8,
)
SMALL_OPTIONS = {
    "unet": {"decoder_width": 4},
    "bottleneck": {"decoder_width": 4, "latent_dim": 32},
    "ground_truth": {"render_spec": {"size": [64, 64]}},
}
"""Options that make a family's test model small or buildable; a family not named here is tested with its defaults."""
FAMILIES = MODELS.names()
TRAINABLE = [family for family in FAMILIES if MODELS[family].trainable]
BASELINES = [family for family in FAMILIES if not MODELS[family].trainable]
GRID_FAMILIES = ["cogitao", "gcog", "carc"]
"""Families whose `forward` gives per-cell or per-patch class logits and whose loss reads the target grid, not an
output head over the image: tests/test_cogitao_models.py, tests/test_gcog_models.py and tests/test_carc_mlc_model.py
test them."""


def smallest_model_name(family: str) -> str:
    """The family's smallest model: `family:test_backbone`, or the family's name for a baseline."""
    backbone = MODELS[family].test_backbone
    return family if backbone is None else f"{family}:{backbone}"


def images_of(grids: torch.Tensor, cell: int) -> torch.Tensor:
    """(B, h, w) color indices -> (B, 3, h * cell, w * cell) palette images in [0, 1]."""
    colors = torch.tensor(PALETTE, dtype=torch.float32) / 255
    return colors[grids].permute(0, 3, 1, 2).repeat_interleave(cell, 2).repeat_interleave(cell, 3)


def random_batch(size: int, batch_size: int = 2, seed: int = 0) -> dict:
    generator = torch.Generator().manual_seed(seed)
    grids = torch.randint(0, 10, (2 * batch_size, size // 8, size // 8), generator=generator)
    images = images_of(grids, 8)
    return {
        "input": images[:batch_size],
        "target": images[batch_size:],
        "task_code": torch.randint(0, VOCAB_SIZE, (batch_size, TASK_CODE_LENGTH), generator=generator),
    }


def shifted_squares(count: int, size: int, shifts: tuple[int, ...], cell: int = 4, seed: int = 0) -> dict:
    """Colored squares on white; sample i's target moves its square `shifts[i % len(shifts)]` cells right.

    Consecutive samples share one input square, one per shift, and the task code's first token
    says which shift applies (1 + its index in `shifts`): only the code tells the targets apart.
    """
    generator = torch.Generator().manual_seed(seed)
    cells = size // cell
    inputs = torch.zeros(count, cells, cells, dtype=torch.long)
    targets = torch.zeros_like(inputs)
    codes = torch.zeros(count, 4, dtype=torch.long)
    margin = max(abs(s) for s in shifts)
    for i in range(count):
        if i % len(shifts) == 0:
            side, color = (int(torch.randint(low, high, (1,), generator=generator)) for low, high in ((2, 4), (1, 10)))
            row = int(torch.randint(0, cells - side + 1, (1,), generator=generator))
            col = int(torch.randint(margin, cells - side - margin + 1, (1,), generator=generator))
        shift = shifts[i % len(shifts)]
        codes[i, 0] = 1 + i % len(shifts)
        inputs[i, row : row + side, col : col + side] = color
        targets[i, row : row + side, col + shift : col + shift + side] = color
    return {"input": images_of(inputs, cell), "target": images_of(targets, cell), "task_code": codes}


# --- every family and head trains, at two sizes, with and without task conditioning ---------------


@pytest.mark.parametrize("family", [family for family in TRAINABLE if family not in GRID_FAMILIES])
@pytest.mark.parametrize("head", ["rgb", "palette"])
@pytest.mark.parametrize("size", [32, 64])
@pytest.mark.parametrize("conditioned", [False, True], ids=["plain", "task_code"])
def test_forward_backward(family: str, head: str, size: int, conditioned: bool) -> None:
    name = smallest_model_name(family)
    model = create_model(
        name, image_size=size, head=head, palette_colors=PALETTE if head == "palette" else None,
        task_conditioning=conditioned, **SMALL_OPTIONS.get(family, {}),
    )
    batch = random_batch(size)
    raw = model(batch["input"], batch["task_code"])
    assert raw.shape == (2, 3 if head == "rgb" else 10, size, size)
    if head == "rgb":
        assert 0 <= raw.min() and raw.max() <= 1
    loss = model.training_loss(batch)
    assert loss.ndim == 0 and torch.isfinite(loss)
    loss.backward()
    unused = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
    assert not unused, f"parameters without gradient (DDP would fail): {unused[:5]}"
    prediction = model.predict(batch)
    assert prediction.shape == (2, 3, size, size) and not prediction.requires_grad
    assert 0 <= prediction.min() and prediction.max() <= 1
    description = model.describe()
    assert description["family"] == name.split(":")[0] and description["backbone"] == name.split(":")[1]
    assert description["head"] == head == model.head and model.trainable and model.image_size == size
    assert description["parameters"] == sum(p.numel() for p in model.parameters())
    assert description["task_conditioning"] == (VOCAB_SIZE if conditioned else None)


@pytest.mark.parametrize("name", ["unet:test_convnext", "bottleneck:test_efficientnet", "unet:test_mambaout"])
def test_other_encoder_strides(name: str) -> None:
    """Encoders whose first feature map is at stride 4 (convnext), whose channels differ, or whose maps are
    channels-last (mambaout) still decode."""
    model = create_model(name, image_size=64, decoder_width=4)
    loss = model.training_loss(random_batch(64))
    loss.backward()
    assert torch.isfinite(loss)
    assert model.predict(random_batch(64)).shape == (2, 3, 64, 64)


@pytest.mark.parametrize("global_pool", ["avg", "map"])
def test_vit_pooling_variants_leave_no_unused_weights(global_pool: str) -> None:
    """A ViT built for average or attention pooling: its final norm is used on every token, no pool head remains."""
    model = create_model("vit:test_vit", image_size=64, global_pool=global_pool)
    model.training_loss(random_batch(64)).backward()
    assert all(p.grad is not None for p in model.parameters())


def test_halvings_reach_full_resolution() -> None:
    assert halvings(32) == [16, 8, 4, 2, 1]
    assert halvings(4) == [2, 1]
    assert halvings(1) == [1]
    assert halvings(3) == [1]


# --- learning --------------------------------------------------------------------------------------


def fit(model: torch.nn.Module, batch: dict, steps: int, lr: float, below: float = math.inf) -> tuple[float, float]:
    """(first loss, last loss) of at most `steps` full-batch Adam steps; stops once the loss is 10x
    lower than at the start and below `below`."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses: list[float] = []
    for _ in range(steps):
        loss = model.training_loss(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if losses[-1] < min(losses[0] / 10, below):
            break
    return losses[0], losses[-1]


# A small U-Net: 8-pixel images (one pixel per cell), the encoder cut after stride 8 (timm's
# out_indices passes through).
SMALL_UNET = {"image_size": 8, "decoder_width": 8, "out_indices": (0, 1, 2)}


def test_palette_head_overfits_64_samples() -> None:
    torch.manual_seed(0)
    batch = shifted_squares(64, 8, shifts=(1,), cell=1)
    model = create_model("unet:test_resnet", head="palette", palette_colors=PALETTE, **SMALL_UNET)
    first, last = fit(model, batch, steps=150, lr=1e-2)
    assert last < first / 10
    wrong = (model.predict(batch) != batch["target"]).any(dim=1).float().mean().item()
    copy_wrong = (batch["input"] != batch["target"]).any(dim=1).float().mean().item()
    assert wrong < copy_wrong / 2, f"{wrong:.1%} of pixels wrong (copying the input: {copy_wrong:.1%})"


def test_task_code_selects_the_transformation() -> None:
    """Each input twice, shifted left or right as its task code says: only a conditioned model can fit both.

    Without the code, the best possible prediction of a pair is the mean of its two targets; the
    conditioned model must get well below that floor.
    """
    torch.manual_seed(0)
    batch = shifted_squares(64, 8, shifts=(1, -1), cell=1)
    pairs = batch["target"].view(32, 2, 3, 8, 8)
    unconditioned_floor = F.mse_loss(pairs, pairs.mean(dim=1, keepdim=True).expand_as(pairs)).item()
    model = create_model("unet:test_resnet", task_conditioning=True, **SMALL_UNET)
    first, last = fit(model, batch, steps=250, lr=1e-2, below=unconditioned_floor / 2)
    assert last < first / 10
    assert last < unconditioned_floor / 2, f"loss {last:.4f}; the floor without the code: {unconditioned_floor:.4f}"


def test_vit_task_tokens_change_the_output() -> None:
    model = create_model("vit:test_vit", image_size=64, task_conditioning=True).eval()
    batch = random_batch(64)
    same_image = batch["input"][:1].expand(2, -1, -1, -1)
    codes = torch.tensor([[1, 0, 0, 0], [0, 1, 0, 0]])
    output = model(same_image, codes)
    assert not torch.allclose(output[0], output[1]), "the same token at another position is another task"


def test_film_starts_as_identity() -> None:
    """Zero-initialised FiLM: an untrained conditioned CNN gives the same output for every task code."""
    model = create_model("unet:test_resnet", image_size=64, decoder_width=4, task_conditioning=True).eval()
    same_image = random_batch(64)["input"][:1].expand(2, -1, -1, -1)
    output = model(same_image, torch.tensor([[1, 2, 0, 0], [5, 0, 0, 0]]))
    assert torch.equal(output[0], output[1])


# --- heads -------------------------------------------------------------------------------------------


def test_palette_targets_loss_and_image_by_hand() -> None:
    head = PaletteHead(PALETTE, background_weight=0.2)
    target = images_of(torch.tensor([[[0, 3]]]), 1)  # one row: background, then color 3
    assert head.target_indices(target).tolist() == [[[0, 3]]]
    logits = torch.zeros(1, 10, 1, 2)
    logits[0, 0, 0, 0] = 2.0  # background pixel: the right class 2 logits above the rest
    background_ce = -math.log(math.exp(2) / (math.exp(2) + 9))
    expected = (0.2 * background_ce + 1.0 * math.log(10)) / 1.2
    assert head.loss(logits, target).item() == pytest.approx(expected, rel=1e-6)
    image = head.to_image(logits)
    assert torch.equal(image, torch.tensor(PALETTE[[0, 0]], dtype=torch.float32).T.reshape(1, 3, 1, 2) / 255)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 9), min_size=1, max_size=24), st.floats(-0.14, 0.14))
def test_palette_nearest_color_recovers_noisy_indices(indices: list[int], noise: float) -> None:
    """Any pixel within half the smallest palette distance of a color maps back to that color."""
    head = PaletteHead(PALETTE, background_weight=0.2)
    grid = torch.tensor(indices).view(1, 1, -1)
    image = images_of(grid, 1)
    distances = torch.cdist(head.colors, head.colors) + torch.eye(10) * 9
    shift = noise * distances.min().item() / math.sqrt(3) / 0.3  # |shift| * sqrt(3) < half the distance
    assert torch.equal(head.target_indices(image + shift), grid)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**16))
def test_background_weight_one_is_plain_cross_entropy(seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    head = PaletteHead(PALETTE, background_weight=1.0)
    target = images_of(torch.randint(0, 10, (2, 3, 3), generator=generator), 1)
    logits = torch.randn(2, 10, 3, 3, generator=generator)
    expected = F.cross_entropy(logits, head.target_indices(target))
    assert head.loss(logits, target).item() == pytest.approx(expected.item(), rel=1e-6)


@pytest.mark.parametrize("loss", ["mse", "l1"])
def test_rgb_losses(loss: str) -> None:
    model = create_model("unet:test_resnet", image_size=32, decoder_width=4, loss=loss)
    batch = random_batch(32)
    output = model(batch["input"])
    expected = F.mse_loss(output, batch["target"]) if loss == "mse" else F.l1_loss(output, batch["target"])
    assert model.training_loss(batch).item() == pytest.approx(expected.item(), rel=1e-6)


@settings(max_examples=10, deadline=None)
@given(st.sampled_from([(2, 4, 3), (4, 2, 10), (1, 8, 3)]), st.integers(1, 3))
def test_token_decoder_puts_each_patch_in_place(shape: tuple[int, int, int], batch_size: int) -> None:
    """With an identity projection, decoding row-major patch tokens reassembles the image exactly."""
    grid, patch, channels = shape
    dim = patch * patch * channels
    decoder = TokenDecoder(dim, grid, patch, channels)
    with torch.no_grad():
        decoder.project.weight.copy_(torch.eye(dim))
        decoder.project.bias.zero_()
    image = torch.rand(batch_size, channels, grid * patch, grid * patch)
    tokens = image.view(batch_size, channels, grid, patch, grid, patch).permute(0, 2, 4, 3, 5, 1)
    assert torch.equal(decoder(tokens.reshape(batch_size, grid * grid, dim)), image)


# --- baselines -----------------------------------------------------------------------------------------


def test_copy_input_predicts_the_input_exactly() -> None:
    model = create_model("copy_input", image_size=64, head="palette", task_conditioning=True)
    batch = random_batch(64)
    prediction = model.predict(batch)
    assert torch.equal(prediction, batch["input"]) and prediction.data_ptr() != batch["input"].data_ptr()
    assert model.trainable is False and model.describe()["parameters"] == 0
    assert not list(model.parameters())
    with pytest.raises(ConfigError, match="no trainable parameters"):
        model.training_loss(batch)


def test_mean_target_predicts_the_mean_training_target() -> None:
    model = create_model("mean_target", image_size=16)
    with pytest.raises(ConfigError, match="call fit"):
        model.predict(random_batch(16))
    first, second = random_batch(16, batch_size=2, seed=1), random_batch(16, batch_size=3, seed=2)
    model.fit([first, second])
    expected = torch.cat([first["target"], second["target"]]).mean(dim=0)
    prediction = model.predict(random_batch(16, batch_size=4))
    assert prediction.shape == (4, 3, 16, 16)
    assert torch.allclose(prediction, expected.expand(4, -1, -1, -1), atol=1e-6)
    assert model.trainable is False and not list(model.parameters())
    restored = create_model("mean_target", image_size=16)
    restored.load_state_dict(model.state_dict())
    assert torch.equal(restored.predict(first), model.predict(first))


def ground_truth_batch(spec, seeds: list[int]) -> tuple[dict, torch.Tensor]:
    """Two grids of different sizes, their sequences, and the targets drawn from hand-made output grids."""
    from render.raster import render_batch
    from vision_bench.data.collate import pad_grids
    from vision_bench.data.images import batch_tensor

    first = np.zeros((5, 6), dtype=np.int64)
    first[1:3, 1:3] = [[2, 2], [2, 3]]
    moved = np.zeros_like(first)
    moved[1:3, 2:4] = [[2, 2], [2, 3]]  # translate_right: one column to the right
    second = np.zeros((4, 4), dtype=np.int64)
    second[1:3, 0:2] = [[5, 5], [5, 0]]
    recolored = np.zeros_like(second)
    recolored[1:3, 0:2] = [[6, 6], [0, 6]]  # mirror_vertical flips left-right in the box, then 5 -> 6
    grids = pad_grids([torch.from_numpy(first), torch.from_numpy(second)], 5, 6)
    batch = {
        "input": batch_tensor(render_batch([first, second], spec, seeds)),
        "input_grid": grids,
        "grid_shape": torch.tensor([[5, 6], [4, 4]]),
        "sequence": [("translate_right",), ("mirror_vertical", "change_shape_color")],
        "render_seed": torch.tensor(seeds),
    }
    return batch, batch_tensor(render_batch([moved, recolored], spec, seeds))


SEEDED_SPEC = {"background": "random", "jitter": {"max_shift": 2}}


@pytest.mark.parametrize("spec_options", [{}, SEEDED_SPEC], ids=["plain", "seeded"])
def test_ground_truth_predicts_the_rendered_target(spec_options: dict) -> None:
    from render.spec import RenderSpec

    spec = RenderSpec(size=(24, 24), **spec_options)
    batch, expected = ground_truth_batch(spec, seeds=[3, 11])
    model = create_model("ground_truth", image_size=24, render_spec=spec.to_dict())
    assert torch.equal(model.predict(batch), expected)
    assert model.trainable is False and not list(model.parameters())
    with pytest.raises(ConfigError, match="sequence"):
        model.predict({key: value for key, value in batch.items() if key != "sequence"})


# --- the old name 'oracle' fails, pointing to ground_truth (and to SVIB's Oracle, svib:oracle) -------------

RENAMED = "'oracle' is now 'ground_truth'"


@pytest.mark.parametrize("name", ["oracle", "oracle:test_resnet"])
def test_create_model_refuses_the_old_oracle_name(name: str) -> None:
    with pytest.raises(UnknownNameError, match=RENAMED) as caught:
        create_model(name, image_size=24)
    assert "'svib:oracle'" in str(caught.value) and "\n" not in str(caught.value)


def test_baselines_and_bench_configs_refuse_the_old_oracle_name() -> None:
    from vision_bench.bench.config import BenchConfig
    from vision_bench.evaluation import check_baselines

    with pytest.raises(UnknownNameError, match=RENAMED):
        check_baselines(["copy_input", "oracle"])
    with pytest.raises(ConfigError, match=f"baselines: {RENAMED}"):
        BenchConfig.from_dict({"experiments": ["envgen/G1/1"], "models": ["unet:test_resnet"], "baselines": ["oracle"]})


@pytest.mark.parametrize("command", ["models", "evaluate", "train", "bench"])
def test_cli_refuses_the_old_oracle_name_in_one_line(command: str, tmp_path, capsys) -> None:
    import yaml

    config = tmp_path / "config.yaml"
    if command == "train":
        config.write_text(yaml.safe_dump({"dataset": {"study": "envgen/G1/1", "n_train": 4, "n_val": 2},
                                          "model": {"name": "oracle"}}))
    else:
        config.write_text(yaml.safe_dump({"experiments": ["envgen/G1/1"], "models": ["unet:test_resnet"],
                                          "baselines": ["copy_input", "oracle"]}))
    argv = {
        "models": ["models", "--describe", "oracle"],
        "evaluate": ["evaluate", str(tmp_path / "run"), "--baselines", "copy_input,oracle"],
        "train": ["train", str(config), "--out", str(tmp_path / "run")],
        "bench": ["bench", str(config), "--out", str(tmp_path / "bench")],
    }[command]
    assert main(argv) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and RENAMED in error, error
    assert not (tmp_path / "run").exists() and not (tmp_path / "bench").exists()


# --- weights from a local file ---------------------------------------------------------------------------


def test_pretrained_file_loads_into_the_cnn_encoder(tmp_path) -> None:
    import timm

    torch.manual_seed(123)
    source = timm.create_model("test_resnet")
    path = tmp_path / "test_resnet.pth"
    torch.save(source.state_dict(), path)
    model = create_model("unet:test_resnet", image_size=64, decoder_width=4, pretrained_file=str(path))
    saved = source.state_dict()
    loaded = model.encoder.features.state_dict()
    assert loaded and all(torch.equal(value, saved[key]) for key, value in loaded.items())


def test_pretrained_file_loads_into_the_vit_at_a_new_size(tmp_path) -> None:
    import timm

    torch.manual_seed(123)
    source = timm.create_model("test_vit")
    path = tmp_path / "test_vit.pth"
    torch.save(source.state_dict(), path)
    model = create_model("vit:test_vit", image_size=64, pretrained_file=path)
    assert torch.equal(model.encoder.blocks[0].attn.qkv.weight, source.blocks[0].attn.qkv.weight)
    assert model.encoder.pos_embed.shape[1] == 1 + (64 // 16) ** 2  # resampled from 160 pixels


@pytest.mark.parametrize("name", ["unet:test_resnet", "vit:test_vit"])
def test_pretrained_weights_bring_their_input_normalization(tmp_path, name: str) -> None:
    """Starting weights normalise the inputs with the backbone's pretrained mean and std (test models: 0.5, 0.5);
    the values become a build option, so the exported model, rebuilt without its weights, computes the same; a
    model from scratch reads [0, 1] pixels; a given normalisation wins; other families refuse the option."""
    import timm

    from vision_bench.models import load_pretrained, save_pretrained

    backbone = name.split(":")[1]
    path = tmp_path / f"{backbone}.pth"
    torch.save(timm.create_model(backbone).state_dict(), path)
    torch.manual_seed(0)
    model = create_model(name, image_size=64, pretrained_file=str(path)).eval()
    half = {"mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5]}
    assert model.describe()["input_normalization"] == half and model.build_options["input_normalization"] == half
    images = torch.rand(2, 3, 64, 64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        normalized = model(images)
        model.input_norm = None
        assert not torch.allclose(model(images), normalized)  # the normalisation changes what the backbone sees
        model.input_norm = create_model(name, image_size=64, pretrained_file=str(path)).input_norm
    save_pretrained(model, tmp_path / "export")
    loaded = load_pretrained(tmp_path / "export")
    with torch.no_grad():
        assert torch.equal(loaded(images), normalized)
    assert create_model(name, image_size=64).describe()["input_normalization"] is None
    mine = {"mean": [0.1, 0.2, 0.3], "std": [1.0, 2.0, 3.0]}
    given = create_model(name, image_size=64, pretrained_file=str(path), input_normalization=mine)
    assert given.describe()["input_normalization"] == mine
    with pytest.raises(ConfigError, match="input_normalization std must be positive"):
        create_model(name, image_size=64, input_normalization={"mean": [0, 0, 0], "std": [1, 0, 1]})
    with pytest.raises(ConfigError, match="takes no input_normalization"):
        create_model("svib:i2i-cnn", image_size=64, input_normalization=mine)


def test_pretrained_file_errors(tmp_path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        create_model("unet:test_resnet", pretrained_file=tmp_path / "missing.pth")
    import timm

    path = tmp_path / "vit.pth"
    torch.save(timm.create_model("test_vit").state_dict(), path)
    with pytest.raises(ConfigError, match="another architecture"):
        create_model("unet:test_resnet", image_size=64, pretrained_file=path)
    with pytest.raises(ConfigError, match="without weights"):
        create_model("copy_input", pretrained_file=path)


# --- bad input: one clear error each ---------------------------------------------------------------------

PALETTE_HEAD = {"head": "palette", "palette_colors": PALETTE}


@pytest.mark.parametrize(
    "name,options,error,message",
    [
        ("unett:test_resnet", {}, UnknownNameError, "did you mean 'unet'"),
        ("unet:test_resnett", {}, UnknownNameError, "'test_resnet'"),
        ("resnet18", {}, ConfigError, "unet:resnet18"),
        ("unet", {}, ConfigError, "after the colon"),
        ("ground_truth:test_resnet", {}, ConfigError, "takes no backbone"),
        ("unet:test_resnet", {"image_size": 48}, ConfigError, "multiple of 32"),
        ("bottleneck:test_resnet", {"image_size": 0}, ConfigError, "positive integer"),
        ("vit:test_vit", {"image_size": 72}, ConfigError, "do not tile"),
        ("vit:test_vit", {"image_size": 64, "patch_size": 12}, ConfigError, "multiple of patch_size"),
        ("vit:test_resnet", {}, ConfigError, "VisionTransformer"),
        ("vit:test_vit", {"decoder": "conv"}, UnknownNameError, "vit decoder"),
        ("unet:test_resnet", {"patch_size": 8}, ConfigError, "apply to vit"),
        ("unet:test_resnet", {"head": "palette"}, ConfigError, "palette_colors"),
        ("unet:test_resnet", {"head": "palette", "palette_colors": PALETTE[:9]}, ConfigError, r"\(10, 3\)"),
        ("unet:test_resnet", {"head": "pallete"}, UnknownNameError, "did you mean 'palette'"),
        ("unet:test_resnet", {"loss": "huber"}, UnknownNameError, "rgb loss"),
        ("unet:test_resnet", {**PALETTE_HEAD, "loss": "mse"}, ConfigError, "cross-entropy"),
        ("unet:test_resnet", {**PALETTE_HEAD, "background_weight": 0}, ConfigError, "positive"),
        ("unet:test_resnet", {"task_conditioning": "yes"}, ConfigError, "task_conditioning"),
        ("unet:test_resnet", {"no_such_option": 1}, ConfigError, "rejected an option"),
        ("copy_input", {"latent_dim": 8}, ConfigError, "does not take option"),
        ("ground_truth", {}, ConfigError, "render_spec"),
    ],
)
def test_bad_options_raise_one_clear_error(name: str, options: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        create_model(name, **options)


def test_batch_errors() -> None:
    model = create_model("unet:test_resnet", image_size=64, decoder_width=4, task_conditioning=True)
    batch = random_batch(64)
    with pytest.raises(ConfigError, match="no 'task_code'"):
        model.predict({"input": batch["input"]})
    with pytest.raises(ConfigError, match=r"expects \(2, 4\)"):
        model(batch["input"], batch["task_code"][:, :3])
    with pytest.raises(ConfigError, match=f"tokens 0..{VOCAB_SIZE - 1}"):
        model.predict({**batch, "task_code": batch["task_code"] + VOCAB_SIZE})
    with pytest.raises(ConfigError, match="image_size=32"):
        model.predict(random_batch(32))
    with pytest.raises(ConfigError, match=r"batch\['target'\]"):
        model.training_loss({"input": batch["input"], "task_code": batch["task_code"]})


# --- command line ------------------------------------------------------------------------------------------


def test_models_command_lists_families_then_baselines(capsys) -> None:
    assert main(["models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    listed = [line.split("\t") for line in lines if not line.startswith("#")]
    assert listed == [[MODELS[family].usage, MODELS.description(family)] for family in FAMILIES]
    assert FAMILIES == TRAINABLE + BASELINES, "the networks are listed before the baselines"
    assert FAMILIES[:4] == ["unet", "bottleneck", "vit", "svib"]
    assert any("timm" in line for line in lines if line.startswith("#"))


DESCRIBABLE = [family for family in FAMILIES if "render_spec" not in SMALL_OPTIONS.get(family, {})]


@pytest.mark.parametrize("family", DESCRIBABLE)
def test_models_command_describes_the_familys_own_options(family: str, capsys) -> None:
    assert main(["models", "--describe", smallest_model_name(family), "--image-size", "64"]) == 0
    description = json.loads(capsys.readouterr().out)
    assert description["family"] == family and description["image_size"] == 64
    declared = description["family_options"]
    assert declared == json.loads(json.dumps(MODELS[family].options.describe()))
    assert all(entry["help"] for entry in declared.values())
    shown = {name: entry["default"] for name, entry in declared.items() if name in description}
    assert {name: description[name] for name in shown if shown[name] is not None} == {
        name: default for name, default in shown.items() if default is not None
    }, "a model built with the defaults reports the declared defaults"


# --- every registered family, from its registry entry ------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_builds_from_its_registry_entry(family: str) -> None:
    entry = MODELS[family]
    model = create_model(smallest_model_name(family), image_size=64, **SMALL_OPTIONS.get(family, {}))
    assert type(model).family == family == model.family and isinstance(model, entry)
    assert model.name == smallest_model_name(family) and model.image_size == 64
    assert entry.usage.startswith(family) and MODELS.description(family)
    assert (entry.example_backbone is None) == (entry.test_backbone is None) == (not entry.trainable)


@pytest.mark.parametrize("family", TRAINABLE)
def test_a_network_family_needs_a_name_after_the_colon(family: str) -> None:
    with pytest.raises(ConfigError, match=f"e.g. {family}:{MODELS[family].example_backbone}"):
        create_model(family)


@pytest.mark.parametrize("family", BASELINES)
def test_a_baseline_takes_no_name_after_the_colon(family: str) -> None:
    with pytest.raises(ConfigError, match="takes no backbone"):
        create_model(f"{family}:test_resnet")


def options_of_other_families(family: str) -> dict[str, object]:
    """Each option that only other families declare -> a value one of them accepts."""
    values: dict[str, object] = {}
    for other in FAMILIES:
        for option, entry in MODELS[other].options.describe().items():
            if option not in MODELS[family].options.names():
                values.setdefault(option, 8 if entry["default"] is None else entry["default"])
    return values


@pytest.mark.parametrize(
    "family,option", [(family, option) for family in FAMILIES for option in options_of_other_families(family)]
)
def test_an_option_of_another_family_is_refused_when_set(family: str, option: str) -> None:
    value = options_of_other_families(family)[option]
    with pytest.raises(ConfigError, match=f"does not take option\\(s\\) {option};") as caught:
        create_model(smallest_model_name(family), image_size=64, **SMALL_OPTIONS.get(family, {}), **{option: value})
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("family", FAMILIES)
def test_options_of_other_families_left_unset_are_ignored(family: str) -> None:
    """A config may carry every family's options at None (unset): each family builds, unchanged."""
    unset = dict.fromkeys(options_of_other_families(family))
    options = {"image_size": 64, **SMALL_OPTIONS.get(family, {})}
    torch.manual_seed(0)
    model = create_model(smallest_model_name(family), **options, **unset)
    torch.manual_seed(0)
    plain = create_model(smallest_model_name(family), **options)
    assert model.describe() == plain.describe()
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), plain.state_dict().values()))
