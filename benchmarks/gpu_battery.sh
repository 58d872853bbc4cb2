#!/usr/bin/env bash
# Run a battery of bench studies side by side on one CUDA GPU, one process per shard, and record how fast they ran:
#   bash benchmarks/gpu_battery.sh JOBS_FILE RESULTS_DIR
# JOBS_FILE names the work, one job per line: `STUDY_YAML OUT_DIR NUM_SHARDS SHARD...` (`#` starts a comment). The
# shards start in the order listed, at most PARALLEL at once, so list the longest and most wanted cells first. Each
# shard skips the cells already finished in OUT_DIR, so the battery resumes like any bench.
# RESULTS_DIR receives each shard's log (logs/), nvidia-smi's samples of utilisation, memory and power every
# SAMPLE_EVERY seconds (gpu_samples.csv), and summary.md / summary.json (benchmarks/gpu_battery_summary.py): per
# cell, images per second, the share of time spent waiting for data, and whether it finished.
# Environment: VISION_BENCH (the command, default vision-bench; `python3 -m vision_bench` from a checkout), DEVICE
# (default cuda; cpu checks the script on a machine without a GPU), PARALLEL (default: the CPU count),
# SHARD_TIMEOUT (seconds after the battery's start at which every shard still running is stopped, so that a machine
# lent for a fixed time still returns what finished; default none), SAMPLE_EVERY (default 2), PYTHON (the Python
# that runs the summary, with PyYAML; default python3). An interrupted battery stops its shards and the sampler.
set -u
if [ $# -ne 2 ] || [ ! -f "$1" ]; then
    echo "usage: bash benchmarks/gpu_battery.sh JOBS_FILE RESULTS_DIR (JOBS_FILE: lines of STUDY_YAML OUT_DIR NUM_SHARDS SHARD...)" >&2
    exit 2
fi
jobs_file=$1 results=$2
read -r -a bench <<< "${VISION_BENCH:-vision-bench}"
device=${DEVICE:-cuda}
parallel=${PARALLEL:-$(nproc)}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
mkdir -p "$results/logs"
start=$(date +%s)
date -u +%Y-%m-%dT%H:%M:%S+00:00 > "$results/started"
sampler=
if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=name --format=csv,noheader > "$results/gpu_name"
    nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used,power.draw --format=csv,noheader,nounits \
        -l "${SAMPLE_EVERY:-2}" > "$results/gpu_samples.csv" &
    sampler=$!
fi
finish() {  # stop what still runs (an interrupted battery too), then note the end for the summary
    for pid in $(jobs -rp); do kill "$pid" 2> /dev/null; done
    date -u +%Y-%m-%dT%H:%M:%S+00:00 > "$results/ended"
}
trap 'finish; exit 130' INT TERM
left() {  # seconds left before SHARD_TIMEOUT (a large number without one)
    if [ -n "${SHARD_TIMEOUT:-}" ]; then echo $((start + SHARD_TIMEOUT - $(date +%s))); else echo 1000000; fi
}
while IFS= read -r line || [ -n "$line" ]; do  # the last line may lack its newline
    line=${line%%#*}  # a comment, whole-line or after the shards
    read -r study out num_shards shards <<< "${line//$'\r'/}"
    [ -n "${study:-}" ] || continue
    for k in $shards; do
        while [ "$(jobs -rp | grep -vc "^${sampler:-none}$")" -ge "$parallel" ]; do wait -n; done
        remaining=$(left)
        [ "$remaining" -gt 0 ] || break 2
        name=$(basename "$out")_shard$k
        timeout "$remaining" "${bench[@]}" bench "$study" --out "$out" --device "$device" --no-progress \
            --num-shards "$num_shards" --shard-index "$k" < /dev/null > "$results/logs/$name.log" 2>&1 &
    done
done < "$jobs_file"
for pid in $(jobs -rp); do [ "$pid" = "${sampler:-none}" ] || wait "$pid"; done
finish
trap - INT TERM
echo "battery: $(( $(date +%s) - start )) s" >&2
${PYTHON:-python3} "$(dirname "$0")/gpu_battery_summary.py" "$jobs_file" "$results"
