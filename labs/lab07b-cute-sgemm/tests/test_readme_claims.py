"""The sentences of lab 7b's sheet that compare rungs, held against the table they sit under
(common.readme_tables.contradiction): a new record that reorders two rungs changes the table, and
this test names the sentence beside it that it makes untrue."""
from common.readme_tables import Claim
from common.testing import lab_of, sheet_claim_tests

LAB = lab_of(__file__)

FP32 = "ladder record=lab07b-bench_*.json ladder=fp32"
WORKLOG = ("c1", "c2", "c3", "c4", "c5")
SIZES = (2048, 4096, 8192)


def _five_steps_each_add_c5_largest(fig, at):
    for n in at:
        steps = {b: fig[b][n] - fig[a][n] for a, b in zip(WORKLOG, WORKLOG[1:])}
        if min(steps.values()) <= 0 or max(steps, key=steps.get) != "c5":
            return False
    return True


def _c7_leads_cublas_by_little(fig, at):
    return all(100.0 < fig["c7"][n] <= 110.0 for n in at)


def _too_few_tiles_at_2048(fig, at):
    return fig["c7"][2048] < fig["c7"][4096]


CLAIMS = [
    Claim("the worklog's five steps each add a little and c5 is the largest", FP32, SIZES,
          _five_steps_each_add_c5_largest),
    Claim("c7's lead over cuBLAS is small", FP32, (4096, 8192), _c7_leads_cublas_by_little),
    Claim("At 2048³ there are too few tiles to fill the GPU for long", FP32, (2048, 4096), _too_few_tiles_at_2048),
]


def _fine():
    pct = {"c1": 73.0, "c2": 74.8, "c3": 75.2, "c4": 76.0, "c5": 81.7, "c7": 104.0}
    fig = {k: {n: v for n in SIZES} for k, v in pct.items()}
    fig["c7"][2048] = 98.4
    return {FP32: fig}


BREAKS = {"five_steps_each_add_c5_largest": ("c3", 74.0), "c7_leads_cublas_by_little": ("c7", 99.0),
          "too_few_tiles_at_2048": ("c7", 104.0)}

test_the_sheet_says_only_what_its_tables_show, test_a_record_that_contradicts_a_sentence_is_caught = \
    sheet_claim_tests(LAB, CLAIMS, _fine, BREAKS)
