"""svib:oracle, SVIB's Oracle: it reads each input object's true factors from an SVIB scene grid, scenes of
different object counts share a batch, anything that is not a scene is refused in one line (at the first batch,
and by training before its first step), it is listed, exported and reloaded, and a checkpoint of the cell-token
model saved under the old name svib:oracle does not load into it.

Its modules against SVIB's own (the differential fixture) and the settings shared with the other presets are
in tests/test_svib_models.py.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from cli_errors import cli_error
from test_svib_models import SIZE, fit_losses, grid_batch, scene_batch

from vision_bench.cli import main
from vision_bench.errors import ConfigError
from vision_bench.models import create_model, load_pretrained, save_pretrained
from vision_bench.models.pretrained import ModelFolderError
from vision_bench.models.svib import scene_factors
from vision_bench.tasks.scenes.factors import COLOURS, SceneObject, draw, footprint
from vision_bench.train import TrainConfig, load_checkpoint
from vision_bench.train.checkpoint import CheckpointError, save_checkpoint
from vision_bench.train.components import build_model, resolve_spec

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def read_order(objects: list[SceneObject]) -> list[SceneObject]:
    """`objects` in the order `scene_objects` reads them: row-major by each footprint's first cell."""
    def first_cell(obj: SceneObject) -> tuple[int, int]:
        row, column = np.argwhere(footprint(obj.shape, obj.size))[0]
        return obj.top + int(row), obj.left + int(column)
    return sorted(objects, key=first_cell)


def expected_factors(objects: list[SceneObject], grid_size: int) -> list[list[float]]:
    return [[obj.colour, obj.shape, obj.size, *obj.position(grid_size)] for obj in read_order(objects)]


# --- what it reads --------------------------------------------------------------------------------------


def test_it_reads_every_combination_drawn_alone() -> None:
    """Each of the 64 (colour, shape, size) combinations, drawn alone at its own place on a 32x32 grid, is read
    back with its factors and its footprint's centre in SVIB's frame (x rightwards, y upwards)."""
    objects = [SceneObject(colour, shape, size, 1 + 3 * colour + shape, 2 + 5 * size)
               for colour in range(4) for shape in range(4) for size in range(4)]
    grids = torch.stack([torch.from_numpy(draw([obj], 32)).long() for obj in objects])
    factors = scene_factors(grids, torch.full((len(objects), 2), 32))
    assert factors.shape == (64, 1, 5) and factors.dtype == torch.float32
    assert factors[:, 0].tolist() == [expected_factors([obj], 32)[0] for obj in objects]
    top_left = factors[[i for i, obj in enumerate(objects) if (obj.colour, obj.shape, obj.size) == (0, 2, 3)][0], 0]
    assert top_left.tolist() == [0, 2, 3, (2 + 15 + 3) / 32, 1 - (1 + 2 + 3) / 32]  # a 6-cell square at (3, 17)


@pytest.mark.parametrize("with_shapes", [True, False], ids=["grid_shape", "no_grid_shape"])
def test_it_reads_the_objects_drawn_in_each_scene_of_a_padded_batch(with_shapes: bool) -> None:
    """Scenes of 32 and 20 cells padded with -1 to one batch (as collate pads them): each scene's objects, its
    own side giving x and y; with `grid_shape` or from the padding alone."""
    scenes = [(32, [SceneObject(1, 3, 3, 4, 20), SceneObject(2, 1, 0, 18, 3)]),
              (20, [SceneObject(3, 0, 2, 12, 12), SceneObject(0, 2, 1, 2, 4)])]
    grids = torch.full((2, 34, 34), -1)
    for index, (side, objects) in enumerate(scenes):
        grids[index, :side, :side] = torch.from_numpy(draw(objects, side))
    shapes = torch.tensor([[32, 32], [20, 20]]) if with_shapes else None
    factors = scene_factors(grids, shapes)
    for index, (side, objects) in enumerate(scenes):
        assert torch.equal(factors[index], torch.tensor(expected_factors(objects, side)))
    model = create_model("svib:oracle", image_size=SIZE)
    batch = {"input_grid": grids, **({"grid_shape": shapes} if shapes is not None else {})}
    assert torch.equal(model.batch_inputs(batch), factors)


