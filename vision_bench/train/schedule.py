"""Learning-rate schedule: linear warm-up, then cosine decay to a floor.

The papers this project reproduces train with 200 warm-up steps followed by cosine decay; the
schedule is a pure function of the step so a resumed run continues on exactly the same curve.
"""

from __future__ import annotations

import math
from functools import partial

from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR


def warmup_cosine_factor(step: int, *, warmup_steps: int, total_steps: int, min_ratio: float = 0.0) -> float:
    """Multiplier of the base learning rate for optimizer step `step` (0-based).

    Steps 0 .. warmup_steps-1 ramp linearly from 1/warmup_steps up to 1; the remaining steps follow
    half a cosine from 1 down to `min_ratio`, reached at `total_steps` and held afterwards.
    """
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    decay_steps = max(1, total_steps - warmup_steps)
    progress = min(1.0, (step - warmup_steps) / decay_steps)
    return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))


def build_scheduler(
    optimizer: Optimizer, *, warmup_steps: int, total_steps: int, min_ratio: float = 0.0
) -> LambdaLR:
    """A `LambdaLR` stepping `warmup_cosine_factor`; call `.step()` once after every optimizer step."""
    factor = partial(
        warmup_cosine_factor, warmup_steps=warmup_steps, total_steps=total_steps, min_ratio=min_ratio
    )
    return LambdaLR(optimizer, factor)


def resume_schedule(scheduler: LambdaLR) -> None:
    """Set every parameter group's learning rate to the scheduler's curve at its restored step: the optimizer's
    saved state holds the rate of the run's old curve, which a run resumed to train longer no longer follows."""
    rates = [base * factor(scheduler.last_epoch) for base, factor in zip(scheduler.base_lrs, scheduler.lr_lambdas)]
    for group, rate in zip(scheduler.optimizer.param_groups, rates):
        group["lr"] = rate
    scheduler._last_lr = rates  # what get_last_lr() reports
