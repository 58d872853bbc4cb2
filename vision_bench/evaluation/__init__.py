"""Evaluation of trained runs and baselines: metrics per split and per sample, and sample sheets.

    from vision_bench.evaluation import evaluate_run
    result = evaluate_run("runs/smoke", checkpoint="best", splits=("test_id", "test_ood"))
    result.metrics["splits"]["test_ood"]["metrics"]["grid_accuracy"]
"""

from vision_bench.evaluation.core import SplitEvaluation, evaluate_split
from vision_bench.evaluation.data import EvaluationData, export_data, study_data
from vision_bench.evaluation.outputs import read_metrics, read_samples
from vision_bench.evaluation.run import (
    BASELINES,
    EvaluationResult,
    build_baselines,
    check_baselines,
    evaluate_predictors,
    evaluate_run,
    pick_device,
)

__all__ = [
    "BASELINES",
    "EvaluationData",
    "EvaluationResult",
    "SplitEvaluation",
    "build_baselines",
    "check_baselines",
    "evaluate_predictors",
    "evaluate_run",
    "evaluate_split",
    "export_data",
    "pick_device",
    "read_metrics",
    "read_samples",
    "study_data",
]
