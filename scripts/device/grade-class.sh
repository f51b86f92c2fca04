#!/bin/bash
# make grade-class of each named lab's demo class on the device machine: grade-class.sh lab07b lab07c
# PER_LAB: seconds a lab may take (default 300); JOBS: workers (default 4: they take turns on the GPU).
set -u
source "$(dirname "$0")/snapshot.sh"          # $OUT, and the tree to test (the snapshot's commit)
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
for lab in "$@"; do
  d=$(ls -d labs/"$lab"-*/ | head -1); d=${d%/}
  t0=$(date +%s)
  make -C "$d" grade-class-demo DEST="/tmp/demo-$lab" FORCE=1 PYTHON=python3 >> "$OUT/class.log" 2>&1
  # OUT= on make's command line: the device's $OUT must not become the class's output folder
  timeout "${PER_LAB:-300}" make -C "$d" grade-class SUBMISSIONS="/tmp/demo-$lab" OUT="/tmp/class-$lab" \
    JOBS="${JOBS:-4}" PYTHON=python3 >> "$OUT/class.log" 2>&1
  echo "== $lab: exit status $? after $(( $(date +%s) - t0 )) s" >> "$OUT/class.log"
  cp "/tmp/class-$lab/class.json" "$OUT/class-$lab.json" 2>/dev/null
done
exit 0
