"""Summarise one run of benchmarks/gpu_battery.sh: per cell it trained, how fast and whether it finished.

    python benchmarks/gpu_battery_summary.py JOBS_FILE RESULTS_DIR

Reads every run folder under the jobs' output folders that started after the battery did (its environment.json),
the run's step records (metrics.jsonl: images per second and the share of each logging interval spent waiting for
data) and nvidia-smi's samples (gpu_samples.csv), and writes RESULTS_DIR/summary.json and summary.md. Images per
second is each run's median over its step records after the first (the first holds start-up); the battery's total
is the images every run trained, over the battery's wall time (from RESULTS_DIR/started to RESULTS_DIR/ended).
"""

from __future__ import annotations

import argparse
import json
import statistics
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml


def job_folders(jobs_file: Path) -> list[Path]:
    """The output folders of the job lines (STUDY_YAML OUT_DIR NUM_SHARDS SHARD...), each once, in order."""
    folders: dict[Path, None] = {}
    for line in jobs_file.read_text(encoding="utf-8").splitlines():
        fields = line.split("#", 1)[0].split()  # a comment, whole-line or after the shards
        if len(fields) >= 2:
            folders[Path(fields[1])] = None
    return list(folders)


def run_record(run: Path, folder: Path) -> dict[str, Any]:
    """One run folder's throughput in this battery: steps, median images/s, mean data-wait share, finished or not.
    A resumed run's metrics.jsonl also holds the records of its earlier session: only the records after the step it
    resumed at count, and its images count from that step."""
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
               if line.strip()] if (run / "metrics.jsonl").is_file() else []
    environment = json.loads((run / "environment.json").read_text(encoding="utf-8"))
    resumed = environment.get("resumed_from_step") or 0
    steps = [r for r in records if r.get("kind") == "step" and r["step"] > resumed]
    rates = [r["images_per_s"] for r in steps[1:] if "images_per_s" in r]  # the first holds start-up
    waits = [r["data_wait_share"] for r in steps[1:] if "data_wait_share" in r]
    batch = _batch_size(run)
    return {
        "run": str(folder / run.relative_to(folder)),
        "device": environment.get("cuda_device") or environment.get("device"),
        "finished": (run / "evaluation" / "metrics.json").is_file(),
        "last_step": steps[-1]["step"] if steps else resumed,
        "resumed_from_step": environment.get("resumed_from_step"),
        "images_trained": (steps[-1]["step"] - resumed) * batch if steps and batch else 0,
        "images_per_s": statistics.median(rates) if rates else None,
        "data_wait_share": statistics.fmean(waits) if waits else None,
    }


def _batch_size(run: Path) -> int | None:
    """The run's training batch size (config.yaml's training.batch_size), None without a config."""
    config = run / "config.yaml"
    if not config.is_file():
        return None
    size = (yaml.safe_load(config.read_text(encoding="utf-8")).get("training") or {}).get("batch_size")
    return size if isinstance(size, int) else None


def gpu_samples(path: Path) -> dict[str, Any]:
    """Mean and peak utilisation, peak memory and mean power over nvidia-smi's samples; {} without samples."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else []:
        fields = [field.strip() for field in line.split(",")]
        try:
            rows.append((float(fields[1]), float(fields[2]), float(fields[3])))
        except (IndexError, ValueError):
            continue  # a header or a sample nvidia-smi could not read
    if not rows:
        return {}
    utilisation = [row[0] for row in rows]
    return {"samples": len(rows), "utilisation_mean": statistics.fmean(utilisation),
            "utilisation_max": max(utilisation), "memory_max_mib": max(row[1] for row in rows),
            "power_mean_w": statistics.fmean(row[2] for row in rows)}


def summarise(jobs_file: Path, results: Path) -> dict[str, Any]:
    """The battery's summary: its wall time, the GPU's samples and one record per run it started."""
    started = datetime.fromisoformat((results / "started").read_text(encoding="utf-8").strip())
    runs = []
    for folder in job_folders(jobs_file):
        for environment in sorted(folder.glob("runs/**/environment.json")):
            begun = json.loads(environment.read_text(encoding="utf-8")).get("started")
            if begun and datetime.fromisoformat(begun) >= started:
                runs.append(run_record(environment.parent, folder))
    wall = datetime.fromisoformat((results / "ended").read_text(encoding="utf-8").strip()).timestamp() \
        - started.timestamp()
    trained = sum(run["images_trained"] for run in runs)
    name = results / "gpu_name"
    return {"started": started.isoformat(), "wall_s": wall, "gpu": name.read_text().strip() if name.is_file() else None,
            "runs_started": len(runs), "runs_finished": sum(run["finished"] for run in runs),
            "images_trained": trained, "images_per_s_total": trained / wall if wall > 0 else None,
            "gpu_samples": gpu_samples(results / "gpu_samples.csv"), "runs": runs}


def markdown(summary: dict[str, Any]) -> str:
    """The summary as a Markdown page: the totals, then one row per run."""
    gpu = summary["gpu_samples"]
    lines = [f"# GPU battery of {summary['started']}", "",
             f"- GPU: {summary['gpu'] or 'none (nvidia-smi not found)'}",
             f"- wall time: {summary['wall_s']:.0f} s; runs started {summary['runs_started']}, "
             f"finished {summary['runs_finished']}",
             f"- images trained: {summary['images_trained']:,}, {summary['images_per_s_total'] or 0:.0f} per second "
             "over the wall time, all runs together"]
    if gpu:
        lines.append(f"- GPU utilisation (nvidia-smi, {gpu['samples']} samples): mean {gpu['utilisation_mean']:.0f}%, "
                     f"max {gpu['utilisation_max']:.0f}%; memory peak {gpu['memory_max_mib']:.0f} MiB; "
                     f"mean power {gpu['power_mean_w']:.0f} W")
    lines += ["", "| run | device | finished | last step | images/s (median) | data wait share |",
              "|---|---|---|---|---|---|"]
    for run in summary["runs"]:
        rate = "-" if run["images_per_s"] is None else f"{run['images_per_s']:.0f}"
        wait = "-" if run["data_wait_share"] is None else f"{run['data_wait_share']:.3f}"
        lines.append(f"| {run['run']} | {run['device']} | {'yes' if run['finished'] else 'no'} | {run['last_step']} "
                     f"| {rate} | {wait} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("jobs_file", type=Path)
    parser.add_argument("results", type=Path)
    args = parser.parse_args()
    summary = summarise(args.jobs_file, args.results)
    (args.results / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    (args.results / "summary.md").write_text(markdown(summary), encoding="utf-8")
    print(markdown(summary))


if __name__ == "__main__":
    main()
