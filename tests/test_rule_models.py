"""Models on rule studies: ground_truth applies a rule to the objects it selects only, and conditioned models
read task codes of the study's length (gCOG's productive presets: 10 tokens)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from render.spec import RenderSpec  # noqa: E402
from vision_bench.data.collate import collate  # noqa: E402
from vision_bench.data.onthefly import OnTheFlyDataset  # noqa: E402
from vision_bench.errors import ConfigError, TransformationError  # noqa: E402
from vision_bench.evaluation import EvaluationData, build_baselines, evaluate_predictors, pick_device  # noqa: E402
from vision_bench.models import create_model  # noqa: E402
from vision_bench.tasks.sampling import generate_sample  # noqa: E402
from vision_bench.tasks.studies.registry import get_study  # noqa: E402
from vision_bench.tasks.task_code import FULL_VOCAB_SIZE, TASK_CODE_LENGTH, VOCAB_SIZE  # noqa: E402
from vision_bench.tasks.transformations import apply_sequence  # noqa: E402

SPEC = RenderSpec(size=(40, 40))
SPLITS = ("test_id", "test_ood")


def everything_moved(grid: np.ndarray, names: tuple[str, ...]) -> np.ndarray | None:
    """The sequence applied to every object, as COGITAO's ground truth did (None where it cannot be applied)."""
    try:
        return apply_sequence(grid, names)
    except TransformationError:
        return None


def test_ground_truth_scores_ga_100_on_a_gcog_distractor_split(tmp_path: Path) -> None:
    config = get_study("gcog/distractor/10", n_train=2, n_val=1, n_test=4, seed=3)
    samples = [generate_sample(config, split, index) for split in SPLITS for index in range(4)]
    # the rule moves the selected object only: the sequence applied to every object fails or gives another grid
    assert not any(np.array_equal(everything_moved(s.input, s.sequence), s.output) for s in samples)
    data = EvaluationData(SPEC, {split: OnTheFlyDataset(config, split, SPEC) for split in SPLITS})
    device = pick_device("cpu")
    models, notes = build_baselines(("ground_truth",), data, device, batch_size=4)
    assert notes == []
    result = evaluate_predictors(models, data, tmp_path, device=device, batch_size=4, sheet_samples=1)
    for split in SPLITS:
        entry = result.metrics["baselines"]["ground_truth"]["splits"][split]
        assert entry["n"] == 4 and entry["metrics"]["grid_accuracy"] == 100.0 and entry["metrics"]["mse"] == 0.0


def test_ground_truth_predicts_a_rule_target_byte_for_byte() -> None:
    config = get_study("gcog/productive/5", n_train=4, n_val=1, n_test=2, seed=0)
    dataset = OnTheFlyDataset(config, "test_ood", SPEC)
    batch = collate([dataset[0], dataset[1]])
    assert batch["task_code"].shape == (2, config.task_code_length)
    model = create_model("ground_truth", image_size=40, render_spec=SPEC)
    assert torch.equal(model.predict(batch), batch["target"])


def productive_batch() -> dict:
    """Two gcog/productive/7 OOD samples: codes of 10 tokens (a 3-token selector, 7 steps) beyond COGITAO's."""
    config = get_study("gcog/productive/7", n_train=4, n_val=1, n_test=2, seed=0)
    assert config.task_code_length == 10
    dataset = OnTheFlyDataset(config, "test_ood", RenderSpec(size=(32, 32)))
    return collate([dataset[0], dataset[1]])


@pytest.mark.parametrize("name, options", [("unet:test_resnet", {"decoder_width": 4}),
                                           ("vit:test_vit", {"patch_size": 8}),
                                           ("svib:i2i-cnn", {})])
def test_a_model_reads_codes_of_its_task_code_length(name: str, options: dict) -> None:
    batch = productive_batch()
    assert batch["task_code"].shape == (2, 10) and int(batch["task_code"].max()) >= VOCAB_SIZE
    model = create_model(name, image_size=32, task_conditioning=FULL_VOCAB_SIZE, task_code_length=10, **options)
    loss = model.training_loss(batch)
    assert torch.isfinite(loss) and model.predict(batch).shape == (2, 3, 32, 32)
    assert model.describe()["task_code_length"] == 10
    for wrong in (batch["task_code"][:, :TASK_CODE_LENGTH], torch.zeros(2, 11, dtype=torch.long)):
        with pytest.raises(ConfigError, match=r"expects \(2, 10\)") as error:
            model.predict({**batch, "task_code": wrong})
        assert "\n" not in str(error.value) and "task_code_length" in str(error.value)


def test_codes_change_the_output_at_every_position() -> None:
    """Each of the 10 positions has its own embedding: a token changed at the last position changes the output."""
    torch.manual_seed(0)
    model = create_model("vit:test_vit", image_size=32, patch_size=8, task_conditioning=FULL_VOCAB_SIZE,
                         task_code_length=10)
    images = torch.rand(1, 3, 32, 32)
    code = torch.zeros(1, 10, dtype=torch.long)
    changed = code.clone()
    changed[0, 9] = FULL_VOCAB_SIZE - 1
    with torch.no_grad():
        assert not torch.equal(model(images, code), model(images, changed))


def test_the_default_code_length_keeps_the_former_weights() -> None:
    """Four positions unless told otherwise: the embedding tables (and so every saved state dict) keep their shape."""
    for name, options in (("unet:test_resnet", {"decoder_width": 4}), ("vit:test_vit", {})):
        default = create_model(name, image_size=32, task_conditioning=True, **options)
        longer = create_model(name, image_size=32, task_conditioning=True, task_code_length=10, **options)
        tables = {key: value.shape for key, value in default.state_dict().items() if "table" in key}
        assert tables and all(shape[0] == VOCAB_SIZE * TASK_CODE_LENGTH for shape in tables.values())
        assert all(longer.state_dict()[key].shape[0] == VOCAB_SIZE * 10 for key in tables)
        assert default.describe()["task_code_length"] == TASK_CODE_LENGTH
    assert create_model("unet:test_resnet", image_size=32).describe()["task_code_length"] is None


@pytest.mark.parametrize("length", [0, -1, 33, 2.5, "10", True])
def test_a_bad_task_code_length_is_one_config_error(length: object) -> None:
    with pytest.raises(ConfigError, match="task_code_length") as error:
        create_model("unet:test_resnet", image_size=32, task_conditioning=True, task_code_length=length)
    assert "\n" not in str(error.value)
