"""`make diff KERNEL=k6`: a rung against the rung before it in its ladder (the order of the lab's
table), as a unified diff with context or two aligned columns, colored on a terminal and plain when
piped (common/rungs.py)."""
import re
import shutil
import subprocess
from io import StringIO
from pathlib import Path
from types import SimpleNamespace

import pytest

from common import rungs
from common.errors import CourseError
from common.lab import ROOT, all_lab_dirs, load

ANSI = re.compile(r"\x1b\[[0-9;]*m")


class _Terminal(StringIO):
    def isatty(self):
        return True


def _lab(name):
    return load(ROOT / "labs" / name)


def _args(**kw):
    return SimpleNamespace(**{"kernel": None, "side_by_side": False, "context": None, "width": None,
                              "color": "auto", **kw})


def test_previous_is_the_row_before_in_the_labs_table():
    lab = _lab("lab07a-tf32-tensor-cores")
    rows = lab.ladders["tf32"]
    for before, k in zip(rows, rows[1:]):
        if k.yardstick or before.yardstick:
            continue
        assert rungs.previous_rung(lab, k.name)[:2] == (before, k)
    assert rungs.previous_rung(lab, "k1")[0].name == "v8"          # a ladder's start may be another lab's rung


def test_a_yardstick_and_the_first_rung_have_no_previous_and_say_why():
    lab = _lab("lab07-matmul-registers")
    with pytest.raises(CourseError) as e:
        rungs.previous_rung(lab, "cutlass")
    assert "library" in e.value.message and "t4" in e.value.hint
    with pytest.raises(CourseError) as e:
        rungs.previous_rung(lab, lab.ladders["fp32"][0].name)
    assert "first rung" in e.value.message and "KERNEL=" in e.value.hint
    with pytest.raises(CourseError) as e:
        rungs.previous_rung(lab, "zzz")
    assert "zzz" in e.value.message and "v6" in e.value.hint


def test_from_the_top_the_kernel_is_found_in_the_lab_that_owns_it():
    labs = [load(d) for d in all_lab_dirs()]
    assert rungs.find_lab("c3", labs).name == "lab07b-cute-sgemm"
    assert rungs.find_lab("v8", labs).name == "lab07-matmul-registers"     # borrowed elsewhere, owned here
    with pytest.raises(CourseError):
        rungs.find_lab("zzz", labs)


def test_color_on_a_terminal_only():
    assert not rungs.use_color(StringIO())                                  # piped
    assert rungs.use_color(_Terminal()) or "NO_COLOR" in __import__("os").environ
    assert rungs.use_color(StringIO(), "always") and not rungs.use_color(_Terminal(), "never")


