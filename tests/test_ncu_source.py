"""common/ncu_source.py on real ncu output: the source pages (warp-state samples per SASS instruction)
of lab 7's v8 and t4 at 2048^3 on an H200 (ncu 2025.3.1, `make ncu` at a9b2af8, before v8's fast loop).
What the summary must show is what led to the fast loop: v8's copy block after the barrier, and t4's
pointer increment stalled behind the LDGSTS that reads the pointer."""
import gzip
import re
from pathlib import Path

import pytest

from common import ncu_source, profiling

FIX = Path(__file__).parent / "fixtures" / "ncu-2025.3.1"


def page(kernel):
    return gzip.open(FIX / f"source_{kernel}_sm_90_2048.csv.gz", "rt").read()


def test_v8_copy_block_after_the_barrier_holds_nine_percent_of_the_samples():
    s = ncu_source.summarize(page("v8"))
    assert s.kernel == "sgemm_v8_vec" and len(s.lines) > 2000 and s.total > 10000
    assert s.by_opcode[0][0] == "FFMA" and 70 < s.by_opcode[0][1] < 80
    first = s.stretches[0]
    assert first[1] > 100 and 8.5 < first[2] < 10.5, first
    stretch = s.lines[first[0]:first[0] + first[1]]
    assert sum(x.opcode.startswith("LDGSTS") for x in stretch) >= 6       # the copies are in it
    assert abs(sum(p for _, p, _ in s.by_opcode) - 100) < 1e-6


def test_t4_pointer_increment_waits_for_the_ldgsts_that_reads_it():
    s = ncu_source.summarize(page("t4"))
    top = max(s.lines, key=lambda x: x.samples)
    assert top.opcode == "IADD3" and max(top.reasons, key=top.reasons.get) == "long_sb"
    reg = re.match(r"IADD3 (R\d+),", top.source).group(1)
    before = s.lines[top.index - 20:top.index]
    assert any(x.opcode.startswith("LDGSTS") and f"[{reg}.64]" in x.source for x in before)


def test_report_names_opcodes_top_lines_and_barrier_stretches():
    text = ncu_source.report(ncu_source.summarize(page("v8")), top=3, opcodes=3)
    assert "FFMA" in text and "BAR at line" in text and "warp-state samples" in text
    assert len(text.splitlines()) < 20


@pytest.mark.parametrize("text,why", [("", "Source"), ('"ID","Kernel Name"\n"0","k"\n', "Source"),
                                      ('"Address","Source"\n"0x0","FFMA R1, R2, R3, R1"\n', "--set full")])
def test_pages_without_samples_say_what_is_missing(text, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        ncu_source.summarize(text)


def test_make_ncu_prints_and_writes_the_summary(tmp_path, monkeypatch, capsys):
    class Run:
        stdout = page("t4")
    monkeypatch.setattr(profiling.ncu, "run", lambda argv, **kw: Run())
    rep = tmp_path / "t4_sm_90_2048.ncu-rep"
    profiling._source_summary("ncu", rep, tmp_path)
    written = (tmp_path / "t4_sm_90_2048.source.txt").read_text()
    assert "IADD3 R206" in written and "long_sb" in written and "IADD3 R206" in capsys.readouterr().out


def test_make_ncu_goes_on_when_the_report_has_no_samples(tmp_path, monkeypatch, capsys):
    class Run:
        stdout = '"Address","Source"\n'
    monkeypatch.setattr(profiling.ncu, "run", lambda argv, **kw: Run())
    profiling._source_summary("ncu", tmp_path / "x.ncu-rep", tmp_path)
    assert "no per-instruction samples" in capsys.readouterr().out
