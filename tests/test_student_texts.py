"""What a student reads holds no development history: no commit hash, no path outside the course
(`scratch/`, `shared/course/`: the texts the labs follow are cited by title and section, never by
a path). Student texts: the READMEs (top level, each lab's, each grading folder's) and the
notebooks' cells (committed without outputs, so their sources are all a student opens)."""
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# a commit as people paste one: 7 to 40 hex digits with at least one digit and one letter, standing alone
# (a hash of digits only reads as a number: it cannot be told from one, and is let through)
HASH = re.compile(r"(?<![0-9A-Za-z])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![0-9A-Za-z])")
OUTSIDE = ("scratch/", "shared/course")


def student_texts():
    paths = [ROOT / "README.md"] + sorted(ROOT.glob("labs/*/README.md")) + sorted(ROOT.glob("labs/*/grading/README.md")) \
        + sorted(ROOT.glob("common/grading/README.md")) + sorted(ROOT.glob("notebooks/*.ipynb"))
    return [p for p in paths if p.exists()]


def text_of(path):
    if path.suffix == ".ipynb":
        return "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"])
    return path.read_text()


def problems(text):
    found = [f"commit-like '{m.group()}'" for m in HASH.finditer(text)]
    return found + [f"path outside the course '{s}'" for s in OUTSIDE if s in text]


PATHS = student_texts()


@pytest.mark.parametrize("path", PATHS, ids=[str(p.relative_to(ROOT)) for p in PATHS])
def test_student_text_has_no_commit_hash_and_no_path_outside_the_course(path):
    found = problems(text_of(path))
    assert not found, (f"{path.relative_to(ROOT)}: {', '.join(found[:5])}. A student text says what was measured "
                       "and where (GPU, date), never a commit or a development path: history goes to NOTES.md")


@pytest.mark.parametrize("text", ["the fix at 8674c58 made it", "see ead7ea6", "results/x_2026-12-03_aa55e34.json",
                                  "read scratch/gemv/gpu-1.log", "shared/course/matmul-ii-chapter.txt",
                                  "commit 40375572ce5df777db8b4850e9425032c85c8fd3"])
def test_the_check_finds_hashes_and_outside_paths(text):
    assert problems(text)


@pytest.mark.parametrize("text", ["128x256x32 tiles", "HMMA.1688.F32.TF32", "4096³: 103.6 %", "sm_90a", "cafebabe",
                                  "1234567 bytes", "Swizzle<1,2,3>", "m64n256k16", "a 2026-12-03 record"])
def test_the_check_lets_ordinary_words_and_numbers_through(text):
    assert not problems(text)


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
READMES = [p for p in PATHS if p.suffix == ".md"]


@pytest.mark.parametrize("path", READMES, ids=[str(p.relative_to(ROOT)) for p in READMES])
def test_readme_links_lead_to_files_of_the_course(path):
    missing = [t for t in LINK.findall(path.read_text()) if "://" not in t and not (path.parent / t).exists()]
    assert not missing, f"{path.relative_to(ROOT)} links to what the course does not have: {missing}"


def test_the_link_check_reads_markdown_links():
    assert LINK.findall("see [the sheet](labs/x/README.md) and [a part](grading/README.md#parts), "
                        "[web](https://example.org)") == ["labs/x/README.md", "grading/README.md", "https://example.org"]
