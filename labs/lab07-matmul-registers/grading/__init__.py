"""Lab 7's grader: student exercises cut from the reference kernels, checked by pytest.

    parts       THE TABLE: the graded parts, their checks and points, the solution regions and what
                replaces each in the workspace, the questions' and predictions' parts, the known-wrong
                kernels and the points each must lose
    workspace   `make workspace`: the reference kernels with each marked region replaced by a TODO,
                and answers.toml; --solution writes the reference instead (what the tests grade)
    answers     answers.toml read (tomllib, or a small parser on Python 3.10), answers parsed
    questions   "check your understanding": each answer checked against common.hierarchy/roofline
    static      compile a student's kernel into the grader's own build folder; ptxas and SASS checks
    gpu         the GPU side, always in a subprocess (a crashing kernel takes only its own part down):
                correctness on awkward shapes, timing against the reference in the same run, the
                re-check after timing, racecheck; and the measurements the predictions are compared with
    grader      grade(...) -> Report: every part, every check, points, one reason per lost check;
                the text report and the JSON for teachers
    checks      the pytest module `make grade` runs (one test per check)
    selftest    the grader graded: reference full marks, untouched zero, each known-wrong kernel loses
    grade       the command line: `make grade` (through pytest) and `make grade-selftest`

Trust: the grader reads the student's .cu files and answers.toml and nothing else from the
workspace. Launch shapes, entry points and the baseline come from lab07's table and kernels/.
"""
