"""cogitao:grid-tf and cogitao:pl-tf: their canvas, positions, PonderNet halting, training, saving and predicted grids.

Parameter counts with 15 classes, derived by hand below, at every canvas (the positions are computed, not learned):
cogitao:grid-tf 1,211,407 and cogitao:pl-tf 862,224 unconditioned; with `task_conditioning: true` (29 task tokens)
1,215,119 and 869,648. The paper says "roughly 1.2M" for every model; PL-TF is nearer 0.9M, and so is the
release's (876,816 trainable in CompGen with its one-hot of 36 channels and task table of 36 rows; Grid-TF
1,218,959). That the layers compute what COGITAO's do is tests/test_cogitao_grid_tf_released.py's job.
"""

from __future__ import annotations

import functools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from render.raster import render_batch
from render.spec import RenderSpec
from vision_bench.errors import ConfigError
from vision_bench.models import create_model, load_pretrained, save_pretrained
from vision_bench.models.cogitao.grid_io import PAD_CLASS
from vision_bench.models.cogitao.pl_tf import (
    EPSILON,
    LAMBDA_P,
    MAX_STEPS,
    generator_draws,
    sample_draws,
    sample_seed,
    truncated_geometric,
)
from vision_bench.models.cogitao.positions import CellRotary, object_positions, sincos_2d
from vision_bench.models.cogitao.visual_tokens import (
    NEWLINE,
    VT_CLASSES,
    X_END,
    XY_END,
    Y_END,
    ImageCanvasStem,
    visual_token_canvas,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PRESETS = ["grid-tf", "pl-tf"]
GRID = 4  # the test models' largest grid: a canvas of 4 + 2 cells
SPEC = RenderSpec(size=(16, 16), layout="cell:4:top-left")


def small(preset: str, **options: object) -> nn.Module:
    return create_model(f"cogitao:{preset}", grid_size=GRID, image_size=16, render_spec=SPEC, **options)


def grid_batch(count: int = 4, seed: int = 0) -> dict:
    """Grids of 4x4 and 3x2 cells (padded with -1), targets recoloured c -> (c + 1) % 10."""
    generator = torch.Generator().manual_seed(seed)
    shapes = [(3, 2) if index % 2 else (GRID, GRID) for index in range(count)]
    inputs = torch.full((count, GRID, GRID), -1)
    targets = torch.full((count, GRID, GRID), -1)
    for index, (height, width) in enumerate(shapes):
        grid = torch.randint(0, 10, (height, width), generator=generator)
        inputs[index, :height, :width] = grid
        targets[index, :height, :width] = (grid + 1) % 10
    return {"input_grid": inputs, "target_grid": targets, "grid_shape": torch.tensor(shapes),
            "target_grid_shape": torch.tensor(shapes), "render_seed": torch.arange(count),
            "task_code": torch.randint(0, 29, (count, 4), generator=generator)}


# --- sizes --------------------------------------------------------------------------------------------------------


def test_parameter_counts_are_hand_counted_at_the_papers_canvases() -> None:
    linear = lambda cin, cout: cin * cout + cout  # noqa: E731
    norm = lambda c: 2 * c  # noqa: E731
    layer = lambda d: norm(d) + linear(d, 3 * d) + linear(d, d) + norm(d) + linear(d, 4 * d) + linear(4 * d, d)  # noqa: E731
    head = lambda d: linear(d, 128) + linear(128, VT_CLASSES)  # noqa: E731
    stem = lambda d: linear(VT_CLASSES, d)  # the 1x1 convolution of the 15 one-hot channels  # noqa: E731
    grid_tf = stem(128) + 6 * 128 + 2 * 128 + 6 * layer(128) + norm(128) + head(128)  # registers, mixer's a and b
    pl_tf = stem(256) + layer(256) + norm(256) + linear(256, 128) + linear(128, 1) + head(256)
    assert (grid_tf, pl_tf) == (1_211_407, 862_224)
    for largest in (15, 20):  # EnvGen's and CompGen's canvases: 17 x 17 and 22 x 22
        for preset, count, width in (("grid-tf", grid_tf, 128), ("pl-tf", pl_tf, 256)):
            model = create_model(f"cogitao:{preset}", grid_size=largest)
            assert model.describe()["parameters"] == count and model.describe()["canvas"] == largest + 2
            conditioned = create_model(f"cogitao:{preset}", grid_size=largest, task_conditioning=True)
            assert conditioned.describe()["parameters"] == count + 29 * width
    # the release's trainable parameters in CompGen: 22 more one-hot channels (21 for PL-TF), the mixer's unread
    # position_scale, a task table of 36 rows
    released_compgen = (grid_tf + 22 * 128 + 128 + 36 * 128, pl_tf + 21 * 256 + 36 * 256)
    assert released_compgen == (1_218_959, 876_816)


def test_the_released_initialisation() -> None:
    """Grid-TF: every linear layer of the encoder truncated-normal 0.02 with zero bias, the registers
    truncated-normal 0.02; PL-TF: xavier-uniform, the halting node's too; the stems and heads PyTorch's."""
    torch.manual_seed(0)
    encoder = create_model("cogitao:grid-tf").encoder
    linears = [module for module in encoder.modules() if isinstance(module, nn.Linear)]
    assert len(linears) == 4 * 6 and all(not module.bias.any() for module in linears)
    assert 0.019 < torch.cat([module.weight.flatten() for module in linears]).std() < 0.021
    assert encoder.registers.shape == (1, 6, 128) and 0.015 < encoder.registers.std() < 0.025
    assert torch.equal(encoder.mixer.input_weight, torch.ones(1, 128))
    body = create_model("cogitao:pl-tf").body
    for module in [*body.block.modules(), *body.halting.modules()]:
        if isinstance(module, nn.Linear):
            bound = math.sqrt(6 / sum(module.weight.shape))
            assert module.weight.abs().max() <= bound and module.weight.abs().max() > 0.9 * bound
            assert not module.bias.any()
    assert body.classifier[0].bias.any() and body.classifier[0].weight.abs().max() <= 256**-0.5


# --- canvas and positions -------------------------------------------------------------------------------------------


def test_the_visual_token_canvas_of_a_hand_written_example() -> None:
    grids = torch.full((2, 4, 4), -1)
    grids[0, :2, :3] = torch.tensor([[1, 2, 3], [4, 5, 6]])
    grids[1] = 7
    p, x, y, c, n = 10, 11, 12, 13, 14
    expected = torch.tensor([
        [[1, 2, 3, x, p, n], [4, 5, 6, x, p, n], [y, y, y, c, p, n], [p, p, p, p, p, n], [p, p, p, p, p, n],
         [p, p, p, p, p, n]],
        [[7, 7, 7, 7, x, n], [7, 7, 7, 7, x, n], [7, 7, 7, 7, x, n], [7, 7, 7, 7, x, n], [y, y, y, y, c, n],
         [p, p, p, p, p, n]],
    ])
    assert torch.equal(visual_token_canvas(grids, 4, "input", "fix"), expected)
    with pytest.raises(ConfigError, match="do not fit the canvas of 3x3 cells; make it larger"):
        visual_token_canvas(grids, 3, "input", "make it larger")


def test_the_2d_sincos_table_by_hand() -> None:
    """Width 8: q = 2 frequencies 1 and 1/100; [sin(col w), cos(col w), sin(row w), cos(row w)], row-major."""
    table = sincos_2d(2, 8)
    row, col = 1, 0
    expected = [math.sin(col), math.sin(col / 100), math.cos(col), math.cos(col / 100),
                math.sin(row), math.sin(row / 100), math.cos(row), math.cos(row / 100)]
    torch.testing.assert_close(table[row * 2 + col], torch.tensor(expected))
    torch.testing.assert_close(table[3, 4:], torch.tensor([math.sin(1), math.sin(0.01), math.cos(1), math.cos(0.01)]))


def test_the_object_positions_by_hand() -> None:
    """Width 16: the id over 4 frequencies (1, 1/10, 1/100, 1/1000), then the row, then the column over 2 (1, 1/100)."""
    ids = torch.tensor([[0, 3, 0, 0]])
    table = object_positions(ids, 2, 16)[0, 1]  # row 0, column 1, object 3
    omega = [1, 0.1, 0.01, 0.001]
    expected = ([math.sin(3 * w) for w in omega] + [math.cos(3 * w) for w in omega]
                + [0, 0, 1, 1] + [math.sin(1), math.sin(0.01), math.cos(1), math.cos(0.01)])
    torch.testing.assert_close(table, torch.tensor(expected, dtype=torch.float32))


def test_rope_angles_and_rotation_by_hand() -> None:
    """Side 8: frequencies linspace(1, (8 // 2) / 2, 4) pi, positions linspace(-1, 1, 8) per axis; dims 0-7 turn
    with the row, 8-15 with the column, in interleaved pairs; dims 16-31 and the tokens outside the cells stay."""
    rotary = CellRotary(8, 32, prefix=1)
    freqs = [math.pi * (1 + k / 3) for k in range(4)]
    row, col = 2, 5
    position = lambda i: -1 + 2 * i / 7  # noqa: E731
    angles = [position(row) * f for f in freqs for _ in range(2)] + [position(col) * f for f in freqs for _ in range(2)]
    torch.testing.assert_close(rotary.sin[row * 8 + col], torch.tensor(angles).sin())
    torch.testing.assert_close(rotary.cos[row * 8 + col], torch.tensor(angles).cos())
    heads = torch.randn(1, 2, 1 + 64 + 3, 32)
    turned = rotary(heads)
    assert torch.equal(turned[:, :, 0], heads[:, :, 0]) and torch.equal(turned[:, :, 65:], heads[:, :, 65:])
    assert torch.equal(turned[..., 16:], heads[..., 16:])
    cell = 1 + row * 8 + col
    a, b = heads[0, 1, cell, 10], heads[0, 1, cell, 11]  # the column's second frequency
    theta = torch.tensor(angles[10])
    torch.testing.assert_close(turned[0, 1, cell, 10:12], torch.stack([a * theta.cos() - b * theta.sin(),
                                                                       b * theta.cos() + a * theta.sin()]))


# --- PonderNet ------------------------------------------------------------------------------------------------------


def test_the_prior_is_the_truncated_geometric() -> None:
    expected = [0.05, 0.0475, 0.045125, 0.04286875, 0.0407253125, 0.038689046875, 0.95**6]
    torch.testing.assert_close(truncated_geometric(MAX_STEPS, LAMBDA_P), torch.tensor(expected))
    assert abs(sum(expected) - 1) < 1e-12


@functools.cache
def tiny_body() -> nn.Module:
    """PL-TF's body on a canvas of 3 x 3 cells, in eval mode."""
    return create_model("cogitao:pl-tf", grid_size=1).body.eval()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.floats(0, 1), min_size=2, max_size=2), min_size=MAX_STEPS - 1, max_size=MAX_STEPS - 1))
