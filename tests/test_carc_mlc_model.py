"""carc:mlc in the project: it trains on the carc/ studies (copy task, target noise, the weighted loss), predicts
the query's output grid into the canvas that the evaluation scores, saves and loads back exactly, and refuses bad
options in one line. That its layers compute what C-ARC's do is tests/test_carc_mlc_released.py's job."""

from __future__ import annotations

import pytest
import torch

from render.spec import RenderSpec
from vision_bench.data import open_dataset
from vision_bench.data.collate import collate
from vision_bench.data.device import to_device_batch
from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.metrics.inputs import NO_COLOUR
from vision_bench.models import create_model, load_pretrained, save_pretrained
from vision_bench.models.carc_mlc.episode_grids import episode_grids, query_outputs
from vision_bench.models.carc_mlc.objective import training_sequences, with_target_noise
from vision_bench.models.carc_mlc.tokens import EOS, sequence_length
from vision_bench.train import TrainConfig, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SPEC = RenderSpec.from_dict({"size": [68, 68], "palette": "c-arc"})
STUDY = "carc/3shot/1860"


def episode_batch(count: int = 2, split: str = "train", study: str = STUDY) -> dict:
    dataset = open_dataset(study, split, SPEC, **{f"n_{split.split('_')[0]}": count})
    return to_device_batch(collate([dataset[index] for index in range(count)]), SPEC)


def model(**options: object) -> torch.nn.Module:
    torch.manual_seed(0)
    return create_model("carc:mlc", image_size=68, render_spec=SPEC, study_examples=3, **options)


def test_the_parameter_count_and_description() -> None:
    description = create_model("carc:mlc").describe()
    assert description["parameters"] == 5_720_213 and description["study_examples"] == 12
    assert description["copy_task"] is True and description["target_noise"] == 0.001
    assert description["background_weight"] == 0.2 and description["decoding"] == "greedy"


def test_the_copy_task_adds_every_study_example_as_a_query() -> None:
    batch = episode_batch()
    episodes = episode_grids(batch["input_grid"], "carc:mlc")
    outputs = query_outputs(batch["target_grid"], episodes.setup)
    tokens, decoder_tokens, target = training_sequences(episodes, outputs, copy_task=True)
    assert tokens.shape == (2 * 4, sequence_length(3)) and decoder_tokens.shape == target.shape == (8, 26)
    assert torch.equal(tokens[0, :-26], tokens[3, :-26]), "the queries of one episode share its study examples"
    assert not torch.equal(tokens[0, -26:], tokens[3, -26:])
    plain = training_sequences(episodes, outputs, copy_task=False)
    assert torch.equal(plain[0], tokens[3::4]) and torch.equal(plain[2], target[3::4])
    assert target[:, -1].eq(EOS).all()


def test_the_target_noise_replaces_cells_with_uniform_colours_in_training_only() -> None:
    grids = torch.zeros(200, 10, 10, dtype=torch.long)
    assert torch.equal(with_target_noise(grids, 0.0), grids)
    noisy = with_target_noise(grids, 1.0, torch.Generator().manual_seed(0))
    counts = torch.bincount(noisy.flatten(), minlength=10).float() / noisy.numel()
    assert (counts - 0.1).abs().max() < 0.01
    some = with_target_noise(grids, 0.001, torch.Generator().manual_seed(1))
    assert 0 < int(some.ne(0).sum()) < 60  # about 20000 * 0.001 * 0.9 = 18 cells changed
    batch = episode_batch()
    net = model(target_noise=1.0).eval()
    assert net.training_loss(batch).item() == net.training_loss(batch).item(), "no noise in eval mode"
    net.train()
    assert net.training_loss(batch).item() != net.training_loss(batch).item()


def test_a_few_steps_lower_the_loss() -> None:
    batch = episode_batch()
    net = model().train()
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3)
    losses = []
    for _ in range(6):
        loss = net.training_loss(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0], losses


def test_predictions_fill_the_query_slot_and_the_evaluation_scores_them(tmp_path) -> None:
    from vision_bench.evaluation import evaluate_predictors, study_data

    net = model().eval()
    batch = episode_batch(2, "test_ood", "carc/3shot/1860")
    grids = net.predict_grids(batch)
    setup = episode_grids(batch["input_grid"], net.name).setup
    inputs, targets = batch["input_grid"], batch["target_grid"]
    predicted = query_outputs(grids, setup)
    assert grids.shape == inputs.shape and predicted.max() <= NO_COLOUR
    outside = grids.clone()
    outside[:, 11:21, 34:44] = inputs[:, 11:21, 34:44]
    assert torch.equal(outside, inputs), "only the query's output slot changes"
    data = study_data("carc/3shot/1860", SPEC, ("test_ood",), n_train=2, n_val=2, n_test=2)
    result = evaluate_predictors({"carc:mlc": net}, data, tmp_path, device=torch.device("cpu"), batch_size=2,
                                 sheet_samples=0, lpips=None)
    exact = [float(torch.equal(p, t)) for p, t in zip(predicted, query_outputs(targets, setup))]
    assert result.results["carc:mlc"]["test_ood"].columns["grid_accuracy"] == exact
    forced = model(decoding="teacher-forced").eval()
    assert forced.predict_grids(batch).shape == inputs.shape


