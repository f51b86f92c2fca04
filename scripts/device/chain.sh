#!/bin/bash
# Several device steps in one call: chain.sh TOTAL_S 'step 1' 'step 2' ... Each step is a shell command
# run with its own $OUT (<steps>/<n>, <steps> a fresh folder of this run's own) and the seconds left of
# TOTAL_S as its limit; a step that would start with less than MIN_S (default 60) seconds left is
# skipped, and said so. At the end every step's files are packed into $OUT/steps.tgz (a call brings
# back 8 files at most), with chain.txt saying what ran, its exit status and its seconds. Keep TOTAL_S
# some 30 s under the call's limit: a call cut by its limit brings back nothing of the steps.
#   source .whl/gpu-env.sh && scripts/device/chain.sh 560 'PART=3 INNER=300 scripts/device/make-test.sh' \
#       'PER_LAB=120 scripts/device/grade-class.sh lab07 lab07a'
set -u
total=$1; shift
final=${OUT:?chain.sh runs on the device machine, where \$OUT is set}
# a folder of this run's own: a step may itself run a chain.sh (make test runs this script's test),
# and a shared /tmp/steps was emptied under the running step, its test log lost (2026-12-05)
steps=$(mktemp -d /tmp/steps.XXXXXX)
t0=$(date +%s); n=0
for step in "$@"; do
  n=$((n + 1)); left=$(( total - ($(date +%s) - t0) ))
  if [ "$left" -lt "${MIN_S:-60}" ]; then
    echo "step $n skipped, $left s left: $step" >> "$steps/chain.txt"; continue
  fi
  mkdir -p "$steps/$n"; s0=$(date +%s)
  OUT=$steps/$n timeout "$left" bash -c "$step" > "$steps/$n/step.log" 2>&1
  echo "step $n: exit status $? after $(( $(date +%s) - s0 )) s: $step" >> "$steps/chain.txt"
done
tar -czf "$final/steps.tgz" -C "$steps" .
cat "$steps/chain.txt"
