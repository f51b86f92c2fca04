"""Finding a GEMM's k loop in SASS and condensing it (common/sass_loops.py), on a hand-written listing."""
from common import sass_loops

LISTING = [
    "/*0000*/                   MOV R1, c[0x0][0x28] ;",
    "/*0010*/               @P0 BRA 0x100 ;",                  # forward: no loop
    "/*0020*/                   LDG.E.128 R4, desc[UR4][R2.64] ;",
    "/*0030*/                   STS.128 [R0], R4 ;",
    "/*0040*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;",
    "/*0050*/                   LDS.128 R8, [R0] ;",
    "/*0058*/              @!PT LDS RZ, [RZ] ;",              # ptxas's never-executed placeholder
    "/*0060*/                   FFMA R12, R8, R9, R12 ;",
    "/*0070*/                   FFMA R13, R8, R10, R13 ;",
    "/*0080*/                   IADD3 R0, R0, 0x10, RZ ;",
    "/*0090*/                   FFMA R14, R8, R11, R14 ;",
    "/*00a0*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;",
    "/*00b0*/              @!P1 BRA 0x20 ;",                  # the k loop
    "/*00c0*/                   STG.E [R2.64], R12 ;",
    "/*00d0*/                   EXIT ;",
    "/*00e0*/                   BRA 0xe0 ;",                   # the trap at the end: a loop with no math
]


def test_backward_branches_are_loops():
    assert sass_loops.loops(LISTING) == [(0x20, 0xb0), (0xe0, 0xe0)]


def test_the_main_loop_is_the_one_with_the_math():
    body = sass_loops.main_loop(LISTING)
    assert body[0].startswith("/*0020*/ LDG.E.128") and body[-1] == "/*00b0*/ @!P1 BRA 0x20"
    assert sum("FFMA" in l for l in body) == 3


def test_a_kernel_without_math_has_no_main_loop():
    assert sass_loops.main_loop(LISTING[-3:]) == []


def test_condense_keeps_memory_and_folds_the_rest():
    out = sass_loops.condense(sass_loops.main_loop(LISTING))
    assert "    ... 3 FFMA, 2 other" in out                    # IADD3 and the @!PT placeholder
    assert not any("@!PT" in l for l in out)
    assert any("LDS.128" in l for l in out) and any("STS.128" in l for l in out)
    assert not any("IADD3" in l for l in out)


def test_side_by_side_pads_the_shorter_column():
    text = sass_loops.side_by_side([["a", "bb"], ["c"]], ["left", "right"])
    lines = text.splitlines()
    assert lines[0].startswith("left") and "right" in lines[0]
    assert len(lines) == 4 and lines[3].strip() == "bb"
