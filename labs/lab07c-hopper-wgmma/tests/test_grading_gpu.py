"""This lab's grader on a real GPU: reference full marks, untouched zero, each known-wrong kernel
loses what it must (common/grading/gpu_suite.py says exactly what is asserted; skipped without a GPU,
and on a GPU that is not Hopper: the graded kernels are sm_90a only)."""
from common.grading.gpu_suite import *   # noqa: F401,F403  the tests; they bind to this file's lab
