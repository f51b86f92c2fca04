#!/usr/bin/env bash
# The maintainers' one-call GPU session (not for students): test, bench, tune and more for every lab
# (or LABS="labs/a labs/b"), logs and results into $OUT/gpu-run.tgz. On the GPU machine, from the root:
#   source .whl/gpu-env.sh && scripts/h200-run.sh test bench sass tune ncu sanitize
# STEP_TIMEOUT (seconds, default 300) bounds every step; TUNE_BUDGET (s) the tuner's timing.
set -uo pipefail
make() { timeout "${STEP_TIMEOUT:-300}" /usr/bin/env make "$@"; }
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/logs"
export PYTHON=${PYTHON:-python3}
LABS=${LABS:-$(ls -d labs/*/ | sed 's:/$::')}
{ nvidia-smi; $PYTHON --version; nvcc --version | tail -1; which ncu compute-sanitizer cuobjdump; } > "$OUT/logs/env.txt" 2>&1
each() {   # each STEP TARGET [VARS...]: make TARGET in every lab, one log per lab
  local step=$1 target=$2; shift 2
  for lab in $LABS; do
    local log="$OUT/logs/${step}_$(basename $lab).log"
    make -C "$lab" "$target" PYTHON=$PYTHON "$@" > "$log" 2>&1; echo "$(basename $lab) $target: exit $?"
    grep -v '^\[' "$log" | tail -${TAIL:-25}
  done
}
for step in "$@"; do
  echo "=== $step ($(date +%T))"
  case $step in
    test)      make test PYTHON=$PYTHON > "$OUT/logs/test.log" 2>&1; echo "make test: exit $?"; tail -15 "$OUT/logs/test.log" ;;
    labtests)  each labtests test ;;
    bench)     TAIL=40 each bench bench ;;
    tune)      TAIL=30 each tune tune BUDGET=${TUNE_BUDGET:-120} ;;
    sass)      TAIL=30 each sass sass ;;
    ncu)       each ncu-table ncu-table; each ncu-tensor ncu-tensor ;;
    sanitize)  each sanitize sanitize ;;
    selftest)  each grade-selftest grade-selftest ;;
    notebooks) make notebooks PYTHON=$PYTHON > "$OUT/logs/notebooks.log" 2>&1; tail -10 "$OUT/logs/notebooks.log" ;;
    *)         echo "unknown step $step" ;;
  esac
done
tar czf "$OUT/gpu-run.tgz" --exclude='*.ncu-rep' --exclude='*.cubin' "$OUT/logs" labs/*/results labs/*/reports 2>/dev/null
echo "=== done ($(date +%T))"
