"""Experiment trackers (`vision_bench.train.trackers`): off by default, chosen by `tracking.loggers` or
`--logger`, refused in one line when their package is missing, and what each backend receives, read back
from its own files: TensorBoard's event files, W&B's offline run file, MLflow's local file store. Nothing
here reaches the network (W&B offline, MLflow on a folder)."""

from __future__ import annotations

import json
import logging
import os
import re
import struct
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from cli_errors import cli_error  # noqa: E402

from render.raster import render  # noqa: E402
from render.spec import RenderSpec  # noqa: E402
from vision_bench.bench.cells import plan_cells  # noqa: E402
from vision_bench.bench.config import BenchConfig  # noqa: E402
from vision_bench.cli import build_parser, main  # noqa: E402
from vision_bench.errors import ConfigError  # noqa: E402
from vision_bench.io.documents import flatten  # noqa: E402
from vision_bench.tasks.sampling import generate_sample  # noqa: E402
from vision_bench.tasks.studies import get_study  # noqa: E402
from vision_bench.train import TrainConfig, train  # noqa: E402
from vision_bench.train.logging import RunLogger  # noqa: E402
from vision_bench.train.trackers import STATE_FILE, TRACKERS, TrackedRun, TrackerSpec  # noqa: E402
from vision_bench.train.trackers.mlflow_tracker import parameters  # noqa: E402
from vision_bench.train.trackers.tensorboard_tracker import hyperparameters  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

RUN_FILES = {"config.yaml", "metrics.jsonl", "metrics.csv", "train.log", "environment.json", "checkpoints"}


def tiny_config(**tracking: Any) -> TrainConfig:
    """A 32x32 U-Net on 8 training samples of envgen/G1/1: one step per epoch, two steps."""
    return TrainConfig.from_dict({
        "dataset": {"study": "envgen/G1/1", "n_train": 8, "n_val": 2, "spec": {"size": [32, 32]}},
        "model": {"name": "unet:test_resnet", "options": {"decoder_width": 4}},
        "schedule": {"warmup_steps": 1},
        "training": {"batch_size": 8, "max_steps": 2, "log_every": 1},
        "tracking": tracking,
    })


def longer(config: TrainConfig, max_steps: int) -> TrainConfig:
    return config.replace(training=config.training.model_dump() | {"max_steps": max_steps})


def resolved(run_dir: Path) -> dict[str, Any]:
    """The run's resolved config (config.yaml: the render spec in full), which the trackers get."""
    return yaml.safe_load((run_dir / "config.yaml").read_text())


class Recording:
    """A tracker that records what it is sent (registered as `recording` by the fixture)."""

    started: list[Recording] = []

    def __init__(self, run: TrackedRun) -> None:
        self.run = run
        self.scalars: list[tuple[dict[str, float], int]] = []
        self.images: list[tuple[str, np.ndarray, int]] = []
        self.closed: list[bool] = []
        Recording.started.append(self)

    def log_scalars(self, scalars: dict[str, float], step: int) -> None:
        self.scalars.append((scalars, step))

    def log_image(self, tag: str, image: np.ndarray, step: int) -> None:
        self.images.append((tag, image, step))

    def close(self, failed: bool) -> None:
        self.closed.append(failed)


def failing_start(run: TrackedRun) -> Recording:
    raise ConfigError("the tracker's server is unreachable")


class FailingClose(Recording):
    """A recording tracker whose `close` raises (after recording it)."""

    def close(self, failed: bool) -> None:
        super().close(failed)
        raise ConnectionError("the server went away\nwhile closing")


class FailingScalars(Recording):
    """A recording tracker whose `log_scalars` raises from the second call on."""

    def log_scalars(self, scalars: dict[str, float], step: int) -> None:
        if self.scalars:
            raise TimeoutError("the server timed out")
        super().log_scalars(scalars, step)


