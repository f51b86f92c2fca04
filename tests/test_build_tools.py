"""nvcc, the ptxas report and the SASS parser, on real compiler output (no GPU needed)."""
import os
import shutil

import pytest

from common import build, sass
from common.errors import CourseError

# ROUNDS x 64 FFMAs: enough for acc[64] to stay live (spills under a 32-register bound), few enough
# that ptxas is quick about it (64 rounds cost ptxas 20 s on two cores)
ROUNDS = 4
KERNEL = f"#define ROUNDS {ROUNDS}\n" + r"""
extern "C" __global__ void axpy8(const float* x, float* y, int n) {
    __shared__ float s[256];
    float acc[64];
    #pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = x[threadIdx.x * 64 + i];
    s[threadIdx.x] = acc[threadIdx.x % 64];
    __syncthreads();
    #pragma unroll
    for (int r = 0; r < ROUNDS; ++r)
        #pragma unroll
        for (int i = 0; i < 64; ++i) acc[i] = fmaf(acc[(i + r) % 64], s[(threadIdx.x + i) % 256], acc[i]);
    float t = 0;
    #pragma unroll
    for (int i = 0; i < 64; ++i) t += acc[i];
    y[threadIdx.x] = t;
}
"""

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    d = tmp_path_factory.mktemp("k")
    (d / "axpy8.cu").write_text(KERNEL)
    return d


def test_ptxas_report_gives_registers_and_shared_memory(sources):
    res = build.compile_cubin(sources / "axpy8.cu", sources / "sm_80" / "axpy8.cubin", "sm_80")
    r = res["axpy8"]
    assert r["registers"] > 64 and r["smem"] == 1024 and r["spill_stores"] == 0 and r["barriers"] == 1


def test_ptxas_report_sees_spills(sources, tmp_path):
    src = tmp_path / "spill.cu"
    src.write_text(KERNEL.replace("extern", '#pragma nv_diag_suppress 177\nextern').replace(
        "__global__ void", "__global__ void __launch_bounds__(1024, 2)"))
    text = build.compile_cubin(src, tmp_path / "spill.cubin", "sm_90")
    assert text["axpy8"]["registers"] <= 32
    assert text["axpy8"]["spill_stores"] > 0 and text["axpy8"]["stack"] > 0


def test_compile_is_skipped_when_up_to_date(sources):
    out = sources / "sm_86" / "axpy8.cubin"
    build.compile_cubin(sources / "axpy8.cu", out, "sm_86")
    mtime = out.stat().st_mtime_ns
    build.compile_cubin(sources / "axpy8.cu", out, "sm_86")
    assert out.stat().st_mtime_ns == mtime


def test_a_cubin_is_stale_when_a_content_changes_not_when_a_file_is_rewritten(tmp_path, monkeypatch):
    """Stamps hold contents and nvcc's version: a checkout or an unpacked archive (new mtimes, same
    bytes) keeps its cubins, so cubins built on another machine at the same paths are used as they
    are; an edit of the source or of a header it includes, or another nvcc, rebuilds."""
    src, hdr, out = tmp_path / "k.cu", tmp_path / "k.cuh", tmp_path / "sm_80" / "k.cubin"
    hdr.write_text("#define SCALE 2.0f\n")
    src.write_text('#include "k.cuh"\nextern "C" __global__ void k(float* y) { y[threadIdx.x] *= SCALE; }\n')
    calls = []
    real = build.run_nvcc
    monkeypatch.setattr(build, "run_nvcc", lambda cmd, about=None: calls.append(cmd) or real(cmd, about))
    build.nvcc_version()                             # cached before counting

    def compiles():
        n = len(calls)
        build.compile_cubin(src, out, "sm_80")
        return len(calls) - n

    assert compiles() == 1
    for f in (src, hdr):                             # rewritten, same bytes, a new mtime
        f.write_text(f.read_text())
        os.utime(f, (1, 1))
    assert compiles() == 0
    hdr.write_text("#define SCALE 3.0f\n")
    assert compiles() == 1
    monkeypatch.setattr(build, "nvcc_version", lambda: "Build cuda_99.9")
    assert compiles() == 1
    assert compiles() == 0


def test_each_nvcc_run_is_logged_where_course_nvcc_log_says(tmp_path, monkeypatch):
    """What prebuild.sh reads back: a line per nvcc run, compile_cubin's arguments with it; a log that
    cannot be written (a sandboxed grading worker) stops no build."""
    log = tmp_path / "nvcc.jsonl"
    monkeypatch.setenv("COURSE_NVCC_LOG", str(log))
    src = tmp_path / "k.cu"
    src.write_text('extern "C" __global__ void k(float* y) { y[threadIdx.x] = 1.0f; }\n')
    build.compile_cubin(src, tmp_path / "sm_86" / "k.cubin", "sm_86", {"TILE": 8})
    build.compile_cubin(src, tmp_path / "sm_86" / "k.cubin", "sm_86", {"TILE": 8})      # up to date: no run
    import json
    runs = [json.loads(l) for l in log.read_text().splitlines()]
    assert len(runs) == 1, runs
    assert runs[0]["src"] == str(src) and runs[0]["arch"] == "sm_86" and runs[0]["defines"] == {"TILE": 8}
    assert runs[0]["status"] == 0 and runs[0]["seconds"] > 0 and runs[0]["cmd"][0] == build.find_nvcc()
    monkeypatch.setenv("COURSE_NVCC_LOG", str(tmp_path / "no-such-folder" / "nvcc.jsonl"))
    build.compile_cubin(src, tmp_path / "sm_80" / "k.cubin", "sm_80")


