"""A kernel's tile parameters, read from its own .cu file: the source is the one place they live.

    source_constants(path)          -> Constants: what the file (and the "..." headers it includes)
                                       declares, unevaluated
    Tiling.of(path, overrides={})   -> Tiling: the parameters (with -D overrides), threads per block,
                                       block tile (BM, BN) and dynamic shared bytes, evaluated
    tiling.params, .threads, .tile, .shared_bytes, .value("WARPS_N")
    tiling.get("CONSUMERS")             a constant, tunable or fixed, or None where the file has none

What is read. A tunable parameter is written once, in this form (a -DNAME=v build overrides it):

    #ifndef BM
    #define BM 128      // why 128
    #endif

Derived values are `#define NAME expr` or `constexpr int NAME = expr;` (several declarators per line
allowed), and one-line constexpr helpers `constexpr int f(int a, int b) { return expr; }`. The
runtime needs THREADS (threads per 1-D block), BM and BN (the block's tile of C: the grid is
ceil(N / BN) x ceil(M / BM)), and SMEM_BYTES when the kernel takes dynamic shared memory (a file
that declares `extern __shared__`; in other files SMEM_BYTES, if any, describes static arrays). The
expressions are C integer arithmetic (+ - * / % << >>, comparisons, && || !, ?:, sizeof of float,
half, float4 ...), evaluated here with C's truncating division.
"""
import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import CourseError

_TUNABLE = re.compile(r"^[ \t]*#ifndef[ \t]+(\w+)[ \t]*\n[ \t]*#define[ \t]+\1[ \t]+([^\n]*?)[ \t]*(?://[^\n]*)?\n"
                      r"[ \t]*#endif", re.M)
_DEFINE = re.compile(r"^[ \t]*#define[ \t]+(\w+)[ \t]+([^\n]*?)[ \t]*(?://[^\n]*)?$", re.M)
_CONSTEXPR = re.compile(r"^[ \t]*(?:static[ \t]+)?constexpr[ \t]+(?:unsigned[ \t]+)?(?:int|long|size_t|bool)[ \t]+"
                        r"(?!\w+[ \t]*\()([^;]+);", re.M)
_FUNCTION = re.compile(r"constexpr[ \t]+int[ \t]+(\w+)[ \t]*\(([^)]*)\)[ \t]*\{[ \t]*return[ \t]+([^;]+);[ \t]*\}")
SIZEOF = {"float": 4, "half": 2, "__half": 2, "__nv_bfloat16": 2, "float2": 8, "float4": 16, "int": 4,
          "unsigned": 4, "double": 8, "uint4": 16, "int4": 16, "uint32_t": 4, "uint64_t": 8}


@dataclass(frozen=True)
class Constants:
    tunable: dict                      # NAME -> expression text (the #ifndef defaults)
    derived: dict                      # NAME -> expression text
    functions: dict                    # name -> (argument names, expression text)
    dynamic_shared: bool               # the file declares `extern __shared__`: SMEM_BYTES is dynamic


