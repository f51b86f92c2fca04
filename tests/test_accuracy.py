"""`make accuracy` (common/accuracy.py): the metric, the inputs, the arguments, the tables and the chart
on synthetic data here; the study itself and the device split on a GPU."""
import argparse
import ctypes
import json

import numpy as np
import pytest

from common import accuracy as acc
from common.errors import CourseError
from common.lab import load
from common.precision import precision, tf32_round, tf32_split
from common.testing import needs_gpu

LAB7A = load("lab07a-tf32-tensor-cores")


def args(**kw):
    return argparse.Namespace(**{"ks": None, "quick": False, "size": None, **kw})


def test_the_two_distributions_are_what_the_study_says():
    rng = np.random.default_rng(0)
    n = acc.draw("normal", 400, 500, rng)
    assert n.dtype == np.float32 and n.shape == (400, 500) and n.flags.c_contiguous
    assert abs(float(n.std()) - 1) < 0.02 and abs(float(n.mean())) < 0.02
    w = acc.draw("wide", 400, 500, rng)
    mag = np.abs(w.astype(np.float64))
    assert mag.min() >= 0.999e-3 and mag.max() <= 1.001e3
    assert 0.45 < np.mean(w > 0) < 0.55                          # random signs
    per_decade = np.histogram(np.log10(mag), bins=6, range=(-3, 3))[0] / mag.size
    assert np.all(np.abs(per_decade - 1 / 6) < 0.01)             # log-uniform: as many in each decade
    with pytest.raises(CourseError, match="no distribution"):
        acc.draw("uniform", 2, 2, rng)


def test_errors_are_relative_to_abs_a_times_abs_b_element_by_element():
    ref = np.array([[1.0, -2.0], [0.0, 4.0]])
    abs_ref = np.array([[1.0, 4.0], [10.0, 8.0]])                # |A|.|B|: a cancelled element has a 0 ref
    C = (ref + np.array([[1e-6, -4e-6], [1e-5, 0.0]])).astype(np.float32)
    e = acc.relative_errors(C, ref, abs_ref)
    exact = np.abs(C.astype(np.float64) - ref) / abs_ref
    assert e["max"] == pytest.approx(exact.max()) and e["max"] == pytest.approx(1e-6, rel=0.05)
    assert e["rms"] == pytest.approx(np.sqrt(np.mean(exact ** 2)))
    C[0, 1] = np.nan
    assert acc.relative_errors(C, ref, abs_ref)["max"] == np.inf     # a NaN is never a small error


def test_the_metric_tells_one_tf32_pass_from_the_split_on_synthetic_results():
    """What the study will show, on numpy models of the methods: 1xTF32's error is hundreds of times
    3xTF32's, and 3xTF32 (exact accumulation) is within a few times float32's own rounding."""
    rng = np.random.default_rng(1)
    A, B = acc.draw("wide", 64, 512, rng), acc.draw("wide", 512, 64, rng)
    ref, abs_ref = acc.reference(A, B)
    one = acc.relative_errors(tf32_round(A).astype(np.float64) @ tf32_round(B).astype(np.float64), ref, abs_ref)
    (Ab, As), (Bb, Bs) = tf32_split(A), tf32_split(B)
    f = [x.astype(np.float64) for x in (Ab, As, Bb, Bs)]
    three = acc.relative_errors((f[0] @ f[2] + f[0] @ f[3] + f[1] @ f[2]).astype(np.float32), ref, abs_ref)
    fp32 = acc.relative_errors(ref.astype(np.float32), ref, abs_ref)    # float32's rounding of the result alone
    assert one["rms"] > 100 * three["rms"] and three["rms"] < 10 * fp32["rms"]
    assert three["max"] <= acc.bound(precision("fp32_3xtf32"), 512)


def test_ks_come_from_the_arguments_or_the_defaults():
    assert acc.ks_for(args()) == [256, 1024, 4096, 16384, 65536]
    assert acc.ks_for(args(quick=True)) == [256, 1024, 4096]
    assert acc.ks_for(args(ks="4096, 256,256")) == [256, 4096]
    for bad in ("abc", "0", "-5", "256,x", f"{2 ** 21}", ","):
        with pytest.raises(CourseError, match="KS"):
            acc.parse_ks(bad)


