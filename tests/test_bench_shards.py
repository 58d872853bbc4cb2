"""A bench over many machines: shards of the cell list, a shared folder, the collect step, results.csv."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from vision_bench.bench.cells import plan_cells, shard_cells  # noqa: E402
from vision_bench.bench.config import BenchConfig  # noqa: E402
from vision_bench.errors import ConfigError  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# The cheapest bench that still trains: one experiment, a U-Net of the tiny timm test ResNet, one
# step on four 32x32 samples, two seeds and one baseline: three cells.
TINY = {
    "name": "tiny",
    "experiments": ["envgen/G1/1"],
    "models": [{"name": "unet:test_resnet", "options": {"decoder_width": 4}}],
    "seeds": [0],
    "baselines": ["copy_input"],
    "data": {"n_train": 4, "n_val": 2, "n_test": 2, "spec": {"size": [32, 32]}},
    "train": {"training": {"batch_size": 2, "eval_batch_size": 2, "max_steps": 1, "log_every": 1},
              "schedule": {"warmup_steps": 0}},
    "evaluate": {"checkpoint": "last", "sheet_samples": 1, "batch_size": 2},
}
SEEDS = "seeds=[0, 1]"  # given with --set, as a user widens a study from the command line


def test_a_model_may_run_its_own_seeds() -> None:
    """A model entry's `seeds` replace the bench's for that model alone (a configuration that passed a gate on
    seed 0 gets seeds 1 and 2)."""
    config = BenchConfig.from_dict({**TINY, "models": ["unet:a", {"name": "vit:b", "seeds": [0, 1, 2]}],
                                    "seeds": [0]})
    plan = plan_cells(config, ["envgen/G1/1"])
    assert [cell.label() for cell in plan] == [
        "unet:a / envgen/G1/1 / seed 0", "vit:b / envgen/G1/1 / seed 0", "vit:b / envgen/G1/1 / seed 1",
        "vit:b / envgen/G1/1 / seed 2", "baselines / envgen/G1/1"]
    with pytest.raises(ConfigError, match="seeds"):
        BenchConfig.from_dict({**TINY, "models": [{"name": "vit:b", "seeds": [-1]}]})


def test_a_bench_resumes_when_a_model_gains_seeds(tmp_path) -> None:
    """bench.yaml written without per-model seeds (as every earlier bench) is the same bench; a model's own seeds
    may grow past the bench's, never shrink, and the rest of its entry must stay."""
    import yaml

    from vision_bench.bench.runner import _check_out_dir

    def resolved(*models: object, seeds: tuple[int, ...] = (0,)) -> str:
        return yaml.safe_dump(BenchConfig.from_dict({**TINY, "models": list(models), "seeds": list(seeds)}).to_dict(),
                              sort_keys=False)

    (tmp_path / "bench.yaml").write_text(resolved("unet:a", "vit:b"))
    assert "seeds" not in yaml.safe_load((tmp_path / "bench.yaml").read_text())["models"][0]
    _check_out_dir(tmp_path, resolved("unet:a", "vit:b"))
    _check_out_dir(tmp_path, resolved("unet:a", {"name": "vit:b", "seeds": [0, 1, 2]}))
    (tmp_path / "bench.yaml").write_text(resolved("unet:a", {"name": "vit:b", "seeds": [0, 1, 2]}))
    for changed in ({"name": "vit:b", "seeds": [0, 1]}, {"name": "vit:b", "seeds": [0, 1, 2], "label": "B"}):
        with pytest.raises(ConfigError, match=r"holds another bench \(it differs in models\)"):
            _check_out_dir(tmp_path, resolved("unet:a", changed))


