"""`wandb`: a Weights & Biases run, online or offline (`tracking.wandb.mode`, else W&B's own: WANDB_MODE).

The run's config is the W&B run's `config`, the scalars and images are logged at their global step, and
W&B's files go to RUN_DIR/wandb (WANDB_DIR, when set, wins). The W&B run's id is kept in RUN_DIR/tracking.json,
so a resumed session continues the same W&B run (`resume="allow"`; the config is updated, a longer run's
`training.epochs` included). W&B ignores values logged at a step below one it has already seen, so after an
interrupted session the steps between its last checkpoint and its end keep their first values there.
"""

from __future__ import annotations

import os

import numpy as np

from vision_bench.errors import ConfigError
from vision_bench.train.trackers.base import TRACKERS, TrackedRun, TrackerSpec, store_id, stored_id

WANDB_DIR = "wandb"


class WandbTracker:
    """One session of a W&B run."""

    def __init__(self, run: TrackedRun) -> None:
        import wandb

        run_id = stored_id(run, "wandb")
        try:
            self.run = wandb.init(
                project=run.project, entity=run.wandb_entity, name=run.name, mode=run.wandb_mode,
                dir=os.environ.get("WANDB_DIR", str(run.folder)), config=run.config, id=run_id,
                resume="allow" if run_id is not None else None, allow_val_change=run_id is not None,
            )
        except wandb.Error as error:
            raise ConfigError(f"W&B could not start the run: {error}; log in with `wandb login`, or set "
                              "tracking.wandb.mode: offline (`wandb sync` uploads it later)") from None
        self.image = wandb.Image
        store_id(run, "wandb", self.run.id)

    def log_scalars(self, scalars: dict[str, float], step: int) -> None:
        self.run.log(dict(scalars), step=step)

    def log_image(self, tag: str, image: np.ndarray, step: int) -> None:
        self.run.log({tag: self.image(image)}, step=step)

    def close(self, failed: bool) -> None:
        self.run.finish(exit_code=1 if failed else 0)


TRACKERS.add(
    "wandb",
    TrackerSpec(start=WandbTracker, package="wandb", extra="wandb", folders=(WANDB_DIR,)),
    "Weights & Biases: the config, scalars and sample images in a W&B run (online or offline)",
)
