# Sourced by snapshot.sh and prebuild.sh: which snapshot a call tests and which prebuilt pack goes
# with it. By default gpu-snapshot.tar.gz and .sha with .prebuilt/; SNAPSHOT=name: name.tar.gz and
# name.sha with .prebuilt-name/, so that two commits (main and a branch) can be prepared here and tested
# in calls back to back while the machine is warm (each call carries .whl and its own pack). Compressed:
# the snapshots travel with every call (untracked files do), and a call carries 64 MiB in all.
snap=${SNAPSHOT:-gpu-snapshot}
case "$snap" in
  gpu-snapshot) pre=$here/.prebuilt;;
  *[!A-Za-z0-9_.-]*|"") echo "SNAPSHOT=$snap: a file name of letters, digits, '.', '_' and '-' (name.tar.gz beside the project)" >&2; exit 2;;
  *) pre=$here/.prebuilt-$snap;;
esac
tarball=$here/$snap.tar.gz
