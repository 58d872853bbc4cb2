"""Stored sources and pipes: a run folder, checkpoint or model folder runs no command and opens no URL
by itself (only `--data` or `--trust-stored-data` do); a `pipe:` source that keeps writing after its
archive is not read for ever; a model folder with int64 weights or a deeply nested config.json is
one line. Everything uses the real thing: a tampered checkpoint, a real shell command, a real file."""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import yaml
from cli_errors import cli_error, deadline

from render.spec import RenderSpec
from vision_bench.cli import main
from vision_bench.data import shard_stream
from vision_bench.data.export import export_dataset
from vision_bench.data.export_formats import ExportOptions
from vision_bench.data.opening import open_dataset, outside_source
from vision_bench.errors import DataError
from vision_bench.models import create_model, load_pretrained, save_pretrained
from vision_bench.models.pretrained import ModelFolderError
from vision_bench.tasks.config import TaskConfig
from vision_bench.train import TrainConfig, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SIZE = 32
SPEC = RenderSpec(size=(SIZE, SIZE))
TASK = {"transformations": ["translate_up"], "depth": [1, 1], "grid_height": [4, 6], "grid_width": [4, 6],
        "n_objects": [1, 2], "seed": 7, "samples": {"train": 4, "val_id": 2, "val_ood": 2, "test_id": 2, "test_ood": 2}}
SHARD = "{split}/part-00000.tar"
QUIET = ["--baselines", "", "--device", "cpu", "--offline", "--no-progress"]


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A WebDataset export: one shard of 2 to 4 samples per split."""
    root = tmp_path_factory.mktemp("shards")
    export_dataset(TaskConfig.from_dict(TASK), SPEC, root, ExportOptions(format="webdataset", shard_size=4))
    return root


@pytest.fixture(scope="module")
def run(shards: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-step training run on the local shards."""
    config = TrainConfig.from_dict({
        "seed": 0, "dataset": {"path": str(shards / SHARD)},
        "model": {"name": "unet:test_resnet", "options": {"decoder_width": 4}},
        "schedule": {"warmup_steps": 1}, "training": {"batch_size": 2, "max_steps": 1, "eval_batch_size": 2},
    })
    folder = tmp_path_factory.mktemp("run") / "run"
    train(config, folder, progress=False)
    return folder


def tampered(run: Path, tmp_path: Path, path: str, splits: dict[str, str] | None = None) -> Path:
    """A copy of `run` whose checkpoints name `path` as their data, with `splits` as the stored mapping of split
    names (as anyone can write them: the issue's recipe)."""
    copy = tmp_path / "sent-run"
    shutil.copytree(run, copy)
    for name in ("best.pt", "last.pt"):
        checkpoint = torch.load(copy / "checkpoints" / name, weights_only=True)
        dataset = checkpoint["config"]["dataset"]
        checkpoint["config"]["dataset"] = {**dataset, "study": None, "n_train": None, "n_val": None, "path": path,
                                           "splits": splits}
        torch.save(checkpoint, copy / "checkpoints" / name)
    return copy





@pytest.fixture
def counting_server(shards: Path) -> Iterator[tuple[str, list[str]]]:
    """The shards served on loopback; the list collects every path requested."""
    requested: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            requested.append(self.path)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(shards)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requested
    finally:
        server.shutdown()
        server.server_close()





# ---------------------------------------------------------------------------- a stored source never runs


