"""benchmarks/package_lines.py: lines and code lines (no blank, comment or docstring line) counted by hand on a
planted module, and the table over two planted revisions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "package_lines.py"
_spec = importlib.util.spec_from_file_location("package_lines", SCRIPT)
P = importlib.util.module_from_spec(_spec)
sys.modules["package_lines"] = P
_spec.loader.exec_module(P)

MODULE = '''"""A module docstring
over two lines."""

# a comment
import os


def f(x):
    """One line."""
    y = (x +
         1)  # a trailing comment
    return "not a docstring"


class C:
    """A class docstring."""

    z = 1
'''


def test_a_module_counts_its_lines_and_its_code_lines():
    # code lines: import os; def f; y = (x +; 1); return; class C; z = 1
    assert P.count(MODULE) == (18, 7)


def test_the_table_sums_the_packages_and_gives_the_change(tmp_path):
    sizes = {}
    for label, body in (("old", MODULE + "\n\n\nw = 2\nv = 3\n"), ("new", MODULE)):
        root = tmp_path / label
        for name in P.BENCHMARKS:
            (root / P.PACKAGE / name).mkdir(parents=True)
            (root / P.PACKAGE / name / "a.py").write_text(body)
        sizes[label] = P.package_sizes(root)
    assert sizes["old"]["h6"] == (23, 9) and sizes["new"]["seahelm"] == (18, 7)
    lines = P.table(sizes).splitlines()
    assert lines[0] == "| package | old: lines / code lines | new: lines / code lines | change |"
    assert lines[2] == "| h6 | 23 / 9 | 18 / 7 | -21.7% / -22.2% |"
    assert lines[-1] == "| total | 115 / 45 | 90 / 35 | -21.7% / -22.2% |"
