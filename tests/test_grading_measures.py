"""The grader's measured check kinds (common/grading/measures.py: bandwidth, bitwise) and the two SASS
kinds beside them (static.py: bytes-in-flight, ordered-reduce), tested without a GPU on synthetic
data: the verdicts and their reasons, the worker's loop over repeated runs with a fake problem, the
SASS readers on listings written here."""
from collections import Counter

import numpy as np
import pytest

from common.grading import grader, measures, static
from common.grading.spec import Check

BW = Check("bandwidth", 2, "", "bandwidth", needs_gpu=True, shape=(1, 8192, 8192), threshold=75)
BIT = Check("bitwise", 2, "", "bitwise", needs_gpu=True, shape=(16, 1024, 16384))


# ---------------------------------------------------------------------------------------------
# bandwidth
# ---------------------------------------------------------------------------------------------

def _bw(pct):
    return {"bandwidth": {"shape": [1, 8192, 8192], "bytes": 268 << 20, "student_ms": 0.1, "copy_ms": 0.1,
                          "student_gbs": 42 * pct, "copy_gbs": 4200.0, "pct_of_copy": pct}}


def test_the_verdicts_speak_the_graders_states():
    assert (measures.PASS, measures.FAIL) == (grader.PASS, grader.FAIL)


def test_bandwidth_at_the_threshold_passes_and_below_it_names_the_numbers():
    assert measures.bandwidth_verdict(_bw(75.0), BW)[0] == grader.PASS
    status, reason, details = measures.bandwidth_verdict(_bw(31.0), BW)
    assert status == grader.FAIL and details["pct_of_copy"] == 31.0
    assert "31 % of the copy bandwidth at 1x8192x8192" in reason and "75 % needed" in reason
    assert "in flight" in reason
    assert "SM clock not sampled" in reason                   # a GPU that ran slow says so itself
    clock = {"median_mhz": 1035.0, "min_mhz": 990.0, "max_mhz": 1980.0, "samples": 9}
    b = _bw(31.0)
    b["bandwidth"]["sm_clock"] = clock
    assert "SM clock 1035 MHz (990-1980)" in measures.bandwidth_verdict(b, BW)[1]


def test_bandwidth_not_measured_or_failed_is_a_loss_with_its_reason():
    assert measures.bandwidth_verdict({}, BW)[:2] == (grader.FAIL, "the bandwidth was not measured")
    assert measures.bandwidth_verdict(None, BW)[0] == grader.FAIL
    status, reason, _ = measures.bandwidth_verdict({"bandwidth": {"error": "out of memory"}}, BW)
    assert status == grader.FAIL and "out of memory" in reason


# ---------------------------------------------------------------------------------------------
# bitwise: the verdict
# ---------------------------------------------------------------------------------------------

def _bit(**kw):
    base = {"shape": [16, 1024, 16384], "runs": 20, "differing_runs": 0, "first_run_diff": None,
            "reference_diff": None, "reference_bad": 0, "unwritten": 0}
    return {"bitwise": {**base, **kw}}


def test_bitwise_same_bits_as_the_reference_every_run_passes():
    assert measures.bitwise_verdict(_bit(), BIT)[0] == grader.PASS


def test_bitwise_runs_that_differ_say_how_many_where_and_by_how_many_ulp():
    d = {"run": 3, "index": [5, 7], "got": 1.0000001, "want": 1.0, "ulps": 1}
    status, reason, _ = measures.bitwise_verdict(_bit(differing_runs=6, first_run_diff=d), BIT)
    assert status == grader.FAIL
    assert "6 of 20 runs" in reason and "run 3 at (5, 7)" in reason and "1 ulp" in reason
    assert "order of the additions changes from run to run" in reason


def test_bitwise_repeatable_but_not_the_specs_order_says_so():
    r = {"index": [0, 3], "got": 2.5, "want": 2.5000002, "ulps": 1}
    status, reason, _ = measures.bitwise_verdict(_bit(reference_diff=r, reference_bad=17), BIT)
    assert status == grader.FAIL and "same bits on every run" in reason and "17 element(s)" in reason
    assert "another order" in reason


def test_bitwise_unwritten_elements_come_first():
    status, reason, _ = measures.bitwise_verdict(_bit(unwritten=16384, differing_runs=19), BIT)
    assert status == grader.FAIL and "never written" in reason


def test_bitwise_missing_result_is_a_loss():
    assert measures.bitwise_verdict({}, BIT)[0] == grader.FAIL
    assert "failed" in measures.bitwise_verdict({"bitwise": {"error": "x"}}, BIT)[1]


# ---------------------------------------------------------------------------------------------
# bitwise: the worker's loop, with a fake problem
# ---------------------------------------------------------------------------------------------

