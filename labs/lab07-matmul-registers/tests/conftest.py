import sys
from pathlib import Path

import pytest

LAB = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(LAB), str(LAB.parents[1])]

from common.device import gpu_status  # noqa: E402

GPU_OK, GPU_TEXT = gpu_status()
needs_gpu = pytest.mark.skipif(not GPU_OK, reason=f"needs a CUDA GPU: {GPU_TEXT}")


def pytest_report_header(config):
    return f"GPU: {GPU_TEXT}"
