"""Every graded lab's known-wrong kernels (grading/wrong/*.patch), one rule for all labs: a patch applies to
its reference (the part's kernel, or the header its WRONG row names), says its bug in its first line, is a
small change marked BUG, and each code part has at least two of them. A lab's own tests add its stricter
rules (lab 7 diffs its patches' code line by line; labs 7b and 7c want two different reasons a part)."""
import pytest

from common.grading import patches
from common.grading.spec import Grading, has_grading
from common.lab import all_lab_dirs, load

GRADINGS = [Grading(load(d)) for d in all_lab_dirs() if has_grading(load(d))]
WRONG = [pytest.param(g, w, id=f"{g.lab.short}-{w.name}") for g in GRADINGS for w in g.wrong]


def _code(lines):
    return [l for l in lines if l.strip() and not l.strip().startswith("//")]


@pytest.mark.parametrize("g,w", WRONG)
def test_each_known_wrong_kernel_applies_and_is_a_small_marked_change(g, w, tmp_path):
    ref = (g.lab.kernels_dir / w.file) if w.file else g.kernel_files()[w.part]
    out = patches.apply_file(g.wrong_file(w), ref, tmp_path / ref.name)
    p = patches.parse(g.wrong_file(w).read_text(), w.patch)
    assert p.preamble.startswith(w.name + ":"), "the first line names the bug"
    code = _code(p.added)
    assert len(code) <= w.max_diff_lines, f"{len(code)} lines of code added, at most {w.max_diff_lines}"
    assert not code or any("BUG" in l for l in p.added), "an added line says BUG"
    assert out.read_text() != ref.read_text()


@pytest.mark.parametrize("g", GRADINGS, ids=lambda g: g.lab.short)
def test_each_code_part_has_at_least_two_known_wrong_kernels(g):
    for p in g.code_parts:
        assert len([w for w in g.wrong if w.part == p.name]) >= 2, p.name
