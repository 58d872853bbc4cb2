"""Refresh samples/quickstart/: run the quickstart and keep its report, summary and pictures.

    python samples/refresh.py [--work DIR]

The quickstart runs in DIR (a temporary folder by default); report.md, every image it links,
the printed summary table and a `vision-bench show` sheet of an EnvGen G1-1 split are copied
here. Everything committed under samples/quickstart/ comes from this script.
"""

from __future__ import annotations

import argparse
import re
import shutil
import tempfile
import time
from pathlib import Path

from vision_bench.cli import main as cli_main
from vision_bench.quickstart import run_quickstart

SAMPLES = Path(__file__).resolve().parent / "quickstart"
IMAGE_LINK = re.compile(r"!\[.*?\]\(([^)]+\.png)\)")  # alt texts may hold brackets: "[0, 1]"


def copy_report(run_dir: Path, target: Path) -> None:
    """report.md and the images it links, at the same relative paths."""
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    for link in IMAGE_LINK.findall(report):
        destination = target / link
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(run_dir / link, destination)
    (target / "report.md").write_text(report, encoding="utf-8")


def show_sheet(work: Path, target: Path) -> None:
    """A contact sheet of an EnvGen G1-1 (translate_up) training split, for the README."""
    tasks = work / "envgen_g1_1"
    cli_main(["generate", "--study", "envgen/G1/1", "--out", str(tasks),
              "--n-train", "8", "--n-val", "1", "--n-test", "1"])
    cli_main(["show", str(tasks / "train.parquet"), "--out", str(target / "show_envgen_g1_1.png"), "--n", "6"])


def refresh(work: Path) -> None:
    start = time.perf_counter()
    result, table = run_quickstart(work / "quickstart")
    seconds = time.perf_counter() - start
    if SAMPLES.exists():
        shutil.rmtree(SAMPLES)
    SAMPLES.mkdir(parents=True)
    copy_report(result.out_dir, SAMPLES)
    (SAMPLES / "summary.txt").write_text(f"{table}\n\nquickstart wall time: {seconds:.0f} s\n", encoding="utf-8")
    show_sheet(work, SAMPLES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, help="where to run (default: a temporary folder)")
    args = parser.parse_args()
    if args.work:
        refresh(args.work)
        return
    with tempfile.TemporaryDirectory() as work:
        refresh(Path(work))


if __name__ == "__main__":
    main()
