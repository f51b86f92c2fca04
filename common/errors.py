"""CourseError: a problem the user can fix. Entry points print it as one line, no traceback.

    raise CourseError("no CUDA GPU found", hint="run on a machine with an NVIDIA GPU")
    NotOnThisGPU(message, hint)    a CourseError: this GPU cannot run that kernel (tests skip on it)
    e.line                         the message and its hint on one line (a grader's reason: report rows)
    with user_errors(): main()     # prints 'error: ...' and 'hint: ...', exits 2
    cuda_error_hint(e)             -> what to do about a CUDA driver error (pycuda's), by its message
"""
import contextlib
import sys


class CourseError(Exception):
    def __init__(self, message, hint=None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self):
        return self.message if not self.hint else f"{self.message}\n  what to do: {self.hint}"

    @property
    def line(self):
        """The message and, where there is one, its hint, on one line: a grader's reason is a row of a
        table (make grade's lost points, the JSON, the class report), and the hint says what to do."""
        return self.message if not self.hint else f"{self.message} (what to do: {self.hint})"


class NotOnThisGPU(CourseError):
    """A kernel this GPU cannot run (its row says why: an sm_80 kernel on a T4). The course's pytest
    reports a test that meets one as skipped, with the reason, not as failed (conftest.py)."""


# Words of a CUDA driver error's message -> what to do. The first match wins.
_CUDA_HINTS = (
    (("invalid argument",), "a launch asked for more than this kernel allows: threads per block, registers or "
                         "shared memory (`make` prints each kernel's); a build with parameters of your own may "
                         "need a smaller tile or fewer STAGES"),
    (("out of memory",), "use a smaller size, or free the GPU (nvidia-smi lists what holds its memory)"),
    (("illegal", "launch failed"), "the kernel faulted: `make sanitize KERNELS=<name>` finds the access; after a "
                                   "fault every later CUDA call fails too, so start the run again"),
)


def cuda_error_hint(e):
    """What to do about a CUDA driver error, from its message."""
    text = str(e).lower()
    for keys, hint in _CUDA_HINTS:
        if any(key in text for key in keys):
            return hint
    return "`make sanitize` checks every kernel's memory accesses; the error's words are CUDA's own"


def _is_cuda_error(e):
    return type(e).__module__.split(".")[0] == "pycuda"


@contextlib.contextmanager
def user_errors():
    """Turn a CourseError, a CUDA driver error (and Ctrl-C) into a short message and exit status 2."""
    try:
        yield
    except CourseError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except Exception as e:
        if not _is_cuda_error(e):
            raise
        print(f"error: a CUDA call failed: {e}\n  what to do: {cuda_error_hint(e)}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
