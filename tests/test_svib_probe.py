"""svib:ssm-vae and svib:ssm-slot (`vision_bench.models.svib_probe`): SVIB's state-space models and their probe in
one run of two phases, through the real training loop; the per-sample initial slots of SSM-Slot in eval mode;
refusals; saving and loading; the CLI. The SSM modules themselves are checked against SVIB's in
tests/test_svib_ssm.py.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest
import torch
from cli_errors import cli_error
from PIL import Image

from vision_bench.errors import ConfigError
from vision_bench.evaluation.sheets import COLUMNS, GAP, LABEL_WIDTH, MIN_PANEL
from vision_bench.models import create_model
from vision_bench.models.patch_transformer import SVIB_DECODER
from vision_bench.models.pretrained import load_pretrained, save_pretrained
from vision_bench.models.svib_probe import SsmProbeModel
from vision_bench.models.svib_ssm import SsmSlot, SsmVae
from vision_bench.train import TrainConfig, load_checkpoint, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SSMS = ["svib:ssm-vae", "svib:ssm-slot"]
SIZE = 32
TINY = {"image_size": SIZE, "encoder_width": 4, "encoder_depth": 1, "latent_dim": 8, "decoder_width": 8,
        "decoder_depth": 1}
"""Options of a model that trains in a fraction of a second on a CPU."""


def image_batch(count: int, seed: int = 0) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return {"input": torch.rand(count, 3, SIZE, SIZE, generator=generator),
            "target": torch.rand(count, 3, SIZE, SIZE, generator=generator)}


def flat(module: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten().clone() for p in module.parameters()])


def run_config(name: str, **overrides: Any) -> TrainConfig:
    return TrainConfig.from_dict({
        "dataset": {"study": "envgen/G1/1", "n_train": 4, "n_val": 2, "spec": {"size": [SIZE, SIZE]}},
        "model": {"name": name, "options": TINY},
        "training": {"batch_size": 2, "eval_batch_size": 2, "max_steps": 4, "log_every": 1},
        "schedule": {"warmup_steps": 1},
        **overrides,
    })


# --- the model ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,ssm,tokens", [("svib:ssm-vae", SsmVae, 1), ("svib:ssm-slot", SsmSlot, 4)])
def test_svibs_settings_and_the_probes_memory(name: str, ssm: type, tokens: int) -> None:
    """SVIB's settings by default; the probe is the I2I models' decoder reading the predicted latent as tokens
    (SSM-VAE one vector, SSM-Slot its 4 slots), and the options shrink both."""
    model = create_model(name)
    assert isinstance(model.ssm, ssm) and model.decoder.settings == SVIB_DECODER
    assert model.ssm.settings.image_size == 128 and model.probe_from == 0.5
    assert model.describe()["ssm"]["dynamics_blocks"] == 4 and model.describe()["probe_from"] == 0.5
    small = create_model(name, **TINY, probe_from=0.25)
    assert small.latent(torch.rand(2, 3, SIZE, SIZE)).shape == (2, tokens, 8)
    assert small.decoder.settings.width == 8 and small.decoder.settings.depth == 1 and small.probe_from == 0.25
    settings = small.ssm.settings
    assert (settings.cnn_hidden, settings.dynamics_blocks) == (4, 1)
    assert small.predict(image_batch(2)).shape == (2, 3, SIZE, SIZE)


@pytest.mark.parametrize("name", SSMS)
def test_each_phase_trains_its_own_part(name: str) -> None:
    """Phase 1 (training mode, before probe_from): the SSM's objective, gradients in the SSM only; phase 2:
    the probe's loss, gradients in the probe only; eval mode: the probe's loss whatever the phase."""
    model = create_model(name, **TINY, probe_from=0.5).train()
    batch = image_batch(2)

    def gradients() -> tuple[bool, bool]:
        model.zero_grad(set_to_none=True)
        model.training_loss(batch).backward()
        return (all(p.grad is not None for p in model.ssm.parameters()),
                any(p.grad is not None for p in model.decoder.parameters()))

    model.begin_step(4, 10)  # 4 < 0.5 x 10
    assert gradients() == (True, False)
    video = torch.stack([batch["input"], batch["target"]], dim=1)
    torch.manual_seed(1)
    phase_one = model.training_loss(batch)
    torch.manual_seed(1)
    assert torch.equal(phase_one, model.ssm.loss(video).loss)
    model.begin_step(5, 10)
    assert gradients() == (False, True)
    model.begin_step(0, 10)
    model.eval()
    with torch.no_grad():
        probe_loss = model.training_loss(batch)
        torch.testing.assert_close(probe_loss, ((model(batch["input"]) - batch["target"]) ** 2).mean())


@pytest.mark.parametrize("name", SSMS)
def test_both_phases_train_and_predict_under_bf16_autocast(name: str) -> None:
    """Mixed precision as a bf16 run uses it (CPU autocast here, CUDA's alike): each phase gives a finite loss and a
    gradient to every parameter of its own part (SSM-VAE's NLL divides by sigma^2 = 1e-4), and eval mode draws
    finite images the same on two calls."""
    torch.manual_seed(0)
    model = create_model(name, **TINY).train()
    batch = image_batch(2)
    for step, part in ((0, model.ssm), (9, model.decoder)):
        model.begin_step(step, 10)
        model.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model.training_loss(batch)
        assert torch.isfinite(loss)
        loss.backward()
        assert not [n for n, p in part.named_parameters() if p.grad is None or not torch.isfinite(p.grad).all()]
    model.eval()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        drawn = model.predict(batch)
        assert torch.isfinite(drawn).all() and torch.equal(drawn, model.predict(batch))


@pytest.mark.parametrize("name", SSMS)
def test_the_loop_trains_the_ssm_then_the_probe_and_resumes_in_its_phase(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through `train` (4 steps, probe_from 0.5): steps 0 and 1 change the SSM's weights and not the probe's, steps
    2 and 3 the reverse. The run stops after step 3 and resumes: begin_step sees steps 0, 1, 2, then 3, of 4."""
    seen: list[tuple[int, int, torch.Tensor, torch.Tensor]] = []
    begin_step = SsmProbeModel.begin_step

    def spy(self: SsmProbeModel, step: int, total_steps: int) -> None:
        seen.append((step, total_steps, flat(self.ssm), flat(self.decoder)))
        begin_step(self, step, total_steps)

    monkeypatch.setattr(SsmProbeModel, "begin_step", spy)
    config = run_config(name)
    stopped = train(config, tmp_path / "run", progress=False, stop_at_step=3)
    assert not stopped.finished and [(s, t) for s, t, _, _ in seen] == [(0, 4), (1, 4), (2, 4)]
    result = train(config, tmp_path / "run", resume=True, progress=False)
    assert result.step == 4 and [(s, t) for s, t, _, _ in seen] == [(0, 4), (1, 4), (2, 4), (3, 4)]
    model, _, _ = load_checkpoint(result.last_checkpoint)
    weights = [(ssm, probe) for _, _, ssm, probe in seen] + [(flat(model.ssm), flat(model.decoder))]
    changed = [(not torch.equal(a[0], b[0]), not torch.equal(a[1], b[1])) for a, b in zip(weights, weights[1:])]
    assert changed == [(True, False), (True, False), (False, True), (False, True)]
    assert math.isfinite(result.final_metrics["val_id/loss"])


# --- SSM-Slot's initial slots ---------------------------------------------------------------------------


def test_ssm_slot_predicts_each_sample_alone_in_eval_mode() -> None:
    """In eval mode a sample's initial slots come from its own image: its prediction is the same alone, in a batch,
    at another place of it, on every call, whatever the global RNG; in training they come from the global RNG."""
    torch.manual_seed(0)
    model = create_model("svib:ssm-slot", **TINY).eval()
    batch = image_batch(4)
    together = model.predict(batch)
    torch.manual_seed(123)
    alone = torch.cat([model.predict({key: value[i : i + 1] for key, value in batch.items()}) for i in range(4)])
    reversed_order = model.predict({key: value.flip(0) for key, value in batch.items()}).flip(0)
    torch.testing.assert_close(alone, together, rtol=0, atol=1e-6)
    torch.testing.assert_close(reversed_order, together, rtol=0, atol=1e-6)
    slots = model.initial_slots(batch["input"])
    assert slots.shape == (4, 4, 8) and not torch.equal(slots[0], slots[1])
    model.train()
    with torch.no_grad():
        torch.manual_seed(1)
        first = model.latent(batch["input"])
        torch.manual_seed(2)
        assert not torch.allclose(model.latent(batch["input"]), first)
        torch.manual_seed(1)
        assert torch.equal(model.latent(batch["input"]), first)


def test_ssm_slot_gives_each_slots_attention_for_the_sample_sheets() -> None:
    """One grey image per slot: SAVi's attention on the input with the slots of the prediction (eval mode), at
    the image's size, summing to 1 over the slots at every pixel; SSM-VAE gives none."""
    model = create_model("svib:ssm-slot", **TINY).eval()
    batch = image_batch(3)
    images = model.sheet_images(batch)
    assert list(images) == [f"slot {k} attention" for k in (1, 2, 3, 4)]
    stacked = torch.stack(list(images.values()))  # (slots, B, 3, S, S)
    assert stacked.shape == (4, 3, 3, SIZE, SIZE) and torch.equal(stacked[:, :, 0], stacked[:, :, 2])
    torch.testing.assert_close(stacked.sum(0), torch.ones(3, 3, SIZE, SIZE))
    _, attention = model.ssm.encode(batch["input"].unsqueeze(1), noise=model.initial_slots(batch["input"]))
    side = model.ssm.settings.feature_side  # 16: each feature pixel covers 2 x 2 image pixels
    torch.testing.assert_close(stacked[1, 2, 0, ::2, ::2], attention[2, 0, :, 1].reshape(side, side))
    assert create_model("svib:ssm-vae", **TINY).sheet_images(batch) == {}


# --- refusals, saving, the CLI ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,options,message",
    [
        ("svib:ssm-vae", {"probe_from": 0}, "probe_from must be a number between 0 and 1"),
        ("svib:ssm-slot", {"probe_from": 1.0}, "probe_from must be a number between 0 and 1"),
        ("svib:ssm-vae", {"probe_from": True}, "probe_from must be a number between 0 and 1"),
        ("svib:ssm-vae", {"probe_from": "half"}, "probe_from must be a number between 0 and 1"),
        ("svib:ssm-vae", {"task_conditioning": True}, "reads no task code"),
        ("svib:ssm-slot", {"task_conditioning": 40}, "reads no task code"),
        ("svib:ssm-slot", {"image_size": 40}, "multiple of 16"),
        ("svib:ssm-vae", {"image_size": 40}, "multiple of 16"),
        ("svib:ssm-vae", {"grid_size": 4}, "does not take option\\(s\\) grid_size"),
        ("svib:ssm-slot", {"latent_dim": 0}, "latent_dim must be a positive integer"),
        ("svib:ssm-slot", {"pretrained": True}, "from scratch"),
        ("svib:i2i-cnn", {"probe_from": 0.5}, "does not take option\\(s\\) probe_from"),
        ("svib:i2i-vit", {"latent_dim": 8}, "does not take option\\(s\\) latent_dim"),
        ("svib:cell-oracle", {"probe_from": 0.5}, "takes grid_size"),
    ],
)
def test_bad_options_raise_one_line(name: str, options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        create_model(name, **{"image_size": SIZE, **options})
    assert "\n" not in str(caught.value)


def test_task_conditioning_false_is_accepted() -> None:
    assert create_model("svib:ssm-vae", **TINY, task_conditioning=False).describe()["task_conditioning"] is None


@pytest.mark.parametrize("name", SSMS)
def test_save_and_load_give_identical_predictions(name: str, tmp_path: Path) -> None:
    torch.manual_seed(0)
    options = {**TINY, "probe_from": 0.3}
    model = create_model(name, **options).eval()
    save_pretrained(model, tmp_path / "export", options=options)
    loaded = load_pretrained(tmp_path / "export").eval()
    assert loaded.name == name and loaded.describe() == model.describe()
    batch = image_batch(3)
    assert torch.equal(loaded.predict(batch), model.predict(batch))


def test_vision_bench_models_lists_them(capsys: pytest.CaptureFixture[str]) -> None:
    from vision_bench.cli import main

    assert main(["models"]) == 0
    svib = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("svib:"))
    assert "ssm-vae" in svib and "ssm-slot" in svib


def test_the_cli_refuses_a_bad_probe_from_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "ssm.yaml"
    config.write_text(run_config("svib:ssm-vae", model={"name": "svib:ssm-vae",
                                                          "options": {**TINY, "probe_from": 2}}).to_yaml())
    cli_error(["train", str(config), "--out", str(tmp_path / "run")], capsys, "probe_from must be a number")


@pytest.mark.parametrize("name", SSMS)
def test_train_and_evaluate_from_the_cli(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vision_bench.cli import main

    config = tmp_path / "ssm.yaml"
    config.write_text(run_config(name).to_yaml())
    assert main(["train", str(config), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    assert main(["evaluate", str(tmp_path / "run"), "--n-test", "2", "--batch-size", "2", "--baselines", "",
                 "--offline", "--no-progress", "--quiet"]) == 0
    capsys.readouterr()
    metrics = json.loads((tmp_path / "run" / "evaluation" / "metrics.json").read_text())
    assert metrics["model"] == name and set(metrics["splits"]) == {"test_id", "test_ood"}
    sheet = Image.open(tmp_path / "run" / "evaluation" / "sheets" / name.replace(":", "_") / "test_ood_worst.png")
    columns = len(COLUMNS) + (4 if name == "svib:ssm-slot" else 0)  # SSM-Slot: each slot's attention
    assert sheet.width == LABEL_WIDTH + columns * (MIN_PANEL + GAP) + GAP
