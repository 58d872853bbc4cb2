"""The gcog family: gCOG's six encoders at their released widths, the per-cell head, training, saving and errors.

tests/test_gcog_released_models.py checks that the encoders compute what the released modules compute.
"""

from __future__ import annotations

import pytest
import torch
from cli_errors import cli_error
from test_cogitao_models import CELL_SPEC, CELLS, grid_batch

from render.spec import RenderSpec
from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.models import create_model, load_pretrained, save_pretrained
from vision_bench.train import TrainConfig, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PRESETS = ("rnn", "gru", "sst", "dst", "crossattn", "perceiver")


def linear(inputs: int, outputs: int) -> int:
    return inputs * outputs + outputs


def norm(width: int) -> int:
    return 2 * width


def attention(width: int) -> int:
    return 4 * width * width + 4 * width  # q, k, v and output maps with their biases


def stream(features: int) -> int:
    """`TransformerBlock`: embedding, attention, two LayerNorms, MLP 256 -> 256 -> 256."""
    return linear(features, 256) + attention(256) + 2 * norm(256) + 2 * linear(256, 256)


RULE, CELL, TOKENS = 2, 2, 101  # gCOG's 10 x 10 grid and its EOS; [id, EOS] features
RECURRENT = 512 * (RULE + TOKENS * CELL) + 512 * 512 + 2 * 512  # input, hidden and two biases per gate
ENCODER_PARAMETERS = {
    "rnn": (368_640, RECURRENT + norm(512)),
    "gru": (1_103_872, 3 * RECURRENT + norm(512)),
    "sst": (1_579_776, stream(RULE + CELL) + linear(256, 512) + linear(512, 1024) + linear(1024, 512) + norm(512)),
    "dst": (3_158_016, stream(RULE) + stream(CELL) + 2 * linear(256, 512) + norm(512) + linear(512, 1024)
            + linear(1024, 1024) + linear(1024, 512) + norm(512)),
    "crossattn": (1_452_032, stream(RULE) + stream(CELL) + attention(256) + norm(256) + linear(256, 512)
                  + linear(512, 512) + norm(512)),
    "perceiver": (1_781_504, stream(RULE) + stream(CELL) + 2 * (attention(256) + linear(256, 256) + norm(256))
                  + norm(256) + attention(256) + linear(256, 256)),
}
"""Per preset, the encoder's parameters on gCOG's 10 x 10 grid: the number and the sum of its modules by hand."""
HEAD_PARAMETERS = {"rnn": linear(512, 100 * 11), "sst": linear(512, 128) + linear(128, 11),
                   "crossattn": linear(768, 128) + linear(128, 11), "perceiver": linear(512, 128) + linear(128, 11)}


def model(preset: str, **options: object) -> torch.nn.Module:
    settings: dict[str, object] = {"image_size": 40, "grid_size": 10, "task_conditioning": 101, **options}
    return create_model(f"gcog:{preset}", **settings)


@pytest.mark.parametrize("preset", PRESETS)
def test_encoder_parameters_match_the_released_widths(preset: str) -> None:
    count, by_hand = ENCODER_PARAMETERS[preset]
    assert count == by_hand
    assert sum(p.numel() for p in model(preset).encoder.parameters()) == count


@pytest.mark.parametrize("preset", ["rnn", "sst", "crossattn", "perceiver"])
def test_head_reads_the_readout_or_each_cell(preset: str) -> None:
    built = model(preset)
    assert sum(p.numel() for p in built.classifier.parameters()) == HEAD_PARAMETERS[preset]
    logits = built.eval()(torch.randint(0, 10, (2, 10, 10)), torch.randint(0, 101, (2, 4)))
    assert logits.shape == (2, 11, 10, 10)


# --- training, saving, errors ---------------------------------------------------------------------------------------


