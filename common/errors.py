"""CourseError: a problem the user can fix. Entry points print it as one line, no traceback.

    raise CourseError("no CUDA GPU found", hint="run on a machine with an NVIDIA GPU")
    with user_errors(): main()     # prints 'error: ...' and 'hint: ...', exits 2
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


@contextlib.contextmanager
def user_errors():
    """Turn a CourseError (and Ctrl-C) into a short message and exit status 2."""
    try:
        yield
    except CourseError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
