"""c7 (c7_packed_a.cu) without a GPU: what its SASS must show, and which entry a shape gets. The GPU tests
(test_gpu.py) check its results against float64 with every other rung, and its launch plans."""
import pytest

from common import targets
from common.testing import lab_of, needs_cuobjdump

LAB = lab_of(__file__)


@pytest.fixture(scope="module")
def sass():
    needs_cuobjdump()
    return {c["kernel"]: c for c in targets.sass_counts(LAB, "sm_90", [LAB.kernel("c6"), LAB.kernel("c7")]).values()}


def _copies(ops):
    return {op: n for op, n in ops.items() if op.startswith("LDGSTS")}


def test_c7s_main_loop_copies_a_as_it_copies_b_16_bytes_past_l1(sass):
    """c6 transposes A on its way into shared memory by 4-byte cp.async (through L1); c7 reads A packed,
    so every copy of its tiles entry is a 16-byte cp.async.cg (LDGSTS.E.BYPASS...128)."""
    c6, c7 = _copies(sass["c6/tiles"]["opcodes"]), _copies(sass["c7/tiles"]["opcodes"])
    assert c7 and all(op.endswith(".128") and "BYPASS" in op for op in c7), c7
    assert any(not op.endswith(".128") for op in c6), c6               # the contrast c7 removes
    assert sum(c7.values()) < sum(c6.values())
    for entry in ("tiles", "workers", "vec", "scalar"):
        assert sass[f"c7/{entry}"]["LDL/STL"] == 0, entry
        assert sass[f"c7/{entry}"]["FFMA"] >= 64 * 32, entry


def test_the_pack_is_a_transpose_through_shared_memory(sass):
    ops = sass["c7/pack"]["opcodes"]
    for family in ("LDG.E", "STS", "BAR.SYNC", "LDS", "STG.E"):     # LDG.E.CONSTANT: A is const __restrict__
        assert any(op == family or op.startswith(family + ".") for op in ops), (family, ops)
    assert sass["c7/pack"]["FFMA"] == 0


@pytest.mark.parametrize("shape,variant", [((4096, 4096, 4096), "vec"), ((4096, 4096, 4099), "vec"),
                                           ((4098, 4096, 4096), "scalar"), ((4096, 4097, 4096), "scalar"),
                                           ((1, 1, 1), "scalar"), ((4, 8, 3), "vec")])
def test_c7s_16_byte_copies_need_m_and_n_multiples_of_4_not_k(shape, variant):
    # A packed is K x M: its rows are M long; B's rows N long. K only counts rows.
    assert LAB.kernel("c7").variant_for(*shape) == variant
    assert LAB.kernel("c6").variant_for(4096, 4096, 4099) == "scalar"  # c6 copies A's rows (K long)
