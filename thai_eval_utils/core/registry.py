"""The registry: benchmark names -> :class:`~thai_eval_utils.core.benchmark.Suite` objects, read by
every consumer (``thai-eval run``/``--dry-run``/``runs``/``compare``/``export``/``report``, the batch runner).

Where suites come from, in this order (a later one may not reuse a name):

1. the package's own: every subpackage of ``thai_eval_utils`` with a ``suite`` module exporting ``SUITE``
   (found by walking the package, as lm-evaluation-harness walks its ``tasks`` folder, so this module names none);
2. other installed packages: entry points in the group ``thai_eval.suites`` (each loads to a Suite);
3. the user's own files: :func:`include_path` (``thai-eval run --tasks-dir DIR``, ``$THAI_EVAL_TASKS`` as an
   ``os.pathsep``-separated list), each ``*.py`` file exporting ``SUITE`` or ``TASK``/``TASKS`` (declared tasks,
   :mod:`thai_eval_utils.tasks`), as lm-eval's ``--include_path``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import sys
from collections.abc import Iterable, Sequence
from importlib.metadata import entry_points
from pathlib import Path

from thai_eval_utils.core.benchmark import Suite
from thai_eval_utils.core.errors import ThaiEvalDataError

#: The entry-point group other packages register suites under.
ENTRY_POINT_GROUP = "thai_eval.suites"
#: Folders (os.pathsep-separated) of the user's task files, read on first use.
TASKS_ENV = "THAI_EVAL_TASKS"
_PACKAGE = "thai_eval_utils"

_suites: dict[str, Suite] | None = None
_included: list[Path] = []


class UnknownBenchmarkError(ValueError):
    """A name that no registered suite or task has."""


def _builtin() -> list[Suite]:
    """``SUITE`` of every ``thai_eval_utils.<package>.suite`` module, in (position, name) order.

    Which subpackages have a ``suite`` module is read from their folders (``pkgutil.iter_modules`` on a path
    imports nothing): ``importlib.util.find_spec("<pkg>.suite")`` would import every subpackage (the command line,
    the report, torch through the engines) just to look.
    """
    root = importlib.import_module(_PACKAGE)
    out = []
    for folder in root.__path__:
        for info in sorted(pkgutil.iter_modules([folder]), key=lambda m: m.name):
            sub = os.path.join(folder, info.name)
            if info.ispkg and any(m.name == "suite" for m in pkgutil.iter_modules([sub])):
                out.append(importlib.import_module(f"{_PACKAGE}.{info.name}.suite").SUITE)
    return sorted(out, key=lambda s: (s.position, s.name))


def _from_entry_points() -> list[Suite]:
    return [ep.load() for ep in entry_points(group=ENTRY_POINT_GROUP)]


def _load_file(path: Path) -> list[Suite]:
    """The suites a user's task file declares: ``SUITE``, or ``TASK``/``TASKS`` made into suites. An error that
    names no file (a declaration's bad field) is raised again naming this one."""
    try:
        return _suites_in(path)
    except ThaiEvalDataError as exc:
        if exc.path is not None:
            raise
        raise ThaiEvalDataError(exc.reason, path=path, row=exc.row, field=exc.field) from None


def _suites_in(path: Path) -> list[Suite]:
    """:func:`_load_file`'s work: import the file, collect ``SUITE``, ``TASK`` and ``TASKS``."""
    name = f"thai_eval_user_tasks.{path.stem}_{abs(hash(str(path.resolve()))):x}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ThaiEvalDataError("cannot import this task file", path=path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except ThaiEvalDataError:
        raise
    except Exception as exc:  # a user's file: say which one failed and why, whatever it raised
        raise ThaiEvalDataError(f"importing the task file failed: {type(exc).__name__}: {exc}", path=path) from None
    found: list[Suite] = []
    if isinstance(getattr(module, "SUITE", None), Suite):
        found.append(module.SUITE)
    declared = list(getattr(module, "TASKS", ())) + ([module.TASK] if hasattr(module, "TASK") else [])
    for task in declared:
        as_suite = getattr(task, "as_suite", None)
        if as_suite is None:
            raise ThaiEvalDataError(
                f"TASK/TASKS holds {type(task).__name__}, not a declared task (thai_eval_utils.tasks)",
                path=path,
                field="TASK",
            )
        found.append(as_suite(source=path))
    if not found:
        raise ThaiEvalDataError("the file defines no SUITE, TASK or TASKS", path=path)
    return found


def _files(folder: Path) -> list[Path]:
    if folder.is_file():
        return [folder]
    if not folder.is_dir():
        raise ThaiEvalDataError("no such task file or folder", path=folder)
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("_"))


