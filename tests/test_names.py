"""One meaning per name: the names a reader looks up (a task type, the task runner, an engine's budget, a suite's
``SUITE``, the notebook runner) are each defined once in the package, so a search finds the one thing meant."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from thai_eval_utils.core.benchmark import Suite
from thai_eval_utils.core.registry import _builtin

PACKAGE = Path(__file__).resolve().parents[1] / "thai_eval_utils"
#: Names a user or a contributor looks up by name: each must be defined at module level exactly once.
UNIQUE = ("GenerationTask", "MultipleChoiceTask", "run_task", "TaskRun", "generation_budget", "loglikelihood_budget")


def _definitions() -> dict[str, list[str]]:
    """Module-level class, function and assignment names -> the modules defining them."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        module = str(path.relative_to(PACKAGE.parent))
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                found[node.name].append(module)
            elif isinstance(node, ast.Assign):
                found.update({t.id: found[t.id] + [module] for t in node.targets if isinstance(t, ast.Name)})
    return found


def test_looked_up_names_are_defined_once():
    found = _definitions()
    assert {name: found[name] for name in UNIQUE if len(found[name]) != 1} == {}


def test_suite_means_the_suite_object_in_every_benchmark_package():
    """``SUITE`` in a benchmark package is its registered :class:`Suite`; its name as text is ``SUITE_NAME``."""
    found = _definitions()
    for suite in _builtin():  # the shipped suites, each from its package's suite module
        package = type(suite).__module__.split(".")[1]
        defining = [m for m in found["SUITE"] if m.startswith(f"thai_eval_utils/{package}/")]
        assert defining == [f"thai_eval_utils/{package}/suite.py"], (package, defining)
        assert isinstance(__import__(f"thai_eval_utils.{package}.suite", fromlist=["SUITE"]).SUITE, Suite)


def test_the_notebook_runner_is_not_called_batch():
    """ "batch" is the OpenAI Batch API's word (``--batch``, ``judging.batch``); the papermill runner is
    ``notebook_runs``."""
    assert not (PACKAGE / "batch.py").exists()
    assert (PACKAGE / "notebook_runs.py").is_file()
