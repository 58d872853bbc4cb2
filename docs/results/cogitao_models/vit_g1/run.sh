#!/usr/bin/env bash
# Run (or resume) the sweep in the background on one CPU thread, then write the report:
#   nohup bash docs/results/cogitao_models/vit_g1/run.sh > /tmp/cogitao_vit_g1.log 2>&1 &
set -u
cd "$(dirname "$0")/../../../.."
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 HF_HUB_OFFLINE=1
nice -n 10 vision-bench bench docs/results/cogitao_models/vit_g1/study.yaml --out docs/results/cogitao_models/vit_g1 \
    --no-progress
