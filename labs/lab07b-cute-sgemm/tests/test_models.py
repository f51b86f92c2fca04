"""Lab 7b's models, checked without a GPU: the Python mirrors of the layouts (models.py) against CuTe's
own, printed by the host program tools/layouts.cu; the bank model's counts for the swizzle that the
README quotes; the tuner's legality: c5's static_asserts, asked of the compiler."""
import json
import shutil
from pathlib import Path

import pytest

from common import banks
from common.testing import lab_of, legality_drift

LAB = lab_of(__file__)
MODELS = LAB.module("models")
KERNELS = LAB.kernels_dir


@pytest.fixture(scope="module")
def printed():
    return LAB.module("layouts").run()


def test_the_swizzled_a_tile_is_cutes_swizzle_1_2_3(printed):
    for m, offsets in printed.offsets.items():
        assert offsets == [MODELS.sa_offset(m, k) for k in range(MODELS.BK)], m


def test_the_bank_grids_are_cutes(printed):
    assert printed.banks["plain"] == MODELS.bank_grid(swizzled=False)
    assert printed.banks["swizzled"] == MODELS.bank_grid(swizzled=True)
    # odd rows: the two 16-byte halves of each 32-byte group of banks change places, whole chunks move
    assert printed.banks["swizzled"][1][:8] == [4, 5, 6, 7, 0, 1, 2, 3]


def test_the_mma_partitions_are_cutes(printed):
    for name, permuted in (("plain", False), ("permuted", True)):
        for lane, values in printed.mma[name].items():
            assert values == [MODELS.mma_mn(lane, 0, j, permuted) for j in range(8)], (name, lane)
    # c5: lane 1's eight columns are two aligned groups of four (128-bit stores of C)
    assert [n for _, n in printed.mma["permuted"][1]] == [4, 5, 6, 7, 68, 69, 70, 71]


def test_the_copy_partitions_are_cutes(printed):
    per_a, per_b = MODELS.BK // 4, MODELS.BN // 4
    for lane in range(32):
        assert printed.copy_a[lane] == (lane // per_a, 4 * (lane % per_a))
        assert printed.copy_b[lane] == (4 * (lane % per_b), lane // per_b)


def test_the_host_program_uses_the_kernels_layout_expressions():
    host = (LAB.dir / "tools" / "layouts.cu").read_text()
    c5 = (KERNELS / "c5_wide_epilogue.cu").read_text()
    for expr in ("using PermN = Layout<Shape<Int<THR_N>, _4, Int<BN / (4 * THR_N)>>, Stride<_4, _1, Int<4 * THR_N>>>;",
                 "Layout<Shape<Int<THR_M>, Int<THR_N>, _1>, Stride<Int<THR_N>, _1, _0>>{},",
                 "make_layout(make_shape(Int<THREADS / (BK / 4)>{}, Int<BK / 4>{}), LayoutRight{}),",
                 "make_layout(make_shape(Int<BN / 4>{}, Int<THREADS / (BN / 4)>{})),"):
        assert expr in host and expr in c5, expr
    assert "using SwizzleA = Swizzle<1, 2, log2i(BK) - 2>;" in c5 and (MODELS.SW_B, MODELS.SW_M, MODELS.SW_S) == (1, 2, 3)


def test_the_swizzle_removes_the_2_way_conflict_of_the_worklogs_32_bit_reads():
    plain = banks.evaluate(LAB, "A read LDS.32, plain (c3)")
    swizzled = banks.evaluate(LAB, "A read LDS.32, Swizzle<1,2,3> (c4)")
    assert (plain.wavefronts, plain.ways) == (2, 2) and (swizzled.wavefronts, swizzled.conflicts) == (1, 0)


def test_the_128_bit_reads_nvcc_emits_never_conflict_with_or_without_it():
    for name in ("A read LDS.128, plain (c3)", "A read LDS.128, Swizzle<1,2,3> (c4)"):
        a = banks.evaluate(LAB, name)
        assert (a.wavefronts, a.conflicts) == (2, 0), name
    assert banks.evaluate(LAB, "B read LDS.128 (c5)").wavefronts == 4
    assert banks.evaluate(LAB, "B read LDS.32 (c1-c4)").wavefronts == 1


def test_the_copies_stay_conflict_free_under_the_swizzle():
    for name in ("A copy 16-byte, plain (c3)", "A copy 16-byte, Swizzle<1,2,3> (c4)", "B copy 16-byte"):
        assert banks.evaluate(LAB, name).conflicts == 0, name


def test_the_main_loop_predictions_the_readme_quotes():
    c3, c4, c5 = (banks.predict_kernel(LAB, k) for k in ("c3", "c4", "c5"))
    assert round(c3["ld"]["per_instruction"], 2) == round(c4["ld"]["per_instruction"], 2) == 1.2
    assert c5["ld"]["per_instruction"] == 3.0 and c3["st"]["per_instruction"] == 4.0


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_tunings_legality_is_c5s_static_asserts_asked_of_the_compiler():
    """The verdicts and candidates of the Python copy of c5's rules it replaced (recorded in
    fixtures/legality_c5.json before that copy was deleted); a refused candidate gets c5's sentence."""
    t = LAB.module("tuning")
    record = Path(__file__).parent / "fixtures" / "legality_c5.json"
    assert legality_drift(t.reason_illegal, record) == []
    cands = t.candidates()
    assert cands == json.loads(record.read_text())["candidates"] and cands[0] == {} and len(cands) < 30
    assert "power of two" in t.reason_illegal(dict(BK=24))
    assert "128 accumulators" in t.reason_illegal(dict(BM=256, BN=256))
    assert t.reason_illegal(dict(BK=24)) in (KERNELS / "c5_wide_epilogue.cu").read_text()
    assert "def reason_illegal" not in Path(t.__file__).read_text()


def test_the_setup_script_installs_the_wheel_the_resolver_names():
    from common.headers import CUTLASS_WHEEL
    setup = (LAB.dir.parents[1] / "scripts" / "setup-venv.sh").read_text()
    assert f"--no-deps {CUTLASS_WHEEL}" in setup


def test_a_missing_wheel_is_one_message_saying_what_to_run(monkeypatch, tmp_path):
    import importlib.util
    from common import headers
    from common.errors import CourseError
    monkeypatch.delenv("CUTLASS_INCLUDE", raising=False)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(CourseError) as e:
        headers.cutlass_include()
    assert "pip install --no-deps nvidia-cutlass==" in e.value.hint
    monkeypatch.setenv("CUTLASS_INCLUDE", str(tmp_path))
    with pytest.raises(CourseError) as e:
        headers.cutlass_include()
    assert "cute/tensor.hpp" in e.value.message
