"""How lab 7c's TMA kernels are launched: the `launch_hook`s of the table (lab.py).

    tma_grid(kernel, func, M, N, K, a, b, c, alpha, beta, stream)        h2, h3: one block per tile
    tma_persistent(kernel, func, M, N, K, a, b, c, alpha, beta, stream)  h4: one block per SM
    tma_persistent_store(kernel, func, M, N, K, a, b, c, alpha, beta, stream)  h6: h4's grid, C as a
                                  TMA map too (a padded scratch C, copied back, when N % 4)
    tma_stream_k(kernel, func, M, N, K, a, b, c, alpha, beta, stream)    h7: h6 with a stream-K tail: the
                                  grid, dp_tiles (stream_k_plan), a workspace of flags and partial tiles,
                                  and a new epoch at every launch
    tma_clusters(kernel, func, M, N, K, a, b, c, alpha, beta, stream)    h5: persistent 2-block clusters
    tf32_persistent(kernel, func, M, N, K, a, b, c, alpha, beta, stream) h4_tf32: B^T, then h4's grid
    split_persistent(kernel, func, M, N, K, a, b, c, alpha, beta, stream) h4_3xtf32: A and B^T split
                                  into TF32 big and small parts, then h4's grid
    tf32_registers_persistent(...)  h6_tf32: A, B and C as maps as stored, h4's grid (no transpose)
    split_a_registers_persistent(...)  h6_3xtf32: A split into big and small parts (no transpose), B and
                                  C as maps as h6_tf32's, h4's grid
    tma_launch(kernel, M, N, K, a, b, c, stream, grid)   h2-h5's maps and launch on a grid of the
                                  caller's choosing (lab 7d's wgmma_decode: clusters along K)
    cubin_for(kernel, func)       the cubin a hook launches: the one `func` was loaded from

Which code runs. A hook launches the cubin that `func` came from (common.kernels.load_function
records it): the bench passes the row's own, the grader a student's, and the grader times the
two in one process, so everything cached here is keyed by that cubin, never by the row alone.
Without a func (lab 7d's tma_launch) it is the row's own cubin.

(h1 takes plain pointers and needs no hook: the course's default launch serves it.)

Why a hook. These kernels take two CUtensorMap parameters by value (`const __grid_constant__
CUtensorMap tmA`): 128-byte descriptors that the driver makes (cuTensorMapEncodeTiled) and that
PyCUDA can neither make nor pass. common/tensor_maps.py does both through NVIDIA's cuda-python
driver bindings in PyCUDA's own context, so the device pointers the course allocates with PyCUDA
work unchanged. Per call the hook:
  1. loads func's cubin with the driver (once per cubin; common.kernels has loaded it with PyCUDA
     too, but a PyCUDA Function does not give its CUfunction away, and cuLaunchKernel needs one);
  2. describes A and B to TMA: A (M x K, K contiguous) in boxes of BK x BM, B (K x N) in boxes of
     64 columns x BK rows, both with the 128-byte swizzle that wgmma's descriptors expect. TMA
     needs a row pitch that is a multiple of 16 bytes: K % 8 == 0 is a rule of the rows (A's pitch
     is K halves); an N that is not a multiple of 8 is served by copying B, in the same stream and
     inside what is timed, into a scratch buffer with a padded pitch (the map keeps N columns:
     TMA's out-of-bounds fill supplies the zeros past the edge, never the padding);
  3. picks the grid (per tile, persistent, or persistent clusters) and launches with
     cuLaunchKernel on the caller's stream.
All of that is worked out once per (kernel, shape, pointers, stream): a timed call replays the
prepared launch (and the copy of B or the transpose it needs), with no encoding and no argument
packing in Python. The first version did that work per call and lost 40 % at 4096^3 (0.32 ms
against 0.19): common.timing's events bracket the hook, Python included.
"""
import ctypes
import functools
import os
from pathlib import Path

import numpy as np

from common import tensor_maps as tm

SWIZZLE_HALVES = 64     # a 128-byte swizzle row: 64 halves, the box width of every FP16 map here
SWIZZLE_FLOATS = 32     # ... or 32 floats (TF32)