def test_no_color_and_a_dumb_terminal_turn_color_off(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert not rungs.use_color(_Terminal())
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("TERM", "dumb")
    assert not rungs.use_color(_Terminal())


OLD = ["// v1: the idea", "int a = 1;", "int b = 2;", "", "x", "x", "x", "x", "x", "x", "x", "x", "int c = a + b;"]
NEW = ["// v2: v1 + one more idea", "int a = 1;", "int b = 2;", "int d = 4;", "", "x", "x", "x", "x", "x", "x",
       "x", "x", "int c = a + b + d;"]


def test_unified_shows_each_change_with_its_context_colored_or_plain():
    plain = rungs.unified(OLD, NEW, "v1.cu", "v2.cu", context=1)
    assert plain[:2] == ["--- v1.cu", "+++ v2.cu"] and not any(ANSI.search(l) for l in plain)
    assert "-int c = a + b;" in plain and "+int c = a + b + d;" in plain and "+int d = 4;" in plain
    assert sum(l.startswith("@@") for l in plain) == 2                  # two hunks: the x's between are left out
    colored = rungs.unified(OLD, NEW, "v1.cu", "v2.cu", context=1, color=True)
    assert "\x1b[31m-int c = a + b;\x1b[0m" in colored and "\x1b[32m+int d = 4;\x1b[0m" in colored
    assert [ANSI.sub("", l) for l in colored] == plain


def test_side_by_side_aligns_the_two_files_and_marks_each_change():
    lines = rungs.side_by_side(OLD, NEW, width=61, context=1)
    col = (61 - 3) // 2
    rows = [l for l in lines if not l.startswith("...")]
    for l in rows:                                            # the mark always sits in the same column
        assert len(l) <= 61 and (len(l) < col + 2 or l[col + 1] in " |<>"), l
    marks = {l[col + 1] for l in rows if len(l) > col + 1}
    assert {"|", ">"} <= marks
    assert any(l.startswith("...") and "unchanged" in l for l in lines)         # the x's are folded
    assert any(l.rstrip().endswith("int d = 4;") and l[col + 1] == ">" for l in rows)
    long = rungs.side_by_side(["a" * 200], ["b" * 200], width=61)
    assert long[0].startswith("a" * (col - 1) + "…")                     # cut to its column, said so


def test_make_diff_of_a_real_rung_piped_is_plain_and_names_both_files():
    out = StringIO()
    body = rungs.diff(_lab("lab07-matmul-registers"), _args(kernel="v4"), stream=out)
    text = out.getvalue()
    assert not ANSI.search(text) and body
    assert "v4" in text.splitlines()[0] and "against the rung before it, v3" in text
    assert "- labs/lab07-matmul-registers/kernels/v3_tiled.cu" in text
    assert "+ labs/lab07-matmul-registers/kernels/v4_1d_blocktiling.cu" in text
    assert re.search(r"\d+ lines added, \d+ removed", text)
    tty = _Terminal()
    rungs.diff(_lab("lab07-matmul-registers"), _args(kernel="v4", color="always", side_by_side=True, width=120),
               stream=tty)
    assert ANSI.search(tty.getvalue())


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_make_diff_passes_its_options_from_the_top_and_from_a_lab():
    def run(*args, cwd=ROOT):
        out = subprocess.run(["make", "-n", "--no-print-directory", "PYTHON=python3", *args], cwd=cwd,
                             capture_output=True, text=True, timeout=60).stdout
        return " ".join(out.replace("\\\n", " ").split())              # one line, single spaces
    top = run("diff", "KERNEL=k6", "SIDE=1", "CONTEXT=5")
    assert "-m common diff" in top and "--kernel k6 --side-by-side --context 5" in top and "--lab" not in top
    assert "--lab labs/lab07a-tf32-tensor-cores" in run("diff", "KERNEL=k6", "LAB=lab07a")
    lab = run("diff", "KERNEL=k6", cwd=ROOT / "labs" / "lab07a-tf32-tensor-cores")
    assert re.search(r"-m common diff --lab \S+lab07a-tf32-tensor-cores --kernel k6", lab)


def test_without_kernel_it_lists_the_rungs_it_can_show():
    with pytest.raises(CourseError) as e:
        rungs.diff(_lab("lab07c-hopper-wgmma"), _args())
    assert "KERNEL=" in e.value.message and "h2" in e.value.hint and "t4," not in e.value.hint + ","


def test_a_rung_whose_body_is_in_its_own_header_is_diffed_with_the_header_inlined(tmp_path):
    """v8's body lives in v8_pipelined.cuh (lab 7d includes it too): the diff against v7 must show the
    body, not one include line against v7's 250."""
    from common.rungs import rung_lines
    (tmp_path / "body.cuh").write_text("int body() { return 1; }\n")
    (tmp_path / "k.cu").write_text('// k\n#include "body.cuh"\n#include <cuda.h>\n#include "body.cuh"\n')
    lines = rung_lines(tmp_path / "k.cu")
    assert "int body() { return 1; }" in lines and lines.count("int body() { return 1; }") == 1
    assert "#include <cuda.h>" in lines and lines[0] == "// k"
    from common.lab import load
    from pathlib import Path
    lab = load(Path(__file__).resolve().parents[1] / "labs" / "lab07-matmul-registers")
    v8 = rung_lines(lab.kernel("v8").path)
    assert any("v8_pipelined.cuh (included here)" in l for l in v8) and len(v8) > 300
