#!/usr/bin/env bash
# The battery of 2026-11-27 on one lent H200 (16 CPU cores): the pending cells of the Sample-Efficiency S2 study, the
# C-ARC study and its 3-Shot control, and the gCOG study, run as those studies state them, one process per cell
# (jobs.txt), then gCOG's extra levels (docs/results/gcog/score_levels.sh) from the checkpoints trained here.
#   VISION_BENCH="python3 -m vision_bench" bash docs/results/gpu/2026-11-27-h200/run.sh
# A record of what ran: do not run it again. Its first step deletes two gCOG runs whose checkpoints are missing, and
# checkpoints are never committed, so on a fresh checkout it would delete committed results. The next lease's script
# is docs/results/gpu/next/run.sh.
# SHARD_TIMEOUT (default 400 s) stops the cells still running so that the lent machine returns what finished.
set -u
cd "$(dirname "$0")/../../../.."
G=docs/results/gpu/2026-11-27-h200
# gCOG's first two SSTfmr cells were trained on a CPU whose checkpoints are gone; the extra levels need them
for seed in 0 1; do
    run=docs/results/gcog/runs/gcog_distractor_10/SSTfmr/seed$seed
    [ -f $run/checkpoints/last.pt ] || rm -rf $run
done
SHARD_TIMEOUT=${SHARD_TIMEOUT:-400} PARALLEL=${PARALLEL:-20} bash benchmarks/gpu_battery.sh $G/jobs.txt $G
PARALLEL=16 DEVICE=cuda timeout "${LEVELS_TIMEOUT:-90}" bash docs/results/gcog/score_levels.sh
