"""views.py, what lab 7's notebooks show, without a GPU: the recorded-results banner, the register
tables (needs nvcc), the inner loops (needs cuobjdump), the bench's redirection to reports/notebook/
and the probe's recorded outputs."""
import json

import numpy as np
import pytest

import lab07
import views
from common import fragments
from common.errors import CourseError
from common.sass import find_cuobjdump

try:
    find_cuobjdump()
    HAVE_CUOBJDUMP, WHY = True, ""
except CourseError as e:
    HAVE_CUOBJDUMP, WHY = False, str(e)


def built(fn, *args):
    """fn(*args), skipping the test where the kernels cannot be compiled (no nvcc)."""
    try:
        return fn(*args)
    except CourseError as e:
        pytest.skip(f"lab 7's kernels do not compile here: {e.message.splitlines()[0]}")


def test_recorded_results_exist_and_the_banner_says_whose_they_are():
    record, path = views.recorded()
    assert record is not None, "results/ holds no lab07-bench_*.json: the notebooks have nothing to show without a GPU"
    text = views.banner(False, False, "no GPU (test)", record, path, views.arch_for(False, record))
    assert "recorded, not measured now" in text
    assert record["gpu"]["name"] in text and record["run"]["commit"][:7] in text
    assert record["run"]["date"][:10] in text and path.name in text


def test_the_banner_without_anything_recorded_says_so():
    assert "No recorded results" in views.banner(False, False, "no GPU", None, None, "sm_90")
    assert views.arch_for(False, None) == views.DEFAULT_ARCH


def test_build_table_shows_ptxas_beside_the_estimate_for_every_entry_point():
    rows = built(views.build_rows, "sm_90")
    entries = sum(len(k.entries) for k in lab07.FP32 + lab07.FP16)
    assert len(rows) == entries
    assert all(r["registers"] > 0 and r["estimate"] > 0 and r["blocks"] >= 1 for r in rows)


def test_estimate_vs_ptxas_is_within_the_tests_margin():
    rows = built(views.estimate_vs_ptxas, ["sm_90"])
    assert all(abs(r["estimate"] - r["sm_90"]) <= max(8, 0.2 * r["sm_90"]) for r in rows)


@pytest.mark.skipif(not HAVE_CUOBJDUMP, reason=f"needs cuobjdump: {WHY}")
def test_inner_loops_show_what_the_walkthrough_points_at():
    loops = built(views.inner_loops, "sm_90", ["v5", "v6", "t2"])
    assert sum("LDS.128" in l for l in loops["v6"]) == 32          # 4 per k step, BK = 8
    assert any("STS.128" in l for l in loops["v6"]) and not any("STS.128" in l for l in loops["v5"])
    assert sum("HMMA.16816" in l for l in loops["t2"]) == 32
    assert sum("LDSM" in l for l in loops["t2"]) == 12


def test_measure_writes_to_reports_not_results(monkeypatch, tmp_path):
    import targets
    monkeypatch.setattr(views, "NOTEBOOK_DIR", tmp_path / "notebook")
    seen = {}

    def fake_bench(args, kernels_by_ladder=None, sizes=None, stem="lab07-bench", out_dir=None):
        seen["dir"] = out_dir
        print("a table nobody sees")
        (out_dir / f"{stem}_gpu_2026-12-01_abc.json").write_text(json.dumps(
            {"gpu": {"name": "fake"}, "run": {"date": "2026-12-01"}, "sizes": sizes, "results": []}))
    monkeypatch.setattr(targets, "bench", fake_bench)
    record, path = views.measure([256])
    assert seen["dir"] == tmp_path / "notebook"
    assert record["sizes"] == [256] and path.parent == tmp_path / "notebook"


def test_probe_outputs_come_from_the_newest_recorded_probe(monkeypatch, tmp_path):
    monkeypatch.setattr(views, "RESULTS_DIR", tmp_path)
    assert views.probe_outputs(False)[0] is None
    outputs = {e: fragments.model_probe_output(e).tolist() for e in ("probe_ldmatrix", "probe_mma_f16", "probe_mma_tf32")}
    (tmp_path / "fragments-probe_gpu_2026-12-01_abc.json").write_text(json.dumps(
        {"gpu": {"name": "fake", "arch": "sm_90"}, "run": {"date": "2026-12-01", "commit": "abc"}, "outputs": outputs}))
    got, source = views.probe_outputs(False)
    assert source.startswith("recorded") and got["probe_mma_f16"].dtype == np.uint32
    assert all(line.startswith("PASS") for line in views.probe_verdicts(got))