@pytest.fixture
def recording() -> Iterator[type[Recording]]:
    """`recording`, `failing` (whose start raises), `failing_close` and `failing_scalars` in `TRACKERS` for the
    test."""
    Recording.started = []
    TRACKERS.add("recording", TrackerSpec(start=Recording, package="numpy", extra="test"), "records")
    TRACKERS.add("failing", TrackerSpec(start=failing_start, package="numpy", extra="test"), "fails to start")
    TRACKERS.add("failing_close", TrackerSpec(start=FailingClose, package="numpy", extra="test"), "close fails")
    TRACKERS.add("failing_scalars", TrackerSpec(start=FailingScalars, package="numpy", extra="test"), "log fails")
    yield Recording
    for name in ("recording", "failing", "failing_close", "failing_scalars"):
        TRACKERS.remove(name)


@pytest.fixture
def package_messages() -> Iterator[list[str]]:
    """The `vision_bench` logger's messages during the test (read from the logger itself, not the root's)."""
    messages: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())  # type: ignore[method-assign]
    package = logging.getLogger("vision_bench")
    package.addHandler(handler)
    yield messages
    package.removeHandler(handler)


def train_log_handlers() -> list[logging.Handler]:
    return [h for h in logging.getLogger("vision_bench").handlers if isinstance(h, logging.FileHandler)]


# ---------------------------------------------------------------------------- choosing trackers


def test_no_tracker_by_default_and_no_tracker_files(tmp_path: Path) -> None:
    config = tiny_config()
    assert config.tracking.loggers == () and "tracking" not in config.experiment()
    train(config, tmp_path / "run", progress=False)
    assert {path.name for path in (tmp_path / "run").iterdir()} == RUN_FILES


def test_tracking_is_not_part_of_the_experiment(recording) -> None:
    plain, tracked = tiny_config(), tiny_config(loggers=["recording"], project="p", run_name="r")
    assert plain.experiment_hash() == tracked.experiment_hash()  # a resume may add or drop trackers


def test_unknown_or_repeated_tracker_names_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"tracking.loggers: unknown tracker 'wandbb'; did you mean 'wandb'\?"):
        tiny_config(loggers=["wandbb"])
    with pytest.raises(ConfigError, match="names a tracker twice"):
        tiny_config(loggers=["wandb", "wandb"])
    with pytest.raises(ConfigError, match="tracking.wandb.mode"):
        tiny_config(wandb={"mode": "sometimes"})


def test_logger_option_adds_to_the_config_and_help_names_every_tracker(tmp_path: Path, monkeypatch) -> None:
    import vision_bench.train

    seen: dict[str, Any] = {}

    def fake_train(config: TrainConfig, run_dir: Path, **options: Any) -> Any:
        seen["config"] = config
        raise ConfigError("stop here")

    config_path = tmp_path / "config.yaml"
    config_path.write_text(tiny_config(loggers=["mlflow"]).to_yaml())
    monkeypatch.setattr(vision_bench.train, "train", fake_train)
    main(["train", str(config_path), "--out", str(tmp_path / "run"), "--logger", "wandb", "--logger", "mlflow",
          "--logger", "tensorboard"])
    assert seen["config"].tracking.loggers == ("mlflow", "wandb", "tensorboard")
    for command in ("train", "bench"):
        parser = build_parser()._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
        help_text = " ".join(parser.format_help().split())
        assert all(name in help_text for name in TRACKERS.names()), help_text


def test_an_unknown_logger_option_is_one_line(tmp_path: Path, capsys) -> None:
    config_path = tmp_path / "config.yaml"
    config_path.write_text(tiny_config().to_yaml())
    cli_error(["train", config_path, "--out", tmp_path / "run", "--logger", "tensorbord"], capsys,
              "unknown tracker 'tensorbord'; did you mean 'tensorboard'?")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("package", "tracker"), [("wandb", "wandb"), ("mlflow", "mlflow"),
                                                  ("tensorboard", "tensorboard")])
