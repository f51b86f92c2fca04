#!/bin/bash
# Here, before a device call (no GPU needed): build the snapshot's kernels for the H200 where the
# device will look for them, and pack them for the call to carry. snapshot.sh unpacks the pack in
# /tmp/course, and make build there finds them up to date: a stamp holds the sources' contents and
# paths, the flags and nvcc's version, so a cubin built here counts only where the device's nvcc
# would have built the same one (another nvcc there rebuilds, as without the pack).
#   NVCC_LOG=file   also build again what a device run compiled inside the labs (that run's
#                   $OUT/nvcc.jsonl: make-test.sh and grade-class.sh write it); sources in temporary
#                   folders (the graders' copies) are left out
#   ARCH            default sm_90 (sm_90a for the Hopper rows follows from it)
#   GRADING=0       skip the graders' builds: by default the labs' grading tests run here (no GPU:
#                   their static part) with COURSE_CUBIN_CACHE set, so that every cubin a grader
#                   builds in its temporary folders (the reference, the untouched workspace, each
#                   known-wrong patch) is kept by its contents, and the device's graders, which build
#                   the same files in other temporary folders, find them (common/build.py, cache_key)
# Writes .prebuilt/build.tar.gz, .prebuilt/cubins.tar.xz and .prebuilt/build.sha (the snapshot's
# commit); run with carry [".whl", ".prebuilt"]. Two cores: about 15 minutes.
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
source "$(dirname "$0")/names.sh"             # $snap, $tarball, $pre: which snapshot, which prebuilt pack
[ -f "$tarball" ] || { echo "prebuild: no $snap.tar.gz here (scripts/device/README.md says how to make it)" >&2; exit 2; }
python=${PYTHON:-$here/.venv/bin/python}
wheel=$(ls "$here"/.whl/nvidia_cutlass-*.whl 2>/dev/null | head -1)
[ -n "$wheel" ] || { echo "prebuild: no nvidia_cutlass wheel in .whl/ (run ../shared/gpu/prepare)" >&2; exit 2; }
rm -rf /tmp/course && mkdir -p /tmp/course && tar -xf "$tarball" -C /tmp/course
# CuTe's headers at the path the device's gpu-env.sh installs them (-I and -lineinfo name it)
mkdir -p /tmp/site && unzip -qo "$wheel" 'cutlass_library/source/include/*' -d /tmp/site
export CUTLASS_INCLUDE=/tmp/site/cutlass_library/source/include
cd /tmp/course
rm -rf /tmp/cubin-cache; export COURSE_CUBIN_CACHE=/tmp/cubin-cache
t0=$(date +%s)
for l in labs/*/; do make -s -C "$l" build ARCH="${ARCH:-sm_90}" PYTHON="$python" > /dev/null || exit 1; done
echo "prebuild: every lab built for ${ARCH:-sm_90} in $(( $(date +%s) - t0 )) s"
if [ -n "${NVCC_LOG:-}" ]; then
  PYTHONPATH=/tmp/course "$python" - "$NVCC_LOG" <<'PY'
import json, os, sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from common import build
from common.errors import CourseError
runs = [json.loads(l) for l in Path(sys.argv[1]).read_text().splitlines() if l.strip()]
inside = [r for r in runs if "src" in r and r["status"] == 0 and r["src"].startswith("/tmp/course/labs/") and r["out"].startswith("/tmp/course/labs/")
          and Path(r["src"]).exists()]
def again(r):
    try:
        build.compile_cubin(r["src"], r["out"], r["arch"], r["defines"], flags=r["flags"], include_dirs=r["include_dirs"])
    except CourseError as e:
        print(f"prebuild: {r['out']}: {str(e).splitlines()[0]}", file=sys.stderr)
with ThreadPoolExecutor(os.cpu_count()) as pool:      # one nvcc process each
    list(pool.map(again, inside))
print(f"prebuild: {len(inside)} of the log's {len(runs)} nvcc runs were inside the labs, built again")
PY
fi
if [ "${GRADING:-1}" != 0 ]; then
  t0=$(date +%s)
  PYTHONPATH=/tmp/course "$python" -m pytest -q -p no:cacheprovider -n "$(nproc)" labs/*/tests/test_grading.py \
    > /tmp/prebuild-grading.log 2>&1 || { echo "prebuild: the grading tests failed here (/tmp/prebuild-grading.log)" >&2; exit 1; }
  echo "prebuild: the graders' builds in $(( $(date +%s) - t0 )) s ($(tail -n 1 /tmp/prebuild-grading.log))"
fi
mkdir -p "$pre"
# xz, not gzip: the host probes (about 1 MB each, most of it the same CUDA runtime) compress across
# files only with xz's large window: 8 MB instead of 48 MB, and a call carries at most 64 MiB
rm -f "$pre/cubins.tar.gz"
tar -cf - -C /tmp cubin-cache | xz -T"$(nproc)" -6 > "$pre/cubins.tar.xz"
tar -czf "$pre/build.tar.gz" --exclude='.*.part' labs/*/build
cp "$here/$snap.sha" "$pre/build.sha"
echo "prebuild: $(du -h "$pre/build.tar.gz" | cut -f1) in $pre/build.tar.gz, $(ls /tmp/cubin-cache | grep -c 'cubin$') cubins ($(du -h "$pre/cubins.tar.xz" | cut -f1)) in $pre/cubins.tar.xz for $(cut -c1-7 "$here/$snap.sha")"
