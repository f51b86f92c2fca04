"""The metrics ncu is asked for exist on every chip the course supports (no GPU needed).

ncu stops with an error on a metric the chip does not have, and the names differ between chips,
so each list is checked against what ncu 2025.3.1 itself says it has on each chip
(fixtures/ncu-2025.3.1/, recorded on the H200)."""
import re
from pathlib import Path

import pytest

from common import ncu_metrics as nm
from common.build import ALL_ARCHS
from common.errors import CourseError

REFERENCE = Path(__file__).parent / "fixtures" / "ncu-2025.3.1"
CHIP_COLUMNS = ["ga100", "ga102", "ad102", "gh100", "gb202"]


def _availability():
    table = {}
    lines = (REFERENCE / "metric_availability.tsv").read_text().splitlines()
    for line in lines[1:]:
        cols = line.split("\t")
        table[cols[0]] = {"chips": {c for c, y in zip(CHIP_COLUMNS, cols[1:6]) if y == "y"}, "type": cols[6]}
    return table


AVAILABLE = _availability()
SECTION_METRICS = set(re.findall(r'Name: "([^"]+)"', (REFERENCE / "section_metric_names.txt").read_text()))

# How a metric's name may go on after its base name, by ncu's metric type.
SUFFIXES = {
    "Counter": re.compile(r"\.(sum|avg|min|max)(\.(per_second|per_cycle_active|per_cycle_elapsed|"
                          r"pct_of_peak_sustained_active|pct_of_peak_sustained_elapsed))?"),
    "Ratio": re.compile(r"\.(ratio|pct|max_rate)"),
    "Throughput": re.compile(r"\.(avg|min|max)\.pct_of_peak_sustained_(active|elapsed)"),
}

# sm_75 (Turing, tu104) has no metric table: its metric names were never checked against ncu's list
# (fixtures/ncu-2025.3.1 has five chips), so `make ncu-table` on a T4 says so instead of guessing.
NCU_ARCHS = [a for a in ALL_ARCHS if a != "sm_75"]
REQUESTS = [(arch, which, metric) for arch in NCU_ARCHS
            for which, metrics in (("fp32", nm.fp32_metrics(arch)), ("tensor", nm.tensor_metrics(arch)))
            for metric in metrics]


@pytest.mark.parametrize("arch,which,metric", REQUESTS, ids=[f"{a}-{w}-{m}" for a, w, m in REQUESTS])
def test_every_requested_metric_exists_on_its_chip(arch, which, metric):
    chip = nm.CHIPS[arch]
    base, suffix = metric.split(".", 1)[0], metric[len(metric.split(".", 1)[0]):]
    if base in AVAILABLE:
        entry = AVAILABLE[base]
        assert chip in entry["chips"], f"{metric} is not collectable on {chip} ({arch})"
        assert SUFFIXES[entry["type"]].fullmatch(suffix), f"{metric}: {suffix!r} is not a {entry['type']} suffix"
    else:
        assert metric in SECTION_METRICS, f"{metric} is neither listed by --query-metrics nor in a stock section"


def test_every_chip_of_the_course_has_a_metric_table():
    assert set(nm.CHIPS) == set(NCU_ARCHS)
    with pytest.raises(CourseError, match="no ncu metric table for sm_75"):
        nm.chip_for("sm_75")
    assert set(nm.CHIPS.values()) == set(CHIP_COLUMNS)


@pytest.mark.parametrize("arch", NCU_ARCHS)
def test_stall_reasons_are_exactly_those_the_chip_has(arch):
    """Every reason ncu has on the chip is collected (so the top three are really the top three),
    except mio_throttle_pipe_mio, a part of mio_throttle."""
    chip = nm.CHIPS[arch]
    pattern = re.compile(r"smsp__average_warps_issue_stalled_(\w+)_per_issue_active")
    on_chip = {pattern.fullmatch(name).group(1) for name, e in AVAILABLE.items()
               if pattern.fullmatch(name) and chip in e["chips"]}
    assert set(nm.STALL_REASONS[chip]) == on_chip - {"mio_throttle_pipe_mio"}


