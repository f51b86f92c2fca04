# Sourced by snapshot.sh and prebuild.sh: which snapshot a call tests and which prebuilt pack goes
# with it. By default gpu-snapshot.tar and .sha with .prebuilt/; SNAPSHOT=name: name.tar and name.sha
# with .prebuilt-name/, so that two commits (main and a branch) can be prepared here and tested in calls
# back to back, while the machine is warm (carry both packs: .whl, .prebuilt, .prebuilt-name).
snap=${SNAPSHOT:-gpu-snapshot}
case "$snap" in
  gpu-snapshot) pre=$here/.prebuilt;;
  *[!A-Za-z0-9_.-]*|"") echo "SNAPSHOT=$snap: a file name of letters, digits, '.', '_' and '-' (name.tar beside the project)" >&2; exit 2;;
  *) pre=$here/.prebuilt-$snap;;
esac
