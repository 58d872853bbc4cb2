"""COGITAO's Table 3 merged from bench folders (`vision-bench regimes`), on hand-made benches with hand-computed values.

Two benches of one model on `compgen/C1/1`, regimes 100 samples x 2 epochs and 400 x 1:
- 100 x 2: seeds 0, 1, 2 with test_id GA 90, 80, 50 and test_ood GA 10, 20, 0; seed 2 failed the gate, so the row
  is "2 of 3" with ID 85 +- 5 and OOD 15 +- 5. PPA is missing from the results: its columns read "—".
- 400 x 1: one ungated seed, ID GA 99, OOD GA 1, stubbornness 70, and an empty (unavailable) PPA.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vision_bench.bench.regimes import regime_rows, regime_table, regimes_csv
from vision_bench.cli import main

MODEL = "CNN"
HEADER = "model,study,experiment,seed,split,metric,value,baseline,gate\n"


def make_bench(folder: Path, n_train: int, epochs: int, rows: list[tuple[int, str, str, float | str, str]],
               splits: tuple[str, ...] = ("test_id", "test_ood")) -> Path:
    """A finished bench folder: bench.yaml as a bench writes it (data fingerprints included) and results.csv."""
    folder.mkdir(parents=True)
    config = {"name": folder.name, "experiments": ["compgen/C1/1"],
              "models": [{"name": "unet:test_resnet", "label": MODEL}], "seeds": [0, 1, 2],
              "baselines": ["copy_input"], "data": {"n_train": n_train, "n_val": 10, "n_test": 10},
              "train": {"training": {"epochs": epochs}}, "evaluate": {"splits": list(splits)},
              "data_fingerprints": {"compgen/C1/1": "0" * 16}}
    (folder / "bench.yaml").write_text(yaml.safe_dump(config))
    lines = [f"{MODEL},compgen/C1,compgen/C1/1,{seed},{split},{metric},{value},false,{gate}\n"
             for seed, split, metric, value, gate in rows]
    lines.append("copy_input,compgen/C1,compgen/C1/1,,test_ood,grid_accuracy,0.0,true,\n")
    (folder / "results.csv").write_text(HEADER + "".join(lines))
    return folder


def two_benches(root: Path) -> list[Path]:
    gated = [(0, "test_id", "grid_accuracy", 90.0, "passed"), (0, "test_ood", "grid_accuracy", 10.0, "passed"),
             (1, "test_id", "grid_accuracy", 80.0, "passed"), (1, "test_ood", "grid_accuracy", 20.0, "passed"),
             (2, "test_id", "grid_accuracy", 50.0, "failed"), (2, "test_ood", "grid_accuracy", 0.0, "failed")]
    plain: list[tuple[int, str, str, float | str, str]] = [
        (0, "test_id", "grid_accuracy", 99.0, ""), (0, "test_ood", "grid_accuracy", 1.0, ""),
        (0, "test_ood", "stubbornness", 70.0, ""),
        (0, "test_id", "paper_ppa", "", "")]  # results.csv leaves an unavailable value empty
    return [make_bench(root / "big", 400, 1, plain), make_bench(root / "small", 100, 2, gated)]


def test_rows_merge_benches_by_regime_and_count_only_passed_runs(tmp_path: Path) -> None:
    rows = regime_rows(two_benches(tmp_path))
    assert [(r.samples, r.length, r.passed, r.runs) for r in rows] == [(100, "2 epochs", 2, 3), (400, "1 epoch", 1, 1)]
    small, big = rows
    ga_id, ga_ood = small.values[0], small.values[1]
    assert ga_id is not None and (ga_id.mean, ga_id.sem) == pytest.approx((85.0, 5.0))
    assert ga_ood is not None and (ga_ood.mean, ga_ood.sem) == pytest.approx((15.0, 5.0))
    assert small.values[2] is None and small.values[6] is None  # PPA and stubbornness: not in the results
    stubborn = big.values[6]
    assert stubborn is not None and stubborn.mean == 70.0
    assert big.values[2] is None  # the empty PPA is no value, not a crash
    table = regime_table(rows)
    assert table.rows[0][:7] == ["compgen/C1/1", MODEL, "100", "2 epochs", "2 of 3", "85.0 ± 5.0", "15.0 ± 5.0"]
    assert table.rows[0][7] == "—" and table.rows[1][4] == "1"
    csv_lines = regimes_csv(rows).splitlines()
    assert csv_lines[0].startswith("experiment,model,samples,length,passed,runs,grid_accuracy_id,grid_accuracy_id_sem")
    assert csv_lines[1].startswith("compgen/C1/1,CNN,100,2 epochs,2,3,85.0,5.0,15.0,5.0,,,")
    assert csv_lines[2].startswith("compgen/C1/1,CNN,400,1 epoch,1,1,99.0,,1.0,,")  # one seed: no SEM


def test_the_command_writes_the_table_and_refuses_bad_folders_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    benches = two_benches(tmp_path)
    out = tmp_path / "table3"
    assert main(["regimes", *map(str, benches), "--out", str(out)]) == 0
    assert "| compgen/C1/1 | CNN | 100 | 2 epochs | 2 of 3 | 85.0 ± 5.0 |" in (out / "regimes.md").read_text()
    assert (out / "regimes.csv").is_file()
    capsys.readouterr()
    no_ood = make_bench(tmp_path / "id_only", 100, 1, [(0, "test_id", "grid_accuracy", 90.0, "")], ("test_id",))
    broken = make_bench(tmp_path / "broken", 100, 1, [])
    (broken / "bench.yaml").write_text("models: [unclosed\n")
    for argv, says in ((["regimes", str(tmp_path / "missing"), "--out", str(tmp_path / "o1")], "is not a folder"),
                       (["regimes", str(out), "--out", str(tmp_path / "o2")], "is not a bench folder"),
                       (["regimes", str(no_ood), "--out", str(tmp_path / "o3")], "evaluates no OOD split"),
                       (["regimes", str(broken), "--out", str(tmp_path / "o4")], "is not a bench config")):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert not Path(argv[-1]).exists()  # refused before anything was written


def test_a_task_file_experiment_is_matched_by_the_name_results_csv_gives_it(tmp_path: Path) -> None:
    """bench.yaml keeps a task file's path, results.csv its stem (`experiment_name`): the row must find its runs."""
    bench = make_bench(tmp_path / "custom", 100, 1, [])
    config = yaml.safe_load((bench / "bench.yaml").read_text())
    (bench / "bench.yaml").write_text(yaml.safe_dump({**config, "experiments": ["tasks/my_task.yaml"]}))
    (bench / "results.csv").write_text(HEADER + f"{MODEL},my_task,my_task,0,test_id,grid_accuracy,75.0,false,\n")
    (row,) = regime_rows([bench])
    assert (row.experiment, row.runs) == ("my_task", 1)
    assert row.values[0] is not None and row.values[0].mean == 75.0
