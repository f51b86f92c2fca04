"""The grader graded (`make grade-selftest`): what the reference, the untouched workspace and each
known-wrong kernel must score, checked in one batch (one GPU session when there is a GPU).

    wrong_sources(g, folder)         -> {Wrong: .cu}: each patch applied to its reference kernel
    jobs(g, work)                    -> [Job]: the reference solution, the untouched workspace, WRONG
    expectations(g, reports, env)    -> [problem lines]: empty when the grader did what it must
    wrong_table(g, reports, env)     -> rows: kernel, part, bug, points lost here and on the GPU
    run(g, gpu=None, json_path=None) prints all of it, writes the JSON -> (problems, reports, env)

What "must" means (the tests of the grader check the same):
  reference   every check passes; on a machine without a GPU the GPU checks are needs-gpu
  untouched   0 points on every code part: no check of a code part passes
  wrong       without a GPU the failed checks are exactly `lose_here`; on a GPU, `lose_here` and
              `lose_on_gpu` both fail (others may fail too: a race can also give wrong results);
              the first lost check's reason names the bug (`reason`)
A known-wrong kernel is grading/wrong/<name>.patch applied to its part's reference kernel, written
as <folder>/<name>.cu (a name of its own: racecheck's reports are tied to kernels by file name),
beside the lab's HEADERS; a patch of a header (Wrong.file) goes to <folder>/<name>/, the patched
header beside the part's reference kernel, named <name>.cu.
A patch that no longer applies stops the self-test with a message that names it (patches.py).
"""
from pathlib import Path

from .. import report as rep

from . import answers as answers_mod
from . import grader
from .patches import apply_file
from .workspace import generate


def wrong_sources(g, folder):
    files, folder, out = g.kernel_files(), Path(folder), {}
    for w in g.wrong:
        kernel = files[w.part]
        if w.file:                        # a header's patch: its own folder, the kernel as it is
            own = folder / w.name
            own.mkdir(parents=True, exist_ok=True)
            apply_file(g.wrong_file(w), g.lab.kernels_dir / w.file, own / w.file)
            out[w] = own / f"{w.name}{kernel.suffix}"
            out[w].write_text(kernel.read_text())
            heads = [h for h in g.header_files() if h.name != w.file]
        else:
            own = folder
            out[w] = apply_file(g.wrong_file(w), kernel, folder / f"{w.name}{kernel.suffix}")
            heads = g.header_files()
        for h in heads:                   # the reference's headers beside it (compile_student wants them)
            (own / h.name).write_text(h.read_text())
    return out


def jobs(g, work):
    work = Path(work)
    ref = work / "reference"
    untouched = work / "untouched"
    for d, solution in ((ref, True), (untouched, False)):
        if not d.exists():
            generate(g, d, solution=solution, quiet=True)
    wrong = wrong_sources(g, work / "wrong")
    return ([grader.workspace_job(g, ref, name="reference solution"),
             grader.workspace_job(g, untouched, parts=[p.name for p in g.code_parts], name="untouched workspace")] +
            [grader.Job(f"wrong/{w.patch}", {w.part: wrong[w]}, [w.part]) for w in g.wrong])


def _failed(g, report, gpu_checks):
    return {c.check for c in report.lost() if g.part(c.part).check(c.check).needs_gpu == gpu_checks}


def expectations(g, reports, env):
    problems = []
    ref, untouched, wrongs = reports[0], reports[1], reports[2:]
    # The reference's predictions are the recorded run's numbers: they must score on that GPU, not on another.
    recorded_gpu = answers_mod.recorded_measurements(g)[3]
    other_gpu = ref.extra.get("predictions", {}).get("measured_on") not in (None, recorded_gpu)
    for c in (c for p in ref.parts for c in p.checks):
        if c.part == "predictions" and other_gpu:
            continue
        if c.status == grader.FAIL:
            problems.append(f"reference solution lost {c.part} {c.check}: {c.reason}")
        elif c.status != grader.PASS and (env.gpu or not g.part(c.part).check(c.check).needs_gpu):
            problems.append(f"reference solution: {c.part} {c.check} was not graded ({c.status}): {c.reason}")
    for p in untouched.parts:
        if p.points:
            problems.append(f"untouched workspace scored {p.points} on {p.name}: "
                            f"{', '.join(c.check for c in p.checks if c.status == grader.PASS)} passed")
    for w, r in zip(g.wrong, wrongs):
        static_lost = _failed(g, r, gpu_checks=False)
        if static_lost != set(w.lose_here):
            problems.append(f"wrong/{w.patch}: lost {sorted(static_lost) or 'nothing'} without a GPU, "
                            f"expected {sorted(w.lose_here) or 'nothing'}")
        if env.gpu:
            missed = set(w.lose_on_gpu) - _failed(g, r, gpu_checks=True)
            if missed:
                problems.append(f"wrong/{w.patch}: on the GPU it kept {sorted(missed)}, which it must lose")
        key = r.result(w.part, w.key_check) if w.key_check else None
        if key is not None and key.status == grader.FAIL and not w.said_in(key.reason):
            problems.append(f"wrong/{w.patch}: {w.key_check} was lost, but its reason does not say {w.reason!r}: "
                            f"{key.reason}")
    return problems