def test_a_tracker_without_its_package_is_one_line_before_any_work(
        tmp_path: Path, capsys, monkeypatch, package: str, tracker: str) -> None:
    monkeypatch.setitem(sys.modules, package, None)  # `import PACKAGE` fails, as when it is not installed
    config_path = tmp_path / "config.yaml"
    config_path.write_text(tiny_config().to_yaml())
    cli_error(["train", config_path, "--out", tmp_path / "run", "--logger", tracker], capsys,
              f"tracker {tracker} needs the `{package}` package, which is not installed; "
              f"pip install 'vision-bench[{tracker}]'")
    assert not (tmp_path / "run").exists()


def test_a_bench_passes_its_loggers_to_every_cell_named_after_the_cell(tmp_path: Path, monkeypatch) -> None:
    from vision_bench.bench.runner import _Bench

    config = BenchConfig.from_dict({
        "name": "tiny", "experiments": ["envgen/G1/1"], "models": ["unet:test_resnet"], "seeds": [0, 1],
        "train": {"tracking": {"loggers": ["mlflow"], "project": "bench-project"}},
    })
    bench = _Bench(config, tmp_path, progress=False, device=None, loggers=["wandb", "mlflow"])
    cells = [cell for cell in plan_cells(config, bench.experiments) if cell.model is not None]
    tracking = [bench.train_config(cell).tracking for cell in cells]
    assert [t.loggers for t in tracking] == [("mlflow", "wandb")] * 2
    assert [t.run_name for t in tracking] == [cell.label() for cell in cells]
    assert [t.project for t in tracking] == ["bench-project"] * 2
    monkeypatch.setitem(sys.modules, "wandb", None)
    with pytest.raises(ConfigError, match=r"pip install 'vision-bench\[wandb\]'"):
        bench.check(cells)


# ---------------------------------------------------------------------------- the interface


def test_every_tracker_gets_the_config_scalars_and_sample_images(tmp_path: Path, recording) -> None:
    train(tiny_config(loggers=["recording"]), tmp_path / "run", progress=False)
    [tracker] = recording.started
    assert tracker.run.config == resolved(tmp_path / "run") and tracker.run.folder == tmp_path / "run"
    assert (tracker.run.name, tracker.run.project, tracker.run.resume_step) == ("run", "vision-bench", None)
    steps = [(sorted(scalars), step) for scalars, step in tracker.scalars]
    assert steps[0] == (["train/data_wait_share", "train/grad_norm", "train/images_per_s", "train/loss", "train/lr"], 1)
    epoch = dict(tracker.scalars[1][0])
    assert tracker.scalars[1][1] == 1 and {"epoch/train_loss", "val_id/mse", "val_ood/mse"} <= set(epoch)
    assert tracker.closed == [False]
    assert [(tag, step) for tag, _, step in tracker.images] == [
        ("samples/val_id", 1), ("samples/val_ood", 1), ("samples/val_id", 2), ("samples/val_ood", 2)]
    cell, spec, task = 32 + 2, RenderSpec(size=(32, 32)), get_study("envgen/G1/1", n_train=8, n_val=2)
    for tag, image, _ in tracker.images:  # a row per sample: input | target | prediction, 2-pixel gray lines
        split = tag.split("/")[1]
        assert image.shape == (2 * cell + 2, 3 * cell + 2, 3) and image.dtype == np.uint8
        for row in range(2):
            sample = generate_sample(task, split, row)
            cells = [image[2 + row * cell: (row + 1) * cell, 2 + column * cell: (column + 1) * cell]
                     for column in range(3)]
            np.testing.assert_array_equal(cells[0], render(sample.input, spec))
            np.testing.assert_array_equal(cells[1], render(sample.output, spec))
            assert not np.array_equal(cells[2], cells[1])  # an untrained model's prediction is not the target


def test_only_an_enabled_logger_starts_trackers(tmp_path: Path, recording) -> None:
    RunLogger(tmp_path, enabled=False, config=tiny_config(loggers=["recording"])).close()  # ranks above 0
    assert recording.started == []


