"""`vision-bench studies`: list the study presets, one id per line with a short description, or describe one."""

from __future__ import annotations

import argparse

NAME = "studies"
HELP = ("list the study presets (CompGen, EnvGen, alpha, gCOG, C-ARC, SVIB, ...) usable with --study; any "
        "alpha/<transformation>/<alpha> with alpha in [0, 1] and any svib/<task or rule>/<alpha> with alpha in "
        "[0, 0.8] also works")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prefix", nargs="?", default="", help="only ids starting with this, e.g. compgen or envgen/G2")
    parser.add_argument("--describe", metavar="ID",
                        help="print one study's settings and sequence lists, split by split, e.g. compgen/C1/2")


def run(args: argparse.Namespace) -> int:
    from vision_bench.errors import ConfigError, UnknownNameError
    from vision_bench.tasks.studies import STUDIES
    from vision_bench.tasks.studies.describe import describe_study

    if args.describe:
        if args.prefix:
            raise ConfigError(
                f"give a prefix to list or --describe ID, not both (got {args.prefix!r} and {args.describe!r})"
            )
        print(describe_study(args.describe))
        return 0
    names = [name for name in STUDIES.names() if name.startswith(args.prefix)]
    if not names:
        raise UnknownNameError(f"no study id starts with {args.prefix!r}; run `vision-bench studies` to list them all")
    width = max(map(len, names))
    for name in names:
        print(f"{name:<{width}}  {STUDIES.description(name)}")
    return 0
