# The matmul lab course. The README's two commands:
#   make test     set up .venv (first time), build every lab's kernels, run every test
#   make bench    every lab's benchmark tables, against cuBLAS of the same precision
# Every lab target is reachable from here and runs for every lab, or for one: LAB=lab07 (a name or
# a folder under labs/). `make help` lists the targets; mk/lab.mk defines them.
# With your own Python environment: make test PYTHON=python3   (no .venv is made)

ifeq ($(origin PYTHON),undefined)
PYTHON := $(CURDIR)/.venv/bin/python
SETUP  := .venv/.ready
else
SETUP  :=
endif
export PYTHON
export PYTHONPATH := $(CURDIR)$(if $(PYTHONPATH),:$(PYTHONPATH))

ALL_LABS := $(patsubst %/lab.py,%,$(sort $(wildcard labs/*/lab.py)))
LABS := $(if $(LAB),$(or $(filter labs/$(LAB) labs/$(LAB)-%,$(ALL_LABS)),$(filter $(LAB:/=),$(ALL_LABS)),$(error no lab matches LAB=$(LAB); labs: $(notdir $(ALL_LABS)))),$(ALL_LABS))

LAB_TARGETS := build bench sass tune bounds compare selfcheck ncu-table ncu-tensor ncu sanitize workspace grade grade-selftest grade-class grade-class-demo
# WORKSPACE=path, JSON=file, SUBMISSIONS=, OUT= and DEST= are relative to where make was started: made
# absolute; with several labs, each lab's is a folder (JSON: a suffix) named for the lab
MANY := $(word 2,$(LABS))
LAB_VARS = $(if $(WORKSPACE),WORKSPACE=$(abspath $(WORKSPACE))$(if $(MANY),/$$(basename $$d))) \
           $(if $(JSON),JSON=$(abspath $(JSON))$(if $(MANY),.$$(basename $$d).json)) \
           $(foreach v,SUBMISSIONS OUT DEST,$(if $($(v)),$(v)=$(abspath $($(v)))$(if $(MANY),/$$(basename $$d))))

.PHONY: all test $(LAB_TARGETS) clean distclean help labs

all: build

help:
	@echo "make test | bench | build | sass | tune | bounds KERNEL=name | compare KERNEL=name BUILDS=.. | ncu-table | ncu-tensor | ncu KERNEL=name | sanitize"
	@echo "make workspace | grade (WORKSPACE=path, PARTS=.., NOGPU=1) | grade-selftest: the graded exercises"
	@echo "make grade-class SUBMISSIONS=dir (JOBS=, SLURM=1|print, MERGE=1) | grade-class-demo DEST=dir: a class"
	@echo "make notebooks (NOTEBOOKS_OUT=dir) | strip-notebooks | labs"
	@echo "options: LAB=lab07 (one lab), ARCH=sm_86 or ARCH=all (build), PYTHON=python3 (your own environment)"
	@echo "labs: $(notdir $(ALL_LABS))"

labs:
	@for d in $(LABS); do echo $$d; done

.venv/.ready: pyproject.toml scripts/setup-venv.sh
	@scripts/setup-venv.sh

# labs built at once by make test (each one compiles on every core)
BUILD_JOBS := 2
# pytest on every core (pytest-xdist, in .venv): most of the time goes to nvcc, one process each; a test
# file stays on one worker, so its fixtures are built once. JOBS=1 runs everything in one process.
TEST_JOBS = $(if $(filter 1,$(JOBS)),,$(shell $(PYTHON) -c 'import xdist' 2>/dev/null && echo '-n $(or $(JOBS),auto) --dist loadfile'))

# the labs build side by side (one lab's last slow compile no longer leaves the other cores idle); each
# lab's output is printed whole when it is done, and a failed build stops make test before pytest
test: $(SETUP)
	@printf '%s\n' $(LABS) | xargs -P $(BUILD_JOBS) -I{} sh -c \
	  'echo "building {} ..."; out=$$($(MAKE) --no-print-directory -C {} build 2>&1); s=$$?; printf "%s\n" "$$out"; exit $$s' || exit 1
	$(PYTHON) -m pytest $(TEST_JOBS) $(if $(LAB),$(addsuffix /tests,$(LABS)),tests labs)

$(LAB_TARGETS): $(SETUP)
	@for d in $(LABS); do echo "== $$d: make $@"; $(MAKE) --no-print-directory -C $$d $@ $(LAB_VARS) || exit 1; done

clean:
	@for d in $(ALL_LABS); do $(MAKE) --no-print-directory -C $$d clean; done

distclean: clean
	rm -rf .venv

# Notebooks (notebooks/): committed without outputs. `make notebooks` executes each one top to
# bottom in a kernel of $(PYTHON) (live on a GPU, recorded results without one) and writes the
# executed copies to NOTEBOOKS_OUT; `make strip-notebooks` removes outputs before a commit.
NOTEBOOKS_OUT ?= build/notebooks

.PHONY: notebooks strip-notebooks

notebooks: $(SETUP)
	@for d in $(LABS); do $(MAKE) --no-print-directory -C $$d build || exit 1; done
	$(PYTHON) scripts/notebooks.py run --out $(NOTEBOOKS_OUT)

strip-notebooks: $(SETUP)
	$(PYTHON) scripts/notebooks.py strip
