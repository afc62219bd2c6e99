"""The shape of ``thai_eval_utils`` at git revisions (the state before and after a refactor), as a markdown table.

For each ``--rev`` (default ``HEAD``; ``a451a23`` is the state before the refactor of docs/code_shape.md began) the
package is read from git (``git archive``, so the working tree is never touched and uncommitted edits are not
counted):

- import cycles, counted as strongly connected components of more than one node (and the nodes in them), at module
  level and at package level, from two independent readings of the imports:
  *own*: this script's AST reading (absolute and relative imports, at module level and inside functions;
  ``from pkg import name`` is an import of ``pkg.name`` when that is a module, else of ``pkg``), and *grimp*: the
  ``grimp`` import-graph library (import-linter's engine) on the same files. In both, a module importing its own
  parent package (``backend.served.model`` importing ``backend.served``) is not counted as an edge: Python
  initialises a parent before its children, so it closes no import-order cycle. Package level twice: top-level
  subpackages (``core``, ``backend``, ``stats``, ``h6``, ...; the layers of DEVELOPERS.md) and every package
  (``backend.served`` apart from ``backend``);
- imports of the package's own modules made inside functions;
- modules over 400 lines (and whether a comment says why: the module mentions "400 lines") and functions over
  60 lines (``def`` line to last line, nested functions and methods too);
- duplicated statistics helpers: hand-written resampling loops outside ``thai_eval_utils/stats/`` (a ``for`` loop
  or comprehension over ``range(...)`` of a resample count, or drawing ``.integers``/``.choice``/``.permutation``
  in its body), definitions of ``round_half_up``, functions taking the second interval vocabulary (``n_boot``,
  ``ci``) and direct ``scipy.stats`` ``bootstrap``/``permutation_test`` calls outside ``stats/``.

    .venv/bin/python benchmarks/code_shape.py --rev a451a23 --rev HEAD      # before and now, side by side
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "thai_eval_utils"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
#: A loop over ``range(x)`` is a resampling loop when ``x`` names one of these.
_RESAMPLE_COUNT = re.compile(r"resampl|boot|n_samples|n_perm", re.IGNORECASE)
#: Generator methods that draw resample indices or signs.
_DRAWS = {"integers", "choice", "permutation"}
#: A long module "says why" when its text mentions the rule (e.g. "(Over 400 lines: ...)").
_SAYS_WHY = re.compile(rf"{MAX_MODULE_LINES} lines", re.IGNORECASE)
_OLD_VOCABULARY = {"n_boot", "ci"}
_SCIPY_RESAMPLERS = {"bootstrap", "permutation_test"}
Graph = dict[str, set[str]]


@dataclass
class Source:
    """The package's files at one revision: module name -> (path, is a package ``__init__``)."""

    root: Path
    modules: dict[str, tuple[Path, bool]] = field(default_factory=dict)

    @classmethod
    def read(cls, root: Path) -> Source:
        """Every ``.py`` file under ``root/thai_eval_utils``."""
        out = cls(root)
        for path in sorted((root / PACKAGE).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            is_pkg = parts[-1] == "__init__"
            out.modules[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
        return out

    def packages(self) -> set[str]:
        return {m for m, (_, is_pkg) in self.modules.items() if is_pkg}


def checkout(rev: str, into: Path) -> str:
    """Extract ``thai_eval_utils/`` at ``rev`` into ``into``; the revision's short hash."""
    short = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", rev], check=True, capture_output=True, text=True
    ).stdout.strip()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, PACKAGE], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return short