def test_scenes_of_different_object_counts_share_a_batch() -> None:
    """A scene of one object is padded with a row of -1, masked out of the decoder: its output is the one it
    has alone."""
    model = create_model("svib:oracle", image_size=SIZE).eval()
    one = [SceneObject(2, 1, 1, 3, 3)]
    two = [SceneObject(0, 3, 2, 1, 1), SceneObject(1, 0, 3, 9, 9)]
    grids = torch.stack([torch.from_numpy(draw(scene, SIZE)).long() for scene in (one, two)])
    factors = model.batch_inputs({"input_grid": grids, "grid_shape": torch.full((2, 2), SIZE)})
    assert factors.shape == (2, 2, 5) and factors[0, 1].tolist() == [-1] * 5
    alone = model.batch_inputs({"input_grid": grids[:1], "grid_shape": torch.full((1, 2), SIZE)})
    assert alone.shape == (1, 1, 5)
    with torch.no_grad():
        output = model(factors)
        torch.testing.assert_close(output[:1], model(alone), atol=1e-5, rtol=0)
        padded_differently = factors.clone()
        padded_differently[0, 1, :3] = -1  # a padding row is told by its colour alone; the rest is not read
        padded_differently[0, 1, 3:] = 0.5
        torch.testing.assert_close(model(padded_differently), output, atol=1e-6, rtol=0)


def test_the_order_of_the_objects_does_not_change_the_output() -> None:
    """The coupler reads each object alone and cross-attention has no object index: reading the objects in
    another order than SVIB's creation order changes nothing but the float summation order."""
    model = create_model("svib:oracle", image_size=SIZE).eval()
    factors = model.batch_inputs(scene_batch(2))
    with torch.no_grad():
        torch.testing.assert_close(model(factors.flip(1)), model(factors), atol=1e-5, rtol=0)
        assert not torch.allclose(model(factors[:, :1]), model(factors), atol=1e-3)  # both objects are read


def test_it_reads_the_objects_not_the_pixels_and_no_task_code_by_default() -> None:
    model = create_model("svib:oracle", image_size=SIZE).eval()
    assert model.describe()["task_conditioning"] is None  # SVIB's Oracle knows one rule; as i2i-cnn / i2i-vit
    batch = scene_batch(2)
    prediction = model.predict(batch)
    assert torch.equal(model.predict({**batch, "input": torch.rand_like(batch["input"])}), prediction)
    assert torch.equal(model.predict({key: value for key, value in batch.items() if key != "task_code"}), prediction)
    recoloured = batch["input_grid"].clone()
    recoloured[0][recoloured[0] == COLOURS[0]] = COLOURS[1]  # the first scene's green object turns magenta
    changed = model.predict({**batch, "input_grid": recoloured})
    assert not torch.allclose(changed[0], prediction[0], atol=1e-4) and torch.equal(changed[1], prediction[1])
    conditioned = create_model("svib:oracle", image_size=SIZE, task_conditioning=True).eval()
    same_scene = {**scene_batch(1), "task_code": torch.tensor([[1, 0, 0, 0]])}
    other_code = {**same_scene, "task_code": torch.tensor([[0, 1, 0, 0]])}
    assert not torch.allclose(conditioned.predict(same_scene), conditioned.predict(other_code))


# --- what it refuses ------------------------------------------------------------------------------------


def _grid(objects: list[SceneObject], side: int = SIZE) -> torch.Tensor:
    return torch.from_numpy(draw(objects, side)).long()


def _with(grid: torch.Tensor, row: int, column: int, value: int) -> torch.Tensor:
    changed = grid.clone()
    changed[row, column] = value
    return changed


SCENE = [SceneObject(0, 2, 1, 2, 2), SceneObject(3, 0, 0, 10, 10)]


@pytest.mark.parametrize(
    "grid,shape,message",
    [
        (torch.randint(0, 10, (SIZE, SIZE), generator=torch.Generator().manual_seed(0)), SIZE, "object at row 0"),
        (_with(_grid(SCENE), 2, 2, 2), SIZE, "object at row 2, column 2"),  # a red cell in the green square
        (_with(_grid(SCENE), 6, 6, COLOURS[0]), SIZE, "object at row 2, column 2"),  # a cell off the footprint
        (torch.zeros(SIZE, SIZE, dtype=torch.long), SIZE, "it has no objects"),
        (_grid(SCENE), (SIZE, SIZE - 2), "it is 16x14 cells, and scenes are square"),
    ],
    ids=["random_grid", "colour_outside_the_four", "no_footprint", "empty", "not_square"],
)
def test_a_grid_that_is_not_a_scene_fails_at_the_first_batch_with_one_line(grid, shape, message: str) -> None:
    model = create_model("svib:oracle", image_size=SIZE)
    height, width = (shape, shape) if isinstance(shape, int) else shape
    batch = {**scene_batch(2), "grid_shape": torch.tensor([[SIZE, SIZE], [height, width]])}
    batch["input_grid"] = torch.stack([batch["input_grid"][0], grid])
    with pytest.raises(ConfigError, match=message) as caught:
        model.training_loss(batch)
    text = str(caught.value)
    assert "\n" not in text and "input grid 1 of the batch" in text
    assert "svib:oracle reads SVIB's scenes (the svib/ studies)" in text and "use svib:cell-oracle" in text


