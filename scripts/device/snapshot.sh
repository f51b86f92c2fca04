# Sourced by the scripts here: sets $OUT (created) and moves into the tree to test. With
# gpu-snapshot.tar.gz beside the project (README.md says how to make it; SNAPSHOT=name: name.tar.gz, names.sh)
# that is the snapshot's commit, unpacked in /tmp/course with .whl/ copied beside it (and the kernels of
# its prebuilt pack, prebuild.sh), and COURSE_COMMIT names it for the records; without one, the copied
# working tree itself. Every nvcc run is logged to $OUT/nvcc.jsonl (COURSE_NVCC_LOG): what the call
# compiled, and what it cost.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${OUT:-$here/device-out}; mkdir -p "$OUT"
source "$(dirname "${BASH_SOURCE[0]}")/names.sh"    # $snap, $tarball, $pre: which snapshot, which prebuilt pack
if [ -f "$tarball" ]; then
  rm -rf /tmp/course && mkdir -p /tmp/course && tar -xf "$tarball" -C /tmp/course
  cp -r "$here/.whl" /tmp/course/.whl 2>/dev/null
  export COURSE_COMMIT=$(cat "$here/$snap.sha"); cd /tmp/course
  # the kernels prebuild.sh built here for this GPU (carried as .prebuilt/): make build keeps each one
  # whose stamp matches (same sources, flags and nvcc) and compiles the rest
  if [ -f "$pre/build.tar.gz" ]; then
    tar -xzf "$pre/build.tar.gz" -C /tmp/course \
      && echo "prebuilt kernels of $(cut -c1-7 "$pre/build.sha" 2>/dev/null) unpacked (snapshot $(cut -c1-7 "$here/$snap.sha"))" >> "$OUT/prebuilt.txt"
  fi
  # the graders' cubins, by contents (COURSE_CUBIN_CACHE, common/build.py): a grader's copy of a file
  # prebuild.sh built is copied, not compiled
  if [ -f "$pre/cubins.tar.xz" ]; then
    rm -rf /tmp/cubin-cache
    { tar -xJf "$pre/cubins.tar.xz" -C /tmp 2>/dev/null \
      || python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall('/tmp')" "$pre/cubins.tar.xz"; } \
      && export COURSE_CUBIN_CACHE=/tmp/cubin-cache \
      && echo "$(ls /tmp/cubin-cache | grep -c 'cubin$') cached cubins unpacked in $COURSE_CUBIN_CACHE" >> "$OUT/prebuilt.txt"
  fi
else
  cd "$here"
fi
export COURSE_NVCC_LOG=$OUT/nvcc.jsonl
# each notebook cell as it starts and ends (common/notebooks.py): a cut run says which cell it was in
export COURSE_NOTEBOOK_LOG=$OUT/notebooks.log
# pack_build_logs: the build's tail, nvcc's log and prebuilt.txt into $OUT/build.tgz, at a script's
# end: a call brings back 8 files of $OUT at most (make-test.sh's own, failures.txt and notebooks.log
# with these three were 10)
pack_build_logs() {
  local packed
  packed=$(cd "$OUT" && ls build.log nvcc.jsonl prebuilt.txt 2>/dev/null)
  if [ -n "$packed" ]; then tar -czf "$OUT/build.tgz" -C "$OUT" $packed && (cd "$OUT" && rm -f $packed); fi
}
