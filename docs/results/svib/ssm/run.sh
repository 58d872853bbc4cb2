#!/usr/bin/env bash
# Run (or resume) the sub-study in the background on one CPU thread, then write the report and the verdicts:
#   nohup bash docs/results/svib/ssm/run.sh > /tmp/svib_ssm.log 2>&1 &
# Finished cells are skipped, so the script can be stopped and started again at any time.
set -u
cd "$(dirname "$0")/../../../.."
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 HF_HUB_OFFLINE=1
nice -n 10 vision-bench bench docs/results/svib/ssm/study.yaml --out docs/results/svib/ssm --no-progress
python docs/results/svib/ssm/verdicts.py > docs/results/svib/ssm/verdicts.md
