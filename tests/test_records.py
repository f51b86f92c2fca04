"""Bench records read back (common/records.py) on a synthetic record: the tables, the chapter's
comparisons, the predictions table. No GPU. The recorded lab 7 record (before "ladders" was
written): labs/lab07-matmul-registers/tests/test_bench_report.py."""
import json
from types import SimpleNamespace

import pytest

from common import records
from common.precision import PRECISIONS

H200 = {"name": "NVIDIA H200", "arch": "sm_90", "sms": 132, "sm_clock_max_mhz": 1980, "driver": "580.1",
        "peaks": {"fp32": 66.9, "fp16_tensor": 1070.5, "note": ""}}


def synthetic_record(date="2026-12-01T10:00:00+00:00", commit="0123456789abcdef"):
    tflops = {("fp32", "cuBLAS"): 50.0, ("fp32", "v5"): 30.0, ("fp32", "v7"): 40.0,
              ("fp16", "cuBLAS"): 700.0, ("fp16", "t1"): 28.0, ("fp16", "t3"): 280.0}
    results = []
    for n in (1024, 4096):
        for (ladder, k), t in tflops.items():
            tf = t * (0.5 if n == 1024 else 1.0)
            base = tflops[(ladder, "cuBLAS")] * (0.5 if n == 1024 else 1.0)
            results.append({"ladder": ladder, "kernel": k, "variant": "", "size": n, "tflops": tf,
                            "pct_of_cublas": 100 * tf / base, "pct_of_peak": 10.0, "check": f"PASS {k} {n}^3",
                            "check_ok": True})
    ladders = {"fp32": {"precision": "fp32", "title": "FP32 (FFMA)", "baseline_mode": "SGEMM (TF32 off)",
                        "peak_tflops": 66.9},
               "fp16": {"precision": "fp16_tensor", "title": "FP16 in, FP32 accumulate (tensor cores)",
                        "baseline_mode": "GemmEx FP16", "peak_tflops": 1070.5}}
    return {"what": "lab07-bench", "gpu": H200, "run": {"date": date, "commit": commit, "dirty_tree": False},
            "sizes": [1024, 4096], "ladders": ladders, "results": results}


def test_provenance_names_the_gpu_the_date_the_commit_and_the_file(tmp_path):
    path = tmp_path / "results" / "x.json"
    text = records.provenance(synthetic_record(), path, root=tmp_path)
    assert "NVIDIA H200" in text and "sm_90" in text and "2026-12-01" in text and "0123456" in text
    assert "results/x.json" in text


def test_newest_picks_the_latest_recorded_date(tmp_path):
    for name, date in (("a-bench_1.json", "2026-12-02T00:00:00+00:00"), ("b-bench_2.json", "2026-12-01T00:00:00+00:00")):
        (tmp_path / name).write_text(json.dumps(synthetic_record(date=date)))
    rec, path = records.newest(tmp_path)
    assert path.name == "a-bench_1.json"
    assert records.newest(tmp_path / "none") == (None, None)


def test_ladder_table_lists_the_baseline_first_with_its_math_mode():
    text = records.ladder_table(synthetic_record(), "fp32")
    lines = text.splitlines()
    assert "SGEMM (TF32 off)" in lines[0]
    assert lines[3].startswith("cuBLAS") and "v7" in text and "t3" not in text


def test_series_is_what_the_ladder_chart_draws():
    series, sizes = records.series(synthetic_record(), "fp16")
    assert sizes == [1024, 4096] and list(series) == ["cuBLAS", "t1", "t3"]
    assert series["t3"] == [140.0, 280.0]


def test_a_size_a_row_was_not_timed_at_gets_no_bar(tmp_path):
    """A tuned row has no 1024^3 record: the chart leaves its bar out instead of drawing a 0."""
    from common import plots
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    drawn = []
    real = plt.Axes.bar

    def bar(self, x, height, *a, **kw):
        drawn.append((kw.get("label"), list(height)))
        return real(self, x, height, *a, **kw)
    plt.Axes.bar = bar
    try:
        plots.ladder_chart({"cuBLAS": [30.0, 50.0], "v8 (tuned)": [None, 53.0]}, [1024, 4096],
                           tmp_path / "c.png", "t", baseline="cuBLAS")
    finally:
        plt.Axes.bar = real
    assert dict(drawn) == {"cuBLAS": [30.0, 50.0], "v8 (tuned)": [53.0]}
    assert (tmp_path / "c.png").stat().st_size > 0


