"""``thai-eval data list|fetch|verify``: the suites' full data sets, by id and pinned (``thai_eval_utils.sources``)."""

from __future__ import annotations

import argparse

import pandas as pd
from tabulate import tabulate

from thai_eval_utils.sources import catalogue
from thai_eval_utils.sources.locations import full_root


_FORMATTER = argparse.RawDescriptionHelpFormatter


def print_table(frame: pd.DataFrame, title: str) -> None:
    """A table on stdout under its title (empty cells for missing values)."""
    print(title)
    print(
        "(none)"
        if frame.empty
        else tabulate(frame.astype(object).where(frame.notna(), ""), headers="keys", tablefmt="simple", showindex=False)
    )


def revision_arg(value: str) -> tuple[str, str]:
    """``SUITE=REV`` or ``SUITE/TASK=REV`` (``--revision``)."""
    ref, sep, rev = value.partition("=")
    if not sep or not ref or not rev:
        raise argparse.ArgumentTypeError(f"expected SUITE=REVISION or SUITE/TASK=REVISION, got {value!r}")
    return ref, rev


def add_revision(p: argparse.ArgumentParser) -> None:
    """``--revision`` (repeatable), shared by ``data fetch`` and ``run --data full``."""
    p.add_argument(
        "--revision",
        action="append",
        type=revision_arg,
        default=[],
        metavar="REF=REV",
        help="use another revision than the manifest's pin for a suite or task (SUITE=REV or "
        "SUITE/TASK=REV; repeatable); the run cards record it and key the runs with it",
    )


def add_data(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "data",
        help="the full data sets: list, fetch and verify them at their pinned revisions",
        formatter_class=_FORMATTER,
        description="Each suite's full data, as its data manifest pins it "
        f"(docs/data.md). Fetched files go to {full_root()} ($THAI_EVAL_DATA) and the Hugging Face cache.",
        epilog="examples:\n  thai-eval data list\n  thai-eval data fetch SUITE\n"
        "  thai-eval data fetch SUITE/TASK OTHER_SUITE\n  thai-eval data verify\n"
        "  thai-eval run --model embedded --data full --limit 2",
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    listing = verbs.add_parser("list", help="every task's source, revision, licence, rows and whether it is here")
    listing.add_argument("refs", nargs="*", metavar="SUITE[/TASK]")
    listing.set_defaults(handler=cmd_list)
    fetching = verbs.add_parser("fetch", help="download, check and place tasks' data (a second fetch does nothing)")
    fetching.add_argument("refs", nargs="*", metavar="SUITE[/TASK]", help="default: every task of every suite")
    add_revision(fetching)
    fetching.set_defaults(handler=cmd_fetch)
    checking = verbs.add_parser(
        "verify",
        help="check the placed files' hashes and rows against the fetch and the manifest; exit 1 naming each mismatch",
    )
    checking.add_argument("refs", nargs="*", metavar="SUITE[/TASK]")
    checking.set_defaults(handler=cmd_verify)


def cmd_list(args: argparse.Namespace) -> int:
    print_table(pd.DataFrame(catalogue.list_rows(args.refs)), f"full data sets (fetched into {full_root()}):")
    return 0


def cmd_fetch(args: argparse.Namespace) -> int:
    results = catalogue.fetch(args.refs, dict(args.revision))
    rows = [{"task": r.ref, "status": r.status, "revision": r.revision[:12], "files": len(r.files)} for r in results]
    print_table(pd.DataFrame(rows), f"fetched into {full_root()}:")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    problems = catalogue.verify(args.refs)
    for line in problems:
        print(line)
    print(f"{len(problems)} problem(s)" if problems else "verified: every fetched file matches its fetch and manifest")
    return 1 if problems else 0
