#!/usr/bin/env bash
# Run (or resume) the reduced-scale studies in the background, two at a time, one CPU thread each,
# then compare the metrics on their results:
#   nohup bash docs/results/run_all.sh > docs/results/run_all.log 2>&1 &
# Each bench skips its finished cells, so the script can be stopped and started again at any time.
set -u
cd "$(dirname "$0")/../.."
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
bench() { nice -n 10 vision-bench bench "docs/results/$1/study.yaml" --out "docs/results/$1" --no-progress; }
(bench envgen; bench alpha_sweep) &
bench compgen_c1 &
wait
nice -n 10 vision-bench compare-metrics --out docs/results/compare_metrics --no-progress \
    --bench docs/results/envgen --bench docs/results/alpha_sweep --bench docs/results/compgen_c1 \
    --gate grid_accuracy:test_id:90 \
    --run docs/results/envgen/runs/envgen_G3_1/CNN_unet_test_resnet/seed0
