"""Data-parallel training across processes (torchrun): process group, sampler and reductions.

`torchrun --nproc_per_node N -m vision_bench train CONFIG` sets RANK / WORLD_SIZE / LOCAL_RANK;
every process then trains on 1/N of each global batch (gloo on CPU, NCCL on GPU) and rank 0 alone
logs and writes checkpoints. The sampler reproduces the order of a single process: the global
batch k of an epoch holds the same samples whatever the number of processes.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import Dataset, DistributedSampler

from vision_bench.data.batch import Batch
from vision_bench.models.base import ImageToImageModel

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DistributedContext:
    """This process's place in the job; `world_size == 1` means plain single-process training."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    owns_process_group: bool = False

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


def context_from_environment() -> DistributedContext:
    """The rank layout torchrun exported, or a single process when it did not."""
    if dist.is_available() and dist.is_initialized():
        return DistributedContext(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", 0)))
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    if world_size <= 1:
        return DistributedContext()
    return DistributedContext(int(os.environ["RANK"]), world_size, int(os.environ.get("LOCAL_RANK", 0)))


def start_process_group(context: DistributedContext, device: torch.device) -> DistributedContext:
    """Join the job's process group (NCCL for CUDA devices, gloo otherwise) unless already joined."""
    if not context.enabled or dist.is_initialized():
        return context
    if device.type == "cuda":
        torch.cuda.set_device(device)
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(backend=backend, rank=context.rank, world_size=context.world_size)
    return DistributedContext(context.rank, context.world_size, context.local_rank, owns_process_group=True)


def stop_process_group(context: DistributedContext) -> None:
    """Leave the process group this run created (one created by the caller stays up)."""
    if context.owns_process_group and dist.is_initialized():
        dist.destroy_process_group()


def barrier(context: DistributedContext) -> None:
    if context.enabled:
        dist.barrier()


def all_reduce_sum(values: torch.Tensor, context: DistributedContext) -> torch.Tensor:
    """Sum `values` over every process (in place); a no-op for a single process."""
    if context.enabled:
        dist.all_reduce(values, op=dist.ReduceOp.SUM)
    return values


class _LossModule(nn.Module):
    """Routes `forward(batch)` to `model.training_loss(batch)`, so DistributedDataParallel syncs it."""

    def __init__(self, model: ImageToImageModel) -> None:
        super().__init__()
        self.model = model

    def forward(self, batch: Batch) -> torch.Tensor:
        return self.model.training_loss(batch)


def loss_module(
    model: ImageToImageModel, context: DistributedContext, device: torch.device, sync_batchnorm: bool
) -> nn.Module:
    """`module(batch) -> loss`; wrapped in DistributedDataParallel when the job has several processes.

    On CUDA, batch norm layers become SyncBatchNorm (statistics over the global batch, as one
    process would compute them) unless `sync_batchnorm` is off; gloo on CPU cannot sync them, and
    rank 0 logs one warning that the run then differs from a single process.
    """
    module: nn.Module = _LossModule(model)
    if not context.enabled:
        return module
    caveat = batchnorm_caveat(model, device, sync_batchnorm, context.world_size)
    if caveat is not None and context.is_main:
        logger.warning(caveat)
    if device.type == "cuda" and sync_batchnorm:
        nn.SyncBatchNorm.convert_sync_batchnorm(model)
    # a model that trains in phases leaves some parameters without gradients in each phase
    return DistributedDataParallel(module, device_ids=[device] if device.type == "cuda" else None,
                                   find_unused_parameters=model.trains_in_phases)


def batchnorm_caveat(model: nn.Module, device: torch.device, sync_batchnorm: bool, world_size: int) -> str | None:
    """Why a data-parallel run of `model` will not match one process, or None when it will.

    Batch norm normalises with the statistics of the batch it sees: unsynchronised, each process
    sees only its share of the global batch, so losses and weights drift from a single process.
    """
    if world_size <= 1 or not any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules()):
        return None
    if device.type == "cuda" and sync_batchnorm:
        return None
    why = "runtime.sync_batchnorm is off" if device.type == "cuda" else f"they cannot be synchronised on {device.type}"
    return (
        f"this model has BatchNorm layers and {why}: each of the {world_size} processes normalises with the "
        "statistics of its own share of the batch, so results differ from one process; for matching results "
        "train on CUDA with runtime.sync_batchnorm: true, use a model without BatchNorm (vit:..., svib:...), "
        "or run one process"
    )


class EpochSampler(DistributedSampler):
    """A DistributedSampler over full batches whose epoch may start part-way (mid-epoch resume).

    The order is a pure function of (seed, epoch): a seeded permutation of the dataset, cut into
    global batches of `batch_per_rank * world_size` samples; rank r takes every world_size-th sample,
    so global batch k holds the same samples for any world size. Incomplete batches are dropped.
    """

    def __init__(
        self, dataset: Dataset, *, batch_per_rank: int, seed: int, context: DistributedContext
    ) -> None:
        super().__init__(
            dataset,
            num_replicas=context.world_size,
            rank=context.rank,
            shuffle=True,
            seed=seed,
            drop_last=True,
        )
        self.batch_per_rank = batch_per_rank
        self.start_batch = 0

    @property
    def batches_per_epoch(self) -> int:
        return self.num_samples // self.batch_per_rank

    def set_position(self, epoch: int, start_batch: int = 0) -> None:
        """Iterate epoch `epoch` from its batch `start_batch` on."""
        self.set_epoch(epoch)
        self.start_batch = start_batch

    def __iter__(self) -> Iterator[int]:
        indices = list(super().__iter__())
        start = self.start_batch * self.batch_per_rank
        return iter(indices[start : self.batches_per_epoch * self.batch_per_rank])

    def __len__(self) -> int:
        return (self.batches_per_epoch - self.start_batch) * self.batch_per_rank


def shard_indices(length: int, context: DistributedContext) -> list[int]:
    """This process's share of an evaluation set: every world_size-th index, without padding."""
    return list(range(context.rank, length, context.world_size))