def test_a_trained_model_exports_and_loads_back_exactly(tmp_path) -> None:
    from vision_bench.cli import main
    from vision_bench.train import load_checkpoint

    config = TrainConfig.from_dict({
        "seed": 0,
        "dataset": {"study": STUDY, "n_train": 2, "n_val": 2, "spec": {"size": [44, 44], "palette": "c-arc"},
                    "val_splits": ["val_id"]},
        "model": {"name": "carc:mlc", "options": {"study_examples": 3, "image_size": 44}},
        "training": {"batch_size": 2, "max_steps": 1},
    })
    train(config, tmp_path / "run", progress=False)
    assert main(["export-model", str(tmp_path / "run"), "--out", str(tmp_path / "model")]) == 0
    trained, _, _ = load_checkpoint(tmp_path / "run" / "checkpoints" / "best.pt")
    loaded = load_pretrained(tmp_path / "model")
    assert loaded.describe() == trained.describe()
    batch = episode_batch(2, "val_id")
    assert torch.equal(loaded.predict_grids(batch), trained.predict_grids(batch))
    save_pretrained(trained, tmp_path / "again", options={"study_examples": 3, "image_size": 44},
                    render_spec=trained.render_spec)
    assert torch.equal(load_pretrained(tmp_path / "again").predict(batch), trained.predict(batch))


def test_drop_study_reads_systematicity_episodes_without_a_level() -> None:
    from vision_bench.models.carc_mlc.episode_grids import study_levels, without_study_levels

    assert study_levels("systematicity") == [0] * 6 + [1] * 6 and study_levels("3shot") == [2] * 3
    batch = episode_batch(1, study="carc/systematicity/1860")
    episodes = episode_grids(batch["input_grid"], "carc:mlc")
    for drop, kept in (("primitives", slice(6, 12)), ("level-1", slice(0, 6))):
        fewer = without_study_levels(episodes, drop, "carc:mlc")
        assert torch.equal(fewer.study_inputs, episodes.study_inputs[:, kept])
        assert torch.equal(fewer.study_outputs, episodes.study_outputs[:, kept])
        assert torch.equal(fewer.query, episodes.query)
    torch.manual_seed(0)
    net = create_model("carc:mlc", drop_study="primitives", render_spec=SPEC).eval()
    assert net(batch["input_grid"]).shape == (1, 25, 10005)
    assert torch.isfinite(net.training_loss(batch))
    with pytest.raises(ConfigError, match="drop_study=primitives reads Systematicity episodes") as caught:
        model(drop_study="primitives").training_loss(episode_batch())
    assert "\n" not in str(caught.value)


def test_training_and_prediction_run_under_bf16_autocast() -> None:
    """Mixed precision as training runs it (CPU bf16 autocast here; CUDA alike): a finite loss, a gradient for
    every parameter (DistributedDataParallel needs one), and the same grids from one prediction of them."""
    net = model()
    batch = episode_batch()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = net.training_loss(batch)
    assert torch.isfinite(loss)
    loss.backward()
    assert not [name for name, parameter in net.named_parameters() if parameter.grad is None]
    net.eval()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        drawn, grids = net.predict_with_grids(batch)
        assert torch.equal(grids, net.predict_grids(batch))
    assert drawn.shape == (2, 3, 68, 68) and grids.shape == (2, 21, 44)


@pytest.mark.parametrize("options, error, message", [
    ({"drop_study": "shapes"}, UnknownNameError, "carc:mlc drop_study"),
    ({"decoding": "beam"}, UnknownNameError, "carc:mlc decoding"),
    ({"target_noise": 1.5}, ConfigError, "target_noise must be a probability"),
    ({"copy_task": "yes"}, ConfigError, "copy_task must be true or false"),
    ({"study_examples": 0}, ConfigError, "study_examples must be a positive integer"),
    ({"head": "palette"}, ConfigError, "drop the options head and loss"),
    ({"task_conditioning": True}, ConfigError, "no task code"),
    ({"pretrained_file": "x.pth"}, ConfigError, "from scratch"),
])
def test_bad_options_are_one_line(options: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message) as caught:
        create_model("carc:mlc", **options)
    assert "\n" not in str(caught.value)


def test_other_data_and_short_positions_are_one_line() -> None:
    with pytest.raises(UnknownNameError, match="carc preset"):
        create_model("carc:mcl")
    net = model()
    with pytest.raises(ConfigError, match="reads C-ARC episodes") as caught:
        net.check_task_family("sequences", "envgen/G1/1")
    assert "\n" not in str(caught.value)
    with pytest.raises(ConfigError, match="reads C-ARC episode canvases"):
        net.predict_grids({"input_grid": torch.zeros(1, 10, 10, dtype=torch.long)})
    short = create_model("carc:mlc", image_size=68, render_spec=SPEC, study_examples=2)
    with pytest.raises(ConfigError, match="create it with study_examples=3") as caught:
        short.predict_grids(episode_batch())
    assert "\n" not in str(caught.value)


