"""h6's epilogue without a GPU: the chunk layout its threads write (does the copy engine read back
the right element, every element once, and at what bank cost), and what its launch hook hands the
kernel (C as a TMA map in the kernel's own box, through a padded scratch C when C's pitch cannot be
described). The GPU tests (test_gpu.py) check the results; these check the arithmetic behind them."""
from pathlib import Path

import pytest

from common import banks
from common.testing import lab_of

LAB = lab_of(__file__)
H6 = LAB.kernel("h6")
ROWS, COLS = H6.tiling.value("STORE_ROWS"), H6.tiling.value("STORE_COLS")


def chunk_store(warp, lane, jj, h, swizzle=True):
    """The byte offset in the chunk buffer where h6 writes (warp, lane)'s float2 for n8 block jj and
    row half h, and the (row, column) of the consumer's tile it holds: h6_tma_store.cu's epilogue,
    and the accumulator layout of hopper_ptx.cuh (row 16 warp + lane / 4 + 8 h, column
    8 jj + 2 (lane % 4))."""
    r = warp * 16 + lane // 4 + 8 * h
    piece = (2 * jj + (lane % 4) // 2) ^ ((r % 8) if swizzle else 0)
    return r * 128 + piece * 16 + (lane % 2) * 8, (r, 8 * jj + 2 * (lane % 4))


def test_the_chunk_is_a_64_by_32_box_of_128_byte_rows():
    assert (ROWS, COLS) == (64, 32) and COLS * 4 == 128          # one swizzle row of floats


def test_tma_reads_back_every_element_of_the_chunk_once_at_its_place():
    """TMA's 128-byte swizzle puts element (row, col) of the box at xor_swizzle(row * 128 + col * 4):
    unswizzling each address h6 writes must give back the element it holds, and the 64 x 32 floats
    of the chunk must each be written exactly once."""
    seen = {}
    for warp in range(4):
        for lane in range(32):
            for jj in range(COLS // 8):
                for h in range(2):
                    addr, (r, c) = chunk_store(warp, lane, jj, h)
                    for e in range(2):                             # the float2's two floats
                        logical = banks.xor_swizzle(addr + 4 * e)  # the swizzle is its own inverse
                        assert divmod(logical, 128) == (r, 4 * (c + e)), (warp, lane, jj, h, e)
                        seen[logical] = seen.get(logical, 0) + 1
    assert sorted(seen) == list(range(0, ROWS * COLS * 4, 4)) and set(seen.values()) == {1}


def test_the_swizzle_halves_the_bank_cost_of_each_warp_store():
    """A warp's STS.64 writes 8 rows x 32 bytes in two half-warp passes of 4 rows. With plain row-major
    chunks a pass's 4 rows hit the same 8 banks: 4-way conflicts, 8 wavefronts. TMA's 128-byte swizzle
    leaves rows r and r ^ 1 on the same two pieces: 2-way, 4 wavefronts (the ideal is 2; the kernel's
    header says what removing it would cost)."""
    for warp in range(4):
        for jj in range(COLS // 8):
            for h in range(2):
                swz = banks.analyze([chunk_store(warp, lane, jj, h)[0] for lane in range(32)], width=8)
                plain = banks.analyze([chunk_store(warp, lane, jj, h, swizzle=False)[0] for lane in range(32)], width=8)
                assert (swz.wavefronts, swz.ideal, swz.ways) == (4, 2, 2), swz
                assert plain.wavefronts == 8, plain


# --- the hook, with the driver faked ----------------------------------------------------------------
@pytest.fixture
def faked(monkeypatch):
    launch = LAB.module("launch")
    log = []
    monkeypatch.setattr(launch, "function", lambda *a, **kw: "f")
    monkeypatch.setattr(launch, "cubin_for", lambda kernel, func=None: Path("h6.cubin"))
    monkeypatch.setattr(launch, "_sm_count", lambda: 132)
    monkeypatch.setattr(launch, "_scratch", lambda purpose, nbytes, fill=None: log.append(("scratch", purpose, nbytes, fill)) or 4096)
    monkeypatch.setattr(launch, "_map", lambda ptr, dtype, rows, cols, box_rows, box_cols, pitch:
                        ("map", ptr, dtype, rows, cols, box_rows, box_cols, pitch))
    monkeypatch.setattr(launch, "_copy_step", lambda *a: (lambda: log.append(("copy",) + a[:-1])))

    def prepared(f, grid, block, args, smem, stream):
        return lambda: log.append(("launch", grid, args[-1]))
    monkeypatch.setattr(launch, "prepared_launch", prepared)
    launch._PREPARED.clear()
    yield launch, log
    launch._PREPARED.clear()


def test_h6s_hook_describes_c_in_the_kernels_box_when_its_pitch_allows(faked):
    launch, log = faked
    launch.tma_persistent_store(H6, None, 1000, 520, 64, 0x1000, 0x2000, 0x3000, 1.0, 0.0, None)
    assert log == [("launch", (min(8 * 3, 132),), ("map", 0x3000, "float32", 1000, 520, ROWS, COLS, 520))]


@pytest.mark.parametrize("N", [1, 3, 127, 129])
def test_h6s_hook_stores_through_a_padded_c_when_n_is_not_a_multiple_of_4(faked, N):
    """TMA needs a row pitch of a multiple of 16 bytes: the kernel writes a scratch C whose pitch is N
    rounded up to 4 floats, and a copy after the launch (same stream, inside the timing) moves the N
    columns of each of the M rows into C."""
    launch, log = faked
    M, pitch = 300, (N + 3) // 4 * 4
    launch.tma_persistent_store(H6, None, M, N, 64, 0x1000, 0x2000, 0x3000, 1.0, 0.0, None)
    scratch = [e for e in log if e[0] == "scratch"]
    assert ("scratch", "C padded", M * pitch * 4, 0xFF) in scratch     # poisoned: a missed store reads NaN
    steps = [e for e in log if e[0] != "scratch"]
    assert steps[-2][0] == "launch" and steps[-2][2] == ("map", 4096, "float32", M, N, ROWS, COLS, pitch)
    assert steps[-1] == ("copy", 0x3000, N * 4, 4096, pitch * 4, N * 4, M)   # dst, pitch, src, pitch, width, rows


def test_h6s_hook_takes_the_padded_path_for_a_c_that_is_not_16_byte_aligned(faked):
    launch, log = faked
    launch.tma_persistent_store(H6, None, 256, 256, 64, 0x1000, 0x2000, 0x3008, 1.0, 0.0, None)
    assert log[-1] == ("copy", 0x3008, 256 * 4, 4096, 256 * 4, 256 * 4, 256)


# --- h6_tf32: B^T's fragments from B's tile, C^T's values into C's chunks ---------------------------------
def swizzled(row, col):
    """h6_tf32.cu's swizzled(): byte offset of float (row, col) in a 128-byte-row tile, TMA's swizzle."""
    return row * 128 + ((((col >> 2) ^ row) & 7) << 4) + ((col & 3) << 2)


def fragment_loads(warp, lane):
    """(byte offset in the B tile of the consumer's panel, (k, n)) of a[0..3] of one 8-deep slice:
    h6_tf32's `off` and the register-A layout of hopper_ptx.cuh (n = 16 warp + lane / 4 + 8 (v % 2),
    k = lane % 4 + 4 (v / 2)); n counted from the consumer's first column, the panel 32 columns wide."""
    g, q, col = lane // 4, lane % 4, 16 * (warp % 2) + lane // 4
    out = []
    for v, (k, c) in enumerate([(q, col), (q, col + 8), (q + 4, col), (q + 4, col + 8)]):
        out.append((swizzled(k, c) + (warp // 2) * 4096, (k, 16 * warp + g + 8 * (v % 2))))
    return out


def test_h6_tf32s_fragment_loads_read_the_elements_the_wgmma_layout_asks_for():
    """Each a[v] address, unswizzled, is B's element (k, n) of the register layout: row k of the panel,
    column n - 32 panel; a warpgroup's 128 threads x 4 values cover the 64 x 8 slice exactly once."""
    seen = set()
    for warp in range(4):
        for lane in range(32):
            for addr, (k, n) in fragment_loads(warp, lane):
                panel, inside = divmod(addr, 4096)
                logical = banks.xor_swizzle(inside)
                assert (panel, divmod(logical, 128)) == (n // 32, (k, 4 * (n % 32))), (warp, lane, k, n)
                seen.add((k, n))
    assert seen == {(k, n) for k in range(8) for n in range(64)}


def test_h6_tf32s_fragment_loads_cost_two_wavefronts_each():
    """An LDS of one a[v] across a warp: 8 consecutive n in each of 4 rows k. Rows k and k ^ 1 share their
    pieces under the swizzle: 2-way, 2 wavefronts where 1 would do (the header's price)."""
    for warp in range(4):
        for v in range(4):
            a = banks.analyze([fragment_loads(warp, lane)[v][0] for lane in range(32)], width=4)
            assert (a.wavefronts, a.ideal) == (2, 1), (warp, v, a)


def epilogue_store(warp, lane, j):
    """(byte offset in the chunk pair, (row m in the step's 64, column n in the consumer's 64)) where
    h6_tf32 stores accumulator d[j] (j < 32: the first step; the others repeat it 64 rows down)."""
    g, q = lane // 4, lane % 4
    r = 8 * (j // 4) + 2 * q + j % 2
    cc = 16 * (warp % 2) + g + 8 * ((j // 2) % 2)
    return (warp // 2) * 8192 + swizzled(r, cc), (8 * (j // 4) + 2 * q + j % 2, 16 * warp + g + 8 * ((j // 2) % 2))


def test_h6_tf32s_epilogue_puts_each_value_of_c_transposed_at_its_place_once():
    """Accumulator d[j] is C^T's (n, m), n = 16 warp + lane / 4 + 8 ((j/2)%2), m = 8 (j/4) + 2 (lane%4) + j%2:
    stored at C's (m, n) in chunk n // 32 of the pair (TMA reads it back unswizzled), every one of the
    step's 64 x 64 values exactly once."""
    seen = set()
    for warp in range(4):
        for lane in range(32):
            for j in range(32):
                addr, (m, n) = epilogue_store(warp, lane, j)
                chunk, inside = divmod(addr, 8192)
                assert (chunk, divmod(banks.xor_swizzle(inside), 128)) == (n // 32, (m, 4 * (n % 32)))
                seen.add((m, n))
    assert seen == {(m, n) for m in range(64) for n in range(64)}


def test_h6_tf32s_epilogue_stores_are_conflict_free():
    """One STS across a warp writes 4 rows (2 apart) x 8 columns: the swizzle spreads them over all 32
    banks, one wavefront each."""
    for warp in range(4):
        for j in range(32):
            a = banks.analyze([epilogue_store(warp, lane, j)[0] for lane in range(32)], width=4)
            assert (a.wavefronts, a.ideal) == (1, 1), (warp, j, a)


@pytest.mark.parametrize("N", [520, 129])
def test_h6_tf32s_hook_maps_a_b_and_c_as_stored(faked, N):
    """No transpose: A (M x K) in boxes of 32 x BM, B (K x N) in boxes of 32 columns x BK rows (a padded
    copy first when N % 4), C through _c_map (padded and copied back when N % 4)."""
    launch, log = faked
    seen = []
    k = LAB.kernel("h6_tf32")
    orig = launch._map

    def record(*a):
        seen.append(a)
        return orig(*a)
    launch._map = record
    try:
        launch.tf32_registers_persistent(k, None, 300, N, 264, 0x1000, 0x2000, 0x3000, 1.0, 0.0, None)
    finally:
        launch._map = orig
    pitch = (N + 3) // 4 * 4
    b_ptr = 0x2000 if pitch == N else 4096
    assert seen[0] == (0x1000, "float32", 300, 264, 256, 32, 264)
    assert seen[1] == (b_ptr, "float32", 264, N, 32, 32, pitch)
    assert seen[2][2:] == (300, N, ROWS, COLS, pitch)
    steps = [e for e in log if e[0] != "scratch"]
    launches = [e for e in steps if e[0] == "launch"]
    assert len(launches) == 1 and launches[0][1] == ((300 + 255) // 256 * ((N + 127) // 128),)
    copies = [e for e in steps if e[0] == "copy"]
    assert len(copies) == (0 if pitch == N else 2)            # B in, C out