def _split_declarators(text):
    """'BM = 128, BN = 128' -> [('BM', '128'), ('BN', '128')], commas inside parentheses kept."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text + ","):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            part = text[start:i].strip()
            start = i + 1
            m = re.fullmatch(r"(\w+)\s*=\s*(.+)", part, re.S)
            if m:
                out.append((m.group(1), m.group(2).strip()))
    return out


def _strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


@functools.lru_cache(maxsize=None)
def _constants(path, mtime):
    raw = Path(path).read_text()
    tunable = {m.group(1): m.group(2).strip() for m in _TUNABLE.finditer(raw)}
    text = _strip_comments(raw)
    derived = {}
    for m in _DEFINE.finditer(text):
        if m.group(1) not in tunable and m.group(2).strip():
            derived[m.group(1)] = m.group(2).strip()
    for m in _CONSTEXPR.finditer(text):
        for name, expr in _split_declarators(m.group(1)):
            derived.setdefault(name, expr)
    functions = {m.group(1): ([a.split()[-1] for a in m.group(2).split(",") if a.strip()], m.group(3))
                 for m in _FUNCTION.finditer(text)}
    return Constants(tunable, derived, functions, "extern __shared__" in text)


def source_constants(path):
    """The file's constants, and those of the headers it includes with #include "..." (recursively):
    a kernel that reuses another's body (lab 7d's splitk_v8.cu includes lab 7's v8) has that body's
    parameters. A name the file itself declares wins over a header's."""
    from .build import included_headers
    path = Path(path)
    if not path.exists():
        raise CourseError(f"kernel source {path} does not exist", hint="the lab's table names a file that is not there")
    own = _constants(str(path), os.path.getmtime(path))
    headers = [_constants(str(h), os.path.getmtime(h)) for h in included_headers(path)]
    if not headers:
        return own
    merged = {"tunable": {}, "derived": {}, "functions": {}}
    for c in [*reversed(headers), own]:              # the includer last: its declarations win
        for part, d in merged.items():
            d.update(getattr(c, part))
    for name in merged["tunable"]:
        merged["derived"].pop(name, None)            # a parameter is tunable if anyone declares it so
    return Constants(merged["tunable"], merged["derived"], merged["functions"],
                     own.dynamic_shared or any(h.dynamic_shared for h in headers))


# ---------------------------------------------------------------------------------------------
# A small evaluator for C integer constant expressions
# ---------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(\d+)[uUlL]*|(\w+)|(<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%()<>!?:,~&|^]))")


def _tokens(expr):
    pos, out = 0, []
    expr = expr.strip()
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot read {expr[pos:]!r}")
        pos = m.end()
        if m.group(1) is not None:
            out.append(("num", int(m.group(1))))
        elif m.group(2) is not None:
            out.append(("name", m.group(2)))
        else:
            out.append(("op", m.group(3)))
    return out


