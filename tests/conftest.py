"""Shared test set-up: offline timm / Hugging Face, and the optional shared ARC data."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

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


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """One torch thread during a test: the tiny test models gain nothing from a second one, and the
    suite shares the machine (modules that train opt in with `pytest.mark.usefixtures`)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
