"""The training loop: `train(config, run_dir)` -> `TrainResult`, resumable and data-parallel.

One optimizer step per global batch. Every `training.validate_every` epochs (and after the last
step): validation on val_id / val_ood, RUN_DIR/checkpoints/last.pt, and best.pt when the selection
metric improved; last.pt also every `checkpoint.every_steps` steps. The data order is a pure
function of (seed, epoch) and every checkpoint carries the RNG states and the position inside the
epoch, so a resumed run repeats the uninterrupted one exactly on CPU.
"""

from __future__ import annotations

import logging
import random
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR
from tqdm.auto import tqdm

from vision_bench.data.batch import Batch
from vision_bench.errors import ConfigError, DataError, UserError
from vision_bench.io.atomic import atomic_write_text, output_folder
from vision_bench.train import components
from vision_bench.train.checkpoint import (
    capture_rng_state,
    load_model_state,
    restore_rng_state,
    resume_payload,
    save_checkpoint,
)
from vision_bench.train.config import SELECTION_METRICS, TrainConfig
from vision_bench.train.device import Runtime, autocast, prepare_model, resolve_runtime
from vision_bench.train.distributed import (
    DistributedContext,
    all_reduce_sum,
    barrier,
    context_from_environment,
    loss_module,
    start_process_group,
    stop_process_group,
)
from vision_bench.train.environment import (
    ENVIRONMENT_FILE,
    describe_environment,
    write_environment,
)
from vision_bench.train.logging import (
    LOG_FILE,
    METRICS_CSV,
    METRICS_FILE,
    Heartbeat,
    RunLogger,
    messages_above_progress_bar,
    read_records,
)
from vision_bench.train.schedule import build_scheduler, resume_schedule
from vision_bench.train.trackers import STATE_FILE, check_installed, tracker_folders
from vision_bench.train.validate import validate, validation_loaders

CHECKPOINT_DIR = "checkpoints"
CONFIG_FILE = "config.yaml"
SAMPLE_IMAGES = 4  # validation samples per split in each image sent to the trackers

logger = logging.getLogger(__name__)


class TrainingDivergedError(UserError):
    """The loss became NaN or infinite."""


@dataclass(frozen=True)
class TrainResult:
    """What a run produced: where it lives, its checkpoints, its last validation, its epoch log."""

    run_dir: Path
    best_checkpoint: Path | None
    last_checkpoint: Path
    final_metrics: dict[str, float]
    history: list[dict[str, Any]] = field(default_factory=list)
    step: int = 0
    finished: bool = True
    notes: tuple[str, ...] = ()

    def summary(self) -> str:
        """One line: the steps trained, where, the best checkpoint and the last validation."""
        metrics = ", ".join(f"{key} {value:.4g}" for key, value in sorted(self.final_metrics.items()))
        best = self.best_checkpoint if self.best_checkpoint is not None else "none"
        return f"trained {self.step} steps into {self.run_dir}; best checkpoint {best}; {metrics}"


def train(
    config: TrainConfig,
    run_dir: str | Path,
    resume: bool = False,
    progress: bool = True,
    stop_at_step: int | None = None,
) -> TrainResult:
    """Train `config` into `run_dir` (or continue the run there with `resume=True`).

    `stop_at_step` ends this session after that global step as a preempted job would (last.pt is
    written); resuming later continues on the same schedule. Under torchrun every process calls
    this; rank 0 alone writes files and feeds the trackers.
    """
    check_installed(config.tracking.loggers)
    for name in (CHECKPOINT_DIR, *tracker_folders()):  # folders the run writes into later: a link is refused at once
        output_folder(run_dir, name, make=False)
    context = context_from_environment()
    if config.training.batch_size % context.world_size:
        raise ConfigError(
            f"training.batch_size {config.training.batch_size} does not split over {context.world_size} "
            "processes; use a multiple of the process count"
        )
    runtime = resolve_runtime(
        config.runtime.device,
        config.training.precision,
        config.runtime.channels_last,
        config.runtime.compile,
        context.local_rank,
    )
    context = start_process_group(context, runtime.device)
    try:
        return _Run(config, Path(run_dir), context, runtime, progress).execute(resume, stop_at_step)
    finally:
        stop_process_group(context)