def _cdiv(a, b):
    if b == 0:
        raise ZeroDivisionError("division by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _cmod(a, b):
    return a - b * _cdiv(a, b)


_BINARY = [  # lowest precedence first
    {"||": lambda a, b: int(bool(a) or bool(b))},
    {"&&": lambda a, b: int(bool(a) and bool(b))},
    {"|": lambda a, b: a | b},
    {"^": lambda a, b: a ^ b},
    {"&": lambda a, b: a & b},
    {"==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b)},
    {"<": lambda a, b: int(a < b), ">": lambda a, b: int(a > b), "<=": lambda a, b: int(a <= b),
     ">=": lambda a, b: int(a >= b)},
    {"<<": lambda a, b: a << b, ">>": lambda a, b: a >> b},
    {"+": lambda a, b: a + b, "-": lambda a, b: a - b},
    {"*": lambda a, b: a * b, "/": _cdiv, "%": _cmod},
]


class _Parser:
    def __init__(self, tokens, lookup, call):
        self.t, self.i, self.lookup, self.call = tokens, 0, lookup, call

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else (None, None)

    def take(self, op=None):
        tok = self.peek()
        if op is not None and tok != ("op", op):
            raise ValueError(f"expected {op!r}")
        self.i += 1
        return tok

    def parse(self):
        v = self.ternary()
        if self.i != len(self.t):
            raise ValueError(f"unexpected {self.peek()[1]!r}")
        return v

    def ternary(self):
        cond = self.binary(0)
        if self.peek() == ("op", "?"):
            self.take()
            a = self.ternary()
            self.take(":")
            b = self.ternary()
            return a if cond else b
        return cond

    def binary(self, level):
        if level == len(_BINARY):
            return self.unary()
        v = self.binary(level + 1)
        while self.peek()[0] == "op" and self.peek()[1] in _BINARY[level]:
            op = self.take()[1]
            v = _BINARY[level][op](v, self.binary(level + 1))
        return v

    def unary(self):
        kind, val = self.peek()
        if (kind, val) == ("op", "-"):
            self.take()
            return -self.unary()
        if (kind, val) == ("op", "+"):
            self.take()
            return self.unary()
        if (kind, val) == ("op", "!"):
            self.take()
            return int(not self.unary())
        if (kind, val) == ("op", "~"):
            self.take()
            return ~self.unary()
        return self.primary()

    def primary(self):
        kind, val = self.take()
        if kind == "num":
            return val
        if (kind, val) == ("op", "("):
            v = self.ternary()
            self.take(")")
            return v
        if kind == "name":
            if val in ("true", "false"):
                return int(val == "true")
            if self.peek() == ("op", "("):
                self.take()
                if val == "sizeof":
                    words = []
                    while self.peek() != ("op", ")"):
                        words.append(str(self.take()[1]))
                    self.take(")")
                    t = " ".join(words)
                    if t not in SIZEOF:
                        raise ValueError(f"sizeof({t}) is not known")
                    return SIZEOF[t]
                args = []
                if self.peek() != ("op", ")"):
                    args.append(self.ternary())
                    while self.peek() == ("op", ","):
                        self.take()
                        args.append(self.ternary())
                self.take(")")
                return self.call(val, args)
            if val.startswith("static_cast") or val in ("int", "unsigned"):
                raise ValueError("casts are not supported")
            return self.lookup(val)
        raise ValueError(f"unexpected {val!r}")


@dataclass(frozen=True)
class Tiling:
    """A kernel's parameters as built: the source's defaults with the build's -D overrides."""
    source: str
    overrides: dict = field(default_factory=dict)

    @property
    def constants(self):
        return source_constants(self.source)

    @property
    def params(self):
        """Every tunable parameter (#ifndef block) with its value in this build."""
        return {name: self.value(name) for name in self.constants.tunable}

    def has(self, name):
        c = self.constants
        return name in self.overrides or name in c.tunable or name in c.derived

    def value(self, name, _seen=()):
        if not _seen:
            return _cached_value(self.source, tuple(sorted(self.overrides.items())), name,
                                 os.path.getmtime(self.source))
        return self._value(name, _seen)

    def get(self, name, default=None):
        """value(name) where the file defines it (a tunable or a fixed #define / constexpr), else default:
        for tables over rows that do not all have every parameter (a notebook's tile column)."""
        c = self.constants
        if name not in self.overrides and name not in c.tunable and name not in c.derived:
            return default
        return self.value(name)

    def _value(self, name, _seen=()):
        c = self.constants
        if name in _seen:
            raise CourseError(f"{Path(self.source).name}: {name} is defined in terms of itself")
        if name in self.overrides:
            expr = str(self.overrides[name])
        elif name in c.tunable:
            expr = c.tunable[name]
        elif name in c.derived:
            expr = c.derived[name]
        else:
            raise CourseError(f"{Path(self.source).name} does not define {name}",
                              hint=f"the course reads {name} from the kernel file (common/tiling.py says how to write it)")
        seen = _seen + (name,)

        def call(fname, args, depth=seen):  # noqa: E306
            if fname not in c.functions:
                raise ValueError(f"function {fname} is not a one-line constexpr function of the file")
            names, body = c.functions[fname]
            local = dict(zip(names, args))
            return _Parser(_tokens(body), lambda n: local[n] if n in local else self._value(n, depth), call).parse()

        try:
            return _Parser(_tokens(expr), lambda n: self._value(n, seen), call).parse()
        except CourseError:
            raise
        except (ValueError, ZeroDivisionError, KeyError) as e:
            raise CourseError(f"{Path(self.source).name}: cannot evaluate {name} = {expr}: {e}",
                              hint="write it as an integer expression of the file's parameters") from None

    @property
    def threads(self):
        return self.value("THREADS")

    @property
    def tile(self):
        return (self.value("BM"), self.value("BN"))

    @property
    def shared_bytes(self):
        """Dynamic shared memory per block: SMEM_BYTES when the file takes `extern __shared__`
        memory, else 0 (its __shared__ arrays are static: ptxas reports them)."""
        return self.value("SMEM_BYTES") if self.constants.dynamic_shared else 0

    @classmethod
    def of(cls, source, overrides=None):
        return cls(str(source), dict(overrides or {}))


@functools.lru_cache(maxsize=4096)
def _cached_value(source, overrides, name, mtime):
    return Tiling(source, dict(overrides))._value(name)
