"""make tune's legality is v8's and t4's own static_asserts, asked of the compiler (common/legality.py),
never a copy of the rules in Python: the same verdicts as the Python copies it replaced (recorded from
them in fixtures/legality_*.json before they were deleted), the same candidate lists, and a refused
candidate is told the kernel's own sentence. Needs nvcc, no GPU."""
import json
import re
import shutil
from pathlib import Path

import pytest

from common.testing import lab_of, legality_drift

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
LAB = lab_of(__file__)
FIXTURES = Path(__file__).parent / "fixtures"
TUNING = LAB.option("TUNING")


@pytest.mark.parametrize("ladder,kernel", [("fp32", "v8"), ("fp16", "t4")])
def test_the_compiler_judges_as_the_python_rules_did(ladder, kernel):
    record = FIXTURES / f"legality_{kernel}.json"
    assert legality_drift(TUNING[ladder].illegal, record) == []
    assert TUNING[ladder].configs() == json.loads(record.read_text())["candidates"]


@pytest.mark.parametrize("ladder,params,words", [
    ("fp32", dict(BK=12), "BK must be a multiple of 8"),
    ("fp32", dict(STAGES=9), "STAGES must be 2..8"),
    ("fp32", dict(MAXREG=100), "MAXREG is 0 (no cap) or a register cap of 128..255"),
    ("fp16", dict(BK=48), "BK must be 32"),
    ("fp16", dict(COPY_WARPS=9), "COPY_WARPS must be between 1 and the number of warps"),
])
def test_an_illegal_candidate_is_refused_with_the_kernels_sentence(ladder, params, words):
    spec = TUNING[ladder]
    why = spec.illegal(params)
    assert why and words in why
    source = spec.illegal.path.read_text()
    sentences = ["".join(re.findall(r'"([^"]*)"', m)) for m in re.findall(r'static_assert\((?:[^"]|"[^"]*")*?\);', source, re.S)]
    assert why in sentences, f"{why!r} is not one of {spec.kernel}'s static_assert sentences"


def test_a_switch_taken_out_of_the_kernel_is_refused_by_name():
    why = TUNING["fp32"].illegal(dict(SWIZZLE=0))
    assert why.startswith("v8_pipelined.cuh has no parameter SWIZZLE")


def test_no_python_restates_a_rule():
    for name in ("space_v8.py", "space_t4.py"):
        text = (LAB.dir / name).read_text()
        assert "Legality(" in text and "def reason_illegal" not in text, name
