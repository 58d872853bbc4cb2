"""The cogitao family: COGITAO's released ResNet and Vanilla-TF on grids and on images.

Parameter counts with 11 classes, derived by hand below: cogitao:resnet 1,359,755 at any canvas (COGITAO's
`CustomResNet` 1,341,824 + MLP head 17,931); cogitao:vanilla-tf 1,238,155 at EnvGen's 15x15 canvas, 1,260,555 at
CompGen's 20x20 and 1,324,555 at the default 30x30 (unconditioned). That the layers compute what COGITAO's do is
tests/test_cogitao_released_models.py's job.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from cli_errors import cli_error
from torch import nn

from render.raster import render_batch
from render.spec import RenderSpec
from render.torch_backend import render_grids
from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.models import create_model, load_pretrained, read_model_config, save_pretrained
from vision_bench.models.cogitao.grid_io import CLASSES, PAD_CLASS
from vision_bench.models.cogitao.vanilla_tf import ATTENTION_DROPOUT, DEPTH, FFN_DROPOUT, FFN_WIDTH, HEADS
from vision_bench.tasks.task_code import VOCAB_SIZE
from vision_bench.train import TrainConfig, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PRESETS = ["resnet", "vanilla-tf"]
CELLS = 6  # the canvas of the small test models
CELL_SPEC = RenderSpec(size=(24, 24), layout="cell:4:top-left", background="random")  # 24 / 4 = 6 cells a side


def small(preset: str, input_kind: str = "grid", **options: object) -> torch.nn.Module:
    """A test model on a 6x6 canvas: grid_size 6, or 24-pixel images of 4-pixel cells."""
    sizes = {"grid_size": CELLS} if input_kind == "grid" else {}
    return create_model(f"cogitao:{preset}", image_size=24, render_spec=CELL_SPEC, input=input_kind,
                        **sizes, **options)


def grid_batch(count: int = 4, seed: int = 0) -> dict:
    """Random grids of 4x5 and 6x6 cells (padded with -1), targets recoloured c -> (c + 1) % 10, the images drawn
    with CELL_SPEC and the batch's render seeds."""
    generator = torch.Generator().manual_seed(seed)
    shapes = [(4, 5) if index % 2 else (CELLS, CELLS) for index in range(count)]
    grids = [torch.randint(0, 10, shape, generator=generator) for shape in shapes]
    inputs = torch.full((count, CELLS, CELLS), -1)
    targets = torch.full((count, CELLS, CELLS), -1)
    for index, grid in enumerate(grids):
        inputs[index, : grid.shape[0], : grid.shape[1]] = grid
        targets[index, : grid.shape[0], : grid.shape[1]] = (grid + 1) % 10
    seeds = list(range(10, 10 + count))

    def drawn(padded: torch.Tensor) -> torch.Tensor:
        images = render_batch([g[:h, :w].numpy() for g, (h, w) in zip(padded, shapes)], CELL_SPEC, seeds)
        return torch.from_numpy(images).permute(0, 3, 1, 2).float() / 255

    return {
        "input_grid": inputs, "target_grid": targets, "grid_shape": torch.tensor(shapes),
        "target_grid_shape": torch.tensor(shapes), "input": drawn(inputs), "target": drawn(targets),
        "render_seed": torch.tensor(seeds), "task_code": torch.randint(0, 29, (count, 4), generator=generator),
    }


# --- the released models' sizes and settings --------------------------------------------------------------------------


