"""Lab 7c's graded exercises, as data for the course's grader (common/grading):

    parts.py       the parts (h1's wgmma descriptors, h2's expect_tx count and FULL parity, h3's FULL
                   and EMPTY parities), their checks and points, the solution regions and their stubs,
                   the shared header the workspace holds (hopper_ptx.cuh), the known-wrong kernels
    probes.py      the host probes' verdicts (probes/*.cu print what the student's file computes):
                   the descriptor's fields, the expect_tx count, the parities run through a model
                   of the producer-consumer pipeline
    questions.py   the "check your understanding" questions and the computed predictions
    wrong/*.patch  the known-wrong kernels: each a unified diff of a reference kernel (or of the header)

`make workspace`, `make grade` and `make grade-selftest` run common/grading on this folder; README.md
says what is graded and how.
"""
