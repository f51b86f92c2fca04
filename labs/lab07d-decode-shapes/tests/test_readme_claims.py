"""The sentences of lab 7d's sheet that compare kernels, held against the sweep tables they sit under
(common.readme_tables.contradiction): a new sweep that reorders two kernels changes the table, and
this test names the sentence beside it that it makes untrue. "Best" allows one point of run-to-run
spread: the dispatcher's row and the kernel it picks are timed as two rows of the same sweep."""
from common.readme_tables import Claim
from common.testing import lab_of, sheet_claim_tests

LAB = lab_of(__file__)
NOISE = 1.0

FP16 = "sweep record=lab07d-sweep_*.json ladder=fp16 set=decode n=8192"
FP32 = "sweep record=lab07d-sweep_*.json ladder=fp32 set=decode n=8192"
M_1_TO_16 = ("1x8192x8192", "4x8192x8192", "16x8192x8192")
DECODE = M_1_TO_16 + ("64x8192x8192",)
DISPATCHER = "gemm"


def _square_tuned_far_behind(fig, at):
    tuned = [k for k in ("t4", "v8") if k in fig]
    return bool(tuned) and all(fig[k][s] < 50.0 for k in tuned for s in at)


def _best_kernel(fig, shape):
    return max((k for k in fig if k not in (DISPATCHER, "cuBLAS") and shape in fig[k]), key=lambda k: fig[k][shape])


def _fp32_gemv_wins_at_m_1_to_16(fig, at):
    return all(_best_kernel(fig, s) == "gemv_fp32" for s in at)


def _fp16_decode_kernel_wins_at_m_1_to_16(fig, at):
    return all(_best_kernel(fig, s) == "skinny_fp16" for s in at)


def _dispatcher_best_shape_by_shape(fig, at):
    return all(fig[DISPATCHER][s] >= fig[_best_kernel(fig, s)][s] - NOISE for s in at)


def _fp32_gemv_far_past_cublas_at_m_4(fig, at):
    return fig["gemv_fp32"]["4x8192x8192"] > 120.0


SQUARE = "a square-tuned kernel (t4, v8) is far behind at every decode shape"
BEST = "the dispatcher's row is the best of them, shape by shape"
CLAIMS = [
    Claim(SQUARE, FP16, DECODE, _square_tuned_far_behind),
    Claim(SQUARE, FP32, DECODE, _square_tuned_far_behind),
    Claim("the FFMA GEMV at M = 1 to 16 in FP32", FP32, M_1_TO_16, _fp32_gemv_wins_at_m_1_to_16),
    Claim("the decode kernel at M = 1 to 16 in FP16", FP16, M_1_TO_16, _fp16_decode_kernel_wins_at_m_1_to_16),
    Claim(BEST, FP16, DECODE, _dispatcher_best_shape_by_shape),
    Claim(BEST, FP32, DECODE, _dispatcher_best_shape_by_shape),
    Claim("Where a row shows far more than 100 % (the FP32 GEMV at M = 4)", FP32, ("4x8192x8192",),
          _fp32_gemv_far_past_cublas_at_m_4),
]
IDS = [f"{c.name}-{'fp16' if c.spec == FP16 else 'fp32'}" for c in CLAIMS]


def _fine():
    fp16 = {"gemv_fp16": (95, 83, 41, 11), "gemv_fp16_tc": (87, 86, 84, 23), "splitk_fp16": (60, 60, 60, 58),
            "skinny_fp16": (100, 100, 101, 47), "t4": (34, 34, 34, 34), DISPATCHER: (100.6, 100.9, 101.1, 101.3)}
    fp32 = {"gemv_fp32": (101, 143, 115, 39), "splitk_fp32": (17, 24, 29, 37), "v8": (6, 9, 11, 14),
            DISPATCHER: (101.5, 142.9, 115.2, 105.2)}
    return {FP16: {k: dict(zip(DECODE, v)) for k, v in fp16.items()},
            FP32: {k: dict(zip(DECODE, v)) for k, v in fp32.items()}}


BREAKS = {"square_tuned_far_behind-fp16": ("t4", 60.0), "square_tuned_far_behind-fp32": ("v8", 60.0),
          "fp32_gemv_wins_at_m_1_to_16-fp32": ("splitk_fp32", 150.0),
          "fp16_decode_kernel_wins_at_m_1_to_16-fp16": ("gemv_fp16_tc", 102.0),
          "dispatcher_best_shape_by_shape-fp16": (DISPATCHER, 90.0),
          "dispatcher_best_shape_by_shape-fp32": (DISPATCHER, 90.0),
          "fp32_gemv_far_past_cublas_at_m_4-fp32": ("gemv_fp32", 101.0)}

test_the_sheet_says_only_what_its_tables_show, test_a_record_that_contradicts_a_sentence_is_caught = \
    sheet_claim_tests(LAB, CLAIMS, _fine, BREAKS, IDS)