def test_parameter_counts_are_the_released_models_hand_counted() -> None:
    conv = lambda cin, cout, k=1: cin * cout * k * k + cout  # noqa: E731  # every convolution has a bias
    linear = lambda cin, cout: cin * cout + cout  # noqa: E731
    norm = lambda c: 2 * c  # noqa: E731  # BatchNorm or LayerNorm: weight and bias
    head = linear(128, 128) + linear(128, CLASSES)
    assert head == 17_931
    stem = conv(CLASSES, 32) + norm(32)  # 1x1 from the 11 one-hot channels, BN
    block = lambda cin, cout, k: (conv(cin, cout, k) + norm(cout) + conv(cout, cout, k) + norm(cout)  # noqa: E731
                                  + (conv(cin, cout) + norm(cout) if cin != cout else 0))
    blocks = block(32, 64, 3) + block(64, 128, 3) + block(128, 128, 1) + block(128, 256, 3) + block(256, 128, 1)
    assert stem + blocks + conv(128, 128) == 1_341_824  # CustomResNet
    resnet = stem + blocks + conv(128, 128) + head
    layer = norm(128) + linear(128, 3 * 128) + linear(128, 128) + norm(128) + linear(128, 512) + linear(512, 128)
    vanilla = lambda side: conv(CLASSES, 128) + side * side * 128 + 6 * layer + norm(128) + head  # noqa: E731
    assert (resnet, vanilla(15), vanilla(20), vanilla(30)) == (1_359_755, 1_238_155, 1_260_555, 1_324_555)
    assert create_model("cogitao:resnet").describe()["parameters"] == resnet
    for side in (15, 20, 30):
        assert create_model("cogitao:resnet", grid_size=side).describe()["parameters"] == resnet
        assert create_model("cogitao:vanilla-tf", grid_size=side).describe()["parameters"] == vanilla(side)
    assert create_model("cogitao:vanilla-tf").describe()["parameters"] == vanilla(30)  # outside training: 30
    conditioned = create_model("cogitao:vanilla-tf", grid_size=20, task_conditioning=True)
    assert conditioned.describe()["parameters"] == vanilla(20) + VOCAB_SIZE * 128  # one task table, any position


def test_the_released_initialisation_and_dropout() -> None:
    """vit.yaml at the paper's time: 6 layers, 4 heads, mlp_ratio 4, dropout 0.1 on the attention probabilities and
    twice in the FFN; `init_weights` (vit.py:946-994) truncated-normal 0.02 on every linear layer of the encoder with
    zero biases, the positions N(0, 1) (vit.py:159); the ResNet, the stems and the head keep PyTorch's."""
    assert (DEPTH, HEADS, FFN_WIDTH, ATTENTION_DROPOUT, FFN_DROPOUT) == (6, 4, 512, 0.1, 0.1)
    torch.manual_seed(0)
    model = create_model("cogitao:vanilla-tf")
    layer = model.encoder.layers[0]
    assert [type(module) for module in layer.ffn] == [nn.Linear, nn.GELU, nn.Dropout, nn.Linear, nn.Dropout]
    assert layer.ffn[1].approximate == "none" and layer.ffn[2].p == layer.ffn[4].p == 0.1
    linears = [module for module in model.encoder.modules() if isinstance(module, nn.Linear)]
    assert len(linears) == 4 * DEPTH and all(not module.bias.any() for module in linears)
    assert 0.019 < torch.cat([module.weight.flatten() for module in linears]).std() < 0.021
    assert 0.98 < model.encoder.positions.std() < 1.02 and model.encoder.positions.shape == (30 * 30, 128)
    head = model.classifier[0].weight
    assert head.abs().max() <= 128**-0.5 and head.std() > 0.04  # PyTorch's uniform(+-1/sqrt(fan-in))
    resnet = create_model("cogitao:resnet")
    convolutions = [module for module in resnet.encoder.modules() if isinstance(module, nn.Conv2d)]
    assert len(convolutions) == 1 + 2 * 5 + 4 + 1  # stem, two per block, four skips, final: all with bias
    assert all(module.bias.any() for module in convolutions)  # PyTorch's initialisation, no zeroed biases


@pytest.mark.parametrize("preset", PRESETS)
def test_dropout_acts_in_training_only(preset: str) -> None:
    """The Vanilla-TF drops out in training (two passes differ) and not in evaluation; the ResNet has no dropout."""
    model = small(preset, task_conditioning=True)
    inputs, task_code = model.batch_inputs(grid_batch()), grid_batch()["task_code"]
    with torch.no_grad():
        for mode, differs in (("train", preset == "vanilla-tf"), ("eval", False)):
            getattr(model, mode)()
            assert (not torch.equal(model(inputs, task_code), model(inputs, task_code))) == differs


