"""The explorers' views (common/explorers.py): what the notebooks print and draw, without a GPU.
On lab 7's kernels and accesses: labs/lab07-matmul-registers/tests/test_views.py."""
import numpy as np
import pytest

from common import banks, explorers, fragments, hierarchy


@pytest.mark.parametrize("family,counts", [("m16n8k16", (8, 4, 4)), ("m16n8k8", (4, 2, 4))])
def test_a_lane_holds_its_fragment_and_the_figure_marks_it(family, counts):
    for name, n in zip(explorers.FAMILIES[family], counts):
        assert len(explorers._elements(name, 7)) == n
    fig = explorers.fragment_figure(7, family)
    assert len(fig.axes) == 3


def test_ldmatrix_delivers_each_lane_its_mma_fragment():
    for lane in range(32):
        a = {(r, c) for (l, _, _), (r, c) in fragments.simulate_ldmatrix(fragments.ldmatrix_a_x4_address, 4).items()
             if l == lane}
        assert a == {(r, c) for _, _, r, c in fragments.mma_m16n8k16_a(lane)}
    assert "&As[5][0]" in explorers.ldmatrix_text(5)
    assert "ignored" in explorers.ldmatrix_text(20)          # .x2 reads only lanes 0-15's addresses
    assert len(explorers.ldmatrix_figure(20).axes) == 2


def _wmma_like_two_mmas():
    """A probe_wmma output laid out as mma.m16n8k16 fragments (tags r*16 + c), -1 where unused."""
    out = np.full((len(fragments.WMMA_FRAGMENTS), 32, fragments.WMMA_SLOTS), -1.0, dtype=np.float32)
    for f, name in enumerate(fragments.WMMA_FRAGMENTS):
        for lane in range(32):
            elems = sorted(explorers._mma_equivalent(name, lane))
            for i, (r, c) in enumerate(elems):
                out[f, lane, i] = r * 16 + c
    return out.reshape(-1)


def test_wmma_laid_out_as_mma_fragments_is_recognized():
    layout = fragments.wmma_layout_from_probe(_wmma_like_two_mmas())
    rows = explorers.wmma_vs_mma(layout)
    assert all(r["same_as_mma"] == "32/32" and r["missing"] == 0 for r in rows)
    assert "accumulator.row_major" in explorers.wmma_table(layout)
    assert len(explorers.wmma_figure(layout, 3).axes) == 4


def test_a_column_of_words_conflicts_and_one_word_of_padding_fixes_it():
    assert banks.analyze(explorers.strided_access(32, 4), 4).ways == 32
    assert banks.analyze(explorers.strided_access(32, 4, pad_words=1), 4).conflicts == 0


def test_padding_and_swizzle_both_fix_a_column_of_16_byte_chunks():
    assert banks.analyze(explorers.strided_access(32, 16), 16).ways == 8
    assert banks.analyze(explorers.strided_access(32, 16, pad_words=4), 16).conflicts == 0
    assert banks.analyze(explorers.strided_access(32, 16, swizzle=True), 16).conflicts == 0


def test_impossible_strided_accesses_are_refused_with_the_reason():
    text, fig = explorers.strided_view(30, 16)
    assert fig is None and "aligned" in text
    text, fig = explorers.strided_view(32, 16, pad_words=4, swizzle=True)
    assert fig is None and "swizzle" in text


def test_padding_against_swizzle_needs_no_lab():
    table = explorers.padding_vs_swizzle_table()
    assert "XOR swizzle" in table and "padded by 16 B" in table


def test_a_tiling_view_refuses_with_the_reason():
    """hierarchy_view on lab 7's kernels: labs/lab07-matmul-registers/tests/test_views.py."""
    from common.errors import CourseError
    t = hierarchy.Tiling("x", BM=64, BN=64, BK=8, WM=32, WN=32, threads=128, TM=4, TN=4, WNITER=2)
    text = explorers.hierarchy_text(hierarchy.explore(t, "sm_90"))
    assert text.startswith("x on sm_90") and "FLOP/B" in text
    with pytest.raises(CourseError):
        hierarchy.Tiling("x", BM=64, BN=64, BK=8, WM=32, WN=32, threads=64, TM=4, TN=4).check()
