"""Lab 7b, CuTe SGEMM: an FP32 GEMM (C = alpha A B + beta C) on the CUDA cores written with NVIDIA
CUTLASS's CuTe (tiled copies, a tiled MMA, layouts and swizzles as algebra), after the worklog
"CuTe-ly writing an SM86 SGEMM". The lab's table: data, no code (common/lab.py says how every target
reads it).

Each rung's tile parameters live in its .cu file; the rows say what the source cannot: entry points,
the CuTe headers it needs (found at build time: common/headers.py), the worklog's claim.
"""
from dataclasses import replace

from common.headers import cutlass_include
from common.kernels import ALPHA_BETA, Kernel
from common.lab import load
from common.measure import Tuning

from .launch import PackA, StreamK
from .models import BANK_ACCESSES, BANK_MAIN_LOOPS  # noqa: F401  (the bank model's data)
from .tuning import candidates, reason_illegal

TITLE = "Lab 7b, CuTe SGEMM: the worklog's five steps, and past cuBLAS"
SHORT = "lab07b"
NEEDS = "CuTe's SM80 cp.async copy atoms; the lab is checked on sm_80 and newer only"   # why not sm_75


def _vec4(M, N, K):       # 128-bit copies: every row of A, B and C starts 16-byte aligned
    return "vec" if K % 4 == 0 and N % 4 == 0 else "scalar"


# CuTe's headers call constexpr host functions from device code: every CUTLASS build passes this flag.
CUTE_FLAGS = ("--expt-relaxed-constexpr",)


# The worklog's model of the operand reads: every value by its own 32-bit LDS, 8 of A and 8 of B per k for
# 64 FFMA; c5's permutation makes B two LDS.128 per k. `make sass` sets what nvcc compiled beside it.
# (c6 is past the worklog: its figure is tuned c5's loads, A and B two LDS.128 each per k.)
WORKLOG_LOADS = {"c1": 16 / 64, "c2": 16 / 64, "c3": 16 / 64, "c4": 16 / 64, "c5": (8 + 2) / 64, "c6": 4 / 64,
                 "c7": 4 / 64}


def _packed_vec4(M, N, K):   # c7 reads A packed as K x M: its rows (length M) and B's must start 16-byte aligned
    return "vec" if M % 4 == 0 and N % 4 == 0 else "scalar"


def _row(name, source, title, claim, args=ALPHA_BETA, choose=_vec4, **more):
    return Kernel(name, source, {"vec": f"cute_sgemm_{name}_vec", "scalar": f"cute_sgemm_{name}_scalar"}, "fp32",
                  choose=choose, args=args, nvcc_flags=CUTE_FLAGS, include_dirs=(cutlass_include,),
                  title=title, claim=claim, model={"smem_loads_per_ffma": WORKLOG_LOADS[name]}, **more)


CUTE = [
    _row("c1", "c1_tiled_copy_mma.cu", "tiled copy global -> registers -> shared, 16 x 16 UniversalFMA tiled MMA",
         "the worklog's skeleton: 128 x 128 x 32 tile, 8 x 8 outputs per thread"),
    _row("c2", "c2_cp_async.cu", "c1 + a 3-stage cp.async circular buffer (SM80_CP_ASYNC_CACHEGLOBAL)",
         "the next tiles are in flight while this one computes"),
    _row("c3", "c3_register_double_buffer.cu", "c2 + register double buffering of the k-blocks",
         "k-block k+1 is read from shared memory while k-block k computes"),
    _row("c4", "c4_swizzle.cu", "c3 + a CuTe Swizzle on the k-major tile (the worklog's B, our A)",
         "removes the 2-way bank conflict of the worklog's 32-bit operand reads"),
    _row("c5", "c5_wide_epilogue.cu", "c4 + a permuted MMA layout: 128-bit loads and stores of C",
         "each thread's outputs come in groups of 4 along n: STG.E.128 (the worklog's final kernel)"),
]
# Past the worklog: c5's tuned form with a stream-K tail (c6_stream_k.cu): the last, partial wave of
# tiles is shared evenly by every resident block. Its launch (grid, workspace) is launch.py's.
C6 = _row("c6", "c6_stream_k.cu", "c5 tuned + a stream-K tail: the last wave's tiles split evenly over the resident blocks",
          "no SM idles in the last wave: the 3 % that wave quantization costs c5 (and cuBLAS) at 4096^3",
          args=ALPHA_BETA + ("dp_tiles", "workers", "first_block", "workspace"), launch_hook=StreamK(),
          helpers={"tiles": "cute_sgemm_c6_tiles", "workers": "cute_sgemm_c6_workers"})
