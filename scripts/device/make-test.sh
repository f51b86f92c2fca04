#!/bin/bash
# make test on the device machine, in parts that fit its calls: PART=1 (tests/, labs 7, 7a), PART=2
# (labs 7b, 7c, 7d), PART=3 (the tests marked gpu_timed, the graders' self-tests: make test's second
# run, GRADE_GPU_LOCK set as the Makefile sets it), or the pytest paths given (all their tests; MARKS=
# selects, as pytest's -m). INNER: pytest's own time limit in seconds (default 480). DIST: pytest-xdist's
# --dist (default loadfile: a file's tests on one worker, its fixtures built once); DIST=load for
# tests/test_notebooks.py, whose notebooks otherwise run one after another on one worker (the last
# seven of them were still waiting when parts 1 and 2 together were cut at 400 s, 2026-12-05)
set -u
source "$(dirname "$0")/snapshot.sh"          # $OUT, and the tree to test (the snapshot's commit)
export PYTHONPATH=$PWD:$here/scripts/device${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > "$OUT/gpu.txt" 2>&1
t0=$(date +%s)
for l in labs/*/; do make -C "$l" build PYTHON=python3 > "/tmp/build-$(basename "$l").log" 2>&1 & done; wait
tail -n 20 /tmp/build-*.log > "$OUT/build.log"
marks=${MARKS:-}
case "${PART:-}" in
  1|2) marks="not gpu_timed";;&
  1) set -- tests labs/lab07-matmul-registers labs/lab07a-tf32-tensor-cores;;
  2) set -- labs/lab07b-cute-sgemm labs/lab07c-hopper-wgmma labs/lab07d-decode-shapes;;
  3) set -- tests labs; marks=gpu_timed; export GRADE_GPU_LOCK=$(mktemp);;
esac
echo "built in $(( $(date +%s) - t0 )) s; pytest $*" > "$OUT/times.txt"
timeout "${INNER:-480}" python3 -m pytest -p instafail -n 16 --dist "${DIST:-loadfile}" -p no:cacheprovider -v -rfE ${marks:+-m "$marks"} "$@" \
  > "$OUT/test.log" 2>&1
echo "pytest exit status $? after $(( $(date +%s) - t0 )) s" >> "$OUT/times.txt"
tar -czf "$OUT/selftests.tgz" $(find labs -path '*/reports/grade/selftest_gpu.json') 2>/dev/null
pack_build_logs                               # snapshot.sh: 8 files come back at most
exit 0
