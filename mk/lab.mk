# Every target a lab has, defined once. A lab's Makefile is one line:   include ../../mk/lab.mk
# Each target runs `python -m common <target> --lab <this folder>` from the repository root.
#   make             build every kernel; registers, spills, shared memory per kernel
#   make test        the lab's tests (GPU tests skip without a GPU)
#   make bench       TFLOP/s, % of peak, % of cuBLAS of every ladder   (SIZES=1024,2048 LADDER=fp32)
#                    SHAPES=decode (or square, skinny, small-k, split-k, all, 16x4096x4096): the shape
#                    sweep, GB/s against the copy bandwidth where memory-bound; KERNEL=gemm: the dispatcher
#   make sass        opcode counts per kernel (FFMA, LDS, LDS.128, HMMA, LDSM, LDGSTS, ...)
#   make tune        other tile parameters of the tuning kernels; the best is recorded for bench (LADDER=fp32)
#   make bounds      KERNEL=name: the kernel beside builds without its copies, math or barrier (SIZE= BK=)
#   make diff        KERNEL=name: what the rung changes, against the rung before it in its ladder (SIDE=1:
#                    two aligned columns; CONTEXT=3 lines around each change; colored on a terminal)
#   make compare     KERNEL=name BUILDS='BK=16;BK=32,STAGES=4': a kernel beside other builds of itself,
#                    ROUNDS rounds per size (SIZES=4096,8192), each against cuBLAS in the same run
#   make accuracy    error vs K (256..65536) against float64: cuBLAS SGEMM, TF32, 3xTF32, the lab's ACCURACY_ROWS
#                    (QUICK=1: K <= 4096; KS=256,4096; SIZE=512), a table, a JSON record and a chart
#   make ncu-table   ncu on the lab's FP32 kernels and cuBLAS (above): shared loads per FFMA, wavefronts, stalls
#   make ncu-tensor  ncu on the tensor-core kernels and cuBLAS (above): Speed of Light, tensor pipes, memory
#   make ncu KERNEL=name   the full ncu report of one kernel (GUI), and its samples per SASS instruction
#   make sanitize    compute-sanitizer memcheck, racecheck, synccheck, initcheck on every kernel
#   make workspace   your exercises: the kernels with TODOs (WORKSPACE=path; FORCE=1 replaces)
#   make grade       grade the workspace, then the score report (PARTS=a,b of the parts above; NOGPU=1 JSON=file)
#   make grade-selftest  the grader graded: reference full marks, untouched zero, known-wrong kernels lose
#   make grade-class SUBMISSIONS=dir   a class: a folder or .tar.gz/.zip per student, each graded in its own
#                    worker (JOBS= TIMEOUT= FORCE=1 SEED= SEEDS=student PARTS= NOGPU=1 OUT=); class.html, .csv
#                    SLURM=1 a Slurm job array (PARTITION= ACCOUNT= TIME= EXTRA_SBATCH= WAIT=1), SLURM=print;
#                    MERGE=1 the class report again    make grade-class-demo DEST=dir: a class to try it on
# ARCH=sm_86 (or ARCH=all) picks the architecture to build; by default, this GPU's (every one without a GPU: sm_75 only for the rows that run there).
# KERNELS=a,b limits ncu-table, ncu-tensor and sanitize to some kernels; SIZE=4096 sets ncu-table's and
# ncu-tensor's M = N = K (default 2048); KERNELS=...,cublas-fp16_tensor adds cuBLAS of that precision.

COURSE_ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
LAB_DIR := $(CURDIR)
PYTHON ?= $(if $(wildcard $(COURSE_ROOT)/.venv/bin/python),$(COURSE_ROOT)/.venv/bin/python,python3)
# the one place that makes `common` importable for the targets (the venv has a .pth for the rest)
export PYTHONPATH := $(COURSE_ROOT)$(if $(PYTHONPATH),:$(PYTHONPATH))
COURSE := cd $(COURSE_ROOT) && $(PYTHON) -m common

ARCH_FLAG := $(if $(ARCH),--arch $(ARCH))
KERNELS_FLAG := $(if $(KERNELS),--kernels $(KERNELS))
WORKSPACE ?= $(LAB_DIR)/workspace
GRADE_FLAGS := --workspace $(abspath $(WORKSPACE)) $(if $(PARTS),--parts $(PARTS)) $(if $(NOGPU),--no-gpu) \
               $(if $(JSON),--json $(abspath $(JSON))) $(ARCH_FLAG) $(if $(SEED),--seed $(SEED))
