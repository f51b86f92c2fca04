"""Lab 7b's "check your understanding" questions, and one computed prediction. Data for common/grading
(common.grading.questions.Question, Prediction).

Every expected value is computed, never typed: the bank model (common/banks.py) on offsets written
from the tile's definition (sA(m, k) = BK m + k, Swizzle<B, M, S> as CuTe defines it), the layout
algebra written out (CuTe's colexicographic index), the kernel's parameters read from its file
(common.tiling), and models.BANK_MAIN_LOOPS for the prediction. The questions use thread layouts and
layouts other than the kernels' own, so that no answer is a line of the lab to look up; none of them
gives away a part's code (the swizzle of BK = 32 and 64 with 16 x 16 threads, or PermN).
This module imports nothing of grading/parts.py.
"""
from pathlib import Path

from common.banks import analyze
from common.grading.questions import Prediction, Question

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
ANSWERS_INTRO = ("The course's models answer every question: common/banks.py (the bank model) on the offsets "
                 "of the k-major A tile, CuTe's layout algebra (a Layout maps a colexicographic index to an "
                 "offset), and the kernels' own headers. Work each one out on paper or in Python; the "
                 "notebook's bank explorer draws a warp's access.")


def _swizzle(o, B, M, S):
    """CuTe's Swizzle<B, M, S> on an offset: bits M+S .. M+S+B-1 XORed into bits M .. M+B-1."""
    mask = ((1 << B) - 1) << (M + S)
    return o ^ ((o & mask) >> S)


