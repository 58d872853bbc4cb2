"""LPIPS with the real weights: the LPIPS authors' published distances on their example images, and
`vision-bench score` equal to the official `lpips` package with the same weights loaded into it.

These tests read the user's weights folder (README's test command fills it with `vision-bench
weights get lpips --net all`) and skip when the weights are absent.
"""

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from render import RenderSpec, render
from vision_bench.cli import main
from vision_bench.data.images import load_image_tensor
from vision_bench.weights import lpips as lpips_weights

EXAMPLES = Path(__file__).parent / "data" / "lpips"


def official_lpips(net: str, weights: Path) -> torch.nn.Module:
    """The official package's module: its own linear layers (its own loader), our stored backbone."""
    import lpips

    state, _ = lpips_weights.find_backbone(net, weights)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = lpips.LPIPS(net=net, pnet_rand=True, verbose=False).eval()
    module.net.load_state_dict(lpips_weights.lpips_keys(module.net, state))
    return module


@pytest.fixture
def weights(user_lpips_weights: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VISION_BENCH_WEIGHTS", str(user_lpips_weights))
    return user_lpips_weights


def example(name: str) -> torch.Tensor:
    return load_image_tensor(EXAMPLES / f"{name}.png")[None]


def test_published_distances_of_the_lpips_example_images(weights: Path) -> None:
    """test_network.py of the LPIPS repository prints 'Distances: (0.722, 0.138)' for alex v0.1."""
    import lpips

    module = official_lpips("alex", weights)
    ref, p0, p1 = example("ex_ref"), example("ex_p0"), example("ex_p1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchvision's notice about the legacy `pretrained` flag
        spatial = lpips.LPIPS(net="alex", spatial=True, pnet_rand=True, verbose=False).eval()
    spatial.load_state_dict(module.state_dict())
    with torch.no_grad():
        published = [float(spatial(ref * 2 - 1, p * 2 - 1).mean()) for p in (p0, p1)]
    assert [round(d, 3) for d in published] == [0.722, 0.138]


def rendered_pairs(tmp_path: Path) -> tuple[Path, Path]:
    """Grid renders (a prediction folder and a target folder) beside the LPIPS example images."""
    rng = np.random.default_rng(0)
    pred_dir, target_dir = tmp_path / "pred", tmp_path / "target"
    pred_dir.mkdir()
    target_dir.mkdir()
    spec = RenderSpec(size=(64, 64))
    for index in range(4):
        target = rng.integers(0, 10, size=(8, 8)).astype(np.uint8)
        pred = target.copy()
        pred[rng.integers(0, 8, 3), rng.integers(0, 8, 3)] = rng.integers(0, 10, 3)
        save_png(render(pred, spec), pred_dir / f"{index:08d}_pred.png")
        save_png(render(target, spec), target_dir / f"{index:08d}_target.png")
    for name in ("ex_p0", "ex_p1"):
        (pred_dir / f"{name}_pred.png").write_bytes((EXAMPLES / f"{name}.png").read_bytes())
        (target_dir / f"{name}_target.png").write_bytes((EXAMPLES / "ex_ref.png").read_bytes())
    return pred_dir, target_dir


def save_png(image: np.ndarray, path: Path) -> None:
    from PIL import Image

    Image.fromarray(image).save(path)


@pytest.mark.parametrize("net", ["alex", pytest.param("vgg", marks=pytest.mark.slow)])  # VGG16: seconds
def test_score_equals_the_official_package(tmp_path: Path, weights: Path, net: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    pred_dir, target_dir = rendered_pairs(tmp_path)
    assert main(["score", str(pred_dir), str(target_dir), "--metrics", "lpips", "--lpips-net", net,
                 "--json", "--offline", "--device", "cpu"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert len(result["pairs"]) == 6 and result["status"] == {}
    module = official_lpips(net, weights)
    for row in result["pairs"]:
        pred, target = load_image_tensor(row["pred"])[None], load_image_tensor(row["target"])[None]
        with torch.no_grad():
            expected = float(module(pred * 2 - 1, target * 2 - 1))  # official argument order
        assert abs(row["lpips"] - expected) <= 1e-6, row["key"]
    by_key = {row["key"]: row["lpips"] for row in result["pairs"]}
    if net == "alex":
        assert round(by_key["ex_p0"], 3) == 0.722 and round(by_key["ex_p1"], 3) == 0.138
