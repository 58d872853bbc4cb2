"""`vision-bench regimes BENCH_DIR... --out DIR`: COGITAO's Table 3 (training regimes) merged from finished benches.

One bench holds one training regime (samples x epochs); this command reads several bench folders (their bench.yaml
and results.csv) and writes one table of GA, PPA, Obj-PPA (ID and OOD) and OOD stubbornness per experiment, model
and regime (`bench.regimes`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vision_bench.commands._common import check_out_folder

NAME = "regimes"
HELP = "COGITAO's Table 3: GA, PPA, Obj-PPA and stubbornness per experiment, model and training regime, from benches"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("benches", type=Path, nargs="+", metavar="BENCH_DIR",
                        help="finished bench folders (each the --out of `vision-bench bench`), one regime each")
    parser.add_argument("--out", type=Path, required=True, help="output folder for regimes.md and regimes.csv")


def run(args: argparse.Namespace) -> int:
    from vision_bench.bench.regimes import regime_rows, regimes_markdown, write_regimes
    from vision_bench.errors import ConfigError

    for folder in args.benches:
        if not folder.is_dir():
            raise ConfigError(f"{folder} is not a folder; give the --out folder of a finished `vision-bench bench`")
    check_out_folder(args.out, NAME)
    markdown, table = write_regimes(args.benches, args.out)
    print(regimes_markdown(regime_rows(args.benches), args.benches))
    print(f"wrote {markdown} and {table}")
    return 0
