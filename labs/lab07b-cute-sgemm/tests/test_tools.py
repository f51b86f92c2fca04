"""The lab's GPU tools without a GPU: what they work out on the host (tools/wave_pace.py), and the
clear error, not a traceback, where there is no GPU to time on."""
import importlib.util
import math

import pytest

from common.device import gpu_status
from common.errors import CourseError
from common.testing import lab_of

LAB = lab_of(__file__)


def _tool(name):
    spec = importlib.util.spec_from_file_location(name, LAB.dir / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


wave_pace = _tool("wave_pace")


@pytest.mark.parametrize("tiles", [1, 7, 46, 132, 264, 396, 792, 1056, 2 * 3 * 5 * 7 * 11])
def test_wave_pace_grid_is_exact_and_as_square_as_divisors_allow(tiles):
    rows, cols = wave_pace.grid_of(tiles)
    assert rows * cols == tiles and rows <= cols
    assert not any(tiles % d == 0 for d in range(rows + 1, math.isqrt(tiles) + 1))


def test_wave_pace_fit_recovers_fixed_cost_and_pace():
    # t = 12 us + 0.7 ms per 4096 of K, with a little noise that must not move the fit far
    points = [(K, 0.012 + 0.7 * K / 4096 + (1e-4 if i % 2 else -1e-4)) for i, K in enumerate(wave_pace.KS)]
    fixed_us, pace = wave_pace.fit(points)
    assert fixed_us == pytest.approx(12, abs=0.2) and pace == pytest.approx(0.7, rel=1e-3)


@pytest.mark.parametrize("argv", [["x"], ["4096"], ["1000", "4096"]])
def test_wave_pace_refuses_bad_ks_or_missing_gpu_with_a_hint(argv):
    with pytest.raises(CourseError) as e:
        wave_pace.main(argv)
    assert e.value.hint
    if gpu_status()[0]:                   # on a GPU the K check speaks; without one, the GPU check first
        assert "K" in str(e.value)


def test_wave_pace_times_c6s_builds_beside_c6_each_with_its_own_tile():
    from common.compare import parse_builds
    runs = wave_pace.kernels(LAB, wave_pace.load("lab07-matmul-registers"),
                             parse_builds("BN=256,THR_N=32,MIN_BLOCKS=1,STAGES=4"))
    labels = [label for label, _, _ in runs]
    assert labels == ["c6 (whole tiles)", "c6[BN256_THR_N32_MIN_BLOCKS1_STAGES4] (whole tiles)", "v8"]
    assert runs[1][2].tile == (128, 256) and runs[1][2].threads == 512 and runs[0][2].tile == (128, 128)


@pytest.mark.parametrize("argv", [["--builds"], ["--builds", "BN"], ["--builds=BN=256", "100", "4096"]])
def test_wave_pace_says_what_is_wrong_with_its_builds_or_ks(argv):
    with pytest.raises(CourseError) as e:
        wave_pace.main(argv)
    assert e.value.hint and "GPU" not in str(e.value)


@pytest.mark.parametrize("n", [2048, 4096])
def test_make_ncu_profiles_every_launch_of_c6s_call_whichever_entries_run(n):
    # At 4096^3 on the H200 c6 launches its whole tiles, then its workers: a filter on its vec entry
    # alone profiled nothing. Every launch of the marked call among its entries, one of each at most.
    from common import profiling
    k = LAB.kernel("c6")
    argv = profiling.ncu_argv(LAB, "ncu", "c6", n, metrics=["gpu__time_duration.sum"])
    assert argv[argv.index("--profile-from-start") + 1] == "off"
    assert argv[argv.index("--launch-count") + 1] == str(1 + len(k.helpers)) and "--launch-skip" not in argv
    pattern = argv[argv.index("--kernel-name") + 1]
    assert pattern.startswith("regex:")
    import re
    names = [k.entries["vec"], *k.helpers.values()]
    assert all(re.fullmatch(pattern[len("regex:"):], e) for e in names)
    assert not re.fullmatch(pattern[len("regex:"):], k.entries["vec"] + "_x")


@pytest.mark.skipif(gpu_status()[0], reason="on a GPU this would run ncu; the name check is what is tested")
@pytest.mark.parametrize("name", ["c1", "c6"])
def test_make_ncu_takes_any_kernel_of_the_lab_not_only_the_tables_rows(name):
    # NCU_TABLE is c3, c4, c5 (the bank check); `make ncu KERNEL=c6` used to stop at the name
    import argparse
    from common import profiling
    assert name not in profiling.profile_names(LAB)
    with pytest.raises(CourseError) as e:
        profiling.ncu_full(LAB, argparse.Namespace(kernel=name, size=None))
    assert "no kernel" not in str(e.value) and "GPU" in str(e.value)
    with pytest.raises(CourseError) as e:
        profiling.ncu_full(LAB, argparse.Namespace(kernel="c9", size=None))
    assert "c6" in e.value.hint


def test_make_ncu_names_a_helper_launch_and_gives_it_no_tflops():
    # The whole-tiles launch does part of the GEMM: 2 n^3 over its time alone would overstate it
    from types import SimpleNamespace
    from common import ncu_metrics as nm
    from common import profiling
    k = LAB.kernel("c6")
    n = 4096
    for entry, label, has_tflops in ((k.helpers["tiles"], "c6 [tiles]", False), (k.entries["vec"], "c6/vec", True)):
        launch = SimpleNamespace(kernel=entry, metrics={nm.DURATION: 2.06e6}, units={nm.DURATION: "nsecond"})
        row = profiling._common_columns(LAB, "c6", launch, n)
        assert row["kernel"] == label and row["entry"] == entry
        assert (row["tflops"] is not None) == has_tflops
