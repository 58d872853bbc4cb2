"""The cells of a bench, where each one lives, and which shard computes it.

A cell is one trained model on one experiment with one seed, or the baselines of one experiment
(seed-independent). The plan lists them in a fixed order: experiments x models x seeds, then the
baselines of each experiment. Shard K of N computes the cells whose position i in that list has
i % N == K, so N processes (a Slurm array, one process per GPU) share a bench without talking to
each other, and together compute every cell exactly once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vision_bench.bench.config import BenchConfig, ModelEntry, is_file_reference
from vision_bench.errors import ConfigError
from vision_bench.evaluation.outputs import METRICS_FILE, safe_name
from vision_bench.evaluation.run import OUTPUT_DIR
from vision_bench.io.atomic import output_folder


@dataclass(frozen=True)
class Cell:
    """One unit of work: a model (None for the baselines), an experiment and a seed (None for the baselines)."""

    experiment: str
    model: ModelEntry | None
    seed: int | None

    def label(self) -> str:
        who = self.model.display if self.model else "baselines"
        return f"{who} / {self.experiment}" + (f" / seed {self.seed}" if self.seed is not None else "")


def plan_cells(config: BenchConfig, experiments: Sequence[str]) -> list[Cell]:
    """Every cell of the bench, in the order that defines the shards (see the module docstring)."""
    cells = [Cell(e, m, s) for e in experiments for m in config.models for s in (m.seeds or config.seeds)]
    if config.baselines:
        cells += [Cell(e, None, None) for e in experiments]
    return cells


def check_shard(num_shards: int, shard_index: int) -> None:
    """Refuse a shard that does not exist, before anything runs."""
    if num_shards < 1:
        raise ConfigError(f"--num-shards must be at least 1, got {num_shards}")
    if not 0 <= shard_index < num_shards:
        raise ConfigError(f"--shard-index must be between 0 and {num_shards - 1} (--num-shards {num_shards}), "
                          f"got {shard_index}")


def shard_cells(cells: Sequence[Cell], num_shards: int, shard_index: int) -> list[Cell]:
    """The cells shard `shard_index` of `num_shards` computes: every cell at a position i with i % N == K."""
    check_shard(num_shards, shard_index)
    return [cell for position, cell in enumerate(cells) if position % num_shards == shard_index]


def experiment_dir(experiment: str) -> str:
    """The folder name of an experiment: its study id made safe, or a task-config file's stem."""
    return safe_name(Path(experiment).stem if is_file_reference(experiment) else experiment)


def run_dir(out_dir: Path, cell: Cell) -> Path:
    """OUT/runs/EXPERIMENT/MODEL/seedS for a trained model, OUT/baselines/EXPERIMENT for the baselines."""
    if cell.model is None:
        return out_dir / "baselines" / experiment_dir(cell.experiment)
    return out_dir / "runs" / experiment_dir(cell.experiment) / safe_name(cell.model.display) / f"seed{cell.seed}"


def make_run_dir(out_dir: Path, cell: Cell) -> Path:
    """`run_dir`, every folder below OUT made here or checked not to be a link (`output_folder`), so that no
    cell writes through a folder link placed in the bench."""
    return output_folder(out_dir, *run_dir(out_dir, cell).relative_to(out_dir).parts)


LOCKS_DIR = ".locks"
"""OUT/.locks/: one lock file per cell, held by the process computing it (`vision_bench.io.lock`)."""


def lock_path(out_dir: Path, cell: Cell) -> Path:
    """OUT/.locks/ mirroring the cell's folder below OUT (`runs/EXPERIMENT/MODEL/seedS.lock`), so that two cells
    never share a lock; its folders made here or checked not to be links."""
    *folders, name = run_dir(out_dir, cell).relative_to(out_dir).parts
    return output_folder(out_dir, LOCKS_DIR, *folders) / f"{name}.lock"


def is_finished(out_dir: Path, cell: Cell) -> bool:
    """A cell is finished when its evaluation's metrics.json exists (the evaluation writes it last)."""
    return (run_dir(out_dir, cell) / OUTPUT_DIR / METRICS_FILE).is_file()