# --- the cubin, through the driver -------------------------------------------------------------
def cubin_of(kernel):
    """Where `make` put the row's cubin (common.lab builds the rows for sm_90a only)."""
    return kernel.cubin(kernel.build_dir, kernel.archs[0])


@functools.lru_cache(maxsize=None)
def _module(cubin, mtime):
    return tm.Module(cubin)


@functools.lru_cache(maxsize=None)
def _function(cubin, mtime, entry, smem):
    f = _module(cubin, mtime).function(entry)
    if smem > 48 * 1024:
        tm.set_dynamic_smem(f, smem)
    return f


def cubin_for(kernel, func=None):
    """The cubin to launch: the one `func` was loaded from (common.kernels.load_function keeps the
    path of every function it loads), else the row's own (cubin_of)."""
    from common import kernels
    path = kernels._cubin_of.get(id(func)) if func is not None else None
    return Path(path) if path else cubin_of(kernel)


def function(kernel, entry, smem, cubin=None):
    path = str(cubin or cubin_of(kernel))
    return _function(path, os.path.getmtime(path), entry, smem)


@functools.lru_cache(maxsize=None)
def _sm_count():
    return tm.sm_count()


@functools.lru_cache(maxsize=None)
def _clusters(cubin, mtime, entry, threads, smem):
    return tm.max_active_clusters(_function(cubin, mtime, entry, smem), (threads,), smem)


def clusters_that_fit(kernel, cubin=None):
    """How many of the kernel's clusters the device runs at once (cuOccupancyMaxActiveClusters)."""
    path = str(cubin or cubin_of(kernel))
    return _clusters(path, os.path.getmtime(path), kernel.entries[kernel.variants[0]], kernel.threads,
                     kernel.shared_bytes)


@functools.lru_cache(maxsize=256)
def _map(ptr, dtype, rows, cols, box_rows, box_cols, pitch):
    return tm.tiled_2d(ptr, np.dtype(dtype), rows, cols, box_rows, box_cols, pitch=pitch)


# --- scratch buffers (a padded copy of B, B^T for TF32), grown only ----------------------------
_SCRATCH = {}


def _scratch(purpose, nbytes, fill=None):
    """A device buffer of at least nbytes kept for `purpose`; fill: a new one has every byte set to it
    (0 for h7's flags; 0xFF, a NaN in every float, for a buffer a kernel writes by TMA: see _c_map)."""
    import pycuda.driver as cuda
    buf = _SCRATCH.get(purpose)
    if buf is None or buf[1] < nbytes:
        if buf is not None:
            cuda.Context.synchronize()          # a launch in flight may still read the old one
            buf[0].free()
        buf = (cuda.mem_alloc(nbytes), nbytes)
        if fill is not None:
            cuda.memset_d8(buf[0], fill, nbytes)
        _SCRATCH[purpose] = buf
        _PREPARED.clear()                       # prepared launches point at the old buffer
    return int(buf[0])


def _copy_pitched(dst, dst_pitch, src, src_pitch, width, rows, stream):
    """rows x width bytes from src (pitch src_pitch) to dst (pitch dst_pitch), device to device."""
    import pycuda.driver as cuda
    cp = cuda.Memcpy2D()
    cp.set_src_device(src)
    cp.set_dst_device(dst)
    cp.src_pitch, cp.dst_pitch, cp.width_in_bytes, cp.height = src_pitch, dst_pitch, width, rows
    if stream is None:
        cp(aligned=True)
    else:
        cp(stream)


def _stream(stream):
    return 0 if stream is None else int(stream.handle)


def _ptr(x):
    return ctypes.c_void_p(int(x))


def _ints(*xs):
    return [ctypes.c_int32(int(x)) for x in xs]


def cdiv(a, b):
    return (a + b - 1) // b


# --- a launch worked out once, replayed per call ------------------------------------------------
# A timed repetition (common.timing) records an event, calls the hook, records another: any Python
# work in the hook is inside the measurement once the L2 flush before it has finished. So each
# (kernel, shape, pointers, stream) gets its launches prepared once, arguments packed and all,
# and a call replays them.
_PREPARED = {}


def _driver():
    from cuda.bindings import driver
    return driver


