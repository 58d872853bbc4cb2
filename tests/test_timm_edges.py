"""timm edge cases: pretrained weights from the Hugging Face cache (never the network), transformer
backbones under unet:, weight files from another architecture, no environment changed on import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import timm
import torch
from safetensors.torch import save_file

from vision_bench.cli import main
from vision_bench.errors import ConfigError
from vision_bench.models import create_model
from vision_bench.models.timm_weights import PretrainedWeightsError
from vision_bench.train.checkpoint import CheckpointError, load_model_state

pytestmark = pytest.mark.usefixtures("one_torch_thread")

HUB_REPO = "timm/test_resnet.r160_in1k"  # where timm's pretrained_cfg says test_resnet's weights are
UNET = {"image_size": 64, "decoder_width": 4}
TINY_SWIN = {"embed_dim": 16, "depths": [1, 1, 1, 1], "num_heads": [1, 1, 1, 1], "window_size": 4}


def fake_hub_cache(root: Path, repo: str, state: dict[str, torch.Tensor], revision: str = "0123abcd") -> Path:
    """The Hugging Face cache layout: models--ORG--NAME/snapshots/REV/{model.safetensors,config.json}, refs/main."""
    entry = root / f"models--{repo.replace('/', '--')}"
    snapshot = entry / "snapshots" / revision
    snapshot.mkdir(parents=True)
    save_file({key: value.contiguous() for key, value in state.items()}, str(snapshot / "model.safetensors"))
    (snapshot / "config.json").write_text(json.dumps({"architecture": repo.split("/")[1].split(".")[0]}))
    (entry / "refs").mkdir()
    (entry / "refs" / "main").write_text(revision)
    return root


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to reach the hub fails the test."""
    import huggingface_hub

    def refuse(*args, **kwargs):
        raise AssertionError("the hub was contacted")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", refuse)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", refuse)


def seeded_test_resnet(seed: int = 123, **kwargs) -> torch.nn.Module:
    torch.manual_seed(seed)
    return timm.create_model("test_resnet", **kwargs)


# --- pretrained: true ------------------------------------------------------------------------------------


def test_pretrained_weights_come_from_the_hub_cache(tmp_path, monkeypatch, no_network) -> None:
    source = seeded_test_resnet()
    monkeypatch.setenv("HF_HUB_CACHE", str(fake_hub_cache(tmp_path / "hub", HUB_REPO, source.state_dict())))
    model = create_model("unet:test_resnet", pretrained=True, **UNET)
    saved = source.state_dict()
    loaded = model.encoder.features.state_dict()
    assert len(loaded) > 40 and all(torch.equal(value, saved[key]) for key, value in loaded.items())


def test_pretrained_weights_through_a_training_config(tmp_path, monkeypatch, no_network) -> None:
    from vision_bench.train import TrainConfig
    from vision_bench.train.components import build_model, resolve_spec

    source = seeded_test_resnet()
    monkeypatch.setenv("HF_HUB_CACHE", str(fake_hub_cache(tmp_path / "hub", HUB_REPO, source.state_dict())))
    config = TrainConfig.from_dict({
        "dataset": {"study": "envgen/G1/1", "spec": {"size": [32, 32]}},
        "model": {"name": "bottleneck:test_resnet", "options": {"pretrained": True, "decoder_width": 4}},
    })
    model = build_model(config, resolve_spec(config))
    assert torch.equal(model.encoder.features.conv1[0].weight, source.conv1[0].weight)


