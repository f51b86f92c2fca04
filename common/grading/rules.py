"""A part whose answer is a table of rules, not a kernel: a dispatcher that picks a kernel family (and
its parameter, e.g. the splits of split-K) per GEMM shape. The student's file is TOML, read as data and
never run: each rule's `when` and `splits` are expressions in a small safe language (below).

    load(path)                     -> [Rule], or CourseError naming the line's problem
    plan(rules, s)                 -> Plan (rule number, family, splits) for shape facts s, or CourseError
    facts(M, N, K, sms, tile)      -> Facts: what an expression sees (M, N, K, sms, tiles)
    hidden_shapes(classes, seed, n_per_class) -> [(M, N, K)]: drawn at grading time, never listed anywhere
    verdicts(g, part, source, env)  -> {check: (status, reason, details)}: rules-sane here, rules-speed on a GPU
                                      (needs-gpu without one, even when the file cannot be read)
    sane_verdict(...), speed_verdict(res, check) -> (status, reason, details)   (tested on synthetic data)

The rules file:

    [[rule]]
    when = "M <= 16"                        # first match wins
    use = "gemv"                            # a family of the lab's RULES_FAMILIES
    [[rule]]
    when = "tiles < sms and K >= 8192"
    use = "splitk"
    splits = "min(ceil(sms / tiles), K // 256)"   # families that take splits need it

Expressions: numbers, true / false, the names M, N, K, sms, tiles, + - * / // %, comparisons, and / or
/ not, parentheses, min, max, ceil, floor. Nothing else parses (no attribute, no call of anything else).

What a lab declares in grading/parts.py for a rules part (Part(..., rules="file.toml")):
    RULES_FAMILIES   {family: function(splits) -> the lab's Kernel row that runs it}
    RULES_TILE       (BM, BN): the tile `tiles` counts, ceil(M / BM) ceil(N / BN)
    RULES_SMS        the SM count the hidden shapes are judged for without a GPU (the GPU's own on one)
    RULES_HIDDEN     [(class name, (M lo, hi), (N lo, hi), (K lo, hi))]: where hidden shapes are drawn
    RULES_PER_CLASS  hidden shapes per class timed on a GPU (RULES_SANE_PER_CLASS: checked without one)
    RULES_SANE       [(name, applies(s), holds(s, plan), symptom)]: properties every plan must have on
                     the hidden shapes of the classes it applies to (checked without a GPU)
    RULES_SPLIT_MAX  function(s) -> the most splits a shape may take (e.g. K // 256)
The reference is the lab's own rules file (its regions in place). `rules-speed` (GPU): every hidden
shape timed with the student's plan, the reference's plan and cuBLAS of the rows' precision,
interleaved; the student's result checked against float64; the geometric mean of reference time over
student time must reach the check's threshold (%).
"""
import ast
import json
import math
import os
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import CourseError

PASS, FAIL, NEEDS_GPU = "pass", "fail", "needs-gpu"      # grader's states (this module does not import grader)
NAMES = ("M", "N", "K", "sms", "tiles")
FUNCS = {"min": min, "max": max, "ceil": math.ceil, "floor": math.floor}
_BIN = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b}
_CMP = {ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
        ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b}


# ---------------------------------------------------------------------------------------------
# Expressions
# ---------------------------------------------------------------------------------------------