def test_the_chapters_comparisons():
    rows = {r["comparison"]: r for r in records.comparisons(synthetic_record(), ratios=[("fp16", "fp32")])}
    assert rows["best FP32 kernel (v7) / cuBLAS SGEMM"]["ratio"] == pytest.approx(0.8)
    assert rows["best FP16 kernel (t3) / cuBLAS HGEMM"]["ratio"] == pytest.approx(0.4)
    assert rows["cuBLAS HGEMM / cuBLAS SGEMM"]["ratio"] == pytest.approx(14.0)


def test_a_yardstick_is_never_the_ladders_best_kernel():
    """A library's kernel timed beside the ladder (CUTLASS's own, `yardstick=True` in the table) is not
    "how far the ladder got": the comparison takes the best rung, whether the record names the
    yardsticks (records since 2026-12-03) or only the lab's table does."""
    rec = synthetic_record()
    for n in (1024, 4096):
        rec["results"].append({**next(r for r in rec["results"] if r["kernel"] == "t3" and r["size"] == n),
                               "kernel": "cutlass", "tflops": 300.0})
    best = lambda rows: next(r["comparison"] for r in rows if "FP16" in r["comparison"])   # noqa: E731
    assert best(records.comparisons(rec)) == "best FP16 kernel (cutlass) / cuBLAS HGEMM"    # nothing says
    lab = SimpleNamespace(ladders={"fp16": [SimpleNamespace(name="t3", yardstick=False),
                                            SimpleNamespace(name="cutlass", yardstick=True)]},
                          option=lambda name, default=None: default)
    assert best(records.comparisons(rec, lab=lab)) == "best FP16 kernel (t3) / cuBLAS HGEMM"
    rec["ladders"]["fp16"]["yardsticks"] = ["cutlass"]
    assert best(records.comparisons(rec)) == "best FP16 kernel (t3) / cuBLAS HGEMM"


def test_the_baseline_ratios_are_the_labs():
    lab = SimpleNamespace(option=lambda name, default=None: {"BASELINE_RATIOS": [("fp16", "fp32")]}.get(name, default))
    assert len(records.comparisons(synthetic_record(), lab=lab)) == 3
    assert len(records.comparisons(synthetic_record())) == 2          # no lab, no ratios: the two ladders


def test_a_record_without_ladders_takes_each_ladders_precision_from_the_labs_table():
    rec = synthetic_record()
    del rec["ladders"]
    rec["cublas"] = {"fp32_mode": "cuBLAS SGEMM (TF32 off)", "fp16_mode": "cuBLAS GemmEx FP16"}
    lab = SimpleNamespace(kernels={"v5": SimpleNamespace(prec=PRECISIONS["fp32"]),
                                   "t1": SimpleNamespace(prec=PRECISIONS["fp16_tensor"])}, ladders={})
    info = records.ladder_info(rec, "fp16", lab)
    assert info["precision"] == "fp16_tensor" and info["baseline"] == "cuBLAS HGEMM"
    assert info["baseline_mode"] == "cuBLAS GemmEx FP16" and info["peak_tflops"] == pytest.approx(1070.5)
    assert "TF32 off" in records.ladder_table(rec, "fp32", lab).splitlines()[0]
    rows = {r["comparison"] for r in records.comparisons(rec, lab=lab, ratios=[("fp16", "fp32")])}
    assert "cuBLAS HGEMM / cuBLAS SGEMM" in rows
    assert records.ladder_info(rec, "fp16")["title"] == "fp16"        # no lab: the ladder's name


