"""The course's grader: exercises cut from a lab's reference kernels, graded by pytest, the grader
itself graded by known-wrong kernels. A lab declares its grading as data (spec.py says how);
everything here takes the Lab (common.lab.load).

    main(lab, args)                   the targets: workspace | grade | grade-selftest | grade-class |
                                      grade-class-demo (common/__main__.py)
    make_workspace(lab, dest, solution=False, force=False, quiet=True) -> [files]
    grade_workspace(lab, workspace, parts=None, gpu=False, ..., env=None) -> grader.Report
    run_selftest(lab, gpu=False, json_path=None, work=None) -> (problems, reports, env)

    spec        Check, Part, Region, Wrong (the rows of a lab's grading/parts.py); Grading(lab)
    questions   Question, Prediction (the rows of grading/questions.py); how answers are read
    workspace   the workspace from `// BEGIN SOLUTION id: ...` / `// END SOLUTION id` regions
    answers     answers.toml: read, and its template
    patches     unified diffs applied in pure Python (the known-wrong kernels are patches)
    static      compile a student's kernel into the grader's build folder; ptxas and SASS checks
    gpu         the GPU side, in worker processes: correctness on awkward shapes, timing against the
                reference in the same run, the re-check after timing, racecheck; the predictions
    races       racecheck's output (parsed by common.sanitizer) tied to the graded kernels
    fences      the cp-async-fence check: wait, then barrier, before the shared loads of a cp.async loop (SASS)
    hostprobe   the probe check: a lab's host program built around the student's file, run, judged
    bankcheck   the bank-conflicts check: ncu on the student's kernel and the reference, conflicts per load
    grader      grade_many(g, jobs, env) -> [Report]: every part, every check, one reason per lost check
    selftest    the reference scores full marks, the untouched workspace zero, each known-wrong kernel loses
    plugin, checks   `make grade`: pytest over the workspace, quietly; the score report
    classroom   `make grade-class`: a class, one worker process per submission, resumable; the demo class
    submissions a class's folders and archives, unpacked safely; the #include check
    sandbox     a worker's scrubbed environment, bubblewrap, the snapshots that catch writes outside
    classreport class.json, class.csv, class.html and a page per student
    slurm       `make grade-class SLURM=1`: one job array, one submission per task, a dependent merge
    simgpu      a simulated pycuda and compute-sanitizer, for tests of the grader without a GPU

Trust: the grader reads the student's .cu files and answers.toml and nothing else from the
workspace. Launch shapes, entry points and the baseline come from the lab's table and kernels/.
Environment: GRADE_SEED (the inputs' seed), GRADE_BUILD (the grader's build folder),
GRADE_TIMING_SIZE (the timing's M = N = K; the simulated-GPU tests set it small).
"""
from .spec import Grading, has_grading


def make_workspace(lab, dest, solution=False, force=False, quiet=True):
    """The lab's workspace in `dest` (solution=True: the reference kernels and answers). -> files"""
    from .workspace import generate
    return generate(Grading(lab), dest, solution=solution, force=force, quiet=quiet)


def grade_workspace(lab, workspace, parts=None, gpu=False, arch=None, seed=0, progress=False, work=None, env=None):
    """Grade a workspace folder in this process (no pytest): the Report. gpu=False grades what needs
    no GPU (the GPU checks say needs-gpu); None uses a GPU if there is one; True requires one.
    env: a grader.Env to use as it is (simgpu.env(work) grades on the simulated GPU)."""
    from . import grader
    g = Grading(lab)
    env = env or grader.environment(g, gpu=gpu, arch=arch, seed=seed, work=work)
    return grader.grade_many(g, [grader.workspace_job(g, workspace, parts)], env, progress=progress)[0]


def run_selftest(lab, gpu=False, json_path=None, work=None, progress=False):
    """`make grade-selftest` in this process: prints the three reports, returns (problems, reports, env)."""
    from . import selftest as st
    return st.run(Grading(lab), gpu=gpu, json_path=json_path, work=work, progress=progress)


def main(lab, args):
    """`python -m common workspace|grade|grade-selftest --lab L ...`. Returns the exit status."""
    if not has_grading(lab):
        print(f"{lab.name} has no graded exercises (no grading/parts.py): nothing to do for {args.target}")
        return 0
    g = Grading(lab)
    if args.target == "workspace":
        from .workspace import generate
        generate(g, args.dest, force=args.force)
        return 0
    if args.target == "grade":
        from .plugin import run_grade
        return run_grade(g, args)
    if args.target == "grade-class":
        from .classroom import run
        return run(g, args)
    if args.target == "grade-class-demo":
        from .classroom import demo
        demo(g, args.dest or g.lab.dir / "class-demo", force=args.force)
        return 0
    if args.target == "grade-selftest":
        from . import selftest as st
        problems, _, _ = st.run(g, gpu=False if args.no_gpu else None, json_path=args.json)
        return 1 if problems else 0
    raise ValueError(f"not a grading target: {args.target}")