class Expr:
    """A parsed expression of the rules language; evaluate(names) -> number or bool."""

    def __init__(self, text, where="?"):
        self.text = str(text)
        src = self.text.replace("true", "True").replace("false", "False")
        try:
            tree = ast.parse(src, mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
            raise CourseError(f"{where}: {self.text!r} is not an expression ({getattr(e, 'msg', type(e).__name__)})",
                              hint="write e.g. \"M <= 16 and K >= 4096\"") from None
        if len(self.text) > 500:
            raise CourseError(f"{where}: an expression of {len(self.text)} characters: 500 at most")
        self._check(tree.body, where)
        self.tree = tree.body

    def _check(self, node, where):
        ok = (ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Name, ast.Constant, ast.Call, ast.And, ast.Or,
              ast.Not, ast.USub, ast.UAdd, ast.Load, *(_BIN), *(_CMP))
        for n in ast.walk(node):
            if not isinstance(n, ok):
                raise CourseError(f"{where}: {self.text!r}: {type(n).__name__} is not allowed",
                                  hint=f"names {', '.join(NAMES)}; + - * / // %; comparisons; and, or, not; "
                                       f"{', '.join(FUNCS)}")
            if isinstance(n, ast.Name) and n.id not in NAMES + ("True", "False") + tuple(FUNCS):
                raise CourseError(f"{where}: {self.text!r}: no name {n.id!r}: the names are {', '.join(NAMES)}, "
                                  "true and false",
                                  hint=f"the functions are {', '.join(FUNCS)}; the operators + - * / // %, "
                                       "comparisons, and, or, not")
            if isinstance(n, ast.Call) and not (isinstance(n.func, ast.Name) and n.func.id in FUNCS and not n.keywords):
                raise CourseError(f"{where}: {self.text!r}: only {', '.join(FUNCS)} may be called")
            if isinstance(n, ast.Constant) and not isinstance(n.value, (int, float, bool)):
                raise CourseError(f"{where}: {self.text!r}: only numbers and true / false")

    def evaluate(self, names):
        return self._eval(self.tree, names)

    def _eval(self, n, env):
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Name):
            return {"True": True, "False": False}.get(n.id, env.get(n.id))
        if isinstance(n, ast.BoolOp):
            vals = (self._eval(v, env) for v in n.values)
            return all(vals) if isinstance(n.op, ast.And) else any(vals)
        if isinstance(n, ast.UnaryOp):
            v = self._eval(n.operand, env)
            return (not v) if isinstance(n.op, ast.Not) else (-v if isinstance(n.op, ast.USub) else v)
        if isinstance(n, ast.BinOp):
            return _BIN[type(n.op)](self._eval(n.left, env), self._eval(n.right, env))
        if isinstance(n, ast.Compare):
            left = self._eval(n.left, env)
            for op, right_node in zip(n.ops, n.comparators):
                right = self._eval(right_node, env)
                if not _CMP[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(n, ast.Call):
            return FUNCS[n.func.id](*(self._eval(a, env) for a in n.args))
        raise CourseError(f"{self.text!r}: cannot evaluate {type(n).__name__}")


# ---------------------------------------------------------------------------------------------
# Rules and plans
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Rule:
    number: int
    when: Expr
    use: str
    splits: Expr = None


@dataclass(frozen=True)
class Facts:
    M: int
    N: int
    K: int
    sms: int
    tiles: int

    def names(self):
        return {"M": self.M, "N": self.N, "K": self.K, "sms": self.sms, "tiles": self.tiles}

    @property
    def shape(self):
        return f"{self.M}x{self.N}x{self.K}"


@dataclass(frozen=True)
class Plan:
    rule: int             # 1-based, in file order
    family: str
    splits: int = 0

    @property
    def label(self):
        return f"{self.family}" + (f" (splits={self.splits})" if self.splits else "") + f", rule {self.rule}"


def facts(M, N, K, sms, tile):
    return Facts(M, N, K, sms, math.ceil(M / tile[0]) * math.ceil(N / tile[1]))


def _toml(path):
    if sys.version_info >= (3, 11):
        import tomllib
    else:                                   # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        from .answers import read_text
        return tomllib.loads(read_text(path))
    except (OSError, ValueError) as e:
        raise CourseError(f"{Path(path).name} is not valid TOML: {e}", hint="each rule: [[rule]], when = \"...\", "
                                                                            "use = \"...\"") from None


def load(path, families, with_splits=()):
    """The rules of a file, checked: known families, a `splits` exactly where the family takes one."""
    data = _toml(path)
    rows = data.get("rule")
    if not rows:
        # a misspelled table name ([[rules]], [[Rule]]) reads as no rules at all: say what the file has
        other = [f"[[{k}]]" if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)
                 else f"[{k}]" if isinstance(v, dict) else f"`{k} = ...`" for k, v in data.items() if k != "rule"]
        has = f"it has {', '.join(other)}, and " if other else ""
        raise CourseError(f"{Path(path).name} has no rules: {has}each rule is a table named [[rule]]",
                          hint='one [[rule]] table per rule, each with when = "..." and use = "...", first match wins')
    form = 'each rule is a [[rule]] table: when = "...", use = "..." (and splits = "..." where the family takes it)'
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise CourseError(f"{Path(path).name}: `rule` is {type(rows).__name__ if not isinstance(rows, list) else 'a list of values'}, "
                          "not a list of [[rule]] tables", hint=form)
    out = []
    for i, row in enumerate(rows, 1):
        where = f"{Path(path).name} rule {i}"
        bad = [k for k in ("when", "use", "splits") if k in row and not isinstance(row[k], (str, int, float))
               or k in row and isinstance(row[k], bool)]
        if bad:
            raise CourseError(f"{where}: {', '.join(bad)} must be text in double quotes (or a number), not "
                              f"{', '.join(type(row[k]).__name__ for k in bad)}", hint=form)
        if set(row) - {"when", "use", "splits"} or "when" not in row or "use" not in row:
            raise CourseError(f"{where}: a rule has `when`, `use` and, for {', '.join(with_splits) or 'no family'}, "
                              f"`splits`; it has {', '.join(sorted(row))}")
        if row["use"] not in families:
            raise CourseError(f"{where}: no family {row['use']!r}: use is one of {', '.join(families)}",
                              hint="the rules file's header says what each family runs")
        takes = row["use"] in with_splits
        if takes != ("splits" in row):
            raise CourseError(f"{where}: {row['use']} {'needs' if takes else 'takes no'} `splits`")
        out.append(Rule(i, Expr(row["when"], where), row["use"], Expr(row["splits"], where) if takes else None))
    return out


