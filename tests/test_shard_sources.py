"""WebDataset shard sources: remote shards through fsspec (memory:// and a loopback http server open the same
way as local shards; an http server that fails once, with a 503 or a connection dropped mid-answer, is retried
and gives the same samples; one that always fails, and a protocol whose package is missing, are one line), and
a shard pattern per split (a range that fits train but not val)."""

from __future__ import annotations

import functools
import http.server
import io
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from torch.utils.data import DataLoader

from render.codec import encode
from render.spec import RenderSpec
from vision_bench.data import remote_files
from vision_bench.data.collate import collate
from vision_bench.data.external import ReadOptions
from vision_bench.data.opening import open_dataset
from vision_bench.data.streaming import ShardStreamDataset
from vision_bench.data.webdataset import sample_members, tar_bytes
from vision_bench.errors import ConfigError, DataError
from vision_bench.train import TrainConfig, train

fsspec = pytest.importorskip("fsspec")
SIZE = 32
PATTERN = "{split}-{0..1}.tar"
SAMPLES = 6  # three per shard


def shard(first: int, count: int) -> bytes:
    """`count` samples whose input is filled with their number and whose target with 255 minus it."""
    members: list[tuple[str, bytes]] = []
    for number in range(first, first + count):
        picture = np.full((SIZE, SIZE, 3), number, np.uint8)
        members += sample_members(f"s{number:04d}", {"input.png": encode(picture), "target.png": encode(255 - picture)})
    return tar_bytes(members)


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("shards")
    for number in range(2):
        (folder / f"train-{number}.tar").write_bytes(shard(3 * number, 3))
    (folder / "val-0.tar").write_bytes(shard(100, 2))
    return folder


@pytest.fixture
def memory(local: Path) -> Iterator[str]:
    """The shards in fsspec's memory file system, under a folder of this test's own."""
    fs = fsspec.filesystem("memory")
    root = f"/shards-{uuid.uuid4().hex}"
    for path in local.glob("train-*"):
        fs.pipe(f"{root}/{path.name}", path.read_bytes())
    yield f"memory://{root}"
    fs.rm(root, recursive=True)


def values(dataset: object) -> list[tuple[str, int, int]]:
    """(key, input value, target value) of every item, in order."""
    return [(item["key"], round(float(item["input"][0, 0, 0]) * 255), round(float(item["target"][0, 0, 0]) * 255))
            for item in dataset]  # type: ignore[attr-defined]


EXPECTED = [(f"s{n:04d}", n, 255 - n) for n in range(SAMPLES)]


def test_memory_urls_stream_like_local_shards(local: Path, memory: str) -> None:
    assert values(open_dataset(str(local / PATTERN), "train")) == EXPECTED
    stream = open_dataset(f"{memory}/{PATTERN}", "train")
    assert isinstance(stream, ShardStreamDataset) and values(stream) == EXPECTED
    assert stream.shards == [f"{memory}/train-0.tar", f"{memory}/train-1.tar"]
    assert open_dataset(f"{memory}/train-*.tar".replace("train", "{split}"), "train").shards == stream.shards  # a glob
    with pytest.raises(DataError, match=r"train-2.tar: cannot be read \(not found\); check the address"):
        list(open_dataset(f"{memory}/{{split}}-{{1..2}}.tar", "train"))
    with pytest.raises(DataError, match="matches no file"):
        open_dataset(f"{memory}/{{split}}-x*.tar", "train")


def test_remote_training_order_is_dealt_to_ranks_and_workers_and_resumes_exactly(memory: str) -> None:
    """Shards of unknown length: pass after pass, the same for 0 or 2 workers; a resume skips exactly the
    batches already trained; two ranks read disjoint shards."""
    stream = open_dataset(f"{memory}/{PATTERN}", "train")
    stream.train_order(batch_size=2, seed=5, shuffle_buffer=2)

    def keys(workers: int, start: int, batches: int) -> list[str]:
        stream.set_position(0, start)
        loader = DataLoader(stream, batch_size=2, collate_fn=collate, num_workers=workers)
        taken: list[str] = []
        for number, batch in enumerate(loader):
            if number == batches:
                break
            taken += list(batch["key"])
        return taken

    single = keys(0, 0, 6)  # two passes of three batches
    assert sorted(single[:6]) == sorted(key for key, _, _ in EXPECTED) and single[:6] != single[6:]
    assert keys(2, 0, 6) == single
    assert keys(0, 2, 4) == single[4:]
    ranks = []
    for rank in range(2):
        dealt = open_dataset(f"{memory}/{PATTERN}", "train")
        dealt.train_order(batch_size=1, seed=5, shuffle_buffer=0, rank=rank, world_size=2)
        ranks.append({item["key"] for _, item in zip(range(3), dealt)})
    assert ranks == [{"s0000", "s0001", "s0002"}, {"s0003", "s0004", "s0005"}]


