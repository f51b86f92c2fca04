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
    """What git would commit (its index), not the working copy: a student who runs a notebook and
    saves it has outputs in the file, and that must not break `make test`."""
    text = notebooks.committed_text(path)
    if text is None:
        pytest.skip("not a git checkout: there is no committed copy to check")
    problems = notebooks.output_problems(path, text)
    assert not problems, (f"{path.name} is staged with outputs ({'; '.join(problems)}). Notebooks are committed "
                          "without them: run `make strip-notebooks` (or python3 scripts/notebooks.py strip), "
                          "then `git add` it again.")


def test_a_notebook_saved_with_outputs_is_checked_as_committed(tmp_path, monkeypatch):
    """Saving a run notebook changes only the working copy; staging it (git add) is what the check sees."""
    import shutil
    import subprocess
    if shutil.which("git") is None:
        pytest.skip("needs git")
    clean = PATHS[0].read_text()
    repo = tmp_path / "course"
    nb = repo / "notebooks" / "a.ipynb"
    nb.parent.mkdir(parents=True)
    nb.write_text(clean)
    git = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True)
    git("init", "-q")
    git("add", "notebooks/a.ipynb")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "clean")
    data = json.loads(clean)
    code = next(c for c in data["cells"] if c["cell_type"] == "code")
    code["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "1\n"}]
    code["execution_count"] = 1
    nb.write_text(json.dumps(data))                           # the student ran it and saved
    assert notebooks.output_problems(nb)                      # the file has outputs ...
    assert not notebooks.output_problems(nb, notebooks.committed_text(nb))    # ... what git commits has none
    git("add", "notebooks/a.ipynb")                           # staged with its outputs: now the check sees them
    assert notebooks.output_problems(nb, notebooks.committed_text(nb))
    untracked = repo / "notebooks" / "b.ipynb"                # a notebook not added yet: the file itself
    untracked.write_text(json.dumps(data))
    assert notebooks.output_problems(untracked, notebooks.committed_text(untracked))
    outside = tmp_path / "unpacked" / "c.ipynb"               # not a checkout: nothing committed
    outside.parent.mkdir()
    outside.write_text(clean)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))   # git looks no further up than tmp_path
    assert notebooks.committed_text(outside) is None


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_notebook_asks_for_the_python3_kernel(path):
    nb = json.loads(path.read_text())
    assert nb["metadata"]["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_notebook_gets_common_from_the_environment_not_a_bootstrap_cell(path):
    """One place makes `common` importable (the virtualenv's .pth, PYTHONPATH from make): no
    notebook edits sys.path, and each opens by loading its lab by name."""
    nb = json.loads(path.read_text())
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    assert not any("sys.path" in c for c in code)
    if path.name.startswith("colab_"):      # a Colab notebook gets the course first (git clone), then loads its lab
        assert "git clone" in code[0] and "ON_COLAB" in code[0], code[0]
        code = code[1:]
    assert code[0].startswith("from common.lab import load\nlab = load(")


def _notebook_with_outputs(tmp_path):
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook, new_output
    cell = new_code_cell("print(1)", execution_count=3, outputs=[new_output("stream", name="stdout", text="1\n")])
    cell.metadata["execution"] = {"iopub.status.busy": "2026-11-30T00:00:00Z"}
    cell.metadata["collapsed"] = False
    cell.metadata["tags"] = ["summary"]
    nb = new_notebook(cells=[cell])
    nb.metadata["kernelspec"] = dict(notebooks.KERNELSPEC)
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {}}
    # what JupyterLab autosaves into a notebook it merely opened
    nb.metadata["language_info"] = {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                                    "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                                    "pygments_lexer": "ipython3", "version": "3.12.3"}
    path = tmp_path / "dirty.ipynb"
    nbformat.write(nb, path)
    return path


@needs_stack
def test_strip_removes_outputs_counts_timings_widget_state_and_what_jupyterlab_autosaves(tmp_path):
    path = _notebook_with_outputs(tmp_path)
    problems = notebooks.output_problems(path)
    assert len(problems) == 4 and any("language_info" in p for p in problems)
    assert notebooks.strip(path) is True
    assert notebooks.output_problems(path) == []
    nb = json.loads(path.read_text())
    assert set(nb["metadata"]) == {"kernelspec"} and nb["cells"][0]["metadata"] == {"tags": ["summary"]}
    assert notebooks.strip(path) is False          # stripping twice changes nothing


@needs_stack
def test_strip_puts_back_the_python3_kernel(tmp_path):
    """A kernel picked in JupyterLab (another kernelspec) is saved into the notebook: strip resets it."""
    import nbformat
    path = _notebook_with_outputs(tmp_path)
    nb = nbformat.read(path, as_version=4)
    nb.metadata["kernelspec"] = {"display_name": "course", "language": "python", "name": "course"}
    nbformat.write(nb, path)
    assert any("kernelspec" in p for p in notebooks.output_problems(path))
    notebooks.strip(path)
    assert json.loads(path.read_text())["metadata"]["kernelspec"]["name"] == "python3"


@needs_stack
def test_the_kernel_is_this_interpreter_whatever_is_registered():
    spec = notebooks.kernel_manager().kernel_spec
    assert spec.argv[0] == sys.executable and "ipykernel_launcher" in spec.argv


@needs_stack
@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_notebook_runs_top_to_bottom(path, tmp_path):
    from common import browser, device
    if not device.gpu_status()[0] and not (browser.missing() or browser.jupyterlab_missing()):
        # the same cells, recorded results as here, with stricter checks (widgets render, controls redraw):
        # run once, not twice (CI installs the browser; a student's make test runs this one instead)
        pytest.skip("tests/test_notebooks_browser.py runs this notebook in JupyterLab and Chromium")
    run = notebooks.execute(path, out_dir=tmp_path, timeout=300)
    assert run.ok, f"{path.name} stopped with an error:\n{run.error[-4000:]}"
    executed = json.loads((tmp_path / path.name).read_text())
    outputs = sum(len(c.get("outputs", [])) for c in executed["cells"] if c["cell_type"] == "code")
    assert outputs >= run.cells // 2, f"{path.name}: only {outputs} outputs from {run.cells} code cells"
    assert notebooks.output_problems(path) == [], "executing must not write the notebook itself"


@needs_stack
def test_with_course_notebook_log_each_cell_says_when_it_started_and_ended(tmp_path, monkeypatch):
    """A device call cut by its limit brings back no executed notebook: on the GPU (2026-12-06) the
    fragment explorer ran past 150 s and nothing said in which cell. COURSE_NOTEBOOK_LOG (the device
    scripts set it) gets a line as each cell starts and ends; the cell that never ended is the last
    'started'. A cell that sleeps stands in for the slow one; the markdown cell is not run."""
    import nbformat
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_markdown_cell("text"),
                                         nbformat.v4.new_code_cell("import time; time.sleep(0.5)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "slow.ipynb"
    nbformat.write(nb, path)
    log = tmp_path / "notebooks.log"
    monkeypatch.setenv("COURSE_NOTEBOOK_LOG", str(log))
    assert notebooks.execute(path, timeout=60).ok
    lines = log.read_text().splitlines()
    assert [l.split(" at ")[0] for l in lines] == ["slow.ipynb cell 0 started", "slow.ipynb cell 0 done",
                                                   "slow.ipynb cell 2 started", "slow.ipynb cell 2 done"]
    seconds = [float(l.split(" at ")[1].removesuffix(" s")) for l in lines]
    assert seconds == sorted(seconds) and seconds[3] - seconds[2] >= 0.4   # 0.5 s, each end rounded to 0.1 s


@needs_stack
def test_without_course_notebook_log_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.delenv("COURSE_NOTEBOOK_LOG", raising=False)
    assert notebooks._progress_hooks("x.ipynb", 0.0) == {}


@needs_stack
def test_what_an_output_widget_shows_is_the_cells_own_output(tmp_path):
    """execute() gives nbclient no stand-in for ipywidgets' Output widget: the stand-in sends the kernel
    a comm message on the shell socket for each output while the client awaits the cell's reply on
    it, and on the GPU (2026-12-06) the fragment explorer's interactive_output cell hung there until
    its time limit. Without the stand-in the printed text is the cell's own stream output; with it,
    it would be in the widget's state and not among the cell's outputs."""
    pytest.importorskip("ipywidgets")
    import nbformat
    code = ("import ipywidgets as W\nfrom IPython.display import display\n"
            "lane = W.IntSlider(value=13)\n"
            "display(W.VBox([lane, W.interactive_output(lambda lane: print(f'lane {lane} shown'), {'lane': lane})]))")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    nb.metadata["kernelspec"] = dict(notebooks.KERNELSPEC)
    path = tmp_path / "widget.ipynb"
    nbformat.write(nb, path)
    run = notebooks.execute(path, out_dir=tmp_path / "out", timeout=60)
    assert run.ok, run.error
    outputs = json.loads((tmp_path / "out" / "widget.ipynb").read_text())["cells"][0]["outputs"]
    printed = "".join("".join(o["text"]) for o in outputs if o.get("output_type") == "stream")   # JSON: a list of lines
    assert "lane 13 shown" in printed, outputs
