"""What a run is built from: the render spec, the datasets and loaders, the model, the device feed.

The one place where training meets `render`, `vision_bench.data` and `vision_bench.models`; it
also checks that they fit together (image size, palette) before any step is taken.
"""

from __future__ import annotations

import itertools
import platform
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, Subset

from render.spec import RenderSpec
from vision_bench.data.batch import Batch
from vision_bench.data.opening import dataset_length
from vision_bench.errors import ConfigError
from vision_bench.train.config import TrainConfig
from vision_bench.train.device import Runtime
from vision_bench.train.distributed import DistributedContext, EpochSampler

if TYPE_CHECKING:
    from vision_bench.data.streaming import ShardStreamDataset
    from vision_bench.models.base import ImageToImageModel
    from vision_bench.tasks.config import TaskConfig

TRAIN_SPLIT = "train"
PREFETCH_BATCHES = 2
"""Batches each DataLoader worker prepares ahead (torch's `prefetch_factor`)."""


def resolve_spec(config: TrainConfig) -> RenderSpec:
    """The spec stored in a resolved config (checkpoints and config.yaml hold the full spec)."""
    return config.dataset.render_spec() or RenderSpec()


def resolve_config(config: TrainConfig, spec: RenderSpec, task_config: TaskConfig | None) -> TrainConfig:
    """`config` with `dataset.spec` spelled out in full and, for a model that reads grids on a fixed canvas left
    unset (`ImageToImageModel.canvas_option`), the canvas of `task_config` (the data's, `data_task_config`; None
    for data made elsewhere) as its size, as stored in config.yaml and checkpoints: a reloaded model is built at
    the size it trained at. A task-conditioned model left without `task_code_length` reads codes of the data's
    length, set here when it differs from the default (so the configs of runs that read default-length codes are
    unchanged)."""
    from vision_bench.models.registry import model_family
    from vision_bench.tasks.config import experiment_canvas
    from vision_bench.tasks.task_code import TASK_CODE_LENGTH

    dataset = config.dataset.model_copy(update={"spec": spec.to_dict()})
    model = config.model
    options = dict(model.options)
    option = model_family(model.name).canvas_option(options)
    if option is not None and task_config is not None:
        options[option] = max(experiment_canvas(task_config))
    if (options.get("task_conditioning") and "task_code_length" not in options and task_config is not None
            and task_config.task_code_length != TASK_CODE_LENGTH):
        options["task_code_length"] = task_config.task_code_length
    if options != model.options:
        model = model.model_copy(update={"options": options})
    return config.replace(dataset=dataset, model=model)


def data_task_config(dataset: Dataset) -> TaskConfig | None:
    """The task config that generated `dataset`: its own (on the fly) or its export's manifest's; None for data
    made elsewhere."""
    from vision_bench.data.datasets import ExportDataset
    from vision_bench.data.onthefly import OnTheFlyDataset
    from vision_bench.tasks.config import TaskConfig

    if isinstance(dataset, OnTheFlyDataset):
        return dataset.config
    if isinstance(dataset, ExportDataset):
        return TaskConfig.from_dict(dict(dataset.manifest["settings"]["config"]))
    return None


def build_datasets(config: TrainConfig) -> tuple[dict[str, Dataset], RenderSpec]:
    """The training split and each validation split, and the spec their images are drawn with.

    Generated data and `grids` exports carry grids only and are drawn on the training device;
    image exports keep their stored pixels (JPEG artefacts included). An export's own spec applies
    unless `dataset.spec` names another (grids only); data made elsewhere (Hugging Face datasets,
    streamed shards) brings its images' size.
    """
    from vision_bench.data import open_dataset

    dataset = config.dataset
    spec = dataset.render_spec()
    counts: dict[str, Any] = {}
    if dataset.path is not None:
        source: Any = dataset.source
        render_on = "device" if isinstance(dataset.path, str) and _export_format(dataset.path) == "grids" else "cpu"
        counts = {"read": dataset.read_options()}
    else:
        source = dataset.study if dataset.study is not None else dataset.task_config()
        render_on = "device"
        counts = {"n_train": dataset.n_train, "n_val": dataset.n_val}
        spec = spec or RenderSpec()
    splits = (TRAIN_SPLIT, *dataset.val_splits)
    datasets = {split: open_dataset(source, split, spec, render_on=render_on, **counts) for split in splits}
    return datasets, getattr(datasets[TRAIN_SPLIT], "spec", None) or spec or RenderSpec()


def _export_format(path: str) -> str | None:
    """The `format` of an export directory's manifest; None for image folders made elsewhere."""
    from vision_bench.data import read_manifest
    from vision_bench.data.manifest import MANIFEST_NAME

    if not (Path(path) / MANIFEST_NAME).is_file():
        return None
    return str(read_manifest(path)["format"])