def test_the_lab_declares_its_rows_and_a_lab_without_them_is_told_what_to_add():
    assert [k.name for k in acc.study_rows(LAB7A)] == ["k7", "k8", "k8[KCHUNK65536]"]
    assert acc.study_rows(LAB7A)[2].defines == {"KCHUNK": 65536}          # a build: one chain over all of K
    names = [m["name"] for m in acc.methods(LAB7A, acc.study_rows(LAB7A))]
    assert names[:3] == ["cuBLAS SGEMM", "cuBLAS TF32", "cuBLAS 3xTF32 (3 calls)"]
    with pytest.raises(CourseError, match="declares no rows") as e:
        acc.study_rows(load("lab07-matmul-registers"))
    assert "ACCURACY_ROWS" in e.value.hint


def test_bad_arguments_are_told_before_the_gpu_is_looked_for(monkeypatch):
    def no_gpu(*a, **k):
        raise AssertionError("the GPU was looked for before the arguments were checked")
    monkeypatch.setattr("common.measure.needs_gpu", no_gpu)
    with pytest.raises(CourseError, match="KS"):
        acc.accuracy(LAB7A, args(ks="12x"))
    with pytest.raises(CourseError, match="SIZE"):
        acc.accuracy(LAB7A, args(size=-1))


def test_the_bound_each_method_is_held_to_is_its_precisions():
    p3, tf = precision("fp32_3xtf32"), precision("tf32_tensor")
    assert acc.bound(p3, 256) == pytest.approx(2 * 2.0 ** -22 + 2.0 ** -44 + (1 + 2.0 ** -8) * 768 * 2.0 ** -22, rel=1e-3)
    assert acc.bound(tf, 256) > 100 * acc.bound(p3, 1) and acc.bound(p3, 65536) < 0.05


def synthetic_record(outside=False):
    results = []
    for kind in acc.DISTRIBUTIONS:
        for K in (256, 4096):
            for name, scale in (("cuBLAS SGEMM", 1.0), ("cuBLAS TF32", 300.0), ("k8", 2.0)):
                mx, rms = 1e-7 * scale * (K / 256) ** 0.5, 2e-8 * scale
                results.append({"distribution": kind, "method": name, "M": 8, "N": 8, "K": K, "max": mx,
                                "rms": rms, "bound": 1.0, "within_bound": not (outside and name == "k8")})
    return {"lab": "labx", "gpu": {"name": "Test GPU"}, "distributions": acc.DISTRIBUTIONS, "ks": [256, 4096],
            "size": 8, "baseline": "cuBLAS SGEMM", "results": results}


def test_the_table_gives_sgemms_errors_and_every_other_method_as_multiples_of_them():
    text = acc.summary_tables(synthetic_record())
    lines = text.splitlines()
    assert lines[0].startswith("N(0, 1), 8 x 8 x K") and "K = 256" in lines[1] and "K = 4096" in lines[1]
    sgemm = next(ln for ln in lines if ln.startswith("cuBLAS SGEMM"))
    assert "1.0e-07 / 2.0e-08" in sgemm and "4.0e-07 / 2.0e-08" in sgemm      # K = 256, 4096
    assert "300x / 300x" in next(ln for ln in lines if ln.startswith("cuBLAS TF32"))
    assert "2.0x / 2.0x" in next(ln for ln in lines if ln.startswith("k8"))
    assert sum(ln.startswith("k8") for ln in lines) == 2                  # one table per distribution
    assert text.endswith("every result within its method's bound")
    header = lines[1]
    assert all(len(ln.rstrip()) <= len(header) + 20 for ln in lines[1:5])   # aligned columns, no ragged rows
    flagged = acc.summary_tables(synthetic_record(outside=True))
    assert "2.0x / 2.0x !" in flagged and "over the method's bound" in flagged


