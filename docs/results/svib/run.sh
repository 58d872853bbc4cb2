#!/usr/bin/env bash
# Run (or resume) the SVIB study in the background, two shards side by side, one CPU thread each, then
# collect the report:
#   nohup bash docs/results/svib/run.sh > docs/results/svib/run.log 2>&1 &
# Each shard skips its finished cells, so the script can be stopped and started again at any time.
set -u
cd "$(dirname "$0")/../../.."
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
shard() { nice -n 10 vision-bench bench docs/results/svib/study.yaml --out docs/results/svib --no-progress \
    --num-shards 2 --shard-index "$1"; }
shard 0 &
sleep 30  # shard 0 writes bench.yaml first; shard 1 then finds the same bench there
shard 1 &
wait
nice -n 10 vision-bench bench docs/results/svib/study.yaml --out docs/results/svib --no-progress --collect-only
