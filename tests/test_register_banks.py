"""The static FFMA register-bank model (common/register_banks.py) on hand-written SASS lines."""
from common.register_banks import ffma_bank_conflicts, reads_of


def listing(*insns, name="k"):
    body = "\n".join(f"        /*{16 * i:04x}*/                   {s} ;" for i, s in enumerate(insns))
    return f"\n\tFunction : {name}\n{body}\n"


def one(*insns):
    return ffma_bank_conflicts(listing(*insns))["k"]


def test_three_bank_reads_always_conflict_with_two_banks():
    assert one("FFMA R1, R3, R4, R5")["bank_conflicts"] == 1          # 3 odd/even/odd: two in bank 1
    assert one("FFMA R1, R3, R4, R5")["three_reads"] == 1


def test_two_reads_conflict_only_in_one_bank():
    # the first FFMA flags R3 in slot 0; the next reads it from the cache and R4, R6 (both even)
    r = one("FFMA R1, R3.reuse, R5, R8", "FFMA R2, R3, R4, R6")
    assert (r["ffma"], r["bank_conflicts"]) == (2, 2)
    r = one("FFMA R1, R3.reuse, R5, R8", "FFMA R2, R3, R4, R7")
    assert (r["ffma"], r["bank_conflicts"]) == (2, 1)                 # only the first, with 3 reads


def test_the_cache_is_per_slot_and_per_bank():
    cache = {}
    assert reads_of(["R10", "R34.reuse", "R5"], cache) == [10, 34, 5]
    assert reads_of(["R11", "R35.reuse", "R6"], cache) == [11, 35, 6]
    assert reads_of(["R12", "R34", "R7"], cache) == [12, 7]           # R34 kept beside R35 in slot 1
    assert reads_of(["R34", "R13", "R9"], cache) == [34, 13, 9]       # another slot: not cached there


def test_an_unflagged_read_empties_its_slot_and_bank():
    cache = {}
    reads_of(["R2.reuse", "R5", "R7"], cache)
    reads_of(["R4", "R9", "R11"], cache)                              # slot 0, bank 0 read again, unflagged
    assert reads_of(["R2", "R13", "R15"], cache) == [2, 13, 15]


def test_branches_and_barriers_empty_the_cache_and_other_instructions_do_not():
    r = one("FFMA R1, R3.reuse, R5, R8", "LDS.128 R20, [R4]", "FFMA R2, R3, R4, R7")
    assert r["bank_conflicts"] == 1                                    # the LDS leaves slot 0 alone
    r = one("FFMA R1, R3.reuse, R5, R8", "BAR.SYNC.DEFER_BLOCKING 0x0", "FFMA R2, R3, R4, R7")
    assert r["bank_conflicts"] == 2


def test_immediates_rz_negations_and_placeholders():
    r = one("FFMA R1, -R3, 0.5, R4", "FFMA R2, R5, RZ, R6", "@!PT FFMA R2, R5, R7, R9", "@P0 FFMA R2, R5, R7, R9")
    assert r["ffma"] == 3                                              # the never-executed one is left out
    assert r["bank_conflicts"] == 1                                    # only the last: R5, R7, R9
    assert ffma_bank_conflicts(listing("FFMA R1, R3, R4, R5"))["k"]["pct_conflicting"] == 100.0


def test_kernels_are_counted_apart():
    text = listing("FFMA R1, R3, R5, R7", name="a") + listing("FFMA R1, R2, R5, R7", name="b")
    out = ffma_bank_conflicts(text)
    assert out["a"]["bank_conflicts"] == 1 and out["b"]["bank_conflicts"] == 1
    assert ffma_bank_conflicts(listing("IADD3 R1, R2, R3, RZ", name="c"))["c"] == {
        "ffma": 0, "bank_conflicts": 0, "three_reads": 0, "pct_conflicting": None}