@pytest.mark.parametrize(("source", "splits"), [
    ("pipe:touch {marker}; cat {shards}/{split}/part-00000.tar", None),
    ("{{pipe:touch {marker} #,pipe:true #}}{split}.tar", None),  # a command hidden in a brace list
    ("{{pi,pi}}pe:touch {marker}; cat {shards}/{split}/part-00000.tar", None),  # `pipe:` only after expansion
    ("{split}touch {marker}; cat {shards}/test_id/part-00000.tar", {"test_id": "pipe:", "test_ood": "pipe:"}),
])
@pytest.mark.slow
def test_a_stored_pipe_source_never_runs(source: str, splits: dict[str, str] | None, run: Path, shards: Path,
                                         tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "PWNED"
    stored = source.format(marker=marker, shards=shards, split="{split}")
    sent = tampered(run, tmp_path, stored, splits)
    before = sorted(path.relative_to(sent) for path in sent.rglob("*"))
    line = cli_error(["evaluate", str(sent), "--out", str(tmp_path / "ev"), *QUIET], capsys)
    assert "best.pt (dataset.path)" in line and repr(stored) in line and "a shell command" in line
    assert "--trust-stored-data" in line and "--data" in line
    assert not marker.exists()
    assert not (tmp_path / "ev").exists()
    assert sorted(path.relative_to(sent) for path in sent.rglob("*")) == before


@pytest.mark.slow
def test_a_stored_url_is_never_fetched(run: Path, tmp_path: Path, counting_server: tuple[str, list[str]],
                                       capsys: pytest.CaptureFixture[str]) -> None:
    root, requested = counting_server
    sent = tampered(run, tmp_path, f"{root}/{SHARD}")
    line = cli_error(["evaluate", str(sent), "--out", str(tmp_path / "ev"), *QUIET], capsys)
    assert "a URL" in line and "--trust-stored-data" in line
    assert requested == []
    sent = tampered(run, tmp_path / "hub", "hf://someone/their-dataset")
    assert "a Hugging Face Hub id" in cli_error(["evaluate", str(sent), *QUIET], capsys)
    assert not (sent / "evaluation").exists()


@pytest.mark.slow
def test_data_and_the_trust_flag_do_run_the_source(run: Path, shards: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "ran"
    command = f"pipe:touch {marker}; cat {shards}/{SHARD}"
    sent = tampered(run, tmp_path, command)
    argv = ["evaluate", str(sent), "--splits", "test_id", *QUIET]
    assert main([*argv, "--out", str(tmp_path / "trusted"), "--trust-stored-data"]) == 0
    assert marker.exists() and (tmp_path / "trusted" / "metrics.json").is_file()
    marker.unlink()
    assert main([*argv, "--out", str(tmp_path / "named"), "--data", command]) == 0
    assert marker.exists() and (tmp_path / "named" / "metrics.json").is_file()


@pytest.mark.slow
def test_export_model_and_train_resume_read_no_stored_source(run: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "PWNED"
    sent = tampered(run, tmp_path, f"pipe:touch {marker}; false {{split}}")
    assert main(["export-model", str(sent), "--out", str(tmp_path / "model")]) == 0
    assert (tmp_path / "model" / "config.json").is_file()
    # a resumed run reads the data of the CONFIG the user passes, whatever the checkpoint says
    assert main(["train", str(sent / "config.yaml"), "--out", str(sent), "--resume", "--device", "cpu",
                 "--no-progress"]) == 0
    assert not marker.exists()


@pytest.mark.slow
def test_a_resumed_bench_runs_no_source_its_runs_name(shards: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "bench.yaml"
    config.write_text(yaml.safe_dump({
        "name": "tiny", "experiments": ["envgen/G1/1"], "seeds": [0], "baselines": [],
        "models": [{"name": "unet:test_resnet", "options": {"decoder_width": 4}}],
        "data": {"n_train": 4, "n_val": 2, "n_test": 2, "spec": {"size": [SIZE, SIZE]}},
        "train": {"training": {"batch_size": 2, "eval_batch_size": 2, "max_steps": 1}, "schedule": {"warmup_steps": 1}},
        "evaluate": {"splits": ["test_id"], "batch_size": 2, "sheet_samples": 1},
    }))
    out = tmp_path / "out"
    argv = ["bench", str(config), "--out", str(out), "--device", "cpu", "--offline", "--no-progress"]
    assert main(argv) == 0
    run = next(out.glob("runs/**/checkpoints")).parent  # a cell someone else computed, left unevaluated
    shutil.rmtree(run / "evaluation")
    marker = tmp_path / "PWNED"
    shutil.copytree(tampered(run, tmp_path, f"pipe:touch {marker}; cat {shards}/{SHARD}"), run, dirs_exist_ok=True)
    line = cli_error(argv, capsys)
    assert "best.pt (dataset.path)" in line and "--trust-stored-data" in line
    assert not marker.exists() and not (run / "evaluation").exists()
    assert main([*argv, "--trust-stored-data"]) == 0
    assert marker.exists()


def test_outside_sources_are_told_from_local_data(tmp_path: Path) -> None:
    assert outside_source("pipe:cat x") == "a shell command"
    assert outside_source("data/{pipe:cat x #,y}{split}.tar") == "a shell command"
    assert outside_source("https://host/{split}.tar") == "a URL"
    assert outside_source("http:/host/{split}.tar") == "a URL"  # what pathlib makes of http://
    assert outside_source("hf://user/name") == "a Hugging Face Hub id"
    assert outside_source(f"hf://{tmp_path}") is None
    assert outside_source("data/{split}/part-{00000..00003}.tar") is None
    assert outside_source("compgen/C1/1") is None


# ---------------------------------------------------------------------------- pipes


def test_a_pipe_that_keeps_writing_after_its_archive_is_not_read_for_ever(shards: Path) -> None:
    expected = list(open_dataset(str(shards / SHARD), "test_id"))
    with deadline(60):
        got = list(open_dataset(f"pipe:cat {shards}/{SHARD}; cat /dev/zero", "test_id"))
    assert [item["index"] for item in got] == [item["index"] for item in expected]


def test_a_pipe_still_running_after_its_archive_is_stopped_with_one_line(
        shards: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shard_stream, "END_WAIT_S", 0.5)  # the bounded wait, shortened; the command is real
    stopped = r"still running 0.5 s after its tar archive ended, so it was stopped; make it end once it has written"
    with deadline(30), pytest.raises(DataError, match=stopped) as caught:
        list(open_dataset(f"pipe:cat {shards}/{SHARD}; sleep 60", "test_id"))
    assert "\n" not in str(caught.value)


@pytest.mark.slow
def test_a_pipe_that_writes_no_tar_is_named_not_blamed_for_sigpipe(run: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    line = cli_error(["evaluate", str(run), "--out", str(tmp_path / "ev"), "--data", "pipe:yes # {split}",
                           *QUIET], capsys)
    assert "the command's output is not a tar stream" in line and "write a tar archive" in line
    assert "exit status" not in line
    assert not (tmp_path / "ev").exists()


def test_a_pipe_that_fails_is_still_blamed() -> None:
    with pytest.raises(DataError, match="the command failed .exit status 3."):
        open_dataset("pipe:exit 3 # {split}.tar", "train")


# ---------------------------------------------------------------------------- model folders


@pytest.fixture
def model_folder(tmp_path: Path) -> Path:
    options = {"image_size": SIZE, "decoder_width": 4}
    save_pretrained(create_model("unet:test_resnet", **options), tmp_path / "model", options=options)
    return tmp_path / "model"


def test_int64_weights_are_refused_not_cast(model_folder: Path) -> None:
    from safetensors.torch import load_file, save_file

    state = load_file(model_folder / "model.safetensors")
    save_file({key: value.to(torch.int64) for key, value in state.items()}, model_folder / "model.safetensors")
    with pytest.raises(ModelFolderError,
                       match=r"of another dtype \(.*: file int64, model float32.*\); export the model again") as caught:
        load_pretrained(model_folder)
    assert "\n" not in str(caught.value)


def test_a_deeply_nested_config_is_one_line(model_folder: Path) -> None:
    (model_folder / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ModelFolderError, match="config.json is nested too deeply to be a model config; give a folder "
                                               "written by `vision-bench export-model`"):
        load_pretrained(model_folder)


def test_stored_starting_weights_are_never_fetched(model_folder: Path) -> None:
    config = json.loads((model_folder / "config.json").read_text())
    config["model_args"]["pretrained"] = True  # timm's weights from the Hub, which the saved weights replace
    (model_folder / "config.json").write_text(json.dumps(config))
    model = load_pretrained(model_folder)  # offline in the tests: a fetch would fail
    assert model.image_size == SIZE


# ---------------------------------------------------------------------------- local Hugging Face folders


def test_a_local_dataset_folder_runs_no_script_and_fetches_no_file(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    folder = tmp_path / "hf"
    folder.mkdir()
    (folder / "hf.py").write_text(f"open({str(tmp_path / 'PWNED')!r}, 'w')\n")
    with pytest.raises(DataError, match=r"holds a loading script \(hf.py\), which vision-bench never runs"):
        open_dataset(f"hf://{folder}", "train")
    (folder / "hf.py").unlink()
    (folder / "README.md").write_text("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n"
                                      "    path: https://example.invalid/train.parquet\n---\n")
    with pytest.raises(DataError, match="names remote data files .'https://example.invalid/train.parquet'."):
        open_dataset(f"hf://{folder}", "train")
    assert not (tmp_path / "PWNED").exists()
