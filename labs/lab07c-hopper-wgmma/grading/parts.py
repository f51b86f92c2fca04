"""Lab 7c's grading table: three rungs of the Hopper ladder, what is graded, how many points, and what
each known-wrong kernel must lose. Data only: common/grading reads it (common/grading/spec.py says
what each name means; grading/probes.py holds the host probes' verdicts).

    PARTS     h1 (the wgmma shared-memory matrix descriptors), h2 (the TMA expect_tx byte count and
              the FULL barrier's phase parity), h3 (the FULL and EMPTY parities of the warp-specialized
              producer-consumer loop)
    HEADERS   hopper_ptx.cuh: the descriptors live there and every kernel uses them, so the workspace
              holds the header too, its descriptor region cut (the kernels include it in quotes: nvcc
              finds the workspace's copy first; a workspace without it is not graded)
    REGIONS   each solution region and what the workspace keeps in its place (so it compiles)
    WRONG     the known-wrong kernels (wrong/*.patch) and the checks each must lose
    SHAPES    the shapes "correct" runs (fp16_tensor)

Why these rungs. h1 is the first rung of the lab (the previous one is lab 7's t4): its one new idea is
the descriptor, so its file stays whole and the descriptor is cut from the header. h2's file is h1's
loop with TMA loads: the byte count and the FULL parity are cut. h3 is h2 split into a producer and
consumers: both parities are cut, and its TX_BYTES too (the same line as h2's answer: "bring your h2
answer"). No workspace file holds another part's answer: the headers' comments state the layouts and
the PTX rules, never the numbers (tests/test_grading.py checks it with common.grading.workspace.leaks).

How each idea is graded:
  descriptor  "desc" (probe, no GPU): probes/desc.cu includes the student's h1 file (and so the
              workspace's hopper_ptx.cuh) in a host program that prints desc_k_major and desc_mn_major
              for a set of addresses and panel sizes; probes.py decodes the fields (start, LBO, SBO,
              base offset, swizzle mode) and names the field that is wrong and what it holds.
              GPU: correct (a wrong field reads the wrong shared-memory bytes: wrong on every shape).
  expect_tx   "tx" (probe): probes/tx.cu prints TX_BYTES for every tile the kernel allows; it must equal the
              bytes the stage's TMA boxes write (one A box, BN / 64 B panels, FP16). Fewer: the phase
              completes before the data has landed; more: it never completes, a hang.
  parity      "parity" (probe): probes/parity_*.cu print full_parity(t) (and empty_parity(t)) for
              STAGES = 4 and 3; probes.py runs them through a model of the pipeline (common to h2 and
              h3: fills land as late as possible, the producer runs as far ahead as its waits let it)
              and reports the first wait that returns too early (a stale or half-written stage) or
              that never returns (a hang).
  GPU         correct on awkward shapes (every K crosses several pipeline rounds), fast (75 % of the
              reference's speed at 2048³). A hang is cut off after GPU_TIMEOUT_S and costs that part
              its GPU checks only; its reason says so (HANG_HINT).
The gates: correct requires desc (h1), tx (h2) or parity (h3); fast requires correct; so the untouched
workspace (descriptors 0, TX_BYTES 0, parities constant) scores zero. No race-free check: mbarriers
order the async proxy's writes, which racecheck does not model; the parity model finds those races.
"""
from common.grading.spec import Check, Part, Region, Wrong

# ---------------------------------------------------------------------------------------------
# Thresholds and shapes
# ---------------------------------------------------------------------------------------------
SPEED_PCT = 75              # a correct kernel at >= 75 % of the reference's speed gets the point
TIMING_SIZE = 2048          # M = N = K of the timing: 256 blocks of 128 x 128, 32 k-tiles each
TIMING_BUDGET_S = 0.25
CHECK_ROWS = 256
# One part's GPU run is its correctness on 7 shapes of at most a few hundred tiles and 0.5 s of interleaved
# timing at 2048³: seconds on an H200 (the kernels are built before). A parity or byte-count mistake hangs
# the kernel (the untouched workspace's TX_BYTES = 0 may too: TMA's bytes then drive the next phase's
# count below zero), and each such part costs this long before the next one runs: 20 s is several times
# what a part that finishes takes.
GPU_TIMEOUT_S = 20
HANG_HINT = "hung: a wait that never completes (phase parity? an expect_tx count above the bytes that land?)"

