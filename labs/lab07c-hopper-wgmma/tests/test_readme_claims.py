"""The sentences of lab 7c's sheet that compare rungs, held against the tables they sit under.

The ladder tables are generated from the newest committed record (common/readme_tables.py); the
sentences around them are written by hand. When a new record changes the order of two rungs, the
table follows and a sentence may not: the test names the sentence and the figures that contradict it,
so that whoever commits the record rewrites it. "Level", "gains nothing" and "within a point" allow
one point of run-to-run spread (a bench's repeated runs differ by 0.5-3 %: NOTES.md)."""
from common.readme_tables import Claim
from common.testing import lab_of, sheet_claim_tests

LAB = lab_of(__file__)
NOISE = 1.0            # points of % of cuBLAS: what "gains nothing" or "level" allows

FP16 = "ladder record=lab07c-bench*.json ladder=fp16 sizes=2048,4096,8192"
X3 = "ladder record=lab07c-bench*.json ladder=3xtf32 sizes=4096,8192"
THREE_CALLS = "cuBLAS 3xTF32 (3 calls)"
PRESPLIT = "cuBLAS 3xTF32 (3 calls, pre-split)"


def _wgmma_alone_slower_until_tma(fig, at):
    return all(fig["h1"][n] < fig["t4"][n] < fig["h2"][n] for n in at)


def _warp_specialization_gains_nothing(fig, at):
    return all(fig["h3"][n] <= fig["h2"][n] + NOISE for n in at)


def _persistence_gains(fig, at):
    return all(fig["h4"][n] > fig["h3"][n] + NOISE for n in at)


def _h6_within_a_point_at_4096(fig, at):
    return abs(fig["h6"][4096] - 100.0) <= NOISE + 0.5      # "within about a point"


def _multicast_and_stream_k_gain_nothing(fig, at):
    return all(fig["h5"][n] <= fig["h4"][n] + NOISE and fig["h7"][n] <= fig["h6"][n] + NOISE for n in at)


def _no_rung_passes_cublas_at_2048(fig, at):
    return all(v.get(2048, 0.0) < 100.0 for k, v in fig.items() if k != "cuBLAS")


def _fused_beats_three_calls(fig, at):
    return all(fig["h4_3xtf32"][n] > fig[THREE_CALLS][n] for n in at)


def _presplit_calls_beat_the_whole_call_by_about_4_pct(fig, at):
    return all(2.0 <= 100.0 * (fig[PRESPLIT][n] / fig["h4_3xtf32"][n] - 1.0) <= 6.0 for n in at)


def _h6_3xtf32_behind_h4_3xtf32(fig, at):
    return all(fig["h6_3xtf32"][n] < fig["h4_3xtf32"][n] for n in at)


CLAIMS = [
    Claim("wgmma alone (h1) is slower than t4 until the loads stop being issued by every thread (h2)",
          FP16, (2048, 4096, 8192), _wgmma_alone_slower_until_tma),
    Claim("Warp specialization at the same tile (h3) gains nothing", FP16, (2048, 4096, 8192),
          _warp_specialization_gains_nothing),
    Claim("with persistence and the wider tile (h4) it does", FP16, (4096, 8192), _persistence_gains),
    Claim("stores through TMA (h6) bring 4096³ within about a point of cuBLAS", FP16, (4096,),
          _h6_within_a_point_at_4096),
    Claim("Multicast (h5) and the stream-K tail (h7) gain nothing at these squares", FP16, (2048, 4096, 8192),
          _multicast_and_stream_k_gain_nothing),
    Claim("no FP16 rung passes cuBLAS there", FP16, (2048,), _no_rung_passes_cublas_at_2048),
    Claim("h4_3xtf32 beats three cuBLAS TF32 calls of the same split at both sizes", X3, (4096, 8192),
          _fused_beats_three_calls),
    Claim("they beat h4_3xtf32's whole call, which must still split, by about 4 %", X3, (4096, 8192),
          _presplit_calls_beat_the_whole_call_by_about_4_pct),
    Claim("In the 3xTF32 table below it stays behind h4_3xtf32", X3, (4096, 8192), _h6_3xtf32_behind_h4_3xtf32),
]


def _fine():
    fp16 = {"cuBLAS": 100.0, "t4": 60.0, "t4_tma": 60.0, "h1": 45.0, "h2": 80.0, "h3": 80.0, "h4": 95.0,
            "h5": 95.0, "h6": 99.5, "h7": 99.0}
    x3 = {"cuBLAS": 100.0, THREE_CALLS: 230.0, PRESPLIT: 250.0, "h4_3xtf32": 240.0, "h6_3xtf32": 235.0}
    return {FP16: {k: {n: v for n in (2048, 4096, 8192)} for k, v in fp16.items()},
            X3: {k: {n: v for n in (4096, 8192)} for k, v in x3.items()}}


# one change each that makes a claim untrue (a neighbouring claim may fall with it: they share rungs)
BREAKS = {
    "wgmma_alone_slower_until_tma": ("h2", 55.0),
    "warp_specialization_gains_nothing": ("h3", 84.0),
    "persistence_gains": ("h4", 80.5),
    "h6_within_a_point_at_4096": ("h6", 97.0),
    "multicast_and_stream_k_gain_nothing": ("h7", 102.0),
    "no_rung_passes_cublas_at_2048": ("h6", 100.5),
    "fused_beats_three_calls": ("h4_3xtf32", 229.0),
    "presplit_calls_beat_the_whole_call_by_about_4_pct": (PRESPLIT, 238.0),
    "h6_3xtf32_behind_h4_3xtf32": ("h6_3xtf32", 241.0),
}

test_the_sheet_says_only_what_its_tables_show, test_a_record_that_contradicts_a_sentence_is_caught = \
    sheet_claim_tests(LAB, CLAIMS, _fine, BREAKS)
