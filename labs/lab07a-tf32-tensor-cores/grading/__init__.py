"""Lab 7a's graded exercises, as data for the course's grader (common/grading):

    parts.py       the parts (k2's XOR swizzle, k4's ldmatrix address), their checks and points, the
                   solution regions and their stubs, the shapes, the known-wrong kernels
    questions.py   the "check your understanding" questions on TF32 numerics and ldmatrix .b16
    wrong/*.patch  the known-wrong kernels: each a unified diff of a reference kernel in kernels/

`make workspace`, `make grade` and `make grade-selftest` run common/grading on this folder; README.md
says what is graded and how.
"""