def test_the_chart_has_a_panel_per_distribution(tmp_path):
    path = acc.accuracy_chart(synthetic_record(), tmp_path / "acc.png")
    assert path.exists() and path.stat().st_size > 10_000
    json.dumps(synthetic_record())                                    # the record is plain JSON


# --- on a GPU ----------------------------------------------------------------------------------

@needs_gpu
def test_the_device_split_is_the_host_split_bit_for_bit():
    import pycuda.driver as cuda
    from common.cublas import Cublas
    comp = acc.composed_3xtf32(Cublas())
    x = np.concatenate([acc.draw("wide", 1, 100000, np.random.default_rng(5)).ravel(),
                        np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 3e38, -3e-30], np.float32)])
    big, small = comp._scratch(x.size)[:2]
    x_dev = cuda.to_device(x)
    comp.split.prepared_call((64, 1, 1), (256, 1, 1), int(x_dev), big, small, x.size)
    got_big, got_small = np.empty_like(x), np.empty_like(x)
    cuda.memcpy_dtoh(got_big, big)
    cuda.memcpy_dtoh(got_small, small)
    want_big, want_small = tf32_split(x, ties="away")
    same = ~np.isnan(x)                         # a NaN's big is some finite number, its small NaN
    assert np.array_equal(got_big[same].view(np.uint32), want_big[same].view(np.uint32))
    assert np.array_equal(got_small[same].view(np.uint32), want_small[same].view(np.uint32))
    assert np.all(np.isfinite(got_big[~same])) and np.all(np.isnan(got_small[~same]))


