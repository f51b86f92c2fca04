"""Notebooks: run them top to bottom without a browser, and keep them committed without outputs.

    NOTEBOOKS_DIR                 the repository's notebooks/
    notebook_paths(folder=None)   every .ipynb there, sorted (checkpoints skipped)
    output_problems(path, text=None) -> ["cell 4: 2 outputs", ...]; [] when the notebook is clean
                                  (plain JSON: needs nothing installed)
    committed_text(path)          the notebook as git's index holds it (what a commit takes): the
                                  test checks that, so a notebook run and saved breaks nothing
    strip(path)                   -> True if it changed the file: outputs, execution counts and what
                                  Jupyter saves about one machine's session removed (`make strip-notebooks`)
    execute(path, out_dir=None, timeout=600) -> Run: ok, seconds, error, summary. The kernel's working
                                  folder is the notebook's own; the executed copy goes to out_dir if
                                  given; the source file is never written. With COURSE_NOTEBOOK_LOG set
                                  to a file, a line is appended there as each cell starts and ends:
                                  a run cut by a time limit still says which cell it was in.
                                  What an ipywidgets Output widget (interactive_output) shows is
                                  recorded as its cell's own output (execute() says why)
    kernel_manager()              a "python3" kernel that is this interpreter (sys.executable), whatever
                                  kernelspecs the machine has installed: nothing is registered

The policy: notebooks are committed without outputs. Outputs hold one machine's numbers at one
commit, and they make every diff unreadable; the notebooks show recorded results themselves when
there is no GPU. Nor with what JupyterLab saves about a session (it autosaves a notebook it merely
opened): the notebook's metadata keeps only the kernelspec (always "python3", see kernel_manager),
so language_info (the Python version ...) and widget state go; a cell's metadata keeps only its
tags, so execution timings, collapsed/scrolled and hidden-source flags go. A test
(tests/test_notebooks.py) enforces it and executes every notebook.
Cells tagged "summary" (cell metadata tags) print their text output in execute()'s summary, so
`make notebooks` shows the few lines that matter (live or recorded, probe verdicts, comparisons).
"""
import json
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import CourseError

