"""`vision-bench verify DIR`: check an export's files and sample counts against its manifest."""

from __future__ import annotations

import argparse
import sys

from vision_bench.commands._common import add_progress_arguments, show_progress

NAME = "verify"
HELP = "check an export directory against its manifest.json: counts, sizes and SHA-256 of every file"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", metavar="DIR", help="an export directory (holds manifest.json)")
    parser.add_argument(
        "--quick", action="store_true", help="check presence, sizes and counts only, not the SHA-256 checksums"
    )
    add_progress_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from vision_bench.data.verify import verify_export

    show_progress(args)  # no progress bar yet; --quiet still silences informational messages
    report = verify_export(args.directory, checksums=not args.quick)
    for problem in report.problems:
        print(f"{report.root / problem.path}: {problem.message}", file=sys.stderr)
    if not report.ok:
        print(f"vision-bench verify: {len(report.problems)} problem(s) in {report.root}; re-run the "
              "`vision-bench export` command that made it (same settings and --out): it rewrites the damaged "
              "shards, removes the files the manifest does not list and keeps the rest", file=sys.stderr)
        return 1
    counts = ", ".join(f"{split} {count}" for split, count in report.counts.items())
    checked = "sizes" if args.quick else "checksums"
    print(f"{report.root}: OK ({report.n_files} files, {checked} match; samples: {counts})")
    return 0
