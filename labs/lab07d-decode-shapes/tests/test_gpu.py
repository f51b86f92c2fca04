"""Lab 7d on the GPU: every kernel against the float64 reference on the shapes decode and split-K make
awkward (M = 1, 2, 3, 15, 16, 17; odd N and K), split-K bitwise repeatable, the dispatcher correct on
every class of the sweep's shapes. Outputs are poisoned with NaN (an element never written fails)."""
from dataclasses import replace

import numpy as np
import pytest

from common import sweep
from common.testing import gpu_cases, lab_of, needs_gpu

LAB = lab_of(__file__)
DISPATCH = LAB.module("dispatch")
LAUNCH = LAB.module("launch")

MS = [1, 2, 3, 15, 16, 17]
# (N, K): aligned, odd N, odd K, both odd, a single column, N smaller than one GEMV block
NK = [(256, 512), (257, 512), (256, 513), (129, 1001), (1, 77), (24, 4096)]
SHAPES = [(M, N, K) for M in MS for N, K in NK] + [(1, 4096, 4096), (16, 8192, 1024), (33, 65, 9)]
CASES, IDS = gpu_cases(LAB.own(), SHAPES)


@needs_gpu
@pytest.mark.parametrize("name,variant,shape", CASES, ids=IDS)
def test_kernel_matches_float64_reference(name, variant, shape):
    verdict = LAB.check(name, *shape, variant=variant)
    assert verdict.ok, str(verdict)


# Any GEMV pass width is correct for any M (gemv.cu): every entry point on the awkward Ms, the
# scalar ones on odd N.
GEMV_CASES = [(name, v, (M, N, K)) for name in ("gemv_fp32", "gemv_fp16") for v in LAB.kernel(name).entries
              for M in (1, 3, 17) for N, K in ((264, 515), (129, 64))
              if v.endswith("_scalar") or N % 8 == 0]


@needs_gpu
@pytest.mark.parametrize("name,variant,shape", GEMV_CASES, ids=[f"{n}-{v}-{'x'.join(map(str, s))}" for n, v, s in GEMV_CASES])
def test_every_gemv_pass_width_is_correct_for_every_m(name, variant, shape):
    verdict = LAB.check(name, *shape, variant=variant)
    assert verdict.ok, str(verdict)


SPLITS = [1, 2, 3, 7, 64, 132, 1000]          # 1000 > K tiles: the last splits are empty and write zeros


@needs_gpu
@pytest.mark.parametrize("splits", SPLITS)
@pytest.mark.parametrize("name", ["splitk_fp32", "splitk_v8", "splitk_fp16", "skinny_fp16"])
@pytest.mark.parametrize("shape", [(17, 129, 4097), (128, 128, 8192), (1, 3, 1000)])
def test_split_k_is_correct_for_any_number_of_splits(name, shape, splits):
    k = LAUNCH.with_splits(LAB.kernel(name), splits)
    for v, s in k.cases([shape]):
        verdict = LAB.check(k, *s, variant=v)
        assert verdict.ok, str(verdict)


# Long K: check()'s worst-case bound grows like K, a split's worth of random products like sqrt(K); at
# 128 x 128 x 65536 a kernel that loses a split of 1024 products passes it. Small-integer inputs make every
# partial sum exact, so the result must be the float64 product bit for bit (common/precision.py, "Small
# integers"): one product lost or added twice is an error of at least 1.
LONG_K = [(128, 128, 65536), (130, 261, 8191), (256, 256, 32768)]


@needs_gpu
@pytest.mark.parametrize("splits", [1, 7, 64, 132])
@pytest.mark.parametrize("name", ["splitk_fp32", "splitk_v8", "splitk_fp16", "skinny_fp16"])
def test_split_k_adds_every_product_exactly_once_at_long_k(name, splits):
    k = LAUNCH.with_splits(LAB.kernel(name), splits)
    for v, s in k.cases(LONG_K[:2]):
        verdict = LAB.check_exact(k, *s, variant=v)
        assert verdict.ok, str(verdict)