def test_a_copy_of_a_source_built_elsewhere_comes_from_the_cubin_cache(tmp_path, monkeypatch):
    """COURSE_CUBIN_CACHE: a grader's fresh copy (another folder, the same bytes) is served without
    nvcc, its cubin and ptxas report the same; a changed header, define or nvcc is built; a cache that
    cannot be read or written stops no build; without the variable nothing is kept."""
    cache = tmp_path / "cache"
    # "off unless set" is asserted first: the variable may come from outside (the device scripts set it
    # for make test, and this assertion failed there, 2026-12-05)
    monkeypatch.delenv("COURSE_CUBIN_CACHE", raising=False)
    calls = []
    real = build.run_nvcc
    monkeypatch.setattr(build, "run_nvcc", lambda cmd, about=None: calls.append(cmd) or real(cmd, about))
    build.nvcc_version()

    def copy(name, scale="2.0f"):
        d = tmp_path / name
        d.mkdir(exist_ok=True)
        (d / "k.cuh").write_text(f"#define SCALE {scale}\n")
        (d / "k.cu").write_text('#include "k.cuh"\nextern "C" __global__ void k(float* y) { y[threadIdx.x] *= SCALE; }\n')
        return d

    def compiles(d, defines=None):
        n = len(calls)
        kernels = build.compile_cubin(d / "k.cu", d / "sm_80" / "k.cubin", "sm_80", defines)
        return len(calls) - n, kernels

    assert compiles(copy("off"))[0] == 1 and not cache.exists()          # off unless set
    monkeypatch.setenv("COURSE_CUBIN_CACHE", str(cache))
    first = copy("first")
    ran, kernels = compiles(first)
    assert ran == 1 and len(list(cache.glob("*.cubin"))) == 1
    second = copy("second")
    ran, again = compiles(second)
    assert ran == 0 and again == kernels
    assert (second / "sm_80" / "k.cubin").read_bytes() == (first / "sm_80" / "k.cubin").read_bytes()
    assert (second / "sm_80" / "k.ptxas.log").read_text().split("\n")[0].endswith(str(second / "k.cu"))   # its command names it
    assert compiles(second)[0] == 0                                      # and its own stamp now holds
    assert compiles(copy("third", scale="3.0f"))[0] == 1                 # a header's contents differ
    assert compiles(copy("fourth"), {"X": 1})[0] == 1                    # a define
    monkeypatch.setattr(build, "nvcc_version", lambda: "Build cuda_99.9")
    assert compiles(copy("fifth"))[0] == 1                               # another nvcc
    monkeypatch.setenv("COURSE_CUBIN_CACHE", str(tmp_path / "off" / "k.cu" / "cache"))   # under a file
    assert compiles(copy("sixth"))[0] == 1


def test_nvcc_version_is_its_build_line():
    assert build.nvcc_version().startswith("Build cuda_"), build.nvcc_version()


def test_compile_error_is_a_clear_message(tmp_path):
    (tmp_path / "bad.cu").write_text("__global__ void f() { this is not cuda; }")
    with pytest.raises(CourseError, match="nvcc failed on bad.cu"):
        build.compile_cubin(tmp_path / "bad.cu", tmp_path / "bad.cubin", "sm_80")


def test_an_include_that_never_ends_stops_at_the_timeout_with_a_clear_message(tmp_path, monkeypatch):
    """A red-team review's submission included a named pipe: nvcc waited on it for minutes. It is stopped
    at COURSE_NVCC_TIMEOUT_S, saying what to look for, and leaves no half-written cubin."""
    import os
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "k.cu").write_text(f'#include "{fifo}"\n__global__ void f() {{}}\n')
    monkeypatch.setenv("COURSE_NVCC_TIMEOUT_S", "3")
    with pytest.raises(CourseError, match="nvcc ran past 3 s on k.cu") as e:
        build.compile_cubin(tmp_path / "k.cu", tmp_path / "k.cubin", "sm_80")
    assert "pipe" in e.value.hint
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".part") or p.suffix == ".cubin"]


def test_arch_names_are_checked():
    assert build.resolve_archs("all") == build.ALL_ARCHS
    assert build.resolve_archs("sm_86") == ["sm_86"]
    assert build.resolve_archs("sm_75") == ["sm_75"]           # Turing: the rows that say they run there
    with pytest.raises(CourseError, match="older than sm_75"):
        build.resolve_archs("sm_70")
    with pytest.raises(CourseError, match="not an architecture"):
        build.resolve_archs("ampere")