def _a_read(thr_n, bk, width, swz=(0, 2, 3)):
    """A warp's read of the k-major sA (BK floats per row) at k = 0 when the MMA's threads are THR_M x thr_n
    (n fastest: lane l reads row l / thr_n): the bank model's Access for `width`-byte reads."""
    return analyze([4 * _swizzle(bk * (l // thr_n), *swz) for l in range(32)], width=width)


def _smallest_b(thr_n, bk):
    """The smallest B for which Swizzle<B, 2, log2(BK) - 2> makes the 32-bit reads conflict-free."""
    s = bk.bit_length() - 1 - 2
    return next(b for b in range(1, 6) if _a_read(thr_n, bk, 4, (b, 2, s)).ways == 1)


def _layout_index_of(shape, stride, offset):
    """The index x (colexicographic: the first mode fastest) that Layout shape : stride maps to `offset`."""
    size = 1
    for s in shape:
        size *= s
    for x in range(size):
        rest, o = x, 0
        for s, d in zip(shape, stride):
            o += (rest % s) * d
            rest //= s
        if o == offset:
            return x
    raise ValueError("no index maps there")


def _wait_count(stages, iterations=8):
    """The n of cp_async_wait<n> at the rotation of iteration t: the prologue commits stages - 1 groups
    (tiles 0 .. stages-2), each iteration one more (t + stages - 1); tile t+1 must be done, i.e. groups
    0 .. t+1, so at most committed - (t + 2) may pend. The same n for every t (checked)."""
    counts = {stages - 1 + (t + 1) - (t + 2) for t in range(iterations)}
    assert len(counts) == 1
    return counts.pop()


def _c5_wavefronts_per_ffma():
    """c5's main loop in the bank model, per warp and k-tile: shared-load wavefronts over FFMA instructions."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("lab07b_models", KERNELS.parent / "models.py")
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    wavefronts = sum(n * models.BANK_ACCESSES[name].evaluate().wavefronts
                     for name, n, kind in models.BANK_MAIN_LOOPS["c5"] if kind == "ld")
    ffma_per_warp = models.BK * (models.BM // models.THR_M) * (models.BN // models.THR_N)
    return wavefronts / ffma_per_warp


QUESTIONS = [
    Question("plain_read_ways_32x8",
             "Take c3's plain k-major A tile (BK = 32 floats per row) and a 32 x 8 MMA thread layout "
             "(THR_M = 32, THR_N = 8: lane l reads row l / 8, so a warp reads rows m .. m+3 at one k). One "
             "such warp read of 32 bits per lane: the n-way conflict (1 = none)?",
             lambda: _a_read(8, 32, 4).ways, "banks.analyze on 4 * (32 (l / 8)), width 4",
             hint="the bank of each word the warp needs, and how many of those are not the same",
             why=(("128 bytes", 128, "row length", "rows apart"), ("distinct", "different words", "broadcast")),
             why_model="Each row is 128 bytes long, so the four rows put column k in the same bank; the lanes of "
                       "one row share a word (a broadcast), so the four distinct words cost four passes."),
    Question("swizzle_b_for_32x8",
             "With that 32 x 8 layout and BK = 32, the smallest B for which Swizzle<B, 2, 3> makes that read "
             "conflict-free?",
             lambda: _smallest_b(8, 32), "search over B with banks.analyze",
             hint="how many rows a warp reads at one k, and how many offset bits tell them apart",
             why=(("four rows", "4 rows", "rows m", "m and m"), ("bits 5", "bit 5", "two bits", "2 bits", "lowest bits")),
             why_model="The warp reads four rows m .. m+3, told apart by offset bits 5 and 6 (two bits of m), and "
                       "each must move the row's words to its own banks."),
    Question("lds128_wavefronts_32x8",
             "nvcc merges a thread's 4 consecutive k of sA into one 128-bit load (LDS.128). With the 32 x 8 "
             "layout and the plain tile, how many wavefronts does one such warp load cost (its ideal is 4)?",
             lambda: _a_read(8, 32, 16).wavefronts, "banks.analyze(width=16): quarter warps, pairs merged",
             hint="common/banks.py's rules for 16-byte accesses, applied to the 32 lanes' addresses",
             why=(("quarter", "phase", "8 lanes", "eight lanes"), ("pair", "same address", "broadcast", "combine")),
             why_model="A 16-byte load is served in quarter warps of 8 lanes; lanes in pairs read the same address, "
                       "so the two quarters of a half warp combine, and rows m and m+1 then need the same banks."),
    Question("own_copies_only",
             "After cp_async_wait<n>() returns, may a thread read an element of the next tile that another "
             "thread copied (yes / no)?",
             lambda: "no", "cp.async completion is per thread: the wait covers the thread's own commit groups",
             kind="words", accept=("not yet", "no, not yet"),
             why=(("own", "its copies", "this thread's"), ("barrier", "syncthreads", "__syncthreads", "bar.sync")),
             why_model="The wait covers only the thread's own copies; the others' have landed only when every "
                       "thread has waited and then met at the barrier (__syncthreads)."),
    Question("layout_index_of_offset",
             "CuTe: the Layout (4, 8) : (8, 1) maps an index x (colexicographic, the first mode fastest) to an "
             "offset. Which x maps to offset 13?",
             lambda: _layout_index_of((4, 8), (8, 1), 13), "the layout written out: x = i + 4 j -> 8 i + j",
             hint="write x as (i, j) with i = x % 4, j = x / 4, then the offset as the dot product with the stride"),
    Question("wait_count_stages4",
             "c4's pipeline with STAGES = 4 (one commit group per tile, the prologue commits STAGES - 1, every "
             "iteration one more): the n of cp_async_wait<n>() that means 'tile t+1 has landed'",
             lambda: _wait_count(4), "_wait_count(4): the groups committed at the wait, less those that must be done",
             hint="count the groups committed by the time of the wait, and which of them must be complete"),
]

# Computed prediction. A guess that skips the bank model fails the 15 % tolerance: counting load
# instructions instead of wavefronts gives a third of the answer, and pricing every LDS.128 at its
# 4 unmerged phases gives 4/3 of it (33 % off); the right derivation is exact in the model, so 15 %
# leaves room only for rounding.
PREDICTIONS = [
    Prediction("c5_load_wavefronts_per_ffma",
               "c5 as nvcc compiles it (default tile): shared-memory load wavefronts per FFMA instruction of the main "
               "loop, per warp and k-tile, in the course's bank model",
               expected=_c5_wavefronts_per_ffma, rel_tol=0.15, unit="wavefronts/FFMA",
               hint="the loads a warp issues per k-tile (c5's header: per k, 2 LDS.128 of A and 2 of B), what each "
                    "costs in the bank model (16-byte accesses: phases and merges), and the FFMA per k-tile"),
]

QUESTION_IDS = [q.id for q in QUESTIONS]