# ----------------------------------------------------------------------------------------- imports, own reading
def _import_targets(node: ast.Import | ast.ImportFrom, module: str, is_pkg: bool, known: set[str]) -> set[str]:
    """The package's modules one import statement names (relative imports resolved against ``module``)."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name.split(".")[0] == PACKAGE}
    base = node.module or ""
    if node.level:
        anchor = module if is_pkg else module.rpartition(".")[0]
        base = importlib.util.resolve_name("." * node.level + base, anchor)
    if base.split(".")[0] != PACKAGE:
        return set()
    return {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names}


def own_imports(src: Source) -> tuple[Graph, list[tuple[str, str]]]:
    """(module -> the package's modules it imports, anywhere in the file; (module, target) pairs inside functions)."""
    known = set(src.modules)
    graph: Graph = {}
    inner: list[tuple[str, str]] = []
    for module, (path, is_pkg) in src.modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        in_function = {
            id(sub)
            for fn in ast.walk(tree)
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
            for sub in ast.walk(fn)
            if isinstance(sub, (ast.Import, ast.ImportFrom))
        }
        graph[module] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                targets = _import_targets(node, module, is_pkg, known) & known
                graph[module] |= targets
                if id(node) in in_function:
                    inner += [(module, t) for t in sorted(targets)]
    return graph, sorted(set(inner))


_GRIMP_SCRIPT = """
import json, sys, grimp
g = grimp.build_graph(sys.argv[1], cache_dir=None)
print(json.dumps({m: sorted(g.find_modules_directly_imported_by(m)) for m in g.modules}))
"""


def grimp_imports(src: Source) -> Graph:
    """module -> imported modules as ``grimp`` reads them (in a fresh interpreter on the extracted files)."""
    out = subprocess.run(
        [sys.executable, "-c", _GRIMP_SCRIPT, PACKAGE],
        cwd=src.root,
        check=True,
        text=True,
        capture_output=True,
        env={"PYTHONPATH": str(src.root), "PATH": "/usr/bin:/bin"},
    ).stdout
    return {m: set(deps) for m, deps in json.loads(out).items()}


# ----------------------------------------------------------------------------------------------------- cycles
def without_parent_imports(graph: Graph, packages: set[str]) -> Graph:
    """``graph`` less self-imports and the imports of a module's own parent packages (``backend.served.model``
    importing ``backend.served``): Python initialises a parent before its children, so these close no import-order
    cycle. A package ``__init__`` importing its submodules is an edge like any other."""
    return {
        m: {d for d in deps if d != m and not (d in packages and m.startswith(d + "."))} for m, deps in graph.items()
    }


def collapse(graph: Graph, group_of) -> Graph:
    """The graph between groups (``group_of(module)``), edges inside a group dropped."""
    out: Graph = {}
    for module, deps in graph.items():
        g = group_of(module)
        out.setdefault(g, set()).update(group_of(d) for d in deps if group_of(d) != g)
    return out


def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm, iterative), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def top_package(module: str) -> str:
    """``thai_eval_utils.backend.served.model`` -> ``backend``; a module at the package's root is its own package."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(root)"


def package_cycles(graph: Graph, packages: set[str]) -> dict[str, list[list[str]]]:
    """Cycles of ``graph`` at module level, between top-level subpackages and between every package."""

    def own_package(module: str) -> str:
        """The package a module is in (a package: itself); a module at the root is its own package."""
        pkg = module if module in packages else module.rpartition(".")[0]
        return top_package(module) if pkg == PACKAGE else pkg.removeprefix(PACKAGE + ".")

    return {
        "module": cycles(graph),
        "top package": cycles(collapse(graph, top_package)),
        "every package": cycles(collapse(graph, own_package)),
    }


# -------------------------------------------------------------------------------------- sizes and statistics
def _functions(tree: ast.AST, prefix: str = ""):
    """(qualified name, node) of every function in ``tree``, nested ones and methods too."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}{node.name}"
            if not isinstance(node, ast.ClassDef):
                yield name, node
            yield from _functions(node, name + ".")
        else:
            yield from _functions(node, prefix)


def _is_resampling_loop(node: ast.AST) -> bool:
    """A ``for`` loop or comprehension over ``range(<a resample count>)``, or one that draws indices or signs."""
    if isinstance(node, ast.For):
        iters, body = [node.iter], node.body
    elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        iters, body = [g.iter for g in node.generators], [node]
    else:
        return False
    counts = any(
        isinstance(i, ast.Call) and getattr(i.func, "id", None) == "range" and _RESAMPLE_COUNT.search(ast.unparse(i))
        for i in iters
    )
    draws = any(
        isinstance(sub, ast.Call) and getattr(sub.func, "attr", None) in _DRAWS
        for part in body
        for sub in ast.walk(part)
    )
    return counts or draws


