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