class _FakeProblem:
    """Stands for gpu.Problem: launch(func) makes C = func(run number)."""

    def __init__(self):
        self.C, self.freed, self.runs = None, False, 0

    def poison_c(self):
        from common.check import NAN_BITS
        self.C = np.full((4, 4), NAN_BITS, np.uint32).view(np.float32)

    def launch(self, func):
        self.runs += 1
        out = func(self.runs)
        if out is not None:
            self.C = out

    def read_c(self):
        return self.C.copy(), 0, 0

    def free(self):
        self.freed = True


@pytest.fixture
def fake():
    return _FakeProblem()


SUM = np.arange(16, dtype=np.float32).reshape(4, 4) / 7


def test_worker_a_repeatable_kernel_with_the_references_bits(fake):
    res = measures.measure_bitwise(lambda shape: fake, lambda r: SUM.copy(), lambda r: SUM.copy(), (4, 4, 4), runs=5)
    assert res["differing_runs"] == 0 and res["reference_diff"] is None and res["unwritten"] == 0 and fake.freed
    assert measures.bitwise_verdict({"bitwise": res}, BIT)[0] == grader.PASS


def test_worker_bits_that_change_on_every_other_run(fake):
    def student(run):
        C = SUM.copy()
        if run % 2:
            C[1, 2] = np.nextafter(C[1, 2], np.float32(10))
        return C
    res = measures.measure_bitwise(lambda shape: fake, student, lambda r: SUM.copy(), (4, 4, 4), runs=6)
    assert res["differing_runs"] == 3 and res["first_run_diff"]["index"] == [1, 2]
    assert res["first_run_diff"]["ulps"] == 1


def test_worker_a_kernel_that_writes_nothing_after_its_first_run(fake):
    first = []

    def student(run):
        if not first:
            first.append(run)
            return SUM.copy()
        return None                       # C stays poisoned
    res = measures.measure_bitwise(lambda shape: fake, student, lambda r: SUM.copy(), (4, 4, 4), runs=4)
    assert res["unwritten"] == 3 * 16
    assert "never written" in measures.bitwise_verdict({"bitwise": res}, BIT)[1]


def test_worker_runs_the_reference_before_the_student(fake):
    order = []
    measures.measure_bitwise(lambda shape: fake, lambda r: order.append("student") or SUM.copy(),
                             lambda r: order.append("reference") or SUM.copy(), (4, 4, 4), runs=2)
    assert order[0] == "reference"


def test_first_difference_counts_ulps_across_zero_and_finds_nothing_in_equal_bits():
    a = np.array([[0.0, 1.0]], np.float32)
    assert measures.first_difference(a, a.copy()) is None
    b = a.copy()
    b[0, 0] = -np.float32(1.4e-45)             # the smallest negative subnormal: 1 ulp below +0
    (idx, got, want, ulps) = measures.first_difference(b, a)
    assert idx == (0, 0) and ulps == 1
    c = a.copy()
    c[0, 1] = np.nextafter(np.float32(1.0), np.float32(2.0))
    c[0, 1] = np.nextafter(c[0, 1], np.float32(2.0))
    assert measures.first_difference(c, a)[3] == 2


# ---------------------------------------------------------------------------------------------
# static: bytes in flight, atomics
# ---------------------------------------------------------------------------------------------

def _listing(ops):
    return [f"/*{16 * i:04x}*/ {op} ;" for i, op in enumerate(ops)]


def test_bytes_in_flight_sums_load_widths_until_math_uses_them():
    all_first = ["IMAD R1, R2, R3, R4"] + ["LDG.E.128.CONSTANT R4, desc[UR8][R30.64]"] * 8 + \
                ["LDG.E R48, desc[UR8][R50.64]"] * 8 + ["FFMA R1, R2, R3, R1"] * 32
    assert static.bytes_in_flight(_listing(all_first)) == 8 * 16 + 8 * 4
    one_by_one = ["LDG.E.128.CONSTANT R4, desc[UR8][R30.64]", "LDG.E R48, desc[UR8][R50.64]",
                  "FFMA R1, R2, R3, R1", "FFMA R1, R2, R3, R1", "BRA 0x0"] * 3
    assert static.bytes_in_flight(_listing(one_by_one)) == 20


def test_bytes_in_flight_widths_and_placeholders():
    ops = ["LDG.E.64 R2, [R4.64]", "LDG.E.U16 R3, [R4.64]", "LDG.E.U8 R3, [R4.64]", "@!PT LDG.E.128 R8, [R4.64]",
           "HMMA.16816.F32 R0, R4, R8, R0", "LDG.E.128 R8, [R4.64]"]
    assert static.bytes_in_flight(_listing(ops)) == 16          # 8 + 2 + 1 = 11 before the HMMA, then 16
    assert static.bytes_in_flight(_listing(["LDGSTS.E.BYPASS.128 [R1], desc[UR4][R2.64]"])) == 0   # async copies