class FlakyHandler(http.server.SimpleHTTPRequestHandler):
    """Serves a folder; the first `failures` answers to each path are a 503 (`mode` "503"), or the first half of
    the file on a dropped connection (`mode` "drop")."""

    mode = "503"
    failures = 1
    seen: dict[str, int]

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        count = self.seen.get(self.path, 0)
        self.seen[self.path] = count + 1
        if count >= self.failures:
            return super().do_GET()
        if self.mode == "503":
            self.send_error(503, "busy")
            return
        data = (Path(self.directory) / self.path.lstrip("/")).read_bytes()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[: len(data) // 2])
        self.wfile.flush()
        self.close_connection = True


@pytest.fixture
def flaky(local: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[type[FlakyHandler]]:
    """A loopback http server of the local shards; the test sets its handler's `mode` and `failures`."""
    pytest.importorskip("aiohttp")
    monkeypatch.setattr(remote_files, "RETRY_WAIT_S", 0.01)
    handler = type("Handler", (FlakyHandler,), {"seen": {}})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(local)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    handler.root = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    try:
        yield handler
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("mode", ["503", "drop"])
def test_http_failures_are_retried(flaky: type[FlakyHandler], mode: str) -> None:
    flaky.mode = mode
    stream = open_dataset(f"{flaky.root}/{PATTERN}", "train")  # type: ignore[attr-defined]
    assert values(stream) == EXPECTED
    assert flaky.seen["/train-1.tar"] == 2  # one failure, one retry (the first shard is read again per pass)


def test_http_that_always_fails_is_one_line(flaky: type[FlakyHandler]) -> None:
    flaky.failures = 1000
    with pytest.raises(DataError) as caught:
        open_dataset(f"{flaky.root}/{PATTERN}", "train")  # type: ignore[attr-defined]
    message = str(caught.value)
    assert message.endswith("train-0.tar: cannot be read (status 503) after 4 tries; check the address, "
                            "or copy the files here") and "\n" not in message
    assert flaky.seen["/train-0.tar"] == remote_files.ATTEMPTS
    flaky.seen.clear()
    with pytest.raises(DataError, match=r"missing-0.tar: cannot be read \(not found\); check"):
        open_dataset(f"{flaky.root}/missing-{{0..1}}.tar".replace("missing", "{split}"), "missing")
    assert flaky.seen == {"/missing-0.tar": 1}  # a missing file is not retried


def test_a_missing_protocol_package_names_what_to_install(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from cli_errors import cli_error

    monkeypatch.setitem(sys.modules, "s3fs", None)  # not installed, whatever this machine has
    monkeypatch.setitem(sys.modules, "gcsfs", None)
    loaded = sys.modules["fsspec.registry"]._registry  # the classes fsspec has imported: none counts
    for protocol in ("s3", "gs"):
        monkeypatch.delitem(loaded, protocol, raising=False)
    with pytest.raises(DataError, match=r"^s3://bucket/train-0.tar: reading s3:// URLs needs the s3fs package; "
                                        r"pip install s3fs$"):
        open_dataset("s3://bucket/{split}-{0..1}.tar", "train")
    config = tmp_path / "run.yaml"
    config.write_text("dataset: {path: 'gs://bucket/{split}-0.tar'}\nmodel: {name: 'unet:test_resnet'}\n")
    cli_error(["train", config, "--out", tmp_path / "run"], capsys, "needs the gcsfs package; pip install gcsfs")


def test_the_retry_rule() -> None:
    class Answer(Exception):
        def __init__(self, status: int) -> None:
            self.status = status

    assert [remote_files.transient(Answer(status)) for status in (500, 503, 429, 408, 404, 403)] == [
        True, True, True, True, False, False]
    assert remote_files.transient(ConnectionResetError()) and remote_files.transient(TimeoutError())
    assert not remote_files.transient(FileNotFoundError()) and not remote_files.transient(PermissionError())


class Tracked(io.BytesIO):
    """A stream of `data` whose seek raises while `seek_fails` says so and whose close raises when `close_fails`;
    every one made is kept in `made`."""

    made: list[Tracked] = []

    def __init__(self, data: bytes, *, seek_fails: bool = False, close_fails: bool = False) -> None:
        super().__init__(data)
        self.seek_fails, self.close_fails = seek_fails, close_fails
        Tracked.made.append(self)

    def seek(self, offset: int, whence: int = 0) -> int:
        if self.seek_fails:
            raise RuntimeError("the connection broke while seeking")
        return super().seek(offset, whence)

    def read(self, size: int | None = -1) -> bytes:
        if self.close_fails:  # the broken one: it fails to read and to close
            raise ConnectionResetError("the connection dropped")
        return super().read(size)

    def close(self) -> None:
        super().close()
        if self.close_fails:
            raise OSError("the connection could not be closed")


def test_a_reopened_stream_is_closed_when_its_seek_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    import fsspec

    monkeypatch.setattr(remote_files, "RETRY_WAIT_S", 0.0)
    data = bytes(range(256)) * 4
    fsspec.filesystem("memory").pipe("/reopen/file.bin", data)
    reader = remote_files.RetryingReader("memory://reopen/file.bin")
    assert reader.read(100) == data[:100]
    Tracked.made = []
    reader.stream = Tracked(data, close_fails=True)  # the next read fails, and so does closing it

    class Reopening:
        """The file system's reopens: the first stream's seek fails, the second's works."""

        def open(self, path: str, mode: str, **options: Any) -> Tracked:
            return Tracked(data, seek_fails=len(Tracked.made) == 1)

    reader.fs = Reopening()  # type: ignore[assignment]
    assert reader.read() == data[100:]  # no raw error: the broken stream's close is ignored, the bad reopen retried
    broken, failed_seek, working = Tracked.made
    assert broken.closed and failed_seek.closed and not working.closed
    reader.close()
    assert working.closed


# ---------------------------------------------------------------------------- a pattern per split


def test_each_split_reads_its_own_pattern(local: Path) -> None:
    with pytest.raises(DataError, match=r"val_id-0.tar: no such shard file"):
        open_dataset(str(local / PATTERN), "val_id")  # one range for every split does not fit val
    patterns = {"train": str(local / "train-{0..1}.tar"), "val_id": str(local / "val-0.tar"),
                "test_id": str(local / "{split}-{0..1}.tar")}  # {split} is optional, and still filled in
    assert values(open_dataset(patterns, "train")) == EXPECTED
    assert values(open_dataset(patterns, "val_id")) == [("s0100", 100, 155), ("s0101", 101, 154)]
    assert values(open_dataset(patterns, "test_id", read=ReadOptions(splits={"test_id": "train"}))) == EXPECTED
    with pytest.raises(DataError, match=r"^the shard patterns name no val_ood split \(they name train, val_id, "
                                        r"test_id\); add `val_ood: PATTERN` to dataset.path, or leave val_ood out "
                                        r"of dataset.val_splits$"):
        open_dataset(patterns, "val_ood")


def pattern_config(path: object, **dataset: object) -> TrainConfig:
    return TrainConfig.from_dict({
        "dataset": {"path": path, **dataset}, "model": {"name": "unet:test_resnet", "options": {"decoder_width": 4}},
        "schedule": {"warmup_steps": 1}, "training": {"batch_size": 2, "max_steps": 1, "eval_batch_size": 2},
    })


def test_patterns_per_split_are_checked_in_the_config(local: Path) -> None:
    good = {"train": "train-{0..1}.tar", "val_id": "val-0.tar"}
    assert pattern_config(good, val_splits=["val_id"]).dataset.source == good
    assert pattern_config("a/{split}.tar").dataset.source == "a/{split}.tar"  # one pattern, as before
    for path, needle in [
        ({**good, "val_id": "val-folder"}, "dataset.path.val_id: 'val-folder' is not a shard pattern"),
        ({**good, "val_id": "val-{3..1}.tar"}, r"dataset.path.val_id: val-\{3..1\}.tar: the range \{3..1\} counts "
                                               "down"),
        (good, "dataset.path names shards per split but none for val_ood; add `val_ood: PATTERN`, or leave val_ood "
               "out of dataset.val_splits"),
        ({"val_id": "v.tar", "val_ood": "o.tar"}, "none for train; add `train: PATTERN`$"),
    ]:
        with pytest.raises(ConfigError, match=needle):
            pattern_config(path)
    with pytest.raises(ConfigError, match="dataset.path"):
        pattern_config({"training": "t.tar"})


def test_training_and_evaluating_on_patterns_per_split(local: Path, memory: str, tmp_path: Path) -> None:
    from vision_bench.data.opening import outside_source
    from vision_bench.evaluation.data import run_data

    patterns = {"train": str(local / "train-{0..1}.tar"), "val_id": str(local / "val-0.tar"),
                "test_id": str(local / "val-0.tar")}
    config = pattern_config(patterns, val_splits=["val_id"])
    result = train(config, tmp_path / "run", progress=False)
    assert result.step == 1 and "val_id/mse" in result.final_metrics
    data = run_data(config, RenderSpec(size=(SIZE, SIZE)), ("test_id",), data=None, n_test=None)
    assert len(data.splits["test_id"]) == 2 and data.source == {"path": patterns}
    assert outside_source(patterns) is None
    assert outside_source({**patterns, "test_id": f"{memory}/train-0.tar"}) == "a URL"
    assert outside_source({**patterns, "test_id": "pipe:cat {split}.tar"}) == "a shell command"
