"""LPIPS plumbing (with a randomly initialized module, never called LPIPS), the unavailable path,
and the weight-file report behind `vision-bench weights`."""

import math
import os
import warnings
from pathlib import Path

import pytest
import torch

from vision_bench.cli import main
from vision_bench.metrics import compute_metrics, load_lpips, lpips_status, summarize
from vision_bench.weights import LPIPS_BACKBONE_FILES, lpips_backbone_file, weight_files

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture
def empty_torch_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    return tmp_path / "hub" / "checkpoints"


@pytest.fixture(scope="module")
def random_backbone_lpips() -> torch.nn.Module:
    """The lpips network with random backbone and random linear layers: plumbing only, not LPIPS."""
    import lpips

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchvision's notice about the legacy `pretrained` flag
        return lpips.LPIPS(net="alex", pretrained=False, pnet_rand=True, verbose=False).eval()


def images(seed: int) -> torch.Tensor:
    return torch.rand(3, 3, 64, 64, generator=torch.Generator().manual_seed(seed))


def test_lpips_inputs_reach_the_network_in_minus_one_to_one(random_backbone_lpips: torch.nn.Module) -> None:
    pred, target = images(0), images(1)
    seen = []
    hook = random_backbone_lpips.register_forward_pre_hook(lambda module, args: seen.append(args))
    try:
        values = compute_metrics(pred, target, names=["lpips"], lpips=random_backbone_lpips)
    finally:
        hook.remove()
    (in0, in1), = seen
    torch.testing.assert_close(in0, pred * 2 - 1)
    torch.testing.assert_close(in1, target * 2 - 1)
    assert in0.min() >= -1 and in0.max() <= 1
    with torch.no_grad():
        direct = random_backbone_lpips(pred * 2 - 1, target * 2 - 1).reshape(-1)
    torch.testing.assert_close(values["lpips"], direct)
    assert values["lpips"].shape == (3,)
    assert values.status["lpips"].startswith("ok")


def test_identical_images_have_zero_distance(random_backbone_lpips: torch.nn.Module) -> None:
    values = compute_metrics(images(2), images(2), names=["lpips"], lpips=random_backbone_lpips)
    assert torch.allclose(values["lpips"], torch.zeros(3), atol=1e-6)


def test_images_too_small_for_the_backbone_give_nan_with_a_reason(random_backbone_lpips: torch.nn.Module) -> None:
    small = torch.rand(2, 3, 16, 16)
    values = compute_metrics(small, small, names=["lpips"], lpips=random_backbone_lpips)
    assert values["lpips"].isnan().all()
    assert values.status["lpips"] == "unavailable: LPIPS-alex needs images of at least 31x31 pixels, got 16x16"


def test_missing_backbone_makes_lpips_unavailable_without_building_it(
    empty_torch_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lpips

    def no_build(*args: object, **kwargs: object) -> None:
        raise AssertionError("LPIPS must not be built (and nothing downloaded) without its weights")

    monkeypatch.setattr(lpips, "LPIPS", no_build)
    status = lpips_status("alex")
    assert status.startswith("unavailable: ")
    assert "alexnet-owt-7be5be79.pth" in status and str(empty_torch_home) in status
    values = compute_metrics(images(0), images(1), names=["mse", "lpips"])
    assert values["lpips"].isnan().all() and values.status["lpips"] == status
    assert values.status["mse"] == "ok"
    assert math.isnan(summarize(values)["lpips"])
    assert "vgg16-397923af.pth" in lpips_status("vgg")


def test_damaged_backbone_file_is_reported_not_raised(empty_torch_home: Path) -> None:
    empty_torch_home.mkdir(parents=True)
    (empty_torch_home / LPIPS_BACKBONE_FILES["squeeze"]).write_bytes(b"not a checkpoint")
    assert lpips_status("squeeze") == "ok"
    load = load_lpips("squeeze")
    assert load.module is None
    assert load.status.startswith("unavailable: cannot read the LPIPS-squeeze weights")


def test_backbone_file_names_are_torchvisions() -> None:
    from torchvision.models import AlexNet_Weights, SqueezeNet1_1_Weights, VGG16_Weights

    urls = {"alex": AlexNet_Weights, "vgg": VGG16_Weights, "squeeze": SqueezeNet1_1_Weights}
    for net, weights in urls.items():
        assert weights.IMAGENET1K_V1.url.rsplit("/", 1)[1] == LPIPS_BACKBONE_FILES[net]
        assert lpips_backbone_file(net).name == LPIPS_BACKBONE_FILES[net]


def test_weight_report_lists_local_files_and_hub_models(
    tmp_path: Path, empty_torch_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = tmp_path / "weights"
    (local / "timm").mkdir(parents=True)
    (local / "timm" / "resnet18.safetensors").write_bytes(b"x" * 10)
    (local / "vit.pth").write_bytes(b"x")
    (local / "notes.txt").write_text("not weights")
    hub = tmp_path / "hf"
    (hub / "models--timm--resnet18.a1_in1k" / "snapshots" / "abc").mkdir(parents=True)
    monkeypatch.setenv("VISION_BENCH_WEIGHTS", str(local))
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    empty_torch_home.mkdir(parents=True)
    (empty_torch_home / LPIPS_BACKBONE_FILES["alex"]).write_bytes(b"x")

    records = {(r.kind, r.name): r for r in weight_files()}
    assert records[("lpips-backbone", "alex")].present
    assert not records[("lpips-backbone", "vgg")].present
    assert records[("lpips-linear", "alex")].present  # shipped inside the lpips package
    assert records[("local-folder", "weights folder")].path == local
    assert {name for kind, name in records if kind == "local"} == {"timm/resnet18.safetensors", "vit.pth"}
    assert records[("hf-model", "timm/resnet18.a1_in1k")].present


def test_weights_and_metrics_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "model.bin").write_bytes(b"x")
    assert main(["weights", "--folder", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "alexnet-owt-7be5be79.pth" in out and "model.bin" in out
    assert main(["metrics"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line.split()[1] for line in lines}
    assert rows["ssim"] == "higher" and rows["lpips"] == "lower" and rows["stubbornness"] == "lower"
    assert len(rows) == 14