def test_shard_k_of_n_takes_every_nth_cell_of_the_plan() -> None:
    config = BenchConfig.from_dict({**TINY, "models": ["unet:a", "vit:b"], "seeds": [0, 1, 2]})
    plan = plan_cells(config, ["envgen/G1/1", "envgen/G1/2"])
    assert len(plan) == 2 * 2 * 3 + 2  # experiments x models x seeds, then the baselines of each experiment
    labels = [cell.label() for cell in plan]
    assert labels[:4] == ["unet:a / envgen/G1/1 / seed 0", "unet:a / envgen/G1/1 / seed 1",
                          "unet:a / envgen/G1/1 / seed 2", "vit:b / envgen/G1/1 / seed 0"]
    assert labels[-2:] == ["baselines / envgen/G1/1", "baselines / envgen/G1/2"]
    shards = [shard_cells(plan, 3, k) for k in range(3)]
    assert [len(s) for s in shards] == [5, 5, 4]
    assert shards[1] == [plan[i] for i in (1, 4, 7, 10, 13)]
    assert sorted(labels.index(c.label()) for s in shards for c in s) == list(range(len(plan)))  # each once
    assert shard_cells(plan, 1, 0) == plan
    assert shard_cells(plan[:2], 5, 4) == []  # more shards than cells: the extra ones have nothing to do
    with pytest.raises(ConfigError, match=r"^--shard-index must be between 0 and 2 \(--num-shards 3\), got 3$"):
        shard_cells(plan, 3, 3)
    with pytest.raises(ConfigError, match="^--num-shards must be at least 1, got 0$"):
        shard_cells(plan, 0, 0)


def test_cli_refuses_half_a_shard_and_a_sharded_collect(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vision_bench.cli import main

    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["bench", str(config), "--out", str(out), "--num-shards", "2"]) == 2
    assert capsys.readouterr().err.strip() == (
        "vision-bench bench: error: --num-shards and --shard-index go together; give both (or neither, to run every "
        "cell)")
    assert main(["bench", str(config), "--out", str(out), "--num-shards", "2", "--shard-index", "0",
                 "--collect-only"]) == 2
    assert "--collect-only gathers the cells of every shard" in capsys.readouterr().err
    assert main(["bench", str(config), "--out", str(out), "--collect-only"]) == 2
    assert capsys.readouterr().err.strip().endswith(f"{out} holds no bench (bench.yaml is missing); run the bench "
                                                    "or its shards first")
    assert not out.exists()


def test_the_bench_file_is_created_once_and_never_replaced_by_a_racing_shard(tmp_path: Path) -> None:
    from vision_bench.bench.runner import _create_once

    path = tmp_path / "bench.yaml"
    _create_once(path, "name: first\n")
    with pytest.raises(FileExistsError):
        _create_once(path, "name: second\n")
    assert path.read_text() == "name: first\n"
    assert [p.name for p in tmp_path.iterdir()] == ["bench.yaml"]  # no temporary file left


