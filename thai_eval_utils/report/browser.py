"""Headless Chromium for the report: the system browser (Debian's ``chromium``) driven by playwright,
never a downloaded one; used for the report's screenshots (``make demo``) and its browser tests."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: Where Debian (and most Linux distributions) install Chromium.
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
#: A quiet, offline, throw-away browser: no GPU, no background fetches, no first-run pages.
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-default-apps",
    "--disable-sync",
]
#: The report's views (the ``#`` of its URL).
VIEWS = ("leaderboard", "figures", "items", "compare")


def chromium_path() -> str | None:
    """The system Chromium's path, or None."""
    return next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)


def why_no_browser() -> str | None:
    """Why the report cannot be opened in a headless browser here (None: it can)."""
    try:
        import playwright.sync_api  # noqa: F401  (optional: the dev extra)
    except ImportError:
        return "playwright is not installed (pip install -e '.[dev]')"
    if chromium_path() is None:
        return "no system Chromium (Debian: apt-get install chromium; `make test` installs it when run as root)"
    return None


@contextmanager
def open_browser(width: int = 1400, height: int = 900) -> Iterator[Any]:
    """A fresh headless Chromium context (new profile in a temporary folder), closed on exit."""
    from playwright.sync_api import sync_playwright  # optional heavy dependency (dev extra)

    exe = chromium_path()
    if exe is None:
        raise RuntimeError(why_no_browser() or "no Chromium")
    with sync_playwright() as pw, tempfile.TemporaryDirectory(prefix="thai-eval-chromium-") as profile:
        ctx = pw.chromium.launch_persistent_context(
            profile, executable_path=exe, headless=True, args=LAUNCH_ARGS, viewport={"width": width, "height": height}
        )
        try:
            yield ctx
        finally:
            ctx.close()


def open_report(ctx: Any, report: str | Path, view: str = "leaderboard", timeout_ms: int = 60_000) -> Any:
    """A page with ``report`` loaded at ``view`` and its items ready (``body[data-ready]``)."""
    page = ctx.new_page()
    page.goto(Path(report).resolve().as_uri() + f"#{view}")
    page.wait_for_selector("body[data-ready='1']", timeout=timeout_ms)
    return page


def screenshots(report: str | Path, folder: str | Path, ctx: Any = None) -> list[Path]:
    """One PNG per view of ``report`` in ``folder`` (the item browser and the side by side with their first item
    opened), in ``ctx`` (a browser context; default: a fresh headless Chromium)."""
    if ctx is None:
        with open_browser() as fresh:
            return screenshots(report, folder, fresh)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    page = open_report(ctx, report)
    for view in VIEWS:
        page.evaluate(f"location.hash = '#{view}'")
        if view == "items" and page.locator("#items-table tbody tr").count():
            page.locator("#items-table tbody tr").first.click()
        if view == "compare" and page.locator("#pairs-table tbody tr").count():
            page.locator("#pairs-table tbody tr").first.click()
        path = folder / f"report_{view}.png"
        page.screenshot(path=str(path), full_page=True)
        out.append(path)
    page.close()
    return out
