"""Run records: metrics.csv beside metrics.jsonl, train.log, environment.json (the experiment trackers:
test_trackers.py)."""

from __future__ import annotations

import json
import logging
import os
import platform
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import vision_bench.train.logging as run_logging  # noqa: E402
from vision_bench.cli import main  # noqa: E402
from vision_bench.train import TrainConfig, train  # noqa: E402
from vision_bench.train.environment import (  # noqa: E402
    describe_environment,
    git_commit,
    git_dirty,
    write_environment,
)
from vision_bench.train.logging import RunLogger, csv_rows, read_records  # noqa: E402

STUDY = "envgen/G1/1"
SIZE = 32
N_VAL = 2
TIMESTAMPED = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} "

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tiny_config(**training: int) -> TrainConfig:
    """A 32x32 U-Net with a 4-channel decoder, 8 training samples: one step per epoch."""
    return TrainConfig.from_dict({
        "seed": 0,
        "dataset": {"study": STUDY, "n_train": 8, "n_val": N_VAL, "spec": {"size": [SIZE, SIZE]}},
        "model": {"name": "unet:test_resnet", "options": {"decoder_width": 4}},
        "optimizer": {"lr": 1e-2},
        "schedule": {"warmup_steps": 1},
        "training": {"batch_size": 8, "max_steps": 2, "log_every": 1, **training},
    })


def csv_text(run_dir: Path) -> str:
    return (run_dir / "metrics.csv").read_text(encoding="utf-8")


def table_of_jsonl(run_dir: Path) -> str:
    """What metrics.csv must hold: the records of metrics.jsonl as a table."""
    records = read_records(run_dir / "metrics.jsonl")
    return csv_rows(records, run_logging.csv_columns(records), header=True)


def log_file_handlers() -> list[logging.Handler]:
    return [h for h in logging.getLogger("vision_bench").handlers if isinstance(h, logging.FileHandler)]


@pytest.fixture
def package_messages() -> Iterator[list[str]]:
    """The `vision_bench` logger's messages during the test, read from the logger itself (caplog reads
    the root logger, which the command line cuts the package off from once any test has run it)."""
    messages: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())  # type: ignore[method-assign]
    package = logging.getLogger("vision_bench")
    package.addHandler(handler)
    yield messages
    package.removeHandler(handler)


# ---------------------------------------------------------------------------- metrics.csv


def test_metrics_csv_is_the_jsonl_as_a_table_and_follows_a_resume(tmp_path) -> None:
    logger = RunLogger(tmp_path, enabled=True)
    logger.log({"kind": "step", "step": 1, "epoch": 1, "loss": 0.5, "lr": 0.1})
    logger.log({"kind": "step", "step": 2, "epoch": 1, "loss": 0.25, "lr": 0.1})
    logger.log({"kind": "epoch", "step": 2, "epoch": 1, "train_loss": 0.375, "val_id/mse": float("nan"), "best": True})
    logger.log({"kind": "step", "step": 3, "epoch": 2, "loss": 0.125, "lr": 0.05})
    logger.close()
    assert csv_text(tmp_path) == (
        "kind,step,epoch,loss,lr,train_loss,val_id/mse,best\n"
        "step,1,1,0.5,0.1,,,\n"
        "step,2,1,0.25,0.1,,,\n"
        "epoch,2,1,,,0.375,,True\n"  # NaN is null in the JSON and an empty cell here
        "step,3,2,0.125,0.05,,,\n"
    )

    resumed = RunLogger(tmp_path, enabled=True, resume_step=2)  # step 3 was after the checkpoint
    resumed.notes(2, ("precision bf16 needs CUDA", "second note"))
    resumed.log({"kind": "step", "step": 3, "epoch": 2, "loss": 0.125, "lr": 0.05, "grad_norm": 1.5})
    resumed.close()
    assert csv_text(tmp_path) == (
        "kind,step,epoch,loss,lr,train_loss,val_id/mse,best,notes,grad_norm\n"
        "step,1,1,0.5,0.1,,,,,\n"
        "step,2,1,0.25,0.1,,,,,\n"
        "epoch,2,1,,,0.375,,True,,\n"
        "note,2,,,,,,,precision bf16 needs CUDA; second note,\n"
        "step,3,2,0.125,0.05,,,,,1.5\n"
    )
    assert csv_text(tmp_path) == table_of_jsonl(tmp_path)


def test_a_disabled_logger_writes_nothing(tmp_path) -> None:
    logger = RunLogger(tmp_path, enabled=False)
    logger.log({"kind": "step", "step": 1, "loss": 0.5})
    logger.notes(1, ("a note",))
    logger.close()
    assert list(tmp_path.iterdir()) == [] and log_file_handlers() == []


# ---------------------------------------------------------------------------- train.log