# --- input: image (the project's) ------------------------------------------------------------------------------------

CELL_SPEC = RenderSpec.from_dict({"size": [88, 88], "palette": "c-arc", "layout": "cell:2:top-left"})
"""3-Shot canvases (21 x 44 cells) drawn in 2-pixel cells from the top-left corner."""


def image_batch(count: int = 2) -> dict:
    dataset = open_dataset(STUDY, "train", CELL_SPEC, n_train=count)
    return to_device_batch(collate([dataset[index] for index in range(count)]), CELL_SPEC)


def image_model(**options: object) -> torch.nn.Module:
    torch.manual_seed(0)
    return create_model("carc:mlc", input="image", image_size=88, render_spec=CELL_SPEC, study_examples=3, **options)


def test_the_image_sequence_is_one_token_per_cell_of_each_grid_with_the_separators() -> None:
    """With its positions zeroed, the image encoder's sequence is the stem's vector of every cell of study pair 0's
    input (row-major), IO_SEP, its output's cells, SUP_SEP, ..., the query input's cells, IO_SEP."""
    from vision_bench.tasks.carc import canvas

    net = image_model()
    encoder = net.image_encoder
    with torch.no_grad():
        for parameter in encoder.positions.parameters():
            parameter.zero_()
    batch = image_batch(1)
    images = batch["input"]
    sequence = encoder(images, "3shot", [0, 1, 2])
    assert sequence.shape == (1, 3 * 202 + 101, 128) and encoder.positions.length == 3 * 202 + 101
    cells = encoder.stem(images)
    top, left = canvas.slot("3shot", 1, 1)  # study pair 1's output, 2-pixel cells
    expected = cells[0, :, top:top + 10, left:left + 10].flatten(1).T
    assert torch.allclose(sequence[0, 202 + 101:202 + 201], expected)
    assert torch.equal(sequence[0, 100], encoder.separators[0]) and torch.equal(sequence[0, 201], encoder.separators[1])
    top, left = canvas.query_slots("3shot")[0]
    assert torch.allclose(sequence[0, 606:706], cells[0, :, top:top + 10, left:left + 10].flatten(1).T)
    assert torch.equal(sequence[0, 706], encoder.separators[0])


@pytest.mark.slow  # three training steps and a greedy decoding over 707-token sequences
def test_the_image_model_trains_and_predicts_the_query_slot() -> None:
    """4,454,677 parameters at 3 study examples and 2-pixel cells: the stem 1,664, the separators 256, the cell
    positions 707 x 128 + 2 x 10 x 128, the transformer 1,783,808, the decoder's positions 26 x 128 + 2 x 5 x 128, its
    token table 1,280,640 and the output map 1,290,645 (no encoder token table)."""
    net = image_model().train()
    assert net.describe()["parameters"] == 4_454_677 and net.describe()["input"] == "image"
    batch = image_batch()
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3)
    losses = []
    for _ in range(3):
        loss = net.training_loss(batch)
        optimizer.zero_grad()
        loss.backward()
        if not losses:
            assert not [name for name, parameter in net.named_parameters() if parameter.grad is None]
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0], losses
    net.eval()
    grids = net.predict_grids(batch)
    outside = grids.clone()
    outside[:, 11:21, 34:44] = batch["input_grid"][:, 11:21, 34:44]
    assert torch.equal(outside, batch["input_grid"]), "only the query's output slot is predicted"
    drawn, again = net.predict_with_grids(batch)
    assert torch.equal(again, grids) and drawn.shape == (2, 3, 88, 88)


@pytest.mark.parametrize("options, message", [
    ({"input": "pixels"}, "carc:mlc input"),
    ({"input": "image", "render_spec": None}, "needs render_spec"),
    ({"input": "image", "render_spec": RenderSpec.from_dict({"size": [88, 88]})}, "layout stretch"),
])
def test_bad_image_options_are_one_line(options: dict, message: str) -> None:
    with pytest.raises((ConfigError, UnknownNameError), match=message) as caught:
        create_model("carc:mlc", image_size=88, **options)
    assert "\n" not in str(caught.value)


def test_an_image_too_small_for_the_canvas_and_forward_are_one_line() -> None:
    spec = RenderSpec.from_dict({"size": [40, 40], "palette": "c-arc", "layout": "cell:1:top-left"})
    net = create_model("carc:mlc", input="image", image_size=40, render_spec=spec, study_examples=3)
    batch = {"input": torch.zeros(1, 3, 40, 40), "grid_shape": torch.tensor([[21, 44]]),
             "input_grid": torch.zeros(1, 21, 44, dtype=torch.long)}
    with pytest.raises(ConfigError, match="reads 40 cells a side, but the 3shot canvas is 21x44") as caught:
        net.predict_grids(batch)
    assert "\n" not in str(caught.value)
    with pytest.raises(ConfigError, match="reads the canvas's setup from batch"):
        net(torch.zeros(1, 3, 40, 40))
