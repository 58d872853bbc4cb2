"""The training engine end to end on tiny on-the-fly data: learning, exact resume, baselines, errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from render.raster import render  # noqa: E402
from render.spec import RenderSpec  # noqa: E402
from vision_bench.cli import main  # noqa: E402
from vision_bench.errors import ConfigError, UnknownNameError  # noqa: E402
from vision_bench.tasks.sampling import generate_sample  # noqa: E402
from vision_bench.tasks.studies import get_study  # noqa: E402
from vision_bench.train import CheckpointError, TrainConfig, load_checkpoint, train  # noqa: E402
from vision_bench.train.logging import read_records  # noqa: E402

STUDY = "envgen/G1/1"  # translate_up; 1-2 objects in a 15x15 grid (ID), 3-4 objects (OOD)
SIZE = 32
N_VAL = 4


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def make_config(model_name: str = "unet:test_resnet", **sections: dict) -> TrainConfig:
    data = {
        "seed": 0,
        "dataset": {"study": STUDY, "n_train": 32, "n_val": N_VAL, "spec": {"size": [SIZE, SIZE]}},
        "model": {"name": model_name, "options": {"decoder_width": 4} if model_name.startswith("unet:") else {}},
        "optimizer": {"lr": 1e-2},
        "schedule": {"warmup_steps": 2},
        "training": {"batch_size": 8, "max_steps": 6, "log_every": 1},
    }
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value}
    return TrainConfig.from_dict(data)


def step_losses(run_dir: Path) -> list[tuple[int, float]]:
    return [(r["step"], r["loss"]) for r in read_records(run_dir / "metrics.jsonl") if r["kind"] == "step"]


def epoch_records(run_dir: Path) -> list[dict]:
    return [r for r in read_records(run_dir / "metrics.jsonl") if r["kind"] == "epoch"]


@pytest.fixture(scope="module")
def copy_input_run(tmp_path_factory) -> Path:
    """A finished run of the copy_input baseline (no training steps, one validation)."""
    run_dir = tmp_path_factory.mktemp("copy_input")
    train(make_config("copy_input"), run_dir, progress=False)
    return run_dir


# ---------------------------------------------------------------------------- learning and resuming


def test_interrupted_and_resumed_run_repeats_the_uninterrupted_one_exactly(tmp_path) -> None:
    config = make_config()  # 4 steps per epoch: the interruption at step 3 falls mid-epoch
    whole = train(config, tmp_path / "whole", progress=False)
    assert whole.finished and whole.step == 6

    first = train(config, tmp_path / "split", progress=False, stop_at_step=3)
    assert not first.finished and first.step == 3
    # the second session loads its data in a worker process: runtime keys may change on resume
    with_worker = config.replace(runtime={"num_workers": 1})
    resumed = train(with_worker, tmp_path / "split", resume=True, progress=False)
    assert resumed.finished and resumed.step == 6

    expected = step_losses(tmp_path / "whole")
    assert [step for step, _ in expected] == [1, 2, 3, 4, 5, 6]
    assert step_losses(tmp_path / "split") == expected  # bit for bit, not approximately
    assert epoch_records(tmp_path / "split") == epoch_records(tmp_path / "whole")
    assert resumed.final_metrics == whole.final_metrics
    assert [r["step"] for r in resumed.history] == [4, 6] and resumed.history == whole.history
    whole_state = torch.load(whole.last_checkpoint, weights_only=True)
    split_state = torch.load(resumed.last_checkpoint, weights_only=True)
    for name, tensor in whole_state["model"].items():
        assert torch.equal(tensor, split_state["model"][name]), name
    assert split_state["rng"]["torch"].equal(whole_state["rng"]["torch"])


@pytest.mark.slow  # trains until the model overfits
def test_a_model_overfits_64_samples(tmp_path) -> None:
    task = {  # translate_up on 8x8 grids: 4-pixel cells at 32 pixels
        "grid_height": [8, 8],
        "grid_width": [8, 8],
        "n_objects": [1, 2],
        "object_filter": {"max_height": 3, "max_width": 3},
        "sequences": [["translate_up"]],
    }
    config = make_config(
        dataset={"study": None, "task": task, "n_train": 64, "val_splits": ["val_id"]},
        model={"options": {"decoder_width": 8}},
        training={"batch_size": 16, "max_steps": 100, "log_every": 1, "validate_every": 100},
        schedule={"warmup_steps": 5},
    )
    result = train(config, tmp_path, progress=False)
    losses = [loss for _, loss in step_losses(tmp_path)]
    assert len(losses) == 100
    last_epoch = float(np.mean(losses[-4:]))
    assert last_epoch < losses[0] / 10, f"loss went from {losses[0]:.4f} to {last_epoch:.4f}"
    assert result.final_metrics["train_loss"] == pytest.approx(last_epoch, rel=1e-5)
    assert [r["step"] for r in result.history] == [4 * e for e in range(1, 26)]
    assert [r["step"] for r in result.history if "val_id/loss" in r] == [100]  # validated once, at the end


def test_the_step_records_say_how_much_of_the_time_went_to_waiting_for_data(tmp_path, monkeypatch) -> None:
    """A feed that takes 0.3 s a batch, beside a tiny model's step of a few milliseconds: most of each logged
    interval is the wait; the share is a fraction of the interval, never above 1."""
    import time

    from vision_bench.data.onthefly import OnTheFlyDataset

    fetch = OnTheFlyDataset.__getitems__

    def slow(self, indices):  # type: ignore[no-untyped-def]
        time.sleep(0.3 / 8 * len(indices))  # 0.3 s a batch of 8
        return fetch(self, indices)

    monkeypatch.setattr(OnTheFlyDataset, "__getitems__", slow)
    train(make_config(training={"max_steps": 3}), tmp_path, progress=False)
    shares = [r["data_wait_share"] for r in read_records(tmp_path / "metrics.jsonl") if r["kind"] == "step"]
    assert len(shares) == 3 and all(0.5 < share <= 1.0 for share in shares[1:])


def test_run_directory_layout_and_checkpoint_reload(tmp_path) -> None:
    config = make_config(training={"max_steps": 4})
    result = train(config, tmp_path, progress=False)
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["best.pt", "last.pt"]
    resolved = TrainConfig.from_yaml(tmp_path / "config.yaml")
    assert resolved.dataset.spec == RenderSpec(size=(SIZE, SIZE)).to_dict()  # the full spec, not the short form
    model, loaded_config, state = load_checkpoint(result.best_checkpoint)
    assert loaded_config == resolved and state["step"] == 4
    assert not model.training and model.describe()["family"] == "unet"
    records = read_records(tmp_path / "metrics.jsonl")
    assert {"loss", "lr", "grad_norm", "images_per_s"} <= set(records[0])
    epoch = epoch_records(tmp_path)[-1]
    for split in ("val_id", "val_ood"):
        assert {f"{split}/loss", f"{split}/mse", f"{split}/grid_accuracy"} <= set(epoch)


# ---------------------------------------------------------------------------- validation numbers


def rendered_pairs(split: str, spec: RenderSpec) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and targets of a split drawn by the numpy renderer, independently of the engine."""
    config = get_study(STUDY, n_train=32, n_val=N_VAL)
    samples = [generate_sample(config, split, i) for i in range(N_VAL)]
    inputs = np.stack([render(s.input, spec) for s in samples]).astype(np.float64) / 255
    targets = np.stack([render(s.output, spec) for s in samples]).astype(np.float64) / 255
    return inputs, targets


