"""A validation split held out of a train-only dataset (`dataset.val_fraction`).

Whether a sample is held out depends only on (seed, its key), the key being what its reader names it
by (a shard member's key, a Hugging Face row's number, an image pair's name): a hash below the fraction
holds it out. So the held-out set is fixed by the seed and the same for any number of DataLoader
workers, ranks or shards, and a streamed dataset splits sample by sample without counting first. The
fraction held out is the expected one, not an exact count. The held-out samples are our `val_id`;
the training split is the rest.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from vision_bench.errors import DataError

HELD_OUT_SPLIT = "val_id"
OOD_SPLIT = "val_ood"
"""Our out-of-distribution validation split: never held out, read from the source's own split as always."""
TRAIN_SPLIT = "train"
_HASH_BYTES = 8


def held_out(key: str, fraction: float, seed: int) -> bool:
    """Is the sample named `key` in the held-out fraction for `seed`?"""
    digest = hashlib.blake2b(f"holdout/{seed}/{key}".encode(), digest_size=_HASH_BYTES).digest()
    return int.from_bytes(digest, "little") < fraction * 256**_HASH_BYTES


@dataclass(frozen=True)
class KeyFilter:
    """The samples of one side of the hold-out: the held-out ones (`held` true) or the rest."""

    fraction: float
    seed: int
    held: bool

    def __call__(self, key: str) -> bool:
        return held_out(key, self.fraction, self.seed) == self.held


def holdout_filter(split: str, fraction: float | None, seed: int) -> KeyFilter | None:
    """The filter our `split` reads the source's training split through when `fraction` is held out of it:
    `val_id` the held-out samples, `train` the rest; None for other splits or without a fraction."""
    if fraction is None or split not in (TRAIN_SPLIT, HELD_OUT_SPLIT):
        return None
    return KeyFilter(fraction, seed, split == HELD_OUT_SPLIT)


def refuse_holdout(source: str, name: str) -> DataError:
    """The error for a source that already has a validation split `name` of its own (one whose name says it is
    out-of-distribution gets the hint to read it as our val_ood, never as val_id)."""
    if "ood" in name.lower():
        fix = (f"if it holds out-of-distribution data, read it as ours with dataset.splits {{{OOD_SPLIT}: {name}}} "
               f"(the hold-out is in-distribution); else drop dataset.val_fraction")
    else:
        fix = (f"drop dataset.val_fraction (map ours to it with dataset.splits, e.g. {{{HELD_OUT_SPLIT}: {name}}}, "
               f"if its name is not {HELD_OUT_SPLIT})")
    return DataError(f"{source}: has a validation split of its own ({name!r}), so dataset.val_fraction would hold "
                     f"out a second one; {fix}")


def looks_like_validation(name: str) -> bool:
    """A split name that holds validation data: `val_id`, `validation`, `valid`, `val`, `dev`."""
    lowered = name.lower()
    return "val" in lowered or lowered == "dev"


__all__ = ["HELD_OUT_SPLIT", "OOD_SPLIT", "KeyFilter", "held_out", "holdout_filter", "looks_like_validation",
           "refuse_holdout"]