@needs_gpu
def test_a_quick_study_measures_every_method_within_its_bound(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(LAB7A, "results_dir", tmp_path)
    record = acc.accuracy(LAB7A, args(ks="256,2048", size=128))
    from common.cublas import Cublas
    from common.measure import cublas_unavailable
    methods = {r["method"] for r in record["results"]}
    emulated = set() if cublas_unavailable(precision("fp32_bf16x9"), Cublas()) else {"cuBLAS FP32 emulated (BF16x9)"}
    assert methods == {"cuBLAS SGEMM", "cuBLAS TF32", "cuBLAS 3xTF32 (3 calls)", "k7", "k8", "k8[KCHUNK65536]"} | emulated
    assert all(r["within_bound"] for r in record["results"])
    at = {(r["distribution"], r["method"], r["K"]): r for r in record["results"]}
    for kind in acc.DISTRIBUTIONS:
        for K in (256, 2048):
            # the split recovers FP32's accuracy: far below one TF32 pass
            assert at[kind, "k8", K]["rms"] * 30 < at[kind, "cuBLAS TF32", K]["rms"]
            assert at[kind, "cuBLAS 3xTF32 (3 calls)", K]["rms"] * 30 < at[kind, "cuBLAS TF32", K]["rms"]
    assert list(tmp_path.glob("lab07a-accuracy_*.json")) and list(tmp_path.glob("lab07a-accuracy_*.png"))


def test_the_3xtf32_ladder_is_timed_against_sgemm_beside_cublas_tf32_and_the_three_calls():
    """lab 7a's bench: k8's % of cuBLAS is of SGEMM (its precision's baseline), the extra rows are
    cuBLAS TF32 and the composition (split included and pre-split), and none counts as the ladder's best
    kernel, however fast."""
    from common import records
    from common.measure import ladder_info
    prec = LAB7A.ladder_precision("3xtf32")
    assert prec.cublas_call == "sgemm" and prec.baseline == "cuBLAS SGEMM"
    assert LAB7A.option("EXTRA_BASELINES")["3xtf32"] == ["tf32_tensor", "tf32x3_cublas", "tf32x3_cublas_presplit", "fp32_bf16x9"]
    assert precision("tf32x3_cublas").cublas_call == "accuracy:composed_3xtf32"
    res = [{"ladder": "3xtf32", "kernel": name, "variant": "", "size": 8192, "tflops": tf, "check_ok": True}
           for name, tf in (("cuBLAS", 51.0), ("cuBLAS TF32", 400.0), ("cuBLAS 3xTF32 (3 calls)", 95.0),
                            ("cuBLAS 3xTF32 (3 calls, pre-split)", 130.0), ("k8", 70.0))]
    rec = {"sizes": [8192], "ladders": {"3xtf32": ladder_info(LAB7A, "3xtf32", {})}, "results": res}
    (row,) = records.comparisons(rec, lab=LAB7A)
    assert "(k8) / cuBLAS SGEMM" in row["comparison"] and row["ratio"] == pytest.approx(70 / 51)


def test_k8_is_checked_with_the_3xtf32_bound_on_the_gpu_tests_shapes():
    k = LAB7A.kernel("k8")
    assert k.prec.name == "fp32_3xtf32" and k.roundoff == 2.0 ** -22
    assert k in LAB7A.own()                     # lab 7a's GPU tests parametrize over LAB.own()


def test_the_whole_study_on_numpy_models_of_the_methods(tmp_path, monkeypatch, capsys):
    """accuracy() end to end without a GPU: cuBLAS, the lab's kernels and the device are numpy models
    (FP32 BLAS, TF32 rounding, the split); the record, the table, the chart and the verdicts are real."""
    def model(kind):
        def run(M, N, K, a, b, c):
            if kind == "fp32":
                c[:] = a @ b                                         # float32 BLAS
            elif kind == "tf32":
                c[:] = tf32_round(a).astype(np.float64) @ tf32_round(b).astype(np.float64)
            else:
                (Ab, As), (Bb, Bs) = tf32_split(a), tf32_split(b)
                f = [x.astype(np.float64) for x in (Ab, As, Bb, Bs)]
                c[:] = (f[1] @ f[2] + f[0] @ f[3] + f[0] @ f[2]).astype(np.float32)
        return run

    class FakeBlas:
        path, version = "numpy", 0
        sgemm, tf32gemm = staticmethod(model("fp32")), staticmethod(model("tf32"))

    monkeypatch.setattr("common.measure.needs_gpu", lambda *a, **k: {"name": "Numpy GPU", "arch": "sm_90"})
    monkeypatch.setattr("common.cublas.Cublas", FakeBlas)
    monkeypatch.setattr(acc, "composed_3xtf32", lambda blas: model("3x"))
    monkeypatch.setattr(LAB7A, "build", lambda *a, **k: {})
    monkeypatch.setattr(LAB7A, "results_dir", tmp_path)
    kernels = {"k7": "tf32", "k8": "3x"}
    monkeypatch.setattr(LAB7A, "launcher", lambda k, M, N, K: (lambda a, b, c: model(kernels[k.base_name])(M, N, K, a, b, c)))

    def on_host(run, M, N, A, B, ref, abs_ref):
        C = np.full((M, N), np.nan, np.float32)
        run(A, B, C)
        return acc.relative_errors(C, ref, abs_ref)
    monkeypatch.setattr(acc, "measure_one", on_host)

    record = acc.accuracy(LAB7A, args(ks="64,512", size=48))
    out = capsys.readouterr().out
    assert "every result within its method's bound" in out and "full data:" in out
    at = {(r["distribution"], r["method"], r["K"]): r for r in record["results"]}
    assert len(at) == 2 * 2 * 6
    for kind in acc.DISTRIBUTIONS:
        for K in (64, 512):
            assert at[kind, "k8", K]["max"] == at[kind, "cuBLAS 3xTF32 (3 calls)", K]["max"]     # the same model
            assert at[kind, "cuBLAS TF32", K]["rms"] > 100 * at[kind, "k8", K]["rms"]
    (path,) = tmp_path.glob("lab07a-accuracy_numpy-gpu_*.json")
    saved = json.loads(path.read_text())
    assert saved["run"]["commit"] and saved["gpu"]["name"] == "Numpy GPU" and saved["ks"] == [64, 512]
    assert saved["methods"]["k8"] == LAB7A.kernel("k8").title
    assert path.with_suffix(".png").exists()

    # a method outside its bound is a failure, told after the record is written
    kernels["k8"] = "tf32"
    with pytest.raises(CourseError, match="outside their bound") as e:
        acc.accuracy(LAB7A, args(ks="64", size=48))
    assert "k8" in e.value.message and "cuBLAS TF32" not in e.value.message
    assert len(list(tmp_path.glob("lab07a-accuracy_numpy-gpu_*-2.json"))) == 1      # the first one kept


def test_the_benchs_extra_row_finds_the_three_call_composition_through_its_precision(monkeypatch):
    """Measurer times an extra baseline as precision(x).cublas(blas)(M, N, K, a, b, c): for
    tf32x3_cublas that is common.accuracy.composed_3xtf32(blas), made once per cuBLAS handle."""
    made = []

    class FakeComposed:
        def __init__(self, blas):
            made.append(blas)

    monkeypatch.setattr(acc, "_Composed", FakeComposed)

    class Blas:
        sgemm = "the sgemm method"
    blas = Blas()
    call = precision("tf32x3_cublas").cublas(blas)
    assert isinstance(call, FakeComposed) and precision("tf32x3_cublas").cublas(blas) is call and made == [blas]
    assert precision("fp32_3xtf32").cublas(blas) == "the sgemm method"


# --- cuBLAS's own FP32 emulation: an optional baseline ------------------------------------------------

def test_the_bf16x9_bound_covers_both_readings_of_the_emulation():
    """common/precision.py's fp32_bf16x9 bound against numpy models of the two readings of BF16x9: all
    nine products of the three BF16 parts, and the six that leave out the three smallest, each summed
    exactly; the bound must hold for both and be at least FP32's."""
    from common.precision import bf16_bits, bf16_values
    rng = np.random.default_rng(3)
    p = precision("fp32_bf16x9")
    assert p.optional and p.products_per_k == 9 and p.cublas_call == "sgemm_bf16x9"

    def parts(x):                         # x = x0 + x1 + x2, each a BF16 number (8 significant bits)
        out, rest = [], x.astype(np.float64)
        for _ in range(3):
            part = bf16_values(bf16_bits(rest.astype(np.float32)))
            out.append(part)
            rest = rest - part
        assert np.array_equal(sum(out), x.astype(np.float64))     # exact for FP32's 24 bits
        return out
    for K in (1, 64, 4096):
        A = rng.uniform(-1, 1, (32, K)).astype(np.float32)
        B = rng.uniform(-1, 1, (K, 32)).astype(np.float32)
        ref, abs_ref = A.astype(np.float64) @ B.astype(np.float64), np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))
        a, b = parts(A), parts(B)
        six = sum(a[i] @ b[j] for i in range(3) for j in range(3) if i + j < 3)
        nine = sum(a[i] @ b[j] for i in range(3) for j in range(3))
        tol = p.tolerance(K, abs_ref)
        assert np.all(np.abs(six - ref) <= tol) and np.all(np.abs(nine - ref) <= tol)
        assert np.all(tol >= precision("fp32").tolerance(K, abs_ref))