def test_validation_of_copy_input_matches_a_direct_computation(copy_input_run) -> None:
    spec = RenderSpec(size=(SIZE, SIZE))
    metrics = epoch_records(copy_input_run)[-1]
    for split in ("val_id", "val_ood"):
        inputs, targets = rendered_pairs(split, spec)
        expected_mse = float(((inputs - targets) ** 2).mean())
        assert metrics[f"{split}/mse"] == pytest.approx(expected_mse, rel=1e-6)
        changed = [not np.array_equal(a, b) for a, b in zip(inputs, targets)]
        assert metrics[f"{split}/grid_accuracy"] == pytest.approx(1 - np.mean(changed))
    assert "val_id/loss" not in metrics and "train_loss" not in metrics  # a baseline has no training loss


def test_a_grids_export_trains_like_the_study_it_was_exported_from(tmp_path, copy_input_run) -> None:
    from vision_bench.data.export import export_dataset
    from vision_bench.data.export_formats import ExportOptions

    spec = RenderSpec(size=(SIZE, SIZE))
    export_dataset(get_study(STUDY, n_train=32, n_val=N_VAL, n_test=1), spec, tmp_path / "data",
                   ExportOptions(format="grids"))
    config = make_config("copy_input", dataset={"study": None, "path": str(tmp_path / "data"),
                                                "n_train": None, "n_val": None, "spec": {}})
    result = train(config, tmp_path / "run", progress=False)
    assert TrainConfig.from_yaml(tmp_path / "run" / "config.yaml").dataset.spec == spec.to_dict()  # the export's
    from_study = epoch_records(copy_input_run)[-1]
    assert result.final_metrics == {key: from_study[key] for key in result.final_metrics}
    assert set(result.final_metrics) == {f"{split}/{name}" for split in ("val_id", "val_ood")
                                         for name in ("mse", "grid_accuracy")}


