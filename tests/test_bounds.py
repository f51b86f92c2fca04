"""make bounds (common/bounds.py) without a GPU: every lab's BOUNDS table names kernels whose source
reads the switch, the builds it times are the kernel and one build per probe and BK, and a lab or
kernel without probe builds gets a message that says which have them."""
import operator
import re

import pytest

from common import bounds
from common.errors import CourseError
from common.lab import all_lab_dirs, load

LABS = [load(d) for d in all_lab_dirs()]
WITH = [lab for lab in LABS if lab.option("BOUNDS")]
_OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def test_some_lab_has_bounds_builds():
    assert WITH, "no lab declares BOUNDS"


@pytest.mark.parametrize("lab", WITH, ids=lambda lab: lab.short)
def test_each_switch_is_read_by_its_kernel_and_defaults_to_the_kernel_itself(lab):
    for name, spec in lab.option("BOUNDS").items():
        path = lab.kernels_dir / lab.kernel(name).source
        src = path.read_text()
        # the switch may be read in a header the kernel includes ("...": its own, or another lab's)
        src += "".join((path.parent / inc).read_text() for inc in re.findall(r'^#include "([^"]+)"', src, re.M))
        assert re.search(rf"#ifndef {spec.switch}\s*\n#define {spec.switch} 0\b", src), (name, spec.switch)
        tests = [(op, int(v)) for op, v in re.findall(rf"\b{spec.switch}\s*(==|!=|<=|>=|<|>)\s*(\d+)", src)]
        for probe in spec.probes:
            # some comparison in the source must come out differently for this probe than for 0
            assert probe >= 1 and any(_OPS[op](probe, v) != _OPS[op](0, v) for op, v in tests), \
                f"{name}: nothing in {lab.kernel(name).source} tells {spec.switch} = {probe} from the kernel"


@pytest.mark.parametrize("lab", WITH, ids=lambda lab: lab.short)
def test_the_builds_are_the_kernel_then_one_per_probe_for_each_bk(lab):
    for name, spec in lab.option("BOUNDS").items():
        _, rows = bounds.builds(lab, name)
        bks = list(spec.bk) or [None]
        assert len(rows) == len(bks) * (1 + len(spec.probes))
        assert len({k.name for _, _, k in rows}) == len(rows), "two builds with one name"
        for bk, probe, k in rows:
            assert k.base_name == name
            assert (probe == 0) == (not k.tiling.has(spec.switch) or k.tiling.value(spec.switch) == 0)
            if bk is not None:
                assert k.tiling.value("BK") == bk


def test_unknown_kernel_and_lab_without_bounds_say_what_has_them():
    lab = WITH[0]
    with pytest.raises(CourseError, match="KERNEL="):
        bounds.builds(lab, "no-such-kernel")
    without = [lab for lab in LABS if not lab.option("BOUNDS")]
    if without:
        with pytest.raises(CourseError, match="labs with them: .*" + WITH[0].name):
            bounds.builds(without[0], None)
