"""The report in a real browser (issue 22): headless Debian Chromium driven by playwright opens the HTML file
from disk; it loads with no console error and no request beyond the file; the leaderboard shows the runs'
numbers; a Thai search (no word spaces) filters the items; a leaderboard cell opens its items; the side-by-side
view shows both models' outputs of an item; a screenshot of each view is saved."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_store import shared_store

from thai_eval_utils.report import write_report
from thai_eval_utils.report.browser import VIEWS, open_browser, screenshots, why_no_browser
from thai_eval_utils.report.items import collect_items
from thai_eval_utils.report.leaderboard import model_headlines
from thai_eval_utils.report.runs import collect_runs

pytestmark = pytest.mark.skipif(why_no_browser() is not None, reason=f"no headless browser: {why_no_browser()}")

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[Path, Path]:
    store = shared_store(tmp_path_factory)
    return store, write_report(store, tmp_path_factory.mktemp("report") / "report.html", n_resamples=200)


@pytest.fixture(scope="module")
def page(report):
    """The report loaded once; every console message, page error and request recorded."""
    with open_browser() as ctx:
        log = {"console": [], "errors": [], "requests": []}
        ctx.on("request", lambda r: log["requests"].append(r.url))
        pg = ctx.new_page()
        pg.on("console", lambda m: log["console"].append((m.type, m.text)))
        pg.on("pageerror", lambda e: log["errors"].append(str(e)))
        pg.goto(report[1].resolve().as_uri() + "#leaderboard")
        pg.wait_for_selector("body[data-ready='1']", timeout=90_000)
        pg.log = log
        yield pg


def _visible_rows(page, table: str) -> list[str]:
    return page.locator(f"{table} tbody tr").all_inner_texts()


def _items(store: Path) -> list[dict]:
    runs = collect_runs(store)
    return collect_items(runs, model_headlines(runs)[0], data_dir=REPO / "data")[0]


def test_loads_without_errors_or_network(page, report):
    assert page.log["errors"] == []
    assert [m for m in page.log["console"] if m[0] in ("error", "warning")] == []
    assert [u for u in page.log["requests"] if not u.startswith(("file:", "blob:", "data:"))] == []


def test_leaderboard_rows_and_numbers(page, report):
    page.evaluate("location.hash = '#leaderboard'")
    rows = {r.split("\t")[0]: r for r in _visible_rows(page, "#lb-h6")}
    assert {"model-a", "model-b", "Meta-Llama-3.1-8B-Instruct"} <= set(rows)
    store = report[0]
    wino = json.loads((next((store / "runs" / "model-b" / "thai_h6" / "th_winogrande").iterdir()) / "summary.json")
                      .read_text(encoding="utf-8"))["scores"]["acc"]
    cell = page.locator("#lb-h6 tr[data-model='model-b'] a[data-items='thai_h6|th_winogrande']").inner_text()
    assert f"{100 * wino['value']:.2f}" in cell and "n=5" in cell and "[" in cell  # value, interval, n
    assert "52.42" in rows["Meta-Llama-3.1-8B-Instruct"]  # Kim et al. Table 4, marked published
    assert "published" in rows["Meta-Llama-3.1-8B-Instruct"]
    cli = page.locator("#lb-thaicli tr[data-model='model-a'] a[data-items='thaicli|factoid']").inner_text()
    assert cli.startswith("7.00") and "n=3" in cli


def test_thai_search_filters_items(page, report):
    page.evaluate("location.hash = '#items'")
    items = _items(report[0])
    total = page.evaluate("document.querySelector('#items-table').closest('.dt-container').querySelector('.dt-info').textContent")
    assert f"of {len(items)} entries" in total
    word = "ตื่นนอน"  # inside "สมชายตื่นนอนตอนหกโมงเช้า": no space around it
    expected = sum(word in json.dumps(it, ensure_ascii=False) for it in items)
    assert 0 < expected < len(items)
    page.fill("#f-search", word)
    info = page.locator("#items-table_info").inner_text()
    assert f"Showing 1 to {min(expected, 25)} of {expected} entries" in info
    assert all(word in r for r in _visible_rows(page, "#items-table"))
    page.locator("#items-table tbody tr").first.click()
    assert word in page.locator("#item-detail").inner_text()
    page.fill("#f-search", "")


def test_leaderboard_cell_opens_its_items(page):
    page.evaluate("location.hash = '#leaderboard'")
    page.locator("#lb-h6 tr[data-model='model-a'] a[data-items='thai_h6|th_arc']").click()
    page.wait_for_function("location.hash === '#items'")
    rows = _visible_rows(page, "#items-table")
    assert len(rows) == 5 and all(r.startswith("model-a\tthai_h6\tth_arc") for r in rows)
    page.locator("#items-table tbody tr").first.click()
    detail = page.locator("#item-detail").inner_text()
    assert "few-shot examples (25)" in detail and "choices" in detail
    pred = page.locator("#item-detail table.choices td:has-text('▶')").all_inner_texts()
    assert len(pred) == 1  # the model's choice is marked


def test_side_by_side_shows_both_outputs(page):
    page.evaluate("location.hash = '#compare'")
    assert "thai_h6/th_winogrande/acc" in page.locator("#cmp-table").inner_text()
    page.locator("#pairs-table_wrapper input[type=search], .dt-search input").last.fill("factoid")
    page.locator("#pairs-table tbody tr").first.click()
    a, b = page.locator("#pair-a").inner_text(), page.locator("#pair-b").inner_text()
    assert a.startswith("model-a") and "กรุงเทพมหานคร" in a and "ตอบดีมาก" in a
    assert b.startswith("model-b") and "ข้าวเหนียว" in b and "พอใช้" in b


def test_screenshot_of_each_view(page, report, tmp_path):
    paths = screenshots(report[1], tmp_path, ctx=page.context)
    assert [p.name for p in paths] == [f"report_{v}.png" for v in VIEWS]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 10_000 for p in paths)