def test_ground_truth_scores_perfectly(tmp_path) -> None:
    result = train(make_config("ground_truth"), tmp_path, progress=False)
    assert result.final_metrics["val_id/mse"] == 0.0 and result.final_metrics["val_ood/mse"] == 0.0
    assert result.final_metrics["val_id/grid_accuracy"] == 1.0
    assert result.final_metrics["val_ood/grid_accuracy"] == 1.0


def test_mean_target_is_fitted_and_reloaded(tmp_path) -> None:
    result = train(make_config("mean_target", dataset={"n_train": 8}), tmp_path, progress=False)
    model, _, _ = load_checkpoint(result.last_checkpoint)
    config = get_study(STUDY, n_train=8, n_val=N_VAL)
    spec = RenderSpec(size=(SIZE, SIZE))
    targets = np.stack([render(generate_sample(config, "train", i).output, spec) for i in range(8)])
    expected = torch.from_numpy(targets.astype(np.float64).mean(0) / 255).permute(2, 0, 1)
    assert int(model.samples_seen) == 8
    assert torch.allclose(model.mean_image.double(), expected, atol=1e-6)


# ---------------------------------------------------------------------------- bad input


def test_unknown_model_name_suggests_close_matches(tmp_path) -> None:
    with pytest.raises(UnknownNameError, match="copy_input"):
        train(make_config("copy_inptu"), tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            lambda: make_config(model={"options": {"decoder_width": 4, "image_size": 64}}),
            "model.options.image_size is 64",
        ),
        (
            lambda: make_config(dataset={"spec": {"size": [SIZE, SIZE], "background": "random"}},
                                model={"options": {"head": "palette"}}),
            "dataset.spec.background is 'random'",
        ),
        (lambda: make_config(dataset={"spec": {"size": [SIZE, 2 * SIZE]}}), "the models take square images"),
        (
            lambda: make_config(dataset={"spec": {"palette": "no-such-palette"}}),
            "dataset.spec.palette: unknown palette 'no-such-palette'",
        ),
        (lambda: make_config(training={"batch_size": 64}), "training.batch_size 64 is larger than the 32"),
    ],
)
def test_data_that_does_not_fit_the_model_is_refused(tmp_path, config, expected) -> None:
    with pytest.raises(ConfigError, match=expected):
        train(config(), tmp_path, progress=False)


def test_select_on_an_empty_validation_split_says_the_split_is_empty(tmp_path) -> None:
    """`train` called as a library skips the command's check: the first validation finds val_ood empty and says
    so, not that the metric is unmeasured."""
    config = make_config(dataset={"study": "sample-efficiency/S2/1"}, checkpoint={"select_on": "val_ood"})
    with pytest.raises(ConfigError, match="select_on is val_ood but that validation split holds no samples") as error:
        train(config, tmp_path, progress=False)
    assert "not measured" not in str(error.value) and "--select-on val_id" in str(error.value)