def _outermost_loops(tree: ast.AST) -> list[int]:
    """Line numbers of resampling loops not inside another resampling loop."""
    lines: list[int] = []
    inner: set[int] = set()
    for node in ast.walk(tree):
        if id(node) in inner or not _is_resampling_loop(node):
            continue
        lines.append(node.lineno)
        inner.update(id(sub) for sub in ast.walk(node) if sub is not node)
    return sorted(lines)


def sizes_and_statistics(src: Source) -> dict[str, list[str]]:
    """Long modules and functions, and the duplicated statistics helpers, each as a list of places."""
    out: dict[str, list[str]] = {
        k: []
        for k in (
            "long modules",
            "long functions",
            "resampling loops",
            "round_half_up",
            "old vocabulary",
            "scipy resamplers",
        )
    }
    for module, (path, _) in sorted(src.modules.items()):
        text = path.read_text(encoding="utf-8")
        rel, tree = path.relative_to(src.root).as_posix(), ast.parse(text)
        if (n := len(text.splitlines())) > MAX_MODULE_LINES:
            why = ", says why" if _SAYS_WHY.search(text) else ""
            out["long modules"].append(f"{rel} ({n}{why})")
        for name, fn in _functions(tree):
            if (n := fn.end_lineno - fn.lineno + 1) > MAX_FUNCTION_LINES:
                out["long functions"].append(f"{rel}:{fn.lineno} {name} ({n})")
            if fn.name == "round_half_up":
                out["round_half_up"].append(f"{rel}:{fn.lineno}")
            params = {a.arg for a in [*fn.args.args, *fn.args.kwonlyargs]}
            if params & _OLD_VOCABULARY:
                out["old vocabulary"].append(
                    f"{rel}:{fn.lineno} {name} ({', '.join(sorted(params & _OLD_VOCABULARY))})"
                )
        if module.startswith(f"{PACKAGE}.stats"):
            continue
        out["resampling loops"] += [f"{rel}:{line}" for line in _outermost_loops(tree)]
        out["scipy resamplers"] += [f"{rel}:{line}" for line in _scipy_resampler_calls(tree)]
    return out


def _scipy_resampler_calls(tree: ast.AST) -> list[int]:
    """Lines calling ``scipy.stats.bootstrap`` / ``permutation_test`` (as ``stats.x`` or ``scipy.stats.x``, or
    by the bare name in a module that imports it from ``scipy.stats``)."""
    bare = {
        a.asname or a.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "scipy.stats"
        for a in node.names
        if a.name in _SCIPY_RESAMPLERS
    }
    imports_scipy = any(
        isinstance(n, (ast.Import, ast.ImportFrom)) and "scipy" in ast.unparse(n) for n in ast.walk(tree)
    )
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = ast.unparse(node.func)
        if name in bare or (
            imports_scipy
            and name.rpartition(".")[2] in _SCIPY_RESAMPLERS
            and name.rpartition(".")[0] in ("stats", "scipy.stats")
        ):
            lines.append(node.lineno)
    return sorted(lines)


# ------------------------------------------------------------------------------------------------- the report
@dataclass
class Shape:
    """Everything measured at one revision."""

    label: str
    n_modules: int
    n_lines: int
    edges: dict[str, int]  # reading ("own", "grimp") -> import edges between the package's modules
    edges_differ: int  # edges one reading has and the other has not
    cycles: dict[str, dict[str, list[list[str]]]]  # reading -> level -> components
    inner_imports: list[tuple[str, str]]
    places: dict[str, list[str]]