def _add(table: dict[str, Suite], suite: Suite, where: str) -> None:
    if not suite.name or "/" in suite.name:
        raise ThaiEvalDataError(f"a suite needs a name without '/' (got {suite.name!r})", path=where, field="name")
    if suite.name in table and table[suite.name] is not suite:
        raise ThaiEvalDataError(
            f"benchmark name {suite.name!r} is taken (by {table[suite.name]!r})", path=where, field="name"
        )
    table[suite.name] = suite


def _load() -> dict[str, Suite]:
    table: dict[str, Suite] = {}
    for suite in _builtin():
        _add(table, suite, f"{_PACKAGE}/{suite.name}")
    for suite in _from_entry_points():
        _add(table, suite, f"entry point {ENTRY_POINT_GROUP}")
    env = [Path(p).expanduser().resolve() for p in os.environ.get(TASKS_ENV, "").split(os.pathsep) if p]
    for folder in dict.fromkeys([*env, *_included]):  # a folder both in $THAI_EVAL_TASKS and included loads once
        for path in _files(folder):
            for suite in _load_file(path):
                _add(table, suite, str(path))
    return table


def suites() -> dict[str, Suite]:
    """Every registered suite by name (the package's, entry points', the user's files'), in display order:
    ``Suite.position``, ties by name (the order of compare's rows, the report's tables and figures)."""
    global _suites
    if _suites is None:
        _suites = _load()
    return dict(sorted(_suites.items(), key=lambda item: (item[1].position, item[0])))


def include_path(*paths: str | Path) -> None:
    """Register the user's task files (a ``.py`` file, or a folder of them) for this process."""
    global _suites
    for p in paths:
        path = Path(p).expanduser().resolve()
        if path not in _included:
            _included.append(path)
    _suites = None


def register(suite: Suite) -> Suite:
    """Register a suite made in code (a notebook's own task); returns it."""
    table = suites()
    _add(table, suite, "register()")
    global _suites
    _suites = table
    return suite


def get_suite(name: str) -> Suite:
    """The suite ``name`` (or of ``<suite>/<task>``); an :class:`UnknownBenchmarkError` listing the known ones."""
    table = suites()
    suite = table.get(name.split("/")[0])
    if suite is None:
        raise UnknownBenchmarkError(f"unknown benchmark {name!r}; choose from {', '.join(names())}")
    return suite


def names() -> list[str]:
    """Every suite name and every ``<suite>/<task>`` that runs alone."""
    return [n for s in suites().values() for n in (s.name, *(f"{s.name}/{t}" for t in s.tasks))]


def resolve(requested: Iterable[str]) -> list[tuple[Suite, tuple[str, ...]]]:
    """``--benchmarks`` names -> (suite, tasks asked for; empty = the whole suite), suites in registry order."""
    wanted: dict[str, set[str] | None] = {}
    for name in requested:
        suite = get_suite(name)
        task = name.split("/", 1)[1] if "/" in name else None
        if task is not None and task not in suite.tasks:
            raise UnknownBenchmarkError(
                f"suite {suite.name!r} has no task {task!r}; its tasks: {', '.join(suite.tasks)}"
            )
        if task is None:
            wanted[suite.name] = None
        elif wanted.get(suite.name, set()) is not None:
            wanted.setdefault(suite.name, set()).add(task)  # type: ignore[union-attr]
    out = []
    for suite in suites().values():
        if suite.name in wanted:
            tasks = wanted[suite.name]
            out.append((suite, () if tasks is None else tuple(t for t in suite.tasks if t in tasks)))
    return out


def suite_of(run_benchmark: str) -> Suite | None:
    """The suite that reads a stored run of ``run_benchmark`` (``<suite>/<task>``), None if none is registered."""
    return suites().get(run_benchmark.split("/")[0])


def default_benchmarks() -> Sequence[str]:
    """What ``--benchmarks`` means when not given: every registered suite."""
    return list(suites())