def test_predictions_against_the_record():
    rows = records.predictions_rows(synthetic_record(), {"v7": 70, "t3": None, "HGEMM/SGEMM": 10, "v9": 50})
    by = {r["quantity"]: r for r in rows}
    assert by["v7: % of cuBLAS"]["off_by"] == pytest.approx(10.0)
    assert by["t3: % of cuBLAS"]["off_by"] is None and by["t3: % of cuBLAS"]["measured"] == pytest.approx(40.0)
    assert by["cuBLAS HGEMM / cuBLAS SGEMM (x)"]["measured"] == pytest.approx(14.0)
    assert by["v9: % of cuBLAS"]["measured"] is None           # not in the record: shown as '-'
    assert "no predictions entered" in records.predictions_table(synthetic_record(), {"v7": None})
    assert records.measured(synthetic_record(), "fp16/fp32", 4096) == pytest.approx(14.0)   # by ladder names


def test_tflops_against_size_has_a_panel_per_ladder():
    fig = records.tflops_vs_size(synthetic_record())
    assert len(fig.axes) == 2


def test_checks_name_the_ladder():
    assert records.checks(synthetic_record())[0] == "fp32: PASS cuBLAS 4096^3"


def test_a_tune_at_one_size_keeps_the_other_size_classes_it_did_not_time():
    """`make tune SIZE=4096` replaces the large-squares winner and leaves the 2048^3 (medium) one."""
    from common.measure import merge_tuned
    recorded = {"best": {"fp32": {"medium": {"kernel": "v8", "params": {"STAGES": 2}, "size": 2048},
                                  "large": {"kernel": "v8", "params": {}, "size": 8192}}}}
    new = {"fp32": {"large": {"kernel": "v8", "params": {"GROUP": 16}, "size": 4096}},
           "fp16": {"large": {"kernel": "t4", "params": {"BK": 64}, "size": 4096}}}
    merged = merge_tuned(recorded, new)
    assert merged["fp32"]["medium"]["params"] == {"STAGES": 2}
    assert merged["fp32"]["large"]["params"] == {"GROUP": 16}
    assert merged["fp16"]["large"]["params"] == {"BK": 64}
    assert merge_tuned({}, new) == new
    assert recorded["best"]["fp32"]["large"]["params"] == {}      # the record read is not changed


def test_a_size_class_timed_at_two_sizes_keeps_the_first_sizes_winner(tmp_path, monkeypatch):
    """Lab 7 tunes at 2048^3, 4096^3 and 8192^3; 4096 and 8192 are both "large". The record keeps
    4096^3's winner (the first size timed in the class), not whichever size came last."""
    from types import SimpleNamespace
    from common import measure, targets

    class FakeMeasurer:
        def __init__(self, lab, facts):
            pass

        def rows(self, ladder, kept, n, **kw):
            best = {4096: "k[A1]", 8192: "k[A2]"}.get(n, "k[A1]")
            return ([{"kernel": measure.BASELINE, "tflops": 1.0, "pct_of_cublas": 100.0, "check_ok": True,
                      "spread_pct": 0.0, "check": "PASS"}] +
                    [{"kernel": k.name, "tflops": 2.0 if k.name == best else 1.5, "pct_of_cublas": 150.0,
                      "check_ok": True, "spread_pct": 0.0, "check": "PASS"} for k in kept])

    class K:
        def __init__(self, name, defines):
            self.name, self.base_name, self.defines = name, "k", defines

    kept = [K("k[A1]", {"A": 1}), K("k[A2]", {"A": 2})]
    lab = SimpleNamespace(name="labX", short="labx", dir=tmp_path, results_dir=tmp_path,
                          option=lambda name, default=None: {"fp32": measure.Tuning("k", [{}], sizes=(4096, 8192))},
                          ladder_precision=lambda ladder: SimpleNamespace(cublas_mode="cuBLAS"),
                          kernel=lambda name: SimpleNamespace(unsupported=lambda arch: None))
    monkeypatch.setattr(targets, "needs_gpu", lambda *a: {"arch": "sm_90", "name": "Test GPU"})
    monkeypatch.setattr(targets, "Measurer", FakeMeasurer)
    monkeypatch.setattr(targets, "tune_candidates", lambda *a, **kw: (kept, []))
    monkeypatch.setattr(targets, "ladder_info", lambda *a: {})
    targets.tune(lab, SimpleNamespace(size=None, budget=None, ladder=None))
    import json
    record = json.loads(measure.tuned_path(lab, {"name": "Test GPU"}).read_text())
    assert record["best"]["fp32"]["large"]["params"] == {"A": 1}
    assert record["best"]["fp32"]["large"]["size"] == 4096


