"""The fragment explorer (notebooks/fragment_explorer.ipynb) on a GPU: a walkthrough, not a measurement.
It used to compile and run the lab's probe in the notebook's own process on every run (minutes on a
GPU busy with `make test`); the layouts belong to the architecture, so a probe recorded on this GPU's
architecture is read, and the probe runs only when asked (MEASURE = True) or when none is recorded."""
import json
from types import SimpleNamespace

import numpy as np

from common import fragments, notebooks, views

ENTRIES = ("probe_ldmatrix", "probe_mma_f16", "probe_mma_tf32")


class CountingProbe:
    """The lab's probe module, counting its runs (each one compiles a kernel and launches four)."""

    def __init__(self):
        self.runs = 0

    def run_all(self):
        self.runs += 1
        return {e: fragments.model_probe_output(e) for e in ENTRIES}


def _lab(tmp_path, arch="sm_90"):
    probe = CountingProbe()
    lab_dir = tmp_path / "labs" / "labX"
    (lab_dir / "results").mkdir(parents=True)
    lab = SimpleNamespace(dir=lab_dir, results_dir=lab_dir / "results", gpu_arch=lambda: arch,
                          module=lambda name: probe)
    return lab, probe


def _record(lab, arch, date, name):
    outputs = {e: fragments.model_probe_output(e).tolist() for e in ENTRIES}
    (lab.results_dir / name).write_text(json.dumps({"gpu": {"name": f"GPU {arch}", "arch": arch},
                                                    "run": {"date": date, "commit": "abc"}, "outputs": outputs}))


def test_on_a_gpu_with_a_record_of_its_architecture_the_probe_does_not_run(tmp_path, monkeypatch):
    lab, probe = _lab(tmp_path, "sm_90")
    _record(lab, "sm_90", "2026-11-30", "fragments-probe_a_2026-11-30_abc.json")
    _record(lab, "sm_86", "2026-12-02", "fragments-probe_b_2026-12-02_abc.json")    # newer, another arch
    got, source = views.probe_outputs(lab, True)
    assert probe.runs == 0
    assert "recorded on this GPU's architecture (sm_90" in source and "GPU sm_90" in source
    assert got["probe_mma_f16"].dtype == np.uint32
    assert all(line.startswith("PASS") for line in views.probe_verdicts(got))


def test_measure_runs_the_probe_once(tmp_path, monkeypatch):
    monkeypatch.setattr("common.device.gpu_status", lambda: (True, "Test GPU (sm_90)"))
    lab, probe = _lab(tmp_path, "sm_90")
    _record(lab, "sm_90", "2026-11-30", "fragments-probe_a_2026-11-30_abc.json")
    got, source = views.probe_outputs(lab, True, measure=True)
    assert probe.runs == 1 and source == "measured now on Test GPU (sm_90)"


def test_a_gpu_with_no_record_of_its_architecture_measures(tmp_path, monkeypatch):
    monkeypatch.setattr("common.device.gpu_status", lambda: (True, "Test GPU (sm_120)"))
    lab, probe = _lab(tmp_path, "sm_120")
    _record(lab, "sm_90", "2026-11-30", "fragments-probe_a_2026-11-30_abc.json")
    views.probe_outputs(lab, True)
    assert probe.runs == 1


def test_without_a_gpu_the_newest_record_is_read_and_nothing_runs(tmp_path):
    lab, probe = _lab(tmp_path)
    _record(lab, "sm_90", "2026-11-30", "fragments-probe_a_2026-11-30_abc.json")
    got, source = views.probe_outputs(lab, False)
    assert probe.runs == 0 and source.startswith("recorded:") and got is not None


def test_the_notebook_reads_the_record_unless_the_student_asks_to_measure():
    """The notebook's only GPU work is the probe, and by default it is not run: MEASURE = False."""
    nb = json.loads((notebooks.NOTEBOOKS_DIR / "fragment_explorer.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "MEASURE = False" in code
    assert code.count("probe_outputs(") == 1 and "measure=MEASURE" in code
    assert "run_all(" not in code and "run_probe(" not in code
