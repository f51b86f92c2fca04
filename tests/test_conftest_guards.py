"""The guards of the root conftest.py, run on a small test file of their own (pytester)."""
from pathlib import Path

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]


def test_a_test_that_leaves_the_simulated_pycuda_loaded_fails_and_the_next_one_finds_it_gone(pytester, monkeypatch):
    """In a process of its own: on a GPU machine the real PyCUDA is loaded first (the header names the
    GPU), and the little tests below put the simulated one in its place."""
    import os
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    pytester.makeconftest((ROOT / "conftest.py").read_text())
    pytester.makepyfile(test_leak="""
import sys

def simulated(monkeypatch):
    from common.grading import simgpu
    for name in [m for m in sys.modules if m == "pycuda" or m.startswith("pycuda.")]:
        del sys.modules[name]
    monkeypatch.syspath_prepend(str(simgpu.PATH))      # undone after the test; the modules stay loaded
    import pycuda.driver  # noqa: F401
    assert "simgpu" in sys.modules["pycuda"].__file__

def test_leaves_it(monkeypatch):
    simulated(monkeypatch)

def test_after_it():
    assert "simgpu" not in str(getattr(sys.modules.get("pycuda"), "__file__", "") or "")

def test_cleans_up(monkeypatch):
    simulated(monkeypatch)
    for name in [m for m in sys.modules if m == "pycuda" or m.startswith("pycuda.")]:
        del sys.modules[name]
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist")
    result.assert_outcomes(passed=3, errors=1)
    assert "left the simulated PyCUDA" in result.stdout.str()
