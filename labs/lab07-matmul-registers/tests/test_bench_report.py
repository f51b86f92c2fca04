"""`make bench`'s report without a GPU: the tables, the JSON record and the charts from results
taken out of a recorded H200 run (the measuring half needs a GPU and runs in test_fp*_gpu.py's
machines only through `make bench`)."""
import json
from types import SimpleNamespace

import lab07
import targets

RECORD = sorted(lab07.RESULTS_DIR.glob("lab07-bench_*.json"))[-1]


def test_bench_report_prints_both_ladders_and_writes_record_and_charts(tmp_path, capsys):
    rec = json.loads(RECORD.read_text())
    blas = SimpleNamespace(path="libcublas.so", version=130000)
    ladders = {"fp32": lab07.FP32, "fp16": lab07.FP16}
    targets._bench_report(rec["results"], rec["gpu"], rec["sizes"], ladders, blas, [], "lab07-bench", tmp_path)
    out = capsys.readouterr().out
    assert "FP32 SGEMM" in out and "FP16 in, FP32 accumulate" in out and "TF32 off" in out
    assert "cuBLAS HGEMM / cuBLAS SGEMM" in out
    for k in lab07.FP32 + lab07.FP16:
        assert f"\n{k.name} " in out
    written = json.loads(next(tmp_path.glob("lab07-bench_*.json")).read_text())
    assert written["results"] == rec["results"] and written["gpu"]["name"] == rec["gpu"]["name"]
    assert len(list(tmp_path.glob("lab07-bench_*_fp32.png"))) == 1
    assert len(list(tmp_path.glob("lab07-bench_*_fp16.png"))) == 1
