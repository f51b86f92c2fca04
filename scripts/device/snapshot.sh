# Sourced by the scripts here: sets $OUT (created) and moves into the tree to test. With
# gpu-snapshot.tar beside the project (README.md says how to make it) that is the snapshot's commit,
# unpacked in /tmp/course with .whl/ copied beside it, and COURSE_COMMIT names it for the records;
# without one, the copied working tree itself.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${OUT:-$here/device-out}; mkdir -p "$OUT"
if [ -f "$here/gpu-snapshot.tar" ]; then
  rm -rf /tmp/course && mkdir -p /tmp/course && tar -xf "$here/gpu-snapshot.tar" -C /tmp/course
  cp -r "$here/.whl" /tmp/course/.whl 2>/dev/null
  export COURSE_COMMIT=$(cat "$here/gpu-snapshot.sha"); cd /tmp/course
else
  cd "$here"
fi
