"""`make bench`'s report without a GPU (common.targets.bench_report): the tables, the JSON record and
the charts from results taken out of a recorded H200 run (the measuring half needs a GPU and runs
only through `make bench`)."""
import json
from types import SimpleNamespace

from common import records, targets
from common.testing import lab_of

LAB = lab_of(__file__)
RECORD = sorted(LAB.results_dir.glob(f"{LAB.short}-bench_*.json"))[-1]


def test_bench_report_prints_both_ladders_and_writes_record_and_charts(tmp_path, capsys):
    rec = json.loads(RECORD.read_text())
    blas = SimpleNamespace(path="libcublas.so", version=130000)
    targets.bench_report(LAB, rec["results"], rec["gpu"], rec["sizes"], list(LAB.ladders), blas, [], "lab07-bench",
                         tmp_path)
    out = capsys.readouterr().out
    assert "FP32 (FFMA)" in out and "FP16 in, FP32 accumulate" in out and "TF32 off" in out
    assert "cuBLAS HGEMM / cuBLAS SGEMM" in out                       # the table's BASELINE_RATIOS
    for k in LAB.all_kernels:
        if any(r["kernel"] == k.name for r in rec["results"]):
            assert f"\n{k.name} " in out
    written = json.loads(next(tmp_path.glob("lab07-bench_*.json")).read_text())
    assert written["results"] == rec["results"] and written["gpu"]["name"] == rec["gpu"]["name"]
    assert written["ladders"]["fp16"]["precision"] == "fp16_tensor"
    assert records.ladder_info(written, "fp32")["baseline"] == "cuBLAS SGEMM"     # read back without the lab
    assert len(list(tmp_path.glob("lab07-bench_*_fp32.png"))) == 1
    assert len(list(tmp_path.glob("lab07-bench_*_fp16.png"))) == 1


def test_a_run_of_some_ladders_is_not_named_as_the_labs_record():
    """The grader's reference predictions and the walkthrough notebook read the newest lab07-bench_*.json,
    which must hold every ladder: `make bench LADDER=fp16` writes lab07-bench-fp16_*.json instead."""
    from common.targets import bench_stem
    from common.testing import lab_of
    lab = lab_of(__file__)
    assert bench_stem(lab, list(lab.ladders)) == "lab07-bench"
    assert bench_stem(lab, ["fp16"]) == "lab07-bench-fp16"
    assert bench_stem(lab, ["fp32"]) == "lab07-bench-fp32"
