#!/bin/bash
# The kernels written without a GPU (NOTES.md of labs 7a, 7c, 7d: h6, h7, h4_3xtf32, h6_3xtf32, k8's split pass,
# wgmma_splitk and lab 7d's Hopper rules), checked on the device machine in two calls:
#   PHASE=tests  their GPU tests, one pytest per family cut at GROUP_S seconds (default 100): tests.tgz
#                (a log per family), failures.txt, durations.tsv
#   PHASE=bench  their benchmarks, each cut at BENCH_S seconds (default 150), and presplit-probe.py (7c-presplit):
#                bench-logs.tgz (a log per step), records.tgz
#   PHASE=ncu    ncu-tensor at 4096^3 on lab 7c's h6 and h6_tf32 beside cuBLAS's own FP16 and TF32 kernels, and
#                the 3xTF32 rows launch by launch (the tensor pipe, the stalls: what stands between the rungs
#                and issue 43's and 44's targets), cut at BENCH_S: ncu-*.log, ncu.tgz
#   PHASE=accuracy  make accuracy in labs 7c and 7a (error vs K, K = 256..65536, both input
#                distributions, beside cuBLAS SGEMM, TF32 and the three-call composition: issue 44's
#                study and plot), cut at BENCH_S each: accuracy-*.log, accuracy.tgz (the records and charts)
#   PHASE=sanitize  compute-sanitizer (memcheck, racecheck, synccheck, initcheck) on each new kernel, each lab
#                cut at BENCH_S seconds: sanitize-*.log, sanitize.tgz (the labs' reports/sanitize/)
#   ONLY="7c-3xtf32 7c-presplit 7a-tf32"  in bench, accuracy and sanitize: run only the steps of these names;
#                7d-all (lab 7d's whole sweep) runs only when named;
#                KERNELS_7C: the lab 7c rows sanitize takes (default: all its new ones)
set -u
source "$(dirname "$0")/snapshot.sh"          # $OUT, and the tree to test (the snapshot's commit)
export PYTHONPATH=$PWD:$here/scripts/device${PYTHONPATH:+:$PYTHONPATH}
L7A=labs/lab07a-tf32-tensor-cores; L7C=labs/lab07c-hopper-wgmma; L7D=labs/lab07d-decode-shapes
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
for l in $L7A $L7C $L7D; do make -C "$l" build PYTHON=python3 > "/tmp/build-$(basename "$l").log" 2>&1 & done; wait
tail -n 12 /tmp/build-*.log > "$OUT/build.log"
wanted() { case " ${ONLY:-$1} " in *" $1 "*) return 0;; *) return 1;; esac; }
case "${PHASE:-tests}" in
  tests)
    # one pytest per family, each cut at GROUP_S seconds: a kernel that hangs costs its own family only
    group() { local name=$1; shift
              timeout "${GROUP_S:-100}" python3 -m pytest -p instafail -n 8 --dist loadgroup -p no:cacheprovider -v -rfE "$@" \
                > "$OUT/test-$name.log" 2>&1
              echo "pytest exit status $?" >> "$OUT/test-$name.log"; }
    group 7c-h6 $L7C/tests/test_gpu.py -k "h6 or h7"
    group 7c-others $L7C/tests/test_gpu.py -k "not h6 and not h7"
    group 7c-3xtf32 $L7C/tests/test_3xtf32.py
    group 7d $L7D/tests/test_gpu.py -k "wgmma_splitk or hopper_rules or dispatcher or gemm_returns"
    group 7a-k8 $L7A/tests/test_k8_3xtf32.py $L7A/tests/test_gpu.py -k k8
    tar -czf "$OUT/tests.tgz" -C "$OUT" $(cd "$OUT" && ls test-*.log) && rm -f "$OUT"/test-*.log;;
  bench)
    run() { local name=$1; shift; wanted "$name" || return 0
            timeout "${BENCH_S:-150}" make "$@" PYTHON=python3 > "$OUT/bench-$name.log" 2>&1
            echo "exit status $?" >> "$OUT/bench-$name.log"; }
    run 7c-fp16 -C $L7C bench LADDER=fp16 SIZES=2048,4096,8192
    run 7c-tf32 -C $L7C bench LADDER=tf32 SIZES=2048,4096,8192        # h6_tf32 (not timed in the first run)
    run 7c-3xtf32 -C $L7C bench LADDER=3xtf32 SIZES=4096,8192
    run 7a-3xtf32 -C $L7A bench LADDER=3xtf32 SIZES=4096,8192
    run 7a-tf32 -C $L7A bench LADDER=tf32 SIZES=4096,8192           # k7 against CUTLASS's TF32 GEMM (issue 44)
    run 7d -C $L7D bench SHAPES=split-k,small-k
    # lab 7d's whole default sweep (issue 43: every shape), only when ONLY names it: the default run has step 7d
    case " ${ONLY:-} " in *" 7d-all "*) run 7d-all -C $L7D bench;; esac
    # h4_3xtf32's GEMM alone on parts split beforehand, beside the pre-split cuBLAS calls (its header says why)
    if wanted 7c-presplit; then
      timeout "${BENCH_S:-150}" python3 scripts/device/presplit-probe.py > "$OUT/bench-7c-presplit.log" 2>&1
      echo "exit status $?" >> "$OUT/bench-7c-presplit.log"
    fi
    tar -czf "$OUT/records.tgz" $(find $L7A/results $L7C/results $L7D/results -newer "$OUT/gpu.txt" -type f) 2>/dev/null
    # one file for the logs: a call brings back 8 files, and the steps are 7
    tar -czf "$OUT/bench-logs.tgz" -C "$OUT" $(cd "$OUT" && ls bench-*.log) && rm -f "$OUT"/bench-*.log;;
  accuracy)
    run() { local name=$1; shift; wanted "$name" || return 0
            timeout "${BENCH_S:-150}" make "$@" PYTHON=python3 > "$OUT/accuracy-$name.log" 2>&1
            echo "exit status $?" >> "$OUT/accuracy-$name.log"; }
    run 7c -C $L7C accuracy
    run 7a -C $L7A accuracy
    tar -czf "$OUT/accuracy.tgz" $(find $L7A/results $L7C/results -newer "$OUT/gpu.txt" -type f) 2>/dev/null;;
  ncu)
    timeout "${BENCH_S:-150}" make -C $L7C ncu-tensor KERNELS=h6,cublas-fp16_tensor,h6_tf32,cublas-tf32_tensor,h4_3xtf32,h6_3xtf32 \
      SIZE=4096 PYTHON=python3 > "$OUT/ncu-7c.log" 2>&1
    echo "exit status $?" >> "$OUT/ncu-7c.log"
    tar -czf "$OUT/ncu.tgz" $(find $L7C/reports $L7C/results -newer "$OUT/gpu.txt" -type f) 2>/dev/null;;
  sanitize)
    run() { local name=$1; shift; wanted "$name" || return 0
            timeout "${BENCH_S:-150}" make "$@" PYTHON=python3 > "$OUT/sanitize-$name.log" 2>&1
            echo "exit status $?" >> "$OUT/sanitize-$name.log"; }
    run 7c -C $L7C sanitize KERNELS=${KERNELS_7C:-h6,h6_tf32,h4_3xtf32,h6_3xtf32,h7}
    # wgmma_splitk twice: its two-launch form first (LAB07D_NO_FUSED, the form a grid past one wave takes),
    # its reports kept apart, then both rows as launched (the one-launch form at the sanitizer's shapes)
    LAB07D_NO_FUSED=1 run 7d-two-launch -C $L7D sanitize KERNELS=wgmma_splitk
    rm -rf $L7D/reports/sanitize-two-launch && mv $L7D/reports/sanitize $L7D/reports/sanitize-two-launch
    run 7d -C $L7D sanitize KERNELS=wgmma_splitk,h6
    run 7a -C $L7A sanitize KERNELS=k8
    tar -czf "$OUT/sanitize.tgz" $(find $L7A/reports/sanitize $L7C/reports/sanitize $L7D/reports/sanitize* \
                                   -newer "$OUT/gpu.txt" -type f) 2>/dev/null;;
esac
pack_build_logs                               # snapshot.sh: 8 files come back at most (bench's 9 lost its records, 2026-12-06)
exit 0
