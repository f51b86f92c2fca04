"""What lab 7b claims about the compiled code, checked without a GPU: no spills, and each rung's one
idea visible in SASS (static counts: an instruction in a loop counts once).

Compile time is the constraint here: CuTe costs about 33 s of nvcc CPU time per kernel and architecture
(both entry points; cicc, CuTe's templates, is nearly all of it). `make` (no GPU, no ARCH) builds every
rung for sm_90 (lab.py's ARCHS_WITHOUT_GPU), the SASS tests read those cubins, and c5 is compiled for
sm_80 too, the oldest architecture the course supports. LAB07B_ALL_ARCHS=1 compiles every rung for all
five (sm_80, sm_86, sm_89, sm_90, sm_120: about 20 more CuTe compiles, 5 to 6 minutes on two cores)."""
import os

import pytest

from common import targets
from common.testing import build_for_every_arch, lab_of, needs_cuobjdump

LAB = lab_of(__file__)
RUNGS = [f"c{i}" for i in range(1, 6)]
SASS_ARCH = "sm_90"


def _no_spills(res):
    for (name, arch), entries in res.items():
        helpers = set(LAB.kernel(name).helpers.values())     # c6's and c7's other entry points (launch.py)
        assert set(entries) == {f"cute_sgemm_{name}_vec", f"cute_sgemm_{name}_scalar"} | helpers, (name, arch, set(entries))
        for entry, r in entries.items():
            assert r["spill_stores"] == r["spill_loads"] == r["stack"] == 0, f"{entry} on {arch}: {r}"


def test_every_rung_builds_for_sm90_without_spills():
    _no_spills(LAB.build(LAB.own(), [SASS_ARCH]))


def test_c5_builds_for_sm80_without_spills():
    _no_spills(LAB.build([LAB.kernel("c5")], ["sm_80"]))


@pytest.mark.skipif(not os.environ.get("LAB07B_ALL_ARCHS"), reason="LAB07B_ALL_ARCHS=1 compiles every rung for all "
                    "five architectures (about 20 CuTe compiles more, 5-6 minutes on two cores)")
def test_every_rung_builds_for_every_architecture_without_spills():
    _no_spills(build_for_every_arch(LAB))


@pytest.fixture(scope="module")
def sass():
    needs_cuobjdump()
    return {c["kernel"]: c for c in targets.sass_counts(LAB, SASS_ARCH, LAB.own()).values()}


def ops(sass, name, v):
    return sass[f"{name}/{v}"]["opcodes"]


@pytest.mark.parametrize("v", ["vec", "scalar"])
def test_every_rung_multiplies_with_ffma_and_never_touches_local_memory(sass, v):
    for name in RUNGS:
        assert sass[f"{name}/{v}"]["FFMA"] >= 64 * 32, name          # one k-tile of 8 x 8 outputs, unrolled
        assert sass[f"{name}/{v}"]["LDL/STL"] == 0, name
        assert sass[f"{name}/{v}"]["HMMA"] == 0, name


def test_c1_copies_through_registers_with_128_bit_loads_and_stores(sass):
    assert sass["c1/vec"]["LDG.128"] > 0 and sass["c1/vec"]["STS.128"] > 0
    assert sass["c1/vec"]["LDGSTS"] == 0 and sass["c1/scalar"]["LDGSTS"] == 0


@pytest.mark.parametrize("name", RUNGS[1:])
def test_cp_async_from_c2_on_16_byte_in_vec_4_byte_in_scalar(sass, name):
    vec, scalar = ops(sass, name, "vec"), ops(sass, name, "scalar")
    assert any(op.startswith("LDGSTS") and op.endswith(".128") and "BYPASS" in op for op in vec), vec
    assert any(op.startswith("LDGSTS") and not op.endswith(".128") for op in scalar), scalar
    for v in ("vec", "scalar"):
        assert sass[f"{name}/{v}"]["DEPBAR"] > 0 and ops(sass, name, v).get("LDGDEPBAR", 0) > 0
        assert sass[f"{name}/{v}"]["STS"] == sass[f"{name}/{v}"]["STS.128"] == 0


def test_the_a_operand_is_read_with_lds128_along_k_and_b_with_scalar_lds_until_c5(sass):
    for name in RUNGS[:4]:
        c = sass[f"{name}/vec"]
        assert c["LDS.128"] >= 2 * 32, name          # A: 8 rows x 32 k / 4 per LDS.128 per tile
        assert c["LDS"] >= 8 * 32, name              # B: 8 scalar LDS per k
    c5 = sass["c5/vec"]
    assert c5["LDS.128"] >= 4 * 32 and c5["LDS"] < 32, c5   # B two float4 per k: no scalar reads left (but k = 0)


def test_c5_moves_c_with_128_bit_loads_and_stores_and_the_others_do_not(sass):
    assert ops(sass, "c5", "vec").get("STG.E.128", 0) > 0 and sass["c5/vec"]["LDG.128"] > 0
    for name in RUNGS[:4]:
        assert ops(sass, name, "vec").get("STG.E.128", 0) == 0, name


def test_one_barrier_per_tile_from_c2_on(sass):
    """c1 waits twice per tile (after the copy, before the next); c2..c5 once (one BAR.SYNC in the loop,
    one after the prologue)."""
    for name in RUNGS[1:]:
        assert sass[f"{name}/vec"]["BAR"] == 2, (name, sass[f"{name}/vec"]["BAR"])
