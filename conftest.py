"""pytest's view of the course: one header line saying which GPU the GPU tests will use (or why they skip).
Test files import what they share from common.testing (pytest imports each file by its path)."""


def pytest_report_header(config):
    from common.testing import GPU_TEXT
    return f"GPU: {GPU_TEXT}"
