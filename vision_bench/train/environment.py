"""RUN_DIR/environment.json: what a training session ran on, so a result can be traced and repeated.

Package versions, the platform and host name, the Slurm job (when the run is a Slurm job), the git
commit of the working directory's repository (when there is one) and whether its tracked files had
uncommitted changes, the device, the world size, the seed, the command line and the start time. A resumed run keeps
the earlier sessions' records under `earlier_sessions`, so a run continued on another machine says so.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import platform
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import torch

from vision_bench.io.atomic import atomic_write_text
from vision_bench.io.documents import JSONDict

ENVIRONMENT_FILE = "environment.json"
GIT_TIMEOUT_S = 5.0
PACKAGES = ("vision_bench", "torch", "torchvision", "timm", "numpy")
SLURM_VARIABLES = ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_JOB_NAME", "SLURM_PROCID",
                   "SLURM_NODELIST")
"""The Slurm environment variables recorded when set (the job, its array index, the task within it)."""

logger = logging.getLogger(__name__)


def package_versions() -> dict[str, str | None]:
    """vision_bench, torch, torchvision, timm, numpy and python versions (None for a package that is missing).

    Read from the modules themselves, so a build tag such as torch's `+cu130` is kept.
    """
    versions: dict[str, str | None] = {}
    for package in PACKAGES:
        try:
            versions[package] = str(importlib.import_module(package).__version__)
        except ImportError:
            versions[package] = None
    versions["python"] = platform.python_version()
    return versions


def _git(arguments: list[str], folder: str | Path | None) -> str | None:
    """The output of `git ARGUMENTS` in `folder` (default: the working directory); None when it fails."""
    try:
        finished = subprocess.run(
            ["git", *arguments],
            cwd=folder if folder is not None else os.getcwd(),
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return finished.stdout if finished.returncode == 0 else None


def git_commit(folder: str | Path | None = None) -> str | None:
    """`git rev-parse HEAD` in `folder` (default: the working directory); None without git or a repository."""
    commit = (_git(["rev-parse", "HEAD"], folder) or "").strip()
    return commit if re.fullmatch(r"[0-9a-f]{40,64}", commit) else None


def git_dirty(folder: str | Path | None = None) -> bool | None:
    """Whether tracked files differ from the commit (`git status --porcelain --untracked-files=no`); None without
    git or a repository."""
    status = _git(["status", "--porcelain", "--untracked-files=no"], folder)
    return None if status is None else bool(status.strip())


def slurm_job() -> dict[str, str] | None:
    """The set `SLURM_VARIABLES`, or None outside Slurm."""
    found = {name: os.environ[name] for name in SLURM_VARIABLES if name in os.environ}
    return found or None


def describe_environment(
    *, device: torch.device, world_size: int, seed: int, resumed_from_step: int | None = None
) -> JSONDict:
    """The record of one training session (see the module docstring)."""
    return {
        "started": datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": list(sys.argv),
        "versions": package_versions(),
        "platform": platform.platform(),
        "hostname": platform.node(),
        "slurm": slurm_job(),
        "git_commit": git_commit(),
        "git_dirty": git_dirty(),
        "device": str(device),
        "cuda_device": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "world_size": world_size,
        "seed": seed,
        "resumed_from_step": resumed_from_step,
    }


def write_environment(run_dir: Path, session: JSONDict) -> None:
    """Write RUN_DIR/environment.json atomically; when resuming, the earlier sessions move under `earlier_sessions`."""
    path = run_dir / ENVIRONMENT_FILE
    record = dict(session)
    if session.get("resumed_from_step") is not None:
        record["earlier_sessions"] = _earlier_sessions(path)
    atomic_write_text(path, json.dumps(record, indent=2) + "\n")


def recorded_commands(run_dir: Path) -> list[list[str]]:
    """The command line of each of the run's training sessions, oldest first ([] without a readable record)."""
    try:
        record = json.loads((run_dir / ENVIRONMENT_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return []
    if not isinstance(record, dict):
        return []
    earlier = record.get("earlier_sessions")
    sessions = [*(earlier if isinstance(earlier, list) else []), record]
    return [[str(part) for part in session["command"]] for session in sessions
            if isinstance(session, dict) and isinstance(session.get("command"), list)]


def _earlier_sessions(path: Path) -> list[JSONDict]:
    """The sessions recorded in an existing environment.json, oldest first ([] when there is none)."""
    if not path.is_file() or path.is_symlink():
        return []
    try:
        previous = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        logger.warning("%s is unreadable; it is replaced by this session's record", path)
        return []
    if not isinstance(previous, dict):
        return []
    earlier = previous.pop("earlier_sessions", [])
    return [*(earlier if isinstance(earlier, list) else []), previous]