# --- shapes, both inputs -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("preset", PRESETS)
def test_grid_and_image_input_give_the_same_canvas(preset: str) -> None:
    batch = grid_batch()
    for input_kind in ("grid", "image"):
        model = small(preset, input_kind).eval()
        inputs = model.batch_inputs(batch)
        assert inputs.shape == ((4, CELLS, CELLS) if input_kind == "grid" else (4, 3, 24, 24))
        assert model(inputs).shape == (4, CLASSES, CELLS, CELLS)
        assert model.describe()["grid_size"] == CELLS
        assert model.training_loss(batch).ndim == 0
        assert model.predict(batch).shape == (4, 3, 24, 24)
        assert model.predict_grids(batch).shape == (4, CELLS, CELLS)
    grid_canvas = small(preset).batch_inputs(batch)
    assert grid_canvas[1, 4:].eq(PAD_CLASS).all() and grid_canvas[1, :, 5:].eq(PAD_CLASS).all()
    assert torch.equal(grid_canvas[0], batch["input_grid"][0])


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("input_kind", ["grid", "image"])
def test_a_few_steps_lower_the_loss(preset: str, input_kind: str) -> None:
    torch.manual_seed(0)
    model = small(preset, input_kind, task_conditioning=True)
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


# --- predictions ----------------------------------------------------------------------------------------------------


def forced(model: torch.nn.Module, cls: int) -> torch.nn.Module:
    """`model` with its head made to predict class `cls` in every cell."""
    with torch.no_grad():
        model.classifier[-1].weight.zero_()
        model.classifier[-1].bias.copy_(torch.nn.functional.one_hot(torch.tensor(cls), CLASSES).float())
    return model.eval()


@pytest.mark.parametrize("preset", PRESETS)
def test_predict_draws_the_argmax_grid_as_the_data_draws_it(preset: str) -> None:
    torch.manual_seed(0)
    model = small(preset).eval()
    batch = grid_batch()
    grids = model.predict_grids(batch)
    logits = model(model.batch_inputs(batch))
    argmax = logits.argmax(dim=1)
    for index, (height, width) in enumerate(batch["grid_shape"].tolist()):
        assert torch.equal(grids[index, :height, :width], argmax[index, :height, :width])
        assert grids[index, height:].eq(-1).all() and grids[index, :, width:].eq(-1).all()
    drawn = torch.where(grids == PAD_CLASS, 0, grids)  # no colour is drawn as background
    expected = render_grids(drawn, CELL_SPEC, seeds=batch["render_seed"].tolist())
    assert torch.equal(model.predict(batch), expected)


def test_a_padding_prediction_inside_the_grid_is_marked_and_drawn_as_background() -> None:
    batch = grid_batch()
    model = forced(small("resnet"), PAD_CLASS)
    grids = model.predict_grids(batch)
    assert grids[1, :4, :5].eq(10).all() and grids[1, 4:].eq(-1).all() and grids[1, :, 5:].eq(-1).all()
    blank = render_batch([np.zeros(shape, np.uint8) for shape in batch["grid_shape"].tolist()], CELL_SPEC,
                         batch["render_seed"].tolist())
    assert torch.equal(model.predict(batch), torch.from_numpy(blank).permute(0, 3, 1, 2).float() / 255)


def test_the_evaluation_scores_the_models_grids_not_its_drawing() -> None:
    """Predicting padding everywhere draws a blank image, which decodes to an all-background grid: right on an
    all-background target, but the model's grid holds no colour, which the evaluation counts wrong."""
    from vision_bench.evaluation.core import evaluate_split

    batch = grid_batch(2)
    items = [{"input_grid": batch["input_grid"][i, :h, :w], "target_grid": torch.zeros(h, w, dtype=torch.long),
              "task_code": batch["task_code"][i], "sequence": ("translate_up",), "split": "test_id", "index": i,
              "task_key": "k", "render_seed": 10 + i} for i, (h, w) in enumerate(batch["grid_shape"].tolist())]
    model = forced(small("resnet"), PAD_CLASS)
    scores = evaluate_split({"cogitao": model}, items, split="test_id", spec=CELL_SPEC, device=torch.device("cpu"),
                            sheet_samples=0, exclude=("lpips",))["cogitao"]
    assert scores.columns["mse"] == [0.0, 0.0], "the drawing is the target image"
    assert scores.columns["grid_accuracy"] == [0.0, 0.0] and scores.columns["pixel_accuracy"] == [0.0, 0.0]