def test_the_hmma_pipe_metric_differs_on_sm_120():
    """The stock counter sm__pipe_tensor_op_hmma_* does not exist on sm_120: a list that hard-codes it
    fails there (tooling-facts 1.6)."""
    assert "sm__pipe_tensor_op_hmma_cycles_active" not in " ".join(nm.tensor_metrics("sm_120"))
    assert nm.tensor_fp_pct("gb202").startswith("sm__pipe_tensor_subpipe_hmma")


def test_sm_90a_uses_the_sm_90_table_and_unknown_chips_are_refused():
    assert nm.chip_for("sm_90a") == "gh100"
    with pytest.raises(CourseError, match="no ncu metric table for sm_100"):
        nm.fp32_metrics("sm_100")


# --- the derived quantities ---------------------------------------------------------------------

def test_shared_loads_per_warp_ffma_divides_thread_ffmas_by_32():
    # one warp: 4 LDS.128 warp instructions while each of its 32 threads does 64 FFMAs (v6's k step)
    m = {nm.LDS_INST: 4, nm.FFMA_THREAD_INST: 64 * 32}
    assert nm.shared_loads_per_warp_ffma(m) == pytest.approx(4 / 64)


def test_without_broadcast_the_ideal_follows_the_load_width():
    # one full-warp LDS.32, one LDS.64, one LDS.128, every lane its own address:
    # 128 + 256 + 512 unique bytes -> 1 + 2 + 4 wavefronts, and unique bytes per lane = the widths
    m = {nm.LD_BYTES: 128 + 256 + 512, nm.LDSM_BYTES: 0, nm.LD_WAVEFRONTS: 9, nm.LDS_INST: 3}
    excess, ideal = nm.excess_wavefronts(m, "ld")
    assert ideal == 7 and excess == 2
    assert nm.shared_load_unique_bytes_per_lane(m) == pytest.approx((4 + 8 + 16) / 3)


def test_broadcasts_lower_the_unique_bytes_and_the_ideal():
    """ncu counts shared-load bytes after broadcast. One LDS.128 whose 32 lanes all read the same
    16 bytes: 16 unique bytes, 0.5 per lane; ideal 16/128 of a wavefront, although the hardware
    spends 2 (two half-warp phases, common/banks.py): an excess that is no bank conflict."""
    m = {nm.LD_BYTES: 16, nm.LDSM_BYTES: 0, nm.LD_WAVEFRONTS: 2, nm.LDS_INST: 1}
    assert nm.shared_load_unique_bytes_per_lane(m) == pytest.approx(0.5)
    assert nm.excess_wavefronts(m, "ld") == (2 - 16 / 128, 16 / 128)


def test_ldsm_bytes_count_toward_the_load_ideal():
    m = {nm.LD_BYTES: 0, nm.LDSM_BYTES: 512, nm.LD_WAVEFRONTS: 4}     # one LDSM .x4
    assert nm.excess_wavefronts(m, "ld") == (0, 4)


def test_missing_metrics_give_none_not_zero():
    assert nm.shared_loads_per_warp_ffma({nm.LDS_INST: 5}) is None
    assert nm.excess_wavefronts({nm.LD_WAVEFRONTS: 5, nm.LD_BYTES: 128}, "ld") == (None, None)
    assert nm.pct_of(3, 0) is None


def test_top_stalls_leave_out_issuing_and_ready_warps():
    m = {nm.stall_metric(r): v for r, v in [("selected", 9.0), ("not_selected", 8.0), ("mio_throttle", 5.0),
                                            ("barrier", 1.0), ("short_scoreboard", 3.0), ("wait", 2.0)]}
    assert nm.top_stalls(m, 3) == [("mio_throttle", 5.0), ("short_scoreboard", 3.0), ("wait", 2.0)]