def test_the_halting_distribution_sums_to_one(lambdas: list[list[float]]) -> None:
    """With the halting node's lambda_t given (two samples): p_t = lambda_t prod_{j<t} (1 - lambda_j) up to the last
    step run, which takes the rest; the unroll stops after the first step where both samples have less than EPSILON
    left, else after MAX_STEPS."""
    given_lambdas = torch.tensor(lambdas)  # (steps, samples)
    body = tiny_body()
    calls = iter(given_lambdas)
    body.halting_probability = lambda state: next(calls)
    with torch.no_grad():
        run = body(torch.full((2, 3, 3), 10), None)
    distribution = torch.stack(run.distribution)
    torch.testing.assert_close(distribution.sum(dim=0), torch.ones(2), atol=1e-5, rtol=0)
    assert (distribution >= 0).all()
    remaining, steps = torch.ones(2), MAX_STEPS
    for step in range(MAX_STEPS - 1):
        if step < len(run.distribution) - 1:
            torch.testing.assert_close(distribution[step], remaining * given_lambdas[step])
        remaining = remaining * (1 - given_lambdas[step])
        if bool((remaining < EPSILON).all()):
            steps = step + 1
            break
    assert len(run.distribution) == len(run.logits) == steps and len(run.halting) == min(steps, MAX_STEPS - 1)


