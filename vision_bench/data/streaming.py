"""`ShardStreamDataset`: shards streamed as a torch IterableDataset. A `ShardSamples` reader reads them:
`TarSamples` for WebDataset tar shards, `hf_streaming.RowSamples` for the data files of a Hugging Face
dataset loaded with `streaming=True`.

For evaluation a process reads its shards in order. For training (`train_order`):

- Shards are dealt to the data-parallel processes once (shard i to rank i % world_size), so each
  rank holds the same shards every epoch. Each epoch a rank reads its shards in an order shuffled by
  (seed, epoch, rank), through a shuffle buffer seeded the same way, and cuts the stream into
  batches; every rank stops after `batches_per_epoch`, the smallest rank's count, so all ranks take
  the same number of steps. The order is a pure function of (seed, epoch).
- DataLoader workers share the batches, not the shards: each worker reads the rank's whole stream
  (raw bytes, cheap) and decodes every W-th batch, and the DataLoader, which takes one batch from
  each worker in turn, yields them in the order of a single process. So the order does not depend
  on `runtime.num_workers`, and a resume that skips the batches already trained (`set_position`)
  repeats the uninterrupted run exactly. The cost: each worker reads every shard of its rank.
- Local tar shards are counted once (tar headers only). URLs, commands and streamed Hugging Face
  datasets are not counted: the length is unknown, training then needs `training.max_steps`, and
  the stream is read in passes (pass p shuffled by (seed, p, rank)) for as many batches as the run
  asks, all in epoch 0.

The epoch and start batch live in a shared-memory tensor, so persistent DataLoader workers see a
`set_epoch` / `set_position` made in the main process before the next `iter(loader)`.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import closing
from typing import Any, Protocol

import torch
from torch.utils.data import IterableDataset, get_worker_info

from render.spec import RenderSpec
from vision_bench.data.batch import GridItem, Item
from vision_bench.data.external import (
    ReadOptions,
    image_fields,
    image_item,
    record_item,
    source_split,
    square_images,
    stored_spec,
)
from vision_bench.data.holdout import HELD_OUT_SPLIT, TRAIN_SPLIT, KeyFilter, refuse_holdout
from vision_bench.data.images import load_image_tensor
from vision_bench.data.shard_stream import (
    count_samples,
    is_remote,
    shard_urls,
    split_pattern,
    split_shards,
    tar_samples,
)
from vision_bench.errors import CorruptFileError, DataError

DEFAULT_SHUFFLE_BUFFER = 1000
Fields = Mapping[str, Any]
RawSample = tuple[int, str, str, Fields]  # (ordinal in the stream, shard, key, fields)
Decoded = tuple[GridItem | None, dict[str, torch.Tensor]]


class ShardSamples(Protocol):
    """What a stream reads: the samples of one shard in order, `(key, fields)` (cheap: raw bytes or cells), and
    the item and images one of them decodes to (this project's metadata, else None)."""

    def samples(self, shard: str) -> Iterator[tuple[str, Fields]]: ...

    def decode(self, shard: str, key: str, fields: Fields) -> Decoded: ...


class TarSamples:
    """WebDataset tar shards: a sample is the members sharing a key; `columns` names the image fields."""

    def __init__(self, columns: Mapping[str, str] | None = None) -> None:
        self.fields = image_fields(columns)

    def samples(self, shard: str) -> Iterator[tuple[str, Fields]]:
        return tar_samples(shard)

    def decode(self, shard: str, key: str, fields: Fields) -> Decoded:
        images = {role: self._member(shard, key, fields, name) for role, name in self.fields.items()}
        item = None
        if "json" in fields:
            try:
                item = record_item(json.loads(fields["json"]))
            except (ValueError, TypeError) as error:
                raise CorruptFileError(f"{shard}: {key}.json is not a metadata record ({error})") from None
        return item, {role: load_image_tensor(data) for role, data in images.items()}

    @staticmethod
    def _member(url: str, key: str, fields: Fields, name: str) -> bytes:
        """The bytes of field `name` (`input` matches `input.png`, `input.jpg`, ...)."""
        for field, data in fields.items():
            if field == name or field.startswith(f"{name}."):
                return bytes(data)
        raise DataError(
            f"{url}: sample {key!r} has no {name!r} member (it has {', '.join(sorted(fields))}); shards need "
            f"{{key}}.{name}.png files, or name the image fields with dataset.columns "
            "(e.g. {input: jpg, target: png})"
        )


class ShardStreamDataset(IterableDataset):
    """The samples of one split's shards, read as streams by `reader` (see the module docstring)."""

    def __init__(self, pattern: str, split: str, shards: Sequence[str], reader: ShardSamples, *,
                 counts: Sequence[int] | None = None, spec: RenderSpec | None = None, resize: str = "refuse",
                 keep: KeyFilter | None = None) -> None:
        self.pattern = pattern
        self.split = split
        self.shards = list(shards)
        self.reader = reader
        self.counts = None if counts is None else [int(count) for count in counts]
        self.keep = keep
        self.rank, self.world_size = 0, 1
        self.training = False
        self.batch_size, self.seed, self.shuffle_buffer = 1, 0, 0
        self._position = torch.zeros(2, dtype=torch.long).share_memory_()  # epoch, start batch
        self.resize = "refuse"  # the first sample is read as stored, to judge the images' size
        with closing(self._items(self._read(self.shards))) as items:  # the first shard, unless it keeps no sample
            first = next(items, None)
        if first is None:
            left = " that dataset.val_fraction leaves to this split" if keep is not None else ""
            raise DataError(f"{pattern}: holds no samples{left}; check the shard pattern")
        self.has_grids = "input_grid" in first
        self.spec = stored_spec(first["input"], spec, pattern, resize)
        self.resize = resize

    # ----------------------------------------------------------------- what to read, in which order

    def shard_over(self, rank: int, world_size: int) -> None:
        """Read only this process's shards (every world_size-th, from `rank`)."""
        self.rank, self.world_size = rank, world_size

    def train_order(self, *, batch_size: int, seed: int, shuffle_buffer: int, rank: int = 0,
                    world_size: int = 1) -> None:
        """Shuffled whole batches of `batch_size`, the same count on every rank (see the module docstring)."""
        if len(self.shards) < world_size:
            raise DataError(
                f"{self.pattern}: {len(self.shards)} shard(s) cannot be dealt to {world_size} processes; "
                f"split the data into at least {world_size} shards"
            )
        self.shard_over(rank, world_size)
        self.training = True
        self.batch_size, self.seed, self.shuffle_buffer = batch_size, seed, shuffle_buffer

    def eval_order(self, *, batch_size: int) -> None:
        """The stream in its stored order, dealt to DataLoader workers in whole batches of the loader's
        `batch_size`, so the order of the batches does not depend on the number of workers."""
        self.training = False
        self.batch_size = batch_size

    @property
    def batches_per_epoch(self) -> int | None:
        """Training batches per epoch on every rank; None when the shards were not counted."""
        if self.counts is None:
            return None
        per_rank = [sum(self.counts[rank::self.world_size]) for rank in range(self.world_size)]
        return min(per_rank) // self.batch_size

    def set_epoch(self, epoch: int) -> None:
        self.set_position(epoch, 0)

    def set_position(self, epoch: int, start_batch: int = 0) -> None:
        """Iterate epoch `epoch` from its batch `start_batch` on (the batches before are read, not decoded)."""
        self._position[0], self._position[1] = epoch, start_batch

    def __len__(self) -> int:
        if self.counts is None:
            raise TypeError(f"the length of {self.pattern} is unknown: its shards are streamed, not counted")
        return sum(self.counts)

    # ----------------------------------------------------------------- iteration

    def __iter__(self) -> Iterator[Item]:
        epoch, start = (int(value) for value in self._position.tolist())
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        limit = self.batches_per_epoch if self.training else None
        for number, batch in enumerate(_batches(self._raw_samples(epoch), self.batch_size)):
            if limit is not None and number >= limit:
                return
            if number >= start and (number - start) % workers == worker:
                yield from self._items(batch)

    def _raw_samples(self, epoch: int) -> Iterator[RawSample]:
        shards = self.shards[self.rank::self.world_size]
        if not self.training:
            return self._read(shards)
        if self.counts is not None:
            return self._shuffled(shards, epoch)
        return self._passes(shards)

    def _passes(self, shards: list[str]) -> Iterator[RawSample]:
        """Pass after pass over shards of unknown length (training runs until max_steps)."""
        for number in itertools.count():
            read = 0
            for sample in self._shuffled(shards, number):
                read += 1
                yield sample
            if read == 0:
                raise DataError(f"{self.pattern}: the shards of this process hold no samples; check them")

    def _shuffled(self, shards: list[str], epoch: int) -> Iterator[RawSample]:
        """The shards in a seeded order, through a seeded shuffle buffer: a function of (seed, epoch, rank)."""
        rng = random.Random(f"shards/{self.seed}/{epoch}/{self.rank}")
        order = list(shards)
        rng.shuffle(order)
        buffer: list[RawSample] = []
        for sample in self._read(order):
            buffer.append(sample)
            if len(buffer) > self.shuffle_buffer:
                slot = rng.randrange(len(buffer))
                buffer[slot], buffer[-1] = buffer[-1], buffer[slot]
                yield buffer.pop()
        rng.shuffle(buffer)
        yield from buffer

    def _read(self, shards: Iterable[str]) -> Iterator[RawSample]:
        """The samples of `shards` in order (those `keep` keeps), numbered in that order."""
        ordinal = itertools.count()
        for shard in shards:
            for key, fields in self.reader.samples(shard):
                if self.keep is None or self.keep(key):
                    yield next(ordinal), shard, key, fields

    def _items(self, samples: Iterable[RawSample]) -> Generator[Item, None, None]:
        for ordinal, shard, key, fields in samples:
            item, images = self.reader.decode(shard, key, fields)
            if self.resize != "refuse":
                images = square_images(images, self.spec, self.resize)
            yield image_item(item, images, self.split, ordinal, key)


def _batches(samples: Iterator[RawSample], size: int) -> Iterator[list[RawSample]]:
    while batch := list(itertools.islice(samples, size)):
        yield batch


def open_shard_stream(patterns: str | Mapping[str, str], split: str, spec: RenderSpec | None,
                      options: ReadOptions) -> ShardStreamDataset:
    """The split's shards: of one pattern for every split (`{split}` replaced by the source's name for it), or
    of the split's own pattern (a mapping split -> pattern), read as `options` say; local shards are counted
    now, URLs and commands are not."""
    keep = options.key_filter(split)
    if keep is not None:
        _check_no_validation_shards(patterns, options)
    pattern = split_shards(patterns, TRAIN_SPLIT if keep is not None else split, options.read_split(split))
    urls = shard_urls(pattern)
    counts = None if any(is_remote(url) for url in urls) else [count_samples(url, keep) for url in urls]
    return ShardStreamDataset(pattern, split, urls, TarSamples(options.columns), counts=counts, spec=spec,
                              resize=options.resize, keep=keep)


def _check_no_validation_shards(patterns: str | Mapping[str, str], options: ReadOptions) -> None:
    """Refuse a val_id held out of shards that have val_id shards of their own: a pattern of its own
    (`dataset.path`'s mapping), or local shards where `{split}` gives the source's name for val_id. val_ood
    shards are read as they are. Shards at URLs or from commands are not probed."""
    if not isinstance(patterns, str):
        if HELD_OUT_SPLIT in patterns:
            raise refuse_holdout(patterns[HELD_OUT_SPLIT], HELD_OUT_SPLIT)
        return
    name = source_split(HELD_OUT_SPLIT, options.splits)
    pattern = split_pattern(patterns, name)
    if is_remote(pattern):
        return
    try:
        shard_urls(pattern)
    except DataError:  # no such shards
        return
    raise refuse_holdout(pattern, name)


__all__ = ["DEFAULT_SHUFFLE_BUFFER", "ShardSamples", "ShardStreamDataset", "TarSamples", "open_shard_stream"]
