"""`run_bench`: train and evaluate the cells of a `BenchConfig`, then write the report and results.

    OUT/bench.yaml                          the config, as resolved
    OUT/runs/EXPERIMENT/MODEL/seedS/        one training run per cell, evaluated in .../evaluation/
    OUT/baselines/EXPERIMENT/evaluation/    the baselines of each experiment (seed-independent)
    OUT/report.md, OUT/report.html          tables, plots (OUT/plots/) and sheets (OUT/sheets/)
    OUT/results.csv, OUT/results.json       every evaluated number, one row each (`bench.results`)
    OUT/.locks/                             one lock file per cell, held while a process computes it

A cell is finished when its evaluation metrics.json exists; re-running skips finished cells and
resumes interrupted training from its last checkpoint, so a killed bench continues where it was.
Experiments given as task-config YAML files are exported once to OUT/data/NAME (grids format)
and trained from there.

Many machines: `num_shards` / `shard_index` run only one shard's cells (`bench.cells`); any number
of shards may share OUT at once. Each checks OUT/bench.yaml (the first to start writes it), writes
only its own cells, and writes no report. A process holds a cell's lock while it computes the cell, and skips
(with a warning) a cell whose lock another process holds, so overlapping runs on one machine (two shard layouts,
a command started twice, a plain run beside running shards) do not compute one cell at once; a plain run then
refuses the report until that cell is finished. Locks are the file system's: `io.lock` says where they guard
nothing. A plain run afterwards collects every finished cell, computes the missing ones (or, with `collect_only`,
refuses naming them) and writes the report, results.csv and results.json. The whole config (every cell's training
config, every model, task config, render spec and device) is checked before anything is written.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from tqdm import tqdm

from vision_bench.bench.aggregate import CellResult, id_ood
from vision_bench.bench.cells import (
    Cell,
    check_shard,
    experiment_dir,
    is_finished,
    lock_path,
    make_run_dir,
    plan_cells,
    run_dir,
    shard_cells,
)
from vision_bench.bench.config import (
    BENCH_FILE,
    FINGERPRINTS,
    BenchConfig,
    check_layout,
    check_selection,
    is_file_reference,
    resolve_experiments,
    setting_of,
    task_config,
)
from vision_bench.bench.fingerprints import data_fingerprint
from vision_bench.bench.gate import check_gate, gated
from vision_bench.bench.report import write_report
from vision_bench.bench.results import write_results
from vision_bench.bench.rollout_report import (
    is_rollout_experiment,
    roll_out_baselines,
    roll_out_run,
    write_rollout_report,
)
from vision_bench.bench.summary import build_report, terminal_summary
from vision_bench.errors import ConfigError
from vision_bench.evaluation.data import family_metric_status
from vision_bench.evaluation.outputs import METRICS_FILE, read_metrics
from vision_bench.evaluation.rollout import ROLLOUT_DIR, ROLLOUT_FILE
from vision_bench.evaluation.run import OUTPUT_DIR
from vision_bench.io.atomic import atomic_write_text, output_folder, temp_path_for
from vision_bench.io.lock import exclusive
from vision_bench.metrics import listed_in
from vision_bench.tasks.studies.builder import alpha_of
from vision_bench.train.logging import messages_above_progress_bar

MISSING_NAMED = 10
"""How many unfinished cells a refused collect run names before it says 'and N more'."""

logger = logging.getLogger(__name__)


@dataclass
class BenchResult:
    """The evaluated cells, the files written, and which cells this call computed or skipped.

    A shard run (`shard` = (index, count)) holds only its own cells and writes no report or results
    (those paths are None); `pending` lists the cells of the whole bench that are not finished yet.
    """

    out_dir: Path
    config: BenchConfig
    cells: list[CellResult]
    computed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    shard: tuple[int, int] | None = None
    report_md: Path | None = None
    report_html: Path | None = None
    results_csv: Path | None = None
    results_json: Path | None = None


def _known_studies() -> list[str]:
    from vision_bench.tasks.studies import STUDIES

    return STUDIES.names()


class _Bench:
    """One bench in one output folder: its cells' training configs, and the work of computing a cell.

    `device` (when not None) replaces every cell's `train.runtime.device`; evaluation runs where
    the cell trained, the baselines on `device` or the shared `train.runtime.device`. `loggers` are
    added to every cell's `train.tracking.loggers`, and a cell's tracker run is named after the cell
    (`Cell.label`) unless `train.tracking.run_name` says otherwise.
    """

    def __init__(self, config: BenchConfig, out_dir: Path, progress: bool, device: str | None,
                 trust_stored_data: bool = False, loggers: Sequence[str] = ()) -> None:
        self.config = config
        self.out_dir = out_dir
        self.progress = progress
        self.device = device
        self.loggers = tuple(loggers)
        self.trust_stored_data = trust_stored_data  # see `evaluate_run`
        studies = [e for e in config.experiments if not is_file_reference(e)]
        self.experiments = resolve_experiments(config.experiments, _known_studies() if studies else [])
        self._spec: Any = None

    @property
    def spec(self) -> Any:
        """The bench's render spec (checked when the config was loaded)."""
        if self._spec is None:
            from render.spec import RenderSpec

            self._spec = RenderSpec.from_dict(self.config.data.spec)
        return self._spec

    def check(self, cells: Sequence[Cell]) -> None:
        """Every cell's training config, each model built on the meta device (no memory, no weights), and
        every device, before anything runs or is written: a bad key, name or option fails at once, not
        when its cell starts (maybe on another machine, hours later)."""
        import torch

        from vision_bench.train.checkpoint import STARTING_WEIGHT_OPTIONS
        from vision_bench.train.components import build_model
        from vision_bench.train.device import resolve_device
        from vision_bench.train.trackers import check_installed

        built: set[str] = set()
        devices = {self.baseline_device()} if any(cell.model is None for cell in cells) else set()
        for cell in cells:
            if cell.model is None:
                continue
            train_config = self.train_config(cell)
            devices.add(train_config.runtime.device)
            check_installed(train_config.tracking.loggers)
            if cell.model.display not in built and not STARTING_WEIGHT_OPTIONS & set(cell.model.options):
                with torch.device("meta"):  # starting weights are read (or fetched) when their cell starts
                    build_model(train_config, self.spec)
                built.add(cell.model.display)
        for device in sorted(devices):
            resolve_device(device, setting="--device" if self.device is not None else "train.runtime.device")

    def resolved(self) -> str:
        """OUT/bench.yaml: the config with its experiments expanded and each experiment's data fingerprint."""
        fingerprints = {experiment: data_fingerprint(task_config(experiment, self.config.data))
                        for experiment in self.experiments}
        return yaml.safe_dump({**self.config.to_dict(), "experiments": self.experiments, FINGERPRINTS: fingerprints},
                              sort_keys=False)

    def baseline_device(self) -> str:
        runtime = self.config.train.get("runtime")
        configured = runtime.get("device", "auto") if isinstance(runtime, dict) else "auto"
        return self.device if self.device is not None else str(configured)

    def dataset_section(self, experiment: str) -> dict[str, Any]:
        """The `dataset` section of a cell's TrainConfig: the study on the fly, or its export's folder."""
        spec = self.spec.to_dict()
        if is_file_reference(experiment):
            return {"path": str(self.export_dir(experiment)), "spec": spec}
        return {"study": experiment, "n_train": self.config.data.n_train, "n_val": self.config.data.n_val, "spec": spec}

    def export_dir(self, experiment: str) -> Path:
        return self.out_dir / "data" / experiment_dir(experiment)

    def export(self, experiment: str) -> Path:
        """The grids export of a task-config experiment, written once for every cell and shard.

        A new export is written into a hidden staging folder and renamed into place when complete, so
        shards that need the same data at the same time never write into one folder: the first to
        finish publishes it, the others drop their identical copy.
        """
        from vision_bench.data.export import export_dataset
        from vision_bench.data.export_formats import ExportOptions
        from vision_bench.data.manifest import MANIFEST_NAME

        root = self.export_dir(experiment)
        task, options = task_config(experiment, self.config.data), ExportOptions(format="grids")
        parts = root.relative_to(self.out_dir).parts  # data/NAME: made here or checked, never a folder link
        output_folder(self.out_dir, *parts, make=False)
        if root.exists():  # confirms a published export (or resumes one an earlier version left unfinished)
            export_dataset(task, self.spec, root, options)
            return root
        output_folder(self.out_dir, *parts[:-1])
        staging = temp_path_for(root)
        try:
            export_dataset(task, self.spec, staging, options)
            os.rename(staging, root)
        except OSError:
            if not (root / MANIFEST_NAME).is_file():
                raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)  # what a failed export, or another shard's win, left
        return root

    def train_config(self, cell: Cell) -> Any:
        from vision_bench.train import TrainConfig

        assert cell.model is not None
        sections = cell.model.train_sections(self.config.train)
        runtime = sections.get("runtime", {})
        if self.device is not None and isinstance(runtime, dict):  # anything else is reported by validation
            sections["runtime"] = {**runtime, "device": self.device}
        tracking = sections.get("tracking", {})
        if isinstance(tracking, dict):  # as for runtime
            named = tracking.get("loggers") or []
            loggers = list(dict.fromkeys([*named, *self.loggers])) if isinstance(named, (list, tuple)) else named
            sections["tracking"] = {"run_name": cell.label(), **tracking, "loggers": loggers}
        data = {
            **sections,
            "seed": cell.seed,
            "dataset": self.dataset_section(cell.experiment),
            "model": {"name": cell.model.name, "options": dict(cell.model.options)},
        }
        return TrainConfig.from_dict(data, source=f"the train sections of cell {cell.label()}")

    def compute(self, cell: Cell) -> None:
        if cell.model is None:
            self.evaluate_baselines(cell)
            return
        from vision_bench.evaluation import evaluate_run
        from vision_bench.train import train

        if is_file_reference(cell.experiment):
            self.export(cell.experiment)
        folder = make_run_dir(self.out_dir, cell)
        train_config = self.train_config(cell)
        resume = (folder / "checkpoints" / "last.pt").is_file()
        train(train_config, folder, resume=resume, progress=self.progress)
        evaluation = self.config.evaluate
        logger.info("evaluating %s on %s", _short_label(cell), ", ".join(evaluation.splits))
        if is_rollout_experiment(cell.experiment) and not (folder / ROLLOUT_DIR / ROLLOUT_FILE).is_file():
            roll_out_run(folder, out_dir=folder, checkpoint=evaluation.checkpoint, splits=evaluation.splits,
                         n_test=self.config.data.n_test, device=train_config.runtime.device,
                         batch_size=evaluation.batch_size, sheet_samples=evaluation.sheet_samples)
        evaluate_run(
            folder, checkpoint=evaluation.checkpoint, splits=evaluation.splits, n_test=self.config.data.n_test,
            baselines=(), device=train_config.runtime.device, batch_size=evaluation.batch_size,
            sheet_samples=evaluation.sheet_samples, progress=self.progress, trust_stored_data=self.trust_stored_data,
        )

    def evaluate_baselines(self, cell: Cell) -> None:
        from vision_bench.evaluation import build_baselines, evaluate_predictors, export_data, pick_device, study_data

        data, splits = self.config.data, tuple(self.config.evaluate.splits)
        if is_file_reference(cell.experiment):
            evaluation_data = export_data(self.export(cell.experiment), self.spec, splits)
        else:
            evaluation_data = study_data(cell.experiment, self.spec, splits, n_train=data.n_train,
                                         n_val=data.n_val, n_test=data.n_test)
        device = pick_device(self.baseline_device())
        batch_size = self.config.evaluate.batch_size
        folder = make_run_dir(self.out_dir, cell)
        if is_rollout_experiment(cell.experiment) and not (folder / ROLLOUT_DIR / ROLLOUT_FILE).is_file():
            roll_out_baselines(folder, cell.experiment, self.config.baselines, self.spec, splits=splits,
                               n_train=data.n_train, n_val=data.n_val, n_test=data.n_test,
                               device=self.baseline_device(), batch_size=batch_size,
                               sheet_samples=self.config.evaluate.sheet_samples)
        models, notes = build_baselines(self.config.baselines, evaluation_data, device, batch_size)
        evaluation_data.notes.extend(notes)
        evaluate_predictors(
            models, evaluation_data, output_folder(folder, OUTPUT_DIR), device=device, batch_size=batch_size,
            sheet_samples=self.config.evaluate.sheet_samples, extra={"experiment": cell.experiment},
            progress=self.progress,
        )

    def results(self, cell: Cell) -> list[CellResult]:
        """The evaluated numbers of a finished cell (one per predictor)."""
        folder = run_dir(self.out_dir, cell)
        metrics = read_metrics(folder / OUTPUT_DIR)
        status = dict(metrics.get("status", {}))

        def result(predictor: str, splits: Mapping[str, Any], *, model: str | None = None) -> CellResult:
            return CellResult(predictor, cell.experiment, setting_of(cell.experiment),
                              seed=None if model is None else cell.seed, baseline=model is None,
                              splits=_split_means(splits), run_dir=folder, alpha=alpha_of(cell.experiment),
                              status=status, model=model)

        if cell.model is not None:
            return [result(cell.model.display, metrics.get("splits", {}), model=cell.model.name)]
        return [result(name, entry["splits"]) for name, entry in metrics.get("baselines", {}).items()]


