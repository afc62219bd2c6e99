"""No tracked line refers to this project's own issues by number: a reader of the code, a notebook or the docs
cannot look "issue N" up. Such a line says what the thing is and why; history lives in the commits.

An upstream project's issue or pull request stays, cited as owner/repo#N ("vllm-project/vllm#42019"), with the
project named right before the number, or as a link to another repository's issue or pull request on GitHub. A project's name elsewhere on the line is not enough: many of this project's own lines name lm-eval or
SEA-HELM (a heading "Generation engine (issue N): continuous batching against lm-eval 0.4.13" would refer to an
internal issue).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: What is checked: code, notebooks, docs, configuration and templates (data files, whose text is the data
#: sets', are not).
CHECKED_SUFFIXES = {
    ".py",
    ".ipynb",
    ".md",
    ".yml",
    ".yaml",
    ".toml",
    ".cfg",
    ".ini",
    ".txt",
    ".sh",
    ".js",
    ".j2",
    ".html",
    ".css",
}
CHECKED_NAMES = {"Makefile"}

#: An issue number in any spelling: "issue N", "Issue N:", "issues N and M", "issue-N", "issue #N" (N a number).
ISSUE_NUMBER = re.compile(r"\bissues?[ -]#?\d+", re.IGNORECASE)
#: Third-party projects whose issues and pull requests may be cited by number (the name right before it).
THIRD_PARTY = (
    "vLLM",
    "SGLang",
    "lm-evaluation-harness",
    "lm-eval",
    "lm_eval",
    "lighteval",
    "SEA-HELM",
    "seacrowd-eval",
    "seacrowd",
    "transformers",
    "huggingface_hub",
    "datasets",
    "accelerate",
    "tokenizers",
    "PyTorch",
    "torch",
    "llama.cpp",
    "FastChat",
    "openai-python",
    "openai",
    "jupyter",
    "ipykernel",
    "nbclient",
    "papermill",
    "mkdocs",
    "mkdocstrings",
    "griffe",
    "playwright",
    "itables",
    "DataTables",
    "pandas",
    "numpy",
    "scipy",
    "grimp",
)
#: A project named right before the number: "<project> PR 3700", "<project>'s pull request 123" (and the word issue).
NAMED = re.compile(
    r"(?<![\w-])(?:%s)(?:'s)?\s+(?:issues?|PR|pull request)[ -]#?\d+" % "|".join(map(re.escape, THIRD_PARTY)),
    re.IGNORECASE,
)
#: A link to another repository's issue or pull request (this project is ``thai-eval``).
LINK = re.compile(r"github\.com/[\w.-]+/(?!thai-eval/)[\w.-]+/(?:issues|pull)/\d+", re.IGNORECASE)


def offending(line: str) -> list[str]:
    """The issue numbers on ``line`` that do not cite a third-party project's issue."""
    if LINK.search(line):
        return []
    cited = [m.span() for m in NAMED.finditer(line)]
    return [
        m.group(0) for m in ISSUE_NUMBER.finditer(line) if not any(a <= m.start() and m.end() <= b for a, b in cited)
    ]


def offending_lines(text: str) -> list[tuple[int, str]]:
    """(line number from 1, issue number) for each internal issue number in ``text``."""
    return [(n, hit) for n, line in enumerate(text.splitlines(), 1) for hit in offending(line)]


def tracked_files(repo: Path) -> list[str] | None:
    """The checked files ``git ls-files`` lists under ``repo`` (relative paths), or None outside a git checkout."""
    try:
        out = subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    names = [n for n in out.decode("utf-8").split("\0") if n]
    return [n for n in names if Path(n).suffix in CHECKED_SUFFIXES or Path(n).name in CHECKED_NAMES]


