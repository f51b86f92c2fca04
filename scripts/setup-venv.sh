#!/usr/bin/env bash
# Creates .venv with what the course needs: numpy, matplotlib, pytest, the cuobjdump/nvdisasm
# wheels when the machine has no cuobjdump, and PyCUDA when an NVIDIA driver is present.
# Called by `make` when .venv is missing or pyproject.toml changed; safe to run again.
# The Jupyter kernel stack (nbformat, nbclient, ipykernel, ipywidgets) is in pyproject.toml's
# dependencies: `make test` executes the notebooks with it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${BOOTSTRAP_PYTHON:-python3}
if ! command -v "$PY" >/dev/null; then
  echo "error: $PY not found. Install Python 3.10 or newer." >&2; exit 2
fi
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  echo "error: $("$PY" --version) is too old; the course needs Python 3.10 or newer." >&2; exit 2
fi
if [ ! -x .venv/bin/python ]; then
  echo "setting up .venv (once) ..."
  "$PY" -m venv .venv || { echo "error: could not create a virtual environment; on Debian/Ubuntu: apt install python3-venv" >&2; exit 2; }
fi
extras=""
if ! { command -v cuobjdump >/dev/null && command -v nvdisasm >/dev/null; }; then extras="sass"; fi
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  extras="${extras:+$extras,}gpu"
  echo "NVIDIA driver found: installing PyCUDA (it compiles against your CUDA toolkit; needs nvcc on PATH)"
else
  echo "no NVIDIA driver here: PyCUDA is not installed, GPU tests will be skipped"
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
# pyproject.toml lists what the course needs; it is installed from a copy in a temporary folder, so the
# build leaves nothing (no *.egg-info) in the checkout
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cp pyproject.toml "$tmp/"
.venv/bin/python -m pip install --quiet --disable-pip-version-check "$tmp${extras:+[$extras]}"
.venv/bin/python -m pip uninstall --quiet --yes matmul-lab-course >/dev/null 2>&1 || true
# CuTe for lab 7b: CUTLASS's headers come in the nvidia-cutlass wheel (cutlass_library/source/include).
# --no-deps: a build needs only the headers; the wheel's Python dependencies (cuda-python, scipy,
# networkx, pydot, treelib) serve its Python code generator, which the course does not run.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps nvidia-cutlass==4.2.0.0
# the one place that makes `common` importable in .venv (notebooks, a Python prompt, Jupyter): a .pth
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$PWD" > "$site/matmul-lab-course.pth"
touch .venv/.ready
echo ".venv ready"