# --- bad input -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options, error, message",
    [
        ({"input": "pixels"}, UnknownNameError, "cogitao input"),
        ({"input": "image", "render_spec": RenderSpec(size=(24, 24))}, ConfigError, "layout stretch"),
        ({"input": "image", "render_spec": RenderSpec(size=(24, 24), layout="cell:4")}, ConfigError, "cell:4:center"),
        ({"input": "image", "render_spec": RenderSpec(size=(24, 24), layout="cell:5:top-left")}, ConfigError,
         "multiple of 5"),
        ({"input": "image", "render_spec": None}, ConfigError, "needs render_spec"),
        ({"input": "image", "render_spec": CELL_SPEC, "grid_size": 30}, ConfigError, "6 cells a side"),
        ({"head": "palette"}, ConfigError, "drop the options head and loss"),
        ({"pretrained_file": "x.pth"}, ConfigError, "from scratch"),
    ],
)
def test_bad_options_are_one_line(options: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message) as caught:
        create_model("cogitao:resnet", image_size=24, **options)
    assert "\n" not in str(caught.value)


def test_unknown_preset_and_oversized_grids_are_one_line() -> None:
    with pytest.raises(UnknownNameError, match="did you mean 'vanilla-tf'"):
        create_model("cogitao:vanila-tf")
    batch = grid_batch()
    model = create_model("cogitao:resnet", image_size=24, render_spec=CELL_SPEC, grid_size=5)
    for call in (model.training_loss, model.predict):
        with pytest.raises(ConfigError, match=r"grids of up to 6x6 cells .* larger grid_size \(now 5\)") as caught:
            call(batch)
        assert "\n" not in str(caught.value)
    no_spec = create_model("cogitao:resnet", grid_size=CELLS)
    with pytest.raises(ConfigError, match="draws its predicted grids with render_spec"):
        no_spec.predict(batch)


def test_train_refuses_a_layout_without_whole_cells_in_one_line(tmp_path, capsys) -> None:
    config = run_config({"input": "image"}, {"size": [30, 30]})
    path = tmp_path / "config.yaml"
    path.write_text(config.to_yaml())
    cli_error(["train", path, "--out", tmp_path / "run"], capsys, "cell:K:top-left", "layout stretch")
    assert not (tmp_path / "run").exists()


# --- train, export, load ---------------------------------------------------------------------------------------------


def run_config(options: dict, spec: dict) -> TrainConfig:
    return TrainConfig.from_dict({
        "seed": 0,
        "dataset": {"study": "envgen/G1/1", "n_train": 4, "n_val": 2, "spec": spec, "val_splits": ["val_id"]},
        "model": {"name": "cogitao:resnet", "options": options},
        "training": {"batch_size": 4, "max_steps": 1},
    })


def test_a_trained_image_model_exports_and_loads_back_exactly(tmp_path) -> None:
    """Image input on envgen/G1/1's 15x15 grids, drawn in 2-pixel cells: the exported folder rebuilds the model
    with its render spec (which load_pretrained passes back), and it predicts the same images and grids."""
    from vision_bench.cli import main
    from vision_bench.train import load_checkpoint

    spec = {"size": [30, 30], "layout": "cell:2:top-left"}
    train(run_config({"input": "image"}, spec), tmp_path / "run", progress=False)
    assert main(["export-model", str(tmp_path / "run"), "--out", str(tmp_path / "model")]) == 0
    trained, config, _ = load_checkpoint(tmp_path / "run" / "checkpoints" / "best.pt")
    loaded = load_pretrained(tmp_path / "model")
    assert read_model_config(tmp_path / "model")["head"] == "cells"
    assert "It reads RGB images of 30x30 pixels" in (tmp_path / "model" / "README.md").read_text()
    assert loaded.describe() == trained.describe() and loaded.describe()["grid_size"] == 15
    from vision_bench.data import open_dataset
    from vision_bench.data.collate import collate
    from vision_bench.data.device import to_device_batch

    dataset = open_dataset("envgen/G1/1", "val_id", RenderSpec.from_dict(config.dataset.spec), n_val=2)
    batch = to_device_batch(collate([dataset[0], dataset[1]]), RenderSpec.from_dict(config.dataset.spec))
    assert torch.equal(loaded.predict_grids(batch), trained.predict_grids(batch))
    assert torch.equal(loaded.predict(batch), trained.predict(batch))


