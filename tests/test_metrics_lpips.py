"""LPIPS as a metric: the scorer's fast path against the official module's forward, the unavailable
path, and the weight-file report behind `vision-bench weights`. (Weights themselves: test_lpips_weights.py;
published values: test_lpips_values.py.)"""

import math
import warnings
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from vision_bench.cli import main
from vision_bench.metrics import LpipsScorer, compute_metrics, load_lpips, lpips_status, summarize
from vision_bench.weights import weight_files


def official_module(net: str = "alex", seed: int = 0) -> torch.nn.Module:
    """The official lpips network, random backbone and linear layers (seeded): plumbing, not LPIPS."""
    import lpips

    torch.manual_seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchvision's notice about the legacy `pretrained` flag
        module = lpips.LPIPS(net=net, pretrained=False, pnet_rand=True, verbose=False).eval()
    for lin in module.lins:  # positive weights, as calibrated LPIPS has
        lin.model[1].weight.data.uniform_(0.0, 1.0)
    return module


@pytest.fixture(scope="module")
def random_lpips() -> torch.nn.Module:
    return official_module()


def images(seed: int, count: int = 3, side: int = 64) -> torch.Tensor:
    return torch.rand(count, 3, side, side, generator=torch.Generator().manual_seed(seed))


def reference(module: torch.nn.Module, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return module(pred * 2 - 1, target * 2 - 1).reshape(-1)


def test_fast_path_equals_the_official_forward_for_the_evaluation_workload(random_lpips: torch.nn.Module) -> None:
    """Two models, copy_input, mean_target (one image for all) and the ground truth, against one target."""
    target, inputs = images(1, 6), images(2, 6)
    predictors = {
        "model_a": images(3, 6),
        "model_b": torch.cat([target[:2], images(4, 4)]),  # two exact answers
        "copy_input": inputs,
        "mean_target": target.mean(0, keepdim=True).expand(6, -1, -1, -1).contiguous(),
        "ground_truth": target.clone(),
    }
    scorer = LpipsScorer(random_lpips)
    for name, pred in predictors.items():
        fast = scorer(pred, target)
        torch.testing.assert_close(fast, reference(random_lpips, pred, target), atol=1e-6, rtol=0, msg=name)
    assert torch.equal(scorer(target.clone(), target), torch.zeros(6))


def test_each_target_batch_passes_through_the_network_once(random_lpips: torch.nn.Module) -> None:
    target = images(5, 4)
    calls: list[int] = []
    hook = random_lpips.net.register_forward_hook(lambda module, args, out: calls.append(args[0].shape[0]))
    try:
        scorer = LpipsScorer(random_lpips)
        scorer(images(6, 4), target)            # target 4 + prediction 4
        scorer(images(7, 4), target)            # prediction 4 only
        scorer(target.clone(), target)          # identical: no forward
        scorer(images(8, 1).expand(4, -1, -1, -1), target)  # one image for all: 1
        target.add_(0)                          # modified in place: features are recomputed
        scorer(images(9, 4), target)
    finally:
        hook.remove()
    assert calls == [4, 4, 4, 1, 4, 4]


def test_other_modules_take_the_reference_path() -> None:
    class HalfL1(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.anchor = torch.nn.Parameter(torch.zeros(1))

        def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return (a - b).abs().mean(dim=(1, 2, 3)) / 2

    pred, target = images(10), images(11)
    values = compute_metrics(pred, target, names=["lpips"], lpips=HalfL1())
    torch.testing.assert_close(values["lpips"], (pred - target).abs().mean(dim=(1, 2, 3)))  # [-1, 1] doubles L1
    assert values.status["lpips"] == "ok (given module HalfL1)"


def test_identical_images_have_zero_distance(random_lpips: torch.nn.Module) -> None:
    values = compute_metrics(images(2), images(2), names=["lpips"], lpips=random_lpips)
    assert torch.equal(values["lpips"], torch.zeros(3))


def test_images_too_small_for_the_backbone_give_nan_with_a_reason(random_lpips: torch.nn.Module) -> None:
    small = torch.rand(2, 3, 16, 16)
    values = compute_metrics(small, small, names=["lpips"], lpips=random_lpips)
    assert values["lpips"].isnan().all()
    assert values.status["lpips"] == "unavailable: LPIPS-alex needs images of at least 31x31 pixels, got 16x16"


def test_missing_weights_make_lpips_unavailable_with_the_command_that_fixes_it() -> None:
    status = lpips_status("vgg")
    assert status.startswith("unavailable: LPIPS-vgg needs its ImageNet backbone")
    assert status.endswith("run `vision-bench weights get lpips --net vgg`")
    values = compute_metrics(images(0), images(1), names=["mse", "lpips"])
    assert values["lpips"].isnan().all() and values.status["lpips"] == lpips_status("alex")
    assert not values["mse"].isnan().any()
    assert math.isnan(summarize(values)["lpips"])
    assert load_lpips("alex").module is None


def test_weight_report_lists_lpips_local_files_and_hub_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    local = tmp_path / "weights"
    (local / "timm").mkdir(parents=True)
    (local / "timm" / "resnet18.safetensors").write_bytes(b"x" * 10)
    (local / "vit.pth").write_bytes(b"x")
    (local / "notes.txt").write_text("not weights")
    (local / "alexnet-owt-7be5be79.pth").write_bytes(b"x")
    hub = tmp_path / "hf"
    (hub / "models--timm--resnet18.a1_in1k" / "snapshots" / "abc").mkdir(parents=True)
    monkeypatch.setenv("VISION_BENCH_WEIGHTS", str(local))
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))

    records = {(r.kind, r.name): r for r in weight_files()}
    assert records[("lpips-backbone", "alex")].present
    assert "torchvision checkpoint" in records[("lpips-backbone", "alex")].detail
    assert not records[("lpips-backbone", "vgg")].present
    assert records[("lpips-backbone", "vgg")].detail == "run `vision-bench weights get lpips --net vgg`"
    squeeze = records[("lpips-backbone", "squeeze")].detail  # the package index has no squeeze backbone: say so
    assert "download.pytorch.org is reachable" in squeeze and f"squeezenet1_1-b8a52dc0.pth in {local}" in squeeze
    assert records[("lpips-linear", "alex")].present  # shipped inside the lpips package
    assert records[("local-folder", "weights folder")].path == local
    assert {name for kind, name in records if kind == "local"} == {
        "timm/resnet18.safetensors", "vit.pth", "alexnet-owt-7be5be79.pth"}
    assert records[("hf-model", "timm/resnet18.a1_in1k")].present


