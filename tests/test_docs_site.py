"""The front door: the README and DEVELOPERS.md stay short, the documentation site builds offline with no warning,
and every ``thai-eval`` command a page shows exists.

The site (``mkdocs.yml``, pages in ``docs/``) is built once with ``mkdocs build --strict`` into a temporary folder:
a broken link or anchor, a page missing from the nav, a docstring the API page cannot read or anything else MkDocs
warns about fails it. The commands are read from every fenced code block of ``README.md``, ``DEVELOPERS.md`` and
``docs/**/*.md`` and checked against the parser ``thai-eval`` itself uses (``thai_eval_utils.cli.build_parser``,
in-process): the subcommand, the ``data`` / ``batch`` verb and every ``--option``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
PAGES = [REPO / "README.md", REPO / "DEVELOPERS.md", *sorted(DOCS.rglob("*.md"))]
README_LIMIT, DEVELOPERS_LIMIT = 12 * 1024, 15 * 1024
#: The HTML elements the pages and the theme use; any other tag in a built page is text of ours that Python-Markdown
#: took for raw HTML (e.g. a line starting with ``<config id>``), which the browser would swallow.
HTML_TAGS = frozenset(
    "html head body meta title link script style div span a p ul ol li code pre table thead tbody tfoot tr th td h1 "
    "h2 h3 h4 h5 h6 em strong img br hr nav header footer main article section label input form button svg path "
    "aside details summary blockquote sup sub small abbr kbd dl dt dd del ins mark s i b u noscript use g defs "
    "circle rect line polyline polygon template source picture figure figcaption caption colgroup col".split()
)


# ------------------------------------------------------------------------------------------------ sizes


def test_readme_is_at_most_12_kb():
    assert (REPO / "README.md").stat().st_size <= README_LIMIT


def test_developers_md_is_at_most_15_kb():
    assert (REPO / "DEVELOPERS.md").stat().st_size <= DEVELOPERS_LIMIT


# ------------------------------------------------------------------------------------------------ the site


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """``mkdocs build --strict`` of the repository's site into a temporary folder: (the process, the folder)."""
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(REPO / "mkdocs.yml"),
            "--site-dir",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    return proc, out


def test_the_site_builds_strict_with_no_warning(site):
    proc, out = site
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    assert "WARNING" not in log and "ERROR" not in log, log
    assert (out / "index.html").is_file()


def _built(out: Path, page: Path) -> Path:
    """Where MkDocs writes a page (directory URLs): docs/x.md -> x/index.html, docs/index.md -> index.html."""
    rel = page.relative_to(DOCS).with_suffix("")
    return out / ("index.html" if rel.name == "index" and rel.parent == Path(".") else rel / "index.html")


def test_every_page_is_built(site):
    _, out = site
    missing = [str(p.relative_to(REPO)) for p in DOCS.rglob("*.md") if not _built(out, p).is_file()]
    assert missing == []
    for page in [
        "suites/thai_h6",
        "suites/thaicli",
        "suites/dialect",
        "suites/thai_llm_leaderboard",
        "suites/seahelm",
        "models",
        "engines",
        "command",
        "notebooks",
        "contributing",
        "api",
    ]:
        assert (out / page / "index.html").is_file(), page


def test_the_api_page_renders_the_public_modules(site):
    _, out = site
    html = (out / "api" / "index.html").read_text(encoding="utf-8")
    for name in [
        "thai_eval_utils.core.store.RunStore",
        "thai_eval_utils.core.runs.list_runs",
        "thai_eval_utils.tasks.run_task",
        "thai_eval_utils.backend.models.load_model",
        "thai_eval_utils.sources.catalogue.fetch",
    ]:
        assert f'id="{name}"' in html, name


class _Tags(HTMLParser):
    """Every tag name of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.add(tag)

    def handle_endtag(self, tag: str) -> None:
        self.tags.add(tag)


def _unknown_tags(html: str) -> set[str]:
    parser = _Tags()
    parser.feed(html)
    return parser.tags - HTML_TAGS


def test_no_text_is_lost_as_raw_html(site):
    _, out = site
    lost = {str(p.relative_to(out)): sorted(_unknown_tags(p.read_text(encoding="utf-8"))) for p in out.rglob("*.html")}
    assert {page: tags for page, tags in lost.items() if tags} == {}


def test_unknown_tags_are_found():
    assert _unknown_tags("<p>the <code>&lt;id&gt;</code> of <config id>/<store key>#a1t<try></p>") == {
        "config",
        "store",
        "try",
    }


def test_the_site_fetches_nothing_from_the_network(site):
    _, out = site
    for page in out.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        assert "fonts.googleapis.com" not in html and "fonts.gstatic.com" not in html, page


# ------------------------------------------------------------------------------------------------ commands


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    from thai_eval_utils.cli import build_parser

    return build_parser()


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next((a.choices for a in p._actions if isinstance(a, argparse._SubParsersAction)), {})


def _options(p: argparse.ArgumentParser) -> set[str]:
    return {s for a in p._actions for s in a.option_strings}


def _verbs(p: argparse.ArgumentParser) -> set[str]:
    """The choices of a subcommand's positional verb (``batch status|cancel``) or its own subcommands (``data``)."""
    return set(_subparsers(p)) | {c for a in p._actions if not a.option_strings and a.choices for c in a.choices}


FENCE = re.compile(r"^([ \t]*)```[^\n]*\n(.*?)^\1```", re.S | re.M)
COMMAND = re.compile(r"^(?:\$ )?(?:thai-eval|python -m thai_eval_utils)(?=\s|$)")


