"""`make tune` for lab 7c, checked without a GPU: what the sweep holds, that its legality is h4's and
h4_tf32's own static_asserts (asked of the compiler), and that its extreme candidates build for sm_90a
without spills and without a serialized wgmma."""
import shutil
from pathlib import Path

import pytest

from common.tiling import Tiling
from common.testing import lab_of

from .test_build_and_sass import SERIALIZED

LAB = lab_of(__file__)
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the legality is the compiler's)")


def _tuning():
    return LAB.module("tuning")


def test_the_table_tunes_h4_and_h4_tf32_at_the_large_sizes():
    tuning = LAB.option("TUNING")
    assert {ld: spec.kernel for ld, spec in tuning.items()} == {"fp16": "h4", "tf32": "h4_tf32"}
    assert all(spec.sizes == (4096, 8192) for spec in tuning.values())


@needs_nvcc
@pytest.mark.parametrize("ladder", ["fp16", "tf32"])
def test_the_sweep_starts_with_the_taught_kernel_and_holds_only_legal_distinct_candidates(ladder):
    t = _tuning()
    cands = LAB.option("TUNING")[ladder].configs()
    assert cands[0] == {}
    rest = cands[1:]
    assert len(rest) == len({tuple(sorted(p.items())) for p in rest}), "a candidate twice"
    assert all(why is None for why in t.reason_illegal[ladder].check(rest))
    defaults = Tiling.of(t.KERNELS[ladder]).params
    assert not any(all(p[k] == defaults[k] for k in p) for p in rest), "the defaults again, under another name"
    assert {(p["BM"], p["BN"]) for p in rest} == set(t.TILES), "every tile of the sweep is legal somewhere"
    # 48 KB a stage at 128 x 256 and 256 x 128: 4 stages fit, 5 do not; 32 KB at 128 x 128: 6 fit
    deepest = {tile: max(p["STAGES"] for p in rest if (p["BM"], p["BN"]) == tile) for tile in t.TILES}
    assert deepest == {(128, 256): 4, (256, 128): 4, (128, 128): 6}
    assert len(cands) < 40                      # a tune of both sizes stays a few minutes


@needs_nvcc
@pytest.mark.parametrize("ladder,name", [("fp16", "h4_persistent.cu"), ("tf32", "h4_tf32.cu")])
def test_a_refused_candidate_gets_the_kernels_own_sentence(ladder, name):
    t = _tuning()
    legal = t.reason_illegal[ladder]
    source = (Path(LAB.dir) / "kernels" / name).read_text()
    for params, words in [(dict(BM=256, BN=256), "accumulators"), (dict(STAGES=5), "227 KB"),
                          (dict(GROUP=0), "GROUP >= 1")]:
        why = legal(params)
        assert why and words in why and why in source, (params, why)
    assert "static_assert(" not in Path(t.__file__).read_text()    # each rule is said once, in the kernel


@needs_nvcc
@pytest.mark.parametrize("name,params", [("h4", dict(BM=256, BN=128)), ("h4", dict(BM=128, BN=128, STAGES=6)),
                                         ("h4_tf32", dict(BM=256, BN=128))])
def test_the_sweeps_extremes_build_for_sm_90a_without_spills_or_a_serialized_wgmma(name, params):
    k = LAB.kernel(name).with_params(**params)
    res = LAB.build([k], ["sm_90"])[(k.name, "sm_90a")]
    for entry, r in res.items():
        assert r["spill_stores"] == r["spill_loads"] == r["stack"] == 0, f"{k.name} {entry}: {r}"
    log = k.cubin(LAB.build_dir, "sm_90a").with_suffix(".ptxas.log")
    bad = [line for line in log.read_text().splitlines() if SERIALIZED.search(line)]
    assert not bad, f"{k.name}: " + "\n".join(bad)