def wrong_table(g, reports, env):
    rows = []
    for w, r in zip(g.wrong, reports[2:]):
        def lost(gpu_checks):
            cs = [c for c in r.lost() if g.part(c.part).check(c.check).needs_gpu == gpu_checks]
            return f"-{sum(c.max_points for c in cs)} ({', '.join(c.check for c in cs)})" if cs else "-0"
        gpu_pending = any(c.status == grader.NEEDS_GPU for c in r.part(w.part).checks)
        rows.append({"kernel": w.patch, "part": w.part, "bug": w.bug, "here": lost(False),
                     "gpu": "needs a GPU" if gpu_pending else lost(True),
                     "expected": f"here: {', '.join(w.lose_here) or '-'}; GPU: {', '.join(w.lose_on_gpu) or '-'}",
                     "first reason": (r.lost()[0].reason[:90] if r.lost() else "")})
    return rows


WRONG_COLUMNS = [("kernel", "known-wrong kernel", ""), ("part", "part", ""), ("here", "lost, static", ""),
                 ("gpu", "lost, GPU checks", ""), ("expected", "must lose", ""), ("first reason", "first reason", "")]


def within(work, record):
    """The record (grader.finite) with each path under the batch's temporary folder `work` written
    relative to it ("selftest/wrong/v4_bug.cu"), in a reason's text too: that folder's name is new
    every run and would make two records of the same commit differ; it is gone once the selftest ends."""
    prefix = str(work).rstrip("/") + "/"

    def rel(node):
        if isinstance(node, dict):
            return {k: rel(v) for k, v in node.items()}
        if isinstance(node, list):
            return [rel(v) for v in node]
        return node.replace(prefix, "") if isinstance(node, str) else node
    return rel(grader.finite(record))


def run(g, gpu=None, json_path=None, work=None, progress=True):
    env = grader.environment(g, gpu=gpu, work=work)
    reports = grader.grade_many(g, jobs(g, env.work / "selftest"), env, progress=progress)
    problems = expectations(g, reports, env)
    # what is printed and recorded never holds the key: the reference's answers are the solution
    shown = [r.without_key() for r in reports]
    ref, untouched = shown[0], shown[1]
    print("=" * 100)
    print("1. The reference solution (must score full marks)\n")
    print(ref.text())
    print("\n" + "=" * 100)
    print("2. The untouched workspace (must score zero on every code part)\n")
    print(rep.table([{"part": p.name, "points": p.points, "graded": p.graded_max, "pending": p.pending or None}
                     for p in untouched.parts],
                    [("part", "part", ""), ("points", "points", "d"), ("graded", "of", "d"),
                     ("pending", "needs GPU", "d")]))
    if g.wrong:
        print("\n" + "=" * 100)
        print("3. The known-wrong kernels (grading/wrong/*.patch, each applied to its reference), each graded as its part\n")
        print(rep.table(wrong_table(g, reports, env), WRONG_COLUMNS))
    rows = wrong_table(g, reports, env)
    print("\n" + ("selftest: every expectation holds" if not problems else
                  "selftest: UNEXPECTED\n  " + "\n  ".join(problems)))
    path = rep.write_json(Path(json_path) if json_path else g.reports_dir / f"selftest_{'gpu' if env.gpu else 'nogpu'}.json",
                          within(env.work, {"what": f"{g.lab.short} grade selftest", "gpu": env.gpu, "gpu_text": env.gpu_text,
                                         "arch": env.arch, "run": rep.run_info(g.lab.dir), "phases_s": env.phases, "problems": problems,
                                         "wrong": rows, "reference": ref.to_json(), "untouched": untouched.to_json(),
                                         "wrong_reports": [r.to_json() for r in shown[2:]]}))
    print("time: " + ", ".join(f"{k} {v:.0f} s" for k, v in env.phases.items()))
    print(f"JSON: {path}")
    return problems, reports, env
