"""Peak rates per architecture, and the table printer (no GPU needed)."""
import pytest

from common import device, report


def test_h200_peaks_from_the_table():
    p = device.peak_tflops({"arch": "sm_90", "name": "NVIDIA H200", "sms": 132, "sm_clock_max_mhz": 1980})
    assert p["fp32"] == pytest.approx(66.9, abs=0.1)
    assert p["fp16_tensor"] == pytest.approx(1070.5, abs=0.5)


def test_geforce_runs_fp32_accumulation_at_half_rate():
    same_chip = {"arch": "sm_89", "sms": 128, "sm_clock_max_mhz": 2520}
    pro = device.peak_tflops({**same_chip, "name": "NVIDIA RTX 6000 Ada Generation"})
    gf = device.peak_tflops({**same_chip, "name": "NVIDIA GeForce RTX 4090"})
    assert gf["fp16_tensor"] == pytest.approx(165.2, abs=0.2)          # the 4090's spec sheet figure
    assert pro["fp16_tensor"] == pytest.approx(2 * gf["fp16_tensor"])
    assert pro["fp32"] == gf["fp32"]


def test_every_supported_arch_has_peaks():
    for arch in ("sm_80", "sm_86", "sm_89", "sm_90", "sm_120"):
        p = device.peak_tflops({"arch": arch, "name": "x", "sms": 10, "sm_clock_max_mhz": 1000})
        assert p["fp32"] > 0 and p["fp16_tensor"] > p["fp32"]


def test_unknown_arch_has_no_peak_but_does_not_crash():
    assert device.peak_tflops({"arch": "sm_100", "name": "x", "sms": 1, "sm_clock_max_mhz": 1})["fp32"] is None


def test_table_columns_line_up():
    rows = [{"k": "v3", "x": 1.5}, {"k": "v7/vec", "x": 41.25}, {"k": "t1", "x": None}]
    lines = report.table(rows, [("k", "kernel", ""), ("x", "TFLOP/s", ".1f")]).splitlines()
    assert len({len(l) for l in lines[:2]}) == 1
    assert lines[3].endswith("41.2") and lines[4].endswith("-")
    assert all(l.rstrip() == l for l in lines)


def test_the_no_gpu_text_reads_inside_the_graders_brackets(monkeypatch, tmp_path):
    """gpu_status's text is quoted in brackets by others ("GPU: none (...)"): it has none of its own,
    or the grade report read "none (this needs a CUDA GPU, and this machine has none (nvidia-smi ...))"."""
    import builtins
    from common.grading import grader
    from common.grading.spec import Grading
    from common.lab import load
    real = builtins.__import__

    def without_pycuda(name, *a, **kw):
        if name.startswith("pycuda"):
            raise ImportError("No module named 'pycuda'")
        return real(name, *a, **kw)
    monkeypatch.setattr(builtins, "__import__", without_pycuda)
    for arch in (None, "sm_90"):                      # no GPU at all; a GPU and no PyCUDA
        monkeypatch.setattr(device, "detect_arch", lambda: arch)
        with pytest.raises(device.CourseError) as e:
            device._driver()
        assert "(" not in e.value.message and e.value.hint, e.value.message
    monkeypatch.setattr(builtins, "__import__", real)
    monkeypatch.setattr(device, "gpu_status", lambda: (False, "nvidia-smi finds no NVIDIA GPU on this machine"))
    env = grader.environment(Grading(load("lab07d-decode-shapes")), work=tmp_path)
    assert env.gpu_text == "none (nvidia-smi finds no NVIDIA GPU on this machine)"


def test_a_record_names_the_commit_course_commit_gives_and_says_when_it_cannot(monkeypatch, capsys):
    """A copied tree (the GPU machine) has no git history: COURSE_COMMIT names the commit. A full sha is
    taken as given; a short one cannot name a commit for good, so the record says 'unknown' and the
    run says why, instead of the record quietly losing its commit."""
    full = "452afe2eca3a003e99167556548f750f85a4d67f"
    monkeypatch.setenv("COURSE_COMMIT", full)
    assert report.run_info()["commit"] == full and capsys.readouterr().err == ""
    monkeypatch.setenv("COURSE_COMMIT", full[:7])
    assert report.run_info()["commit"] == "unknown"
    err = capsys.readouterr().err
    assert "COURSE_COMMIT='452afe2'" in err and "40 hex digits" in err
