"""The one way in: `python -m common <target> --lab labs/<lab> [options]` (the Makefiles call this).

    build      compile every kernel; registers, spills and shared memory      (--arch sm_86|all)
    bench      TFLOP/s, % of peak and % of cuBLAS of every ladder              (--sizes, --ladder)
               or the shape sweep (common/sweep.py)                            (--shapes decode, --kernel gemm)
    sass       opcode counts per kernel from cuobjdump -sass                    (--arch)
    tune       other parameters of each ladder's tuning kernel                  (--size, --budget)
    selfcheck  every kernel and variant on a few awkward shapes
    bounds     a kernel beside builds that leave parts of its work out (common/bounds.py) (--kernel, --size, --bk)
    accuracy   error vs K against float64: cuBLAS SGEMM, TF32, 3xTF32 and the lab's rows (--quick, --ks, --size)
    diff       what a rung changes: its file against the previous rung's (common/rungs.py)  (--kernel, --side-by-side)
    ncu-table, ncu-tensor, ncu, sanitize   the profilers (common/profiling.py)  (--kernels, --kernel)
    profile    the program ncu and compute-sanitizer run                        (--kernel | --sanitize-run)
    workspace, grade, grade-selftest       the graded exercises (common/grading)
    grade-class, grade-class-demo          a whole class: here, or as a Slurm job array (classroom.py)
    labs       list the labs
    help       the lab's own lines of `make help` (kernels, graded parts, what the ncu tables profile)
"""
import argparse
import math
import sys

from .errors import CourseError, user_errors

GRADING = ("workspace", "grade", "grade-selftest", "grade-class", "grade-class-demo")


def number(var, least=0, kind=int, example=None):
    """An option's type: a number of `least` or more, else a CourseError that names the make variable
    the value came from (SEED=abc, JOBS=0), not argparse's usage of `python -m common`, which nobody
    typed. argparse lets it through (it catches ValueError, TypeError and its own), and main() parses inside
    user_errors: one line and what to do."""
    what = "a whole number" if kind is int else "a number"
    bound = f"{least} or more" if kind is int else f"more than {least}"

    def convert(text):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not math.isfinite(value) or value < least or (kind is float and value <= least):
            raise CourseError(f"{var}={text}: {var} takes {what}, {bound}",
                              hint=f"e.g. {var}={example if example is not None else max(least, 1)}, "
                                   f"or leave {var} out for the default")
        return value
    convert.__name__ = var
    return convert


