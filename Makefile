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
# The graded targets run for the labs that have graded exercises (grading/parts.py), or, when LAB names
# only labs without, for those (each says it has none). "Several labs" counts the labs a target runs for.
GRADING_TARGETS := workspace grade grade-selftest grade-class grade-class-demo
GRADED_LABS := $(or $(foreach d,$(LABS),$(if $(wildcard $(d)/grading/parts.py),$(d))),$(LABS))
LABS_OF = $(if $(filter $(GRADING_TARGETS),$(1)),$(GRADED_LABS),$(LABS))
MANY = $(word 2,$(call LABS_OF,$@))
LAB_VARS = $(if $(WORKSPACE),WORKSPACE=$(call WORKSPACE_OF,$$d)) \
           $(if $(JSON),JSON=$(abspath $(JSON))$(if $(MANY),.$$(basename $$d).json)) \
           $(foreach v,SUBMISSIONS OUT DEST,$(if $(and $($(v)),$(filter-out environment,$(origin $(v)))),$(v)=$(abspath $($(v)))$(if $(MANY),/$$(basename $$d))))
# a lab's workspace, for the shell variable named in $(1): WORKSPACE (a folder per lab when several), or its own
WORKSPACE_OF = $(if $(WORKSPACE),$(abspath $(WORKSPACE))$(if $(MANY),/$$(basename $(1))),$(CURDIR)/$(1)/workspace)

.PHONY: all test $(LAB_TARGETS) diff clean distclean help labs

all: build

help:
	@echo "make test | bench | build | sass | tune | bounds KERNEL=name | compare KERNEL=name BUILDS=.. | ncu-table | ncu-tensor | ncu KERNEL=name | sanitize"
	@echo "make diff KERNEL=k6 (SIDE=1, CONTEXT=n): what a rung changes, against the rung before it"
	@echo "make workspace | grade (WORKSPACE=path, PARTS=.., NOGPU=1) | grade-selftest: the graded exercises"
	@echo "make grade-class SUBMISSIONS=dir (JOBS=, SLURM=1|print, MERGE=1) | grade-class-demo DEST=dir: a class"
	@echo "make notebooks (NOTEBOOKS_OUT=dir) | strip-notebooks | labs"
	@echo "options: LAB=lab07 (one lab), ARCH=sm_86 or ARCH=all (build), PYTHON=python3 (your own environment),"
	@echo "         V=1 (make test: every build's table, every test and skip)"
	@echo "labs: $(notdir $(ALL_LABS))"

labs:
	@for d in $(LABS); do echo $$d; done

.venv/.ready: pyproject.toml scripts/setup-venv.sh
	@scripts/setup-venv.sh

# labs built at once by make test (each one compiles on every core)
BUILD_JOBS := 2

# Quiet by default: a line per lab for its build, then mk/tests.mk's quiet pytest; a failed build is
# printed in full, and so is a build that spills. V=1: every build's register table, pytest's progress
# and every skip with its reason. The labs build side by side (one lab's last slow compile no longer
# leaves the other cores idle); a failed build stops make test before pytest.
include mk/tests.mk
TEST_PATHS = $(if $(LAB),$(addsuffix /tests,$(LABS)),tests labs)
test: $(SETUP)
	@printf '%s\n' $(LABS) | xargs -P $(BUILD_JOBS) -I{} sh -c \
	  'out=$$($(MAKE) --no-print-directory -C {} build 2>&1); s=$$?; \
	   if [ $$s -ne 0 ] || [ -n "$(V)" ] || printf "%s" "$$out" | grep -q SPILLS; then printf "== {}: make build\n%s\n" "$$out"; fi; \
	   if [ $$s -eq 0 ]; then echo "built {}"; else echo "make build failed in {}"; fi; exit $$s' || exit 1
	@$(call RUN_TESTS,$(TEST_PATHS))

# each lab's make is told the LAB= that reaches it from here (COURSE_TOP_LAB): the commands it prints
# as next steps name it, as they must when typed here (common.report.make_command)
TOP_LAB = COURSE_TOP_LAB=$(or $(LAB),$$(basename $$d))

$(filter-out workspace grade,$(LAB_TARGETS)): $(SETUP)
	@for d in $(call LABS_OF,$@); do echo "== $$d: make $@"; $(TOP_LAB) $(MAKE) --no-print-directory -C $$d $@ $(LAB_VARS) || exit 1; done

# several labs: each that has a workspace is graded, each without one is skipped, saying how to make it
# (one lab: its own grade says there is none). make -n shows every lab's command: it grades nothing.
DRY_RUN := $(findstring n,$(firstword -$(MAKEFLAGS)))
grade: $(SETUP)
	@skipped=; for d in $(GRADED_LABS); do ws=$(call WORKSPACE_OF,$$d); \
	  if [ -n "$(word 2,$(GRADED_LABS))" ] && [ -z "$(DRY_RUN)" ] && [ ! -d "$$ws" ]; then \
	    echo "== $$d: skipped, there is no workspace at $$ws: make workspace LAB=$$(basename $$d)$(if $(WORKSPACE), WORKSPACE=$$ws) makes it"; \
	    skipped="$$skipped $$(basename $$d)"; continue; fi; \
	  echo "== $$d: make grade"; $(TOP_LAB) $(MAKE) --no-print-directory -C $$d grade $(LAB_VARS) || exit 1; done; \
	  [ -z "$$skipped" ] || echo "not graded (no workspace):$$skipped"; \
	  if [ "$$(echo $$skipped | wc -w)" -eq "$(words $(GRADED_LABS))" ]; then \
	    echo "error: no lab has a workspace to grade"; \
	    echo "  what to do: make workspace$(if $(WORKSPACE), WORKSPACE=$(WORKSPACE)) makes every lab's (LAB=<lab>: one)"; exit 2; fi

# a lab whose workspace exists already is left alone (it may hold your work), and the others are made
workspace: $(SETUP)
	@for d in $(GRADED_LABS); do ws=$(call WORKSPACE_OF,$$d); \
	  if [ -z "$(FORCE)" ] && [ -n "$$(ls -A "$$ws" 2>/dev/null)" ]; then \
	    echo "== $$d: $$ws exists: kept as it is (FORCE=1 replaces it, keeping the old one as $$ws.old)"; continue; fi; \
	  echo "== $$d: make workspace"; $(TOP_LAB) $(MAKE) --no-print-directory -C $$d workspace WORKSPACE=$$ws || exit 1; done

# a rung against the one before it: the lab whose table has KERNEL (or LAB=), no loop over the labs
diff: $(SETUP)
	@$(PYTHON) -m common diff $(if $(LAB),--lab $(firstword $(LABS))) $(if $(KERNEL),--kernel $(KERNEL)) \
	  $(if $(SIDE),--side-by-side) $(if $(CONTEXT),--context $(CONTEXT)) $(if $(COLOR),--color $(COLOR))

clean:
	@for d in $(LABS); do $(MAKE) --no-print-directory -C $$d clean; done

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
