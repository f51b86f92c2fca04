"""common/tiling.py: a kernel's parameters come from its own .cu and the "..." headers it includes."""
from common.tiling import Tiling, source_constants


def test_a_kernel_that_includes_another_has_its_parameters_and_its_own_win(tmp_path):
    """lab 7d's splitk_v8.cu includes lab 7's v8 for its body: v8's tile parameters are its own,
    -D overrides reach them, and a name the including file declares itself wins over the header's."""
    (tmp_path / "inner").mkdir()
    (tmp_path / "inner" / "body.cu").write_text(
        "#ifndef BM\n#define BM 128      // rows\n#endif\n"
        "#ifndef BN\n#define BN 256\n#endif\n"
        "#define THREADS (BM / 64 * BN / 64 * 32)\n"
        "#define SMEM_BYTES (BM * BN)\n"
        "constexpr int WARPS = THREADS / 32;\n"
        "extern __shared__ float smem[];\n")
    (tmp_path / "reduce.cuh").write_text("#ifndef REDUCE_THREADS\n#define REDUCE_THREADS 256\n#endif\n")
    outer = tmp_path / "split.cu"
    outer.write_text('#include "inner/body.cu"\n#include "reduce.cuh"\n'
                     "constexpr int WARPS = 99;   // the including file's own declaration\n")
    c = source_constants(outer)
    assert set(c.tunable) == {"BM", "BN", "REDUCE_THREADS"}
    assert c.dynamic_shared                        # the body declares extern __shared__
    t = Tiling.of(outer)
    assert (t.threads, t.tile, t.shared_bytes) == (256, (128, 256), 128 * 256)
    assert t.value("WARPS") == 99 and t.value("REDUCE_THREADS") == 256
    small = Tiling.of(outer, {"BM": 64})
    assert (small.threads, small.tile) == (128, (64, 256))


def test_a_file_without_includes_reads_as_before(tmp_path):
    f = tmp_path / "k.cu"
    f.write_text("#ifndef BM\n#define BM 32\n#endif\n#define BN 16\n#define THREADS 64\n")
    t = Tiling.of(f)
    assert t.tile == (32, 16) and t.threads == 64 and not source_constants(f).dynamic_shared


def test_get_reads_tunable_and_fixed_constants_and_says_none_for_a_missing_one(tmp_path):
    """A table over rows that do not all declare every parameter (lab 7c's notebook: BK is a tunable in
    one rung and a fixed #define in another, CONSUMERS absent from some): get() reads either kind,
    -D overrides included, and gives the default where the file has no such name."""
    f = tmp_path / "k.cu"
    f.write_text("#ifndef BM\n#define BM 256\n#endif\n#define BK 32       // fixed\n#define BN 128\n#define THREADS 384\n"
                 "constexpr int CHUNK = BM * BK * 4;\n")
    t = Tiling.of(f)
    assert (t.get("BM"), t.get("BK"), t.get("CHUNK")) == (256, 32, 256 * 32 * 4)
    assert t.get("CONSUMERS") is None and t.get("CONSUMERS", 0) == 0
    assert Tiling.of(f, {"BM": 128}).get("CHUNK") == 128 * 32 * 4
    assert "BK" not in t.params                    # params: the tunables only, as before
