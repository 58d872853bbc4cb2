"""Sample sheets for a bench report: ID and OOD predictions of every trained model.

Each cell's evaluation already drew best- and worst-case sheets per split; the report shows those
of one representative cell per (model, setting): the first experiment and seed. They are copied
into OUT/sheets/ so the report folder holds every image it links.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vision_bench.bench.aggregate import CellResult
from vision_bench.bench.report import Figure
from vision_bench.evaluation.outputs import SHEETS_DIR, safe_name
from vision_bench.evaluation.run import OUTPUT_DIR
from vision_bench.io.atomic import atomic_write_bytes, output_folder

KINDS = ("best", "worst")


def representative_cells(cells: Sequence[CellResult]) -> list[tuple[CellResult, Path]]:
    """The first evaluated cell of each (trained model, setting), in the order met, with its run folder."""
    chosen: dict[tuple[str, str], tuple[CellResult, Path]] = {}
    for cell in cells:
        if not cell.baseline and cell.run_dir is not None:
            chosen.setdefault((cell.predictor, cell.setting), (cell, cell.run_dir))
    return list(chosen.values())


def experiment_label(cell: CellResult) -> str:
    """A study id as it is; a custom task file by its stem (not its absolute path)."""
    if cell.experiment.endswith((".yaml", ".yml")):
        return Path(cell.experiment).stem
    return cell.experiment


def collect_sheets(cells: Sequence[CellResult], splits: Sequence[str], out_dir: Path) -> list[Figure]:
    """Copy the representative cells' sheets to OUT/sheets and return them as report figures."""
    figures = []
    for cell, run_dir in representative_cells(cells):
        source_dir = run_dir / OUTPUT_DIR / SHEETS_DIR / safe_name(cell.model or cell.predictor)
        for split in splits:
            for kind in KINDS:
                source = source_dir / f"{split}_{kind}.png"
                if not source.is_file():
                    continue
                name = (f"{safe_name(cell.predictor)}__{safe_name(experiment_label(cell))}"
                        f"__seed{cell.seed}__{split}_{kind}.png")
                target = output_folder(out_dir, SHEETS_DIR) / name
                atomic_write_bytes(target, source.read_bytes())  # never through a link placed at the target
                caption = f"{cell.predictor} on {experiment_label(cell)} (seed {cell.seed}): {kind} {split} samples"
                figures.append(Figure(Path(target), caption))
    return figures
