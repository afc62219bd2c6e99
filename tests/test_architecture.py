"""The layering DEVELOPERS.md promises, checked on the source: core imports no benchmark, benchmarks import no
other benchmark, no import cycles, and no imports of the package inside functions (except batch's torch)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "thai_eval_utils"
BENCHMARKS = ("h6", "thaicli", "dialect")
#: (module, imported module) pairs allowed inside functions: optional heavy dependencies only.
FUNCTION_LEVEL_ALLOWED = {("thai_eval_utils.batch", "thai_eval_utils.core.models")}


def _module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, root: Path = PACKAGE) -> tuple[set[str], set[str]]:
    """(module-level, function-level) imports of ``thai_eval_utils`` modules in one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top: set[str] = set()
    inner: set[str] = set()
    known = _all_modules(root)

    def targets(node: ast.ImportFrom | ast.Import) -> set[str]:
        if isinstance(node, ast.Import):
            return {a.name for a in node.names if a.name.startswith("thai_eval_utils")}
        base = node.module or ""
        if not base.startswith("thai_eval_utils"):
            return set()
        out = set()
        for alias in node.names:  # `from pkg import module` imports the module, `from mod import name` the module
            full = f"{base}.{alias.name}"
            out.add(full if full in known else base)
        return out

    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            top |= targets(node)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    inner |= targets(sub)
    return top, inner


def _all_modules(root: Path = PACKAGE) -> set[str]:
    return {_module_name(p, root) for p in root.rglob("*.py")}


def _graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    return {_module_name(p, root): _imports(p, root)[0] for p in root.rglob("*.py")}


def _package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_core_imports_no_benchmark_and_benchmarks_import_no_other_benchmark():
    bad = []
    for module, deps in _graph().items():
        pkg = _package_of(module)
        for dep in deps:
            dep_pkg = _package_of(dep)
            if pkg == "core" and dep_pkg not in ("core", ""):
                bad.append((module, dep))
            if pkg in BENCHMARKS and dep_pkg in BENCHMARKS and dep_pkg != pkg:
                bad.append((module, dep))
    assert bad == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Import cycles by depth-first search (a package ``__init__`` importing its own submodules is no cycle)."""
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if dep == node or dep not in graph:
                continue
            if state.get(dep) == 1:
                cycle = stack[stack.index(dep):] + [dep]
                if not all(m == dep or m.startswith(dep + ".") for m in cycle):
                    cycles.append(cycle)
            elif dep not in state:
                visit(dep, [*stack, dep])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    return cycles


def test_no_import_cycles_between_modules():
    assert _cycles(_graph()) == []


def test_no_package_imports_inside_functions_except_heavy_optional_ones():
    found = set()
    for path in PACKAGE.rglob("*.py"):
        module = _module_name(path)
        found |= {(module, dep) for dep in _imports(path)[1]}
    assert found <= FUNCTION_LEVEL_ALLOWED


def test_the_checker_sees_a_cycle_and_a_function_level_import(tmp_path):
    """The checks can fail: two modules importing each other, and an import inside a function, are reported."""
    pkg = tmp_path / "thai_eval_utils"
    (pkg / "core").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "__init__.py").write_text("")
    (pkg / "core" / "a.py").write_text("from thai_eval_utils.core.b import x\n")
    (pkg / "core" / "b.py").write_text("from thai_eval_utils.core.a import y\nx = 1\n\ndef f():\n    from thai_eval_utils.core import a\n")
    cycles = _cycles(_graph(pkg))
    assert cycles and set(cycles[0]) == {"thai_eval_utils.core.a", "thai_eval_utils.core.b"}
    assert _imports(pkg / "core" / "b.py", pkg)[1] == {"thai_eval_utils.core.a"}
