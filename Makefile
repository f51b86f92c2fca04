# The matmul lab course. The README's two commands:
#   make test     set up .venv (first time), build every kernel, run every test
#   make bench    the benchmark tables of lab 7, against cuBLAS
# Every lab target is reachable from here: make sass, make ncu-table, make ncu-tensor, ...
# With your own Python environment: make test PYTHON=python3   (no .venv is made)

LAB ?= labs/lab07-matmul-registers

ifeq ($(origin PYTHON),undefined)
PYTHON := $(CURDIR)/.venv/bin/python
SETUP  := .venv/.ready
else
SETUP  :=
endif
export PYTHON

LAB_TARGETS := build bench sass tune selfcheck ncu-table ncu-tensor ncu sanitize workspace grade grade-selftest
# WORKSPACE=path and JSON=file (make workspace, make grade) are relative to where make was started: made absolute
LAB_VARS := $(if $(WORKSPACE),WORKSPACE=$(abspath $(WORKSPACE))) $(if $(JSON),JSON=$(abspath $(JSON)))

.PHONY: all test $(LAB_TARGETS) clean distclean help

all: build

help:
	@echo "make test | bench | build | sass | ncu-table | ncu-tensor | ncu KERNEL=v7 | sanitize | tune"
	@echo "make notebooks (NOTEBOOKS_OUT=dir) | strip-notebooks"
	@echo "make workspace | grade (WORKSPACE=path, PARTS=v4,v6, NOGPU=1) | grade-selftest: lab 7's graded exercises"
	@echo "options: ARCH=sm_86 or ARCH=all (build), PYTHON=python3 (use your own environment)"

.venv/.ready: pyproject.toml scripts/setup-venv.sh
	@scripts/setup-venv.sh

test: $(SETUP)
	@$(MAKE) --no-print-directory -C $(LAB) build
	$(PYTHON) -m pytest tests $(LAB)/tests

$(LAB_TARGETS): $(SETUP)
	@$(MAKE) --no-print-directory -C $(LAB) $@ $(LAB_VARS)

clean:
	@$(MAKE) --no-print-directory -C $(LAB) clean

distclean: clean
	rm -rf .venv

# Notebooks (notebooks/): committed without outputs. `make notebooks` executes each one top to
# bottom in a kernel of $(PYTHON) (live on a GPU, recorded results without one) and writes the
# executed copies to NOTEBOOKS_OUT; `make strip-notebooks` removes outputs before a commit.
NOTEBOOKS_OUT ?= build/notebooks

.PHONY: notebooks strip-notebooks

notebooks: $(SETUP)
	@$(MAKE) --no-print-directory -C $(LAB) build
	$(PYTHON) scripts/notebooks.py run --out $(NOTEBOOKS_OUT)

strip-notebooks: $(SETUP)
	$(PYTHON) scripts/notebooks.py strip
