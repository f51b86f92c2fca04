"""The bank model on cases that can be checked by hand, then on lab 7's accesses (no GPU)."""
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


# Lab 7 ------------------------------------------------------------------------------------------

def wf(name, merge=True):
    return bk.evaluate(name, merge).wavefronts


def test_v5_as_read_is_a_broadcast_per_thread_row_but_the_two_rows_share_a_bank():
    a = bk.evaluate("v5 As[row][k] read")
    assert a.unique_bytes == 8 and (a.wavefronts, a.ways) == (2, 2)


def test_v5_bs_read_is_4_way():
    assert wf("v5 Bs[k][col] read") == 4


def test_v6_transposed_tile_reads_cost_the_vector_minimum_or_less():
    assert wf("v6 As[k][m] LDS.128") == 2                  # two chunks, pairs repeat: quarters merge
    assert wf("v6 As[k][m] LDS.128", merge=False) == 4
    assert wf("v6 Bs[k][n] LDS.128") == 8                  # 2-way inside each quarter


def test_v6_pad_makes_the_transposed_store_conflict_free():
    assert wf("v6 As store, rows of 132") == 1
    assert wf("v6 As store, rows of 128") == 2


def test_v7_reads_are_conflict_free():
    assert bk.evaluate("v7 As[k][m] LDS.128").conflicts == 0
    assert bk.evaluate("v7 Bs[k][n] LDS.128").conflicts == 0
    assert wf("v7 As store, rows of 132") == 2 and wf("v7 As store, rows of 128") == 4


def test_t2_padding_and_swizzle_make_fragment_loads_conflict_free():
    assert wf("t2 A fragment, rows of 40") == 4 and wf("t2 A fragment, rows of 32") == 16
    assert wf("t2 B fragment, rows of 136") == 4 and wf("t2 B fragment, rows of 128") == 32
    assert wf("t2 A fragment, swizzled") == 4 and wf("t2 B fragment, swizzled") == 4


def test_the_pad_costs_the_tile_stores_and_the_swizzle_does_not():
    """Chapter 8, section 8: swizzling keeps both the stores and the ldmatrix loads conflict-free."""
    assert wf("t2 As store, rows of 40") == 8
    assert wf("t2 As store, rows of 32") == 4 and wf("t2 As store, swizzled") == 4


def test_lab_accesses_table_has_every_entry():
    rows = bk.lab_accesses()
    assert [r["access"] for r in rows] == list(bk.LAB_ACCESSES)
    assert all(r["wavefronts"] >= r["phases"] for r in rows)


def test_kernel_predictions_per_instruction():
    v7 = bk.predict_kernel("v7")
    assert v7["ld"]["instructions"] == 96 and v7["ld"]["per_instruction"] == pytest.approx(10 / 3)
    assert bk.predict_kernel("v7", merge=False)["ld"]["per_instruction"] == 4     # the merge rule is testable
    assert bk.predict_kernel("v6")["ld"]["per_instruction"] == 5                  # Bs reads: 8 wavefronts each
    t2 = bk.predict_kernel("t2")
    assert t2["ld"]["wavefronts"] == t2["ld"]["ideal"] and t2["st"]["wavefronts"] > t2["st"]["ideal"]