def test_resume_refuses_another_config_and_names_the_keys(copy_input_run) -> None:
    changed = make_config("copy_input", optimizer={"lr": 0.5}, training={"epochs": 100, "batch_size": 4})
    with pytest.raises(CheckpointError, match=r"differs from the run's in optimizer\.lr, training\.batch_size; "):
        train(changed, copy_input_run, resume=True, progress=False)  # epochs raised: allowed, so not named
    with pytest.raises(CheckpointError, match=r"training\.epochs changed the run would train 0 steps, not more"):
        train(make_config("copy_input", training={"epochs": 100}), copy_input_run, resume=True, progress=False)
    runtime_only = make_config("copy_input").replace(runtime={"device": "cpu", "num_workers": 0})
    assert train(runtime_only, copy_input_run, resume=True, progress=False).finished


def test_a_finished_run_resumes_to_train_longer(tmp_path, caplog) -> None:
    """A raised max_steps continues the finished run from its last step (its first 6 steps untouched) to the new
    end, rewrites config.yaml, says so in the log, and recomputes the schedule over the new length; resuming again
    with the same config is a finished run."""
    first = train(make_config(), tmp_path / "run", progress=False)
    before = step_losses(tmp_path / "run")
    for fewer in ({"max_steps": 5}, {"max_steps": None, "epochs": 1}):  # 5 steps; 1 epoch of 4 steps
        with pytest.raises(CheckpointError, match=r"would train [45] steps, not more than its 6"):
            train(make_config(training=fewer), tmp_path / "run", resume=True, progress=False)
    longer = make_config(training={"max_steps": 10})
    with caplog.at_level("WARNING"):
        resumed = train(longer, tmp_path / "run", resume=True, progress=False)
    assert first.step == 6 and resumed.finished and resumed.step == 10
    assert step_losses(tmp_path / "run")[:6] == before
    assert [s for s, _ in step_losses(tmp_path / "run")] == list(range(1, 11))
    assert "training.max_steps changed: 6 -> 10 steps" in caplog.text and "recomputed" in caplog.text
    whole = train(longer, tmp_path / "whole", progress=False)  # the curve of a run made for 10 steps
    rates = {(r["step"]): r["lr"] for r in read_records(tmp_path / "run" / "metrics.jsonl") if r["kind"] == "step"}
    expected = {r["step"]: r["lr"] for r in read_records(whole.run_dir / "metrics.jsonl") if r["kind"] == "step"}
    assert [rates[step] for step in range(7, 11)] == [expected[step] for step in range(7, 11)]
    assert rates[7] > 0  # the old curve had reached 0 at step 6
    state = torch.load(resumed.last_checkpoint, weights_only=True)
    written = TrainConfig.from_yaml(tmp_path / "run" / "config.yaml")
    assert written.training.max_steps == 10 and written.experiment_hash() == state["config_hash"]
    assert state["scheduler"]["last_epoch"] == 10
    assert train(longer, tmp_path / "run", resume=True, progress=False).step == 10


def test_resume_from_a_corrupt_checkpoint_is_one_clear_error(tmp_path) -> None:
    train(make_config("copy_input"), tmp_path, progress=False)
    last = tmp_path / "checkpoints" / "last.pt"
    last.write_bytes(last.read_bytes()[:1000])
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        train(make_config("copy_input"), tmp_path, resume=True, progress=False)
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        load_checkpoint(last)


def test_run_directory_guards(tmp_path, copy_input_run) -> None:
    with pytest.raises(ConfigError, match="already holds a training run; pass --resume"):
        train(make_config("copy_input"), copy_input_run, progress=False)
    with pytest.raises(CheckpointError, match="nothing to resume"):
        train(make_config("copy_input"), tmp_path / "empty", resume=True, progress=False)


# ---------------------------------------------------------------------------- command line


def test_command_line_trains_and_reports_errors(tmp_path, capsys) -> None:
    config_path = tmp_path / "config.yaml"
    config_path.write_text(make_config("copy_input").to_yaml())
    assert main(["train", str(config_path), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    assert "trained 0 steps" in capsys.readouterr().out
    assert (tmp_path / "run" / "checkpoints" / "best.pt").is_file()

    data = json.loads(json.dumps(make_config("copy_input").to_dict()))
    data["training"]["bacth_size"] = 8
    config_path.write_text(json.dumps(data))
    assert main(["train", str(config_path), "--out", str(tmp_path / "other")]) == 2
    error = capsys.readouterr().err
    assert ("vision-bench train: error:" in error
            and "training.bacth_size: unknown key; did you mean 'batch_size'?" in error)