NOTEBOOKS_DIR = Path(__file__).resolve().parents[1] / "notebooks"
SUMMARY_TAG = "summary"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
NOTEBOOK_METADATA = ("kernelspec",)          # what a committed notebook's metadata may hold
CELL_METADATA = ("tags",)                    # ... and a cell's
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def notebook_paths(folder=None):
    folder = Path(folder or NOTEBOOKS_DIR)
    return sorted(p for p in folder.glob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def committed_text(path):
    """The notebook as it will be committed: git's index (the staged copy, else the last commit's), so
    that a student who runs a notebook and saves it changes only the working copy, which nothing
    checks. The file itself when git does not track it (a notebook not added yet); None when the
    folder is not a git checkout (an unpacked copy: nothing is committed there)."""
    import subprocess
    path = Path(path).resolve()
    try:
        top = subprocess.run(["git", "-C", str(path.parent), "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if top.returncode != 0:
        return None
    rel = path.relative_to(Path(top.stdout.strip()).resolve()).as_posix()
    staged = subprocess.run(["git", "-C", top.stdout.strip(), "show", f":{rel}"], capture_output=True,
                            text=True, timeout=30)
    return staged.stdout if staged.returncode == 0 else path.read_text()


def output_problems(path, text=None):
    """What keeps `path` (or its text, e.g. committed_text's) from being a clean, output-free notebook,
    one line each."""
    nb = json.loads(text if text is not None else Path(path).read_text())
    bad = []
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        if cell.get("outputs"):
            bad.append(f"cell {i}: {len(cell['outputs'])} output(s)")
        if cell.get("execution_count") is not None:
            bad.append(f"cell {i}: execution count {cell['execution_count']}")
    for i, cell in enumerate(nb.get("cells", [])):
        extra = sorted(set(cell.get("metadata", {})) - set(CELL_METADATA))
        if extra:
            bad.append(f"cell {i}: session metadata {', '.join(extra)}")
    meta = nb.get("metadata", {})
    extra = sorted(set(meta) - set(NOTEBOOK_METADATA))
    if extra:
        bad.append(f"notebook metadata: {', '.join(extra)} (saved by Jupyter)")
    if meta.get("kernelspec") != KERNELSPEC:
        bad.append(f"notebook metadata: kernelspec {meta.get('kernelspec')} instead of python3's")
    return bad


def _nbformat():
    try:
        import nbformat
    except ImportError:
        raise CourseError("nbformat is not installed", hint="`make test` installs it into .venv; "
                          "with your own Python: pip install nbformat nbclient ipykernel ipywidgets") from None
    return nbformat


def strip(path):
    """Remove outputs, execution counts and session metadata (the module docstring). True if it changed."""
    nbformat = _nbformat()
    path = Path(path)
    before = path.read_text()
    nb = nbformat.reads(before, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        for key in set(cell.metadata) - set(CELL_METADATA):
            del cell.metadata[key]
    for key in set(nb.metadata) - set(NOTEBOOK_METADATA):
        del nb.metadata[key]
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    after = nbformat.writes(nb)
    if not after.endswith("\n"):
        after += "\n"
    if after != before:
        path.write_text(after)
        return True
    return False


def kernel_manager():
    """An async kernel manager for "python3" that starts ipykernel in this very interpreter: the
    kernelspec search is limited to ipykernel's built-in spec (sys.executable -m ipykernel_launcher),
    so a kernel registered elsewhere on the machine can never be picked instead."""
    try:
        from jupyter_client.kernelspec import KernelSpecManager
        from jupyter_client.manager import AsyncKernelManager
        import ipykernel  # noqa: F401  (the kernel itself must be importable here)
    except ImportError as e:
        raise CourseError(f"the Jupyter kernel stack is missing ({e})",
                          hint="`make test` installs it into .venv; with your own Python: "
                               "pip install nbformat nbclient ipykernel ipywidgets") from None
    return AsyncKernelManager(kernel_name="python3", kernel_spec_manager=KernelSpecManager(kernel_dirs=[]))


@dataclass
class Run:
    name: str
    ok: bool
    seconds: float
    cells: int
    error: str = ""
    summary: list = field(default_factory=list)

    def __str__(self):
        head = f"{'PASS' if self.ok else 'FAIL'} {self.name}: {self.cells} code cells in {self.seconds:.1f} s"
        body = [f"    {line}" for line in self.summary]
        if self.error:
            body += [f"    {line}" for line in self.error.strip().splitlines()[-25:]]
        return "\n".join([head] + body)


def _text_of(output):
    if output.get("output_type") == "stream":
        return output.get("text", "")
    data = output.get("data", {})
    for mime in ("text/markdown", "text/plain"):
        if mime in data and not (mime == "text/plain" and ("image/png" in data or
                                                           "application/vnd.jupyter.widget-view+json" in data)):
            return data[mime]
    return ""


def summary_lines(nb, max_lines=40):
    """The text output of the cells tagged "summary", ANSI colors removed."""
    lines = []
    for cell in nb.cells:
        if cell.cell_type == "code" and SUMMARY_TAG in cell.metadata.get("tags", []):
            for out in cell.get("outputs", []):
                lines += _ANSI.sub("", _text_of(out)).rstrip().splitlines()
    return lines[:max_lines]


def execute(path, out_dir=None, timeout=600, startup_timeout=120):
    """Run every cell of `path` in a fresh kernel of this interpreter, stop at the first error."""
    nbformat = _nbformat()
    try:
        from nbclient import NotebookClient
        from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
    except ImportError:
        raise CourseError("nbclient is not installed", hint="`make test` installs it into .venv; "
                          "with your own Python: pip install nbclient ipykernel ipywidgets") from None
    path = Path(path).resolve()
    nb = nbformat.read(path, as_version=4)
    # the kernel's own log (e.g. ipykernel 7's warning that local TCP is unencrypted) only at ERROR
    start, error = time.monotonic(), ""
    client = NotebookClient(nb, km=kernel_manager(), timeout=timeout, startup_timeout=startup_timeout,
                            kernel_name="python3", resources={"metadata": {"path": str(path.parent)}},
                            extra_arguments=["--IPKernelApp.log_level=ERROR"],
                            **_progress_hooks(path.name, start))
    # No stand-in for ipywidgets' Output widget: nbclient's (output_widget.py) sends the kernel a
    # comm message on the shell socket for every output it captures, while the same client awaits the
    # cell's reply on that socket; a reply that arrives during such a send can go unnoticed until the
    # cell's time limit (nbclient issue 312). On the GPU (H100 and H200, every run since 2026-12-05)
    # the fragment explorer's widget cell (interactive_output: a print and two figures) hung there
    # while the kernel sat idle. Without the stand-in, what a widget shows is recorded as the cell's
    # own output: the same text and figures, readable in the executed copy without a kernel.
    client.widget_registry = {}
    try:
        client.execute(cleanup_kc=True)        # we own the kernel manager: shut the kernel down after
    except CellExecutionError as e:
        error = _ANSI.sub("", str(e))
    except (CellTimeoutError, DeadKernelError, RuntimeError) as e:
        error = f"{type(e).__name__}: {_ANSI.sub('', str(e))}"
    seconds = time.monotonic() - start
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, out / path.name)
    cells = sum(c.cell_type == "code" for c in nb.cells)
    return Run(name=path.name, ok=not error, seconds=seconds, cells=cells, error=error, summary=summary_lines(nb))


def _progress_hooks(name, start):
    """nbclient's on_cell_start / on_cell_executed appending "<notebook> cell <i> started|done at <s> s"
    to the file COURSE_NOTEBOOK_LOG names, a line at a time; none when it is unset."""
    import os
    log = os.environ.get("COURSE_NOTEBOOK_LOG")
    if not log:
        return {}

    def write(what, cell, cell_index):
        if cell.cell_type == "code":                 # nbclient announces markdown cells too
            with open(log, "a") as f:
                f.write(f"{name} cell {cell_index} {what} at {time.monotonic() - start:.1f} s\n")

    return {"on_cell_start": lambda cell, cell_index: write("started", cell, cell_index),
            "on_cell_executed": lambda cell, cell_index, execute_reply: write("done", cell, cell_index)}


def python_note():
    """Which interpreter runs the kernels: the one running this."""
    return f"kernel: python3 = {sys.executable} (Python {sys.version.split()[0]})"