def _split_means(splits: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    return {
        split: {name: float("nan") if value is None else float(value) for name, value in entry["metrics"].items()}
        for split, entry in splits.items()
    }


def load_bench_config(config: BenchConfig | Mapping[str, Any] | str | os.PathLike[str]) -> BenchConfig:
    if isinstance(config, BenchConfig):
        return config
    if isinstance(config, Mapping):
        return BenchConfig.from_dict(dict(config))
    return BenchConfig.from_yaml(config)


def run_bench(
    config: BenchConfig | Mapping[str, Any] | str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    progress: bool = True,
    *,
    device: str | None = None,
    num_shards: int = 1,
    shard_index: int = 0,
    collect_only: bool = False,
    trust_stored_data: bool = False,
    loggers: Sequence[str] = (),
) -> BenchResult:
    """Compute the unfinished cells (all, or one shard's), then write the report and results unless this is
    one shard of several; `collect_only` computes nothing and refuses while cells are missing;
    `trust_stored_data` lets cells already in OUT be evaluated on a command or URL their checkpoint names
    (`evaluate_run`); `loggers`: experiment trackers added to every cell's `train.tracking.loggers`. See the
    module docstring."""
    config = load_bench_config(config)
    check_shard(num_shards, shard_index)
    if collect_only and num_shards > 1:
        raise ConfigError("--collect-only gathers the cells of every shard; drop --num-shards and --shard-index")
    out_dir = Path(out_dir).resolve()  # figures are linked relative to the report, whatever the cwd
    if collect_only and not (out_dir / BENCH_FILE).is_file():
        raise ConfigError(f"{out_dir} holds no bench ({BENCH_FILE} is missing); run the bench or its shards first")
    bench = _Bench(config, out_dir, progress, device, trust_stored_data, loggers)
    check_layout(config, bench.experiments, bench.spec)
    check_selection(config, bench.experiments)
    check_gate(config.gate, config.evaluate.splits, {
        experiment: family_metric_status(task_config(experiment, config.data)) for experiment in bench.experiments})
    plan = plan_cells(config, bench.experiments)
    bench.check(plan)
    resolved = bench.resolved()
    _check_out_dir(out_dir, resolved, sharded=num_shards > 1)
    if collect_only:
        return _collect(bench, plan, computed=[], skipped=[cell.label() for cell in plan])
    output_folder(out_dir)
    _publish_bench_file(out_dir, resolved, sharded=num_shards > 1)
    mine = shard_cells(plan, num_shards, shard_index)
    if num_shards > 1:
        logger.info("shard %d of %d: %d of the bench's %d cells", shard_index, num_shards, len(mine), len(plan))
    computed, skipped, busy = [], [], []
    with messages_above_progress_bar(progress):  # a cell's epoch lines print above the bars, not inside them
        cells_bar = tqdm(mine, desc="bench", unit="cell", disable=not progress)
        for position, cell in enumerate(cells_bar, start=1):
            cells_bar.set_postfix_str(cell.label(), refresh=False)  # the cell the nested bars below belong to
            if is_finished(out_dir, cell):
                skipped.append(cell.label())
                continue
            with exclusive(lock_path(out_dir, cell)) as mine_now:
                if not mine_now:  # another process (a shard, a second command) is computing it right now
                    logger.warning("cell %d of %d: %s: skipped, another process is computing it (it holds %s)",
                                   position, len(mine), _short_label(cell), lock_path(out_dir, cell))
                    busy.append(cell.label())
                    continue
                if is_finished(out_dir, cell):  # finished by another process since the check above
                    skipped.append(cell.label())
                    continue
                logger.info("cell %d of %d: %s", position, len(mine), _short_label(cell))
                bench.compute(cell)
                computed.append(cell.label())
    if num_shards == 1:
        return _collect(bench, plan, computed=computed, skipped=skipped, busy=busy)
    cells = [result for cell in mine if is_finished(out_dir, cell) for result in bench.results(cell)]
    pending = [cell.label() for cell in plan if not is_finished(out_dir, cell)]
    return BenchResult(out_dir, config, cells, computed, skipped, pending, shard=(shard_index, num_shards))


def _short_label(cell: Cell) -> str:
    """The cell's label with the experiment's folder name in place of a task file's whole path."""
    who = cell.model.display if cell.model else "baselines"
    return f"{who} / {experiment_dir(cell.experiment)}" + (f" / seed {cell.seed}" if cell.seed is not None else "")


def _collect(bench: _Bench, plan: Sequence[Cell], *, computed: list[str], skipped: list[str],
             busy: Sequence[str] = ()) -> BenchResult:
    """Read every cell, write the report, results.csv and results.json; refuse while a cell is unfinished (`busy`:
    cells this run skipped because another process is computing them)."""
    out_dir = bench.out_dir
    missing = [cell.label() for cell in plan if not is_finished(out_dir, cell)]
    if missing:
        named = "; ".join(missing[:MISSING_NAMED]) + (f"; and {len(missing) - MISSING_NAMED} more"
                                                       if len(missing) > MISSING_NAMED else "")
        advice = ("another process is computing them: run this command again once it has finished" if busy else
                  "wait for the shards that compute them (or re-run those shards), or drop --collect-only to compute "
                  "them here")
        raise ConfigError(f"{len(missing)} of {len(plan)} cells are not finished ({named}); {advice}")
    cells = [result for cell in plan for result in bench.results(cell)]
    logger.info("writing the report, results.csv and results.json of %d cells into %s", len(plan), out_dir)
    report_md, report_html = write_report(build_report(bench.config, cells, out_dir), out_dir)
    write_rollout_report(out_dir, [(cell.experiment, cell.model.display if cell.model else None,
                                    run_dir(out_dir, cell)) for cell in plan])
    results_csv, results_json = write_results(cells, out_dir, bench_name=bench.config.name,
                                              bench_file=out_dir / BENCH_FILE, gate=bench.config.gate)
    return BenchResult(out_dir, bench.config, cells, computed, skipped, report_md=report_md, report_html=report_html,
                       results_csv=results_csv, results_json=results_json)


EXTENSIBLE = ("experiments", "models", "seeds", "baselines")
"""Lists a resumed bench may grow: its earlier cells stay valid."""


def _check_out_dir(out_dir: Path, resolved: str, *, sharded: bool = False) -> None:
    """Refuse a folder that holds another bench or other results. The same bench resumes, also when it
    adds experiments, models, seeds or baselines, or when a newer version writes more default keys;
    shards must run exactly the bench in the folder, since each deals the cells of its own plan."""
    existing = out_dir / BENCH_FILE
    if existing.is_file():
        try:
            before = yaml.safe_load(existing.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError:
            before = None
        now = yaml.safe_load(resolved)
        if isinstance(before, dict):
            _check_fingerprints(out_dir, before.get(FINGERPRINTS), now.get(FINGERPRINTS, {}))
        differing = None if not isinstance(before, dict) else sorted(
            key for key in set(before) & set(now)
            if key not in (*EXTENSIBLE, FINGERPRINTS) and before[key] != now[key]
        ) + [key for key in EXTENSIBLE if key in before and key in now and not _kept(before[key], now[key])
             and not (key == "models" and _models_kept(before, now))]
        if differing is None or differing:
            detail = f" (it differs in {', '.join(differing)})" if differing else ""
            raise ConfigError(
                f"{out_dir} holds another bench{detail}; use another --out, or delete the folder to start over"
            )
        if sharded and before != now:
            raise ConfigError(
                f"{out_dir} holds this bench with other experiments, models, seeds or baselines, and shards deal "
                "cells by their place in the plan; run the plain command once to grow the bench, then the shards"
            )
    elif any((out_dir / name).exists() for name in ("runs", "baselines", "report.md")):
        raise ConfigError(f"{out_dir} holds results but no {BENCH_FILE}; use another --out or delete the folder")


def _publish_bench_file(out_dir: Path, resolved: str, *, sharded: bool) -> None:
    """Write OUT/bench.yaml, or keep the one there. Shards starting together race for it: the file is
    created only where none exists (a complete file, linked into place), and a shard that loses checks
    the winner's like any existing one. The same bench grown (or written by an earlier version) is
    rewritten."""
    path = out_dir / BENCH_FILE
    if not path.is_file():
        try:
            _create_once(path, resolved)
            return
        except FileExistsError:
            _check_out_dir(out_dir, resolved, sharded=sharded)  # another shard wrote it first: the same bench?
    if path.read_text(encoding="utf-8") != resolved:
        atomic_write_text(path, resolved)


def _create_once(path: Path, text: str) -> None:
    """Create `path` holding `text`, complete or not at all; `FileExistsError` when it already exists."""
    temp = temp_path_for(path)
    with open(temp, "x", encoding="utf-8") as handle:  # "x": a new file, never through a link
        handle.write(text)
    try:
        os.link(temp, path)
    except FileExistsError:
        raise
    except OSError:  # a file system without hard links: renamed instead (a racing shard may replace it)
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


def _check_fingerprints(out_dir: Path, before: Mapping[str, str] | None, now: dict[str, str]) -> None:
    """Refuse results computed on other data than the experiments now generate."""
    if before is None and any((out_dir / "runs").glob("**/" + METRICS_FILE)):
        raise ConfigError(
            f"{out_dir} holds results of an earlier vision-bench that did not record which data they were computed "
            "on, and the study presets have changed since (see docs/fidelity.md); use another --out, or delete the "
            "folder to start over"
        )
    changed = sorted(name for name, value in (before or {}).items() if name in now and now[name] != value)
    if changed:
        raise ConfigError(
            f"{out_dir} holds results computed on other data than {', '.join(changed)} generates now (the study or "
            "the generator changed); use another --out, or delete the folder to start over"
        )


def _kept(before: object, now: object) -> bool:
    """Every entry of the earlier list is still in the new one (it may have grown)."""
    if not (isinstance(before, list) and isinstance(now, list)):
        return before == now
    return all(entry in now for entry in before)


def _models_kept(before: dict[str, Any], now: dict[str, Any]) -> bool:
    """Every earlier model entry is still there, the same but for its own `seeds`, which may only grow (an entry
    without them ran the bench's seeds)."""
    old_models, new_models = before.get("models"), now.get("models")
    if not (isinstance(old_models, list) and isinstance(new_models, list)):
        return False

    def seeds(entry: dict[str, Any], bench: dict[str, Any]) -> set[Any]:
        return set(entry.get("seeds") or bench.get("seeds") or [])

    def same(old: object, new: object) -> bool:
        if not (isinstance(old, dict) and isinstance(new, dict)):
            return old == new
        rest = {k: v for k, v in old.items() if k != "seeds"} == {k: v for k, v in new.items() if k != "seeds"}
        return rest and seeds(old, before) <= seeds(new, now)

    return all(any(same(old, new) for new in new_models) for old in old_models)


def summary_table(result: BenchResult) -> str:
    """Plain text: per model (and baseline) the ID and OOD GA, MSE, SSIM and LPIPS over all cells, and
    one line per metric that shows n/a saying why; with a gate, over the runs that passed it."""
    id_split, ood_split = id_ood(result.config.evaluate.splits)
    gate = result.config.gate
    cells, failed = gated(result.cells, gate)
    table = terminal_summary(cells, listed_in("bench"), id_split=id_split, ood_split=ood_split)
    if gate is None:
        return table
    trained = sum(not cell.baseline for cell in result.cells)
    return (f"{table}\ngate ({gate.describe()}): {trained - len(failed)} of {trained} trained runs passed; "
            "the means above count only those")
