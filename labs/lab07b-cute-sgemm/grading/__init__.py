"""Lab 7b's graded exercises, as data for the course's grader (common/grading):

    parts.py       the parts (c4's swizzle and pipeline fences, c5's permutation of the MMA), their checks
                   and points, the solution regions and their stubs, the shapes, the known-wrong kernels
    probes.py      the host probes' verdicts (probes/*.cu print what CuTe computes for the student's layouts)
    questions.py   the "check your understanding" questions and the computed prediction
    wrong/*.patch  the known-wrong kernels: each a unified diff of a reference kernel in kernels/

`make workspace`, `make grade` and `make grade-selftest` run common/grading on this folder; README.md
says what is graded and how.
"""
