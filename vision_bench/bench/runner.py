"""`run_bench`: train and evaluate every cell of a `BenchConfig`, then write the report.

    OUT/bench.yaml                          the config, as resolved
    OUT/runs/EXPERIMENT/MODEL/seedS/        one training run per cell, evaluated in .../evaluation/
    OUT/baselines/EXPERIMENT/evaluation/    the baselines of each experiment (seed-independent)
    OUT/report.md, OUT/report.html          tables, plots (OUT/plots/) and sheets (OUT/sheets/)

A cell is finished when its evaluation metrics.json exists; re-running skips finished cells and
resumes interrupted training from its last checkpoint, so a killed bench continues where it was.
Experiments given as task-config YAML files are exported once to OUT/data/NAME (grids format)
and trained from there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from tqdm import tqdm

from vision_bench.bench.aggregate import CellResult
from vision_bench.bench.config import (
    BenchConfig,
    ModelEntry,
    alpha_of,
    check_layout,
    resolve_experiments,
    setting_of,
    task_config,
)
from vision_bench.bench.fingerprints import data_fingerprint
from vision_bench.bench.report import write_report
from vision_bench.bench.summary import build_report
from vision_bench.bench.tables import summary_rows, text_table
from vision_bench.data.atomic import atomic_write_text
from vision_bench.errors import ConfigError
from vision_bench.evaluation.outputs import METRICS_FILE, read_metrics, safe_name
from vision_bench.evaluation.run import OUTPUT_DIR

SUMMARY_METRICS = ("grid_accuracy", "mse", "ssim", "lpips")


@dataclass
class BenchResult:
    """Every evaluated cell, the report files, and which cells this call computed or skipped."""

    out_dir: Path
    config: BenchConfig
    cells: list[CellResult]
    report_md: Path
    report_html: Path
    computed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Cell:
    experiment: str
    model: ModelEntry | None
    seed: int | None

    def label(self) -> str:
        who = self.model.display if self.model else "baselines"
        return f"{who} / {self.experiment}" + (f" / seed {self.seed}" if self.seed is not None else "")

BENCH_FILE = "bench.yaml"
PROBE_STUDY = "envgen/G1/1"
"""Any study: model checks need a dataset section, and the models do not depend on which."""


def _experiment_dir(experiment: str) -> str:
    return safe_name(Path(experiment).stem if experiment.endswith((".yaml", ".yml")) else experiment)


def _known_studies() -> list[str]:
    from vision_bench.tasks.studies import STUDIES

    return STUDIES.names()


class _Bench:
    def __init__(self, config: BenchConfig, out_dir: Path, progress: bool) -> None:
        self.config = config
        self.out_dir = out_dir
        self.progress = progress
        studies = [e for e in config.experiments if not e.endswith((".yaml", ".yml"))]
        self.experiments = resolve_experiments(config.experiments, _known_studies() if studies else [])
        self._spec: Any = None

    @property
    def spec(self) -> Any:
        if self._spec is None:
            from render.spec import RenderSpec

            try:
                self._spec = RenderSpec.from_dict(self.config.data.spec)
            except ValueError as error:
                raise ConfigError(f"data.spec: {error}") from None
        return self._spec

    def check_models(self) -> None:
        """Every model's train config, and the model itself built on the meta device (no memory, no
        weights), before anything runs or is written: a bad name or option fails at once, not when
        its cell starts."""
        import torch

        from vision_bench.train import TrainConfig
        from vision_bench.train.components import build_model

        for model in self.config.models:
            data = {
                **model.train_sections(self.config.train),
                "seed": self.config.seeds[0],
                "dataset": {"study": PROBE_STUDY, "spec": self.spec.to_dict()},
                "model": {"name": model.name, "options": dict(model.options)},
            }
            train_config = TrainConfig.from_dict(data, source=f"bench model {model.display}")
            if "pretrained_file" not in model.options:  # a weights file is read when its cell starts
                with torch.device("meta"):
                    build_model(train_config, self.spec)

    def run_dir(self, cell: _Cell) -> Path:
        if cell.model is None:
            return self.out_dir / "baselines" / _experiment_dir(cell.experiment)
        experiment_dir = self.out_dir / "runs" / _experiment_dir(cell.experiment)
        return experiment_dir / safe_name(cell.model.display) / f"seed{cell.seed}"

    def cells(self) -> list[_Cell]:
        cells = [_Cell(e, m, s) for e in self.experiments for m in self.config.models for s in self.config.seeds]
        if self.config.baselines:
            cells += [_Cell(e, None, None) for e in self.experiments]
        return cells

    def dataset_section(self, experiment: str) -> dict[str, Any]:
        """The `dataset` section of a cell's TrainConfig: the study on the fly, or its export."""
        spec = self.spec.to_dict()
        if experiment.endswith((".yaml", ".yml")):
            return {"path": str(self.export(experiment)), "spec": spec}
        return {"study": experiment, "n_train": self.config.data.n_train, "n_val": self.config.data.n_val, "spec": spec}

    def export(self, experiment: str) -> Path:
        from vision_bench.data.export import ExportOptions, export_dataset
        from vision_bench.data.sources import load_config

        data = self.config.data
        task_config = load_config(None, experiment, n_train=data.n_train, n_val=data.n_val, n_test=data.n_test)
        root = self.out_dir / "data" / _experiment_dir(experiment)
        export_dataset(task_config, self.spec, root, ExportOptions(format="grids"))
        return root

    def train_config(self, cell: _Cell) -> Any:
        from vision_bench.train import TrainConfig

        assert cell.model is not None
        data = {
            **cell.model.train_sections(self.config.train),
            "seed": cell.seed,
            "dataset": self.dataset_section(cell.experiment),
            "model": {"name": cell.model.name, "options": dict(cell.model.options)},
        }
        return TrainConfig.from_dict(data, source=f"bench cell {cell.label()}")

    def compute(self, cell: _Cell) -> None:
        if cell.model is None:
            self.evaluate_baselines(cell)
            return
        from vision_bench.evaluation import evaluate_run
        from vision_bench.train import train

        run_dir = self.run_dir(cell)
        resume = (run_dir / "checkpoints" / "last.pt").is_file()
        train(self.train_config(cell), run_dir, resume=resume, progress=self.progress)
        evaluation = self.config.evaluate
        evaluate_run(
            run_dir, checkpoint=evaluation.checkpoint, splits=evaluation.splits, n_test=self.config.data.n_test,
            baselines=(), batch_size=evaluation.batch_size, sheet_samples=evaluation.sheet_samples,
            progress=self.progress,
        )

    def evaluate_baselines(self, cell: _Cell) -> None:
        from vision_bench.evaluation import build_baselines, evaluate_predictors, export_data, pick_device, study_data

        data, splits = self.config.data, tuple(self.config.evaluate.splits)
        if cell.experiment.endswith((".yaml", ".yml")):
            evaluation_data = export_data(self.export(cell.experiment), self.spec, splits)
        else:
            evaluation_data = study_data(cell.experiment, self.spec, splits, n_train=data.n_train,
                                         n_val=data.n_val, n_test=data.n_test)
        device = pick_device()
        batch_size = self.config.evaluate.batch_size
        models, notes = build_baselines(self.config.baselines, evaluation_data, device, batch_size)
        evaluation_data.notes.extend(notes)
        evaluate_predictors(
            models, evaluation_data, self.run_dir(cell) / OUTPUT_DIR, device=device, batch_size=batch_size,
            sheet_samples=self.config.evaluate.sheet_samples, extra={"experiment": cell.experiment},
            progress=self.progress,
        )

    def results(self, cell: _Cell) -> list[CellResult]:
        """The evaluated numbers of a finished cell (one per predictor)."""
        run_dir = self.run_dir(cell)
        metrics = read_metrics(run_dir / OUTPUT_DIR)
        common = {"experiment": cell.experiment, "setting": setting_of(cell.experiment),
                  "alpha": alpha_of(cell.experiment), "status": dict(metrics.get("status", {}))}
        if cell.model is not None:
            return [CellResult(cell.model.display, seed=cell.seed, baseline=False, run_dir=run_dir, model=cell.model.name,
                               splits=_split_means(metrics.get("splits", {})), **common)]
        return [
            CellResult(name, seed=None, baseline=True, run_dir=run_dir, splits=_split_means(entry["splits"]), **common)
            for name, entry in metrics.get("baselines", {}).items()
        ]


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
) -> BenchResult:
    """Train and evaluate every unfinished cell, then (re)write the report; see the module docstring."""
    config = load_bench_config(config)
    out_dir = Path(out_dir).resolve()  # figures are linked relative to the report, whatever the cwd
    bench = _Bench(config, out_dir, progress)
    check_layout(config, bench.experiments, bench.spec)
    bench.check_models()
    fingerprints = {experiment: data_fingerprint(task_config(experiment, config.data))
                    for experiment in bench.experiments}
    resolved = yaml.safe_dump({**config.to_dict(), "experiments": bench.experiments, FINGERPRINTS: fingerprints},
                              sort_keys=False)
    _check_out_dir(out_dir, resolved)
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out_dir / BENCH_FILE, resolved)
    computed, skipped, cells = [], [], []
    plan = bench.cells()
    for cell in tqdm(plan, desc="bench", unit="cell", disable=not progress):
        if (bench.run_dir(cell) / OUTPUT_DIR / METRICS_FILE).is_file():
            skipped.append(cell.label())
        else:
            bench.compute(cell)
            computed.append(cell.label())
        cells.extend(bench.results(cell))
    report_md, report_html = write_report(build_report(config, cells, out_dir), out_dir)
    return BenchResult(out_dir, config, cells, report_md, report_html, computed, skipped)