@pytest.mark.parametrize("arch, words", [
    ("sm_99", "ARCH=sm_99 is not an architecture the course builds for"),    # nvcc: "Unsupported gpu architecture"
    ("sm_100", "ARCH=sm_100 is not an architecture the course builds for"),
    ("sm_86a", "ARCH=sm_86a is not an architecture the course builds for"),
    ("bogus", "ARCH='bogus' is not an architecture name"),
    ("sm_80,sm_99", "ARCH=sm_99 is not"),
])
def test_an_architecture_the_course_does_not_build_for_is_refused_naming_the_ones_it_does(arch, words):
    """Refused before nvcc runs: its "Unsupported gpu architecture" read as the student's compile error
    in make grade, and as a ptxas log to read in make sass."""
    for several in (True,) if "," in arch else (True, False):     # grading: one name (next test)
        with pytest.raises(CourseError) as e:
            build.check_arch(arch, several=several)
        assert words in e.value.message
        assert "sm_75, sm_80, sm_86, sm_89, sm_90, sm_90a, sm_120" in e.value.hint


def test_grading_takes_one_architecture_and_the_a_form_the_course_builds():
    assert build.check_arch("sm_90a") == ["sm_90a"] and build.check_arch("sm_90a", several=False) == ["sm_90a"]
    assert build.check_arch("sm_80, sm_90") == ["sm_80", "sm_90"]
    assert build.check_arch("all") == build.ALL_ARCHS
    for arch in ("all", "sm_80,sm_90"):
        with pytest.raises(CourseError, match="more than one architecture") as e:
            build.check_arch(arch, several=False)
        assert "ARCH=all" not in e.value.hint


def test_every_a_form_a_row_is_built_for_is_one_arch_accepts():
    from common.lab import all_lab_dirs, load
    wanted = {a for d in all_lab_dirs() for k in load(d).all_kernels for a in (k.archs or ())}
    assert wanted <= set(build.ALL_ARCHS + build.A_ARCHS), wanted


def test_sass_counts_exact_opcodes(sources):
    try:
        sass.find_cuobjdump()
    except CourseError as e:
        pytest.skip(str(e))
    cubin = sources / "sm_80" / "axpy8.cubin"
    build.compile_cubin(sources / "axpy8.cu", cubin, "sm_80")
    counts = sass.opcode_counts(sass.disassemble(cubin))["axpy8"]
    fam = sass.family_counts(counts)
    assert fam["FFMA"] >= ROUNDS * 64 // 2 and fam["BAR"] == 1 and fam["HMMA"] == 0
    assert sum(counts.values()) > fam["FFMA"]


def test_opcode_families_do_not_confuse_lookalikes():
    rules = sass.COLUMNS
    assert not rules["LDS"]("LDSM.16.M88.4") and rules["LDSM"]("LDSM.16.MT88.4")
    assert rules["LDS"]("LDS") and rules["LDS"]("LDS.64") and not rules["LDS"]("LDS.128")
    assert rules["LDS.128"]("LDS.128") and rules["LDS.128"]("LDS.U.128")
    assert not rules["HMMA"]("HFMA2.MMA") and rules["HMMA"]("HMMA.16816.F32")
    assert rules["LDG.128"]("LDG.E.128.CONSTANT") and rules["LDG"]("LDG.E.U16") and not rules["LDG"]("LDGSTS.E.128")
    assert rules["LDGSTS"]("LDGSTS.E.BYPASS.128") and not rules["LDG.128"]("LDGSTS.E.BYPASS.128")


def test_the_columns_a_readme_names_for_make_sass_are_its_columns():
    """A lab sheet's `make sass  # ...` line names what the table shows: a column that is not there
    (lab 7c's USETMAXREG, lab 7a's STG.E.64 once) sends a student looking for nothing. Opcodes named
    after "every opcode" are in reports/sass.json, not the table."""
    import re
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    for readme in sorted(root.glob("labs/*/README.md")):
        for line in readme.read_text().splitlines():
            if line.startswith("make sass"):
                said = line.split("#", 1)[1].split("every opcode")[0]
                for word in re.findall(r"\b[A-Z][A-Z0-9]+(?:\.[A-Z0-9*]+)*", said):
                    assert word in sass.COLUMNS, f"{readme.parent.name}: `make sass` has no column {word}"


def test_sass_parser_reads_predicates_and_functions():
    text = ("\t\tFunction : k1\n"
            "        /*0060*/              @!P0 FFMA R4, R2.reuse, R3, R4 ;   /* 0x00 */\n"
            "        /*0070*/                   LDSM.16.M88.4 R8, [R2+UR4] ;   /* 0x00 */\n"
            "        /*0080*/              @!PT LDS RZ, [RZ] ;                 /* 0x00 */\n"
            "\t\tFunction : k2\n"
            "        /*0010*/                   HFMA2.MMA R1, -RZ, RZ, 0, 0 ;  /* 0x00 */\n")
    counts = sass.opcode_counts(text)
    assert counts["k1"] == {"FFMA": 1, "LDSM.16.M88.4": 1} and counts["k2"] == {"HFMA2.MMA": 1}