def test_weights_and_metrics_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "model.bin").write_bytes(b"x")
    assert main(["weights", "--folder", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "weights get lpips --net alex" in out and "model.bin" in out
    assert main(["metrics"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line.split()[1] for line in lines}
    assert rows["ssim"] == "higher" and rows["lpips"] == "lower" and rows["stubbornness"] == "lower"
    assert rows["paper_ppa"] == "higher" and rows["paper_obj_ppa"] == "higher"
    assert len(rows) == 29  # 17 (stubbornness in two forms), the seven C-ARC error classes, five SVIB factor accuracies
    assert rows["factor_accuracy"] == "higher"


@settings(max_examples=15, deadline=None)
@given(same=st.lists(st.booleans(), min_size=1, max_size=5), constant=st.booleans(), seed=st.integers(0, 100))
def test_fast_path_equals_the_reference_for_any_mix_of_identical_rows(same: list[bool], constant: bool,
                                                                       seed: int) -> None:
    module = _shared_module()
    count = len(same)
    target = images(seed, count, 32)
    pred = images(seed + 1, 1, 32).expand(count, -1, -1, -1).clone() if constant else images(seed + 1, count, 32)
    for row, identical in enumerate(same):
        if identical:
            pred[row] = target[row]
    torch.testing.assert_close(LpipsScorer(module)(pred, target), reference(module, pred, target), atol=1e-6, rtol=0)


_MODULES: list[torch.nn.Module] = []


def _shared_module() -> torch.nn.Module:
    if not _MODULES:
        _MODULES.append(official_module(seed=1))
    return _MODULES[0]


def test_fast_path_across_chunks_and_under_inference_mode(random_lpips: torch.nn.Module) -> None:
    """More rows than one chunk (features are computed chunk by chunk, the target is not kept), and
    inference tensors (which have no version counter, so they are never kept)."""
    from vision_bench.metrics import perceptual

    count = perceptual.CHUNK + 5
    target = images(20, count, 32)
    pred = images(21, count, 32)
    pred[3] = target[3]
    scorer = LpipsScorer(random_lpips)
    torch.testing.assert_close(scorer(pred, target), reference(random_lpips, pred, target), atol=1e-6, rtol=0)
    with torch.inference_mode():
        small_target, small_pred = images(22, 4), images(23, 4)
        first = scorer(small_pred, small_target)
        again = scorer(small_pred, small_target)
    torch.testing.assert_close(first, reference(random_lpips, small_pred, small_target), atol=1e-6, rtol=0)
    assert torch.equal(first, again)
    scorer.release()
    assert scorer._target is None