def prepared_launch(f, grid, block, args, smem, stream):
    """go(): cuLaunchKernel(f) with `args` (ctypes values and CUtensorMaps) packed now, by value."""
    d = _driver()
    held = [(x, int(x.getPtr())) if isinstance(x, d.CUtensorMap) else (x, ctypes.addressof(x)) for x in args]
    params = (ctypes.c_void_p * len(held))(*[addr for _, addr in held])
    grid = tuple(grid) + (1,) * (3 - len(grid))
    block = tuple(block) + (1,) * (3 - len(block))
    s, addr, ok = d.CUstream(stream), ctypes.addressof(params), d.CUresult.CUDA_SUCCESS

    def go():
        err, = d.cuLaunchKernel(f, *grid, *block, smem, s, addr, 0)
        if err != ok:
            raise RuntimeError(f"cuLaunchKernel failed: {d.cuGetErrorName(err)[1]}")
    go.keep = (held, params)            # the packed arguments live as long as the launch
    return go


def _run(kernel, cubin, M, N, K, a, b, c, stream, make):
    key = (kernel.name, str(cubin), M, N, K, int(a), int(b), int(c), _stream(stream))   # no stat: a timed call
    steps = _PREPARED.get(key)
    if steps is None:
        if len(_PREPARED) > 256:
            _PREPARED.clear()
        steps = _PREPARED[key] = make()
    for step in steps:
        step()


def _copy_step(dst, dst_pitch, src, src_pitch, width, rows, stream):
    return lambda: _copy_pitched(dst, dst_pitch, src, src_pitch, width, rows, stream)


# --- FP16: h2, h3, h4, h5 ----------------------------------------------------------------------
def _fp16_steps(kernel, cubin, M, N, K, a, b, c, stream, grid, c_map=False, extra=()):
    """[copy B to a padded pitch if N % 8,] launch: A (M x K) and B (K x N) as TMA maps; with c_map,
    C (M x N, FP32) as a TMA map too, in boxes of STORE_COLS x STORE_ROWS (the kernel's constants),
    through a padded scratch C copied into C after the launch when C's pitch is not 16-byte aligned.
    extra: ctypes values passed after C (h7's), read by the driver at each launch."""
    f = function(kernel, kernel.entries[kernel.variants[0]], kernel.shared_bytes, cubin)
    bm, _ = kernel.tile
    bk = kernel.tiling.value("BK")
    pb = tm.padded_pitch(N, np.float16)
    steps, after, b = [], [], int(b)
    if pb != N:
        dst = _scratch("B padded", K * pb * 2)
        steps.append(_copy_step(dst, pb * 2, b, N * 2, N * 2, K, stream))
        b = dst
    tmA = _map(int(a), "float16", M, K, bm, SWIZZLE_HALVES, K)
    tmB = _map(b, "float16", K, N, bk, SWIZZLE_HALVES, pb)
    out = _ptr(c)
    if c_map:
        out, after = _c_map(kernel, M, N, c, stream)
    steps.append(prepared_launch(f, grid, (kernel.threads,), [*_ints(M, N, K), tmA, tmB, out, *extra],
                                 kernel.shared_bytes, _stream(stream)))
    return steps + after


def _c_map(kernel, M, N, c, stream):
    """(C as a TMA map in boxes of STORE_COLS x STORE_ROWS, the kernel's constants, [the copy after the
    launch]): through a padded scratch C, copied into C, when C's pitch or address is not 16-byte aligned."""
    pc, cc, after = tm.padded_pitch(N, np.float32), int(c), []
    if pc != N or cc % 16:
        # poisoned once, when allocated: an element the kernel's TMA store missed reaches C as NaN, and
        # compute-sanitizer's initcheck, which does not see TMA's bulk stores as writes, does not call
        # the copy below a read of uninitialised memory (thousands of reports on the H100, 2026-12-05)
        cc = _scratch("C padded", M * pc * 4, fill=0xFF)
        after.append(_copy_step(int(c), N * 4, cc, pc * 4, N * 4, M, stream))
    return _map(cc, "float32", M, N, kernel.tiling.value("STORE_ROWS"), kernel.tiling.value("STORE_COLS"), pc), after


def _tiles(kernel, M, N):
    bm, bn = kernel.tile
    return cdiv(M, bm), cdiv(N, bn)


