"""The size of each benchmark package of ``thai_eval_utils`` at git revisions, as a markdown table.

For each ``--rev`` (default ``HEAD``) the package is read from git (``git archive``, as
:mod:`benchmarks.code_shape` reads it: the working tree is never read, uncommitted edits are not counted), and each
benchmark package (``h6``, ``thaicli``, ``dialect``, ``thai_llm_leaderboard``, ``seahelm``) is counted two ways:

- **lines**: every line of its ``.py`` files (what ``find PKG -name '*.py' | xargs cat | wc -l`` prints);
- **code lines**: lines holding a Python token that is not a comment, and not inside a module, class or function
  docstring (so a shorter docstring does not count as less code, and a longer one not as more).

The last column compares the last revision with the first, in percent.

    .venv/bin/python benchmarks/package_lines.py --rev a953a71 --rev HEAD
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import io
import sys
import tempfile
import tokenize
from pathlib import Path

_spec = importlib.util.spec_from_file_location("code_shape", Path(__file__).with_name("code_shape.py"))
_code_shape = importlib.util.module_from_spec(_spec)
sys.modules["code_shape"] = _code_shape  # its dataclasses resolve their annotations through sys.modules
_spec.loader.exec_module(_code_shape)

PACKAGE = "thai_eval_utils"
#: The benchmark packages (the suites' own code; the shared layers are not counted).
BENCHMARKS = ("h6", "thaicli", "dialect", "thai_llm_leaderboard", "seahelm")
_NOT_CODE = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def docstring_lines(tree: ast.AST) -> set[int]:
    """The line numbers of every module, class and function docstring in ``tree``."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, _DOCUMENTED) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def count(source: str) -> tuple[int, int]:
    """(lines, code lines) of one module's text."""
    code: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in _NOT_CODE:
            code.update(range(tok.start[0], tok.end[0] + 1))
    return len(source.splitlines()), len(code - docstring_lines(ast.parse(source)))


def package_sizes(root: Path) -> dict[str, tuple[int, int]]:
    """Benchmark package -> (lines, code lines) of its ``.py`` files under ``root/thai_eval_utils``."""
    sizes = {}
    for name in BENCHMARKS:
        counts = [count(p.read_text(encoding="utf-8")) for p in sorted((root / PACKAGE / name).rglob("*.py"))]
        sizes[name] = (sum(c[0] for c in counts), sum(c[1] for c in counts))
    return sizes


def table(columns: dict[str, dict[str, tuple[int, int]]]) -> str:
    """The markdown table: a row per package and a total, ``lines / code lines`` per revision, the change."""
    labels = list(columns)
    rows = [*BENCHMARKS, "total"]
    for sizes in columns.values():
        sizes["total"] = (sum(sizes[b][0] for b in BENCHMARKS), sum(sizes[b][1] for b in BENCHMARKS))
    out = ["| package | " + " | ".join(f"{label}: lines / code lines" for label in labels) + " | change |"]
    out.append("|---" * (len(labels) + 2) + "|")
    for row in rows:
        first, last = columns[labels[0]][row], columns[labels[-1]][row]
        change = " / ".join(f"{100 * (b - a) / a:+.1f}%" for a, b in zip(first, last))
        cells = " | ".join(f"{columns[label][row][0]:,} / {columns[label][row][1]:,}" for label in labels)
        out.append(f"| {row} | {cells} | {change} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rev", action="append", help="git revision (repeat for columns; default HEAD)")
    args = ap.parse_args(argv)
    columns = {}
    for rev in args.rev or ["HEAD"]:
        with tempfile.TemporaryDirectory(prefix="package-lines-") as tmp:
            short = _code_shape.checkout(rev, Path(tmp))
            columns[rev if rev.startswith(short) else f"{rev} ({short})"] = package_sizes(Path(tmp))
    print(table(columns))


if __name__ == "__main__":
    main()
