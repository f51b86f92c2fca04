"""What the course's texts say about timing is what common/timing.py does: the number of warm-up
rounds before the timed repetitions, and the range of repetitions (make bench, tune, compare and the
sweep all time through time_interleaved)."""
import inspect
import re
from pathlib import Path

from common import timing

ROOT = Path(__file__).resolve().parents[1]
WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
TEXTS = sorted([ROOT / "README.md", ROOT / "NOTES.md", *ROOT.glob("labs/*/README.md"), *ROOT.glob("labs/*/NOTES.md")])


def _default(fn, name):
    return inspect.signature(fn).parameters[name].default


def test_the_texts_give_the_number_of_warm_up_rounds_the_timing_does():
    warmup = _default(timing.time_interleaved, "warmup")
    said = []
    for path in TEXTS:
        if not path.exists():
            continue
        for m in re.finditer(r"\b(\d+|one|two|three|four|five)\s+warm-?ups?\b", path.read_text(), re.I):
            n = m.group(1).lower()
            said.append((path.relative_to(ROOT), int(WORDS.get(n, n) if not n.isdigit() else n)))
    wrong = [f"{p}: {n} warm-up(s)" for p, n in said if n != warmup]
    assert not wrong, f"common/timing.py runs {warmup} warm-up rounds; the texts say: {'; '.join(wrong)}"


def test_the_records_say_the_same():
    from common import sweep, targets
    warmup = _default(timing.time_interleaved, "warmup")
    for module in (targets, sweep):
        text = Path(module.__file__).read_text()
        for n in re.findall(r"(\d+) warm-up rounds", text):
            assert int(n) == warmup, f"{module.__name__} records {n} warm-up rounds; timing does {warmup}"
    lo, hi = _default(timing.time_interleaved, "min_reps"), _default(timing.time_interleaved, "max_reps")
    assert f"{lo}-{hi} repetitions" in Path(targets.__file__).read_text()
