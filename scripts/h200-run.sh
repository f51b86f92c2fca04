#!/usr/bin/env bash
# The maintainers' one-call GPU session (not for students): build, test, bench, sass and more,
# logs and results into $OUT/gpu-run.tgz. Usage on the GPU machine, from the repo root:
#   source .whl/gpu-env.sh && scripts/h200-run.sh test bench sass tune ncu sanitize fixtures
set -uo pipefail
make() { timeout "${STEP_TIMEOUT:-300}" /usr/bin/env make "$@"; }
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/logs"
export PYTHON=${PYTHON:-python3}
LAB=labs/lab07-matmul-registers
{ nvidia-smi; $PYTHON --version; nvcc --version | tail -1; which ncu compute-sanitizer cuobjdump; } > "$OUT/logs/env.txt" 2>&1
for step in "$@"; do
  echo "=== $step ($(date +%T))"
  case $step in
    test)      make test PYTHON=$PYTHON > "$OUT/logs/test.log" 2>&1; tail -25 "$OUT/logs/test.log" ;;
    gputest)   (cd $LAB && $PYTHON -m pytest -q tests/test_fragments_gpu.py tests/test_occupancy_gpu.py) > "$OUT/logs/gputest.log" 2>&1; tail -25 "$OUT/logs/gputest.log" ;;
    selfcheck) make selfcheck PYTHON=$PYTHON > "$OUT/logs/selfcheck.log" 2>&1; grep -v '^PASS' "$OUT/logs/selfcheck.log" | tail -30 ;;
    bench)     make bench PYTHON=$PYTHON > "$OUT/logs/bench.log" 2>&1; grep -v '^\[' "$OUT/logs/bench.log" | tail -30 ;;
    sass)      make sass PYTHON=$PYTHON > "$OUT/logs/sass.log" 2>&1; tail -40 "$OUT/logs/sass.log" ;;
    build)     make build PYTHON=$PYTHON > "$OUT/logs/build.log" 2>&1; tail -20 "$OUT/logs/build.log" ;;
    tune)      make tune PYTHON=$PYTHON > "$OUT/logs/tune.log" 2>&1; grep -v '^\[' "$OUT/logs/tune.log" | tail -30 ;;
    ncu)       make ncu-table PYTHON=$PYTHON > "$OUT/logs/ncu-table.log" 2>&1; tail -20 "$OUT/logs/ncu-table.log"
               make ncu-tensor PYTHON=$PYTHON > "$OUT/logs/ncu-tensor.log" 2>&1; tail -15 "$OUT/logs/ncu-tensor.log" ;;
    sanitize)  make sanitize PYTHON=$PYTHON > "$OUT/logs/sanitize.log" 2>&1; tail -25 "$OUT/logs/sanitize.log" ;;
    fixtures)  (cd $LAB && timeout ${STEP_TIMEOUT:-300} bash capture_fixtures.sh) > "$OUT/logs/fixtures.log" 2>&1; tail -5 "$OUT/logs/fixtures.log" ;;
    probe)     (cd $LAB && timeout 120 $PYTHON probe.py) > "$OUT/logs/probe.log" 2>&1; tail -30 "$OUT/logs/probe.log" ;;
    notebooks) make notebooks PYTHON=$PYTHON > "$OUT/logs/notebooks.log" 2>&1; tail -10 "$OUT/logs/notebooks.log" ;;
    *)         echo "unknown step $step" ;;
  esac
done
tar czf "$OUT/gpu-run.tgz" "$OUT/logs" $LAB/results $LAB/reports $LAB/tests/fixtures notebooks 2>/dev/null
echo "=== done ($(date +%T))"
