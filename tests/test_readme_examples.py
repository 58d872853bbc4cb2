"""README's examples run as written, in order, as a new user would type them: the `vision-bench` commands of its
code blocks (sample counts scaled down), the Python block, and every config a bench line names. An example that
breaks (a renamed option, a moved config, a command that no longer chains into the next) fails here.

Not run, and why: the two set-up commands (CI runs the second; the quickstart has its own test), `bench` lines
(minutes each; their configs are loaded and checked instead, and tests/test_bench.py runs a bench), lines whose
inputs are placeholders a user supplies (`pred.png`, their own `run.yaml`, `USER/...` hub ids, `https://host/...`), and
the Slurm script.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest

from vision_bench.bench.runner import load_bench_config
from vision_bench.cli import main

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
SCALED = {"--n-train": "16", "--n-val": "4", "--n-test": "8"}
"""Sample counts a scaled-down run uses in place of README's."""
PLACEHOLDERS = ("pred.png", "a.png", "preds/", "run.yaml", "https://host/", "USER/", "/shared/", "$SLURM")
"""Markers of inputs a user supplies (their own files, their hub account, their cluster)."""


def code_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block, in order."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)]


ENVIRONMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")
"""A shell word that sets an environment variable for the command after it (`NAME=value vision-bench ...`)."""


def commands(body: str) -> list[str]:
    """The `vision-bench` lines of a shell block (with the variables they set first), continuation lines joined and
    comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", body)
    lines = [shlex.split(line, comments=True) for line in joined.splitlines()]
    found = []
    for words in lines:
        command = [word for word in words if not ENVIRONMENT.match(word)]
        if command[:1] == ["vision-bench"] and words[: len(words) - len(command)] == [
                word for word in words if ENVIRONMENT.match(word)]:
            found.append(" ".join(shlex.quote(part) for part in words))
    return found


def scaled(words: list[str]) -> list[str]:
    """README's sample counts scaled down; `export` and `generate` get them when README leaves the defaults."""
    out = [SCALED.get(previous, word) if previous in SCALED else word for previous, word in zip([""] + words, words)]
    if out[1] in ("export", "generate"):
        out += [item for flag, value in SCALED.items() if flag not in out for item in (flag, value)]
    return out


def test_readme_blocks_are_found() -> None:
    """The parser sees README's blocks: the set-up commands first, then the examples this test runs."""
    blocks = code_blocks(README.read_text(encoding="utf-8"))
    assert blocks[0][0] == "bash" and "pytest" in blocks[0][1]
    lines = [line for language, body in blocks[1:] if language == "bash" for line in commands(body)]
    assert len(lines) >= 15 and any(line.startswith("vision-bench train") for line in lines)


@pytest.mark.slow
def test_readme_examples_run_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "configs").symlink_to(REPO / "configs")  # README's paths are relative to a clone's root
    ran, checked = [], []
    for language, body in code_blocks(README.read_text(encoding="utf-8"))[1:]:
        if language == "python":
            runnable = "\n".join(line for line in body.splitlines() if not any(m in line for m in PLACEHOLDERS))
            exec(compile(runnable, "README.md", "exec"), {})  # noqa: S102  (README's own example)
            ran.append("python block")
            continue
        if language != "bash":
            continue
        for line in commands(body):
            words = shlex.split(line)
            while ENVIRONMENT.match(words[0]):
                name, _, value = words.pop(0).partition("=")
                monkeypatch.setenv(name, value)
            if words[1] == "bench":
                load_bench_config(Path(words[2]))  # the config exists and validates
                checked.append(words[2])
                continue
            if any(marker in line for marker in PLACEHOLDERS) or words[1] == "weights":
                continue
            if "<model>" in line:
                predictions = sorted((tmp_path / "runs/smoke/eval-g1-64/predictions").iterdir())
                words = [word.replace("<model>", predictions[0].name) for word in words]
            capsys.readouterr()
            code = main(scaled(words)[1:])
            assert code in (0, None), f"{line}\n{capsys.readouterr().err[-2000:]}"
            ran.append(words[1])
    if "wandb" in sys.modules:
        sys.modules["wandb"].teardown()  # the tracking example's offline W&B service, started in this process
    assert ran.count("train") >= 2 and ran.count("evaluate") == 3 and ran.count("score") == 1, ran
    assert "python block" in ran and "export-model" in ran and "verify" in ran
    assert len(checked) >= 4