def parser():
    p = argparse.ArgumentParser(prog="python -m common", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="target", required=True)

    def target(name, help_text, lab=True):
        t = sub.add_parser(name, help=help_text)
        if lab:
            t.add_argument("--lab", required=True, help="the lab's folder, e.g. labs/lab07-matmul-registers")
        return t

    t = target("build", "compile every kernel; registers, spills, shared memory")
    t.add_argument("--arch", default=None, help="sm_XY, a comma list, or 'all' (default: this GPU's, or all)")
    t = target("bench", "TFLOP/s, % of peak and % of cuBLAS")
    t.add_argument("--sizes", default=None, help="comma list of M = N = K (default: the lab's BENCH_SIZES)")
    t.add_argument("--ladder", default=None, help="one ladder, or a comma list (default: all)")
    t.add_argument("--shapes", default=None,
                   help="the shape sweep: shape sets of the lab's SHAPE_SETS or MxNxK, a comma list, or 'all'")
    t.add_argument("--kernel", default=None, help="with the sweep: only these kernels or dispatchers (e.g. gemm)")
    t = target("sass", "opcode counts per kernel")
    t.add_argument("--arch", default=None)
    t = target("tune", "other tile parameters, timed against cuBLAS")
    t.add_argument("--size", type=number("SIZE", 1, example=4096), default=None)
    t.add_argument("--budget", type=number("BUDGET", 0, float, example=60), default=None,
                   help="seconds of timing at most (default: no limit)")
    t.add_argument("--ladder", default=None, help="one ladder of the lab's TUNING, or a comma list (default: all)")
    target("selfcheck", "every kernel and variant on a few awkward shapes")
    t = target("bounds", "a kernel beside builds without its copies, its math or its barrier")
    t.add_argument("--kernel", default=None, help="a kernel of the lab's BOUNDS (default: its first)")
    t.add_argument("--size", type=number("SIZE", 1, example=4096), default=None, help="M = N = K (default 4096)")
    t.add_argument("--bk", default=None, help="BK values, a comma list (default: the lab's BOUNDS entry)")
    t = target("accuracy", "error vs K against float64: cuBLAS SGEMM, TF32, 3xTF32 and the lab's rows")
    t.add_argument("--ks", default=None, help="comma list of K (default 256,1024,4096,16384,65536)")
    t.add_argument("--quick", action="store_true", help="K up to 4096 only")
    t.add_argument("--size", type=number("SIZE", 1, example=512), default=None, help="M = N (default 512)")
    t = target("compare", "a kernel beside other builds of itself, in rounds, against cuBLAS")
    t.add_argument("--kernel", default=None, help="one of the lab's kernels")
    t.add_argument("--builds", default=None, help="builds separated by ';', each NAME=value[,NAME=value]")
    t.add_argument("--sizes", default=None, help="comma list of squares (4096) or MxNxK shapes (default 4096)")
    t.add_argument("--rounds", type=number("ROUNDS", 1, example=3), default=None, help="rounds per size (default 3)")
    for name, what in (("ncu-table", "ncu on the lab's FP32 kernels and cuBLAS SGEMM"),
                       ("ncu-tensor", "ncu on the tensor-core kernels and cuBLAS"),
                       ("sanitize", "compute-sanitizer's four tools over every kernel and variant")):
        t = target(name, what)
        t.add_argument("--kernels", default=None, help="a comma list (default: all of them)")
        t.add_argument("--size", type=number("SIZE", 1, example=2048), default=None)
    t = target("ncu", "the full ncu report of one kernel, for the GUI")
    t.add_argument("--kernel", default=None)
    t.add_argument("--size", type=number("SIZE", 1, example=2048), default=None)
    t = target("profile", "the program the profilers run")
    t.add_argument("--kernel", default=None)
    t.add_argument("--variant", default=None)
    t.add_argument("--size", type=number("SIZE", 1, example=2048), default=2048)
    t.add_argument("--sanitize-run", action="store_true")
    t.add_argument("--kernels", default=None)
    t = target("workspace", "your exercises: the kernels with TODOs")
    t.add_argument("--dest", default=None)
    t.add_argument("--force", action="store_true")
    t = target("grade", "grade a workspace")
    t.add_argument("--workspace", default=None)
    t.add_argument("--parts", default=None)
    t.add_argument("--no-gpu", action="store_true")
    t.add_argument("--json", default=None)
    t.add_argument("--arch", default=None)
    t.add_argument("--seed", type=number("SEED", 0, example=1234), default=None)
    t = target("grade-selftest", "the grader graded")
    t.add_argument("--no-gpu", action="store_true")
    t.add_argument("--json", default=None)
    t = target("grade-class", "grade a class: a folder of workspaces or archives, here or on Slurm")
    t.add_argument("--submissions", default=None, help="one subfolder or .tar.gz/.tgz/.tar/.zip per student")
    t.add_argument("--out", default=None, help="where the reports go (default: <lab>/reports/class)")
    t.add_argument("--jobs", type=number("JOBS", 1, example=4), default=None,
                   help="workers at once (default: one per GPU; without, nproc)")
    t.add_argument("--timeout", type=number("TIMEOUT", 1, example=900), default=None,
                   help="seconds per submission (default 900; NOGPU 300)")
    t.add_argument("--force", action="store_true", help="grade again what an earlier run graded")
    t.add_argument("--seed", type=number("SEED", 0, example=1234), default=None)
    t.add_argument("--seeds", default=None, help="class (one seed for all, the default) or student")
    t.add_argument("--no-gpu", action="store_true")
    t.add_argument("--parts", default=None)
    t.add_argument("--arch", default=None)
    t.add_argument("--isolate", default=None, help="auto (bwrap where it works), bwrap or none")
    t.add_argument("--merge", action="store_true", help="only the class report, from what is graded")
    t.add_argument("--task", type=int, default=None, help="(a Slurm array task) grade line TASK of tasks.txt")
    t.add_argument("--slurm", default=None, help="1: submit a job array; print: print its scripts")
    t.add_argument("--partition", default=None)
    t.add_argument("--account", default=None)
    t.add_argument("--time", default=None, help="a task's time limit (default: TIMEOUT + 10 min)")
    t.add_argument("--cpus", type=number("CPUS", 1, example=4), default=None, help="CPUs per task (default 4)")
    t.add_argument("--max-tasks", type=number("MAXTASKS", 1, example=8), default=None,
                   help="tasks running at once (--array=0-N%%M)")
    t.add_argument("--extra-sbatch", default=None, help="more sbatch options, e.g. '--qos=short --mem=16G'")
    t.add_argument("--wait", action="store_true", help="with --slurm: wait for the jobs, then print the report")
    t = target("grade-class-demo", "a demo class: the reference, the untouched workspace, each known-wrong kernel")
    t.add_argument("--dest", default=None)
    t.add_argument("--force", action="store_true")
    t = target("diff", "a rung against the rung before it in its ladder", lab=False)
    t.add_argument("--lab", default=None, help="the lab's folder (default: the lab whose table has the kernel)")
    t.add_argument("--kernel", default=None, help="a rung of one of the lab's ladders, e.g. k6")
    t.add_argument("--side-by-side", action="store_true", help="two aligned columns instead of a unified diff")
    t.add_argument("--context", type=number("CONTEXT", 0, example=3), default=None,
                   help="unchanged lines shown around a change (default 3)")
    t.add_argument("--width", type=int, default=None, help="side by side: the columns' total width (default: the terminal's)")
    t.add_argument("--color", default="auto", choices=("auto", "always", "never"),
                   help="auto: on a terminal only (not when piped, nor with NO_COLOR set)")
    target("labs", "list the labs", lab=False)
    target("help", "the lab's own lines of make help: its kernels, graded parts, what its ncu tables profile")
    return p


