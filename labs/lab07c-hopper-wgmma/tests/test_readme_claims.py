"""The sentences of lab 7c's sheet that compare rungs, held against the tables they sit under.

The ladder tables are generated from the newest committed record (common/readme_tables.py); the
sentences around them are written by hand. When a new record changes the order of two rungs, the
table follows and a sentence may not: this test names the sentence and the figures that contradict
it, so that whoever commits the record rewrites it. "Level", "gains nothing" and "within a point"
allow one point of run-to-run spread (a bench's repeated runs differ by 0.5-3 %: NOTES.md)."""
import re

import pytest

from common import readme_tables as rt
from common.testing import lab_of

LAB = lab_of(__file__)
NOISE = 1.0            # points of % of cuBLAS: what "gains nothing" or "level" allows

FP16 = "ladder record=lab07c-bench*.json ladder=fp16 sizes=2048,4096,8192"
X3 = "ladder record=lab07c-bench*.json ladder=3xtf32 sizes=4096,8192"
THREE_CALLS = "cuBLAS 3xTF32 (3 calls)"


def _at(fig, kernel, sizes):
    return [fig[kernel][n] for n in sizes]


def _wgmma_alone_slower_until_tma(fig, sizes):
    return all(fig["h1"][n] < fig["t4"][n] < fig["h2"][n] for n in sizes)


def _warp_specialization_gains_nothing(fig, sizes):
    return all(fig["h3"][n] <= fig["h2"][n] + NOISE for n in sizes)


def _persistence_gains(fig, sizes):
    return all(fig["h4"][n] > fig["h3"][n] + NOISE for n in sizes)


def _h6_within_a_point_at_4096(fig, sizes):
    return abs(fig["h6"][4096] - 100.0) <= NOISE + 0.5      # "within about a point"


def _multicast_and_stream_k_gain_nothing(fig, sizes):
    return all(fig["h5"][n] <= fig["h4"][n] + NOISE and fig["h7"][n] <= fig["h6"][n] + NOISE for n in sizes)


def _no_rung_passes_cublas_at_2048(fig, sizes):
    return all(v.get(2048, 0.0) < 100.0 for k, v in fig.items() if k != "cuBLAS")


def _fused_beats_three_calls(fig, sizes):
    return all(fig["h4_3xtf32"][n] > fig[THREE_CALLS][n] for n in sizes)


def _h6_3xtf32_behind_h4_3xtf32(fig, sizes):
    return all(fig["h6_3xtf32"][n] < fig["h4_3xtf32"][n] for n in sizes)


# (the sentence as the sheet has it, the block whose table it speaks of, the sizes, what must hold)
CLAIMS = [
    ("wgmma alone (h1) is slower than t4 until the loads stop being issued by every thread (h2)",
     FP16, (2048, 4096, 8192), _wgmma_alone_slower_until_tma),
    ("Warp specialization at the same tile (h3) gains nothing", FP16, (2048, 4096, 8192),
     _warp_specialization_gains_nothing),
    ("with persistence and the wider tile (h4) it does", FP16, (4096, 8192), _persistence_gains),
    ("stores through TMA (h6) bring 4096³ within about a point of cuBLAS", FP16, (4096,),
     _h6_within_a_point_at_4096),
    ("Multicast (h5) and the stream-K tail (h7) gain nothing at these squares", FP16, (2048, 4096, 8192),
     _multicast_and_stream_k_gain_nothing),
    ("no FP16 rung passes cuBLAS there", FP16, (2048,), _no_rung_passes_cublas_at_2048),
    ("h4_3xtf32 beats three cuBLAS TF32 calls of the same split at both sizes", X3, (4096, 8192),
     _fused_beats_three_calls),
    ("In the 3xTF32 table below it stays behind h4_3xtf32", X3, (4096, 8192), _h6_3xtf32_behind_h4_3xtf32),
]


def _prose():
    return re.sub(r"\s+", " ", (LAB.dir / "README.md").read_text())


def _figures_of(spec):
    record, fig = rt.figures(LAB, spec)
    where = f"{record.get('gpu', {}).get('name', '?')}, {(record.get('run', {}).get('date') or '?')[:10]}"
    return where, fig


@pytest.mark.parametrize("sentence,spec,sizes,holds", CLAIMS, ids=[c[3].__name__.strip("_") for c in CLAIMS])
def test_the_sheet_says_only_what_its_table_shows(sentence, spec, sizes, holds):
    assert sentence in _prose(), (f"lab 7c's README no longer says \"{sentence}\": if it was rewritten, "
                                  f"update CLAIMS in {__name__.split('.')[-1]}.py with the new sentence and what it claims")
    where, fig = _figures_of(spec)
    rows = {k: {n: v[n] for n in sizes if n in v} for k, v in fig.items()}
    assert holds(fig, sizes), (f"lab 7c's README says \"{sentence}\", but its table's record ({where}) has "
                               f"{rows}: rewrite the sentence to what the record shows")


# --- the check itself, on synthetic figures: each claim fails where its sentence would be untrue -----

def _fine():
    fp16 = {"cuBLAS": 100.0, "t4": 60.0, "t4_tma": 60.0, "h1": 45.0, "h2": 80.0, "h3": 80.0, "h4": 95.0,
            "h5": 95.0, "h6": 99.5, "h7": 99.0}
    x3 = {"cuBLAS": 100.0, THREE_CALLS: 230.0, "h4_3xtf32": 240.0, "h6_3xtf32": 235.0}
    return ({k: {n: v for n in (2048, 4096, 8192)} for k, v in fp16.items()},
            {k: {n: v for n in (4096, 8192)} for k, v in x3.items()})


# one change each that makes a claim untrue (a neighbouring claim may fall with it: they share rungs)
BREAKS = {
    "wgmma_alone_slower_until_tma": ("fp16", "h2", 55.0),
    "warp_specialization_gains_nothing": ("fp16", "h3", 84.0),
    "persistence_gains": ("fp16", "h4", 80.5),
    "h6_within_a_point_at_4096": ("fp16", "h6", 97.0),
    "multicast_and_stream_k_gain_nothing": ("fp16", "h7", 102.0),
    "no_rung_passes_cublas_at_2048": ("fp16", "h6", 100.5),
    "fused_beats_three_calls": ("x3", "h4_3xtf32", 229.0),
    "h6_3xtf32_behind_h4_3xtf32": ("x3", "h6_3xtf32", 241.0),
}


def test_every_claim_holds_on_figures_that_agree_with_the_sheet():
    fp16, x3 = _fine()
    for _, spec, sizes, holds in CLAIMS:
        assert holds(fp16 if spec == FP16 else x3, sizes), holds.__name__


def test_every_claim_has_a_figure_that_breaks_it():
    assert sorted(BREAKS) == sorted(c[3].__name__.strip("_") for c in CLAIMS)


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_a_record_that_contradicts_a_sentence_is_caught(name):
    fp16, x3 = _fine()
    which, kernel, value = BREAKS[name]
    fig = fp16 if which == "fp16" else x3
    for n in fig[kernel]:
        fig[kernel][n] = value
    (_, spec, sizes, holds), = [c for c in CLAIMS if c[3].__name__.strip("_") == name]
    assert not holds(fp16 if spec == FP16 else x3, sizes), f"{kernel} at {value} % should make {name} untrue"
