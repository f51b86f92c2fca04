"""common.errors.user_errors: a CourseError and a CUDA driver error end as one message with what to do,
anything else as the traceback it is (no GPU needed: a stand-in for pycuda's error class)."""
import pytest

from common.errors import CourseError, user_errors


def _cuda_error(message):
    # pycuda's driver errors live in pycuda._driver; user_errors knows them by that module
    cls = type("LogicError", (Exception,), {"__module__": "pycuda._driver"})
    return cls(message)


def _run(exc, capsys):
    with pytest.raises(SystemExit) as e:
        with user_errors():
            raise exc
    return e.value.code, capsys.readouterr().err


def test_course_error_is_one_message_and_status_2(capsys):
    code, err = _run(CourseError("no GPU", hint="run on one"), capsys)
    assert code == 2 and err.startswith("error: no GPU") and "what to do: run on one" in err


@pytest.mark.parametrize("message, words", [
    ("cuLaunchKernel failed: invalid argument", "shared memory"),
    ("cuMemAlloc failed: out of memory", "smaller size"),
    ("cuCtxSynchronize failed: an illegal memory access was encountered", "make sanitize"),
    ("cuLaunchKernel failed: unspecified launch failure", "make sanitize"),
    ("cuModuleLoad failed: something new", "make sanitize"),
])
def test_cuda_error_says_what_to_do(capsys, message, words):
    code, err = _run(_cuda_error(message), capsys)
    assert code == 2 and "a CUDA call failed: " + message in err and words in err
    assert "Traceback" not in err


def test_other_errors_keep_their_traceback():
    with pytest.raises(ZeroDivisionError):
        with user_errors():
            1 / 0