def test_pretrained_weights_missing_offline_is_one_line(tmp_path, monkeypatch, no_network, capsys) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    with pytest.raises(PretrainedWeightsError, match=f"not in the Hugging Face cache .* `hf download {HUB_REPO}`"):
        create_model("unet:test_resnet", pretrained=True, **UNET)
    # the project's own switch is enough, and the command line prints one line, exit 2
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("VISION_BENCH_OFFLINE", "1")
    config = tmp_path / "train.yaml"
    config.write_text("dataset: {study: envgen/G1/1, n_train: 4, n_val: 1, spec: {size: [32, 32]}}\n"
                      "model: {name: 'unet:test_resnet', options: {pretrained: true}}\n")
    assert main(["train", str(config), "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "pretrained_file: PATH" in error and "Traceback" not in error


def test_pretrained_weights_are_fetched_into_the_cache_when_downloads_are_allowed(tmp_path, monkeypatch) -> None:
    """Online, timm's weights are fetched with huggingface_hub (here a stand-in that serves a local file)."""
    import huggingface_hub

    source = seeded_test_resnet()
    served = fake_hub_cache(tmp_path / "served", HUB_REPO, source.state_dict())
    asked = []

    def download(repo_id, filename, revision=None, cache_dir=None):
        asked.append((repo_id, filename, Path(cache_dir)))
        return str(next(served.glob(f"models--*/snapshots/*/{filename}")))

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("VISION_BENCH_OFFLINE", raising=False)
    model = create_model("unet:test_resnet", pretrained=True, **UNET)
    assert asked == [(HUB_REPO, "model.safetensors", tmp_path / "hub")]
    assert torch.equal(model.encoder.features.conv1[0].weight, source.conv1[0].weight)


@pytest.mark.parametrize(
    "name,options,message",
    [
        ("unet:test_resnet", {"pretrained": True, "pretrained_file": "w.pth"}, "not both"),
        ("unet:test_resnet", {"pretrained": "yes"}, "true or false"),
        ("copy_input", {"pretrained": True}, "baseline without weights"),
        ("svib:i2i-cnn", {"pretrained": True}, "from scratch"),
    ],
)
def test_pretrained_option_errors(name: str, options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        create_model(name, **{"image_size": 64, **options})


# --- transformer backbones under unet: ---------------------------------------------------------------------


@pytest.mark.parametrize("family", ["unet", "bottleneck"])
def test_swin_encoder_trains_with_channels_first_maps(family: str) -> None:
    """timm's swin gives NHWC feature maps and needs its input size: both handled when the model is built."""
    model = create_model(f"{family}:swin_tiny_patch4_window7_224", **UNET, **TINY_SWIN)
    assert model.encoder.channels_last_maps and model.encoder.reductions == [4, 8, 16, 32]
    maps = model.encoder(torch.rand(2, 3, 64, 64))
    assert [tuple(m.shape) for m in maps] == [(2, 16, 16, 16), (2, 32, 8, 8), (2, 64, 4, 4), (2, 128, 2, 2)]
    batch = {"input": torch.rand(2, 3, 64, 64), "target": torch.rand(2, 3, 64, 64)}
    assert model.predict(batch).shape == (2, 3, 64, 64)
    model.training_loss(batch).backward()
    assert all(p.grad is not None for p in model.parameters())


@pytest.mark.parametrize("backbone", ["vit_tiny_patch16_224", "test_vit"])
def test_plain_vit_under_unet_is_refused_when_built(backbone: str) -> None:
    with pytest.raises(ConfigError, match=f"one scale .*use vit:{backbone} for it"):
        create_model(f"unet:{backbone}", image_size=64)


def test_backbone_that_cannot_run_at_the_size_is_refused_when_built() -> None:
    """efficientformer builds at 64 pixels but its attention biases are for 224: the probe forward finds out."""
    with pytest.raises(ConfigError, match="'efficientformer_l1' cannot encode 64x64 images"):
        create_model("unet:efficientformer_l1", image_size=64)


# --- weights from another architecture ------------------------------------------------------------------


def test_weights_of_a_deeper_resnet_are_refused_naming_the_keys(tmp_path) -> None:
    """Like resnet34 into resnet18: every key of the smaller model is there, plus blocks it lacks."""
    path = tmp_path / "deeper.safetensors"
    save_file(seeded_test_resnet(layers=(2, 1, 1, 1)).state_dict(), str(path))
    expected = r"does not fit timm model 'test_resnet'.*: \d+ unexpected \(layer1\.1\."
    with pytest.raises(ConfigError, match=expected) as caught:
        create_model("unet:test_resnet", pretrained_file=path, **UNET)
    assert "missing" not in str(caught.value) and len(str(caught.value).splitlines()) == 1


def test_weights_of_another_width_are_refused_naming_the_shapes(tmp_path) -> None:
    """The same keys, other shapes: found by the load itself, after timm's resampling, and named the same way."""
    path = tmp_path / "wider.pth"
    torch.save(seeded_test_resnet(channels=(32, 48, 48, 128)).state_dict(), path)
    expected = (r"15 of another shape \(layer4\.0\.conv1\.weight: file \(128, 192, 3, 3\), model \(96, 192, 3, 3\), "
                r"layer4\.0\.bn1\.weight: file \(128,\), model \(96,\)")
    with pytest.raises(ConfigError, match=expected):
        create_model("unet:test_resnet", pretrained_file=path, **UNET)


def test_weights_with_the_classifier_or_without_both_load(tmp_path) -> None:
    source = seeded_test_resnet()
    full, headless = tmp_path / "full.pth", tmp_path / "headless.pth"
    torch.save(source.state_dict(), full)
    torch.save({k: v for k, v in source.state_dict().items() if not k.startswith("fc.")}, headless)
    for path in (full, headless):
        model = create_model("bottleneck:test_resnet", pretrained_file=path, **UNET)
        assert torch.equal(model.encoder.features.layer4[0].conv1.weight, source.layer4[0].conv1.weight)


def test_checkpoint_state_of_another_model_is_refused_naming_the_keys() -> None:
    model = create_model("unet:test_resnet", **UNET)
    other = create_model("unet:test_resnet", image_size=64, decoder_width=8).state_dict()
    with pytest.raises(CheckpointError, match=r"run/best\.pt: the weights do not fit .*of another shape \(decoder\."):
        load_model_state(model, other, "run/best.pt")
    renamed = {f"module.{key}": value for key, value in model.state_dict().items()}
    with pytest.raises(CheckpointError, match=r"\d+ missing \(encoder\..*\d+ unexpected \(module\.encoder\."):
        load_model_state(model, renamed, "run/best.pt")


# --- no environment changed on import ----------------------------------------------------------------------


@pytest.mark.slow
def test_importing_the_models_leaves_the_environment_alone() -> None:
    environment = {key: value for key, value in os.environ.items() if key != "HF_HUB_OFFLINE"}
    code = "import os, vision_bench.models; print(os.environ.get('HF_HUB_OFFLINE'))"
    result = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "None"