def test_tune_names_the_ladders_it_can_tune(tmp_path, monkeypatch):
    from types import SimpleNamespace
    from common import measure, targets
    from common.errors import CourseError
    lab = SimpleNamespace(name="labX", option=lambda name, default=None: {"fp32": measure.Tuning("k", [{}])})
    monkeypatch.setattr(targets, "needs_gpu", lambda *a: {"arch": "sm_90", "name": "Test GPU"})
    with pytest.raises(CourseError) as e:
        targets.tune(lab, SimpleNamespace(size=None, budget=None, ladder="fp16"))
    assert "fp16" in e.value.message and "fp32" in e.value.hint


def test_tune_leaves_out_a_ladder_whose_kernel_this_gpu_cannot_run_and_says_why(tmp_path, monkeypatch, capsys):
    """Lab 7c's rungs run only on sm_90a: on an Ampere GPU `make tune` says so, in one line per ladder,
    and tunes what runs; when nothing runs it stops with one message instead of a compiler's traceback."""
    from types import SimpleNamespace
    from common import measure, targets
    from common.errors import CourseError
    why = {"hopper": "h4 runs only on sm_90a: wgmma", "any": None}
    lab = SimpleNamespace(name="labX", option=lambda name, default=None: {"fp16": measure.Tuning("hopper", [{}]),
                                                                          "fp32": measure.Tuning("any", [{}])},
                          kernel=lambda name: SimpleNamespace(unsupported=lambda arch: why[name]))
    monkeypatch.setattr(targets, "needs_gpu", lambda *a: {"arch": "sm_86", "name": "Test GPU"})
    tuned = []

    def candidates(lab, ladder, spec, arch):
        tuned.append(ladder)
        raise RuntimeError("stop here: only which ladders reach the compiler matters")
    monkeypatch.setattr(targets, "tune_candidates", candidates)
    monkeypatch.setattr(targets, "Measurer", lambda *a: None)
    with pytest.raises(RuntimeError):
        targets.tune(lab, SimpleNamespace(size=None, budget=None, ladder=None))
    assert tuned == ["fp32"]
    assert "fp16: not tuned on this GPU: h4 runs only on sm_90a" in capsys.readouterr().out
    with pytest.raises(CourseError) as e:
        targets.tune(lab, SimpleNamespace(size=None, budget=None, ladder="fp16"))
    assert "Test GPU" in e.value.message and "sm_90a" in e.value.message and tuned == ["fp32"]


def test_a_tuned_record_timed_on_another_version_of_the_kernel_is_left_out(tmp_path, monkeypatch):
    """k7 changed after `make tune` recorded STAGES = 4 for it: that build was slower than the new default,
    and `make bench` timed it as "k7 (tuned)" anyway. A record names the source it was timed on; a record
    for another version is not used, and the bench says why. Records from before source_sha still count."""
    import json
    from common import measure
    from common.lab import load
    lab = load("lab07a-tf32-tensor-cores")
    facts = {"name": "Test GPU"}
    monkeypatch.setattr(measure, "tuned_path", lambda lab, facts: tmp_path / "tuned.json")
    k7 = lab.kernel("k7")
    assert measure.source_sha(k7) and measure.source_sha(k7) == measure.source_sha(lab.kernel("k7"))
    for sha, used in ((measure.source_sha(k7), True), (None, True), ("0" * 16, False)):
        best = {"kernel": "k7", "params": {"STAGES": 4}, **({"source_sha": sha} if sha else {})}
        (tmp_path / "tuned.json").write_text(json.dumps({"best": {"tf32": {"large": best}}}))
        row = measure.tuned_kernel(lab, "tf32", facts, 4096)
        note = measure.stale_tuned(lab, "tf32", facts, 4096)
        assert (row is not None) == used and (note is None) == used
        if used:
            assert row.base_name == "k7" and row.defines == {"STAGES": 4}
        else:
            assert "k7_unroll_xor_stages.cu" in note and "make tune" in note