def test_train_log_holds_the_package_messages_of_the_run_only(tmp_path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="vision_bench")
    library = logging.getLogger("vision_bench.models.somewhere")
    library.info("before the run")
    logger = RunLogger(tmp_path, enabled=True)
    library.info("during the run")
    logging.getLogger("elsewhere").warning("not the package's")
    logger.notes(0, ("precision bf16 needs CUDA",))
    logger.write_log_line("trained 0 steps")
    logger.close()
    library.warning("after the run")
    lines = (tmp_path / "train.log").read_text().splitlines()
    assert [re.sub(TIMESTAMPED, "", line) for line in lines] == [
        "INFO during the run", "WARNING note: precision bf16 needs CUDA", "INFO trained 0 steps"]
    assert all(re.match(TIMESTAMPED, line) for line in lines)
    assert log_file_handlers() == []

    RunLogger(tmp_path, enabled=True, resume_step=0).close()  # a resume appends
    assert (tmp_path / "train.log").read_text().splitlines() == lines
    RunLogger(tmp_path, enabled=True).close()  # a fresh run starts a fresh log
    assert (tmp_path / "train.log").read_text() == ""


def test_train_log_is_not_written_through_a_planted_link(tmp_path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "train.log").symlink_to(victim)
    logger = RunLogger(run_dir, enabled=True)
    logging.getLogger("vision_bench").warning("a message")
    logger.close()
    assert victim.read_text() == "keep" and "a message" in (run_dir / "train.log").read_text()
    assert not (run_dir / "train.log").is_symlink()


# ---------------------------------------------------------------------------- environment.json


def test_git_commit_of_the_working_directory(tmp_path, monkeypatch) -> None:
    repository = tmp_path / "repo"
    repository.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=repository, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], cwd=repository, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repository, capture_output=True, text=True,
                          check=True).stdout.strip()
    monkeypatch.chdir(repository)
    assert git_commit() == head and len(head) == 40
    assert git_dirty() is False
    (repository / "untracked.txt").write_text("x")  # untracked files leave the checkout clean
    assert git_dirty() is False
    subprocess.run([*git, "add", "untracked.txt"], cwd=repository, check=True)
    assert git_dirty() is True  # a staged change
    subprocess.run([*git, "commit", "-q", "-m", "y"], cwd=repository, check=True)
    (repository / "untracked.txt").write_text("changed")
    assert git_dirty() is True and git_dirty(tmp_path / "plain-missing") is None

    outside = tmp_path / "plain"
    outside.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # no repository above tmp_path counts
    assert git_commit(outside) is None
    monkeypatch.setenv("PATH", str(outside))  # no git program at all
    assert git_commit(repository) is None


def test_a_slurm_job_is_recorded(monkeypatch) -> None:
    from vision_bench.train.environment import SLURM_VARIABLES

    for name in SLURM_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert describe_environment(device=torch.device("cpu"), world_size=1, seed=0)["slurm"] is None
    for name, value in (("SLURM_JOB_ID", "4242"), ("SLURM_ARRAY_TASK_ID", "3"), ("SLURM_PROCID", "0")):
        monkeypatch.setenv(name, value)
    record = describe_environment(device=torch.device("cpu"), world_size=1, seed=0)
    assert record["slurm"] == {"SLURM_JOB_ID": "4242", "SLURM_ARRAY_TASK_ID": "3", "SLURM_PROCID": "0"}


def test_git_that_hangs_is_given_up(monkeypatch) -> None:
    def hang(*args, **kwargs):
        raise subprocess.TimeoutExpired(args[0], kwargs["timeout"])

    monkeypatch.setattr(subprocess, "run", hang)
    assert git_commit() is None


def test_environment_record_and_its_sessions(tmp_path, package_messages) -> None:
    import timm
    import torchvision

    import vision_bench

    first = describe_environment(device=torch.device("cpu"), world_size=2, seed=7)
    assert first["versions"] == {
        "vision_bench": vision_bench.__version__, "torch": torch.__version__, "torchvision": torchvision.__version__,
        "timm": timm.__version__, "numpy": np.__version__,
        "python": ".".join(str(part) for part in sys.version_info[:3]),
    }
    assert (first["device"], first["cuda_device"], first["world_size"], first["seed"]) == ("cpu", None, 2, 7)
    assert first["command"] == sys.argv and first["resumed_from_step"] is None
    assert {"started", "platform", "git_commit", "git_dirty"} <= set(first)
    assert first["hostname"] == platform.node() and "slurm" in first

    write_environment(tmp_path, first)
    assert json.loads((tmp_path / "environment.json").read_text()) == first
    second = describe_environment(device=torch.device("cpu"), world_size=1, seed=7, resumed_from_step=3)
    write_environment(tmp_path, second)
    third = describe_environment(device=torch.device("cpu"), world_size=1, seed=7, resumed_from_step=5)
    write_environment(tmp_path, third)
    written = json.loads((tmp_path / "environment.json").read_text())
    assert written == {**third, "earlier_sessions": [first, second]}

    (tmp_path / "environment.json").write_text("{not json")
    write_environment(tmp_path, third)
    assert json.loads((tmp_path / "environment.json").read_text())["earlier_sessions"] == []
    unreadable = tmp_path / "environment.json"
    assert package_messages == [f"{unreadable} is unreadable; it is replaced by this session's record"]