def test_a_tracker_that_fails_to_start_closes_the_others_and_leaves_no_run(tmp_path: Path, recording) -> None:
    with pytest.raises(ConfigError, match="unreachable"):
        train(tiny_config(loggers=["recording", "failing"]), tmp_path / "run", progress=False)
    assert [tracker.closed for tracker in recording.started] == [[True]]
    assert not (tmp_path / "run").exists()


def test_a_close_that_fails_is_a_warning_and_the_others_are_closed(tmp_path: Path, recording,
                                                                  package_messages) -> None:
    run_log = RunLogger(tmp_path, enabled=True, config=tiny_config(loggers=["failing_close", "recording"]))
    assert len(train_log_handlers()) == 1
    run_log.close()
    assert [tracker.closed for tracker in recording.started] == [[False], [False]]
    assert train_log_handlers() == []
    assert package_messages == [
        "tracker failing_close could not be closed: ConnectionError: the server went away while closing"]


def test_a_failed_session_shows_its_own_error_when_a_close_fails_too(tmp_path: Path, recording, monkeypatch,
                                                                     package_messages) -> None:
    from vision_bench.train import loop

    def fail(self: Any, run_log: RunLogger, stop_at_step: int | None) -> bool:
        raise RuntimeError("the session's own error")

    monkeypatch.setattr(loop._Run, "_train", fail)
    with pytest.raises(RuntimeError, match="the session's own error"):
        train(tiny_config(loggers=["failing_close", "recording"]), tmp_path / "run", progress=False)
    assert [tracker.closed for tracker in recording.started] == [[True], [True]]
    assert train_log_handlers() == []
    assert any("tracker failing_close could not be closed" in message for message in package_messages)


def test_a_tracker_failing_mid_run_is_dropped_with_one_warning(tmp_path: Path, recording, package_messages) -> None:
    train(tiny_config(loggers=["failing_scalars", "recording"]), tmp_path / "run", progress=False)
    failing, kept = recording.started
    warnings = [message for message in package_messages if "failing_scalars" in message]
    assert warnings == ["tracker failing_scalars failed and is dropped for the rest of this session: "
                        "TimeoutError: the server timed out"]
    assert len(failing.scalars) == 1 and failing.images == [] and failing.closed == [True]
    assert len(kept.scalars) > 1 and kept.closed == [False] and len(kept.images) == 4  # the other goes on
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [(r["kind"], r["step"]) for r in records] == [("step", 1), ("epoch", 1), ("step", 2), ("epoch", 2)]
    assert [step for _, step in kept.scalars] == [1, 1, 2, 2]


def test_hyperparameters_and_parameters_follow_each_backends_rules() -> None:
    config = {"a": {"b": 1, "c": None, "d": [1, 2]}, "e": "text", "f": True, "g": 0.5, "h:i": "x" * 10}
    assert hyperparameters(config) == {"a.b": 1, "a.d": "[1, 2]", "e": "text", "f": True, "g": 0.5, "h:i": "x" * 10}
    assert parameters(config, key_length=3, value_length=4) == {
        "a.b": "1", "a.c": "null", "a.d": "[1, ", "e": "text", "f": "true", "g": "0.5", "h_i": "xxxx"}


# ---------------------------------------------------------------------------- TensorBoard


