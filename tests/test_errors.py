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


# --- python -m common: what make passed on, checked before anything runs -------------------------

LAB07D = "labs/lab07d-decode-shapes"


@pytest.mark.parametrize("argv, words", [
    (["grade", "--arch", "bogus", "--parts", "gemv"], "ARCH='bogus' is not an architecture name"),
    (["grade", "--arch", "sm_99"], "ARCH=sm_99 is not an architecture the course builds for"),
    (["grade", "--arch", "all"], "ARCH=all names more than one architecture"),
    (["grade-class", "--submissions", "/tmp", "--arch", "sm_99"], "ARCH=sm_99 is not an architecture"),
    (["sass", "--arch", "sm_99"], "ARCH=sm_99 is not an architecture the course builds for"),
    (["build", "--arch", "sm_120a"], "ARCH=sm_120a is not an architecture the course builds for"),
    (["grade", "--seed", "abc"], "SEED=abc: SEED takes a whole number, 0 or more"),
    (["grade", "--seed", "-1"], "SEED=-1: SEED takes a whole number, 0 or more"),
    (["grade-class", "--jobs", "abc"], "JOBS=abc: JOBS takes a whole number, 1 or more"),
    (["grade-class", "--jobs", "0"], "JOBS=0: JOBS takes a whole number, 1 or more"),     # was: 2 at a time
    (["grade-class", "--timeout", "1h"], "TIMEOUT=1h: TIMEOUT takes a whole number, 1 or more"),
    (["tune", "--budget", "0"], "BUDGET=0: BUDGET takes a number, more than 0"),
    (["compare", "--rounds", "x"], "ROUNDS=x: ROUNDS takes a whole number, 1 or more"),
])
def test_a_bad_make_variable_is_named_before_anything_runs(argv, words, capsys, monkeypatch):
    """ARCH, SEED, JOBS, TIMEOUT...: one line naming the make variable and what it takes, exit 2; not
    argparse's usage of `python -m common` (which nobody typed), nor the grader's traceback (ARCH=bogus
    reached arch_number inside pytest), nor nvcc's "Unsupported gpu architecture" as the student's."""
    from common import __main__ as entry

    def loaded(*a, **kw):
        raise AssertionError("the lab was loaded: the value was not checked first")
    monkeypatch.setattr("common.lab.load", loaded)
    with pytest.raises(SystemExit) as e:
        entry.main([argv[0], "--lab", LAB07D, *argv[1:]])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith("error: ") and words in err, err
    assert "what to do: " in err and "usage:" not in err and "Traceback" not in err


def test_the_architectures_named_are_the_ones_the_course_builds(capsys):
    from common import __main__ as entry
    with pytest.raises(SystemExit):
        entry.main(["grade", "--lab", LAB07D, "--arch", "sm_99"])
    assert "use one of sm_75, sm_80, sm_86, sm_89, sm_90, sm_90a, sm_120" in capsys.readouterr().err
