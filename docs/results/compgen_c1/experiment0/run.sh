#!/usr/bin/env bash
# Run (or resume) the study in the background, one shard per seed side by side on one CPU thread each, then collect
# the report:
#   nohup bash docs/results/compgen_c1/experiment0/run.sh > /tmp/experiment0.log 2>&1 &
# Each shard skips its finished cells, so the script can be stopped and started again at any time.
set -u
cd "$(dirname "$0")/../../../.."
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 HF_HUB_OFFLINE=1
R=docs/results/compgen_c1/experiment0
shard() { nice -n 10 vision-bench bench $R/study.yaml --out $R --no-progress --num-shards 3 --shard-index "$1"; }
shard 0 &
sleep 30  # shard 0 writes bench.yaml first; the others then find the same bench there
shard 1 &
shard 2 &
wait
vision-bench bench $R/study.yaml --out $R --no-progress --collect-only
