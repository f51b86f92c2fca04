"""Lab 7c's "check your understanding" questions, and two computed predictions. Data for common/grading
(common.grading.questions.Question, Prediction).

Every expected value is computed, never typed: from the grader's own models in grading/probes.py (the
mbarrier wait rule, the pipeline's parities, the bytes a stage's boxes write, the descriptor fields
the lab's layouts need) and the kernels' parameters read from their files (the lab's table). None of
them is a line of a graded part: the tiles, stages and tiles t asked about are not the workspace's.
"""
from common.grading.questions import Prediction, Question
from common.lab import load

from . import probes

LAB = load("lab07c-hopper-wgmma")
ANSWERS_INTRO = ("Work each answer out from the kernels' headers, hopper_ptx.cuh and the PTX ISA (mbarrier, "
                 "cp.async.bulk.tensor, wgmma's matrix descriptor, setmaxnreg); nothing here needs a GPU.")

REGISTERS_PER_SM = 64 * 1024        # the H100 / H200 register file: 64 K 32-bit registers per SM
SETMAXNREG_STEP = 8                 # setmaxnreg takes a multiple of 8 (PTX ISA)


def _producer_regs_at(consumer_regs, consumers=2, threads_per_group=128):
    """The most registers a thread the producer warpgroup may keep when each consumer warpgroup's threads
    rise to `consumer_regs`: what is left of the SM's file, a multiple of 8."""
    left = REGISTERS_PER_SM - consumers * threads_per_group * consumer_regs
    return left // threads_per_group // SETMAXNREG_STEP * SETMAXNREG_STEP


def _tile(name):
    k = LAB.kernel(name)
    bm, bn = k.tile
    return bm, bn, k.tiling.value("BK")


def _h5_tx(bn=128):
    """h5 built with BN = 128: each block of a 2-block cluster issues its own A box and half the B panels,
    multicast to both: every block's stage still receives its A box and every B panel. (Asked at BN = 128:
    h5's header states the stage's bytes at its own BN = 256.)"""
    bm, _, bk = _tile("h5")
    return probes.tx_bytes(bm, bn, bk)


def _h4_tma_loads(k=4096):
    """The TMA loads (one cp.async.bulk.tensor each) behind one h4 output tile at depth K: per k-tile one A
    box and BN / 64 B panels."""
    bm, bn, bk = _tile("h4")
    return -(-k // bk) * (1 + bn // 64)


QUESTIONS = [
    Question("fresh_wait_parity1",
             "An mbarrier has just been initialized and nothing has arrived on it. A thread calls "
             "mbarrier.try_wait.parity on it with parity 1: does the wait return at once (yes / no)?",
             lambda: "yes" if probes._passes(0, 1) else "no",
             "probes._passes(0, 1): the wait passes once the barrier's current phase has the other parity",
             kind="words", hint="which phase the barrier is in, and which phase parity 1 then names",
             why=((0, "zero", "even"), ("previous", "preceding", "before", "behind", "counts as complete",
                                         "already complete", "already over")),
             why_model="The barrier is in its phase 0, so parity 1 names the phase before it, which counts as "
                       "complete: the wait returns at once, which is what the producer's first EMPTY wait relies on."),
    Question("tx_edge_tile",
             "An h2 block at the bottom-right corner of C: its A box reaches 40 rows past M and its last B panel "
             "24 columns past N. Must that stage announce fewer transaction bytes than an interior stage "
             "(yes / no)?",
             lambda: "no", "probes.tx_bytes(bm, bn, bk) has no M or N: TMA writes whole boxes, zeros past the edge",
             kind="words", hint="what TMA puts into the shared-memory box where the matrix has ended",
             why=(("zero", "zeros", "zero-fill", "zero-filled", "out-of-bounds fill"),
                  ("whole", "entire", "full", "every byte", "all of")),
             why_model="TMA fills the out-of-bounds part of each box with zeros and writes the whole box, so the "
                       "barrier receives the full byte count, edge or not."),
    Question("lbo_k_major",
             "h1's A operand is K-major in the 128-byte swizzle. Would a different leading byte offset in its "
             "descriptor change what the wgmma computes (yes / no)?",
             lambda: "no" if "lbo" not in probes.expected_fields(0x400) else "yes",
             "probes.expected_fields: a K-major swizzled operand's LBO is not read",
             kind="words", hint="how many bytes of K one instruction reads, and how the swizzled tile is laid out in bytes",
             why=((32, "16 halves", "one instruction's k", "instruction's k"), ("row", "rows")),
             why_model="One instruction reads 32 bytes of K per row (16 halves), inside one 128-byte swizzled row, "
                       "so there is no second K group for the leading offset to step to."),
    Question("empty_parity_t22",
             "h3's pipeline with STAGES = 4: the parity the producer's EMPTY wait names before it fills stage "
             "22 % 4 for tile t = 22",
             lambda: probes.empty_parity(22, 4),
             "probes.empty_parity(22, 4): fill j = t / STAGES needs release j - 1",
             hint="which fill of its stage tile 22 is, and what the consumers must have done to that stage before it",
             why=((5, "fifth", "sixth"), ("release", "released", "releases", "freed")),
             why_model="Tile 22 is fill 5 of stage 2 (22 / 4 = 5), so it must wait until the stage has been "
                       "released for the fifth time, release 4, whose phase has parity 0."),
    Question("producer_regs_at_240",
             "h3 raises each of its two consumer warpgroups to 240 registers a thread instead of 232 (one block "
             "an SM). The most registers a thread of the producer warpgroup may then keep (setmaxnreg.dec's value)?",
             lambda: _producer_regs_at(240),
             "_producer_regs_at(240): the SM's 64 K registers less 256 x 240, over 128 threads, a multiple of 8",
             hint="the SM's register file, what the consumer warpgroups take, and setmaxnreg's granularity",
             why=((65536, "64 K", "64K", "64k"), (61440, "256 x 240", "256 * 240", "256 threads")),
             why_model="An SM has 65536 registers; the consumers' 256 threads at 240 take 61440, leaving 4096 for "
                       "the producer's 128 threads: 32 each, a multiple of 8."),
]

# Computed predictions, graded exactly: both are integers the hardware (or the code) counts one by one. A
# byte count off by one never completes its phase, and a load count off by one box is a different
# kernel; the near misses (a block counting only the B panels it issues itself, 2/3 of the answer; B
# counted as one box, 2/5 of it) are 33 % and more away, so no tolerance would help a guess.
PREDICTIONS = [
    Prediction("h5_tx_bytes",
               "h5 built with BN = 128 (clusters of 2 blocks, the rest of its tile as in its header): each block's "
               "producer issues its own A box and half of the B panels, multicast to both blocks. The bytes each "
               "block's FULL barrier must expect for one stage",
               expected=_h5_tx, rel_tol=0.0, unit="bytes",
               hint="where each multicast box lands, and whose barrier counts its bytes"),
    Prediction("h4_tma_loads",
               "h4 at K = 4096: the TMA load instructions (cp.async.bulk.tensor, one box each) behind ONE of its "
               "output tiles",
               expected=_h4_tma_loads, rel_tol=0.0, unit="loads",
               hint="the k-tiles of one output tile, and the boxes one k-tile's stage is filled with"),
]

QUESTION_IDS = [q.id for q in QUESTIONS]
