"""Where `make` puts a cubin, computed in one place: Kernel.build_dir (the build/ folder of the lab
whose kernels/ holds the source) and Kernel.cubin (the file name); Lab.cubin(k, arch) puts them
together for a GPU of `arch`. The build, the launcher, make sass and the sweep all ask it."""
import pytest

from common.errors import CourseError
from common.kernels import Kernel
from common.lab import ROOT, load


def _lab(name):
    return load(ROOT / "labs" / name)


def test_a_rows_cubin_is_in_its_own_labs_build_folder_per_architecture():
    lab = _lab("lab07a-tf32-tensor-cores")
    k = lab.own()[0]
    assert k.build_dir == lab.dir / "build"
    assert lab.cubin(k, "sm_86") == lab.dir / "build" / "sm_86" / (k.source.rsplit(".", 1)[0] + ".cubin")
    assert lab.cubin(k.name, "sm_86") == lab.cubin(k, "sm_86")


def test_a_borrowed_row_builds_where_its_source_lives():
    lab7c = _lab("lab07c-hopper-wgmma")
    borrowed = [k for k in lab7c.all_kernels if k.lab != lab7c.name]
    assert borrowed, "lab 7c shows a lab 7 rung beside its own"
    for k in borrowed:
        assert k.build_dir == ROOT / "labs" / k.lab / "build"
        assert lab7c.build_dir_of(k) == k.build_dir


def test_a_hopper_only_row_is_built_for_sm_90a_and_refused_elsewhere():
    lab = _lab("lab07c-hopper-wgmma")
    k = next(k for k in lab.own() if k.archs == ("sm_90a",))
    assert lab.cubin(k, "sm_90").parent.name == "sm_90a"
    assert lab.cubin(k, "sm_90a") == lab.cubin(k, "sm_90")
    with pytest.raises(CourseError) as e:
        lab.cubin(k, "sm_86")
    assert "sm_90a" in e.value.message


def test_a_tuned_build_has_a_cubin_of_its_own():
    lab = _lab("lab07-matmul-registers")
    k = lab.kernel("v8")
    tuned = k.with_params(STAGES=2 if k.tiling.value("STAGES") != 2 else 3)
    assert lab.cubin(tuned, "sm_90") != lab.cubin(k, "sm_90")
    assert lab.cubin(tuned, "sm_90").name.startswith(lab.cubin(k, "sm_90").stem + "__STAGES")


def test_an_unbound_row_has_no_build_folder():
    with pytest.raises(CourseError):
        Kernel("x", "x.cu", {"": "x"}, "fp32").build_dir
