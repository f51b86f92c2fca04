# make test's pytest, for the course's Makefile and each lab's (mk/lab.mk): $(call RUN_TESTS,paths)
#
# pytest on every core (pytest-xdist, in .venv): most of the time goes to nvcc, one process each; a test
# file stays on one worker, so its fixtures are built once. JOBS=1 runs everything in one process.
# Quiet by default (common/pytest_summary.py): a line per lab, pytest's summary, a failure in full;
# V=1: pytest's progress and every skip with its reason.
#
# Two runs: every test but those marked gpu_timed, then those (the graders' self-tests time the
# student's kernel against the reference in one run): alone on the GPU, with GRADE_GPU_LOCK
# (common/grading/gpu.py, turn) so that the labs' self-tests compile side by side and take the GPU one
# at a time. On the H200, 16 workers sharing the GPU timed lab 7a's reference at 125 % of itself.
# Exit status 5 of the second run is "no test selected" (a lab without graded exercises): no failure.
TEST_JOBS = $(if $(filter 1,$(JOBS)),,$(shell $(PYTHON) -c 'import xdist' 2>/dev/null && echo '-n $(or $(JOBS),auto) --dist loadfile'))
QUIET_PYTEST := -q -rfE -o console_output_style=classic -p common.pytest_summary
PYTEST = $(PYTHON) -m pytest $(TEST_JOBS) $(if $(V),,$(QUIET_PYTEST))
RUN_TESTS = lock=$$(mktemp); s=0; \
	$(PYTEST) -m 'not gpu_timed' $(1) || s=$$?; \
	echo "== the tests that time kernels on the GPU (the graders' self-tests), one lab's GPU phase at a time"; \
	GRADE_GPU_LOCK=$$lock $(PYTEST) -m gpu_timed $(1) || [ $$? -eq 5 ] || s=1; \
	rm -f $$lock; exit $$s