# c6 with A packed (transposed) first, so that A travels by 16-byte copies as B does (c7_packed_a.cu).
C7 = _row("c7", "c7_packed_a.cu", "c6 with A packed first: A transposed once, then copied like B (16 bytes, past L1)",
          "no 4-byte copies of A in the main loop: 5 % faster than c6's, for a pack of 1.4 % at 4096^3",
          args=C6.args, choose=_packed_vec4, launch_hook=PackA(),
          helpers={"tiles": "cute_sgemm_c7_tiles", "workers": "cute_sgemm_c7_workers", "pack": "cute_sgemm_c7_pack_a"})

# The FP32 rows of lab 7 in the same table: v7 (the chapter's warp tiling) and v8 (past the chapter).
# The v8 row is v8's defaults; lab 7's own `make bench` adds the build its `make tune` recorded for this GPU
# (results/lab07-tuned_<gpu>.json in lab 7), 1-3 points faster on the H200.
LAB7 = load("lab07-matmul-registers")
LADDERS = {"fp32": [LAB7.kernel("v7"), LAB7.kernel("v8")] + CUTE + [C6, C7]}
BENCH_SIZES = [2048, 4096, 8192]
SELFCHECK_SHAPES = [(1, 1, 1), (17, 33, 9), (127, 129, 132), (129, 127, 64), (1000, 3, 520), (256, 260, 64)]

# Without a GPU, `make` builds sm_90 only: CuTe takes ~33 s of nvcc CPU time per kernel and architecture.
# tests/test_build_and_sass.py adds c5 for sm_80; ARCH=all (LAB07B_ALL_ARCHS=1 for the tests) builds
# every rung for all five.
ARCHS_WITHOUT_GPU = ["sm_90"]

# make tune: c5's CTA tile, MMA thread layout, BK, STAGES and rasterization (tuning.py; legality is
# c5's static_asserts, asked of the compiler before anything is built).
# Timed at 2048^3 (the "medium" class) and 4096^3 ("large": 8192^3 gets 4096's best, and a third size
# would only cost time: a class timed twice keeps its first size's winner).
TUNING = {"fp32": Tuning("c5", candidates, illegal=reason_illegal, sizes=(2048, 4096))}

# make ncu-table: the bank check of the swizzle (c3 against c4) and the last rung, beside cuBLAS SGEMM.
NCU_TABLE = ["c3", "c4", "c5"]
# (2560, 2560, 32): 400 tiles, so that c6 runs whole tiles in its tiles launch and shares the rest (launch.py)
SANITIZE_SHAPES = [(130, 260, 104), (33, 65, 24), (257, 129, 40), (1, 1, 8), (17, 33, 9), (2560, 2560, 32)]
# make sanitize checks the rows and, once, the build `make tune` recorded as the H200's best for large
# squares (results/lab07b-tuned_nvidia-h200.json): its rasterization and A layout are code the rows skip.
SANITIZE_ALSO = [CUTE[-1].with_defines(A_MMAJOR=1, MIN_BLOCKS=2, GROUP=8)]

# make bench SHAPES=square,rect: the shape sweep (common/sweep.py), where c5 passes cuBLAS and where not.
SHAPE_SETS = {
    "square": [(n, n, n) for n in (1024, 2048, 3072, 4096, 6144, 8192)],
    "rect": [(8192, 2048, 4096), (2048, 8192, 4096), (4096, 4096, 1024), (4096, 4096, 16384), (16384, 1024, 2048)],
}
SHAPES_DEFAULT = "all"
# c5 with lab 7's v8 layout of A (A_MMAJOR = 1, the H200's best in `make tune`), timed in the sweep beside
# the worklog's c5, fixed here so that every sweep has it. (The recorded sweep of 2026-12-01 predates
# it: it timed c5[BN256_BK16], round 1's best tile.)
C5_AM = replace(CUTE[4], name="c5[A_MMAJOR1]", defines={"A_MMAJOR": 1}, tag="A_MMAJOR1")
SWEEP_EXTRA = {"square": {"fp32": [C5_AM]}, "rect": {"fp32": [C5_AM]}}
