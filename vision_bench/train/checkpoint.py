"""Checkpoints: everything needed to continue a run bit for bit, written atomically.

A checkpoint holds the model, optimizer, scheduler and grad-scaler states, the RNG states of
Python, NumPy and torch, the position in training (epoch, step) and the run's config with its
experiment hash. It is saved to a temporary file in the same folder and moved into place with
`os.replace`, so a crash never leaves a half-written `last.pt` or `best.pt`. Only tensors and plain
Python values are stored, so loading uses `torch.load(weights_only=True)`.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple, cast

import numpy as np
import torch
from torch import nn

from vision_bench.errors import UserError
from vision_bench.io.atomic import atomic_output
from vision_bench.train.config import TrainConfig, differing_keys
from vision_bench.weights.torch_files import foreign_pickle_warnings_off, load_failure

if TYPE_CHECKING:
    from vision_bench.models.base import ImageToImageModel

STARTING_WEIGHT_OPTIONS = frozenset({"pretrained", "pretrained_file"})  # model options the trained weights replace

CHECKPOINT_FORMAT = "vision-bench-checkpoint"
CHECKPOINT_VERSION = 1
REQUIRED_KEYS = ("config", "config_hash", "model", "optimizer", "scheduler", "scaler", "rng", "epoch", "step")
# A weight of the timm-block decoder that vit: decoder: transformer was before it became SVIB's
# patch-transformer decoder, and of no model since: its checkpoints no longer load.
RETIRED_VIT_DECODER_KEY = "decoder.position"


class CheckpointError(UserError):
    """A checkpoint that cannot be read, or that does not belong to the run resuming from it."""


class LoadedCheckpoint(NamedTuple):
    """`model, config, state = load_checkpoint(path)`: a ready model, its config, the raw state."""

    model: ImageToImageModel
    config: TrainConfig
    state: dict[str, Any]


def capture_rng_state() -> dict[str, Any]:
    """The global RNG states of Python, NumPy, torch (CPU) and CUDA, as tensors and plain values."""
    version, python_state, gauss = random.getstate()
    numpy_state = np.random.get_state(legacy=True)
    assert isinstance(numpy_state, tuple)  # the global generator is MT19937, whose legacy state is a tuple
    kind, keys, position, has_gauss, cached = numpy_state
    state: dict[str, Any] = {
        "python": [version, list(python_state), gauss],
        "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), position, has_gauss, cached],
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng_state(state: dict[str, Any]) -> None:
    """Undo `capture_rng_state` (the CUDA part only when this machine has as many GPUs)."""
    version, python_state, gauss = state["python"]
    random.setstate((version, tuple(python_state), gauss))
    kind, keys, position, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), position, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    cuda_states = state.get("cuda")
    if cuda_states and torch.cuda.is_available() and len(cuda_states) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(cuda_states)


def save_checkpoint(path: Path, payload: dict[str, Any]) -> Path:
    """Write `payload` to `path` atomically (temporary file in the same folder, fsync, os.replace).

    A failed write (a full disk) raises the `OSError` the file system gave, naming `path`: torch's
    writer swallows it and reports a position mismatch instead, so the write itself is watched.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(path) as temporary, open(temporary, "wb") as handle:
        writer = _WatchedWriter(handle)
        try:
            torch.save({"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, **payload},
                       cast(BinaryIO, writer))  # torch calls write and flush alone
        except RuntimeError:
            if writer.error is None:
                raise
            raise writer.error from None
        handle.flush()
        os.fsync(handle.fileno())
    return path


class _WatchedWriter:
    """A binary file for `torch.save` that keeps the first `OSError` of a write, which torch's writer hides."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        self.error: OSError | None = None

    def write(self, data: bytes) -> int:
        try:
            return self.handle.write(data)
        except OSError as error:
            self.error = self.error or error
            raise

    def flush(self) -> None:
        self.handle.flush()


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """The stored payload, or `CheckpointError` saying why the file is not a usable checkpoint."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: checkpoint not found; check the path (runs keep them in RUN_DIR/checkpoints/)")
    try:
        with foreign_pickle_warnings_off():
            payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch.load raises many types for damaged files
        failure = load_failure(path, error)  # told from the file's bytes: torch's text advises weights_only=False
        if failure.refused:
            raise CheckpointError(f"{path}: {failure.reason}; pass a checkpoint written by `vision-bench train`") \
                from None
        raise CheckpointError(
            f"{path}: not a readable checkpoint: {failure.reason}; delete it and resume from best.pt or start a "
            "fresh run"
        ) from None
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(
            f"{path}: not a vision-bench training checkpoint; pass a file written by `vision-bench train`"
        )
    if payload.get("version") != CHECKPOINT_VERSION:
        raise CheckpointError(
            f"{path}: checkpoint format version {payload.get('version')} is not supported "
            f"(this vision-bench reads version {CHECKPOINT_VERSION})"
        )
    missing = [key for key in REQUIRED_KEYS if key not in payload]
    if missing:
        raise CheckpointError(f"{path}: checkpoint lacks {', '.join(missing)}; it is incomplete: start a fresh run")
    _refuse_renamed_model(payload, path)
    return payload


