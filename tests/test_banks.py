"""The bank model on cases that can be checked by hand, then on a lab's table of accesses (no GPU)."""
import pytest

from common import banks as bk


def test_32_consecutive_words_take_one_wavefront():
    a = bk.analyze([4 * lane for lane in range(32)])
    assert (a.wavefronts, a.conflicts, a.ways) == (1, 0, 1)


def test_a_stride_of_32_words_is_a_32_way_conflict():
    a = bk.analyze([128 * lane for lane in range(32)])
    assert (a.wavefronts, a.conflicts, a.ways) == (32, 31, 32)


def test_a_stride_of_2_words_is_2_way():
    assert bk.analyze([8 * lane for lane in range(32)]).wavefronts == 2


def test_all_lanes_reading_one_word_is_a_broadcast():
    a = bk.analyze([64] * 32)
    assert (a.wavefronts, a.conflicts) == (1, 0)


def test_lanes_sharing_words_in_pairs_cost_nothing_extra():
    assert bk.analyze([4 * (lane // 2) for lane in range(32)]).wavefronts == 1


def test_inactive_lanes_do_not_count():
    addrs = [128 * lane if lane < 4 else None for lane in range(32)]
    assert bk.analyze(addrs).wavefronts == 4


def test_lds128_of_consecutive_chunks_takes_four_wavefronts():
    """512 bytes at 128 per wavefront: a quarter warp per pass, no conflict."""
    a = bk.analyze([16 * lane for lane in range(32)], width=16)
    assert (a.wavefronts, a.ideal, a.conflicts) == (4, 4, 0)


def test_lds64_of_consecutive_words_takes_two_wavefronts():
    a = bk.analyze([8 * lane for lane in range(32)], width=8)
    assert (a.wavefronts, a.ideal, a.conflicts) == (2, 2, 0)


def test_lds128_conflicts_only_inside_a_quarter_warp():
    # lanes 0-7 consecutive chunks, lanes 8-15 the next 128 bytes etc.: each quarter is one wavefront
    assert bk.analyze([16 * lane for lane in range(32)], width=16, merge=False).wavefronts == 4
    # lanes 0 and 4 of each quarter 128 bytes apart: 2-way inside every quarter
    addrs = [32 * lane for lane in range(32)]
    assert bk.analyze(addrs, width=16).wavefronts == 8


def test_lds128_broadcast_merges_quarters_but_not_halves():
    a = bk.analyze([0] * 32, width=16)
    assert (a.wavefronts, a.phases) == (2, 2)
    assert bk.analyze([0] * 32, width=16, merge=False).wavefronts == 4


def test_misaligned_vector_access_is_refused():
    with pytest.raises(ValueError):
        bk.analyze([4 * lane for lane in range(32)], width=16)


def test_ldmatrix_phases_are_its_matrices():
    rows = [16 * r for r in range(32)]                 # 32 rows of 16 bytes, consecutive
    a = bk.analyze_ldmatrix(rows)
    assert (a.wavefronts, a.ideal) == (4, 4)
    same_bank_rows = [128 * r for r in range(8)]       # .x1 with 8 rows all in banks 0-3
    assert bk.analyze_ldmatrix(same_bank_rows).wavefronts == 8


def test_xor_swizzle_is_a_permutation_inside_each_128_byte_line():
    for line in (128, 256):
        tile = range(0, 16 * line, 16)
        assert sorted(bk.xor_swizzle(a, line) for a in tile) == list(tile)


# A lab's accesses (lab 7's own: labs/lab07-matmul-registers/tests/test_models_vs_lab.py) ----------

def column(stride_words=32):
    return [4 * stride_words * lane for lane in range(32)]


class Table:
    """What banks reads of a lab: its table's BANK_ACCESSES and BANK_MAIN_LOOPS."""
    name = "a lab"
    BANK_ACCESSES = {"column": bk.SharedAccess(column, {}, "LDS", 4, "32-way"),
                     "padded column": bk.SharedAccess(column, {"stride_words": 33}, "LDS", 4, "no conflict"),
                     "rows": bk.SharedAccess(lambda: [16 * r for r in range(32)], {}, "LDSM.x4", 16, "ldmatrix")}
    BANK_MAIN_LOOPS = {"k": [("column", 2, "ld"), ("padded column", 2, "ld"), ("padded column", 1, "st")]}

    def option(self, name, default=None):
        return getattr(self, name, default)


def test_a_shared_access_is_evaluated_by_its_instruction():
    lab = Table()
    assert bk.evaluate(lab, "column").ways == 32 and bk.evaluate(lab, "padded column").conflicts == 0
    assert bk.evaluate(lab, "rows").ideal == 4                      # LDSM: analyzed as an ldmatrix
    rows = bk.access_rows(lab)
    assert [r["access"] for r in rows] == list(Table.BANK_ACCESSES)
    assert all(r["wavefronts"] >= r["phases"] for r in rows)
    assert [r["access"] for r in bk.access_rows(lab, prefix="padded")] == ["padded column"]


def test_a_main_loop_prediction_sums_its_accesses():
    p = bk.predict_kernel(Table(), "k")
    assert p["ld"]["instructions"] == 4 and p["ld"]["wavefronts"] == 2 * 32 + 2 * 1
    assert p["ld"]["per_instruction"] == pytest.approx(66 / 4) and p["st"]["ideal"] == 1


def test_an_unknown_access_or_loop_is_a_course_error():
    from common.errors import CourseError
    with pytest.raises(CourseError):
        bk.evaluate(Table(), "nope")
    with pytest.raises(CourseError):
        bk.predict_kernel(Table(), "nope")