def test_sgemm_bf16x9_asks_for_the_emulation_on_a_handle_of_its_own():
    from common import cublas as cb
    calls = []

    class Lib:
        def cublasCreate_v2(self, ref):
            calls.append("create")
            return 0

        def cublasSetEmulationStrategy(self, h, strategy):
            calls.append(("strategy", strategy))
            return 0

        def cublasGemmEx(self, h, *args):
            calls.append(("gemm", h, args[-2]))
            return 0
    blas = cb.Cublas.__new__(cb.Cublas)
    blas.lib, blas.version, blas.handle = Lib(), 130000, "main handle"
    blas._one, blas._zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
    blas.sgemm_bf16x9(64, 64, 64, 1, 2, 3)
    blas.sgemm_bf16x9(64, 64, 64, 1, 2, 3)
    assert calls[:2] == ["create", ("strategy", cb.CUBLAS_EMULATION_STRATEGY_EAGER)]
    gemms = [c for c in calls if c[0] == "gemm"]
    assert len(gemms) == 2 and all(g[1] is blas._emulation_handle and g[1] != "main handle" for g in gemms)
    assert all(g[2] == cb.CUBLAS_COMPUTE_32F_EMULATED_16BFX9 == 78 for g in gemms)


def test_an_old_cublas_without_emulation_is_skipped_saying_why_and_a_required_call_is_never_probed():
    from common import cublas as cb
    from common.measure import cublas_unavailable
    blas = cb.Cublas.__new__(cb.Cublas)
    blas.lib, blas.version = object(), 11000          # no cublasSetEmulationStrategy
    why = cublas_unavailable(precision("fp32_bf16x9"), blas)
    assert why and "no FP32 emulation" in why and "11000" in why

    class Binding:                                    # a binding without the method at all
        pass
    assert "sgemm_bf16x9" in cublas_unavailable(precision("fp32_bf16x9"), Binding())
    assert cublas_unavailable(precision("fp32"), Binding()) is None


