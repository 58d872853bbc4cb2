#!/usr/bin/env bash
# Run (or resume) the study in the background, two shards side by side, one CPU thread each, then collect the
# report:
#   nohup bash docs/results/cogitao_models/sample_efficiency/run.sh > /tmp/cogitao_se.log 2>&1 &
# Each shard skips its finished cells, so the script can be stopped and started again at any time.
set -u
cd "$(dirname "$0")/../../../.."
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
study=docs/results/cogitao_models/sample_efficiency
shard() { nice -n 10 vision-bench bench "$study/study.yaml" --out "$study" --no-progress --num-shards 2 \
    --shard-index "$1"; }
shard 0 &
sleep 30  # shard 0 writes bench.yaml first; shard 1 then finds the same bench there
shard 1 &
wait
nice -n 10 vision-bench bench "$study/study.yaml" --out "$study" --no-progress --collect-only
