"""Every notebook asks the student to change a parameter, write down a prediction, run and compare
(issue 41): a cell tagged "predict" holds the parameter and `PREDICTION = None`, the next one runs
and compares. Both answers of that cell work without a GPU, on the recorded results: PREDICTION still
None (it says so) and a number written in (it says how far off it was)."""
import importlib.util
import json

import pytest

from common import notebooks

PATHS = notebooks.notebook_paths()
STACK = [m for m in ("nbformat", "nbclient", "ipykernel") if importlib.util.find_spec(m) is None]
needs_stack = pytest.mark.skipif(bool(STACK), reason=f"needs the Jupyter kernel stack, missing: {', '.join(STACK)} "
                                                     "(`make test` installs it into .venv)")

# a prediction a student might write, per notebook: any value of the right kind will do
GUESSES = {"lab07_walkthrough.ipynb": "1.5", "hierarchy_explorer.ipynb": "100", "fragment_explorer.ipynb": "(0, 0)",
           "bank_explorer.ipynb": "1", "lab07a_tf32.ipynb": "(0, 0)", "lab07b_cute.ipynb": "1.0",
           "lab07c_hopper.ipynb": "2", "lab07d_decode.ipynb": "40.0", "colab_t4.ipynb": "2"}
STILL_NONE = "PREDICTION is still None"


def _cells(path):
    return json.loads(path.read_text())["cells"]


def _predict_cells(path):
    return [c for c in _cells(path) if c["cell_type"] == "code" and "predict" in c["metadata"].get("tags", [])]


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_notebook_has_a_change_predict_run_compare_cell(path):
    code = ["".join(c["source"]) for c in _predict_cells(path)]
    assert any("PREDICTION = None" in c for c in code), \
        f"{path.name}: no cell tagged 'predict' with a parameter to change and `PREDICTION = None  # your guess: ...`"
    assert any(STILL_NONE in c for c in code), f"{path.name}: no cell tagged 'predict' that compares and says '{STILL_NONE}'"
    assert path.name in GUESSES, f"add a guess for {path.name} to GUESSES"


def _trimmed(path, tmp_path, guess):
    """The notebook's first two code cells (its lab, its setup, the GPU forced off) and its predict
    cells, PREDICTION written in when `guess` is given."""
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    keep = code[:2] + [c for c in code[2:] if "predict" in c["metadata"].get("tags", [])]
    for c in keep:
        src = "".join(c["source"]).replace("USE_GPU = True", "USE_GPU = False")
        if guess is not None:
            src = src.replace("PREDICTION = None", f"PREDICTION = {guess}")
        c["source"] = src
    nb["cells"] = keep
    out = tmp_path / path.name
    out.write_text(json.dumps(nb))
    return out


def _printed(run_dir, name):
    cells = json.loads((run_dir / name).read_text())["cells"]
    return "".join(o.get("text", "") if isinstance(o.get("text", ""), str) else "".join(o["text"])
                   for c in cells if "predict" in c["metadata"].get("tags", []) for o in c.get("outputs", []))


@needs_stack
@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_prediction_cell_runs_on_recorded_results_with_and_without_a_guess(path, tmp_path):
    for guess, expect in ((None, STILL_NONE), (GUESSES.get(path.name, "1"), "you predicted")):
        src_dir, run_dir = tmp_path / f"src-{guess is None}", tmp_path / f"run-{guess is None}"
        src_dir.mkdir()
        run = notebooks.execute(_trimmed(path, src_dir, guess), out_dir=run_dir, timeout=300)
        assert run.ok, f"{path.name}, PREDICTION = {guess}: stopped with an error:\n{run.error[-3000:]}"
        printed = _printed(run_dir, path.name)
        assert expect in printed, f"{path.name}, PREDICTION = {guess}: expected '{expect}' in:\n{printed}"