# ---------------------------------------------------------------------------- a training run


def test_a_run_writes_its_tracking_files_and_a_resume_keeps_them_consistent(tmp_path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="vision_bench")
    config = tiny_config(max_steps=3)
    first = train(config, tmp_path, progress=False, stop_at_step=2)
    assert first.step == 2 and log_file_handlers() == []
    # a crash after step 3 was logged but before its checkpoint: resuming forgets it, column included
    with open(tmp_path / "metrics.jsonl", "a") as handle:
        handle.write(json.dumps({"kind": "step", "step": 3, "epoch": 3, "ghost": 1.0}) + "\n")
    resumed = train(config, tmp_path, resume=True, progress=False)
    assert resumed.finished and resumed.step == 3

    assert csv_text(tmp_path) == table_of_jsonl(tmp_path) and "ghost" not in csv_text(tmp_path)
    rows = [line.split(",")[:3] for line in csv_text(tmp_path).splitlines()[1:]]
    assert rows == [["step", "1", "1"], ["epoch", "1", "1"], ["step", "2", "2"], ["epoch", "2", "2"],
                    ["step", "3", "3"], ["epoch", "3", "3"]]

    log = [re.sub(TIMESTAMPED, "", line) for line in (tmp_path / "train.log").read_text().splitlines()]
    epoch_lines = [line for line in log if line.startswith("INFO epoch")]
    assert [line.split(":")[0] for line in epoch_lines] == [
        "INFO epoch 1/3, step 1/3", "INFO epoch 2/3, step 2/3", "INFO epoch 3/3, step 3/3"]
    assert re.search(r"train_loss [\d.]+, val_id/mse [\d.]+.*; elapsed [\d.]+ s$", epoch_lines[0])
    summaries = [line for line in log if line.startswith("INFO trained")]
    assert summaries == [f"INFO {first.summary()}", f"INFO {resumed.summary()}"]  # both sessions

    environment = json.loads((tmp_path / "environment.json").read_text())
    assert environment["resumed_from_step"] == 2 and environment["seed"] == 0 and environment["world_size"] == 1
    assert [session["resumed_from_step"] for session in environment["earlier_sessions"]] == [None]


def test_a_failure_before_the_first_step_leaves_no_tracking_files(tmp_path, monkeypatch) -> None:
    from vision_bench.errors import ConfigError
    from vision_bench.train import loop

    def fail(self, run_log, stop_at_step):
        logging.getLogger("vision_bench.train").warning("about to fail")  # train.log exists and has a line
        raise ConfigError("a problem found before the first step")

    monkeypatch.setattr(loop._Run, "_train", fail)
    with pytest.raises(ConfigError, match="before the first step"):
        train(tiny_config(), tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


# ---------------------------------------------------------------------------- the console


def test_epoch_lines_with_a_progress_bar_start_on_their_own_line(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr("vision_bench.commands._common._is_terminal", lambda stream: True)  # bars on a terminal
    config_path = tmp_path / "config.yaml"
    config_path.write_text(tiny_config(max_steps=2).to_yaml())
    assert main(["train", str(config_path), "--out", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err
    segments = re.split(r"[\r\n]", err)
    for epoch in (1, 2):  # both logged while the bar is drawn: tqdm.write puts them above it
        assert any(s.startswith(f"vision-bench train: epoch {epoch}/2, step {epoch}/2: train_loss ") for s in segments)
    assert "train unet:test_resnet seed 0: 100%" in err
    assert log_file_handlers() == []


def test_a_log_file_gets_no_progress_bar_escape_codes(tmp_path) -> None:
    """Standard error sent to a file: no bar, so no carriage returns or escape codes, and the lines stay whole."""
    log = tmp_path / "generate.err"
    with log.open("w") as stream:
        done = subprocess.run([sys.executable, "-m", "vision_bench", "generate", "--study", STUDY, "--out",
                               str(tmp_path / "tasks"), "--n-train", "40", "--n-val", "2", "--n-test", "2"],
                              stderr=stream, stdout=subprocess.DEVNULL, timeout=300)
    text = log.read_text()
    assert done.returncode == 0, text
    assert "\r" not in text and "\x1b" not in text and "it/s" not in text
    assert "vision-bench generate: scale small with --n-train, --n-val, --n-test" in text and ": 48 pairs (" in text