def tma_grid(kernel, func, M, N, K, a, b, c, alpha, beta, stream):
    """h2, h3: grid (ceil(N / BN), ceil(M / BM)), one block per output tile."""
    cubin = cubin_for(kernel, func)

    def make():
        tiles_m, tiles_n = _tiles(kernel, M, N)
        return _fp16_steps(kernel, cubin, M, N, K, a, b, c, stream, (tiles_n, tiles_m))
    _run(kernel, cubin, M, N, K, a, b, c, stream, make)


def tma_persistent(kernel, func, M, N, K, a, b, c, alpha, beta, stream):
    """h4: min(#SMs, tiles) blocks, each walking tiles blockIdx.x, + gridDim.x, ..."""
    cubin = cubin_for(kernel, func)

    def make():
        tiles_m, tiles_n = _tiles(kernel, M, N)
        return _fp16_steps(kernel, cubin, M, N, K, a, b, c, stream, (min(tiles_m * tiles_n, _sm_count()),))
    _run(kernel, cubin, M, N, K, a, b, c, stream, make)


def tma_persistent_store(kernel, func, M, N, K, a, b, c, alpha, beta, stream):
    """h6: h4's persistent grid; the kernel stores C by TMA, so C is a map as well."""
    cubin = cubin_for(kernel, func)

    def make():
        tiles_m, tiles_n = _tiles(kernel, M, N)
        return _fp16_steps(kernel, cubin, M, N, K, a, b, c, stream, (min(tiles_m * tiles_n, _sm_count()),),
                           c_map=True)
    _run(kernel, cubin, M, N, K, a, b, c, stream, make)


# --- h7: h6 with a stream-K tail -------------------------------------------------------------------
MIN_SK_ITERS = 4        # fewer k-iterations a block than this in the stream-K share: stream-K off (its
                        # fix-up, a partial tile through L2, would cost more than the idle SMs it saves;
                        # an estimate, to be measured: h7_stream_k.cu's header)
SK_TAIL_MAX = 0.5       # a last round of at least this share of the SMs: stream-K off (stream_k_plan)
_EPOCH = [0]            # the last epoch handed to an h7 launch, for every shape: they share the flags


