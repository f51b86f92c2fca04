"""The sentences of lab 7a's sheet that compare rungs, held against the tables they sit under
(common.readme_tables.contradiction): a new record that reorders two rungs changes the table, and
this test names the sentence beside it that it makes untrue."""
from common.readme_tables import Claim
from common.testing import lab_of, sheet_claim_tests

LAB = lab_of(__file__)

TF32 = "ladder record=lab07a-bench*.json ladder=tf32 sizes=4096,8192"
RUNGS = ("k1", "k2", "k3", "k4", "k5", "k6", "k7")
MMA_SYNC = RUNGS + ("cutlass",)


def _every_rung_gains_at_4096(fig, at):
    return all(fig[a][4096] < fig[b][4096] for a, b in zip(RUNGS, RUNGS[1:]))


def _k3_and_k4_are_the_largest_steps(fig, at):
    steps = {b: fig[b][4096] - fig[a][4096] for a, b in zip(RUNGS, RUNGS[1:])}
    return sorted(steps, key=steps.get)[-2:] in (["k3", "k4"], ["k4", "k3"])


def _mma_sync_stays_near_half(fig, at):
    best = max(fig[k][n] for k in MMA_SYNC for n in at)
    return 40.0 <= best <= 60.0             # "near half": 50 % give or take 10 points, the best rung


CLAIMS = [
    Claim("every rung from k1 to k7 gains at 4096³", TF32, (4096,), _every_rung_gains_at_4096),
    Claim("the pipeline (k3) and the square warp tiles (k4) are the largest steps", TF32, (4096,),
          _k3_and_k4_are_the_largest_steps),
    Claim("the whole mma.sync ladder, CUTLASS included, stays near half of cuBLAS TF32", TF32, (4096, 8192),
          _mma_sync_stays_near_half),
]


def _fine():
    pct = {"k1": 16.6, "k2": 23.6, "k3": 31.1, "k4": 40.6, "k5": 42.8, "k6": 44.9, "k7": 51.2, "cutlass": 54.2}
    return {TF32: {k: {4096: v, 8192: v} for k, v in pct.items()}}


BREAKS = {"every_rung_gains_at_4096": ("k6", 42.0), "k3_and_k4_are_the_largest_steps": ("k2", 25.0),
          "mma_sync_stays_near_half": ("cutlass", 70.0)}

test_the_sheet_says_only_what_its_tables_show, test_a_record_that_contradicts_a_sentence_is_caught = \
    sheet_claim_tests(LAB, CLAIMS, _fine, BREAKS)