EXTENSIBLE = ("experiments", "models", "seeds", "baselines")
"""Lists a resumed bench may grow: its earlier cells stay valid."""
FINGERPRINTS = "data_fingerprints"
"""Key of bench.yaml holding each experiment's `data_fingerprint`: results computed on other data are refused."""


def _check_out_dir(out_dir: Path, resolved: str) -> None:
    """Refuse a folder that holds another bench or other results. The same bench resumes, also when it
    adds experiments, models, seeds or baselines, or when a newer version writes more default keys."""
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
        ) + [key for key in EXTENSIBLE if key in before and key in now and not _kept(before[key], now[key])]
        if differing is None or differing:
            detail = f" (it differs in {', '.join(differing)})" if differing else ""
            raise ConfigError(
                f"{out_dir} holds another bench{detail}; use another --out, or delete the folder to start over"
            )
    elif any((out_dir / name).exists() for name in ("runs", "baselines", "report.md")):
        raise ConfigError(f"{out_dir} holds results but no {BENCH_FILE}; use another --out or delete the folder")


def _check_fingerprints(out_dir: Path, before: object, now: dict[str, str]) -> None:
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


def summary_table(result: BenchResult) -> str:
    """Plain text: per model (and baseline) the ID and OOD GA, MSE, SSIM and LPIPS over all cells."""
    splits = result.config.evaluate.splits
    id_split = next((s for s in splits if s.endswith("_id")), splits[0])
    ood_split = next((s for s in splits if s.endswith("_ood")), splits[-1])
    header, rows = summary_rows(result.cells, SUMMARY_METRICS, id_split=id_split, ood_split=ood_split)
    return text_table(header, rows)