def stream_k_plan(tiles, kt, sms, min_iters=None):
    """(grid, dp_tiles) of h7 for `tiles` output tiles of `kt` k-iterations on `sms` SMs: stream-K on
    (grid = sms, dp_tiles = sms * floor(tiles / sms): the full rounds walked whole, the rest shared out
    by k-iterations) unless the SMs divide the tiles, or the last round is at least half full, or each
    block's share of the rest would be under MIN_SK_ITERS k-iterations, or the rest's iterations would
    pass 32-bit arithmetic (h7_schedule.cuh); off: h6's grid, min(sms, tiles), every tile whole.
    Half full: the idle SMs of such a round cost less than stream-K's schedule and fix-up (taken apart at
    4096^3: NOTES.md, "h7's stream-K taken apart"). Measured on the H100 (132 SMs,
    2026-12-05) with stream-K on: h7 72.7 % of cuBLAS at 2048^3 (128 tiles: a round of 128) against h6's
    100.2, 91.9 % at 4096^3 (a last round of 116) against 99.3; the most those idle SMs could give back
    was 3 %. CUTLASS's SM90 stream-K scheduler keeps the same rule."""
    min_iters = MIN_SK_ITERS if min_iters is None else min_iters
    dp = sms * (tiles // sms)
    rest = (tiles - dp) * kt
    if tiles % sms == 0 or tiles % sms >= SK_TAIL_MAX * sms or rest < min_iters * sms or rest >= 2 ** 31:
        return min(sms, tiles), tiles
    return sms, dp


def _next_epoch():
    """1, 2, ..., 2^32 - 1, 1, ...: never 0, the value of a zeroed flag."""
    _EPOCH[0] = _EPOCH[0] % 0xFFFFFFFF + 1
    return _EPOCH[0]


def stream_k_workspace_bytes(kernel, sms):
    """(bytes, offset of the partials): CONSUMERS flags a block (unsigned, rounded up to 256 bytes),
    then a BM x BN FP32 slot a block; sized for a grid of `sms` blocks, the largest h7 launches."""
    bm, bn = kernel.tile
    flags = cdiv(kernel.tiling.value("CONSUMERS") * sms * 4, 256) * 256
    return flags + sms * bm * bn * 4, flags


def tma_stream_k(kernel, func, M, N, K, a, b, c, alpha, beta, stream):
    """h7: stream_k_plan's grid and dp_tiles, the workspace (flags zeroed when allocated, grown only), and
    before every launch a new epoch: the kernel's flags say "done" only when they equal it, so they are
    never reset. The epoch is a ctypes value packed by address (prepared_launch): the step before the
    launch changes it, the driver reads it at the launch."""
    cubin = cubin_for(kernel, func)

    def make():
        tiles_m, tiles_n = _tiles(kernel, M, N)
        sms = _sm_count()
        grid, dp = stream_k_plan(tiles_m * tiles_n, cdiv(K, kernel.tiling.value("BK")), sms)
        nbytes, partials = stream_k_workspace_bytes(kernel, sms)
        ws = _scratch("stream-K workspace", nbytes, fill=0)
        epoch = ctypes.c_uint32(0)

        def new_epoch():
            epoch.value = _next_epoch()
        return [new_epoch] + _fp16_steps(kernel, cubin, M, N, K, a, b, c, stream, (grid,), c_map=True,
                                         extra=[*_ints(dp), _ptr(ws), _ptr(ws + partials), epoch])
    _run(kernel, cubin, M, N, K, a, b, c, stream, make)


def tma_clusters(kernel, func, M, N, K, a, b, c, alpha, beta, stream):
    """h5: 2 x min(clusters that fit at once, tile pairs) blocks; the kernel's __cluster_dims__(2, 1, 1)
    pairs consecutive blocks, and each pair walks pairs of vertically adjacent tiles."""
    cubin = cubin_for(kernel, func)

    def make():
        tiles_m, tiles_n = _tiles(kernel, M, N)
        pairs = cdiv(tiles_m, 2) * tiles_n
        return _fp16_steps(kernel, cubin, M, N, K, a, b, c, stream,
                           (2 * min(clusters_that_fit(kernel, cubin), pairs),))
    _run(kernel, cubin, M, N, K, a, b, c, stream, make)


def tma_launch(kernel, M, N, K, a, b, c, stream, grid):
    """A kernel of another lab that takes h2-h5's arguments (M, N, K, tmA, tmB, C) and tensor maps
    (A in boxes of 64 x BM, B in boxes of BK x 64, 128-byte swizzle), launched on `grid`: the row's cubin."""
    cubin = cubin_of(kernel)
    _run(kernel, cubin, M, N, K, a, b, c, stream, lambda: _fp16_steps(kernel, cubin, M, N, K, a, b, c, stream, grid))


# --- TF32: h4_tf32, h6_tf32 ----------------------------------------------------------------------
TRANSPOSE_ENTRY = "transpose_h4_tf32"


def tf32_persistent(kernel, func, M, N, K, a, b, c, alpha, beta, stream):
    """h4_tf32: Bt = B^T (N x K, pitch K rounded up to 4 floats) by the cubin's transpose kernel,
    then the GEMM on h4's persistent grid. Both are in what a call (and a timing) covers: wgmma's
    TF32 form reads only K-major operands, and a library call gets B as it is."""
    cubin = cubin_for(kernel, func)

    def make():
        f = function(kernel, kernel.entries[kernel.variants[0]], kernel.shared_bytes, cubin)
        t = function(kernel, TRANSPOSE_ENTRY, 0, cubin)
        bm, bn = kernel.tile
        pbt = tm.padded_pitch(K, np.float32)
        bt = _scratch("B transposed", N * pbt * 4)
        s = _stream(stream)
        tmA = _map(int(a), "float32", M, K, bm, SWIZZLE_FLOATS, K)
        tmBt = _map(bt, "float32", N, K, bn, SWIZZLE_FLOATS, pbt)
        tiles_m, tiles_n = _tiles(kernel, M, N)
        return [prepared_launch(t, (cdiv(N, 32), cdiv(K, 32)), (32, 8),
                                [*_ints(K, N), _ptr(b), _ptr(bt), *_ints(pbt)], 0, s),
                prepared_launch(f, (min(tiles_m * tiles_n, _sm_count()),), (kernel.threads,),
                                [*_ints(M, N, K), tmA, tmBt, _ptr(c)], kernel.shared_bytes, s)]
    _run(kernel, cubin, M, N, K, a, b, c, stream, make)


# --- 3xTF32: h4_3xtf32 -------------------------------------------------------------------------
def split_grid(M, N, K, tile):
    """Blocks of the split pass: one per tile x tile tile of A (M x K), then one per tile of B (K x N)."""
    return cdiv(K, tile) * cdiv(M, tile) + cdiv(K, tile) * cdiv(N, tile)


def split_persistent(kernel, func, M, N, K, a, b, c, alpha, beta, stream):
    """h4_3xtf32: the cubin's split kernel (Kernel.helpers["split"]) writes A_big, A_small (M x K) and
    Bt_big, Bt_small (B^T, N x K), all at a pitch of K rounded up to 4 floats, into two scratch buffers
    (each part's rows after the other's); then the GEMM on h4's persistent grid reads the four parts by
    TMA. Both launches are in what a call (and a timing) covers, as h4_tf32's transpose: a library
    call gets A and B as they are. The padded pitch serves any K (TMA's pitch is a multiple of 16
    bytes; the maps keep K columns, so TMA fills zeros past the edge, never reads the padding). With
    OVERLAP the pass splits only A's first bands (split_share) and zeroes a counter a band, and the GEMM's
    producer warps split the other bands as it runs."""
    cubin = cubin_for(kernel, func)

    def make():
        f = function(kernel, kernel.entries[kernel.variants[0]], kernel.shared_bytes, cubin)
        split = function(kernel, kernel.helpers["split"], 0, cubin)
        bm, bn = kernel.tile
        pk = tm.padded_pitch(K, np.float32)
        a_parts = _scratch("A split", 2 * M * pk * 4)
        bt_parts = _scratch("B split, transposed", 2 * N * pk * 4)
        s = _stream(stream)
        maps = [_map(a_parts, "float32", M, K, bm, SWIZZLE_FLOATS, pk),                  # A_big
                _map(a_parts + M * pk * 4, "float32", M, K, bm, SWIZZLE_FLOATS, pk),     # A_small
                _map(bt_parts, "float32", N, K, bn, SWIZZLE_FLOATS, pk),                 # Bt_big
                _map(bt_parts + N * pk * 4, "float32", N, K, bn, SWIZZLE_FLOATS, pk)]    # Bt_small
        tiles_m, tiles_n = _tiles(kernel, M, N)
        grid = min(tiles_m * tiles_n, _sm_count())
        bands, first_band = split_share(kernel, M, N, grid)
        a_rows = min(M, first_band * kernel.tiling.value("GROUP") * bm)
        counts = _scratch("A band counters", 4 * bands)
        return [prepared_launch(split, (split_grid(a_rows, N, K, kernel.tiling.value("SPLIT_TILE")),), (32, 8),
                                [*_ints(M, N, K), _ptr(a), _ptr(b), _ptr(a_parts), _ptr(bt_parts),
                                 *_ints(pk, a_rows), _ptr(counts), *_ints(bands)], 0, s),
                prepared_launch(f, (grid,), (kernel.threads,),
                                [*_ints(M, N, K), *maps, _ptr(c), _ptr(a), _ptr(a_parts), *_ints(pk),
                                 _ptr(counts), *_ints(first_band)], kernel.shared_bytes, s)]
    _run(kernel, cubin, M, N, K, a, b, c, stream, make)


def split_share(kernel, M, N, grid):
    """h4_3xtf32's split of A shared between the pass and the GEMM: (bands, first_band). A band is the
    GROUP x BM rows of A one raster band of tiles reads. The pass splits the bands the GEMM's first wave
    of `grid` tiles reads (it cannot wait for them), and all of B; the GEMM's producer warps split A's
    bands from first_band on while its consumers multiply (OVERLAP = 1). With OVERLAP = 0 the pass splits
    every band: (bands, bands)."""
    bm, bn = kernel.tile
    group = kernel.tiling.value("GROUP")
    bands = cdiv(M, group * bm)
    if not kernel.tiling.value("OVERLAP"):
        return bands, bands
    return bands, min(bands, (grid - 1) // (group * cdiv(N, bn)) + 1)   # every band but the last is full


def tf32_registers_persistent(kernel, func, M, N, K, a, b, c, alpha, beta, stream):
    """h6_tf32: no transpose. A (M x K) and B (K x N) as TMA maps as they are stored (B in boxes of
    32 columns x BK rows; a padded copy when N % 4), C as a map (_c_map), h4's persistent grid."""
    cubin = cubin_for(kernel, func)

    def make():
        f = function(kernel, kernel.entries[kernel.variants[0]], kernel.shared_bytes, cubin)
        bm, _ = kernel.tile
        pb, bb, steps = tm.padded_pitch(N, np.float32), int(b), []
        if pb != N:
            bb = _scratch("B padded", K * pb * 4)
            steps.append(_copy_step(bb, pb * 4, int(b), N * 4, N * 4, K, stream))
        tmA = _map(int(a), "float32", M, K, bm, SWIZZLE_FLOATS, K)
        tmB = _map(bb, "float32", K, N, kernel.tiling.value("BK"), SWIZZLE_FLOATS, pb)
        tmC, after = _c_map(kernel, M, N, c, stream)
        tiles_m, tiles_n = _tiles(kernel, M, N)
        steps.append(prepared_launch(f, (min(tiles_m * tiles_n, _sm_count()),), (kernel.threads,),
                                     [*_ints(M, N, K), tmA, tmB, tmC], kernel.shared_bytes, _stream(stream)))
        return steps + after
    _run(kernel, cubin, M, N, K, a, b, c, stream, make)


# --- 3xTF32 without the transpose: h6_3xtf32 --------------------------------------------------------
def split_a_grid(M, K, tile):
    """Blocks of h6_3xtf32's split pass: one per tile x tile tile of A (M x K)."""
    return cdiv(K, tile) * cdiv(M, tile)


def split_a_registers_persistent(kernel, func, M, N, K, a, b, c, alpha, beta, stream):
    """h6_3xtf32: the cubin's split kernel (Kernel.helpers["split"]) writes A_big, A_small (M x K, pitch K
    rounded up to 4 floats, each part's rows after the other's: h4_3xtf32's "A split" buffer and maps);
    B is split in the GEMM's registers, so it is mapped as stored (h6_tf32's: boxes of 32 columns x BK
    rows, a padded copy first when N % 4), C as a map (_c_map). Every step is in what a call covers."""
    cubin = cubin_for(kernel, func)

    def make():
        f = function(kernel, kernel.entries[kernel.variants[0]], kernel.shared_bytes, cubin)
        split = function(kernel, kernel.helpers["split"], 0, cubin)
        bm, _ = kernel.tile
        pk = tm.padded_pitch(K, np.float32)
        a_parts = _scratch("A split", 2 * M * pk * 4)
        s = _stream(stream)
        pb, bb, steps = tm.padded_pitch(N, np.float32), int(b), []
        if pb != N:
            bb = _scratch("B padded", K * pb * 4)
            steps.append(_copy_step(bb, pb * 4, int(b), N * 4, N * 4, K, stream))
        maps = [_map(a_parts, "float32", M, K, bm, SWIZZLE_FLOATS, pk),                  # A_big
                _map(a_parts + M * pk * 4, "float32", M, K, bm, SWIZZLE_FLOATS, pk),     # A_small
                _map(bb, "float32", K, N, kernel.tiling.value("BK"), SWIZZLE_FLOATS, pb)]  # B as stored
        tmC, after = _c_map(kernel, M, N, c, stream)
        tiles_m, tiles_n = _tiles(kernel, M, N)
        steps.append(prepared_launch(split, (split_a_grid(M, K, kernel.tiling.value("SPLIT_TILE")),), (32, 8),
                                     [*_ints(M, K), _ptr(a), _ptr(a_parts), *_ints(pk)], 0, s))
        steps.append(prepared_launch(f, (min(tiles_m * tiles_n, _sm_count()),), (kernel.threads,),
                                     [*_ints(M, N, K), *maps, tmC], kernel.shared_bytes, s))
        return steps + after
    _run(kernel, cubin, M, N, K, a, b, c, stream, make)