# OUT only from the command line: a shell's own $OUT (some CI and cloud machines set one) is not the class's folder
CLASS_OUT := $(if $(filter command line,$(origin OUT)),$(OUT))
CLASS_FLAGS := $(if $(SUBMISSIONS),--submissions $(abspath $(SUBMISSIONS))) $(if $(CLASS_OUT),--out $(abspath $(CLASS_OUT))) \
               $(if $(JOBS),--jobs $(JOBS)) $(if $(TIMEOUT),--timeout $(TIMEOUT)) $(if $(FORCE),--force) \
               $(if $(SEED),--seed $(SEED)) $(if $(SEEDS),--seeds $(SEEDS)) $(if $(PARTS),--parts $(PARTS)) \
               $(if $(NOGPU),--no-gpu) $(ARCH_FLAG) $(if $(ISOLATE),--isolate $(ISOLATE)) $(if $(MERGE),--merge) \
               $(if $(SLURM),--slurm $(SLURM)) $(if $(PARTITION),--partition $(PARTITION)) \
               $(if $(ACCOUNT),--account $(ACCOUNT)) $(if $(TIME),--time $(TIME)) $(if $(CPUS),--cpus $(CPUS)) \
               $(if $(MAXTASKS),--max-tasks $(MAXTASKS)) $(if $(EXTRA_SBATCH),--extra-sbatch "$(EXTRA_SBATCH)") \
               $(if $(WAIT),--wait)

.PHONY: build test bench sass tune bounds compare diff accuracy selfcheck ncu-table ncu-tensor ncu sanitize workspace grade grade-selftest grade-class grade-class-demo clean help

build:
	@$(COURSE) build --lab $(LAB_DIR) $(ARCH_FLAG)

# make test: mk/tests.mk's two quiet pytest runs over this lab's tests/
include $(COURSE_ROOT)/mk/tests.mk

test: build
	@cd $(COURSE_ROOT) && $(call RUN_TESTS,$(LAB_DIR)/tests)

bench:
	@$(COURSE) bench --lab $(LAB_DIR) $(if $(SIZES),--sizes $(SIZES)) $(if $(LADDER),--ladder $(LADDER)) \
	  $(if $(SHAPES),--shapes $(SHAPES)) $(if $(KERNEL),--kernel $(KERNEL))

sass:
	@$(COURSE) sass --lab $(LAB_DIR) $(ARCH_FLAG)

tune:
	@$(COURSE) tune --lab $(LAB_DIR) $(if $(SIZE),--size $(SIZE)) $(if $(BUDGET),--budget $(BUDGET)) $(if $(LADDER),--ladder $(LADDER))

bounds:
	@$(COURSE) bounds --lab $(LAB_DIR) $(if $(KERNEL),--kernel $(KERNEL)) $(if $(SIZE),--size $(SIZE)) $(if $(BK),--bk $(BK))

compare:
	@$(COURSE) compare --lab $(LAB_DIR) $(if $(KERNEL),--kernel $(KERNEL)) $(if $(BUILDS),--builds '$(BUILDS)') \
	  $(if $(SIZES),--sizes $(SIZES)) $(if $(ROUNDS),--rounds $(ROUNDS))

diff:
	@$(COURSE) diff --lab $(LAB_DIR) $(if $(KERNEL),--kernel $(KERNEL)) $(if $(SIDE),--side-by-side) \
	  $(if $(CONTEXT),--context $(CONTEXT)) $(if $(COLOR),--color $(COLOR))

selfcheck:
	@$(COURSE) selfcheck --lab $(LAB_DIR)

accuracy:
	@$(COURSE) accuracy --lab $(LAB_DIR) $(if $(QUICK),--quick) $(if $(KS),--ks $(KS)) $(if $(SIZE),--size $(SIZE))

ncu-table ncu-tensor:
	@$(COURSE) $@ --lab $(LAB_DIR) $(KERNELS_FLAG) $(if $(SIZE),--size $(SIZE))

sanitize:
	@$(COURSE) $@ --lab $(LAB_DIR) $(KERNELS_FLAG)

ncu:
	@$(COURSE) ncu --lab $(LAB_DIR) $(if $(KERNEL),--kernel $(KERNEL)) $(if $(SIZE),--size $(SIZE))

workspace:
	@$(COURSE) workspace --lab $(LAB_DIR) --dest $(abspath $(WORKSPACE)) $(if $(FORCE),--force)

grade:
	@$(COURSE) grade --lab $(LAB_DIR) $(GRADE_FLAGS)

grade-selftest:
	@$(COURSE) grade-selftest --lab $(LAB_DIR) $(if $(NOGPU),--no-gpu) $(if $(JSON),--json $(abspath $(JSON)))

grade-class:
	@$(COURSE) grade-class --lab $(LAB_DIR) $(CLASS_FLAGS)

grade-class-demo:
	@$(COURSE) grade-class-demo --lab $(LAB_DIR) $(if $(DEST),--dest $(abspath $(DEST))) $(if $(FORCE),--force)

clean:
	rm -rf build reports

# the lab's own names first (its kernels, parts, ncu tables), then this file's opening comment, the same for every lab
help:
	@$(COURSE) help --lab $(LAB_DIR); awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' $(COURSE_ROOT)/mk/lab.mk