def test_the_pre_split_row_splits_once_per_set_of_inputs_and_runs_the_three_products_every_call(monkeypatch):
    """tf32x3_cublas_presplit: the three GEMMs alone, timed as a caller that keeps its operands split
    would pay them. Each call of its factory is a fresh _PreSplit (no split outlives a timing loop's
    inputs), splitting again when the pointers or the shape change."""
    log = []

    class FakeComposed:
        class cuda:
            @staticmethod
            def mem_alloc(nbytes):
                log.append(("alloc", nbytes))
                return len(log)

        def split_into(self, parts, M, N, K, a, b):
            log.append(("split", a, b, M, N, K))

        def products(self, parts, M, N, K, c):
            assert len(parts) == 4
            log.append(("gemms", c))

    composed = FakeComposed()
    monkeypatch.setattr(acc, "composed_3xtf32", lambda blas: composed)
    p = precision("tf32x3_cublas_presplit")
    assert p.baseline == "cuBLAS 3xTF32 (3 calls, pre-split)" and p.cublas_call == "accuracy:composed_3xtf32_presplit"
    assert p.tolerance(100, np.ones(1)) == precision("tf32x3_cublas").tolerance(100, np.ones(1))   # the same sums
    call = p.cublas(object())
    assert call is not p.cublas(object())
    for c in (1, 2, 3):
        call(8, 16, 4, 100, 200, c)
    assert [x[0] for x in log] == ["alloc"] * 4 + ["split", "gemms", "gemms", "gemms"]
    assert ("alloc", 4 * 64) in log                        # max(M K, K N) floats a part
    log.clear()
    call(8, 16, 4, 101, 200, 4)                            # other inputs: split again
    call(8, 16, 8, 101, 200, 5)                            # another shape: again
    assert [x[0] for x in log].count("split") == 2 and log[-1] == ("gemms", 5)


@needs_gpu
def test_the_pre_split_row_computes_what_the_three_calls_compute_bit_for_bit():
    import pycuda.driver as cuda
    from common.check import reference
    from common.cublas import Cublas
    blas, rng = Cublas(), np.random.default_rng(11)
    M, N, K = 129, 67, 300
    A, B = acc.draw("wide", M, K, rng), acc.draw("wide", K, N, rng)
    a, b = cuda.to_device(A), cuda.to_device(B)
    got = {}
    for name in ("tf32x3_cublas", "tf32x3_cublas_presplit"):
        call, c = precision(name).cublas(blas), cuda.mem_alloc(M * N * 4)
        for _ in range(2):                                 # the second call reuses the pre-split parts
            cuda.memset_d32(c, 0x7FC00000, M * N)
            call(M, N, K, a, b, c)
        got[name] = cuda.from_device(c, (M, N), np.float32)
    assert np.array_equal(got["tf32x3_cublas"].view(np.uint32), got["tf32x3_cublas_presplit"].view(np.uint32))
    ref, abs_ref = reference(A, B)
    assert np.all(np.abs(got["tf32x3_cublas"] - ref) <= precision("tf32x3_cublas").tolerance(K, abs_ref))