def test_a_dataset_of_images_only_fails_with_one_line() -> None:
    model = create_model("svib:oracle", image_size=SIZE)
    batch = {key: value for key, value in scene_batch(2).items() if key not in ("input_grid", "grid_shape")}
    with pytest.raises(ConfigError, match="svib:oracle reads the input grids, but this dataset has images only"):
        model.training_loss(batch)


FACTORS = torch.tensor([[[0, 1, 2, 0.25, 0.75], [3, 3, 3, 0.5, 0.5]]])


def _factor(row: int, column: int, value: float) -> torch.Tensor:
    changed = FACTORS.clone()
    changed[0, row, column] = value
    return changed


@pytest.mark.parametrize(
    "factors,message",
    [
        (FACTORS[..., :4], r"reads \(B, objects, 5\) float factors \[colour, shape, size, x, y\]"),
        (FACTORS.long(), "float factors"),
        (_factor(0, 1, 1.5), "whole numbers 0..127"),
        (_factor(1, 2, 128), "whole numbers 0..127"),
        (_factor(1, 1, -2), "whole numbers 0..127"),
        (_factor(0, 3, 1.25), r"x and y factors must lie in \[0, 1\]"),
        (_factor(1, 4, math.nan), r"x and y factors must lie in \[0, 1\]"),
        (torch.full((1, 2, 5), -1.0), "no objects"),
    ],
    ids=["four_factors", "integers", "fractional_shape", "size_128", "negative_shape", "x_outside", "nan_y",
         "no_object"],
)
def test_bad_factors_fail_with_one_line(factors: torch.Tensor, message: str) -> None:
    model = create_model("svib:oracle", image_size=SIZE)
    with pytest.raises(ConfigError, match=message) as caught:
        model(factors)
    assert "\n" not in str(caught.value)


def test_training_refuses_data_of_another_task_family_before_the_first_step(tmp_path, capsys) -> None:
    config = TrainConfig.from_dict({
        "dataset": {"study": "envgen/G1/1", "n_train": 4, "n_val": 2, "spec": {"size": [SIZE, SIZE]}},
        "model": {"name": "svib:oracle"},
        "training": {"batch_size": 2, "max_steps": 1},
    })
    with pytest.raises(ConfigError, match=r"dataset.study 'envgen/G1/1' \(sequence studies\) is not a scenes "
                                          "dataset; use svib:cell-oracle for other tasks"):
        build_model(config, resolve_spec(config))
    inline = config.replace(dataset=config.dataset.model_copy(update={"study": None,
                                                                      "task": {"transformations": ["rot90"]}}))
    with pytest.raises(ConfigError, match=r"dataset.task \(sequence studies\) is not a scenes dataset"):
        build_model(inline, resolve_spec(inline))
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(config.to_dict()))
    cli_error(["train", path, "--out", tmp_path / "run"], capsys, "svib:oracle reads the objects of SVIB's scenes")
    assert not (tmp_path / "run" / "checkpoints").exists()
    model = create_model("svib:oracle", image_size=SIZE)
    model.check_task_family("scenes", "dataset.study 'svib/S-A/0.2' (SVIB scenes)")  # the scenes family's data


# --- listed, exported, loaded -----------------------------------------------------------------------------