class _Run:
    """The state of one training session (one process)."""

    def __init__(
        self, config: TrainConfig, run_dir: Path, context: DistributedContext, runtime: Runtime, progress: bool
    ) -> None:
        self.context, self.runtime, self.run_dir = context, runtime, run_dir
        self.show_progress = progress and context.is_main
        _seed_everything(config.seed)
        self.datasets, self.spec = components.build_datasets(config)
        self.config = components.resolve_config(config, self.spec, components.data_task_config(self.datasets["train"]))
        self.feed = components.DeviceFeed(self.spec, runtime)
        self.model = prepare_model(components.build_model(self.config, self.spec), runtime)
        self.trainable = bool(getattr(self.model, "trainable", True))
        self.trainable_parameters = [p for p in self.model.parameters() if p.requires_grad]
        training = self.config.training
        batch_per_rank = training.batch_size // context.world_size
        order, self.steps_per_epoch = components.training_order(
            self.datasets["train"], batch_per_rank=batch_per_rank, seed=self.config.seed, context=context,
            shuffle_buffer=self.config.dataset.shuffle_buffer, max_steps=training.max_steps,
        )
        # the loaders are built once per run; their workers (runtime.num_workers) live until it ends
        pin_memory = runtime.device.type == "cuda"
        self.train_loader = components.TrainLoader(
            self.datasets["train"], order, batch_size=batch_per_rank, num_workers=self.config.runtime.num_workers,
            seed=self.config.seed, pin_memory=pin_memory,
        )
        self.val_loaders = validation_loaders(
            {split: self.datasets[split] for split in self.config.dataset.val_splits}, context=context,
            batch_size=training.eval_batch_size, num_workers=self.config.runtime.num_workers, pin_memory=pin_memory,
        )
        # max_steps, when set, replaces epochs as the length of the run
        self.total_steps = self._total_steps_of(self.config)
        self.optimizer = self._optimizer() if self.trainable else None
        self.scheduler = None if self.optimizer is None else build_scheduler(
            self.optimizer,
            warmup_steps=self.config.schedule.warmup_steps,
            total_steps=self.total_steps,
            min_ratio=self.config.schedule.min_lr_ratio,
        )
        self.scaler = torch.amp.GradScaler("cuda", enabled=runtime.uses_grad_scaler)
        self.step = 0
        self.epoch_loss = torch.zeros(2, device=runtime.device)
        self.saved_step = -1
        self.best: dict[str, Any] = {"value": None, "step": None}
        self.validated_step = -1
        self.last_metrics: dict[str, float] = {}
        self.history: list[dict[str, Any]] = []
        self._logged_step, self._logged_time = 0, time.perf_counter()  # throughput since the last step log
        self._data_wait = 0.0  # seconds spent waiting for batches since the last step log
        self._session_start = time.perf_counter()  # for the elapsed time of the epoch lines

    def _optimizer(self) -> torch.optim.AdamW:
        settings = self.config.optimizer
        return torch.optim.AdamW(
            self.trainable_parameters,
            lr=settings.lr,
            betas=settings.betas,
            eps=settings.eps,
            weight_decay=settings.weight_decay,
        )

    # ----------------------------------------------------------------- paths and files

    @property
    def last_path(self) -> Path:
        return self.run_dir / CHECKPOINT_DIR / "last.pt"

    @property
    def best_path(self) -> Path:
        return self.run_dir / CHECKPOINT_DIR / "best.pt"

    def _prepare_run_dir(self, resume: bool) -> dict[str, Any] | None:
        """Check the run directory against `resume`; return the checkpoint to resume from."""
        if not resume:
            if self.last_path.exists():
                raise ConfigError(
                    f"{self.run_dir} already holds a training run; pass --resume to continue it or choose another --out"
                )
            for dataset in self.datasets.values():  # a data error shows up here, before the first write
                components.check_first_sample(dataset)
            if self.context.is_main:
                output_folder(self.run_dir)
                atomic_write_text(self.run_dir / CONFIG_FILE, self.config.to_yaml())
            return None
        payload, extension = resume_payload(self.last_path, self.config, self._total_steps_of)
        if self.context.is_main:
            atomic_write_text(self.run_dir / CONFIG_FILE, self.config.to_yaml())  # the config this session runs
            if extension is not None:
                logger.warning("%s: training longer (%s changed: %d -> %d steps); the learning-rate schedule is "
                               "recomputed over the new length from step %d on", self.run_dir,
                               ", ".join(extension.keys), extension.before, extension.after, int(payload["step"]))
        return payload

    def _total_steps_of(self, config: TrainConfig) -> int:
        """The steps `config` trains this run for: max_steps, else its epochs of this run's steps per epoch."""
        if not self.trainable:
            return 0
        return config.training.max_steps or config.training.epochs * self.steps_per_epoch

    # ----------------------------------------------------------------- checkpoint state

    def _payload(self) -> dict[str, Any]:
        return {
            "config": self.config.to_dict(),
            "config_hash": self.config.experiment_hash(),
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict() if self.optimizer is not None else {},
            "scheduler": self.scheduler.state_dict() if self.scheduler is not None else {},
            "scaler": self.scaler.state_dict(),
            "rng": capture_rng_state(),
            "epoch": self.step // self.steps_per_epoch,
            "step": self.step,
            "epoch_loss": self.epoch_loss.cpu(),
            "best": dict(self.best),
            "validated_step": self.validated_step,
            "metrics": dict(self.last_metrics),
            "versions": components.versions(),
        }

    def _restore(self, payload: dict[str, Any]) -> None:
        load_model_state(self.model, payload["model"], self.last_path)
        if self.optimizer is not None and self.scheduler is not None:
            self.optimizer.load_state_dict(payload["optimizer"])
            self.scheduler.load_state_dict(payload["scheduler"])
            resume_schedule(self.scheduler)
            self.scaler.load_state_dict(payload["scaler"])
        restore_rng_state(payload["rng"])
        self.step = int(payload["step"])
        self.epoch_loss = payload["epoch_loss"].to(self.runtime.device)
        self.best = dict(payload.get("best", self.best))
        self.validated_step = int(payload.get("validated_step", -1))
        self.last_metrics = dict(payload.get("metrics", {}))
        self.history = [
            r for r in read_records(self.run_dir / METRICS_FILE) if r.get("kind") == "epoch" and r["step"] <= self.step
        ]

    def _save(self, *, best: bool) -> None:
        self.saved_step = self.step
        if not self.context.is_main:
            return
        payload = self._payload()
        output_folder(self.run_dir, CHECKPOINT_DIR)
        save_checkpoint(self.last_path, payload)
        if best:
            save_checkpoint(self.best_path, payload)

    # ----------------------------------------------------------------- the loop

    def execute(self, resume: bool, stop_at_step: int | None) -> TrainResult:
        fresh_dir = not resume and (not self.run_dir.exists() or not any(self.run_dir.iterdir()))  # new or empty
        payload = self._prepare_run_dir(resume)
        if payload is not None:
            self._restore(payload)
        try:
            return self._execute(payload, resume, stop_at_step)
        except (UserError, OSError):
            if fresh_dir and self.context.is_main and not self.last_path.exists():
                self._remove_failed_start()
            raise

    def _remove_failed_start(self) -> None:
        """A new run that failed before saving a checkpoint (a data error, a full disk) leaves no folder:
        only the files it wrote go, and each folder only if nothing else is left in it (a failure after
        the first checkpoint keeps its logs, for --resume)."""
        for name in (CONFIG_FILE, METRICS_FILE, METRICS_CSV, LOG_FILE, ENVIRONMENT_FILE, STATE_FILE):
            path = self.run_dir / name
            if path.is_file() and not path.is_symlink():
                path.unlink()
        for name in tracker_folders():
            shutil.rmtree(self.run_dir / name, ignore_errors=True)
        for folder in (self.run_dir / CHECKPOINT_DIR, self.run_dir):
            try:
                folder.rmdir()
            except OSError:
                pass

    def _execute(self, payload: dict[str, Any] | None, resume: bool, stop_at_step: int | None) -> TrainResult:
        resume_step = self.step if resume else None
        run_log = RunLogger(self.run_dir, enabled=self.context.is_main, resume_step=resume_step, config=self.config)
        self._session_start = time.perf_counter()
        try:
            if self.context.is_main:
                write_environment(self.run_dir, describe_environment(
                    device=self.runtime.device, world_size=self.context.world_size, seed=self.config.seed,
                    resumed_from_step=resume_step,
                ))
            if self.runtime.notes:
                run_log.notes(self.step, self.runtime.notes)
            if not self.trainable and payload is None:
                self._fit_baseline()
            with messages_above_progress_bar(self.show_progress):
                finished = self._train(run_log, stop_at_step)
            if finished and self.validated_step != self.step:
                self._validate_and_save(run_log)
            barrier(self.context)
            result = TrainResult(
                run_dir=self.run_dir,
                best_checkpoint=self.best_path if self.best_path.exists() else None,
                last_checkpoint=self.last_path,
                final_metrics=dict(self.last_metrics),
                history=list(self.history),
                step=self.step,
                finished=finished,
                notes=self.runtime.notes,
            )
            run_log.write_log_line(result.summary())  # the caller prints it; train.log keeps it
        except BaseException:
            try:
                run_log.close(failed=True)
            except Exception as error:  # the session's own error is the one to show
                logger.warning("closing the run's log after an error failed too: %s", error)
            raise
        run_log.close()
        return result

    def _fit_baseline(self) -> None:
        """Baselines without parameters to train may still fit statistics (e.g. the mean target)."""
        fit = getattr(self.model, "fit", None)
        if callable(fit):
            loader = components.eval_loader(
                self.datasets["train"], batch_size=self.config.training.batch_size,
                num_workers=self.config.runtime.num_workers,
            )
            fit(self.feed(batch) for batch in loader)

    def _train(self, logger: RunLogger, stop_at_step: int | None) -> bool:
        """Optimise until the last step (True) or until `stop_at_step` (False)."""
        step_module: Callable[[Batch], torch.Tensor] = loss_module(
            self.model, self.context, self.runtime.device, self.config.runtime.sync_batchnorm
        )
        if self.runtime.compile:
            step_module = torch.compile(step_module)
        self._logged_step, self._logged_time, self._data_wait = self.step, time.perf_counter(), 0.0
        bar = tqdm(total=self.total_steps, initial=self.step, unit="step", disable=not self.show_progress,
                   desc=f"train {self.config.model.name} seed {self.config.seed}")  # which run, under a bench's bar
        heartbeat = Heartbeat(enabled=not self.show_progress and self.context.is_main, total=self.total_steps,
                               name=f"{self.config.model.name} seed {self.config.seed}")
        try:
            while self.step < self.total_steps:
                epoch, start_batch = divmod(self.step, self.steps_per_epoch)
                step_before = self.step
                optimizer, scheduler = self.optimizer, self.scheduler
                assert optimizer is not None and scheduler is not None, "a model with steps to train has an optimizer"
                batches = iter(self.train_loader.epoch(epoch, start_batch))
                while (batch := self._next_batch(batches)) is not None:
                    lr = optimizer.param_groups[0]["lr"]
                    loss, grad_norm = self._optimizer_step(step_module, self.feed(batch), optimizer, scheduler)
                    self.step += 1
                    bar.update(1)
                    heartbeat.beat(self.step, loss)
                    if self.step % self.config.training.log_every == 0 or self.step == self.total_steps:
                        self._log_step(logger, bar, loss=loss, grad_norm=grad_norm, lr=lr, epoch=epoch)
                    self._after_step(logger)
                    if self.step >= self.total_steps:
                        break
                    if stop_at_step is not None and self.step >= stop_at_step:
                        if self.saved_step != self.step:
                            self._save(best=False)
                        return False
                if self.step == step_before:
                    raise DataError(
                        f"the training data gave no batch for epoch {epoch + 1} from batch {start_batch}; "
                        "it holds fewer samples than when the run was set up (re-made shards?)"
                    )
        finally:
            bar.close()
        return True

    def _next_batch(self, batches: Iterator[Any]) -> Any | None:
        """The next training batch (None at the epoch's end), adding the time spent waiting for it to the data wait
        that the next step record reports: a share near 0 means the model, not the data feed, sets the pace."""
        start = time.perf_counter()
        batch = next(batches, None)
        self._data_wait += time.perf_counter() - start
        return batch

    def _after_step(self, logger: RunLogger) -> None:
        """Epoch bookkeeping: log the epoch, validate on schedule, write checkpoints when due."""
        last_step = self.step == self.total_steps
        if self.step % self.steps_per_epoch == 0 or last_step:
            epoch = -(-self.step // self.steps_per_epoch)
            if last_step or epoch % self.config.training.validate_every == 0:
                self._validate_and_save(logger)
                return
            self._log_epoch(logger, {})
        every = self.config.checkpoint.every_steps
        if every is not None and self.step % every == 0:
            self._save(best=False)

    def _optimizer_step(
        self, step_module: Callable[[Batch], torch.Tensor], batch: Batch, optimizer: torch.optim.Optimizer,
        scheduler: LambdaLR,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        self.model.train()
        self.model.begin_step(self.step, self.total_steps)
        with autocast(self.runtime):
            loss = step_module(batch)
        optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(optimizer)
        clip = self.config.training.grad_clip
        grad_norm = nn.utils.clip_grad_norm_(self.trainable_parameters, clip if clip is not None else float("inf"))
        self.scaler.step(optimizer)
        self.scaler.update()
        scheduler.step()
        loss = loss.detach().float()
        self.epoch_loss[0] += loss
        self.epoch_loss[1] += 1
        return loss, grad_norm.detach()

    def _log_step(
        self, run_log: RunLogger, bar: Any, *, loss: torch.Tensor, grad_norm: torch.Tensor, lr: float, epoch: int
    ) -> None:
        mean_loss = all_reduce_sum(loss.clone(), self.context).item() / self.context.world_size
        now = time.perf_counter()
        images = (self.step - self._logged_step) * self.config.training.batch_size
        elapsed = max(now - self._logged_time, 1e-9)
        images_per_s, data_wait_share = images / elapsed, min(self._data_wait / elapsed, 1.0)
        self._logged_step, self._logged_time, self._data_wait = self.step, now, 0.0
        if not np.isfinite(mean_loss):
            raise TrainingDivergedError(
                f"the training loss became {mean_loss} at step {self.step}; "
                "lower optimizer.lr or set training.grad_clip"
            )
        run_log.log({"kind": "step", "step": self.step, "epoch": epoch + 1, "loss": mean_loss, "lr": lr,
                     "grad_norm": float(grad_norm), "images_per_s": images_per_s,
                     "data_wait_share": data_wait_share})
        bar.set_postfix(loss=f"{mean_loss:.4g}", lr=f"{lr:.3g}")

    def _log_epoch(self, run_log: RunLogger, metrics: dict[str, float]) -> dict[str, Any]:
        """Log the epoch (its mean training loss and any validation metrics) and start the next one."""
        totals = all_reduce_sum(self.epoch_loss.clone(), self.context)
        train_loss = {"train_loss": float(totals[0] / totals[1])} if totals[1] > 0 else {}  # none for baselines
        epoch = -(-self.step // self.steps_per_epoch)
        record = {"kind": "epoch", "step": self.step, "epoch": epoch, **train_loss, **metrics}
        self.epoch_loss.zero_()
        if metrics:
            record["best"] = self._update_best(metrics)
            self.last_metrics = {**train_loss, **metrics}
        self.history.append(record)
        run_log.log(record)
        if self.context.is_main:
            logger.info(self._epoch_line(record))
        return record

    def _epoch_line(self, record: dict[str, Any]) -> str:
        """The console's and train.log's line for an epoch record, e.g.
        'epoch 2/3, step 8/12: train_loss 0.01, val_id/mse 0.02 (best); elapsed 4.1 s'."""
        if self.total_steps:
            epochs = -(-self.total_steps // self.steps_per_epoch)
            where = f"epoch {record['epoch']}/{epochs}, step {record['step']}/{self.total_steps}"
        else:
            where = "validation"  # a baseline: no steps, one validation
        values = ", ".join(
            f"{key} {value:.4g}" for key, value in record.items()
            if key not in ("kind", "step", "epoch", "best") and isinstance(value, float)
        )
        best = " (best)" if record.get("best") else ""
        return f"{where}: {values or 'no metrics'}{best}; elapsed {time.perf_counter() - self._session_start:.1f} s"

    def _validate_and_save(self, run_log: RunLogger) -> None:
        """Validate, log the epoch and its sample images, refresh last.pt and (when the selection metric
        improved) best.pt."""
        metrics = validate(
            self.model,
            self.val_loaders,
            feed=self.feed,
            spec=self.spec,
            context=self.context,
            runtime=self.runtime,
        )
        record = self._log_epoch(run_log, metrics)
        self._log_samples(run_log)
        self.validated_step = self.step
        self._save(best=bool(record.get("best")))
        self._logged_step, self._logged_time, self._data_wait = self.step, time.perf_counter(), 0.0

    def _log_samples(self, run_log: RunLogger) -> None:
        """The trackers' images of each validation split's first samples: input | target | prediction."""
        if not run_log.wants_images:
            return
        was_training = self.model.training
        self.model.eval()
        try:
            for split in self.config.dataset.val_splits:
                first = components.first_samples(self.datasets[split], SAMPLE_IMAGES)
                if first is None:
                    continue
                batch = self.feed(first)
                with torch.no_grad(), autocast(self.runtime):
                    prediction = self.model.predict(batch).float()
                run_log.log_samples(f"samples/{split}", batch["input"], batch["target"], prediction, self.step)
        finally:
            self.model.train(was_training)

    def _update_best(self, metrics: dict[str, float]) -> bool:
        """Is this validation the best so far on `checkpoint.select_on` / `checkpoint.metric`?"""
        selection = self.config.checkpoint
        key = f"{selection.select_on}/{selection.metric}"
        value = metrics.get(key)
        if value is None and self.trainable:
            if not any(name.startswith(f"{selection.select_on}/") for name in metrics):  # an empty split
                other = "val_id" if selection.select_on == "val_ood" else "val_ood"
                raise ConfigError(
                    f"checkpoint.select_on is {selection.select_on} but that validation split holds no samples, so "
                    f"no checkpoint can be selected on it; select on {other} (--select-on {other}, or "
                    f"checkpoint.select_on: {other})"
                )
            raise ConfigError(
                f"checkpoint.metric {selection.metric!r} is not measured on this data ({key} missing: grid "
                "accuracy needs grids); select on loss or mse"
            )
        if value is None or not np.isfinite(value):  # a baseline without a loss: its one validation
            return self.best["step"] is None
        previous = self.best["value"]
        higher = SELECTION_METRICS[selection.metric] == "higher"
        if previous is None or (value > previous if higher else value < previous):
            self.best = {"value": value, "step": self.step, "metric": key}
            return True
        return False


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