@pytest.mark.slow
def test_a_task_file_experiment_is_exported_once_even_when_two_shards_race(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each shard exports into a hidden staging folder and renames it into place; the loser of the
    race keeps the winner's (identical) export and leaves nothing behind."""
    from vision_bench.bench.runner import _Bench
    from vision_bench.data import export
    from vision_bench.tasks.studies import get_study

    task = tmp_path / "mine.yaml"
    task.write_text(yaml.safe_dump(get_study("envgen/G1/1", n_train=2, n_val=1, n_test=1).to_dict()))
    out = tmp_path / "bench"
    bench = _Bench(BenchConfig.from_dict({**TINY, "experiments": [str(task)]}), out, progress=False, device=None)
    real_export = export.export_dataset

    def other_shard_finishes_first(config, spec, root, options, **kwargs):  # type: ignore[no-untyped-def]
        real_export(config, spec, root, options, **kwargs)
        if Path(root).name.startswith("."):  # our staging folder: the other shard publishes its copy now
            real_export(config, spec, out / "data" / "mine", options)

    monkeypatch.setattr(export, "export_dataset", other_shard_finishes_first)
    root = bench.export(str(task))
    assert root == out / "data" / "mine" and (root / "manifest.json").is_file()
    assert [p.name for p in (out / "data").iterdir()] == ["mine"]  # the staging copy is gone
    monkeypatch.setattr(export, "export_dataset", real_export)
    assert bench.export(str(task)) == root  # a published export is confirmed, not rewritten


@pytest.fixture(scope="module")
def sharded_and_plain(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Shards 0/2 and 1/2 into one folder through the command line (with --set and --device), a collect
    step between them that is refused and one after them, and one plain run into another folder.
    The report's plots (seconds of matplotlib, tested in test_bench.py) are left out."""
    import contextlib
    import io

    from vision_bench.bench import run_bench, runner
    from vision_bench.bench.report import Report
    from vision_bench.cli import main

    root = tmp_path_factory.mktemp("shards")
    config = root / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY), encoding="utf-8")
    shared = root / "shared"
    common = ["bench", str(config), "--out", str(shared), "--set", SEEDS, "--offline", "--no-progress"]

    def cli(*extra: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([*common, *extra])
        return code, out.getvalue(), err.getvalue()

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(runner, "build_report", lambda config, cells, out: Report(f"vision-bench: {config.name}"))
        runs = {"shard0": cli("--num-shards", "2", "--shard-index", "0", "--device", "cpu")}
        runs["early_collect"] = cli("--collect-only")
        after_shard0 = sorted(p.name for p in shared.iterdir())
        runs["shard1"] = cli("--num-shards", "2", "--shard-index", "1", "--device", "cpu")
        runs["collect"] = cli("--collect-only")
        plain = run_bench({**TINY, "seeds": [0, 1]}, root / "plain", progress=False)
    return {"shared": shared, "plain": plain, "runs": runs, "after_shard0": after_shard0}


@pytest.mark.slow
def test_shards_and_a_collect_step_give_the_results_of_one_plain_run(sharded_and_plain: dict) -> None:
    shared, plain = sharded_and_plain["shared"], sharded_and_plain["plain"]
    assert (shared / "results.csv").read_bytes() == plain.results_csv.read_bytes()
    assert (shared / "results.json").read_bytes() == plain.results_json.read_bytes()
    assert yaml.safe_load((shared / "bench.yaml").read_text()) == yaml.safe_load(plain.out_dir.joinpath("bench.yaml")
                                                                                 .read_text())
    assert len(plain.computed) == 3 and (shared / "report.md").is_file()


@pytest.mark.slow
def test_a_shard_writes_only_its_cells_and_says_how_to_collect(sharded_and_plain: dict) -> None:
    shared, runs = sharded_and_plain["shared"], sharded_and_plain["runs"]
    code, stdout, _ = runs["shard0"]  # cells 0 (seed 0) and 2 (the baselines) of three
    assert code == 0
    assert stdout.splitlines() == [
        "shard 0 of 2: 2 cells computed, 0 already finished; no report written (a shard holds part of the bench)",
        "1 cell of the bench not finished yet",
        (f"once every shard has finished, collect them: vision-bench bench {shared.parent / 'tiny.yaml'} --out "
         f"{shared} --collect-only --set '{SEEDS}'"),
    ]
    assert sharded_and_plain["after_shard0"] == [".locks", "baselines", "bench.yaml", "runs"]  # no report, no results
    code, _, err = runs["early_collect"]  # shard 1 had not run: refused, naming its cell
    assert code == 2 and err.strip() == (
        "vision-bench bench: error: 1 of 3 cells are not finished (unet:test_resnet / envgen/G1/1 / seed 1); wait "
        "for the shards that compute them (or re-run those shards), or drop --collect-only to compute them here")
    assert runs["shard1"][0] == 0 and "every cell of the bench is finished" in runs["shard1"][1]
    code, stdout, _ = runs["collect"]
    assert code == 0 and "0 cells computed, 3 already finished" in stdout
    run_config = yaml.safe_load((shared / "runs" / "envgen_G1_1" / "unet_test_resnet" / "seed1" / "config.yaml")
                                .read_text())
    assert run_config["runtime"]["device"] == "cpu"  # --device reached the cell


@pytest.mark.slow
def test_results_rows_are_the_cells_metrics(sharded_and_plain: dict) -> None:
    import csv
    import json

    shared = sharded_and_plain["shared"]
    with open(shared / "results.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["model", "study", "experiment", "seed", "split", "metric", "value", "baseline", "gate"]
    expected = []
    for seed in (0, 1):
        metrics = json.loads((shared / "runs" / "envgen_G1_1" / "unet_test_resnet" / f"seed{seed}" / "evaluation"
                              / "metrics.json").read_text())
        expected += [("unet:test_resnet", str(seed), "false", split, name, value)
                     for split, entry in metrics["splits"].items() for name, value in entry["metrics"].items()]
    baselines = json.loads((shared / "baselines" / "envgen_G1_1" / "evaluation" / "metrics.json").read_text())
    expected += [("copy_input", "", "true", split, name, value)
                 for split, entry in baselines["baselines"]["copy_input"]["splits"].items()
                 for name, value in entry["metrics"].items()]
    assert len(rows) == len(expected) and {r["split"] for r in rows} == {"test_id", "test_ood"}
    by_key = {(r["model"], r["seed"], r["baseline"], r["split"], r["metric"]): r for r in rows}
    for model, seed, baseline, split, metric, value in expected:
        row = by_key[(model, seed, baseline, split, metric)]
        assert (row["study"], row["experiment"]) == ("envgen/G1", "envgen/G1/1")
        assert row["value"] == ("" if value is None else repr(float(value)))  # exactly metrics.json's number
    order = [(r["model"], r["seed"] or "-1", r["split"], r["metric"]) for r in rows]
    assert order == sorted(order) and rows[0]["model"] == "copy_input"
    document = json.loads((shared / "results.json").read_text())
    assert document["columns"] == list(rows[0]) and len(document["rows"]) == len(rows)
    assert document["rows"][0]["seed"] is None and document["rows"][-1]["seed"] == 1


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="no flock on Windows: the bench's cell locks guard nothing there")
def test_a_cell_another_process_computes_is_skipped_and_computed_once_that_process_is_killed(tmp_path) -> None:
    """A second process holds the lock of the trained cell, as a bench computing it does: a shard holding that cell
    leaves it untouched and ends with it pending; a plain run computes the baselines and refuses the report naming
    the cell; once that process is killed, the operating system drops its lock and a re-run computes the cell."""
    import subprocess

    from vision_bench.bench import run_bench
    from vision_bench.bench.cells import is_finished, lock_path, run_dir

    out = tmp_path / "bench"
    trained, baselines = plan_cells(BenchConfig.from_dict(TINY), ["envgen/G1/1"])
    hold = ("import fcntl, os, sys, time; descriptor = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
            "fcntl.flock(descriptor, fcntl.LOCK_EX); print('held', flush=True); time.sleep(600)")
    holder = subprocess.Popen([sys.executable, "-c", hold, str(lock_path(out, trained))], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        shard = run_bench(TINY, out, progress=False, device="cpu", num_shards=2, shard_index=0)  # the trained cell
        assert shard.computed == [] and shard.pending == [trained.label(), baselines.label()]
        assert not run_dir(out, trained).exists()
        with pytest.raises(ConfigError, match="1 of 2 cells are not finished .*another process is computing them"):
            run_bench(TINY, out, progress=False, device="cpu")
        assert is_finished(out, baselines) and not run_dir(out, trained).exists()
    finally:
        holder.kill()
        holder.wait()
    result = run_bench(TINY, out, progress=False, device="cpu")
    assert result.computed == [trained.label()] and is_finished(out, trained)


def test_a_file_system_that_refuses_flock_grants_the_lock_with_one_warning(tmp_path, monkeypatch, caplog) -> None:
    """flock failing with ENOSYS (Lustre without -o flock, some FUSE mounts) must not stop a bench: the lock is
    granted, guarding nothing, and the user is told once per file system."""
    import errno
    import fcntl
    import logging

    from vision_bench.io import lock

    def refuse(descriptor: int, operation: int) -> None:
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(fcntl, "flock", refuse)
    monkeypatch.setattr(lock, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="vision_bench.io.lock"):
        for name in ("a.lock", "b.lock"):
            with lock.exclusive(tmp_path / name) as held:
                assert held
    assert [record.getMessage() for record in caplog.records] == [
        f"the file system of {tmp_path} does not support file locks (flock); its lock files guard nothing, so do not "
        "run two commands on the same cells at once"]
