"""Lab 7d's graded exercises, as data for the course's grader (common/grading):

    parts.py       the parts (the GEMV's K step, the ordered split-K reduction), their checks and
                   points, the solution regions and their stubs, the shapes and thresholds, the
                   known-wrong kernels and what each must lose
    questions.py   the "check your understanding" questions (with reasons) and the computed predictions
    wrong/*.patch  the known-wrong kernels: each a unified diff of a reference kernel in kernels/

`make workspace`, `make grade` and `make grade-selftest` run common/grading on this folder; README.md
says what is graded and how.
"""
