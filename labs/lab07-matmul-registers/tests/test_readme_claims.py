"""The sentences of lab 7's sheet that compare rungs, held against the tables they sit under
(common.readme_tables.contradiction): a new record that reorders two rungs changes the table, and
this test names the sentence beside it that it makes untrue."""
from common.readme_tables import Claim
from common.testing import lab_of, sheet_claim_tests
from common.tiling import Tiling

LAB = lab_of(__file__)

FP32 = "ladder record=lab07-bench_*.json ladder=fp32"
FP16 = "ladder record=lab07-bench_*.json ladder=fp16"
FP32_RUNGS = ("v3", "v4", "v5", "v6", "v7", "v8")
MMA_SYNC = ("t4", "cutlass", "t4 (tuned)")


def _every_fp32_rung_gains(fig, at):
    return all(fig[a][n] < fig[b][n] for n in at for a, b in zip(FP32_RUNGS, FP32_RUNGS[1:]))


def _big_tiles():
    """The FP32 rungs whose block tile is 128 x 128 or larger, as their own .cu files declare it."""
    def area(name):
        bm, bn = Tiling.of(LAB.dir / "kernels" / LAB.kernels[name].source).tile
        return bm * bn
    return [k for k in FP32_RUNGS if area(k) >= 128 * 128]


def _big_tiles_behind_v4_at_1024(fig, at):
    return all(fig[k][1024] < fig["v4"][1024] for k in _big_tiles())


def _mma_sync_tops_out_near_two_thirds(fig, at):
    best = max(fig[k][n] for k in MMA_SYNC for n in at if n in fig.get(k, {}))
    return 55.0 <= best <= 75.0             # "near two thirds": 67 % give or take 10 points


CLAIMS = [
    Claim("On the FP32 ladder every rung gains at 4096³", FP32, (4096,), _every_fp32_rung_gains),
    Claim("At 1024³ the rungs with 128 x 128 tiles or larger fall behind v4", FP32, (1024,), _big_tiles_behind_v4_at_1024),
    Claim("mma.sync, even in CUTLASS's hands, tops out near two thirds of it", FP16, (2048, 4096, 8192),
          _mma_sync_tops_out_near_two_thirds),
]


def _fine():
    fp32 = {"v3": (20, 15), "v4": (45, 30), "v5": (30, 65), "v6": (35, 70), "v7": (35, 80), "v8": (38, 104)}
    fp16 = {"t4": 64.0, "cutlass": 66.0, "t4 (tuned)": 65.0}
    return {FP32: {k: {1024: a, 4096: b} for k, (a, b) in fp32.items()},
            FP16: {k: {n: v for n in (2048, 4096, 8192)} for k, v in fp16.items()}}


BREAKS = {"every_fp32_rung_gains": ("v6", 60.0), "big_tiles_behind_v4_at_1024": ("v8", 50.0),
          "mma_sync_tops_out_near_two_thirds": ("cutlass", 90.0)}

test_the_sheet_says_only_what_its_tables_show, test_a_record_that_contradicts_a_sentence_is_caught = \
    sheet_claim_tests(LAB, CLAIMS, _fine, BREAKS)


def test_the_big_tile_rungs_are_read_from_the_kernels():
    assert _big_tiles() == ["v5", "v6", "v7", "v8"]
