"""The report screenshots of docs/report.md: a small store made by the report tests' pipelines (two fake models
on a few items of the shipped data: tests/report_store.py), its report, and PNGs of the leaderboard and of the
side-by-side view (first differing item opened) in headless system Chromium.

    .venv/bin/python benchmarks/report_screenshots.py --out /tmp/report_shots --img docs/img
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from report_store import make_store  # noqa: E402

from thai_eval_utils.report import write_report  # noqa: E402
from thai_eval_utils.report.browser import open_browser, open_report  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="folder for the store and the report")
    ap.add_argument("--img", type=Path, default=REPO / "docs" / "img")
    args = ap.parse_args()
    if not (args.out / "runs").exists():
        make_store(args.out)
    report = write_report(args.out, args.out / "report.html")
    args.img.mkdir(parents=True, exist_ok=True)
    with open_browser(width=1280, height=860) as ctx:
        page = open_report(ctx, report, "leaderboard")
        page.screenshot(path=str(args.img / "report_leaderboard.png"))
        page.evaluate("location.hash = '#compare'")
        page.locator("#pairs-table tbody tr").first.click()
        page.locator("#view-compare").screenshot(path=str(args.img / "report_side_by_side.png"))
    for p in sorted(args.img.glob("report_*.png")):
        print(p, f"{p.stat().st_size / 1e3:.0f} kB")


if __name__ == "__main__":
    main()