def test_training_sets_an_unset_grid_size_to_the_experiments_canvas() -> None:
    """COGITAO pads to its experiment's largest grid: envgen/G1/1's 15, envgen/G2/1's 20 (its training grids are 10-15,
    its OOD grids 16-20); a grid_size given, image input, another model or data without a task config keep their
    options."""
    from vision_bench.tasks.studies import get_study
    from vision_bench.train.components import resolve_config

    spec = RenderSpec(size=(30, 30))

    def resolved(options: dict, study: str | None = "envgen/G1/1", name: str = "cogitao:resnet") -> dict:
        config = run_config(options, {}).replace(model={"name": name, "options": options})
        return resolve_config(config, spec, None if study is None else get_study(study)).model.options

    assert resolved({}) == {"grid_size": 15} and resolved({}, "envgen/G2/1") == {"grid_size": 20}
    assert resolved({"grid_size": 25}) == {"grid_size": 25}
    assert resolved({"input": "image"}) == {"input": "image"}
    assert resolved({}, None) == {}
    assert resolved({}, name="unet:resnet18") == {}


def test_a_trained_grid_model_records_its_canvas_and_reloads_at_it(tmp_path) -> None:
    """grid_size left unset: the run pads to envgen/G1/1's 15x15 canvas, and config.yaml and the checkpoint say so,
    so that evaluation (load_checkpoint) and export-model rebuild the model at 15."""
    from vision_bench.cli import main
    from vision_bench.train import load_checkpoint

    train(run_config({}, {"size": [30, 30]}), tmp_path / "run", progress=False)
    assert TrainConfig.from_yaml(tmp_path / "run" / "config.yaml").model.options["grid_size"] == 15
    trained, config, _ = load_checkpoint(tmp_path / "run" / "checkpoints" / "best.pt")
    assert config.model.options["grid_size"] == 15 and trained.describe()["grid_size"] == 15
    assert main(["export-model", str(tmp_path / "run"), "--out", str(tmp_path / "model")]) == 0
    assert load_pretrained(tmp_path / "model").describe() == trained.describe()


def test_a_conditioned_grid_model_saves_and_loads_back_exactly(tmp_path) -> None:
    options = {"image_size": 24, "grid_size": CELLS, "task_conditioning": True}
    torch.manual_seed(0)
    model = create_model("cogitao:vanilla-tf", **options, render_spec=CELL_SPEC).eval()
    save_pretrained(model, tmp_path / "tf", options=options, render_spec=CELL_SPEC)
    loaded = load_pretrained(tmp_path / "tf")
    card = (tmp_path / "tf" / "README.md").read_text()
    assert "It reads input grids (B, h, w)" in card and "{'input_grid': grids, 'grid_shape': shapes, " in card
    batch = grid_batch()
    assert torch.equal(loaded.predict_grids(batch), model.predict_grids(batch))
    assert torch.equal(loaded.predict(batch), model.predict(batch))


@pytest.mark.parametrize("preset", ["resnet", "vanilla-tf", "grid-tf", "pl-tf", "llada"])
def test_every_preset_trains_and_predicts_under_bf16_autocast(preset: str) -> None:
    """Mixed precision as training runs it (CPU bf16 autocast here; CUDA fp16 / bf16 alike): a finite loss, a
    gradient for every parameter (DistributedDataParallel needs one), predicted grids and the same grids as one
    prediction of them."""
    torch.manual_seed(0)
    model = small(preset, task_conditioning=True)
    batch = grid_batch()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model.training_loss(batch)
    assert torch.isfinite(loss)
    loss.backward()
    assert not [name for name, parameter in model.named_parameters() if parameter.grad is None]
    model.eval()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        drawn, grids = model.predict_with_grids(batch)
        assert torch.equal(grids, model.predict_grids(batch))
    assert grids.shape == (4, CELLS, CELLS) and drawn.shape == (4, 3, 24, 24)
    assert grids[1, 4:].eq(-1).all() and grids[1, :, 5:].eq(-1).all()
