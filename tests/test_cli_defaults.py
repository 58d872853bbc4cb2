"""Defaults a newcomer can survive: a study preset yields the small scale unless `--scale paper` asks
for the paper's counts, the scale and an estimate print before any work, and every `--help` names
the default of every option that has one."""

from __future__ import annotations

import argparse
import json
import logging
import re
from pathlib import Path

import pytest

from vision_bench.cli import HelpFormatter, build_parser, main
from vision_bench.commands._scale import SMALL_COUNTS, announce, counts, estimate
from vision_bench.data.sources import load_config
from vision_bench.tasks.config import SPLITS

UNSET = (None, False, "", [], (), argparse.SUPPRESS)
PAPER = {"train": 100_000, "val_id": 1_000, "val_ood": 1_000, "test_id": 1_000, "test_ood": 1_000}
SMALL = {"train": 1_000, "val_id": 100, "val_ood": 100, "test_id": 100, "test_ood": 100}


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def _split_counts(args: argparse.Namespace) -> dict[str, int]:
    config = load_config(args.study, args.config, **counts(args), seed=args.seed, overrides=args.overrides)
    return {split: config.count(split) for split in SPLITS}


@pytest.mark.parametrize("command", ["generate", "export"])
def test_a_study_defaults_to_the_small_scale_and_paper_gives_the_papers_counts(command: str) -> None:
    assert _split_counts(_args(command, "--study", "envgen/G1/1", "--out", "x")) == SMALL
    assert _split_counts(_args(command, "--study", "envgen/G1/1", "--out", "x", "--scale", "paper")) == PAPER
    assert SMALL_COUNTS == {"n_train": 1_000, "n_val": 100, "n_test": 100}


@pytest.mark.parametrize("scale", ["small", "paper"])
def test_explicit_counts_override_either_scale(scale: str) -> None:
    args = _args("export", "--study", "compgen/C1/1", "--out", "x", "--scale", scale, "--n-train", "7", "--n-test", "3")
    expected_val = 100 if scale == "small" else 1_000
    assert _split_counts(args) == {"train": 7, "val_id": expected_val, "val_ood": expected_val, "test_id": 3,
                                   "test_ood": 3}


def test_generate_prints_the_scale_and_an_estimate_before_writing(tmp_path: Path, capsys) -> None:
    out = tmp_path / "g1"
    assert main(["generate", "--study", "envgen/G1/1", "--out", str(out), "--no-progress"]) == 0
    assert json.loads((out / "manifest.json").read_text())["counts"] == SMALL
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith("vision-bench generate: scale small (--scale paper for the study's own counts): "
                            "1,400 pairs (1,000 train, 100 val_id, 100 val_ood, 100 test_id, 100 test_ood); about ")
    assert first.endswith("(rough)")


def test_the_paper_scale_is_announced_with_its_size(caplog: pytest.LogCaptureFixture) -> None:
    args = _args("export", "--study", "envgen/G1/1", "--out", "x", "--scale", "paper", "--format", "folder")
    config = load_config(args.study, None, **counts(args))
    with caplog.at_level(logging.INFO, logger="vision_bench"):
        announce(args, {split: config.count(split) for split in SPLITS}, kind="folder", workers=1)
        announce(args, {"train": 100_000, "test_ood": 1_000}, kind="folder", pending=1_000)
    assert caplog.messages == [
        "scale paper: 104,000 pairs (100,000 train, 1,000 val_id, 1,000 val_ood, 1,000 test_id, 1,000 test_ood); "
        "about 8 min and 218 MB (rough)",
        "scale paper: 101,000 pairs (100,000 train, 1,000 test_ood); 1,000 of them made by this run; "
        "about 8 s and 2.1 MB (rough)",
    ]


def test_estimates_scale_with_workers_cores_and_image_area() -> None:
    """3 s to start, then the format's rate per pair over min(workers, cores), plus 3 s per worker's start shared by
    the cores: README's small export with 8 workers on 2 cores took 17 s (it once said "under 1 s")."""
    assert estimate(104_000, kind="grids", cores=2) == "about 2 min and 16 MB"
    assert estimate(104_000, kind="folder", workers=8, cores=8) == "about 64 s and 218 MB"  # 3 + 58.5 + 3
    assert estimate(104_000, kind="folder", workers=8, cores=2) == "about 4 min and 218 MB"  # 3 + 234 + 12
    assert estimate(1_400, kind="folder", workers=8, cores=2) == "about 18 s and 2.9 MB"
    assert estimate(1_400, kind="parquet", pixels=256 * 256, cores=2) == "about 9 s and 6.2 MB"
    assert estimate(0, kind="grids") == "under 1 s and under 1 kB"


def test_more_workers_than_cores_is_a_warning(caplog, monkeypatch) -> None:
    import vision_bench.commands._scale as scale

    monkeypatch.setattr(scale, "available_cores", lambda: 2)
    args = _args("export", "--study", "envgen/G1/1", "--out", "x", "--format", "folder", "--workers", "8")
    with caplog.at_level(logging.INFO, logger="vision_bench"):
        announce(args, {"train": 1_000}, kind="folder", workers=8)
        announce(args, {"train": 1_000}, kind="folder", workers=2)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["--workers 8 on 2 cores: workers beyond the cores only add start-up time (each starts its "
                        "own Python); --workers 2 is the most that helps here"]


def test_scale_does_not_apply_to_a_config_file(tmp_path: Path, capsys) -> None:
    config = Path(__file__).resolve().parents[1] / "configs" / "reference_generation.yaml"
    code = main(["generate", "--config", str(config), "--scale", "paper", "--out", str(tmp_path / "x")])
    error = capsys.readouterr().err.strip()
    assert code == 2 and len(error.splitlines()) == 1 and "--scale picks a study preset's counts" in error
    assert not (tmp_path / "x").exists()


def _commands(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    """Every command and nested sub-command (`weights get`), by its full name."""
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                full = f"{prefix} {name}".strip()
                found[full] = sub
                found.update(_commands(sub, full))
    return found


def _shown(default: object) -> str:
    """A default as a help text writes it: a sequence comma-separated (as the options read it back)."""
    if isinstance(default, (list, tuple)):
        return ",".join(map(str, default))
    return str(default)


COMMANDS = _commands(build_parser())


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_names_the_default_of_every_option_that_has_one(command: str) -> None:
    parser = COMMANDS[command]
    formatter = HelpFormatter(command)
    rendered = " ".join(parser.format_help().split())
    for action in parser._actions:
        if action.help in (None, argparse.SUPPRESS) or action.default in UNSET or action.nargs == 0:
            continue
        text = formatter._get_help_string(action) % {**vars(action), "default": action.default}
        assert "default" in text and _shown(action.default) in text, (command, action.option_strings, text)
        assert " ".join(text.split()) in rendered  # what --help prints


def test_the_new_scale_option_states_its_default() -> None:
    text = " ".join(build_parser()._subparsers._group_actions[0].choices["generate"].format_help().split())
    assert re.search(r"--scale \{small,paper\} .*\(default: small\)", text)