def _refuse_renamed_model(payload: dict[str, Any], path: Path) -> None:
    """A `CheckpointError` when the checkpoint's model name now names another model (svib:oracle, which was the
    cell-token model and is SVIB's Oracle now): its weights must not be read as the new model's."""
    from vision_bench.models.state_check import renamed_weights

    model = payload["config"].get("model") if isinstance(payload["config"], dict) else None
    name = model.get("name") if isinstance(model, dict) else None
    if isinstance(name, str) and isinstance(payload["model"], dict):
        note = renamed_weights(name, payload["model"].keys())
        if note:
            raise CheckpointError(f"{path}: {note}; retrain under the new name, or load the checkpoint with the "
                                  "vision-bench that wrote it")


def config_of(payload: dict[str, Any], path: str | Path) -> TrainConfig:
    """The run config stored in a checkpoint payload."""
    try:
        return TrainConfig.from_dict(payload["config"], source=f"{path} (stored config)")
    except UserError as error:
        raise CheckpointError(f"{path}: the stored config is not valid for this vision-bench: {error}") from None


EXTENDABLE = ("training.epochs", "training.max_steps")
"""The keys a resumed run may change, to train longer: everything else must equal the run's."""


class Extension(NamedTuple):
    """A resumed run made longer: the keys that changed and its length in steps before and after."""

    keys: list[str]
    before: int
    after: int


def resume_payload(path: Path, config: TrainConfig, total_steps: Callable[[TrainConfig], int]
                   ) -> tuple[dict[str, Any], Extension | None]:
    """The checkpoint a run resumes from, and its `Extension` when `config` trains it longer: refused when the
    experiment differs from the run's in anything but `EXTENDABLE` keys, or when those do not make it longer
    (`total_steps` counts a config's steps: max_steps, else epochs x the run's steps per epoch)."""
    if not path.exists():
        raise CheckpointError(f"{path}: nothing to resume; run without --resume to start this run")
    payload = read_checkpoint(path)
    if payload["config_hash"] == config.experiment_hash():
        return payload, None
    stored = config_of(payload, path)
    keys = differing_keys(stored.experiment(), config.experiment())
    other = [key for key in keys if key not in EXTENDABLE]
    if other or not keys:
        raise CheckpointError(
            f"cannot resume {path.parent.parent}: the config differs from the run's in "
            f"{', '.join(other or ['(unknown)'])}; restore those keys or start a new run with another --out "
            "(a resumed run may only train longer: raise training.epochs or training.max_steps)"
        )
    before, after = total_steps(stored), total_steps(config)
    if after <= before:
        raise CheckpointError(
            f"cannot resume {path.parent.parent}: with {', '.join(keys)} changed the run would train {after} steps, "
            f"not more than its {before}; restore those keys, or raise them so that it trains longer"
        )
    return payload, Extension(keys, before, after)


def load_model_state(model: nn.Module, state: dict[str, torch.Tensor], path: str | Path) -> None:
    """Load weights, refusing a key or shape mismatch with one line naming the first keys that differ."""
    from vision_bench.models.state_check import compare_state

    mismatch = compare_state(model.state_dict(), state)
    if mismatch and RETIRED_VIT_DECODER_KEY in state:
        raise CheckpointError(
            f"{path}: this checkpoint predates SVIB's patch-transformer decoder: its vit: decoder: transformer "
            "weights are for the old timm-block decoder, which vision-bench no longer builds; retrain the model, "
            "or load it with the vision-bench commit that trained it"
        )
    if mismatch:
        raise CheckpointError(
            f"{path}: the weights do not fit the model built from its config: {mismatch.describe()}; the "
            "checkpoint was written for another version of this model: load it with the vision-bench that wrote it, "
            "or retrain"
        )
    model.load_state_dict(state)


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu") -> LoadedCheckpoint:
    """Rebuild the trained model (in eval mode, on `device`) and its config from a checkpoint."""
    from vision_bench.train.components import build_model, resolve_spec

    payload = read_checkpoint(path)
    config = config_of(payload, path)
    model = build_model(_without_starting_weights(config), resolve_spec(config))
    load_model_state(model, payload["model"], path)
    return LoadedCheckpoint(model.to(device).eval(), config, payload)


def _without_starting_weights(config: TrainConfig) -> TrainConfig:
    """`config` without the options that name starting weights (`pretrained`, `pretrained_file`): the
    checkpoint overwrites them, so rebuilding a trained model needs neither the hub cache nor the file."""
    options = {key: value for key, value in config.model.options.items() if key not in STARTING_WEIGHT_OPTIONS}
    return config.replace(model=config.model.model_copy(update={"options": options}))
