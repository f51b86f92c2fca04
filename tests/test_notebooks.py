"""The notebooks: committed without outputs, and every one runs top to bottom (no GPU here: they
show the recorded results). common/notebooks.py says why there are no outputs in the repository."""
import importlib.util
import json
import sys

import pytest

from common import notebooks

PATHS = notebooks.notebook_paths()
STACK = [m for m in ("nbformat", "nbclient", "ipykernel") if importlib.util.find_spec(m) is None]
needs_stack = pytest.mark.skipif(bool(STACK), reason=f"needs the Jupyter kernel stack, missing: {', '.join(STACK)} "
                                                     "(`make test` installs it into .venv)")


def test_there_are_notebooks():
    assert {p.name for p in PATHS} >= {"lab07_walkthrough.ipynb", "hierarchy_explorer.ipynb",
                                        "fragment_explorer.ipynb", "bank_explorer.ipynb"}


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_notebook_is_committed_without_outputs(path):
    problems = notebooks.output_problems(path)
    assert not problems, (f"{path.name} has outputs ({'; '.join(problems)}). Notebooks are committed without "
                          "them: run `make strip-notebooks` (or python3 scripts/notebooks.py strip) and commit again.")


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_notebook_asks_for_the_python3_kernel(path):
    nb = json.loads(path.read_text())
    assert nb["metadata"]["kernelspec"]["name"] == "python3"


def _notebook_with_outputs(tmp_path):
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook, new_output
    cell = new_code_cell("print(1)", execution_count=3, outputs=[new_output("stream", name="stdout", text="1\n")])
    cell.metadata["execution"] = {"iopub.status.busy": "2026-11-30T00:00:00Z"}
    nb = new_notebook(cells=[cell])
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {}}
    path = tmp_path / "dirty.ipynb"
    nbformat.write(nb, path)
    return path


@needs_stack
def test_strip_removes_outputs_counts_timings_and_widget_state(tmp_path):
    path = _notebook_with_outputs(tmp_path)
    assert len(notebooks.output_problems(path)) == 4
    assert notebooks.strip(path) is True
    assert notebooks.output_problems(path) == []
    assert notebooks.strip(path) is False          # stripping twice changes nothing


@needs_stack
def test_the_kernel_is_this_interpreter_whatever_is_registered():
    spec = notebooks.kernel_manager().kernel_spec
    assert spec.argv[0] == sys.executable and "ipykernel_launcher" in spec.argv


@needs_stack
@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_notebook_runs_top_to_bottom(path, tmp_path):
    run = notebooks.execute(path, out_dir=tmp_path, timeout=300)
    assert run.ok, f"{path.name} stopped with an error:\n{run.error[-4000:]}"
    executed = json.loads((tmp_path / path.name).read_text())
    outputs = sum(len(c.get("outputs", [])) for c in executed["cells"] if c["cell_type"] == "code")
    assert outputs >= run.cells // 2, f"{path.name}: only {outputs} outputs from {run.cells} code cells"
    assert notebooks.output_problems(path) == [], "executing must not write the notebook itself"
