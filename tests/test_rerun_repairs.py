"""A re-run of `export` checks what it skips: damage that keeps a file's size is rewritten."""

from __future__ import annotations

from pathlib import Path

import pytest

from render import RenderSpec
from vision_bench.cli import main
from vision_bench.data.export import export_dataset
from vision_bench.data.export_formats import ExportOptions
from vision_bench.data.verify import verify_export
from vision_bench.tasks.config import TaskConfig

CONFIG = {"transformations": ["translate_up"], "grid_height": [8, 8], "grid_width": [8, 8], "n_objects": [1, 1],
          "samples": {"train": 4, "val_id": 1, "val_ood": 1, "test_id": 1, "test_ood": 1}}


def test_a_flipped_byte_is_repaired_by_the_same_export_again(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    config, spec = TaskConfig.from_dict(CONFIG), RenderSpec(size=(16, 16))
    options = ExportOptions(format="folder", shard_size=2)
    export_dataset(config, spec, tmp_path, options)
    victim = tmp_path / "train" / "00000001_target.png"
    original = victim.read_bytes()
    damaged = bytearray(original)
    damaged[len(damaged) // 2] ^= 0x01
    victim.write_bytes(bytes(damaged))
    assert main(["verify", str(tmp_path)]) == 1
    assert "re-run the `vision-bench export` command that made it" in capsys.readouterr().err
    result = export_dataset(config, spec, tmp_path, options)
    assert [shard.name for shard in result.written] == ["train-00000"]
    assert victim.read_bytes() == original
    assert verify_export(tmp_path).ok


def test_a_failed_start_does_not_block_the_corrected_command(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "data"
    base = ["export", "--study", "envgen/G1/1", "--n-train", "2", "--n-val", "1", "--n-test", "1", "--out", str(out)]
    assert main([*base, "--workers", "0"]) == 2
    assert not out.exists() or not any(out.rglob("*"))  # a settings error writes nothing
    infeasible = tmp_path / "infeasible.yaml"
    infeasible.write_text("transformations: [translate_up]\ngrid_height: [3, 3]\ngrid_width: [3, 3]\n"
                          "n_objects: [9, 9]\n")
    code = main(["export", "--config", str(infeasible), "--out", str(out)])
    assert code == 2
    assert (out / "_progress" / "export.json").is_file()  # the failed start left its claim
    capsys.readouterr()
    assert main(base) == 0  # the corrected command takes the folder over
    assert verify_export(out).ok


BENCH = {"experiments": ["envgen/G1/1"], "seeds": [0], "baselines": [],
         "models": [{"name": "unet:test_resnet", "options": {"decoder_width": 4}},
                    {"name": "unet:test_resnetz", "options": {"decoder_width": 4}}],
         "data": {"n_train": 8, "n_val": 2, "n_test": 2, "spec": {"size": [32, 32]}},
         "train": {"training": {"max_steps": 1, "batch_size": 2}}}


def test_bench_checks_every_model_before_anything_runs_or_is_written(tmp_path: Path) -> None:
    from vision_bench.bench import run_bench
    from vision_bench.errors import UserError

    with pytest.raises(UserError, match="test_resnetz"):
        run_bench(BENCH, tmp_path / "bench", progress=False)
    assert not (tmp_path / "bench").exists()


def test_bench_refuses_a_folder_of_another_bench(tmp_path: Path) -> None:
    from vision_bench.bench import run_bench
    from vision_bench.errors import ConfigError

    config = {**BENCH, "models": BENCH["models"][:1]}
    out = tmp_path / "bench"
    out.mkdir()
    (out / "bench.yaml").write_text("name: envgen_g1\nexperiments: [envgen/G1/2]\n")
    with pytest.raises(ConfigError, match="holds another bench"):
        run_bench(config, out, progress=False)
    assert (out / "bench.yaml").read_text().startswith("name: envgen_g1")
    assert sorted(p.name for p in out.iterdir()) == ["bench.yaml"]


def test_a_failed_evaluation_leaves_the_earlier_one_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from vision_bench.data.onthefly import OnTheFlyDataset
    from vision_bench.evaluation import EvaluationData, build_baselines, evaluate_predictors, outputs, pick_device
    from vision_bench.evaluation.data import training_sequences

    config = TaskConfig.from_dict(CONFIG)
    spec = RenderSpec(size=(32, 32))
    data = EvaluationData(spec, {"test_id": OnTheFlyDataset(config, "test_id", spec)},
                          OnTheFlyDataset(config, "train", spec), training_sequences(config)[0])
    models, _ = build_baselines(("copy_input",), data, pick_device("cpu"), batch_size=2)
    out = tmp_path / "evaluation"
    out.mkdir()
    (out / "notes.txt").write_text("the user's own file")
    result = evaluate_predictors(models, data, out, device=pick_device("cpu"), batch_size=2)
    assert all(sheet.is_file() and sheet.parent.parent == out / "sheets" for sheet in result.sheets)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert Path("metrics.json") in before and Path("samples.parquet") in before

    def full_disk(path: Path, data: object) -> Path:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(outputs, "write_json", full_disk)
    with pytest.raises(OSError):
        evaluate_predictors(models, data, out, device=pick_device("cpu"), batch_size=2, save_predictions=True)
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before  # the earlier evaluation and the user's file, untouched; no staging folder left
    assert not list(out.glob(".*"))


def test_compare_metrics_checks_its_paths_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare-metrics", "--out", str(tmp_path / "cmp"), "--run", str(tmp_path / "nope")]) == 2
    assert "--run" in capsys.readouterr().err and not (tmp_path / "cmp").exists()


def test_generate_removes_what_a_killed_run_left(tmp_path: Path) -> None:
    out = tmp_path / "tasks"
    out.mkdir()
    leftovers = [out / "..train.parquet.partial.123.tmp", out / ".train.parquet.tmp-123-abcd",
                 out / ".val_id.parquet.partial"]
    mine = out / ".notes.tmp"  # a user's own hidden file is not the command's to remove
    for path in [*leftovers, mine]:
        path.write_bytes(b"half")
    assert main(["generate", "--study", "envgen/G1/1", "--out", str(out), "--n-train", "2", "--n-val", "1",
                 "--n-test", "1"]) == 0
    assert not any(path.exists() for path in leftovers) and mine.exists()


def test_train_finds_a_data_error_before_writing_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "configs" / "train_smoke.yaml").read_text())
    config["dataset"] = {"task": {"transformations": ["translate_up"], "grid_height": [3, 3], "grid_width": [3, 3],
                                  "n_objects": [9, 9]}, "n_train": 32, "n_val": 2, "spec": {"size": [32, 32]}}
    path = tmp_path / "train.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["train", str(path), "--out", str(tmp_path / "run")]) == 2
    assert "cannot fit" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_bench_resumes_when_it_grows_and_refuses_a_changed_setting(tmp_path: Path) -> None:
    import yaml

    from vision_bench.bench.runner import _check_out_dir
    from vision_bench.errors import ConfigError

    out = tmp_path / "bench"
    out.mkdir()
    first = {"name": "g1", "experiments": ["envgen/G1/1"], "models": [{"name": "unet:test_resnet"}], "seeds": [0],
             "data": {"n_train": 8}}
    (out / "bench.yaml").write_text(yaml.safe_dump(first))
    grown = {**first, "seeds": [0, 1], "models": [*first["models"], {"name": "vit:test_vit"}], "evaluate": {"n": 1}}
    _check_out_dir(out, yaml.safe_dump(grown))  # more seeds and models, a new default key: resumes
    with pytest.raises(ConfigError, match="differs in data"):
        _check_out_dir(out, yaml.safe_dump({**first, "data": {"n_train": 16}}))
    with pytest.raises(ConfigError, match="differs in seeds"):
        _check_out_dir(out, yaml.safe_dump({**first, "seeds": [1]}))


def test_bench_refuses_results_computed_on_other_data(tmp_path: Path) -> None:
    import yaml

    from vision_bench.bench.fingerprints import data_fingerprint
    from vision_bench.bench.runner import FINGERPRINTS, _check_out_dir
    from vision_bench.errors import ConfigError
    from vision_bench.tasks.studies import get_study

    out = tmp_path / "bench"
    out.mkdir()
    first = {"name": "g1", "experiments": ["envgen/G1/1"], "models": [{"name": "unet:test_resnet"}], "seeds": [0]}
    fingerprint = data_fingerprint(get_study("envgen/G1/1", 8, 2, 2))
    assert fingerprint == data_fingerprint(get_study("envgen/G1/1", 8, 2, 2))
    assert fingerprint != data_fingerprint(get_study("envgen/G1/1", 8, 2, 2, seed=1))
    (out / "bench.yaml").write_text(yaml.safe_dump({**first, FINGERPRINTS: {"envgen/G1/1": fingerprint}}))
    grown = {**first, "experiments": ["envgen/G1/1", "envgen/G1/2"],
             FINGERPRINTS: {"envgen/G1/1": fingerprint, "envgen/G1/2": "0" * 16}}
    _check_out_dir(out, yaml.safe_dump(grown))  # a new experiment: resumes
    with pytest.raises(ConfigError, match="holds results computed on other data than envgen/G1/1 generates now"):
        _check_out_dir(out, yaml.safe_dump({**first, FINGERPRINTS: {"envgen/G1/1": "f" * 16}}))
    (out / "bench.yaml").write_text(yaml.safe_dump(first))  # written before fingerprints were recorded
    _check_out_dir(out, yaml.safe_dump({**first, FINGERPRINTS: {"envgen/G1/1": fingerprint}}))  # no results yet
    metrics = out / "runs" / "cell" / "evaluation" / "metrics.json"
    metrics.parent.mkdir(parents=True)
    metrics.write_text("{}")
    with pytest.raises(ConfigError, match="results of an earlier vision-bench that did not record"):
        _check_out_dir(out, yaml.safe_dump({**first, FINGERPRINTS: {"envgen/G1/1": fingerprint}}))
