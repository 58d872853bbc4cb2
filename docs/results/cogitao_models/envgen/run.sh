#!/usr/bin/env bash
# Run (or resume) the study in the background on one CPU thread, then write the report:
#   nohup bash docs/results/cogitao_models/envgen/run.sh > /tmp/cogitao_envgen.log 2>&1 &
# Finished cells are skipped; a cell stopped mid-way restarts (its 1,000 steps are one epoch).
set -u
cd "$(dirname "$0")/../../../.."
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
nice -n 10 vision-bench bench docs/results/cogitao_models/envgen/study.yaml --out docs/results/cogitao_models/envgen \
    --no-progress
