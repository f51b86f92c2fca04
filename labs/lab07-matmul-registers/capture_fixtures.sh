#!/usr/bin/env bash
# capture_fixtures.sh -- record real ncu and compute-sanitizer output as the parser tests' fixtures.
#
# Run on a GPU machine with ncu and compute-sanitizer, from this folder, with the course's Python:
#     cd labs/lab07-matmul-registers && PYTHON=../../.venv/bin/python ./capture_fixtures.sh
# On a copied tree without git history, name the commit: COURSE_COMMIT=<40-hex sha> (as make bench).
# About 2 minutes of GPU time. It writes tests/fixtures/ (commit what it writes; never edit it):
#   ncu_fp32_v6.log, ncu_fp32_cublas-sgemm.log      make ncu-table's own runs, for v6 and cuBLAS
#   ncu_tensor_t3.log, ncu_tensor_cublas-hgemm.log  make ncu-tensor's own runs, for t3 and cuBLAS
#                                                   (the profile names are now cublas-fp32 and
#                                                   cublas-fp16_tensor; the fixture names stay)
#   sanitizer_<tool>_clean.txt                      make sanitize's own runs (v6 and t3), each tool
#   sanitizer_<tool>_broken.txt                     memcheck, racecheck, initcheck on broken_kernels.cu
#   CAPTURED.txt                                    where, when, with which versions
# Then it runs the fixture tests. Exit status: 0 if every step worked, 1 if not (it goes on anyway,
# so one failure still leaves the other fixtures).
set -uo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
HERE=$PWD ROOT=$(cd ../.. && pwd)
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
course() { (cd "$ROOT" && $PYTHON -m common "$@" --lab "$HERE"); }
FIX=tests/fixtures
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
status=0
step() { printf '\n== %s\n' "$*" >&2; }
bad() { echo "capture_fixtures: FAILED: $*" >&2; status=1; }

step "versions"
{
    echo "captured: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    # the commit as every report names it (common/report.run_info): COURSE_COMMIT on a copied tree, else git
    echo "commit: $($PYTHON -c 'from common import report
info = report.run_info(".")
print(info["commit"] + (" (dirty tree)" if info["dirty_tree"] else ""))')"
    echo "gpu: $(nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader | head -1)"
    echo "ncu: $(ncu --version 2>&1 | tail -1)"
    echo "compute-sanitizer: $(compute-sanitizer --version 2>&1 | tail -1)"
    echo "nvcc: $(nvcc --version 2>&1 | tail -1)"
    echo "python: $($PYTHON --version 2>&1)"
} > "$FIX/CAPTURED.txt"
cat "$FIX/CAPTURED.txt"
grep -q '^commit: unknown' "$FIX/CAPTURED.txt" && bad "no commit known: set COURSE_COMMIT=<sha> on a tree without git history"

# 1. ncu, through the targets themselves, on one FP32 kernel, one tensor kernel and cuBLAS
step "make ncu-table, v6 and cuBLAS SGEMM"
course ncu-table --kernels v6,cublas-fp32 || bad "ncu-table"
step "make ncu-tensor, t3 and cuBLAS HGEMM"
course ncu-tensor --kernels t3,cublas-fp16_tensor || bad "ncu-tensor"
for pair in fp32:v6:v6 fp32:cublas-fp32:cublas-sgemm tensor:t3:t3 tensor:cublas-fp16_tensor:cublas-hgemm; do
    IFS=: read -r table name fixture <<< "$pair"
    src=$(ls reports/ncu/"${table}_${name}"_sm_*.log 2>/dev/null | head -1)
    if [ -n "$src" ]; then cp "$src" "$FIX/ncu_${table}_${fixture}.log"; else bad "no ncu log for $table $name"; fi
done

# 2. compute-sanitizer, through make sanitize, on v6 and t3: the clean runs
step "make sanitize, v6 and t3"
course sanitize --kernels v6,t3 || bad "sanitize (v6, t3) was not clean"
for tool in memcheck racecheck synccheck initcheck; do
    src=$(ls reports/sanitize/"${tool}"_sm_*_v6-t3.txt 2>/dev/null | head -1)
    if [ -n "$src" ]; then cp "$src" "$FIX/sanitizer_${tool}_clean.txt"; else bad "no $tool report"; fi
done

# 3. compute-sanitizer on planted bugs, with make sanitize's own command line (profiling.sanitizer_argv:
#    memcheck with --padding, without which the out-of-bounds writes land in the next allocation unseen)
step "broken_kernels.cu under memcheck, racecheck, initcheck"
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
if nvcc -O2 -lineinfo -arch="sm_${cc}" -o "$TMP/broken" "$FIX/broken_kernels.cu"; then
    for pair in memcheck:oob racecheck:race initcheck:uninit; do
        tool=${pair%%:*}; mode=${pair#*:}
        mapfile -t argv < <($PYTHON -c 'import sys; from common import profiling, sanitizer
print("\n".join(profiling.sanitizer_argv(sanitizer.find_sanitizer(), sys.argv[1], sys.argv[2:])))' "$tool" "$TMP/broken" "$mode")
        if [ "${#argv[@]}" -eq 0 ]; then bad "no compute-sanitizer command for $tool"; continue; fi
        out=$("${argv[@]}" 2>&1); rc=$?
        printf '$ %s\n# exit status %s\n%s\n' "${argv[*]}" "$rc" "$out" > "$FIX/sanitizer_${tool}_broken.txt"
        [ "$rc" -ne 0 ] || bad "$tool found nothing in broken_kernels.cu ($mode): see $FIX/sanitizer_${tool}_broken.txt"
    done
else
    bad "nvcc could not build broken_kernels.cu"
fi

step "the fixture tests"
(cd "$ROOT" && $PYTHON -m pytest -q "$HERE/tests/test_profiling_fixtures.py" tests/test_ncu.py tests/test_sanitizer.py) || bad "fixture tests"

ls -l "$FIX"
[ "$status" -eq 0 ] && echo "capture_fixtures: done; commit tests/fixtures/" || echo "capture_fixtures: some steps failed (above)"
exit "$status"