@needs_gpu
@pytest.mark.parametrize("prec", ["fp32", "fp16_tensor"])
@pytest.mark.parametrize("shape", LONG_K, ids=["x".join(map(str, s)) for s in LONG_K])
def test_the_dispatchers_long_k_choice_adds_every_product_exactly_once(prec, shape):
    choice = DISPATCH.plan(prec, *shape)
    verdict = LAB.check_exact(choice.kernel, *shape, variant=choice.variant)
    assert verdict.ok, f"{choice}: {verdict}"


@needs_gpu
@pytest.mark.parametrize("splits", [1, 5, 132])
@pytest.mark.parametrize("name", ["splitk_fp32", "splitk_v8", "splitk_fp16", "skinny_fp16"])
def test_split_k_is_bitwise_repeatable_because_the_reduce_adds_in_split_order(name, splits):
    """No atomics: the same inputs give the same bits on every run. The second run reuses the first's
    workspace (launch.py keeps it per shape), so a split that failed to rewrite its partial would show."""
    k = LAUNCH.with_splits(LAB.kernel(name), splits)
    rng = np.random.default_rng(14)
    A, B = LAB.random_inputs(k, 128, 128, 65536, rng)
    first = LAB.matmul(k, A, B)
    second = LAB.matmul(k, A, B)
    assert np.array_equal(first.view(np.uint32), second.view(np.uint32))


# (row of lab.py, shape): the one-launch split-K rows at shapes whose grid fits in one wave; the vec
# entry where N and K are multiples of 4, the scalar entry everywhere.
ONE_LAUNCH = [(row, shape, v) for row, shape in [("SPLITK_V8_FEW_ROWS", (64, 4096, 4096)), ("SPLITK_V8_FEW_ROWS", (33, 1028, 2051)),
                                                 ("SPLITK_V8_FEW_ROWS_SMALL", (48, 2048, 2048)), ("SPLITK_V8", (17, 129, 4097)),
                                                 ("SPLITK_FP32", (128, 128, 65536)), ("SPLITK_FP32", (130, 261, 8191)),
                                                 ("SPLITK_FP16", (128, 128, 65536)), ("SPLITK_FP16", (130, 261, 8191)),
                                                 ("SPLITK_FP16", (64, 1536, 4096))]
              for v in ("vec", "scalar")
              if v == "scalar" or (shape[1] % (8 if "FP16" in row else 4) == 0 and shape[2] % (8 if "FP16" in row else 4) == 0)]