def scan(repo: Path) -> list[str]:
    """``path:line: issue number`` for every internal issue number in the tracked tree of ``repo``."""
    files = tracked_files(repo)
    if files is None:
        pytest.skip("not a git checkout: the tracked files are unknown")
    found = []
    for name in files:
        path = repo / name
        if path.is_file():  # a tracked file deleted in the working tree is not read
            text = path.read_text(encoding="utf-8", errors="replace")
            found += [f"{name}:{n}: {hit}" for n, hit in offending_lines(text)]
    return found


def test_no_tracked_line_refers_to_an_internal_issue_number():
    found = scan(REPO)
    assert not found, (
        "say what the thing is and why instead of an internal issue number (a third-party one names "
        "its project, e.g. 'vllm-project/vllm#42019'):\n" + "\n".join(found)
    )


# The planted lines spell the word apart so that this file does not itself hold an internal issue number.
W = "issue"


def test_internal_issue_numbers_are_found_in_every_spelling():
    text = "\n".join(
        [
            f"x = 1  # the reply whole ({W} 31)",  # 1
            f'"""Compare two models\' stored runs ({W} 14; docs/statistics.md)."""',  # 2
            f"# {W.title()} 12: at least 4x lm-eval's HF backend",  # 3: lm-eval named, not cited
            f"## Generation engine ({W} 19): continuous batching against lm-eval 0.4.13",  # 4: the same
            f"# Statistics ({W}s 14 and 23)",  # 5
            f"## Measured (main after every {W}-23 branch was merged)",  # 6
            f"the judge before {W} #23 wrote NaN",  # 7
            f"see vLLM {W} 42019 and our own {W} 29",  # 8: one cited, one not
        ]
    )
    assert offending_lines(text) == [
        (1, f"{W} 31"),
        (2, f"{W} 14"),
        (3, f"{W.title()} 12"),
        (4, f"{W} 19"),
        (5, f"{W}s 14"),
        (6, f"{W}-23"),
        (7, f"{W} #23"),
        (8, f"{W} 29"),
    ]


def test_third_party_issues_and_pull_requests_pass():
    text = "\n".join(
        [
            f"log-probabilities can change with the order of the requests (vLLM {W} 42019)",
            f"([vLLM {W} 42019](https://github.com/vllm-project/vllm/{W}s/42019)): the same",
            f"the proposal of lighteval {W} #869, not what was merged",
            f"  lighteval's {W} #869 asked for the same",
            f"as lm-evaluation-harness {W} 3171 reports; SEA-HELM {W} 12; llama.cpp {W} 9",
            "lm-evaluation-harness PR 3700 changed it",
            f"fixed upstream: https://github.com/huggingface/transformers/{W}s/123 (see the thread)",
            f"a t{W} 5 cm wide; the {W}d token",  # no issue number at all (a word ending in it, a longer word)
        ]
    )
    assert offending_lines(text) == []
    assert offending_lines(f"https://github.com/someone/thai-eval/{W}s/5 ({W} 5)") == [(1, f"{W} 5")]


def test_a_planted_line_in_a_tracked_file_is_reported(tmp_path):
    """The scan reads what ``git ls-files`` lists: code and notebooks are checked, data files and untracked
    files are not."""

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(f'"""A module."""\n\nX = 1  # as before {W} 23\n', encoding="utf-8")
    (tmp_path / "nb.ipynb").write_text(
        f'{{"cells": [{{"source": ["thinking = \\"strip\\"  # models that think ({W} 31)\\n"]}}]}}\n', encoding="utf-8"
    )
    (tmp_path / "data.jsonl").write_text(f'{{"text": "{W} 7"}}\n', encoding="utf-8")
    (tmp_path / "README.md").write_text(f"# Tool\n\nSee vLLM {W} 42019.\n", encoding="utf-8")
    git("add", "pkg/mod.py", "nb.ipynb", "data.jsonl", "README.md")
    (tmp_path / "untracked.py").write_text(f"# {W} 9\n", encoding="utf-8")
    assert scan(tmp_path) == ["nb.ipynb:1: " + W + " 31", "pkg/mod.py:3: " + W + " 23"]
