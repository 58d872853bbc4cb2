"""LPIPS as a weighted term of an RGB head's loss (`loss: mse+0.1*lpips`): the value, gradients,
LPIPS frozen and outside the model's parameters, and the errors for bad settings."""

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from vision_bench.errors import ConfigError, UnknownNameError
from vision_bench.models import create_model
from vision_bench.models.heads import parse_rgb_loss
from vision_bench.weights import lpips as lpips_weights

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def batch(seed: int = 0) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return {"input": torch.rand(2, 3, 64, 64, generator=generator),
            "target": torch.rand(2, 3, 64, 64, generator=generator)}


@pytest.mark.parametrize(("text", "terms"), [
    ("mse", ((1.0, "mse"),)),
    ("mse+0.1*lpips", ((1.0, "mse"), (0.1, "lpips:alex"))),
    ("0.5*l1 + 2*lpips:vgg", ((0.5, "l1"), (2.0, "lpips:vgg"))),
])
def test_loss_syntax(text: str, terms: tuple) -> None:
    assert parse_rgb_loss(text) == terms


@pytest.mark.parametrize(("text", "error", "message"), [
    ("mse+0.1*lpipz", UnknownNameError, "lpips"),
    ("x*mse", ConfigError, "is not a number"),
    ("mse:vgg", ConfigError, "only lpips takes a network"),
    ("-1*mse", ConfigError, "must be positive"),
    ("lpips:resnet", UnknownNameError, "LPIPS network"),
])
def test_bad_loss_settings_are_one_clear_error(text: str, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        create_model("unet:test_resnet", image_size=64, decoder_width=4, loss=text)


def test_palette_head_refuses_an_lpips_loss() -> None:
    with pytest.raises(ConfigError, match="LPIPS needs an image"):
        create_model("unet:test_resnet", image_size=64, decoder_width=4, head="palette", loss="mse+0.1*lpips",
                     palette_colors=[[i * 20] * 3 for i in range(10)])


def test_weighted_lpips_term_is_added_to_the_pixel_loss(random_lpips_weights: Path) -> None:
    model = create_model("unet:test_resnet", image_size=64, decoder_width=4, loss="mse+0.1*lpips")
    data = batch()
    loss = model.training_loss(data)
    output = model(data["input"])
    lpips_module = lpips_weights.build_lpips("alex")
    with torch.no_grad():
        perceptual = lpips_module(output * 2 - 1, data["target"] * 2 - 1).mean()
        expected = F.mse_loss(output, data["target"]) + 0.1 * perceptual
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    loss.backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)
    assert model.describe()["loss"] == "mse+0.1*lpips:alex"
    state_keys = set(model.state_dict())
    assert not any("lpips" in key or "slice" in key for key in state_keys)  # not in checkpoints


def test_lpips_stays_frozen_and_in_eval_mode_while_training(random_lpips_weights: Path) -> None:
    model = create_model("unet:test_resnet", image_size=64, decoder_width=4, loss="lpips")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    model.train()
    losses = []
    data = batch(1)
    for _ in range(5):
        optimizer.zero_grad()
        loss = model.training_loss(data)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    lpips_module = model.pixel_head._lpips["alex"]
    assert not lpips_module.training and not any(p.requires_grad for p in lpips_module.parameters())
    assert losses[-1] < losses[0]
    assert not any(p is q for p in model.parameters() for q in lpips_module.parameters())


def test_missing_lpips_weights_stop_training_with_the_command_to_run() -> None:
    model = create_model("unet:test_resnet", image_size=64, decoder_width=4, loss="mse+0.1*lpips")
    with pytest.raises(ConfigError, match="vision-bench weights get lpips --net alex"):
        model.training_loss(batch())


def test_train_refuses_an_lpips_loss_without_weights_before_writing(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    from vision_bench.cli import main

    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "configs" / "train_smoke.yaml").read_text())
    config["model"]["options"]["loss"] = "mse+0.1*lpips"
    path = tmp_path / "train.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["train", str(path), "--out", str(tmp_path / "run"), "--offline"]) == 2
    err = capsys.readouterr().err
    assert "vision-bench weights get lpips --net alex" in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()
