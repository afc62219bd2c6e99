"""``thai-eval report`` / ``python -m thai_eval_utils.report``: write the HTML report of the stored runs, and optionally a
screenshot of each view (headless system Chromium)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from thai_eval_utils.core.errors import ThaiEvalError
from thai_eval_utils.core.provenance import outputs_dir, scrub
from thai_eval_utils.report import write_report
from thai_eval_utils.report.browser import screenshots, why_no_browser


def add_report_arguments(ap: argparse.ArgumentParser) -> None:
    """The report's options (shared by ``python -m thai_eval_utils.report`` and ``thai-eval report``)."""
    ap.add_argument(
        "--outputs",
        nargs="+",
        default=None,
        help="outputs folder(s) holding runs/ (default $THAI_EVAL_OUTPUTS or outputs)",
    )
    ap.add_argument("--out", default=None, help="the HTML file (default <outputs>/report.html)")
    ap.add_argument("--models", default="", help="models to show, comma- or space-separated (default: all stored)")
    ap.add_argument("--pair", default="", help="the two models side by side (default: the first two)")
    ap.add_argument("--data", default=None, help="data folder for texts older records lack (default: the repo's data/)")
    ap.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples for the intervals")
    ap.add_argument("--screenshots", default=None, help="also save a PNG of each view in this folder (needs Chromium)")


def report_command(args: argparse.Namespace) -> int:
    """Write the report (and the screenshots when asked); 0 on success, 1 on a ThaiEvalError."""
    folders = [Path(o) for o in args.outputs] if args.outputs else [outputs_dir()]
    outputs = folders[0]
    split = lambda s: s.replace(",", " ").split()  # noqa: E731
    try:
        path = write_report(
            folders,
            args.out or outputs / "report.html",
            split(args.models) or None,
            pair=split(args.pair) or None,
            data_dir=args.data,
            n_resamples=args.resamples,
        )
    except ThaiEvalError as exc:
        print(f"error: {scrub(str(exc))}", file=sys.stderr)
        return 1
    print(f"report: {path} ({path.stat().st_size / 1e6:.1f} MB); open it in a browser (works offline)")
    if args.screenshots:
        reason = why_no_browser()
        if reason:
            print(f"screenshots skipped: {reason}")
        else:
            for p in screenshots(path, args.screenshots):
                print(f"screenshot: {p}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m thai_eval_utils.report", description=__doc__)
    add_report_arguments(ap)
    return report_command(ap.parse_args(argv))
