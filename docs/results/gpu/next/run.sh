#!/usr/bin/env bash
# The next lent GPU's battery: the cells of jobs.txt beside this file, one process per cell, at most 20 at once,
# stopped after SHARD_TIMEOUT seconds (default 480) so that the machine returns what finished:
#   VISION_BENCH="python3 -m vision_bench" bash docs/results/gpu/next/run.sh RESULTS_DIR
# Finished cells are skipped and stopped ones resume from their checkpoints, on the same machine only: a fresh one
# starts them again. Collect each study's report afterwards with `vision-bench bench STUDY --out DIR --collect-only`.
set -u
cd "$(dirname "$0")/../../../.."
if [ $# -ne 1 ]; then
    echo "usage: bash docs/results/gpu/next/run.sh RESULTS_DIR (e.g. docs/results/gpu/2026-12-01-h100)" >&2
    exit 2
fi
SHARD_TIMEOUT=${SHARD_TIMEOUT:-480} PARALLEL=${PARALLEL:-20} bash benchmarks/gpu_battery.sh docs/results/gpu/next/jobs.txt "$1"
