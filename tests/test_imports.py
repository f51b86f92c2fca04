"""Import hygiene: no import cycles anywhere in the course (common/ and every lab), no sys.path edits,
and common/ names no lab. Checked on the source text (ast), so nothing needs to be importable here."""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def modules():
    """{module name: path} for common/ and every lab folder (a lab is the package common.lab makes)."""
    out = {}
    for p in (ROOT / "common").rglob("*.py"):
        parts = p.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    for lab in (ROOT / "labs").glob("*/lab.py"):
        pkg = "labs_" + re.sub(r"\W", "_", lab.parent.name)
        for p in lab.parent.rglob("*.py"):
            rel = p.relative_to(lab.parent).with_suffix("").parts
            if rel[0] == "tests":
                continue
            out[".".join((pkg,) + (rel[:-1] if rel[-1] == "__init__" else rel))] = p
    return out


def imports(name, path, known):
    """The known modules `name` imports at module level or inside functions (both can cycle)."""
    tree = ast.parse(path.read_text())
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                head = base[:len(base) - node.level + 1]
                mod = ".".join(head + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found.add(mod)
            found |= {f"{mod}.{a.name}" for a in node.names}
    return {m for m in found if m in known and m != name}


def test_no_import_cycles():
    known = modules()
    graph = {n: imports(n, p, known) for n, p in known.items()}
    # a package's __init__ importing its own submodules is not a cycle to worry about
    for n in graph:
        graph[n] = {m for m in graph[n] if not m.startswith(n + ".")}
    seen, stack, cycles = {}, [], []

    def visit(n):
        seen[n] = "open"
        stack.append(n)
        for m in sorted(graph[n]):
            if seen.get(m) == "open":
                cycles.append(" -> ".join(stack[stack.index(m):] + [m]))
            elif m not in seen:
                visit(m)
        stack.pop()
        seen[n] = "done"

    for n in sorted(graph):
        if n not in seen:
            visit(n)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_no_sys_path_edits():
    offenders = []
    for p in list(ROOT.glob("common/**/*.py")) + list(ROOT.glob("labs/**/*.py")) + list(ROOT.glob("scripts/*.py")) \
            + list(ROOT.glob("notebooks/*.ipynb")) + list(ROOT.glob("tests/*.py")):
        text = p.read_text()
        if re.search(r"sys\.path\s*(\.insert|\.append|\[[^\]]*\]\s*=|\+=)", text):
            offenders.append(str(p.relative_to(ROOT)))
    assert not offenders, f"sys.path edited in {offenders}: the Makefiles, the venv's .pth and pytest's pythonpath make common importable"


def test_common_names_no_lab_outside_docstrings_and_comments():
    """The runtime knows no lab: no string or name in common/ code says lab07 or a kernel of it."""
    pattern = re.compile(r"\blab0\d\w*|\b[vt][1-9]\b|\bk[1-7]\b|\bh[1-5]\b")
    offenders = []
    for p in (ROOT / "common").rglob("*.py"):
        tree = ast.parse(p.read_text())
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                      and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                if pattern.search(node.value) and "e.g." not in node.value and "make ncu KERNEL=" not in node.value:
                    offenders.append(f"{p.relative_to(ROOT)}:{node.lineno}: {node.value[:60]!r}")
            elif isinstance(node, ast.Name) and pattern.fullmatch(node.id):
                offenders.append(f"{p.relative_to(ROOT)}:{node.lineno}: name {node.id}")
    assert not offenders, "\n".join(offenders)
