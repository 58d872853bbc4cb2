#!/usr/bin/env bash
# Run (or resume) the study in the background, two shards side by side on one CPU thread each, then score every
# trained run on the levels that share its training split, collect the report and write the verdicts:
#   nohup bash docs/results/gcog/run.sh > /tmp/gcog.log 2>&1 &
# Finished cells and finished extra evaluations are skipped, so the script can be stopped and started again.
set -u
cd "$(dirname "$0")/../../.."
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 HF_HUB_OFFLINE=1
R=docs/results/gcog
shard() { nice -n 10 vision-bench bench $R/study.yaml --out $R --no-progress --num-shards 2 --shard-index "$1"; }
shard 0 &
sleep 30  # shard 0 writes bench.yaml first; shard 1 then finds the same bench there
shard 1 &
wait
# score every trained run on the levels that share its training split (score_levels.sh)
bash $R/score_levels.sh
# the report refuses while a cell is missing; verdicts.md is replaced only when the verdicts were computed
vision-bench bench $R/study.yaml --out $R --no-progress --collect-only \
  && python $R/verdicts.py > $R/verdicts.md.tmp && mv $R/verdicts.md.tmp $R/verdicts.md
