"""k8 (3xTF32): what its header claims about the compiled code, on every architecture without a GPU, and
what FP32 claims about Inf and NaN on a GPU. (Its results on the odd shapes, with alpha and beta, are in
test_gpu.py: it is a row of the lab's table; its bound is common/precision.py's fp32_3xtf32.)"""
import numpy as np
import pytest

from common import targets
from common.build import ALL_ARCHS
from common.testing import lab_of, needs_cuobjdump, needs_gpu

LAB = lab_of(__file__)
K8 = LAB.kernel("k8")
P = K8.tiling.params
MI, NJ, STEPS = P["WM"] // 16, P["WN"] // 8, P["BK"] // 8


def test_k8_builds_for_every_architecture_without_spills():
    res = LAB.build([K8], ALL_ARCHS)
    assert {"sm_80", "sm_86", "sm_89", "sm_90", "sm_120"} <= {arch for _, arch in res}
    for (name, arch), entries in res.items():
        for entry, r in entries.items():
            assert r["spill_stores"] == r["spill_loads"] == r["stack"] == 0, f"{entry} on {arch}: {r}"


@pytest.fixture(scope="module", params=["sm_80", "sm_90"] if "sm_90" in ALL_ARCHS else ALL_ARCHS[:1])
def sass(request):
    needs_cuobjdump()
    counts = targets.sass_counts(LAB, request.param, [K8])
    return request.param, {c["kernel"]: c["opcodes"] for c in counts.values()}


@pytest.mark.parametrize("v", ["vec", "scalar"])
def test_three_tf32_mma_per_fragment_pair_and_k8_step(sass, v):
    """3 x (BK/8) x MI x NJ HMMA in the unrolled tile loop: small.big, big.small, big.big; no other kind."""
    arch, ops = sass
    o = ops[f"k8/{v}"]
    assert o.get("HMMA.1688.F32.TF32", 0) == 3 * STEPS * MI * NJ, o
    assert not any(op.startswith("HMMA") and op != "HMMA.1688.F32.TF32" for op in o), o


@pytest.mark.parametrize("v", ["vec", "scalar"])
def test_the_split_and_the_promotion_are_in_the_sass(sass, v):
    """Per split element (MI x 4 of A and NJ x 2 of B per k8 step): the clamp's two FMNMX and one FADD
    (x - big); plus the promotion's MI x NJ x 4 FADDs; no conversion instruction (the rounding is an
    integer add and a mask); no local memory."""
    arch, ops = sass
    o = ops[f"k8/{v}"]
    split = STEPS * (MI * 4 + NJ * 2)
    assert o.get("FMNMX", 0) == 2 * split, o
    assert o.get("FADD", 0) >= split + MI * NJ * 4, o
    assert not any(op.startswith("F2FP") for op in o), o
    assert not any(op.startswith(("LDL", "STL")) for op in o), o


def test_promotion_chains_end_at_tile_ends():
    assert P["KCHUNK"] % P["BK"] == 0 and P["KCHUNK"] >= P["BK"]


@needs_gpu
@pytest.mark.parametrize("shape", [(3, 5, 7), (129, 130, 132)], ids=lambda s: "x".join(map(str, s)))
def test_inf_and_nan_propagate_as_in_fp32(shape):
    """Inf times a TF32 number (small part 0, e.g. 1.0) must stay Inf, not become Inf x 0 = NaN."""
    M, N, K = shape
    rng = np.random.default_rng(3)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    B = np.abs(rng.uniform(0.5, 1, (K, N))).astype(np.float32)
    B[0, :] = 1.0                                       # exact TF32: its small part is 0
    A[0, 0], A[1, 0], A[2, K // 2] = np.inf, -np.inf, np.nan
    with np.errstate(invalid="ignore", over="ignore"):
        want = A.astype(np.float64) @ B.astype(np.float64)
    got = LAB.matmul("k8", A, B).astype(np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.isposinf(got), np.isposinf(want)) and np.array_equal(np.isneginf(got), np.isneginf(want))
    assert np.isposinf(got[0]).all() and np.isneginf(got[1]).all() and np.isnan(got[2]).all()