# --- training, predictions, saving ---------------------------------------------------------------------------------


@pytest.mark.parametrize("preset", PRESETS)
def test_a_few_steps_lower_the_loss(preset: str) -> None:
    torch.manual_seed(0)
    model = small(preset, task_conditioning=True)
    batch = grid_batch(seed=1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(6):
        loss = model.training_loss(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0], losses
    unused = [name for name, parameter in model.named_parameters() if parameter.grad is None]
    assert not unused, f"parameters without gradient (DDP would fail): {unused}"


def test_the_loss_reads_the_target_on_the_visual_token_canvas() -> None:
    """Grid-TF's loss is the cross-entropy of its logits against the target grid laid out with visual tokens (its
    own size), PL-TF's the PonderNet loss against the same canvas."""
    batch = grid_batch()
    batch["target_grid"][0] = -1
    batch["target_grid"][0, :2, :3] = 5  # a target of another size than its input
    target = visual_token_canvas(batch["target_grid"], GRID, "target", "")
    assert target[0, 2, 3] == 13 and target[0, 0, 3] == 11
    torch.manual_seed(0)
    grid = small("grid-tf").eval()
    logits = grid(grid.batch_inputs(batch))
    torch.testing.assert_close(grid.training_loss(batch), torch.nn.functional.cross_entropy(logits, target))
    pl = small("pl-tf").eval()
    torch.testing.assert_close(pl.training_loss(batch), pl.body.loss(pl.batch_inputs(batch), target, None))


@pytest.mark.parametrize("preset", PRESETS)
def test_dropout_acts_in_training_only(preset: str) -> None:
    model = small(preset, task_conditioning=True)
    batch = grid_batch()
    inputs = model.batch_inputs(batch)
    with torch.no_grad():
        for mode, differs in (("train", True), ("eval", False)):
            getattr(model, mode)()
            first, second = (model.class_loss(inputs, inputs, batch["task_code"]) for _ in range(2))
            assert (not torch.equal(first, second)) == differs


def test_pl_tf_predictions_are_reproducible_and_drawn() -> None:
    """The same batch gives the same grids on every call; other generators draw other halting steps (the halting
    node's lambda_t is neither 0 nor 1)."""
    torch.manual_seed(0)
    model = small("pl-tf").eval()
    batch = grid_batch(count=8)
    assert torch.equal(model.predict_grids(batch), model.predict_grids(batch))
    inputs = model.batch_inputs(batch)
    with torch.no_grad():
        steps = {tuple(model.body.halting_logits(inputs, None, generator_draws(torch.Generator().manual_seed(seed)))[1]
                       .tolist()) for seed in range(6)}
    assert len(steps) > 1


def test_pl_tf_halts_each_sample_the_same_way_in_any_batch() -> None:
    """A sample's halting step depends on its own input and task code only: the steps of a batch, of the batch
    reversed, and of each sample alone agree, and they differ between samples (lambda_t = 0.5 at every step)."""
    torch.manual_seed(0)
    model = small("pl-tf", task_conditioning=True).eval()
    with torch.no_grad():
        model.body.halting[-2].weight.zero_()
        model.body.halting[-2].bias.zero_()
    batch = grid_batch(count=12)
    inputs, code = model.batch_inputs(batch), batch["task_code"]

    def steps(rows: list[int]) -> list[int]:
        with torch.no_grad():
            drawn = model.body.halting_logits(inputs[rows], code[rows], sample_draws(inputs[rows], code[rows]))[1]
        return [int(s) for s in drawn]

    everything = steps(list(range(12)))
    assert steps(list(range(11, -1, -1))) == everything[::-1]
    assert [steps([b])[0] for b in range(12)] == everything
    assert len(set(everything)) > 2


def test_pl_tf_sample_seeds_read_the_input_and_the_task_code() -> None:
    canvas = torch.zeros(5, 5, dtype=torch.long)
    other = canvas.clone()
    other[2, 3] = 4
    seeds = {sample_seed(canvas, None), sample_seed(other, None), sample_seed(canvas, torch.tensor([1])),
             sample_seed(canvas, torch.tensor([2]))}
    assert len(seeds) == 4 and all(0 <= s < 2**63 for s in seeds)
    assert sample_seed(canvas, None) == sample_seed(canvas.clone(), None)


@pytest.mark.parametrize("preset", PRESETS)
def test_predicted_visual_tokens_inside_a_grid_are_no_colour(preset: str) -> None:
    """Classes 10-14 predicted inside a grid become NO_COLOUR (10), colours stay, cells beyond the grid are -1; the
    drawing shows no colour as background."""
    model = small(preset).eval()
    head = model.classifier if preset == "grid-tf" else model.body.classifier
    batch = grid_batch()
    for cls, expected in ((13, 10), (11, 10), (10, 10), (7, 7)):
        with torch.no_grad():
            head[-1].weight.zero_()
            head[-1].bias.copy_(torch.nn.functional.one_hot(torch.tensor(cls), VT_CLASSES).float())
        grids = model.predict_grids(batch)
        assert grids[1, :3, :2].eq(expected).all() and grids[1, 3:].eq(-1).all() and grids[1, :, 2:].eq(-1).all()
        assert grids[0].eq(expected).all()
    assert model.predict(batch).shape == (4, 3, 16, 16)


@pytest.mark.parametrize("preset", PRESETS)
def test_saved_models_load_back_exactly(tmp_path, preset: str) -> None:
    options = {"image_size": 16, "grid_size": GRID, "task_conditioning": True}
    torch.manual_seed(0)
    model = create_model(f"cogitao:{preset}", **options, render_spec=SPEC).eval()
    save_pretrained(model, tmp_path / preset, options=options, render_spec=SPEC)
    loaded = load_pretrained(tmp_path / preset)
    assert loaded.describe() == model.describe()
    batch = grid_batch()
    assert torch.equal(loaded.predict_grids(batch), model.predict_grids(batch))
    with torch.no_grad():
        assert torch.equal(loaded(loaded.batch_inputs(batch), batch["task_code"]),
                           model(model.batch_inputs(batch), batch["task_code"]))


@pytest.mark.parametrize("preset", PRESETS)
def test_image_input_of_pl_tf_and_oversized_grids_are_refused_in_one_line(preset: str) -> None:
    if preset == "pl-tf":
        with pytest.raises(ConfigError, match="reads grids only: its looped body") as caught:
            create_model(f"cogitao:{preset}", image_size=16, render_spec=SPEC, input="image")
        assert "\n" not in str(caught.value)
    model = create_model(f"cogitao:{preset}", grid_size=3)
    with pytest.raises(ConfigError, match=r"grids of up to 4x4 cells .* larger grid_size \(now 3\)"):
        model.training_loss(grid_batch())
    with pytest.raises(ConfigError, match=r"reads \(B, 5, 5\) integer canvases of classes 0..14"):
        model(torch.zeros(1, 3, 3, dtype=torch.long))


# --- Grid-TF on images (the project's) --------------------------------------------------------------------------------


def image_batch(count: int = 4, seed: int = 0) -> dict:
    """`grid_batch` with its input and target grids drawn with SPEC (4-pixel cells, one per ViT token)."""
    batch = grid_batch(count, seed)
    shapes = batch["grid_shape"].tolist()

    def drawn(padded: torch.Tensor) -> torch.Tensor:
        grids = [grid[:h, :w].numpy() for grid, (h, w) in zip(padded, shapes)]
        return torch.from_numpy(render_batch(grids, SPEC, batch["render_seed"].tolist())).permute(0, 3, 1, 2) / 255

    return {**batch, "input": drawn(batch["input_grid"]).float(), "target": drawn(batch["target_grid"]).float()}


def test_grid_tf_on_images_reads_one_patch_per_cell_and_a_full_canvas_margin() -> None:
    """The image stem: cell (r, c) < G is the convolution of its own 4x4 patch; the margin is the learned vector of
    the visual token a full G x G grid puts there (X_END right of each row, Y_END under each column, XY_END at the
    corner, NEWLINE in the last column, PAD in the last row)."""
    torch.manual_seed(0)
    stem = small("grid-tf", input="image").encoder.stem
    assert isinstance(stem, ImageCanvasStem)
    images = image_batch()["input"]
    with torch.no_grad():
        out = stem(images)
        assert out.shape == (4, 128, GRID + 2, GRID + 2)
        patch = images[1:2, :, 4:8, 8:12]  # cell (1, 2)
        torch.testing.assert_close(out[1, :, 1, 2], stem.cells(patch)[0, :, 0, 0])
        table = stem.tokens.weight
        for (row, col), token in (((0, GRID), X_END), ((GRID - 1, GRID), X_END), ((GRID, 0), Y_END),
                                  ((GRID, GRID), XY_END), ((2, GRID + 1), NEWLINE), ((GRID + 1, GRID + 1), NEWLINE),
                                  ((GRID + 1, 1), PAD_CLASS)):
            torch.testing.assert_close(out[:, :, row, col], table[token].expand(4, -1))


def test_grid_tf_on_images_has_no_object_ids_and_hand_counted_parameters(monkeypatch) -> None:
    """Every object id is 0 on images (the image does not say which cells form an object), so the contours are
    never computed; the image stem replaces the 1x1 convolution of 15 one-hot channels by a 4x4 convolution of
    3 channels and a table of the 15 tokens."""
    grid_model, image_model = small("grid-tf"), small("grid-tf", input="image")
    conv_1x1, conv_4x4, table = VT_CLASSES * 128 + 128, 3 * 4 * 4 * 128 + 128, VT_CLASSES * 128
    count = lambda model: sum(p.numel() for p in model.parameters())  # noqa: E731
    assert count(image_model) - count(grid_model) == conv_4x4 + table - conv_1x1
    import vision_bench.models.cogitao.grid_tf as grid_tf

    def refuse(canvas: torch.Tensor) -> torch.Tensor:
        raise AssertionError("object ids computed for an image")

    monkeypatch.setattr(grid_tf, "object_ids", refuse)
    batch = image_batch()
    assert image_model.eval()(image_model.batch_inputs(batch)).shape == (4, VT_CLASSES, GRID + 2, GRID + 2)
    with pytest.raises(AssertionError, match="object ids computed"):
        grid_model(grid_model.batch_inputs(batch))


def test_grid_tf_on_images_learns_trains_and_loads_back(tmp_path) -> None:
    """A few steps lower the loss (every parameter gets a gradient); the target is the visual-token canvas of the
    target grid, as on grids; a saved image model loads back with the same predictions."""
    torch.manual_seed(0)
    options = {"image_size": 16, "input": "image", "task_conditioning": True}
    model = create_model("cogitao:grid-tf", **options, render_spec=SPEC)
    batch = image_batch(seed=1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(6):
        loss = model.training_loss(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0], losses
    assert not [name for name, parameter in model.named_parameters() if parameter.grad is None]
    model.eval()
    assert model.predict_grids(batch).shape == (4, GRID, GRID) and model.predict(batch).shape == (4, 3, 16, 16)
    save_pretrained(model, tmp_path / "image", options=options, render_spec=SPEC)
    loaded = load_pretrained(tmp_path / "image")
    assert loaded.describe() == model.describe()
    assert torch.equal(loaded.predict_grids(batch), model.predict_grids(batch))


@pytest.mark.slow
def test_pl_tf_trains_records_its_canvas_and_exports(tmp_path) -> None:
    """The body preset through `train` (its loss in training, its prediction and loss in validation): the run pads to
    envgen/G1/1's 15 x 15 grids, so a canvas of 17 with visual tokens, and the exported model is the checkpoint's."""
    from vision_bench.cli import main
    from vision_bench.train import TrainConfig, load_checkpoint, train

    config = TrainConfig.from_dict({
        "seed": 0,
        "dataset": {"study": "envgen/G1/1", "n_train": 4, "n_val": 2, "spec": {"size": [30, 30]},
                    "val_splits": ["val_id"]},
        "model": {"name": "cogitao:pl-tf", "options": {"task_conditioning": True}},
        "training": {"batch_size": 4, "max_steps": 1},
    })
    train(config, tmp_path / "run", progress=False)
    trained, config, _ = load_checkpoint(tmp_path / "run" / "checkpoints" / "best.pt")
    assert config.model.options["grid_size"] == 15 and trained.describe()["canvas"] == 17
    assert main(["export-model", str(tmp_path / "run"), "--out", str(tmp_path / "model")]) == 0
    assert load_pretrained(tmp_path / "model").describe() == trained.describe()
