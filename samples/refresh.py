"""Refresh everything committed under samples/ and the quickstart numbers quoted in the docs.

    python samples/refresh.py [--work DIR]

The quickstart runs in DIR (a temporary folder by default): report.md, every image it links and
the printed summary table are copied to samples/quickstart/; every sample sheet (a rendered
EnvGen G1-1 split, a gCOG distractor case, a C-ARC episode, SVIB's four tasks, a world-model rollout) is drawn again;
and the blocks between `<!-- quickstart:begin -->` and `<!-- quickstart:end -->` in README.md and
docs/benchmarks.md are rewritten with the new table, the wall time, the load average and the
package versions the numbers depend on. Everything committed under samples/ comes from this script.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from vision_bench.cli import main as cli_main
from vision_bench.quickstart import run_quickstart
from vision_bench.tasks.carc.sheet import main as carc_sheet
from vision_bench.tasks.formats import write_parquet
from vision_bench.tasks.sampling import generate_split
from vision_bench.tasks.scenes.rules import TASKS
from vision_bench.tasks.studies import get_study

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
QUICKSTART = SAMPLES / "quickstart"
IMAGE_LINK = re.compile(r"!\[.*?\]\(([^)]+\.png)\)")  # alt texts may hold brackets: "[0, 1]"
BLOCK = re.compile(r"(<!-- quickstart:begin -->\n).*?(<!-- quickstart:end -->)", re.DOTALL)
VERSIONED = ("torch", "torchvision", "timm", "numpy", "opencv-python-headless", "lpips")


def copy_report(run_dir: Path, target: Path) -> None:
    """report.md and the images it links, at the same relative paths."""
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    for link in IMAGE_LINK.findall(report):
        destination = target / link
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(run_dir / link, destination)
    (target / "report.md").write_text(report, encoding="utf-8")


def cli(*args: str) -> None:
    """Run one vision-bench command; a failure stops the refresh."""
    status = cli_main(list(args))
    if status:
        raise SystemExit(f"vision-bench {' '.join(args)} exited with status {status}")


def study_sheet(study: str, out: Path, work: Path, *, n: int = 6, split: str = "train",
                extra: tuple[str, ...] = ()) -> None:
    """A contact sheet of the first `n` pairs of one split of a study preset (`extra`: options of `show`)."""
    tasks = work / study.replace("/", "_")
    cli("generate", "--study", study, "--out", str(tasks), "--n-train", str(n), "--n-val", "1", "--n-test", str(n))
    out.parent.mkdir(parents=True, exist_ok=True)
    cli("show", str(tasks / f"{split}.parquet"), "--out", str(out), "--n", str(n), *extra)


def carc_episode(study: str, out: Path) -> None:
    """One C-ARC episode: its study pairs and its first query, each pair drawn apart and labelled."""
    if carc_sheet(["--study", study, "--out", str(out)]):
        raise SystemExit(f"drawing the C-ARC episode {out} failed")


def svib_sheet(out: Path, work: Path, *, alpha: float = 0.6, per_task: int = 2) -> None:
    """SVIB's four tasks: the first `per_task` training pairs of svib/<task>/<alpha> for S-A, S-NA, M-A and M-NA,
    in that order, on one sheet (four pairs to a row), 8 pixels per cell, on black as SVIB draws them; sample i of
    every task has the same input scene (the splits and the placement do not depend on the rule)."""
    tasks = work / "svib_tasks.parquet"
    samples = [sample for task in TASKS
               for sample in generate_split(get_study(f"svib/{task}/{alpha}", n_train=per_task, n_val=0, n_test=0),
                                            "train")]
    write_parquet(samples, tasks)
    out.parent.mkdir(parents=True, exist_ok=True)
    cli("show", str(tasks), "--out", str(out), "--n", str(len(samples)), "--size", "256", "256", "--background",
        "black")


def rollout_sheet(out: Path, work: Path) -> None:
    """The world-model smoke bench's rollout sheet: true frames above the U-Net's fed-back predictions."""
    bench = work / "worldmodel"
    cli("bench", str(ROOT / "configs" / "smoke" / "worldmodel.yaml"), "--out", str(bench), "--no-progress")
    out.parent.mkdir(parents=True, exist_ok=True)
    cell = bench / "runs" / "worldmodel_depth4_1" / "unet_test_resnet" / "seed0"
    shutil.copyfile(cell / "rollout" / "sheet_test_id.png", out)


SHEETS: dict[str, Callable[[Path, Path], None]] = {
    "quickstart/show_envgen_g1_1.png": lambda out, work: study_sheet("envgen/G1/1", out, work),
    "gcog/distractor.png": lambda out, work: study_sheet("gcog/distractor/40", out, work, n=3, split="test_ood",
                                                         extra=("--size", "320", "320")),
    "carc/episode.png": lambda out, work: carc_episode("carc/systematicity/1860", out),
    "svib/tasks.png": lambda out, work: svib_sheet(out, work),
    "worldmodel/rollout.png": lambda out, work: rollout_sheet(out, work),
}
"""Every committed sample sheet (path under samples/) and how it is drawn: draw(out_file, work_dir)."""


def versions() -> str:
    """Python and the versions of the packages the quickstart's numbers depend on."""
    found = []
    for name in VERSIONED:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return f"Python {platform.python_version()}, " + ", ".join(found)


def quickstart_block(table: str, seconds: float, load: tuple[float, float]) -> str:
    """The text written between the quickstart markers."""
    return (f"```\n{table}\n```\n\nIn process (`python samples/refresh.py`): {seconds:.0f} s on {os.cpu_count()} "
            f"CPU threads, load average {load[0]:.1f} before and {load[1]:.1f} after; {versions()}.\n")


def rewrite_block(path: Path, block: str) -> None:
    """Replace the text between the quickstart markers of `path` (which must have them)."""
    text = path.read_text(encoding="utf-8")
    if not BLOCK.search(text):
        raise SystemExit(f"{path} has no <!-- quickstart:begin --> / <!-- quickstart:end --> block")
    path.write_text(BLOCK.sub(lambda match: match.group(1) + block + match.group(2), text), encoding="utf-8")


def refresh(work: Path) -> None:
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    result, table = run_quickstart(work / "quickstart")
    seconds = time.perf_counter() - start
    load_after = os.getloadavg()[0]
    if QUICKSTART.exists():
        shutil.rmtree(QUICKSTART)
    QUICKSTART.mkdir(parents=True)
    copy_report(result.out_dir, QUICKSTART)
    (QUICKSTART / "summary.txt").write_text(f"{table}\n\nquickstart wall time: {seconds:.0f} s (in process)\n",
                                            encoding="utf-8")
    for name, draw in SHEETS.items():
        draw(SAMPLES / name, work)
    block = quickstart_block(table, seconds, (load_before, load_after))
    for document in (ROOT / "README.md", ROOT / "docs" / "benchmarks.md"):
        rewrite_block(document, block)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--work", type=Path, help="where to run (default: a temporary folder)")
    args = parser.parse_args()
    if args.work:
        refresh(args.work)
        return
    with tempfile.TemporaryDirectory() as work:
        refresh(Path(work))


if __name__ == "__main__":
    main()
