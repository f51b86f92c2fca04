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

LAB_TARGETS := build bench sass tune selfcheck ncu-table ncu-tensor ncu sanitize

.PHONY: all test $(LAB_TARGETS) clean distclean help

all: build

help:
	@echo "make test | bench | build | sass | ncu-table | ncu-tensor | ncu KERNEL=v7 | sanitize | tune"
	@echo "options: ARCH=sm_86 or ARCH=all (build), PYTHON=python3 (use your own environment)"

.venv/.ready: pyproject.toml scripts/setup-venv.sh
	@scripts/setup-venv.sh

test: $(SETUP)
	@$(MAKE) --no-print-directory -C $(LAB) build
	$(PYTHON) -m pytest tests $(LAB)/tests

$(LAB_TARGETS): $(SETUP)
	@$(MAKE) --no-print-directory -C $(LAB) $@

clean:
	@$(MAKE) --no-print-directory -C $(LAB) clean

distclean: clean
	rm -rf .venv
