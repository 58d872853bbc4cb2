"""The command-line dispatcher: user errors become one line and exit code 2, never a traceback."""

import argparse
import errno
import subprocess
import sys

import pytest

from vision_bench.cli import build_parser, run_command
from vision_bench.errors import UnknownNameError
from vision_bench.registry import Registry


def test_registry_unknown_name_lists_close_matches() -> None:
    registry: Registry[int] = Registry("transformation")
    registry.add("rot90", 1, "rotate")
    registry.add("translate_up", 2, "move up")
    with pytest.raises(UnknownNameError) as error:
        registry["rot9"]
    assert "unknown transformation 'rot9'; did you mean 'rot90'?" in str(error.value)
    assert registry.description("rot90") == "rotate"
    with pytest.raises(ValueError, match="registered twice"):
        registry.add("rot90", 3, "again")


EXPECTED_COMMANDS = {
    "transformations", "studies", "generate", "render", "show", "export", "verify", "models",
    "train", "metrics", "weights", "evaluate", "bench", "compare-metrics", "quickstart",
}


def test_every_command_is_registered() -> None:
    parser = build_parser()
    subcommands = set(next(a for a in parser._actions if a.dest == "command").choices)
    assert EXPECTED_COMMANDS <= subcommands, f"missing: {sorted(EXPECTED_COMMANDS - subcommands)}"


def test_help_runs_without_torch_import() -> None:
    code = "import sys; from vision_bench.cli import build_parser; build_parser(); assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_user_error_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    def failing(_: argparse.Namespace) -> int:
        raise UnknownNameError("unknown thing 'x'")

    assert run_command("demo", failing, argparse.Namespace()) == 2
    assert capsys.readouterr().err == "vision-bench demo: error: unknown thing 'x'\n"


def test_os_error_names_the_file(capsys: pytest.CaptureFixture[str]) -> None:
    def disk_full(_: argparse.Namespace) -> int:
        raise OSError(errno.ENOSPC, "No space left on device", "/data/out.png")

    assert run_command("demo", disk_full, argparse.Namespace()) == 2
    assert capsys.readouterr().err == ("vision-bench demo: error: No space left on device: /data/out.png; free some "
                                       "space and re-run the same command (it resumes or starts clean)\n")


def test_bad_arguments_exit_2_without_traceback() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "vision_bench", "no-such-command"], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
