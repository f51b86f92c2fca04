"""Header-only C++ libraries a kernel includes, found where they are installed, at build time.

    cutlass_include()        the folder holding cute/ and cutlass/ (CUTLASS's headers, CuTe included):
                             $CUTLASS_INCLUDE if set (a checkout's include/), else the nvidia-cutlass
                             wheel's cutlass_library/source/include; a CourseError saying what to run
                             when neither is there
    CUTLASS_WHEEL            the pinned wheel, as pip names it
    cutlass_version()        the installed wheel's version, or None

A lab's row names the function, not its result (Kernel(include_dirs=(cutlass_include,))): the table
loads on a machine without the headers, and only a build that needs them asks for them.

Why the wheel and not its package: `import cutlass_library` runs its __init__, which imports its own
Python dependencies (cuda-python, scipy, networkx, pydot, treelib) that a build of headers does not
need; the course installs the wheel with `pip install --no-deps`. importlib.util.find_spec finds a
top-level package on sys.path without running it, so PYTHONPATH installs (pip --target) work too.
"""
import importlib.metadata
import importlib.util
import os
import sys
from pathlib import Path

from .errors import CourseError

CUTLASS_WHEEL = "nvidia-cutlass==4.2.0.0"
_PROBE = Path("cute") / "tensor.hpp"          # a header every CuTe kernel includes


def cutlass_version():
    try:
        return importlib.metadata.version("nvidia-cutlass")
    except importlib.metadata.PackageNotFoundError:
        return None


def cutlass_include():
    """The include folder for `#include <cute/tensor.hpp>`, or a CourseError saying how to get it."""
    env = os.environ.get("CUTLASS_INCLUDE")
    if env:
        folder = Path(env).expanduser().resolve()
        if not (folder / _PROBE).exists():
            raise CourseError(f"CUTLASS_INCLUDE={env} has no {_PROBE}",
                              hint="point it at the include/ folder of a CUTLASS checkout (it holds cute/ and "
                                   "cutlass/), or unset it to use the nvidia-cutlass wheel")
        return str(folder)
    spec = importlib.util.find_spec("cutlass_library")
    for root in (spec.submodule_search_locations or []) if spec else []:
        folder = Path(root) / "source" / "include"
        if (folder / _PROBE).exists():
            return str(folder)
    where = "found, but without source/include/cute" if spec else "not installed"
    raise CourseError(f"the CuTe headers (CUTLASS's nvidia-cutlass wheel) are {where} for {sys.executable}",
                      hint=f"run: {sys.executable} -m pip install --no-deps {CUTLASS_WHEEL}  (headers only; "
                           "--no-deps skips its Python dependencies, which a build does not use), or set "
                           "CUTLASS_INCLUDE=/path/to/cutlass/include for a checkout of your own")
