"""Validation during training: loss, MSE and (when decodable) grid accuracy per validation split.

Deliberately small: the full metric suite runs in `vision-bench evaluate`. Under torchrun each
process scores every world_size-th sample (streamed shards: every world_size-th shard) and the sums
are reduced, so the numbers equal those of a single process. The loaders are built once per run
(`validation_loaders`) and their workers kept between validations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import torch
from torch.utils.data import DataLoader, Dataset

from render.spec import RenderSpec
from vision_bench.data.batch import Batch
from vision_bench.data.opening import dataset_length
from vision_bench.models.base import ImageToImageModel
from vision_bench.train import components
from vision_bench.train.device import Runtime, autocast
from vision_bench.train.distributed import DistributedContext, all_reduce_sum, shard_indices

Feed = Callable[[Batch], Batch]


def validation_loaders(
    datasets: Mapping[str, Dataset], *, context: DistributedContext, batch_size: int, num_workers: int,
    pin_memory: bool = False,
) -> dict[str, DataLoader]:
    """One loader per validation split over this process's share, kept for the whole run."""
    from vision_bench.data.streaming import ShardStreamDataset

    loaders = {}
    for split, dataset in datasets.items():
        if isinstance(dataset, ShardStreamDataset):
            dataset.shard_over(context.rank, context.world_size)
            indices = None
        else:
            indices = shard_indices(dataset_length(dataset), context)
        loaders[split] = components.eval_loader(dataset, indices, batch_size=batch_size, num_workers=num_workers,
                                                pin_memory=pin_memory, persistent=True)
    return loaders


@torch.no_grad()
def validate(
    model: ImageToImageModel,
    loaders: Mapping[str, Iterable[Batch]],
    *,
    feed: Feed,
    spec: RenderSpec,
    context: DistributedContext,
    runtime: Runtime,
) -> dict[str, float]:
    """{'val_id/loss': .., 'val_id/mse': .., 'val_id/grid_accuracy': .., 'val_ood/...'} over each
    split's loader (see `validation_loaders`)."""
    was_training = model.training
    model.eval()
    metrics: dict[str, float] = {}
    try:
        for split, loader in loaders.items():
            metrics.update(_validate_split(model, split, loader, feed, spec, context, runtime))
    finally:
        model.train(was_training)
    return metrics


def _validate_split(
    model: ImageToImageModel,
    split: str,
    loader: Iterable[Batch],
    feed: Feed,
    spec: RenderSpec,
    context: DistributedContext,
    runtime: Runtime,
) -> dict[str, float]:
    has_loss = bool(getattr(model, "trainable", True))
    # sums of: loss * n, squared error per sample, grid-exact samples, samples, samples with grids decoded
    totals = torch.zeros(5, dtype=torch.float64)
    for raw in loader:
        batch = feed(raw)
        count = batch["target"].shape[0]
        with autocast(runtime):
            prediction, grids = model.predict_with_grids(batch)
            prediction = prediction.float()
            loss = model.training_loss(batch).float() if has_loss else None
        errors = (prediction - batch["target"].float()).square().flatten(1).mean(1)
        totals[0] += float(loss) * count if loss is not None else 0.0
        totals[1] += float(errors.sum())
        totals[3] += count
        exact = components.grid_exact_match(prediction, batch, spec, grids)
        if exact is not None:
            totals[2] += float(exact.sum())
            totals[4] += count
    if context.enabled:
        reduce_on = runtime.device if runtime.device.type == "cuda" else torch.device("cpu")
        totals = all_reduce_sum(totals.to(reduce_on), context).cpu()
    samples = float(totals[3])
    if samples == 0:
        return {}
    result = {f"{split}/mse": float(totals[1]) / samples}
    if has_loss:
        result[f"{split}/loss"] = float(totals[0]) / samples
    if totals[4] > 0:
        result[f"{split}/grid_accuracy"] = float(totals[2]) / float(totals[4])
    return result