def plan(rules, s, split_max=None):
    """The first rule whose `when` holds for facts s; its splits evaluated and checked."""
    names = s.names()
    for r in rules:
        try:
            hit = r.when.evaluate(names)
        except (ArithmeticError, TypeError, ValueError, RecursionError) as e:
            raise CourseError(f"rule {r.number} at {s.shape}: {r.when.text!r} fails: {e}") from None
        if not hit:
            continue
        if r.splits is None:
            return Plan(r.number, r.use)
        try:
            v = r.splits.evaluate(names)
            n = int(v)
        except (ArithmeticError, TypeError, ValueError, RecursionError) as e:
            raise CourseError(f"rule {r.number} at {s.shape}: splits {r.splits.text!r} fails: {e}") from None
        most = split_max(s) if split_max else n
        if n < 1 or n != v or n > max(1, most):
            raise CourseError(f"rule {r.number} at {s.shape}: splits = {r.splits.text} gives {v!r}: a whole number "
                              f"from 1 to {max(1, most)} is needed")
        return Plan(r.number, r.use, n)
    raise CourseError(f"no rule matches {s.shape}", hint="the last rule should match every shape (when = \"true\")")


def hidden_shapes(classes, seed, per_class):
    """[(class, (M, N, K))]: per_class shapes of each class, log-uniform in its ranges, N and K multiples
    of 8 half of the time. Drawn from the grading seed: no list of them exists before grading."""
    rng = random.Random(int(seed) * 7919 + 17)
    out = []
    for name, *ranges in classes:
        for _ in range(per_class):
            dims = [int(round(math.exp(rng.uniform(math.log(lo), math.log(hi))))) for lo, hi in ranges]
            if rng.random() < 0.5:
                dims[1], dims[2] = max(8, dims[1] // 8 * 8), max(8, dims[2] // 8 * 8)
            out.append((name, tuple(dims)))
    return out


# ---------------------------------------------------------------------------------------------
# Grading
# ---------------------------------------------------------------------------------------------

def _spec(g):
    d = g.data
    return {"families": d.RULES_FAMILIES, "tile": tuple(d.RULES_TILE), "sms": d.RULES_SMS, "classes": d.RULES_HIDDEN,
            "per_class": getattr(d, "RULES_PER_CLASS", 4), "sane": getattr(d, "RULES_SANE", []),
            "sane_per_class": getattr(d, "RULES_SANE_PER_CLASS", 50),
            "split_max": getattr(d, "RULES_SPLIT_MAX", None), "with_splits": tuple(getattr(d, "RULES_WITH_SPLITS", ()))}


def kernels(g):
    """Every kernel a rules part of lab `g` may launch, one row per cubin (base_name: a row with its
    splits fixed shares its kernel's cubin): each family's with one split and with two. grade-class
    builds them before its workers run (a cubin a worker builds is laid at its door)."""
    out = {}
    for family in _spec(g)["families"].values():
        for splits in (1, 2):
            k = family(splits)
            out.setdefault(getattr(k, "base_name", k.name), k)
    return list(out.values())


def sane_verdict(rules, shapes, spec, sms):
    """(status, reason, details): every hidden shape has a plan, and every property of RULES_SANE holds."""
    bad = []
    for cls, (M, N, K) in shapes:
        s = facts(M, N, K, sms, spec["tile"])
        try:
            p = plan(rules, s, spec["split_max"])
        except CourseError as e:
            return FAIL, f"{cls} shape {s.shape}: {e.line}", {}
        for name, applies, holds, symptom in spec["sane"]:
            if applies(s) and not holds(s, p):
                bad.append((name, s, p, symptom))
    if bad:
        name, s, p, symptom = bad[0]
        more = f" ({len(bad)} such shapes)" if len(bad) > 1 else ""
        return FAIL, f"{s.shape} ({s.tiles} tiles on {sms} SMs) goes to {p.label}: {symptom}{more}", {"property": name}
    return PASS, "", {"shapes": len(shapes)}


def speed_verdict(res, check):
    """(status, reason, details) of rules-speed from the worker's result: every shape right, and the
    geometric mean of reference time over student time at least check.threshold %."""
    if not res or res.get("error"):
        return FAIL, f"the timing of the rules did not run: {(res or {}).get('error', 'no result')}", res or {}
    rows = res["shapes"]
    wrong = [r for r in rows if not r.get("ok")]
    if wrong:
        r = wrong[0]
        return FAIL, f"{r['shape']} with {r['student']}: wrong result ({r.get('verdict', '?')})", res
    ratios = [r["reference_ms"] / r["student_ms"] for r in rows]
    gm = 100 * math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    cub = 100 * math.exp(sum(math.log(r["cublas_ms"] / r["student_ms"]) for r in rows) / len(rows))
    details = {**res, "pct_of_reference": gm, "pct_of_cublas": cub}
    if gm >= check.threshold:
        return PASS, "", details
    worst = min(rows, key=lambda r: r["reference_ms"] / r["student_ms"])
    return FAIL, (f"{gm:.0f} % of the reference rules' speed over {len(rows)} hidden shapes (geometric mean, "
                  f"{check.threshold:g} % needed; {cub:.0f} % of cuBLAS); slowest against it: {worst['shape']} "
                  f"with {worst['student']}, {100 * worst['cublas_ms'] / worst['student_ms']:.0f} % of cuBLAS where "
                  f"another choice reached {100 * worst['cublas_ms'] / worst['reference_ms']:.0f} %"), details


def verdicts(g, part, source, env, reference=None):
    """{check name: (status, reason, details)} of a rules part: rules-sane here, rules-speed on a GPU (a
    worker process); a check's `requires` applied. (grader.py makes the CheckResults.)"""
    spec = _spec(g)
    reference = reference or (g.lab.dir / part.rules)
    shapes = hidden_shapes(spec["classes"], env.seed, spec["per_class"])
    raw = {}
    try:
        if source is None or not Path(source).exists():
            raise CourseError(f"{part.rules} is missing from the workspace")
        rules, err = load(source, spec["families"], spec["with_splits"]), ""
    except CourseError as e:
        rules, err = None, e.line             # with its hint: what to do about it
    gpu_res = None
    for c in part.checks:                 # in order: a check's `requires` comes before it
        if c.needs_gpu and not env.gpu:   # never scored without a GPU, whatever the file: every student's
            raw[c.name] = (NEEDS_GPU, f"needs a GPU: {env.gpu_text}", {})    # "graded here" is the same
        elif err:
            raw[c.name] = (FAIL, err, {})
        elif c.kind == "rules-sane":
            many = hidden_shapes(spec["classes"], env.seed + 1, spec["sane_per_class"])
            raw[c.name] = sane_verdict(rules, shapes + many, spec, spec["sms"])
        elif c.requires and raw.get(c.requires, (PASS,))[0] != PASS:
            raw[c.name] = (FAIL, f"needs {c.requires} first", {})
        else:
            if gpu_res is None:
                gpu_res = run_worker(g, source, reference, env, shapes, g.GPU_TIMEOUT_S)
            raw[c.name] = speed_verdict(gpu_res, c)
    return raw


# ---------------------------------------------------------------------------------------------
# The GPU worker
# ---------------------------------------------------------------------------------------------

def run_worker(g, source, reference, env, shapes, timeout):
    """Time the hidden shapes in a worker process; its result dict, or {"error": ...}."""
    from .gpu import ROOT, worker_env
    work = Path(env.work) / "rules"
    work.mkdir(parents=True, exist_ok=True)
    spec_file, out = work / f"spec_{os.getpid()}_{abs(hash(str(source)))}.json", work / f"out_{abs(hash(str(source)))}.json"
    if out.exists():
        out.unlink()
    spec_file.write_text(json.dumps({"source": str(source), "reference": str(reference), "seed": env.seed,
                                     "shapes": [list(s) for _, s in shapes]}))
    argv = [sys.executable, "-m", "common.grading.rules", "--lab", str(g.lab.dir), "--spec", str(spec_file),
            "--out", str(out)]
    try:
        proc = subprocess.run(argv, cwd=ROOT, env=worker_env(), capture_output=True, text=True,
                              timeout=timeout * max(1, len(shapes) // 4))
    except subprocess.TimeoutExpired:
        return {"error": "the timing did not finish in time (a hang?)"}
    if not out.exists():
        text = (proc.stdout + proc.stderr).strip().splitlines()
        return {"error": f"the worker stopped (exit status {proc.returncode}): {text[-1] if text else ''}"}
    return json.loads(out.read_text())


def worker_main(argv=None):
    """On the GPU: for each shape, the student's plan, the reference's plan and cuBLAS, interleaved."""
    import argparse
    import numpy as np
    ap = argparse.ArgumentParser()
    ap.add_argument("--lab", required=True)
    ap.add_argument("--spec", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    from common.cublas import Cublas
    from common.device import gpu_facts, init_gpu
    from common.lab import load as load_lab
    from common.timing import L2Flusher, time_interleaved
    from .gpu import Problem, judge
    from .spec import Grading
    init_gpu()
    import pycuda.driver as cuda
    lab = load_lab(args.lab)
    g = Grading(lab)
    spec, job = _spec(g), json.loads(Path(args.spec).read_text())
    facts_gpu = gpu_facts()
    sms = facts_gpu["sms"] if "sms" in facts_gpu else spec["sms"]
    student = load(job["source"], spec["families"], spec["with_splits"])
    reference = load(job["reference"], spec["families"], spec["with_splits"])
    rng = np.random.default_rng(int(job["seed"]))
    flusher, blas = L2Flusher(facts_gpu["l2_bytes"]), Cublas()
    arch = lab.gpu_arch()
    out = {"gpu": facts_gpu.get("name"), "sms": sms, "shapes": []}
    for M, N, K in (tuple(s) for s in job["shapes"]):
        s = facts(M, N, K, sms, spec["tile"])
        ps, pr = plan(student, s, spec["split_max"]), plan(reference, s, spec["split_max"])
        ks, kr = spec["families"][ps.family](ps.splits), spec["families"][pr.family](pr.splits)
        lab.build([ks, kr], [arch])
        prob = Problem(cuda, ks, M, N, K, rng)
        run_s, run_r = lab.launcher(ks, M, N, K), lab.launcher(kr, M, N, K)
        call = ks.prec.cublas(blas)
        ts = time_interleaved({"student": lambda: run_s(prob.a.ptr, prob.b.ptr, prob.c.ptr),
                               "reference": lambda: run_r(prob.a.ptr, prob.b.ptr, prob.c.ptr),
                               "cublas": lambda: call(M, N, K, prob.a.ptr, prob.b.ptr, prob.c.ptr)},
                              flusher, budget_s=0.1)
        prob.poison_c()
        run_s(prob.a.ptr, prob.b.ptr, prob.c.ptr)
        C, cb, ca = prob.read_c()
        rows = np.sort(rng.choice(M, size=min(64, M), replace=False))
        v = judge(prob, C, cb, ca, f"{ks.name} {M}x{N}x{K}", rows=rows)
        out["shapes"].append({"shape": s.shape, "student": ps.label, "reference": pr.label, "ok": v["ok"],
                              "verdict": v["verdict"], "student_ms": float(np.median(ts["student"].times_ms)),
                              "reference_ms": float(np.median(ts["reference"].times_ms)),
                              "cublas_ms": float(np.median(ts["cublas"].times_ms))})
        prob.free()
    Path(args.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    from common.errors import user_errors
    with user_errors():
        worker_main()