# K a multiple of 8 (TMA's row pitch, lab.py's rule for h2 and h3). 1x1x8; partial tiles on every side;
# N not a multiple of 8 (the launch hook's padded copy of B); tall and skinny; K = 520 and 1000: 9 and
# 16 k-tiles, so every stage is filled 2 to 4 times (a parity that does not flip at the wrap shows);
# whole tiles with K = 1024 (16 k-tiles).
FP16_SHAPES = [(1, 1, 8), (127, 129, 136), (129, 127, 520), (300, 520, 1000), (1000, 3, 520),
               (256, 256, 1024), (64, 200, 264)]
SHAPES = {"fp16_tensor": FP16_SHAPES}

HEADERS = ["hopper_ptx.cuh"]


# ---------------------------------------------------------------------------------------------
# Parts and checks
# ---------------------------------------------------------------------------------------------

def _gpu(gate):
    return (Check("correct", 2, "right on every shape, and again on fresh inputs after timing", "correct",
                  needs_gpu=True, requires=gate),
            Check("fast", 1, f"at least {SPEED_PCT} % of the reference's speed at {TIMING_SIZE}³, same run", "fast",
                  needs_gpu=True, requires="correct"))


PARTS = [
    Part("h1", "h1: the wgmma shared-memory matrix descriptors (hopper_ptx.cuh)", kernel="h1",
         regions=("h1-desc",),
         checks=(Check("desc", 3, "the descriptors' fields, evaluated on the host: start address, leading and "
                                  "stride byte offsets, base offset and swizzle mode of both operands", "probe"),
                 *_gpu("desc"))),
    Part("h2", "h2: the TMA expect_tx byte count and the FULL barrier's phase parity", kernel="h2",
         regions=("h2-tx", "h2-parity"),
         checks=(Check("tx", 2, "TX_BYTES equals the bytes a stage's TMA loads write, at every tile the kernel allows", "probe"),
                 Check("parity", 1, "full_parity(t), run through the pipeline model at STAGES = 4 and 3: no wait "
                                    "returns before its fill lands", "probe"),
                 *_gpu("tx"))),
    Part("h3", "h3: the FULL and EMPTY phase parities of the producer-consumer loop", kernel="h3",
         regions=("h3-tx", "h3-parity"),
         checks=(Check("parity", 2, "full_parity(t) and empty_parity(t), run through the pipeline model at "
                                    "STAGES = 4 and 3: no early return, no hang", "probe"),
                 Check("tx", 1, "TX_BYTES (your h2 answer) at every tile h3 allows", "probe"),
                 *_gpu("parity"))),
]


# ---------------------------------------------------------------------------------------------
# Regions: what `make workspace` leaves where the reference code was
# ---------------------------------------------------------------------------------------------

