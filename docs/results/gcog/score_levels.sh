#!/usr/bin/env bash
# Score every finished run of the study on the levels that share its training split: gcog/distractor/20, /30 and /40
# share gcog/distractor/10's, and gcog/productive/7 gcog/productive/5's. Each test split is exported once (200
# samples, the study's render spec; the same seed makes the same samples again) and each run is evaluated on it from
# its last checkpoint, which git does not keep: run this on the machine that trained the runs.
#   bash docs/results/gcog/score_levels.sh
# Finished evaluations are skipped. Environment: VISION_BENCH (the command, default vision-bench), DEVICE (default
# auto), PARALLEL (evaluations at once, default 1), STUDY_DIR (default docs/results/gcog).
set -u
cd "$(dirname "$0")/../../.."
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 HF_HUB_OFFLINE=1
read -r -a vb <<< "${VISION_BENCH:-vision-bench}"
R=${STUDY_DIR:-docs/results/gcog}  # the study folder (another one only to check this script)
DATA=out/gcog_levels  # exported test splits (git-ignored)
parallel=${PARALLEL:-1}
for level in distractor/20 distractor/30 distractor/40 productive/7; do
  name=${level//\//_}
  [ -f $DATA/$name/manifest.json ] || nice -n 10 "${vb[@]}" export --study gcog/$level --format grids \
      --n-train 1 --n-val 1 --n-test 200 --size 40 40 --layout cell:2:top-left --out $DATA/$name --quiet
done
for level in distractor/20 distractor/30 distractor/40 productive/7; do
  name=${level//\//_}
  trained=$R/runs/gcog_${level%/*}_$([ "${level%/*}" = distractor ] && echo 10 || echo 5)
  for run in "$trained"/*/seed*; do
    [ -f "$run/evaluation/metrics.json" ] && [ -f "$run/checkpoints/last.pt" ] || continue
    [ -f "$run/evaluation_$name/metrics.json" ] && continue
    while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n; done
    nice -n 10 "${vb[@]}" evaluate "$run" --data $DATA/$name --splits test_ood --baselines copy_input,ground_truth \
        --checkpoint last --batch-size 50 --sheet-samples 4 --device "${DEVICE:-auto}" --out "$run/evaluation_$name" \
        --quiet &
  done
done
wait