def small(preset: str, input_kind: str = "grid", **options: object) -> torch.nn.Module:
    """A test model on the 6x6 canvas of test_cogitao_models' batches: grid_size 6, or 24-pixel images of 4-pixel
    cells."""
    sizes = {"grid_size": CELLS} if input_kind == "grid" else {}
    return create_model(f"gcog:{preset}", image_size=24, render_spec=CELL_SPEC, input=input_kind, **sizes, **options)


@pytest.mark.parametrize(("preset", "input_kind"), [(preset, "grid") for preset in PRESETS]
                         + [("gru", "image"), ("perceiver", "image")])
def test_a_few_steps_lower_the_loss(preset: str, input_kind: str) -> None:
    torch.manual_seed(0)
    model = small(preset, input_kind, task_conditioning=True)
    batch = grid_batch(seed=1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(10):
        loss = model.training_loss(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.85 * losses[0], losses
    unused = [name for name, parameter in model.named_parameters() if parameter.grad is None]
    assert not unused, f"parameters without gradient (DDP would fail): {unused}"


def test_the_task_code_reaches_every_preset() -> None:
    """Two codes, one grid: each preset's logits differ (the rule stream is read); unconditioned, the rule stream
    is the EOS token alone and the model still runs."""
    grids = torch.randint(0, 10, (1, CELLS, CELLS)).expand(2, -1, -1)
    codes = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])
    for preset in PRESETS:
        torch.manual_seed(0)
        logits = small(preset, task_conditioning=True).eval()(grids, codes)
        assert (logits[0] - logits[1]).abs().max() > 1e-4, preset
        assert small(preset).eval()(grids).shape == (2, 11, CELLS, CELLS)


@pytest.mark.parametrize("preset", ["rnn", "crossattn"])
def test_a_conditioned_model_saves_and_loads_back_exactly(tmp_path, preset: str) -> None:
    options = {"image_size": 24, "grid_size": CELLS, "task_conditioning": True}
    torch.manual_seed(0)
    model = create_model(f"gcog:{preset}", **options, render_spec=CELL_SPEC).eval()
    save_pretrained(model, tmp_path / preset, options=options, render_spec=CELL_SPEC)
    loaded = load_pretrained(tmp_path / preset)
    assert "{'input_grid': grids, 'grid_shape': shapes, " in (tmp_path / preset / "README.md").read_text()
    batch = grid_batch()
    inputs, code = loaded.batch_inputs(batch), batch["task_code"]
    assert torch.equal(loaded(inputs, code), model(inputs, code))
    assert torch.equal(loaded.predict_grids(batch), model.predict_grids(batch))
    assert torch.equal(loaded.predict(batch), model.predict(batch))


@pytest.mark.parametrize(
    ("name", "options", "error", "message"),
    [
        ("gcog:transformer", {}, UnknownNameError, "gcog preset"),
        ("gcog:sst", {"input": "pixels"}, UnknownNameError, "gcog input"),
        ("gcog:sst", {"grid_size": 0}, ConfigError, "grid_size"),
        ("gcog:sst", {"head": "palette"}, ConfigError, "drop the options head and loss"),
        ("gcog:gru", {"pretrained_file": "x.pth"}, ConfigError, "from scratch"),
        ("gcog:dst", {"input": "image", "render_spec": RenderSpec(size=(24, 24), layout="cell:4")}, ConfigError,
         "cell:4:center"),
        ("gcog:rnn", {"depth": 2}, ConfigError, "input .grid or image. and grid_size"),
    ],
)
def test_bad_options_are_one_line(name: str, options: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message) as caught:
        create_model(name, image_size=24, **options)
    assert "\n" not in str(caught.value)


def test_a_bad_option_in_a_train_config_is_one_cli_line(tmp_path, capsys) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(run_config("sst", {"input": "pixels"}).to_yaml())
    cli_error(["train", path, "--out", tmp_path / "run"], capsys, "gcog input", "pixels")