def measure(root: Path, label: str) -> Shape:
    """The shape of the package extracted under ``root``."""
    src = Source.read(root)
    own, inner = own_imports(src)
    packages = src.packages()
    readings = {"own": own, "grimp": grimp_imports(src)}
    found = {k: package_cycles(without_parent_imports(g, packages), packages) for k, g in readings.items()}
    n_lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p, _ in src.modules.values())
    edges = {k: {(m, d) for m, deps in g.items() for d in deps} for k, g in readings.items()}
    return Shape(
        label,
        len(src.modules),
        n_lines,
        {k: len(e) for k, e in edges.items()},
        len(edges["own"] ^ edges["grimp"]),
        found,
        inner,
        sizes_and_statistics(src),
    )


def _cycle_cell(shape: Shape, level: str) -> str:
    own, grimp = shape.cycles["own"][level], shape.cycles["grimp"][level]
    return (
        f"{len(own)} ({sum(map(len, own))} {'modules' if level == 'module' else 'packages'}) / "
        f"{len(grimp)} ({sum(map(len, grimp))})"
    )


ROWS = [
    ("modules (lines)", lambda s: f"{s.n_modules} ({s.n_lines})"),
    (
        "import edges between modules: own / grimp (edges not in both)",
        lambda s: f"{s.edges['own']} / {s.edges['grimp']} ({s.edges_differ})",
    ),
    ("import cycles, module level: own / grimp (nodes in them)", lambda s: _cycle_cell(s, "module")),
    ("import cycles, top-level packages: own / grimp", lambda s: _cycle_cell(s, "top package")),
    ("import cycles, every package (backend.served apart): own / grimp", lambda s: _cycle_cell(s, "every package")),
    ("imports of the package inside functions", lambda s: str(len(s.inner_imports))),
    (
        f"modules over {MAX_MODULE_LINES} lines (of them with no comment saying why)",
        lambda s: f"{len(s.places['long modules'])} ({sum('says why' not in m for m in s.places['long modules'])})",
    ),
    (f"functions over {MAX_FUNCTION_LINES} lines", lambda s: str(len(s.places["long functions"]))),
    ("hand-written resampling loops outside stats/", lambda s: str(len(s.places["resampling loops"]))),
    ("scipy bootstrap / permutation_test calls outside stats/", lambda s: str(len(s.places["scipy resamplers"]))),
    ("round_half_up definitions", lambda s: str(len(s.places["round_half_up"]))),
    ("functions taking n_boot / ci (second vocabulary)", lambda s: str(len(s.places["old vocabulary"]))),
]


def table(shapes: list[Shape]) -> str:
    """The measures side by side, one column per revision."""
    lines = ["| measure | " + " | ".join(s.label for s in shapes) + " |", "|---|" + "---|" * len(shapes)]
    lines += [f"| {name} | " + " | ".join(cell(s) for s in shapes) + " |" for name, cell in ROWS]
    return "\n".join(lines)


def details(shape: Shape) -> str:
    """The lists behind one revision's numbers."""
    out = [f"### {shape.label}", ""]
    for reading, levels in shape.cycles.items():
        for level, comps in levels.items():
            out += [f"- cycles, {level} ({reading}): " + ("; ".join(" <-> ".join(c) for c in comps) or "none")]
    out += ["- imports inside functions: " + ("; ".join(f"{m} -> {t}" for m, t in shape.inner_imports) or "none")]
    out += [f"- {name}: " + ("; ".join(places) or "none") for name, places in shape.places.items()]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rev", action="append", help="git revision (repeat for columns; default HEAD)")
    ap.add_argument("--no-details", action="store_true", help="print the table only")
    args = ap.parse_args(argv)
    shapes = []
    for rev in args.rev or ["HEAD"]:
        with tempfile.TemporaryDirectory(prefix="code-shape-") as tmp:
            short = checkout(rev, Path(tmp))
            shapes.append(measure(Path(tmp), rev if rev.startswith(short) else f"{rev} ({short})"))
    print(table(shapes))
    if not args.no_details:
        print("\n" + "\n\n".join(details(s) for s in shapes))


if __name__ == "__main__":
    main()
