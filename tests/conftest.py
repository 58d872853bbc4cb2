"""Shared test set-up: offline timm / Hugging Face, and the optional shared ARC data."""

import os
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
