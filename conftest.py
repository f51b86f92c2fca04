"""pytest's view of the course: one header line saying which GPU the GPU tests will use (or why they skip),
and a test that meets a kernel this GPU cannot run (common.errors.NotOnThisGPU: an sm_80 kernel on a T4)
reported as skipped with the row's reason, not as failed.
Test files import what they share from common.testing (pytest imports each file by its path)."""
import pytest


def pytest_report_header(config):
    from common.testing import GPU_TEXT
    return f"GPU: {GPU_TEXT}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and report.failed:
        from common.errors import NotOnThisGPU
        if call.excinfo.errisinstance(NotOnThisGPU):
            report.outcome = "skipped"
            report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {call.excinfo.value.message}")


@pytest.fixture(autouse=True)
def _no_simulated_gpu_left_behind(request):
    """A test that loads the grader's simulated PyCUDA (common/grading/simgpu) must unload it: left in
    sys.modules it makes every later test in the same worker find a "GPU" (lab 7's no-GPU test failed
    that way on 2026-12-05, depending on which tests shared its worker). This fails the test that left
    it, and unloads it so the tests after are not misled. tests/test_clocks.py's simulated_pycuda
    fixture loads and unloads it."""
    yield
    import sys
    where = str(getattr(sys.modules.get("pycuda"), "__file__", "") or "")
    if "simgpu" in where:
        for name in [m for m in sys.modules if m == "pycuda" or m.startswith("pycuda.")]:
            del sys.modules[name]
        pytest.fail(f"this test left the simulated PyCUDA ({where}) in sys.modules: later tests in this "
                    "process would find a GPU; load it with tests/test_clocks.py's simulated_pycuda fixture",
                    pytrace=False)
