"""Training: a YAML `TrainConfig` -> checkpoints and logs in a run directory, resumable, data-parallel.

    from vision_bench.train import TrainConfig, train, load_checkpoint
    result = train(TrainConfig.from_yaml("configs/train_smoke.yaml"), "runs/smoke")
    model, config, state = load_checkpoint(result.best_checkpoint)
"""

from vision_bench.train.checkpoint import CheckpointError, LoadedCheckpoint, load_checkpoint
from vision_bench.train.config import TrainConfig
from vision_bench.train.loop import TrainingDivergedError, TrainResult, train

__all__ = [
    "CheckpointError",
    "LoadedCheckpoint",
    "TrainConfig",
    "TrainResult",
    "TrainingDivergedError",
    "load_checkpoint",
    "train",
]