def model_options(config: TrainConfig, spec: RenderSpec) -> dict[str, Any]:
    """`model.options` completed from the dataset's spec, refusing options that contradict it."""
    options = dict(config.model.options)
    height, width = spec.size
    if height != width:
        raise ConfigError(
            f"dataset.spec.size is {height}x{width}; the models take square images: use one size for both sides"
        )
    if "image_size" in options and options["image_size"] != height:
        raise ConfigError(
            f"model.options.image_size is {options['image_size']} but the dataset renders {height}x{width} "
            "images (dataset.spec.size); drop model.options.image_size or make the two agree"
        )
    options["image_size"] = height
    if options.get("head") == "palette":
        if spec.background == "random":
            raise ConfigError(
                "model.options.head 'palette' needs one fixed set of colors, but dataset.spec.background is "
                "'random' (a new color per image); use a fixed background or head 'rgb'"
            )
        colors = spec.colors()
        if "palette_colors" in options and not np.array_equal(np.asarray(options["palette_colors"]), colors):
            raise ConfigError(
                "model.options.palette_colors differ from the dataset's effective colors "
                f"(dataset.spec palette {spec.palette!r}); drop model.options.palette_colors to use the dataset's"
            )
        options["palette_colors"] = colors
    options["render_spec"] = spec
    return options


def build_model(config: TrainConfig, spec: RenderSpec) -> ImageToImageModel:
    """`create_model(model.name, **options)` for this dataset (unknown names raise with close matches), refused
    when the dataset is generated by a task family the model does not read."""
    from vision_bench.models import create_model

    model = create_model(config.model.name, **model_options(config, spec))
    check_task_family(model, config)
    return model


def check_task_family(model: ImageToImageModel, config: TrainConfig) -> None:
    """`model.check_task_family` for the family of a generated dataset (a study or a task config); data on disk
    is the model's to check when it reads its first batch."""
    from vision_bench.tasks.families import FAMILIES, family_of, study_family

    dataset = config.dataset
    if dataset.study is not None:
        family, source = study_family(dataset.study), f"dataset.study {dataset.study!r}"
    elif (task := dataset.task_config()) is not None:
        family, source = family_of(task), "dataset.task"
    else:
        return
    name = next((key for key, entry in FAMILIES.items() if entry is family), None)
    model.check_task_family(name, f"{source} ({family.label})")


class DeviceFeed:
    """Puts a collated batch on the training device, rendering grids there when it has no images."""

    def __init__(self, spec: RenderSpec, runtime: Runtime) -> None:
        self.spec = spec
        self.runtime = runtime

    def __call__(self, batch: Batch) -> Batch:
        from vision_bench.data import to_device_batch

        batch = to_device_batch(batch, self.spec, self.runtime.device)
        if self.runtime.channels_last:
            batch["input"] = batch["input"].contiguous(memory_format=torch.channels_last)
            batch["target"] = batch["target"].contiguous(memory_format=torch.channels_last)
        return batch


def training_order(
    dataset: Dataset, *, batch_per_rank: int, seed: int, context: DistributedContext,
    shuffle_buffer: int | None, max_steps: int | None,
) -> tuple[EpochSampler | ShardStreamDataset, int]:
    """What orders the training samples, and the steps of one epoch.

    An indexable dataset gets an `EpochSampler`; streamed shards order themselves (shuffle buffer,
    batches shared by the workers) and, when their length is unknown, make the whole run one epoch
    of `max_steps`. Both have `set_position(epoch, start_batch)`, which `TrainLoader` calls.
    """
    from vision_bench.data.streaming import DEFAULT_SHUFFLE_BUFFER, ShardStreamDataset

    order: EpochSampler | ShardStreamDataset
    if isinstance(dataset, ShardStreamDataset):
        buffer = DEFAULT_SHUFFLE_BUFFER if shuffle_buffer is None else shuffle_buffer
        dataset.train_order(batch_size=batch_per_rank, seed=seed, shuffle_buffer=buffer, rank=context.rank,
                            world_size=context.world_size)
        order = dataset
        steps = dataset.batches_per_epoch
        if steps is None:
            if max_steps is None:
                raise ConfigError(
                    f"dataset.path {dataset.pattern}: its length is unknown (shards read from URLs or commands, and "
                    "streamed Hugging Face datasets, are not counted); set training.max_steps"
                )
            steps = max_steps
    else:
        order = EpochSampler(dataset, batch_per_rank=batch_per_rank, seed=seed, context=context)
        steps = order.batches_per_epoch
    if steps == 0:
        raise ConfigError(
            f"training.batch_size {batch_per_rank * context.world_size} is larger than the "
            f"{dataset_length(dataset)} training samples (per process, for streamed shards); lower it or add "
            "training samples"
        )
    return order, steps