def main(argv=None):
    with user_errors():
        args = parser().parse_args(argv)
        if getattr(args, "arch", None) is not None:      # once, before anything is built or graded
            from .build import check_arch
            check_arch(args.arch, several=args.target not in GRADING)
        if args.target == "labs":
            from .lab import all_lab_dirs, load
            for d in all_lab_dirs():
                print(f"{d.name:32s} {load(d).title}")
            return 0
        from .lab import load
        if args.target == "diff":
            from .lab import all_lab_dirs
            from .rungs import diff
            diff(load(args.lab) if args.lab else None, args, labs=None if args.lab else [load(d) for d in all_lab_dirs()])
            return 0
        lab = load(args.lab)
        if args.target == "help":
            from .targets import lab_help
            lab_help(lab)
            return 0
        if args.target in GRADING:
            from . import grading
            return grading.main(lab, args)
        from . import profiling, targets
        if args.target == "bounds":
            from .bounds import bounds
            bounds(lab, args)
            return 0
        if args.target == "accuracy":
            from .accuracy import accuracy
            accuracy(lab, args)
            return 0
        if args.target == "compare":
            from .compare import compare
            compare(lab, args)
            return 0
        if args.target == "profile":
            profiling.profile(lab, args)
            return 0
        if args.target in profiling.TARGETS:
            profiling.TARGETS[args.target](lab, args)      # its rows are data, not an exit status
            return 0
        if args.target == "bench" and (args.shapes or args.kernel or lab.option("BENCH_SWEEP")):
            from . import sweep
            sweep.sweep(lab, args)
            return 0
        fn = getattr(targets, args.target)
        fn(lab, args)
    return 0


if __name__ == "__main__":
    sys.exit(main() or 0)