def commands(markdown: str) -> list[str]:
    """Every ``thai-eval ...`` command in the fenced code blocks of a page (after a ``$ `` prompt or on its own
    line, continuation lines joined, ``&&``/``;``/``|`` chains split, comments dropped)."""
    found = []
    for block in FENCE.finditer(markdown):
        text = re.sub(r"\s*\\\n\s*", " ", block.group(2))
        for line in text.splitlines():
            for part in re.split(r"&&|;|\|(?!\S*\})", line.strip()):
                part = part.strip()
                if COMMAND.match(part):
                    found.append(re.sub(r"^\$ ", "", part))
    return found


def problems(command: str, parser: argparse.ArgumentParser) -> list[str]:
    """What in one command the parser does not have: the subcommand, the verb, an option."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError as exc:
        return [f"{command}: {exc}"]
    words = words[3:] if words[:3] == ["python", "-m", "thai_eval_utils"] else words[1:]
    current, found, positional, value_next = parser, [], 0, False
    for word in words:
        if value_next:  # the value of the option before (``--server-arg '--max-model-len 8192'``)
            value_next = False
            continue
        if word.startswith("-") and len(word) > 1:
            name = word.split("=", 1)[0]
            if name not in _options(current):
                found.append(f"{command}: no option {name}")
            else:
                action = current._option_string_actions[name]
                value_next = "=" not in word and action.nargs != 0 and action.nargs not in ("?", "*")
        elif current is parser:
            sub = _subparsers(parser).get(word)
            if sub is None:
                return [f"{command}: no subcommand {word!r}"]
            current = sub
        elif positional == 0 and _verbs(current):
            positional += 1
            if word not in _verbs(current):
                return [f"{command}: no verb {word!r} (one of {sorted(_verbs(current))})"]
            current = _subparsers(current).get(word, current)
        else:
            positional += 1
    return found


def test_commands_are_read_from_code_blocks():
    page = (
        "Text `thai-eval nothing` is not a block.\n\n```bash\n$ thai-eval run --model embedded \\\n"
        "    --limit 2   # --not-read\nthai-eval data fetch A && thai-eval run --data full\nvllm serve x\n```\n\n"
        "  ```text\n  $ python -m thai_eval_utils runs --csv x.csv\n  ```\n"
    )
    assert commands(page) == [
        "thai-eval run --model embedded --limit 2   # --not-read",
        "thai-eval data fetch A",
        "thai-eval run --data full",
        "python -m thai_eval_utils runs --csv x.csv",
    ]


def test_a_wrong_subcommand_verb_or_option_is_found(parser):
    assert problems("thai-eval run --model embedded --limit 2 --no-such-flag", parser) == [
        "thai-eval run --model embedded --limit 2 --no-such-flag: no option --no-such-flag"
    ]
    assert problems("thai-eval frobnicate", parser) == ["thai-eval frobnicate: no subcommand 'frobnicate'"]
    assert problems("thai-eval data purge thai_h6", parser)[0].startswith(
        "thai-eval data purge thai_h6: no verb 'purge'"
    )
    assert problems("thai-eval batch restart", parser)[0].startswith("thai-eval batch restart: no verb 'restart'")
    assert problems("thai-eval data list --revision a=b", parser) == [
        "thai-eval data list --revision a=b: no option --revision"
    ]  # fetch's option, not list's
    assert problems("thai-eval data fetch thai_h6 --revision thai_h6=abc", parser) == []
    assert problems("thai-eval runs --model gemma   # --not-an-option in a comment", parser) == []
    assert problems("thai-eval --help", parser) == []
    assert (
        problems(
            "thai-eval run --model vllm:x --server-arg '--max-model-len 8192' --server-arg=--enforce-eager", parser
        )
        == []
    )  # an option's value that starts with a dash is the value, not an option


def test_every_command_shown_exists(parser):
    shown = {str(page.relative_to(REPO)): commands(page.read_text(encoding="utf-8")) for page in PAGES}
    assert sum(map(len, shown.values())) > 60  # the reader found the pages' commands
    assert len(shown["README.md"]) >= 5
    wrong = [p for page, cmds in shown.items() for c in cmds for p in problems(c, parser)]
    assert wrong == []


def test_the_command_page_names_every_subcommand_and_option(parser):
    """docs/command.md documents each subcommand (a section) and each of its options."""
    page = (DOCS / "command.md").read_text(encoding="utf-8")
    missing = []
    for name, sub in _subparsers(parser).items():
        if f"## `thai-eval {name}`" not in page:
            missing.append(f"section thai-eval {name}")
        for inner in [sub, *_subparsers(sub).values()]:
            missing += [f"{name} {o}" for o in sorted(_options(inner) - {"-h", "--help"}) if f"`{o}" not in page]
        missing += [f"{name} {verb}" for verb in _verbs(sub) if verb not in page]
    assert missing == []


# ------------------------------------------------------------------------------------------------ notebooks


def _parameters(notebook: Path) -> list[str]:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    source = "".join(next(c for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))["source"])
    return [line.split("=", 1)[0].strip() for line in source.splitlines() if "=" in line and not line.startswith("#")]


def test_the_notebooks_page_lists_every_notebook_and_parameter():
    page = (DOCS / "notebooks.md").read_text(encoding="utf-8")
    missing = []
    for notebook in sorted((REPO / "notebooks").glob("*.ipynb")):
        section = page.split(f"## {notebook.name}\n", 1)
        if len(section) == 1:
            missing.append(notebook.name)
            continue
        body = section[1].split("\n## ", 1)[0]
        missing += [f"{notebook.name}: {p}" for p in _parameters(notebook) if f"| `{p}` |" not in body]
    assert missing == []