def run_config(preset: str, options: dict) -> TrainConfig:
    return TrainConfig.from_dict({
        "seed": 0,
        "dataset": {"study": "gcog/systematic/depth1", "n_train": 4, "n_val": 2, "spec": {"size": [40, 40]},
                    "val_splits": ["val_id"]},
        "model": {"name": f"gcog:{preset}", "options": {"task_conditioning": 101, **options}},
        "training": {"batch_size": 4, "max_steps": 1},
    })


@pytest.mark.slow
def test_a_model_trains_and_evaluates_on_a_gcog_preset(tmp_path) -> None:
    """gcog/systematic/depth1's 20x20 grids: training sets grid_size to 20 and evaluation scores the predicted
    grids of the held-out pairings."""
    from vision_bench.cli import main
    from vision_bench.train import load_checkpoint

    train(run_config("perceiver", {}), tmp_path / "run", progress=False)
    trained, config, _ = load_checkpoint(tmp_path / "run" / "checkpoints" / "best.pt")
    assert config.model.options["grid_size"] == 20 and trained.describe()["canvas"] == 20
    assert main(["evaluate", str(tmp_path / "run"), "--splits", "test_ood", "--n-test", "2"]) == 0


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_trains_and_predicts_under_bf16_autocast(preset: str) -> None:
    """Mixed precision as the gCOG bench configs train (CPU bf16 autocast here): a finite loss, a gradient for
    every parameter, and predicted grids cut to each sample's grid."""
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
    assert grids.shape == (4, CELLS, CELLS) and drawn.shape == (4, 3, 24, 24)
    assert grids[1, 4:].eq(-1).all() and grids[1, :, 5:].eq(-1).all()


def test_productive_codes_of_ten_tokens_are_read_and_a_wrong_length_is_one_line() -> None:
    """gCOG's productive presets' codes: a 3-token selector and up to 7 steps, all of them rule tokens."""
    model = small("perceiver", task_conditioning=101, task_code_length=10).eval()
    grids = torch.randint(0, 10, (2, CELLS, CELLS))
    codes = torch.randint(0, 101, (2, 10))
    assert model(grids, codes).shape == (2, 11, CELLS, CELLS)
    with pytest.raises(ConfigError, match="task_code_length") as caught:
        model(grids, codes[:, :4])
    assert "\n" not in str(caught.value)


def test_training_reads_codes_of_the_studys_length_when_none_is_given() -> None:
    """gcog/productive/5's codes hold 10 tokens: a conditioned model left without task_code_length is built for 10
    (config.yaml says so); a length given, an unconditioned model and a study of default-length codes keep their
    options as written."""
    from vision_bench.tasks.studies import get_study
    from vision_bench.train.components import resolve_config

    def resolved(options: dict, study: str = "gcog/productive/5") -> dict:
        config = run_config("sst", {}).replace(model={"name": "gcog:sst", "options": options})
        return resolve_config(config, RenderSpec(size=(40, 40)), get_study(study)).model.options

    assert resolved({"task_conditioning": 101}) == {"task_conditioning": 101, "grid_size": 20,
                                                    "task_code_length": 10}
    assert resolved({"task_conditioning": 101, "task_code_length": 12})["task_code_length"] == 12
    assert "task_code_length" not in resolved({})
    assert "task_code_length" not in resolved({"task_conditioning": 101}, "gcog/distractor/10")


def test_a_conditioned_model_trains_on_productive_codes_without_a_length_given(tmp_path) -> None:
    """The run reads gcog/productive/5's 10-token codes, records the length, and reloads at it."""
    from vision_bench.train import load_checkpoint

    config = run_config("perceiver", {}).replace(dataset={
        "study": "gcog/productive/5", "n_train": 4, "n_val": 2, "spec": {"size": [40, 40]}, "val_splits": ["val_id"]})
    train(config, tmp_path / "run", progress=False)
    assert TrainConfig.from_yaml(tmp_path / "run" / "config.yaml").model.options["task_code_length"] == 10
    _, reloaded, _ = load_checkpoint(tmp_path / "run" / "checkpoints" / "best.pt")
    assert reloaded.model.options["task_code_length"] == 10