def test_atomics_tell_float_from_integer():
    fl, it = static.atomics(Counter({"ATOMG.E.ADD.STRONG.GPU": 1, "RED.E.ADD.F32.FTZ.RN.STRONG.GPU": 4,
                                     "ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU": 2, "FFMA": 9, "RED.E.ADD.STRONG.GPU": 1}))
    assert fl == Counter({"RED.E.ADD.F32.FTZ.RN.STRONG.GPU": 4, "ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU": 2})
    assert it == Counter({"ATOMG.E.ADD.STRONG.GPU": 1, "RED.E.ADD.STRONG.GPU": 1})


def _facts(opcodes, in_flight=0, after_counter=None):
    return {"families": Counter(), "fp16": Counter(), "opcodes": Counter(opcodes), "bytes_in_flight": in_flight,
            "after_counter": Counter(after_counter if after_counter is not None else {"LDG": 2, "FADD": 4})}


def test_ordered_reduce_problems():
    kind = "ordered-reduce"
    assert static._problems(kind, "vec", {}, _facts({"ATOMG.E.ADD.STRONG.GPU": 1})) == []
    (p,) = static._problems(kind, "vec", {}, _facts({"ATOMG.E.ADD.STRONG.GPU": 1}, after_counter={"EXIT": 1}))
    assert "never sums the splits" in p
    (p,) = static._problems(kind, "vec", {}, _facts({"ATOMG.E.ADD.STRONG.GPU": 1, "RED.E.ADD.F32.FTZ.RN.STRONG.GPU": 1}))
    assert "floating-point atomics" in p and "run to run" in p
    (p,) = static._problems(kind, "vec", {}, _facts({"FFMA": 3}))
    assert "no atomic counter" in p


def test_bytes_in_flight_problem_uses_the_checks_threshold():
    assert static._problems("bytes-in-flight", "vec", {}, _facts({}, 160), threshold=64) == []
    (p,) = static._problems("bytes-in-flight", "vec", {}, _facts({}, 20), threshold=64)
    assert "at most 20 bytes" in p and "64 needed" in p and "Little's law" in p


def test_worker_bandwidth_counts_a_b_and_c_against_the_copys_read_and_write(monkeypatch):
    """1 x 1024 x 1024 FP32: 4 KiB of A, 4 MiB of B, 4 KiB of C; the kernel as fast as the copy -> ~50 %
    (the copy moves every byte twice), twice as fast -> ~100 %."""
    from types import SimpleNamespace
    import common.timing as timing

    class Buf:
        def free(self):
            pass
    prob = SimpleNamespace(A=np.zeros((1, 1024), np.float32), B=np.zeros((1024, 1024), np.float32),
                           free=lambda: None)
    prob.bound = lambda f: (lambda: prob.launch(f))       # gpu.Problem.bound: the launch set up once
    prob.launch = lambda f: None
    syncs = []
    cuda = SimpleNamespace(mem_alloc=lambda n: Buf(), memcpy_dtod_async=lambda d, s, n: None,
                           Context=SimpleNamespace(synchronize=lambda: syncs.append(1)))
    monkeypatch.setattr(measures, "CLOCK_RAMP_S", 0.01)
    for kernel_ms, pct in ((1.0, 50.0), (0.5, 100.0)):
        monkeypatch.setattr(timing, "time_interleaved", lambda runs, flusher, budget_s, kernel_ms=kernel_ms: {
            "kernel": SimpleNamespace(times_ms=[kernel_ms] * 3), "copy": SimpleNamespace(times_ms=[1.0] * 3)})
        res = measures.measure_bandwidth(cuda, lambda shape: prob, None, (1, 1024, 1024), None)
        assert res["bytes"] == 4096 + 4 * 1024 * 1024 + 4096
        assert res["pct_of_copy"] == pytest.approx(pct)
        assert res["sm_clock"] is None and res["sm_clock_why"]     # no nvidia-smi here, or no such GPU: said why
    assert syncs, "the kernel ran back to back (the clock's ramp) before it was timed"
    launched, copied = [], []
    prob.launch = lambda f: launched.append(f)
    cuda.memcpy_dtod_async = lambda d, s, n: copied.append(n)

    def one_repetition(runs, flusher, budget_s):
        launched.clear()
        for run in runs.values():
            run()
        return {"kernel": SimpleNamespace(times_ms=[8.0]), "copy": SimpleNamespace(times_ms=[16.0])}
    monkeypatch.setattr(timing, "time_interleaved", one_repetition)
    res = measures.measure_bandwidth(cuda, lambda shape: prob, "f", (1, 1024, 1024), None)
    assert len(launched) == len(copied) == measures.BANDWIDTH_BATCH == res["batch"]   # a batch per repetition
    assert res["student_ms"] == 8.0 / res["batch"] and res["copy_ms"] == 16.0 / res["batch"]
