#!/usr/bin/env bash
# Run (or resume) the study on a machine with one CUDA GPU: one shard per cell (20), side by side, one CPU thread
# each, then collect the report:
#   nohup bash docs/results/cogitao_models/sample_efficiency/s3/run.sh > /tmp/cogitao_s3.log 2>&1 &
# Each shard skips its finished cells, so the script can be stopped and started again at any time.
# VISION_BENCH names the command (default: vision-bench; `python3 -m vision_bench` from a checkout);
# SHARD_LOGS the folder for each shard's output (default: /tmp); SHARD_TIMEOUT stops the shards after that many
# seconds (default: none), so that a machine lent for a fixed time still returns what finished.
set -u
cd "$(dirname "$0")/../../../../.."
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
study=docs/results/cogitao_models/sample_efficiency/s3
read -r -a bench <<< "${VISION_BENCH:-vision-bench}"
logs=${SHARD_LOGS:-/tmp}
limit=()
if [ -n "${SHARD_TIMEOUT:-}" ]; then limit=(timeout "$SHARD_TIMEOUT"); fi
for k in $(seq 0 19); do
    "${limit[@]}" "${bench[@]}" bench "$study/study.yaml" --out "$study" --device cuda --no-progress \
        --num-shards 20 --shard-index "$k" > "$logs/cogitao_s3_shard$k.log" 2>&1 &
done
wait
"${bench[@]}" bench "$study/study.yaml" --out "$study" --device cuda --no-progress --collect-only
