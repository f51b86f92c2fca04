"""The fragment model against the PTX ISA's written-out layouts (tooling-facts 3), no GPU."""
from collections import Counter

import numpy as np
import pytest

from common import fragments as fr


@pytest.mark.parametrize("name", list(fr.FRAGMENTS))
def test_the_32_lanes_hold_every_element_exactly_once(name):
    fn, (rows, cols) = fr.FRAGMENTS[name]
    held = Counter((r, c) for lane in range(32) for _, _, r, c in fn(lane))
    assert set(held) == {(r, c) for r in range(rows) for c in range(cols)}
    assert set(held.values()) == {1}


def test_m16n8k16_written_out_rows():
    """a0,a1 = A[g][2t, 2t+1]; a2,a3 = A[g+8][2t..]; a4,a5 = A[g][2t+8..]; a6,a7 = A[g+8][2t+8..];
    b0,b1 = B[2t, 2t+1][g]; b2,b3 = B[2t+8, 2t+9][g]; c0,c1 = C[g][2t..]; c2,c3 = C[g+8][2t..]."""
    for lane in range(32):
        g, t = lane // 4, lane % 4
        a = [(r, c) for _, _, r, c in fr.mma_m16n8k16_a(lane)]
        assert a == [(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1),
                     (g, 2 * t + 8), (g, 2 * t + 9), (g + 8, 2 * t + 8), (g + 8, 2 * t + 9)]
        assert [(reg, half) for reg, half, _, _ in fr.mma_m16n8k16_a(lane)] == [(j // 2, j % 2) for j in range(8)]
        b = [(k, n) for _, _, k, n in fr.mma_m16n8k16_b(lane)]
        assert b == [(2 * t, g), (2 * t + 1, g), (2 * t + 8, g), (2 * t + 9, g)]
        c = [(r, n) for _, _, r, n in fr.mma_m16n8k16_c(lane)]
        assert c == [(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)]


def test_m16n8k8_tf32_written_out_rows():
    """a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4], a3 = A[g+8][t+4]; b0 = B[t][g], b1 = B[t+4][g]."""
    for lane in range(32):
        g, t = lane // 4, lane % 4
        assert [(r, c) for _, _, r, c in fr.mma_m16n8k8_tf32_a(lane)] == [(g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)]
        assert [(k, n) for _, _, k, n in fr.mma_m16n8k8_tf32_b(lane)] == [(t, g), (t + 4, g)]
        assert fr.mma_m16n8k8_tf32_c(lane) == fr.mma_m16n8k16_c(lane)


def test_owner_of_inverts_the_maps():
    assert fr.owner_of_a(0, 0) == (0, 0, 0)
    assert fr.owner_of_a(9, 3) == (4 * 1 + 1, 1, 1)       # g = 1, t = 1: a3 = A[g+8][2t+1]
    assert fr.owner_of_b(15, 7) == (4 * 7 + 3, 1, 1)      # b3 = B[2t+9][g], t = 3, g = 7
    assert fr.owner_of_c(8, 0) == (0, 2, None)
    for lane in range(32):
        for reg, half, r, c in fr.mma_m16n8k16_a(lane):
            assert fr.owner_of_a(r, c) == (lane, reg, half)


def test_lane_tile_is_the_explorers_picture():
    lanes, regs, halves = fr.lane_tile("m16n8k16.a")
    assert lanes.shape == (16, 16) and (lanes >= 0).all()
    assert lanes[0].tolist() == [0, 0, 1, 1, 2, 2, 3, 3] * 2     # row 0: lanes 0..3, pairs, twice
    assert lanes[:, 0].tolist() == [0, 4, 8, 12, 16, 20, 24, 28] * 2
    assert regs[8, 8] == 3 and halves[8, 9] == 1
    c_lanes, _, c_halves = fr.lane_tile("m16n8k16.c")
    assert c_lanes.shape == (16, 8) and (c_halves == -1).all()


def test_ldmatrix_lane_l_supplies_row_l_mod_8_of_matrix_l_div_8():
    assert fr.ldmatrix_row_of_lane(13, 4) == (1, 5)
    assert fr.ldmatrix_row_of_lane(13, 1) is None
    assert fr.ldmatrix_row_of_lane(7, 1) == (0, 7)


def test_ldmatrix_destination_is_the_mma_pattern():
    assert fr.ldmatrix_dest(5, 1) == [(0, 0, 0, 1, 2), (0, 1, 0, 1, 3)]
    assert fr.ldmatrix_dest(5, 1, trans=True) == [(0, 0, 0, 2, 1), (0, 1, 0, 3, 1)]


def test_ldmatrix_x4_of_a_row_major_tile_is_the_mma_a_fragment():
    """tooling-facts 3.3: lane l -> &As[l%16][(l/16)*8] gives r0..r3 = a0a1, a2a3, a4a5, a6a7."""
    got = fr.simulate_ldmatrix(fr.ldmatrix_a_x4_address, 4)
    for lane in range(32):
        for reg, half, r, c in fr.mma_m16n8k16_a(lane):
            assert got[(lane, reg, half)] == (r, c)


def test_ldmatrix_x2_trans_of_a_k_major_b_tile_is_the_mma_b_fragment():
    got = fr.simulate_ldmatrix(fr.ldmatrix_b_x2_trans_address, 2, trans=True)
    for lane in range(32):
        for reg, half, k, n in fr.mma_m16n8k16_b(lane):
            assert got[(lane, reg, half)] == (k, n)


def test_ldmatrix_x2_of_an_n_major_b_tile_is_the_mma_b_fragment():
    # Bs[n][k] with k contiguous: the tile's (row, col) is (n, k)
    got = fr.simulate_ldmatrix(fr.ldmatrix_b_x2_address, 2)
    for lane in range(32):
        for reg, half, k, n in fr.mma_m16n8k16_b(lane):
            assert got[(lane, reg, half)] == (n, k)


@pytest.mark.parametrize("name", ["probe_ldmatrix", "probe_mma_f16", "probe_mma_tf32"])
def test_the_probe_checks_accept_the_models_own_prediction(name):
    words = fr.model_probe_output(name)
    assert words.size == fr.PROBE_SIZES[name]
    check = {"probe_ldmatrix": fr.check_ldmatrix_probe, "probe_mma_f16": fr.check_mma_f16_probe,
             "probe_mma_tf32": fr.check_mma_tf32_probe}[name]
    assert check(words) == []


@pytest.mark.parametrize("name", ["probe_ldmatrix", "probe_mma_f16", "probe_mma_tf32"])
def test_the_probe_checks_catch_two_swapped_lanes(name):
    check = {"probe_ldmatrix": fr.check_ldmatrix_probe, "probe_mma_f16": fr.check_mma_f16_probe,
             "probe_mma_tf32": fr.check_mma_tf32_probe}[name]
    words = fr.model_probe_output(name)
    per_lane = words.reshape(-1, 32, words.size // 32 // (6 if name == "probe_ldmatrix" else 1))
    per_lane[:, [3, 4]] = per_lane[:, [4, 3]]
    bad = check(per_lane.reshape(-1))
    assert bad and any("lane 3" in b for b in bad)


def test_the_ldmatrix_check_names_poison():
    words = fr.model_probe_output("probe_ldmatrix").reshape(6, 32, 4)
    words[0, 0, 0] = (words[0, 0, 0] & 0xFFFF0000) | 0x8000 | (32 * 8)   # .x1 lane 0, low half: poison row 32
    bad = fr.check_ldmatrix_probe(words)
    assert len(bad) == 1 and "poison row 32" in bad[0]


def _fake_wmma_output():
    """A WMMA probe output as the sm_80+ hardware might give it: x[i] for i < 8 the m16n8k16 A layout
    over the two n8 halves, x[8..15] repeating x[0..7]; accumulators 8 values."""
    v = np.full((4, 32, 16), -1.0, dtype=np.float32)
    for lane in range(32):
        a = [r * 16 + c for _, _, r, c in fr.mma_m16n8k16_a(lane)]
        v[0, lane, :16] = a + a
        v[1, lane, :16] = a + a
        v[2, lane, :16] = a + a
        c = [r * 16 + n for _, _, r, n in fr.mma_m16n8k16_c(lane)]
        v[3, lane, :8] = c + [r * 16 + n + 8 for _, _, r, n in fr.mma_m16n8k16_c(lane)]
    return v.reshape(-1)


def test_wmma_layout_from_probe_decodes_tags():
    lay = fr.wmma_layout_from_probe(_fake_wmma_output())
    assert set(lay) == set(fr.WMMA_FRAGMENTS)
    a = lay["matrix_a.row_major"]
    assert a["per_lane"][0][:2] == [(0, 0), (0, 1)]
    assert len(a["holders"][(0, 0)]) == 2            # held twice: x[0] and x[8]
    assert (a["lanes"] >= 0).all()
    assert len(lay["accumulator.row_major"]["per_lane"][5]) == 8
    assert fr.check_wmma_probe(_fake_wmma_output()) == []


def test_wmma_check_reports_missing_elements():
    v = _fake_wmma_output().reshape(4, 32, 16)
    v[3, :, :] = -1.0
    v[3, :, 0] = 0.0                                  # every lane holds element (0, 0) only
    assert any("accumulator" in b and "255 of 256" in b for b in fr.check_wmma_probe(v))


def test_lane_tile_text_is_one_line_per_row():
    text = fr.lane_tile_text(fr.lane_tile("m16n8k16.c")[0])
    lines = text.splitlines()
    assert len(lines) == 16 and lines[0].split() == ["0", "0", "1", "1", "2", "2", "3", "3"]


def test_check_probe_dispatches_and_reads_raw_words():
    assert fr.check_probe("probe_mma_f16", fr.model_probe_output("probe_mma_f16")) == []
    wmma_as_words = np.asarray(_fake_wmma_output(), dtype=np.float32).view(np.uint32)
    assert fr.check_probe("probe_wmma", wmma_as_words) == []
    assert "values" in fr.check_probe("probe_ldmatrix", np.zeros(7, np.uint32))[0]
    with pytest.raises(ValueError):
        fr.check_probe("probe_nothing", [])


# CUTLASS's encoding of the same PTX figures (include/cute/atom/mma_traits_sm80.hpp): a layout maps
# (thread, value) to a column-major index into the M x K (A), N x K (B) or M x N (C) tile. The
# shapes and strides below are transcribed from that file; _cute evaluates them.
CUTE = {
    "m16n8k16.a": ((((4, 8), (2, 2, 2)), ((32, 1), (16, 8, 128))), 16, False),
    "m16n8k16.b": ((((4, 8), (2, 2)), ((16, 1), (8, 64))), 8, True),
    "m16n8k16.c": ((((4, 8), (2, 2)), ((32, 1), (16, 8))), 16, False),          # SM80_16x8_Row
    "m16n8k8.tf32.a": ((((4, 8), (2, 2)), ((16, 1), (8, 64))), 16, False),
    "m16n8k8.tf32.b": ((((4, 8), (2,)), ((8, 1), (32,))), 8, True),
    "m16n8k8.tf32.c": ((((4, 8), (2, 2)), ((32, 1), (16, 8))), 16, False),
}


def _cute(shape, stride, i):
    """Index of coordinate i (a flat integer, first mode fastest) under a flat shape/stride."""
    out = 0
    for s, d in zip(shape, stride):
        out += (i % s) * d
        i //= s
    return out


@pytest.mark.parametrize("name", list(CUTE))
def test_the_model_agrees_with_cutlass_cute_layouts(name):
    ((tshape, vshape), (tstride, vstride)), rows, n_major = CUTE[name]
    fn, _ = fr.FRAGMENTS[name]
    for lane in range(32):
        base = _cute(tshape, tstride, lane)
        for i, (_, _, r, c) in enumerate(fn(lane)):
            idx = base + _cute(vshape, vstride, i)
            first, second = idx % rows, idx // rows
            # B is N x K in CuTe (n, k), K x N here (k, n)
            assert ((second, first) if n_major else (first, second)) == (r, c), (lane, i)


def test_ldmatrix_agrees_with_cutlass_cute_copy_traits():
    """CUTLASS cute/atom/copy_traits_sm75.hpp, SM75_U32x4_LDSM_N and SM75_U16x8_LDSM_T: lane t supplies
    the 128-bit row t (SrcLayout (32,128):(128,1)); DstLayout maps (lane, value) to a bit of the 32
    stacked rows. Bit // 128 is the row, (bit % 128) // 16 the b16 element."""
    plain = fr.simulate_ldmatrix(lambda l: (l, 0), 4)
    trans = fr.simulate_ldmatrix(lambda l: (l, 0), 4, trans=True)
    for lane in range(32):
        for reg in range(4):
            for half in (0, 1):
                bit = 32 * lane + 16 * half + 1024 * reg                                 # (32,(32,4)):(32,(1,1024))
                assert plain[(lane, reg, half)] == (bit // 128, (bit % 128) // 16)
                bit = 256 * (lane % 4) + 16 * (lane // 4) + 128 * half + 1024 * reg      # ((4,8),(16,2,4)):((256,16),(1,128,1024))
                assert trans[(lane, reg, half)] == (bit // 128, (bit % 128) // 16)
