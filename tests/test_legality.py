"""common.legality: the compiler says which parameter sets a kernel's static_asserts accept, for a whole
batch in one compile, with each refused set's own assert sentence (needs nvcc, no GPU)."""
import shutil

import pytest

from common import legality
from common.errors import CourseError
from common.legality import Legality

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")

KERNEL = """// a toy kernel: the idea, the tiles
#include <cstdint>

// BEGIN PARAMETERS
#ifndef BM
#define BM 64       // block rows
#endif
#ifndef WM
#define WM 32       // warp rows
#endif
#define WARPS (BM / WM)
constexpr int ROWS_PER_WARP = BM / WARPS;
static_assert(WM % 16 == 0, "toy: WM must be a multiple of 16, the M of one mma");
static_assert(BM % WM == 0, "toy: the block tile must split into whole warp tiles");
// END PARAMETERS

#include "not_needed_by_the_rules.cuh"

namespace toy {
// BEGIN PARAMETERS
static_assert(WARPS <= 32, "toy: at most 32 warps");
// END PARAMETERS
__global__ void k(float* c) { c[threadIdx.x] = ROWS_PER_WARP; }
}
"""


@pytest.fixture
def toy(tmp_path):
    (tmp_path / "kernels").mkdir()
    path = tmp_path / "kernels" / "toy.cu"
    path.write_text(KERNEL)
    return path


def test_a_batch_is_judged_in_one_compile_with_each_asserts_own_sentence(toy, monkeypatch):
    runs = []
    real = legality.subprocess.run
    monkeypatch.setattr(legality.subprocess, "run", lambda *a, **k: runs.append(a) or real(*a, **k))
    rules = Legality(toy)
    got = rules.check([{}, dict(WM=24), dict(BM=80), dict(BM=96, WM=48), dict(BM=2048, WM=16), dict(WM=16)])
    assert got == [None, "toy: WM must be a multiple of 16, the M of one mma",
                   "toy: the block tile must split into whole warp tiles", None,
                   "toy: at most 32 warps", None]
    assert len(runs) == 1


def test_the_first_broken_rule_in_file_order_is_the_reason(toy):
    # WM = 24 breaks both rules of the first block: the first one is named
    assert Legality(toy)(dict(BM=100, WM=24)) == "toy: WM must be a multiple of 16, the M of one mma"


def test_a_compiler_error_that_is_no_assert_is_named_with_its_kernel_line(toy):
    why = Legality(toy)(dict(WM=128))          # BM / WM = 0 warps: BM / WARPS divides by zero
    line = KERNEL.splitlines().index("constexpr int ROWS_PER_WARP = BM / WARPS;") + 1
    assert why == f"toy.cu:{line}: division by zero"


def test_answers_are_cached_on_disk_and_a_changed_rule_asks_again(toy, monkeypatch):
    assert Legality(toy).check([dict(WM=16), dict(BM=48, WM=24)])[1].startswith("toy: WM must be")
    assert (toy.parents[1] / "build" / "legality").is_dir()
    monkeypatch.setattr(legality.subprocess, "run", lambda *a, **k: pytest.fail("compiled again"))
    assert Legality(toy).check([dict(BM=48, WM=24), dict(WM=16)])[1] is None
    monkeypatch.undo()
    toy.write_text(KERNEL.replace("WM % 16 == 0", "WM % 8 == 0"))
    assert Legality(toy)(dict(BM=48, WM=24)) is None


def test_an_unknown_parameter_is_refused_without_compiling(toy, monkeypatch):
    monkeypatch.setattr(legality.subprocess, "run", lambda *a, **k: pytest.fail("compiled"))
    why = Legality(toy)(dict(BN=64))
    assert "toy.cu has no parameter BN" in why and "BM, WM" in why


def test_a_kernel_without_marked_rules_gets_a_message_that_says_what_to_mark(tmp_path):
    path = tmp_path / "plain.cu"
    path.write_text("#define BM 64\nstatic_assert(BM > 0, \"x\");\n")
    with pytest.raises(CourseError, match="marks no complete block") as e:
        Legality(path)
    assert legality.BEGIN in e.value.hint and legality.END in e.value.hint


def test_marked_lines_that_do_not_compile_alone_are_reported(toy):
    toy.write_text(KERNEL.replace("#define WARPS (BM / WM)", "#define WARPS (BM / WM)\nusing X = cute::Int<1>;"))
    got = Legality(toy).check([{}, dict(WM=16)])
    assert all(why and "cute" in why for why in got)