@needs_gpu
@pytest.mark.parametrize("row,shape,variant", ONE_LAUNCH, ids=[f"{r}-{'x'.join(map(str, s))}-{v}" for r, s, v in ONE_LAUNCH])
def test_one_launch_split_k_gives_the_two_launches_bits(row, shape, variant):
    """The one-launch form (main kernel, grid barrier, each block's slice of the reduce) adds the same
    partials in the same z order as the reduce kernel: C must be equal bit for bit, and right."""
    from dataclasses import replace
    fused = LAB.bind(getattr(LAB.table, row))
    M, N, K = shape
    two = replace(fused, name=fused.name + "[two launches]", launch_hook=replace(fused.launch_hook, fused=()))
    sms = LAUNCH._gpu_sms()
    splits = LAUNCH.splits_of(fused, M, N, K, sms)
    bm, bn = fused.tile
    assert LAUNCH.uses_fused(fused, (-(-N // bn), -(-M // bm), splits), sms), "this shape should take one launch"
    rng = np.random.default_rng(23)
    A, B = LAB.random_inputs(fused, M, N, K, rng)
    one, both = LAB.matmul(fused, A, B, variant=variant), LAB.matmul(two, A, B, variant=variant)
    assert np.array_equal(one.view(np.uint32), both.view(np.uint32))
    again = LAB.matmul(fused, A, B, variant=variant)            # the counters were left at zero
    assert np.array_equal(one.view(np.uint32), again.view(np.uint32))
    verdict = LAB.check(fused, M, N, K, variant=variant)
    assert verdict.ok, str(verdict)


@needs_gpu
@pytest.mark.parametrize("name", ["gemv_fp32", "gemv_fp16", "gemv_fp16_tc"])
def test_gemv_is_bitwise_repeatable(name):
    rng = np.random.default_rng(7)
    A, B = LAB.random_inputs(name, 16, 4096, 4096, rng)
    assert np.array_equal(LAB.matmul(name, A, B).view(np.uint32), LAB.matmul(name, A, B).view(np.uint32))


# One shape per class of the sweep, plus the awkward ones, in both precisions.
CLASS_SHAPES = [shapes[0] for shapes in sweep.shape_sets(LAB).values()] + \
               [(16, 8192, 8192), (64, 4096, 4096), (3, 4097, 515), (17, 129, 4097), (32, 4096, 4096),
                (63, 1000, 3000), (1, 8192, 8192)]


HOPPER_CASES = [  # (shape, the rule on Hopper): odd M, partial tiles in N and in K, K = 8 (one chunk of a
                 # 64-deep TMA box: the second block of a cluster gets no K at all), N not whole tiles
    ((33, 2048, 2048), "wgmma-split"), ((47, 2056, 1032), "wgmma-split"), ((64, 4096, 4096), "wgmma-split"),
    ((64, 2048, 8), "wgmma-split"), ((17, 1024, 136), "wgmma-split"), ((64, 4224, 72), "wgmma-split"),
    ((64, 8192, 8192), "wgmma"), ((49, 5000, 1000), "wgmma"),
    ((2048, 64, 1024), "narrow-wgmma"), ((2050, 24, 136), "narrow-wgmma"),
    ((2000, 2000, 1000), "tiles-wgmma"), ((2056, 1032, 520), "tiles-wgmma"),
    ((128, 128, 65536), "split-k-wgmma"), ((256, 256, 32768), "split-k-wgmma"), ((130, 264, 8192), "split-k-wgmma"),
    ((300, 520, 1000), "split-k-wgmma"), ((4096, 4096, 64), "small-k-wgmma"), ((1000, 1032, 264), "small-k-wgmma"),
    ((2050, 136, 8), "small-k-wgmma")]


@needs_gpu
@pytest.mark.parametrize("shape,rule", HOPPER_CASES, ids=["x".join(map(str, s)) for s, _ in HOPPER_CASES])
def test_the_hopper_rules_are_correct_where_they_fire(shape, rule):
    """On Hopper these FP16 shapes go to wgmma_decode (K split over a cluster, or not) and lab 7c's h4;
    elsewhere to skinny_fp16, split-K and t4. Correct against float64 either way."""
    verdict, choice = DISPATCH.check("fp16_tensor", *shape)
    assert verdict.ok, str(verdict)
    if LAB.gpu_arch() == "sm_90" and DISPATCH.missing_runtime(choice.kernel) is None:
        assert choice.rule == rule, str(choice)


@needs_gpu
@pytest.mark.parametrize("shape", [(64, 4096, 4096), (48, 2048, 520)], ids=["64x4096x4096", "48x2048x520"])
def test_wgmma_decode_is_bitwise_repeatable_because_the_owner_adds_in_rank_order(shape):
    """The partial rows arrive in any order; the owner adds them in rank order 0, 1: the same bits every run."""
    import pycuda.driver as cuda
    from common.precision import precision
    if LAB.gpu_arch() != "sm_90":
        pytest.skip("wgmma_decode runs on Hopper (sm_90a) only")
    k = LAB.bind(LAB.table.WGMMA_DECODE_SPLIT)
    if DISPATCH.missing_runtime(k):
        pytest.skip(f"wgmma_decode's tensor maps need {DISPATCH.missing_runtime(k)} (lab 7c's README)")
    M, N, K = shape
    LAB.build([k], ["sm_90"])
    A, B = precision("fp16_tensor").random_inputs(M, N, K, np.random.default_rng(7))
    a, b, c = cuda.to_device(A), cuda.to_device(B), cuda.mem_alloc(M * N * 4)
    run = LAB.launcher(k, M, N, K, "")
    outs = []
    for _ in range(3):
        cuda.memset_d32(c, 0x7FC00000, M * N)
        run(a, b, c)
        cuda.Context.synchronize()
        outs.append(cuda.from_device(c, (M, N), np.float32).view(np.uint32))
    assert all(np.array_equal(outs[0], o) for o in outs[1:])


@needs_gpu
@pytest.mark.parametrize("prec", ["fp32", "fp16_tensor"])
@pytest.mark.parametrize("shape", CLASS_SHAPES, ids=["x".join(map(str, s)) for s in CLASS_SHAPES])
def test_the_dispatcher_is_correct_on_every_class_of_shape(prec, shape):
    verdict, choice = DISPATCH.check(prec, *shape)
    assert verdict.ok, f"{verdict} ({choice})"


@needs_gpu
def test_gemm_returns_the_rule_that_fired():
    A = np.ones((1, 64), np.float32)
    B = np.ones((64, 128), np.float32)
    C, choice = DISPATCH.gemm(A, B)
    assert choice.rule == "gemv" and np.all(C == 64.0)


# skinny_fp16: every build the dispatcher uses (M <= 16, 32, 64) on the Ms that cut its tiles (M = 1,
# 2, 3, 15, 17, 33, 63, 64), aligned (vec) and odd (scalar) N and K, with its own split and forced
# ones (3; 40 > the K tiles at K = 4096: empty splits still draw their ticket).
SKINNY_ROWS = {k.tiling.params["MT"]: k for k in
               (LAB.bind(k) for _, _, _, ks in LAB.table.DISPATCH for k in ks.values() if not isinstance(k, str))
               if k.base_name == "skinny_fp16"}
SKINNY_CASES = [(mt, splits, v, (M, N, K)) for mt in sorted(SKINNY_ROWS) for M in (1, 2, 3, 15, 17, 33, 63, 64)
                for (N, K), v, splits_list in (((264, 4096), "vec", (0, 3, 40)), ((264, 4096), "scalar", (0,)),
                                               ((257, 513), "scalar", (0, 3)), ((8, 1000), "vec", (0, 3)),
                                               ((1, 7), "scalar", (0,)))
                for splits in splits_list]


@needs_gpu
@pytest.mark.parametrize("mt,splits,variant,shape", SKINNY_CASES,
                         ids=[f"MT{mt}-s{s}-{v}-{'x'.join(map(str, sh))}" for mt, s, v, sh in SKINNY_CASES])
def test_every_skinny_build_is_correct_on_awkward_shapes(mt, splits, variant, shape):
    k = SKINNY_ROWS[mt] if not splits else LAUNCH.with_splits(SKINNY_ROWS[mt], splits)
    verdict = LAB.check(k, *shape, variant=variant)
    assert verdict.ok, str(verdict)


@needs_gpu
@pytest.mark.parametrize("mt", [1, 2, 4])
def test_skinny_is_bitwise_repeatable_and_leaves_its_ticket_counters_at_zero(mt):
    """The last block of each tile adds the partials in split order, whichever block it is: two runs,
    the same bits. And it zeroes its tile's counter, so the workspace is ready for the next launch."""
    import pycuda.driver as cuda
    k = LAUNCH.with_splits(SKINNY_ROWS[mt], 6)
    rng = np.random.default_rng(3)
    M, N, K = 16 * mt - 1, 1000, 8192
    A, B = LAB.random_inputs(k, M, N, K, rng)
    first = LAB.matmul(k, A, B)
    second = LAB.matmul(k, A, B)
    assert np.array_equal(first.view(np.uint32), second.view(np.uint32))
    bm, bn = k.tile
    tiles = -(-M // bm) * -(-N // bn)
    ws = LAUNCH._workspaces[("ticket", tiles, 6, bm * bn)]
    counters = np.empty(tiles, np.uint32)
    cuda.memcpy_dtoh(counters, int(ws) + 4 * 6 * tiles * bm * bn)
    assert not counters.any(), counters


# --- wgmma_splitk (Hopper): split-K on TMA + wgmma --------------------------------------------------
def _wgmma_splitk_or_skip():
    k = LAB.bind(LAB.table.WGMMA_SPLITK)
    if LAB.gpu_arch() != "sm_90":
        pytest.skip("wgmma_splitk runs on Hopper (sm_90a) only")
    if DISPATCH.missing_runtime(k):
        pytest.skip(f"wgmma_splitk's tensor maps need {DISPATCH.missing_runtime(k)} (lab 7c's README)")
    return k


# ragged M and N (partial tiles, odd N: B through the padded copy, scalar float stores and the scalar
# fused reduce), K a multiple of 8 that is not a multiple of 64 (the last slice zero-filled by TMA), one
# row of A, K = 8 (one slice, most splits empty when forced), and the sweep's two shapes.
WGMMA_SPLITK_SHAPES = [(128, 128, 65536), (256, 256, 32768), (1, 4096, 4096), (1, 129, 520), (130, 261, 8192),
                       (257, 129, 1032), (300, 520, 1000), (65, 4096, 4096), (3, 7, 8), (128, 136, 33000)]


@needs_gpu
@pytest.mark.parametrize("splits", [0, 1, 3, 7, 132, 200])     # 0: the row's rule (one wave, the fused entry)
@pytest.mark.parametrize("shape", WGMMA_SPLITK_SHAPES, ids=["x".join(map(str, s)) for s in WGMMA_SPLITK_SHAPES])
def test_wgmma_splitk_matches_float64_for_any_split(shape, splits):
    """Against float64, with the outputs poisoned (LAB.check): its own split, and forced ones (200
    splits of a short K: empty splits write zero partials; grids past one wave take the two launches)."""
    k = _wgmma_splitk_or_skip()
    k = LAUNCH.with_splits(k, splits) if splits else k
    verdict = LAB.check(k, *shape)
    assert verdict.ok, str(verdict)


@needs_gpu
@pytest.mark.parametrize("splits", [0, 7, 200])
@pytest.mark.parametrize("shape", [(128, 128, 65536), (128, 136, 33000), (256, 256, 32768)],
                         ids=["128x128x65536", "128x136x33000", "256x256x32768"])
def test_wgmma_splitk_adds_every_product_exactly_once_at_long_k(shape, splits):
    """Small integers (LONG_K above): its own split, a few long splits, and many short ones."""
    k = _wgmma_splitk_or_skip()
    k = LAUNCH.with_splits(k, splits) if splits else k
    verdict = LAB.check_exact(k, *shape)
    assert verdict.ok, str(verdict)


@needs_gpu
@pytest.mark.parametrize("shape", [(128, 128, 65536), (256, 256, 32768), (130, 261, 8192)],
                         ids=["128x128x65536", "256x256x32768", "130x261x8192"])
def test_wgmma_splitk_is_bitwise_repeatable_and_its_one_launch_gives_the_two_launches_bits(shape):
    """The reduce adds the partials in split order, in the fused entry as in the reduce kernel: three
    runs of the one launch, and the two launches, give the same bits (and the counters were left at zero,
    or the second fused run would hang or trap)."""
    k = _wgmma_splitk_or_skip()
    M, N, K = shape
    sms = LAUNCH._gpu_sms()
    splits = LAUNCH.splits_of(k, M, N, K, sms)
    assert LAUNCH.uses_fused(k, LAUNCH.tma_splitk_grid(k, M, N, splits), sms), "this shape should take one launch"
    two = replace(k, name=k.name + "[two launches]", launch_hook=replace(k.launch_hook, fused=()))
    rng = np.random.default_rng(43)
    A, B = LAB.random_inputs(k, M, N, K, rng)
    runs = [LAB.matmul(k, A, B).view(np.uint32) for _ in range(3)]
    both = LAB.matmul(two, A, B).view(np.uint32)
    assert all(np.array_equal(runs[0], r) for r in runs[1:])
    assert np.array_equal(runs[0], both)
