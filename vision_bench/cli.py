"""The `vision-bench` command line: a thin dispatcher over `vision_bench.commands`.

Every module in `vision_bench.commands` that defines `NAME`, `HELP`, `add_arguments(parser)` and
`run(args) -> int` becomes a sub-command. Command modules import their heavy dependencies inside
`run`, so `vision-bench --help` stays fast. User errors print one line and exit 2; no traceback.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import logging
import os
import pkgutil
import select
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TextIO

from vision_bench import __version__, commands, interrupts
from vision_bench.commands._common import warn_old_spellings
from vision_bench.errors import UserError
from vision_bench.threads import prefer_passive_waits

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130
OS_ERROR_FIXES = {
    errno.ENOENT: "check the path",
    errno.ENOSPC: "free some space and re-run the same command (it resumes or starts clean)",
    errno.EDQUOT: "free some space and re-run the same command (it resumes or starts clean)",
    errno.EACCES: "check the permissions, or choose another folder",
    errno.EPERM: "check the permissions, or choose another folder",
    errno.EROFS: "choose a folder on a writable file system",
    errno.EISDIR: "give a file, not a folder",
    errno.ENOTDIR: "a part of the path is a file, not a folder; check the path",
    errno.ELOOP: "the path is a symbolic link, which is not followed; remove the link or choose another path",
}


def _command_modules() -> list[ModuleType]:
    modules = [
        importlib.import_module(f"{commands.__name__}.{info.name}")
        for info in pkgutil.iter_modules(commands.__path__)
        if not info.name.startswith("_")
    ]
    return sorted((m for m in modules if hasattr(m, "NAME")), key=lambda m: m.NAME)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """`--help` states every option's default once: appended as "(default: X)" unless the help text
    already says it, and left out for options that are off or unset unless given."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        unset = action.default is None or action.default is False or action.default in ("", [], ())
        if "default" in text or unset or action.default is argparse.SUPPRESS:
            return action.help
        return super()._get_help_string(action)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vision-bench",
        description="Symbolic grid tasks as RGB image datasets; timm image-to-image models; "
        "pixel, perceptual and object-aware metrics, in and out of distribution.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"vision-bench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module in _command_modules():
        command = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP,
                                 formatter_class=HelpFormatter)
        module.add_arguments(command)
        command.set_defaults(_run=module.run)
    return parser


def run_command(name: str, run: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run one command; map user errors and OS errors (a full disk, a missing file) to one line each,
    exit 2."""
    try:
        return int(run(args) or 0)
    except UserError as error:
        print(f"vision-bench {name}: error: {error}", file=sys.stderr)
        return EXIT_USER_ERROR
    except BrokenPipeError as error:
        if _stdout_closed():  # the reader stopped reading, as `| head` does: nothing went wrong
            return 0
        print(f"vision-bench {name}: error: {os_error_message(error)}", file=sys.stderr)
        return EXIT_USER_ERROR
    except OSError as error:
        print(f"vision-bench {name}: error: {os_error_message(error)}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print(f"vision-bench {name}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _stdout_closed() -> bool:
    """Whether standard output is a pipe whose reader has gone (poll reports an error on its write end); if so,
    later output goes to the null device instead of failing again when the interpreter flushes at exit."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    if not hasattr(select, "poll"):
        return False
    poller = select.poll()
    poller.register(descriptor, select.POLLOUT)
    if not any(events & select.POLLERR for _, events in poller.poll(0)):
        return False
    os.dup2(os.open(os.devnull, os.O_WRONLY), descriptor)
    return True


def os_error_message(error: OSError) -> str:
    """'<what went wrong>: <file>; <what to do>' for a failed file operation."""
    where = f": {error.filename}" if getattr(error, "filename", None) else ""
    fix = OS_ERROR_FIXES.get(error.errno or 0)
    return f"{error.strerror or error}{where}" + (f"; {fix}" if fix else "")


class _StderrHandler(logging.StreamHandler):
    """A handler that writes to whatever `sys.stderr` is when a message is logged (a caller or a test may
    swap the stream after the handler was made)."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass


def configure_logging(command: str) -> None:
    """Route the `vision_bench` logger's messages to stderr as `vision-bench COMMAND: message`.

    The library itself only logs; the command line is the one place that decides where messages go
    (`--quiet` raises the level to warnings). A user of the library routes them as they like.
    """
    logger = logging.getLogger("vision_bench")
    for handler in [h for h in logger.handlers if getattr(h, "_vision_bench_cli", False)]:
        logger.removeHandler(handler)
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter(f"vision-bench {command}: %(message)s"))
    handler._vision_bench_cli = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and run the chosen command."""
    prefer_passive_waits()  # before any command imports torch: idle threads sleep instead of spinning
    for stream in (sys.stdout, sys.stderr):  # a path that is not valid UTF-8 is printed escaped, never an error
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    args = build_parser().parse_args(argv)
    configure_logging(args.command)
    interrupts.install(f"vision-bench {args.command}")
    warn_old_spellings(args)
    return run_command(args.command, args._run, args)


if __name__ == "__main__":
    sys.exit(main())
