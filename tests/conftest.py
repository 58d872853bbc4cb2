"""Shared test set-up: offline timm / Hugging Face / LPIPS, an empty weights folder and torch cache
(so a developer's own files never change a result), and the optional shared data."""

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# The weights folder as the user has it (README's test command fills it with `vision-bench weights
# get lpips`): only the tests that check LPIPS against its published values read it. Remembered in a
# variable of its own, because the pytest-xdist workers inherit the isolated VISION_BENCH_WEIGHTS below.
_USER_WEIGHTS = os.environ.setdefault(
    "VISION_BENCH_TESTS_USER_WEIGHTS", os.environ.get("VISION_BENCH_WEIGHTS") or "~/.cache/vision-bench/weights")
USER_WEIGHTS_DIR = Path(_USER_WEIGHTS).expanduser()
_ISOLATED = tempfile.mkdtemp(prefix="vision-bench-tests-")
os.environ["VISION_BENCH_WEIGHTS"] = os.path.join(_ISOLATED, "weights")
os.environ["TORCH_HOME"] = os.path.join(_ISOLATED, "torch")
os.environ["VISION_BENCH_OFFLINE"] = "1"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# One torch thread per test process: tiny models gain nothing from more, and on a busy
# machine extra threads stall each other.
os.environ.setdefault("OMP_NUM_THREADS", "1")

ARC_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "arc-agi" / "training"


@pytest.fixture(scope="session")
def arc_dir() -> Path:
    """The 400 ARC training tasks next to the repository; tests using it skip when it is absent."""
    if not ARC_DIR.is_dir():
        pytest.skip("ARC tasks not found at ../shared/data/arc-agi/training")
    return ARC_DIR


@pytest.fixture(scope="session")
def user_lpips_weights() -> Path:
    """The user's weights folder holding LPIPS-alex and LPIPS-vgg (`vision-bench weights get lpips
    --net all`); tests using it skip when they are absent."""
    lpips_dir = USER_WEIGHTS_DIR / "lpips"
    if not all((lpips_dir / f"{net}.safetensors").is_file() for net in ("alex", "vgg")):
        pytest.skip(f"LPIPS weights not found in {lpips_dir}; run `vision-bench weights get lpips --net all`")
    return USER_WEIGHTS_DIR


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """One torch thread during a test: the tiny test models gain nothing from a second one, and the
    suite shares the machine (modules that train opt in with `pytest.mark.usefixtures`)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def random_lpips_weights(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A random AlexNet backbone stored as LPIPS-alex's (plumbing only: these are not LPIPS's weights)."""
    import torch

    from vision_bench.weights import lpips as lpips_weights

    monkeypatch.setenv("VISION_BENCH_WEIGHTS", str(tmp_path / "weights"))
    generator = torch.Generator().manual_seed(0)
    state = {k: torch.randn(shape, generator=generator) * 0.05
             for k, shape in lpips_weights.expected_backbone("alex").items()}
    lpips_weights.save_backbone("alex", state, {"source": "random, for tests"})
    return tmp_path / "weights"
