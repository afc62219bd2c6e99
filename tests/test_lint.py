"""ruff's lint of the code (pyproject.toml ``[tool.ruff.lint]``: syntax errors, pyflakes, mutable and call defaults)
passes, as ``make test`` runs it; and the configured rules do catch each kind of finding in a planted file."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: A comment that keeps a line out of the formatter (written so that this line is not one).
MARKER = re.compile("#" + r"\s*fmt:\s*(skip|off)")
#: What ``make test`` lints.
LINTED = ("thai_eval_utils", "tests", "benchmarks")

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ruff") is None,
    reason="ruff is not installed (the dev extra pins it: pip install -e '.[dev]')",
)


def _ruff_check(*paths: str | Path) -> subprocess.CompletedProcess[str]:
    """``ruff check`` of this interpreter's environment, with the repository's configuration."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--config",
            str(REPO / "pyproject.toml"),
            "--output-format",
            "concise",
            "--no-cache",
            *map(str, paths),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_ruff_check_passes():
    result = _ruff_check(*LINTED)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_configured_rules_catch_a_planted_file(tmp_path):
    """An unused import, an undefined name, an unused variable, a mutable default and a call in a default are
    each found; a frozen dataclass declared immutable (``extend-immutable-calls``) is allowed as a default."""
    planted = tmp_path / "planted.py"
    planted.write_text(
        "import json\nimport os\n"
        "from thai_eval_utils.tasks.thinking import ThinkingOption\n\n\n"
        "def f(x=[], y=os.getcwd(), thinking=ThinkingOption()):\n"
        "    unused = 1\n"
        "    return undefined_name, x, y, thinking\n",
        encoding="utf-8",
    )
    result = _ruff_check(planted)
    found = sorted(
        f"{code} at {line}"
        for line, code in re.findall(rf"^{re.escape(str(planted))}:(\d+):\d+: (\w+)", result.stdout, flags=re.M)
    )
    assert result.returncode == 1
    assert found == ["B006 at 6", "B008 at 6", "F401 at 1", "F821 at 8", "F841 at 7"]


def _ruff_format_check(*paths: str | Path) -> subprocess.CompletedProcess[str]:
    """``ruff format --check`` with the repository's configuration (no file is written)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "format",
            "--check",
            "--config",
            str(REPO / "pyproject.toml"),
            "--no-cache",
            *map(str, paths),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_code_is_formatted_and_no_line_opts_out():
    """``ruff format --check`` passes over what ``make test`` checks, and no ``fmt: skip`` / ``fmt: off`` comment
    (:data:`MARKER`) keeps a line out of the formatter."""
    result = _ruff_format_check(*LINTED)
    assert result.returncode == 0, result.stdout + result.stderr
    markers = [
        f"{path.relative_to(REPO)}:{i}"
        for top in LINTED
        for path in sorted((REPO / top).rglob("*.py"))
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if MARKER.search(line)
    ]
    assert markers == []


def test_the_format_check_finds_a_planted_file(tmp_path):
    """A hand-aligned call the formatter would rewrite fails the check, naming the file."""
    planted = tmp_path / "planted.py"
    planted.write_text("x = {'a':1,\n        'b':2}\n", encoding="utf-8")
    result = _ruff_format_check(planted)
    assert result.returncode == 1
    assert "planted.py" in result.stdout + result.stderr