def test_vision_bench_models_lists_both_oracles(capsys) -> None:
    assert main(["models"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("svib:"))
    assert line.startswith("svib:<i2i-cnn|i2i-vit|oracle|cell-oracle|ssm-vae|ssm-slot>\t")
    # svib:oracle: SVIB's GTEncoder and decoder; svib:cell-oracle: a 10-color table, the decoder, 116 task tokens
    for name, parameters in (("svib:oracle", 2_563_200 + 4_782_000), ("svib:cell-oracle", 4_806_192)):
        assert main(["models", "--describe", name, "--image-size", str(SIZE)]) == 0
        described = json.loads(capsys.readouterr().out)
        assert (described["name"], described["parameters"]) == (name, parameters)


def _checkpoint(tmp_path, name: str, state: dict[str, torch.Tensor]):
    """A run folder whose checkpoint holds `state` for the model `name`, trained on an export folder."""
    config = TrainConfig.from_dict({
        "dataset": {"path": str(tmp_path / "export"), "spec": {"size": [SIZE, SIZE]}},
        "model": {"name": name},
    })
    run = tmp_path / "run"
    save_checkpoint(run / "checkpoints" / "best.pt", {
        "config": config.to_dict(), "config_hash": config.experiment_hash(), "model": state, "optimizer": {},
        "scheduler": {}, "scaler": {}, "rng": {}, "epoch": 0, "step": 3,
    })
    return run


def test_export_model_and_load_pretrained_give_the_oracle_back(tmp_path) -> None:
    torch.manual_seed(1)
    model = create_model("svib:oracle", image_size=SIZE).eval()
    run = _checkpoint(tmp_path, "svib:oracle", model.state_dict())
    loaded, _, _ = load_checkpoint(run / "checkpoints" / "best.pt")
    batch = scene_batch(2)
    assert torch.equal(loaded.predict(batch), model.predict(batch))
    assert main(["export-model", str(run), "--out", str(tmp_path / "model")]) == 0
    exported = load_pretrained(tmp_path / "model")
    assert exported.name == "svib:oracle" and torch.equal(exported.predict(batch), model.predict(batch))
    save_pretrained(model, tmp_path / "saved", options={"image_size": SIZE})
    assert torch.equal(load_pretrained(tmp_path / "saved").predict(batch), model.predict(batch))


def test_a_cell_oracle_saved_as_svib_oracle_fails_to_load_with_one_line(tmp_path, capsys) -> None:
    """Before the rename, svib:oracle was the cell-token model: its checkpoints and exports name svib:oracle
    and hold the cell model's weights, which must not be read as the new model's."""
    cell = create_model("svib:cell-oracle", image_size=SIZE, grid_size=4).eval()
    run = _checkpoint(tmp_path, "svib:oracle", cell.state_dict())
    renamed = "called svib:oracle before it was renamed svib:cell-oracle"
    with pytest.raises(CheckpointError, match=renamed) as caught:
        load_checkpoint(run / "checkpoints" / "best.pt")
    assert "\n" not in str(caught.value) and "retrain under the new name" in str(caught.value)
    cli_error(["export-model", run, "--out", tmp_path / "model"], capsys, renamed)
    cli_error(["evaluate", run], capsys, renamed)
    save_pretrained(cell, tmp_path / "saved", options={"image_size": SIZE, "grid_size": 4})
    config_file = tmp_path / "saved" / "config.json"
    config_file.write_text(config_file.read_text().replace('"svib:cell-oracle"', '"svib:oracle"'))
    with pytest.raises(ModelFolderError, match=renamed) as caught:
        load_pretrained(tmp_path / "saved")
    assert "\n" not in str(caught.value)
    grids = grid_batch(1)["input_grid"]  # the same weights under their new name load and draw
    assert load_checkpoint(_checkpoint(tmp_path / "new", "svib:cell-oracle", cell.state_dict()) / "checkpoints"
                           / "best.pt").model(grids, torch.tensor([[1, 0, 0, 0]])).shape == (1, 3, SIZE, SIZE)


# --- trained on an svib/ study, at a CPU size ---------------------------------------------------------------


def test_a_small_oracle_trains_on_an_svib_study_and_its_loss_falls(tmp_path) -> None:
    """End to end on the scenes family: the oracle reads the study's scenes, at a CPU size (the options that
    shrink SVIB's widths and depths), and a few steps on a fixed batch lower its loss."""
    from render.spec import RenderSpec
    from vision_bench.data.collate import collate
    from vision_bench.data.opening import open_dataset
    from vision_bench.train import train

    options = {"decoder_width": 32, "decoder_depth": 1, "encoder_width": 32, "encoder_depth": 1}
    config = TrainConfig.from_dict({
        "dataset": {"study": "svib/S-A/0.2", "n_train": 8, "n_val": 2, "spec": {"size": [32, 32]}},
        "model": {"name": "svib:oracle", "options": options},
        "training": {"batch_size": 4, "max_steps": 2, "eval_batch_size": 2},
    })
    train(config, tmp_path / "run", progress=False)
    assert (tmp_path / "run" / "checkpoints").is_dir()
    model = create_model("svib:oracle", image_size=32, **options)
    full = create_model("svib:oracle", image_size=32)
    assert sum(p.numel() for p in model.parameters()) < sum(p.numel() for p in full.parameters()) / 20

    dataset = open_dataset("svib/S-A/0.2", "train", RenderSpec(size=(32, 32)), n_train=4, n_val=2, n_test=2)
    batch = collate([dataset[i] for i in range(4)])
    torch.manual_seed(0)
    losses = fit_losses(model, batch, steps=15, lr=3e-3)
    assert losses[-1] < 0.5 * losses[0], losses


@pytest.mark.parametrize("preset, options, message", [
    ("i2i-cnn", {"encoder_depth": 2}, "i2i-cnn: no encoder_depth"),
    ("cell-oracle", {"decoder_width": 32}, "it takes grid_size"),
    ("oracle", {"decoder_depth": 0}, "decoder_depth"),
])
def test_size_options_that_do_not_apply_are_one_line(preset: str, options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        create_model(f"svib:{preset}", image_size=SIZE, **options)
