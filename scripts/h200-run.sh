#!/usr/bin/env bash
# The maintainers' GPU session (not for students): build, test, tune, bench, sanitize every lab (or
# LABS="labs/a labs/b"), logs and results into $OUT/gpu-run.tgz, refreshed after every step (so a run cut
# off by its time limit still brings back what it did). On the GPU machine, from the repository root:
#   source .whl/gpu-env.sh && scripts/h200-run.sh build labtests tune bench
# STEP_TIMEOUT (s, default 300) bounds every step; TUNE_BUDGET (s) the tuner's timing; PYTEST_ARGS
# adds to the test steps (e.g. a --deselect).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/logs"
export PYTHON=${PYTHON:-python3}
LABS=${LABS:-$(ls -d labs/*/ | sed 's:/$::')}
T=${STEP_TIMEOUT:-300}
{ nvidia-smi; $PYTHON --version; nvcc --version | tail -1; which ncu compute-sanitizer cuobjdump; } > "$OUT/logs/env.txt" 2>&1
save() { tar czf "$OUT/gpu-run.tgz" --exclude='*.ncu-rep' --exclude='*.cubin' "$OUT/logs" labs/*/results labs/*/reports 2>/dev/null; }
each() {   # each STEP TARGET [VARS...]: make TARGET in every lab, one log per lab
  local step=$1 target=$2; shift 2
  for lab in $LABS; do
    local log="$OUT/logs/${step}_$(basename $lab).log"
    timeout $T make -C "$lab" "$target" PYTHON=$PYTHON "$@" > "$log" 2>&1; echo "$(basename $lab) $target: exit $?"
    grep -v '^\[' "$log" | tail -${TAIL:-25}
  done
}
for step in "$@"; do
  echo "=== $step ($(date +%T))"
  case $step in
    build)     each build build ;;
    labtests)  timeout $T $PYTHON -m pytest -q -p no:cacheprovider $LABS ${PYTEST_ARGS:-} > "$OUT/logs/labtests.log" 2>&1
               echo "labtests: exit $?"; grep -E "passed|failed|^FAILED|^ERROR" "$OUT/logs/labtests.log" | tail -25 ;;
    coretests) timeout $T $PYTHON -m pytest -q -p no:cacheprovider tests ${PYTEST_ARGS:-} > "$OUT/logs/coretests.log" 2>&1
               echo "coretests: exit $?"; grep -E "passed|failed|^FAILED|^ERROR" "$OUT/logs/coretests.log" | tail -15 ;;
    test)      timeout $T make test PYTHON=$PYTHON > "$OUT/logs/test.log" 2>&1; echo "make test: exit $?"; tail -15 "$OUT/logs/test.log" ;;
    bench)     TAIL=45 each bench bench ;;
    tune)      TAIL=30 each tune tune BUDGET=${TUNE_BUDGET:-120} ;;
    sass)      TAIL=30 each sass sass ;;
    ncu)       each ncu-table ncu-table; each ncu-tensor ncu-tensor ;;
    sanitize)  each sanitize sanitize ${SANITIZE_KERNELS:+KERNELS=$SANITIZE_KERNELS} ;;
    selftest)  each grade-selftest grade-selftest ;;
    notebooks) timeout $T make notebooks PYTHON=$PYTHON > "$OUT/logs/notebooks.log" 2>&1; tail -10 "$OUT/logs/notebooks.log" ;;
    *)         echo "unknown step $step" ;;
  esac
  save
done
echo "=== done ($(date +%T))"