class TrainLoader:
    """The training DataLoader, built once per run and iterated once per epoch.

    Its worker processes persist from epoch to epoch. The order stays a pure function of (seed,
    epoch): `epoch()` sets the sampler's (or the stream's) position before the loader is iterated,
    which is where a persistent loader reads it (sampling happens in this process; a stream's
    position is in shared memory). The loader draws its workers' base seed from its own generator,
    so the global RNG (dropout, augmentation) is untouched; persistent workers are seeded once per
    session, which is harmless because every sample is a pure function of its index or its place in
    the stream (no dataset draws from worker RNG).
    """

    def __init__(self, dataset: Dataset, order: EpochSampler | ShardStreamDataset, *, batch_size: int,
                 num_workers: int, seed: int, pin_memory: bool) -> None:
        from vision_bench.data.collate import collate

        self.order = order
        self.seed = seed
        self.generator = torch.Generator()
        self.loader = DataLoader(
            dataset,
            batch_size=batch_size,
            sampler=None if isinstance(dataset, IterableDataset) else order,
            drop_last=True,
            collate_fn=collate,
            generator=self.generator,
            **worker_options(num_workers, pin_memory),
        )

    def epoch(self, epoch: int, start_batch: int = 0) -> Iterator[Batch]:
        """The batches of `epoch` from its batch `start_batch` on."""
        self.order.set_position(epoch, start_batch)
        self.generator.manual_seed(self.seed * 1_000_003 + epoch)
        return iter(self.loader)


class WorkerOptions(TypedDict, total=False):
    """The DataLoader arguments that set its worker processes."""

    num_workers: int
    pin_memory: bool
    persistent_workers: bool
    prefetch_factor: int


def worker_options(num_workers: int, pin_memory: bool, *, persistent: bool = True) -> WorkerOptions:
    """DataLoader settings for `num_workers` processes: kept alive between passes, prefetching."""
    options = WorkerOptions(num_workers=num_workers, pin_memory=pin_memory)
    if num_workers > 0:
        options["persistent_workers"] = persistent
        options["prefetch_factor"] = PREFETCH_BATCHES
    return options


def eval_loader(dataset: Dataset, indices: Iterable[int] | None = None, *, batch_size: int, num_workers: int,
                pin_memory: bool = False, persistent: bool = False) -> DataLoader:
    """Samples `indices` in order (None: every sample; a stream is always read whole), last batch kept;
    `persistent` keeps the workers for the next pass."""
    from vision_bench.data.collate import collate
    from vision_bench.data.streaming import ShardStreamDataset

    if isinstance(dataset, ShardStreamDataset):
        dataset.eval_order(batch_size=batch_size)
    source = dataset if indices is None else Subset(dataset, list(indices))
    return DataLoader(
        source,
        batch_size=batch_size,
        shuffle=False,
        collate_fn=collate,
        generator=torch.Generator().manual_seed(0),
        **worker_options(num_workers, pin_memory, persistent=persistent),
    )


def first_samples(dataset: Dataset, count: int) -> Batch | None:
    """The first `count` samples of `dataset` (of a stream too) as one collated batch, read in this
    process without a DataLoader; None when the dataset is empty."""
    from vision_bench.data.collate import collate

    if isinstance(dataset, IterableDataset):
        items = list(itertools.islice(iter(dataset), count))
    else:
        items = [dataset[index] for index in range(min(count, dataset_length(dataset)))]
    return collate(items) if items else None


def check_first_sample(dataset: Dataset) -> None:
    """Read one sample, so that a data error shows up before anything is written (streamed shards
    read theirs when they were opened)."""
    if not isinstance(dataset, IterableDataset) and dataset_length(dataset):
        dataset[0]


def grid_exact_match(
    prediction: torch.Tensor, batch: Batch, spec: RenderSpec, predicted_grids: torch.Tensor | None = None
) -> torch.Tensor | None:
    """1/0 per sample: does the prediction, decoded to a grid, equal the target grid? None without grids. A
    model's own `predicted_grids` (`ImageToImageModel.predict_grids`) are compared instead of decoding."""
    from vision_bench.metrics import compute_metrics, decode_predictions
    from vision_bench.metrics.inputs import lay_on_targets

    if "target_grid" not in batch or "target_grid_shape" not in batch:
        return None
    if predicted_grids is not None:
        target = batch["target_grid"]
        predicted = lay_on_targets(predicted_grids, target)
    else:
        seeds = batch["render_seed"].tolist() if "render_seed" in batch else None
        predicted = decode_predictions(prediction.clamp(0, 1), spec, batch["target_grid_shape"], seeds=seeds)
        target = batch["target_grid"][:, : predicted.shape[1], : predicted.shape[2]]
    return compute_metrics(pred_grids=predicted, target_grids=target, names=["grid_accuracy"])["grid_accuracy"]


def versions() -> dict[str, str]:
    import vision_bench

    return {"vision_bench": vision_bench.__version__, "torch": str(torch.__version__),
            "python": platform.python_version()}
