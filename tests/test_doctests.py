"""The examples in the package's docstrings are run: every module holding a ``>>>`` example passes ``doctest`` (an
example that no longer holds fails here instead of misleading a reader)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "thai_eval_utils"


def modules_with_examples() -> list[str]:
    """Dotted names of the package modules whose source holds a ``>>>`` example."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if ">>> " in path.read_text(encoding="utf-8"):
            parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_the_package_has_examples_to_run():
    assert "thai_eval_utils.core.errors" in modules_with_examples() and len(modules_with_examples()) >= 10


@pytest.mark.parametrize("module", modules_with_examples())
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {module} failed (output above)"