REGIONS = [
    Region("h1-desc", "h1",
           stub="__host__ __device__ constexpr uint64_t desc_k_major(uint32_t addr) { return 0; }   // placeholder\n"
                "__host__ __device__ constexpr uint64_t desc_mn_major(uint32_t addr, uint32_t panel_bytes) "
                "{ return 0; }   // placeholder",
           hint="Draw one operand's tile in bytes: where does the next 8-row group start, where the next "
                "panel? The PTX ISA's pictures of the two layouts say which offset field each step goes in."),
    Region("h2-tx", "h2",
           stub="[[maybe_unused]] constexpr uint32_t TX_BYTES = 0;   // placeholder",
           hint="List the TMA loads issue() makes for one stage and what each writes into shared memory "
                "(the tensor map's box). What does the barrier count, and in what unit?"),
    Region("h2-parity", "h2",
           stub="__host__ __device__ constexpr uint32_t full_parity(int t) { return 0; }   // placeholder",
           hint="Which fill of its stage is tile t, and which phase of FULL does that fill complete?"),
    Region("h3-tx", "h3",
           stub="[[maybe_unused]] constexpr uint32_t TX_BYTES = 0;   // placeholder: your h2 answer",
           hint="h2's TX_BYTES (your answer there): the stage holds the same boxes."),
    Region("h3-parity", "h3",
           stub="__host__ __device__ constexpr uint32_t full_parity(int t) { return 0; }    // placeholder\n"
                "__host__ __device__ constexpr uint32_t empty_parity(int t) { return 1; }   // placeholder",
           hint="Tabulate t, its stage, its fill j, the phase of FULL that fill completes and the release of "
                "EMPTY it needs (j = 0 needs none: what must the first wait name to return at once?)."),
]


# ---------------------------------------------------------------------------------------------
# Known-wrong kernels: grading/wrong/*.patch, each a diff of the reference with ONE bug
# ---------------------------------------------------------------------------------------------
# On the GPU, a wait that returns early is a race between TMA and the tensor core: whether the result is
# wrong depends on timing (the fill has often landed anyway), so those patches promise nothing on the
# GPU; the probe catches them every time. A count above the bytes that land, or a parity that waits for
# a phase no one completes, hangs: deterministic, and the GPU run loses correct with HANG_HINT's reason.

WRONG = [
    Wrong("h1_lbo_sbo_swapped.patch", "h1", "LBO and SBO exchanged in the shared encoder",
          lose_here=("desc",), lose_on_gpu=("correct",), reason="stride byte offset", file="hopper_ptx.cuh",
          max_diff_lines=2),
    Wrong("h1_swizzle_64b.patch", "h1", "swizzle mode 2 (64-byte) where the tiles are 128-byte swizzled",
          lose_here=("desc",), lose_on_gpu=("correct",), reason="swizzle mode", file="hopper_ptx.cuh",
          max_diff_lines=1),
    Wrong("h1_start_in_bytes.patch", "h1", "the start address in bytes, not in 16-byte units",
          lose_here=("desc",), lose_on_gpu=("correct",), reason="start address", file="hopper_ptx.cuh",
          max_diff_lines=1),
    Wrong("h2_tx_one_operand.patch", "h2", "expect_tx counts the A box only",
          lose_here=("tx",), lose_on_gpu=(), reason="does not change with BN", max_diff_lines=1),
    Wrong("h2_tx_elements.patch", "h2", "expect_tx counts elements, not bytes",
          lose_here=("tx",), lose_on_gpu=(), reason="half", max_diff_lines=1),
    Wrong("h2_tx_float_bytes.patch", "h2", "expect_tx counts 4 bytes an element (FP32 habit): a hang",
          lose_here=("tx",), lose_on_gpu=("correct",), reason="never completes", max_diff_lines=1),
    Wrong("h2_parity_every_tile.patch", "h2", "the FULL parity flips every tile, not every round of stages",
          lose_here=("parity",), lose_on_gpu=(), reason="before that fill has landed", max_diff_lines=1),
    Wrong("h3_empty_parity_as_full.patch", "h3", "EMPTY waited on with FULL's parity: the first round waits "
          "for a release no one makes", lose_here=("parity",), lose_on_gpu=("correct",), reason="hang",
          max_diff_lines=1),
    Wrong("h3_parity_every_tile.patch", "h3", "both parities flip every tile, not every round of stages",
          lose_here=("parity",), lose_on_gpu=("correct",), reason="before that fill has landed", max_diff_lines=2),
    Wrong("h3_parity_never_flips.patch", "h3", "the parities never flip at the wrap-around (0 and 1 for ever)",
          lose_here=("parity",), lose_on_gpu=("correct",), reason="still being read", max_diff_lines=2),
]
