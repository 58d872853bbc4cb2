"""A gate stated in the bench config: failed runs are counted, listed and left out of every table."""

from __future__ import annotations

from pathlib import Path

import pytest

from vision_bench.bench.aggregate import CellResult
from vision_bench.bench.config import BenchConfig, setting_of
from vision_bench.bench.gate import Gate, gate_table, gated
from vision_bench.bench.report import Paragraph, Table
from vision_bench.bench.results import result_rows
from vision_bench.bench.summary import build_report
from vision_bench.errors import ConfigError

EXPERIMENT = "alpha/translate_up/0.2"
GATE = {"metric": "grid_accuracy", "split": "test_id", "at_least": 95}


def _cell(seed: int | None, id_ga: float, ood_ga: float, predictor: str = "cnn") -> CellResult:
    return CellResult(predictor, EXPERIMENT, setting_of(EXPERIMENT), seed, seed is None,
                      {"test_id": {"grid_accuracy": id_ga}, "test_ood": {"grid_accuracy": ood_ga}}, alpha=0.2)


CELLS = [_cell(0, 99.0, 40.0), _cell(1, 30.0, 5.0), _cell(2, 97.0, 60.0), _cell(None, 0.0, 0.0, "copy_input")]


def test_a_gate_passes_runs_within_its_bound_and_every_baseline() -> None:
    gate = Gate.from_dict(GATE)
    assert [gate.passes(c) for c in CELLS] == [True, False, True, True]
    assert Gate.from_dict({**GATE, "at_least": None, "at_most": 50}).passes(CELLS[1])
    missing = CellResult("cnn", EXPERIMENT, "s", 3, False, {"test_ood": {"grid_accuracy": 90.0}})
    assert not gate.passes(missing)  # no value on the gated split: not passed
    kept, failed = gated(CELLS, gate)
    assert failed == [CELLS[1]] and kept == [CELLS[0], CELLS[2], CELLS[3]]
    assert gate_table(CELLS, gate).rows == [["cnn", setting_of(EXPERIMENT), "2 of 3 passed"]]


def test_the_report_lists_failed_runs_and_averages_only_the_passed(tmp_path: Path) -> None:
    config = BenchConfig.from_dict({"experiments": [EXPERIMENT], "models": ["unet:test_resnet"], "baselines": [],
                                    "gate": GATE, "verdict": "OOD GA of passed runs above copy_input's"})
    report = build_report(config, CELLS, tmp_path)
    texts = [b.text for b in report.blocks if isinstance(b, Paragraph)]
    assert "Verdict rule: OOD GA of passed runs above copy_input's" in texts
    assert any("cnn, alpha/translate_up/0.2, seed 1: grid_accuracy on test_id = 30" in t for t in texts)
    tables = [b for b in report.blocks if isinstance(b, Table)]
    assert tables[0].rows == [["cnn", setting_of(EXPERIMENT), "2 of 3 passed"]]
    results = next(t for t in tables if t.title.startswith("GA: grid accuracy"))
    assert "Runs that failed the gate" in " ".join(texts)
    assert results.rows[0][1:3] == ["98.0 ± 1.0", "50.0 ± 10.0"]  # seeds 0 and 2; seed 1 left out


def test_results_rows_say_which_runs_passed() -> None:
    rows = result_rows(CELLS, Gate.from_dict(GATE))
    verdicts = {(row["model"], row["seed"]): row["gate"] for row in rows}
    assert verdicts == {("cnn", 0): "passed", ("cnn", 1): "failed", ("cnn", 2): "passed", ("copy_input", None): None}
    assert {row["gate"] for row in result_rows(CELLS)} == {None}


@pytest.mark.parametrize("gate, needle", [
    ({"metric": "grid_accuracy", "at_least": 90, "at_most": 99}, "exactly one of at_least and at_most"),
    ({"metric": "grid_acuracy", "at_least": 90}, "unknown metric 'grid_acuracy'"),
])
def test_a_malformed_gate_is_one_line(gate: dict, needle: str) -> None:
    with pytest.raises(ConfigError) as caught:
        BenchConfig.from_dict({"experiments": [EXPERIMENT], "models": ["unet:test_resnet"], "gate": gate})
    assert needle in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("gate, needle", [
    ({"metric": "grid_accuracy", "split": "val_id", "at_least": 90}, "gate.split 'val_id' is not evaluated"),
    ({"metric": "factor_accuracy", "at_least": 90}, "gate.metric 'factor_accuracy' is unavailable: defined only for"),
])
def test_a_gate_no_run_could_pass_is_refused_before_any_work(gate: dict, needle: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    import yaml
    from cli_errors import cli_error

    bench = tmp_path / "bench.yaml"
    bench.write_text(yaml.safe_dump({"experiments": ["envgen/G1/1"], "models": ["unet:test_resnet"], "gate": gate}))
    cli_error(["bench", str(bench), "--out", str(tmp_path / "out"), "--no-progress"], capsys, needle)
    assert not (tmp_path / "out").exists()


def test_a_gate_bound_must_be_finite() -> None:
    with pytest.raises(ConfigError, match="finite"):
        Gate.from_dict({**GATE, "at_least": float("nan")})
