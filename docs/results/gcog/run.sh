#!/usr/bin/env bash
# Run (or resume) the study in the background, two shards side by side on one CPU thread each, then score every
# trained run on the levels that share its training split, collect the report and write the verdicts:
#   nohup bash docs/results/gcog/run.sh > /tmp/gcog.log 2>&1 &
# Finished cells and finished extra evaluations are skipped, so the script can be stopped and started again.
set -u
cd "$(dirname "$0")/../../.."
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 HF_HUB_OFFLINE=1
R=docs/results/gcog
DATA=out/gcog_levels  # exported test splits (git-ignored; the same seed makes the same samples again)
shard() { nice -n 10 vision-bench bench $R/study.yaml --out $R --no-progress --num-shards 2 --shard-index "$1"; }
shard 0 &
sleep 30  # shard 0 writes bench.yaml first; shard 1 then finds the same bench there
shard 1 &
wait
# gcog/distractor/20, /30, /40 share gcog/distractor/10's training split, and gcog/productive/7 gcog/productive/5's:
# each trained run is scored on their test_ood too, with the study's render spec and test size.
for level in distractor/20 distractor/30 distractor/40 productive/7; do
  name=${level//\//_}
  trained=$R/runs/gcog_${level%/*}_$([ "${level%/*}" = distractor ] && echo 10 || echo 5)
  [ -f $DATA/$name/manifest.json ] || nice -n 10 vision-bench export --study gcog/$level --format grids \
      --n-train 1 --n-val 1 --n-test 200 --size 40 40 --layout cell:2:top-left --out $DATA/$name --quiet
  for run in "$trained"/*/seed*; do
    [ -f "$run/evaluation/metrics.json" ] || continue
    [ -f "$run/evaluation_$name/metrics.json" ] || nice -n 10 vision-bench evaluate "$run" --data $DATA/$name \
        --splits test_ood --baselines copy_input,ground_truth --checkpoint last --batch-size 50 --sheet-samples 4 --out "$run/evaluation_$name" --quiet
  done
done
# the report refuses while a cell is missing; verdicts.md is replaced only when the verdicts were computed
vision-bench bench $R/study.yaml --out $R --no-progress --collect-only \
  && python $R/verdicts.py > $R/verdicts.md.tmp && mv $R/verdicts.md.tmp $R/verdicts.md