def test_tensorboard_event_files_hold_the_config_as_hparams_scalars_and_images(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

    train(tiny_config(loggers=["tensorboard"]), tmp_path / "run", progress=False)
    events = EventAccumulator(str(tmp_path / "run" / "tensorboard"), size_guidance={"images": 0})
    events.Reload()
    content = events.PluginTagToContent("hparams")
    assert list(content) == ["_hparams_/session_start_info"]  # no experiment summary: TensorBoard builds one
    start = HParamsPluginData.FromString(content["_hparams_/session_start_info"]).session_start_info
    values = {key: value.WhichOneof("kind") and getattr(value, value.WhichOneof("kind"))
              for key, value in start.hparams.items()}
    assert values["model.name"] == "unet:test_resnet" and values["optimizer.lr"] == pytest.approx(1e-3)
    assert values["training.max_steps"] == 2 and values["dataset.val_splits"] == '["val_id", "val_ood"]'
    assert values["runtime.channels_last"] == 1.0 and "training.eval_batch_size" in values
    assert values["dataset.spec.palette"] == "cogitao-rgb" and values["tracking.loggers"] == '["tensorboard"]'
    assert set(values) == {key for key, value in flatten(resolved(tmp_path / "run")).items() if value is not None}
    assert [s.step for s in events.Scalars("train/loss")] == [1, 2]
    assert [s.step for s in events.Scalars("val_id/mse")] == [1, 2]
    assert [image.step for image in events.Images("samples/val_ood")] == [1, 2]


# ---------------------------------------------------------------------------- Weights & Biases


@pytest.fixture
def wandb_offline(tmp_path: Path, monkeypatch) -> Iterator[None]:
    """W&B offline, its settings and caches under tmp_path, silent and without console capture."""
    pytest.importorskip("wandb")
    for name, value in (("WANDB_MODE", "offline"), ("WANDB_SILENT", "true"), ("WANDB_CONSOLE", "off"),
                        ("WANDB_CONFIG_DIR", tmp_path / "wandb-config"), ("WANDB_CACHE_DIR", tmp_path / "wandb-cache"),
                        ("WANDB_DATA_DIR", tmp_path / "wandb-data")):
        monkeypatch.setenv(name, str(value))
    monkeypatch.delenv("WANDB_DIR", raising=False)
    import wandb

    wandb.teardown()  # W&B reads these variables when its process-wide service starts: start a fresh one
    yield
    wandb.teardown()


def wandb_records(path: Path) -> Iterator[Any]:
    """The records of an offline run's `run-ID.wandb` file: a 7-byte header (':W&B', magic, version), then
    LevelDB-log blocks of 32 KiB whose chunks (crc32, length, type; 1 full, 2-4 first / middle / last) hold
    serialized `wandb_internal_pb2.Record`s."""
    from wandb.proto.wandb_internal_pb2 import Record

    data, position, pending = path.read_bytes(), 7, b""
    assert data[:4] == b":W&B"
    while position + 7 <= len(data):
        if 32768 - position % 32768 < 7:  # a block's tail too short for a chunk header is padding
            position += 32768 - position % 32768
            continue
        _, length, kind = struct.unpack("<IHB", data[position: position + 7])
        pending += data[position + 7: position + 7 + length]
        position += 7 + length
        if kind in (1, 4):
            yield Record.FromString(pending)
            pending = b""


def wandb_session(run_dir: Path, index: int) -> tuple[str, dict[str, Any], dict[int, dict[str, Any]]]:
    """The W&B run id, config and history (step -> key -> value) of the index-th offline session in the run."""
    [path] = sorted(run_dir.glob("wandb/offline-run-*"))[index].glob("run-*.wandb")
    run_id, config, history = "", {}, {}
    for record in wandb_records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run_id = record.run.run_id
            config.update({item.key: json.loads(item.value_json) for item in record.run.config.update})
        elif kind == "config":
            config.update({item.key: json.loads(item.value_json) for item in record.config.update})
        elif kind == "history":
            row = {"/".join(item.nested_key) or item.key: json.loads(item.value_json) for item in record.history.item}
            history[record.history.step.num] = row
    config.pop("_wandb", None)
    return run_id, config, history


def test_wandb_offline_run_holds_the_config_history_and_images_and_a_resume_continues_it(
        tmp_path: Path, wandb_offline: None) -> None:
    import wandb

    run_dir = tmp_path / "run"
    config = tiny_config(loggers=["wandb"], project="tests")
    train(config, run_dir, progress=False, stop_at_step=1)
    wandb.teardown()  # W&B's service writes the run file out when it stops (at the latest when the process exits)
    run_id, logged, history = wandb_session(run_dir, 0)
    assert json.loads((run_dir / STATE_FILE).read_text()) == {"wandb": run_id}
    assert logged == resolved(run_dir)
    assert sorted(history) == [1] and history[1]["train/loss"] > 0 and "val_id/mse" in history[1]
    assert history[1]["samples/val_id/_type"] == "image-file"
    assert (run_dir / "wandb" / sorted(p.name for p in (run_dir / "wandb").glob("offline-run-*"))[0] / "files" /
            history[1]["samples/val_id/path"]).is_file()

    resumed = longer(config, 3)
    train(resumed, run_dir, resume=True, progress=False)
    wandb.teardown()
    second_id, logged, history = wandb_session(run_dir, 1)
    assert second_id == run_id and json.loads((run_dir / STATE_FILE).read_text()) == {"wandb": run_id}
    assert logged["training"]["max_steps"] == 3 and sorted(history) == [2, 3]


# ---------------------------------------------------------------------------- MLflow


def test_mlflow_file_store_holds_params_metrics_and_images_and_a_resume_continues_the_run(
        tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # mlflow-skinny's local store (its default needs mlflow)
    uri = (tmp_path / "mlruns").as_uri()
    run_dir = tmp_path / "run"
    config = tiny_config(loggers=["mlflow"], project="tests", run_name="tiny", mlflow={"tracking_uri": uri})
    train(config, run_dir, progress=False, stop_at_step=1)
    train(longer(config, 3), run_dir, resume=True, progress=False)

    client = MlflowClient(uri)
    [run] = client.search_runs([client.get_experiment_by_name("tests").experiment_id])
    assert json.loads((run_dir / STATE_FILE).read_text()) == {"mlflow": run.info.run_id}
    assert (run.info.run_name, run.info.status) == ("tiny", "FINISHED")
    expected = parameters(resolved(run_dir), 250, 6000) | {"training.max_steps": "2"}  # the first session's
    assert run.data.params == expected and expected["optimizer.lr"] == "0.001"
    assert expected["tracking.mlflow.tracking_uri"] == uri and expected["training.max_steps"] == "2"
    assert run.data.tags["training.max_steps"] == "3"  # parameters cannot change: the value in force is a tag
    assert [m.step for m in client.get_metric_history(run.info.run_id, "train/loss")] == [1, 2, 3]
    assert [m.step for m in client.get_metric_history(run.info.run_id, "val_ood/mse")] == [1, 2, 3]
    images = [item.path for item in client.list_artifacts(run.info.run_id, "images")]
    step_image = re.compile(r"images/samples~val_id\+step\+(\d+)\+.*\.png")  # MLflow's name for a step image
    assert sorted(int(match[1]) for path in images if (match := step_image.fullmatch(path))) == [1, 2, 3], images


def test_an_mlflow_start_that_fails_after_the_run_exists_ends_it_failed(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("mlflow")
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = (tmp_path / "mlruns").as_uri()

    def refuse(self: Any, run_id: str, **batch: Any) -> None:
        raise MlflowException("the server refused the batch")

    monkeypatch.setattr(MlflowClient, "log_batch", refuse)
    config = tiny_config(loggers=["mlflow"], project="tests", mlflow={"tracking_uri": uri})
    with pytest.raises(ConfigError, match="MLflow could not start the run at .*refused the batch"):
        train(config, tmp_path / "run", progress=False)
    client = MlflowClient(uri)
    [run] = client.search_runs([client.get_experiment_by_name("tests").experiment_id])
    assert run.info.status == "FAILED"


def test_mlflow_store_it_cannot_use_is_one_line(tmp_path: Path, capsys, monkeypatch) -> None:
    pytest.importorskip("mlflow")
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    config_path = tmp_path / "config.yaml"
    config_path.write_text(tiny_config(mlflow={"tracking_uri": (tmp_path / "mlruns").as_uri()}).to_yaml())
    cli_error(["train", config_path, "--out", tmp_path / "run", "--logger", "mlflow"], capsys,
              "MLflow could not start the run at file://", "MLFLOW_ALLOW_FILE_STORE")
    assert not (tmp_path / "run").exists()
