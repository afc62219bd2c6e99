"""The report in a real browser: headless Debian Chromium driven by playwright opens the HTML file
from disk; it loads with no console error and no request beyond the file; the leaderboard shows the runs'
numbers; a Thai search (no word spaces) filters the items; a leaderboard cell opens its items; the side-by-side
view shows both models' outputs of an item; a screenshot of each view is saved. Hostile texts: a store whose question,
output, judge reply and model name hold markup, a script and an inline handler: nothing runs, no element is made,
every table cell, title and detail shows the text as it is, a search for ``<<3*4=12>>`` finds it, and the page's
Content-Security-Policy blocks an inline handler even when markup is put in by hand."""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path

import pytest
from report_store import HOSTILE_MODEL, PAYLOAD, shared_hostile_store, shared_store

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


def _load(ctx, path: Path, view: str = "leaderboard"):
    """A new page of ``ctx`` with ``path`` loaded and ready; every console message, page error and request in
    ``page.log``."""
    log = {"console": [], "errors": [], "requests": []}
    pg = ctx.new_page()
    pg.on("request", lambda r: log["requests"].append(r.url))
    pg.on("console", lambda m: log["console"].append((m.type, m.text)))
    pg.on("pageerror", lambda e: log["errors"].append(str(e)))
    pg.goto(path.resolve().as_uri() + f"#{view}")
    pg.wait_for_selector("body[data-ready='1']", timeout=90_000)
    pg.log = log
    return pg


@pytest.fixture(scope="module")
def browser_ctx():
    with open_browser() as ctx:
        yield ctx


@pytest.fixture(scope="module")
def page(report, browser_ctx):
    """The report loaded once."""
    return _load(browser_ctx, report[1])


def _visible_rows(page, table: str) -> list[str]:
    return page.locator(f"{table} tbody tr").all_inner_texts()


def _items(store: Path) -> list[dict]:
    runs = collect_runs(store)
    return collect_items(runs, model_headlines(runs)[0], data_dir=REPO / "data")[0]


def test_loads_without_errors_or_network(page, report):
    assert page.locator("meta[http-equiv='Content-Security-Policy']").count() == 1  # and nothing it blocked:
    assert page.log["errors"] == []
    assert [m for m in page.log["console"] if m[0] in ("error", "warning")] == []
    assert [u for u in page.log["requests"] if not u.startswith(("file:", "blob:", "data:"))] == []


def test_leaderboard_rows_and_numbers(page, report):
    page.evaluate("location.hash = '#leaderboard'")
    rows = {r.split("\t")[0]: r for r in _visible_rows(page, "#lb-h6")}
    assert {"model-a", "model-b", "Meta-Llama-3.1-8B-Instruct"} <= set(rows)
    store = report[0]
    wino = json.loads(
        (next((store / "runs" / "model-b" / "thai_h6" / "th_winogrande").iterdir()) / "summary.json").read_text(
            encoding="utf-8"
        )
    )["scores"]["acc"]
    cell = page.locator("#lb-h6 tr[data-model='model-b'] a[data-items='thai_h6|th_winogrande']").inner_text()
    assert f"{100 * wino['value']:.2f}" in cell and "n=5" in cell and "[" in cell  # value, interval, n
    assert "52.42" in rows["Meta-Llama-3.1-8B-Instruct"]  # Kim et al. Table 4, marked published
    assert "published" in rows["Meta-Llama-3.1-8B-Instruct"]
    cli = page.locator("#lb-thaicli tr[data-model='model-a'] a[data-items='thaicli|factoid']").inner_text()
    assert cli.startswith("7.00") and "n=3" in cli


def test_thai_search_filters_items(page, report):
    page.evaluate("location.hash = '#items'")
    items = _items(report[0])
    total = page.evaluate(
        "document.querySelector('#items-table').closest('.dt-container').querySelector('.dt-info').textContent"
    )
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


# Hostile texts.

#: What a payload would change if it ran or were parsed: its marker, the title, elements it would make.
INJECTED = """() => ({pwned: window.__pwned ?? null, title: document.title, scripts: document.scripts.length,
  made: document.querySelectorAll("img, b").length,
  in_tables: document.querySelectorAll("table :is(thead, tbody) :is(img, b, script)").length})"""
CLEAN = {"pwned": None, "title": "thai-eval report", "scripts": 4, "made": 0, "in_tables": 0}
#: Literal searches for hostile-looking text: GSM8K's annotation, a comparison, an entity written out.
LITERAL_SEARCHES = ("<<3*4=12>>", "3 > 2", "&amp;")


def _payload_items(html: Path) -> list[dict]:
    """The items the report embeds (as the page reads them)."""
    b64 = re.search(r'id="report-items">([^<]*)</script>', html.read_text(encoding="utf-8")).group(1)
    return json.loads(gzip.decompress(base64.b64decode(b64)).decode("utf-8"))["items"]


def _search_text(it: dict) -> str:
    """An item's search text, as report.js's searchText builds it."""
    q = it.get("q") or ""
    own = q[q.rindex("\n\n") + 2 :] if "\n\n" in q else ""
    parts = [own, q, "\n".join(it.get("ch") or []), it.get("o"), it.get("ref"), it.get("j"), it.get("sub")]
    return "\n".join(p for p in parts if p not in (None, ""))


def _short(text: str) -> str:
    return text[:140] + "…" if len(text) > 140 else text


def _cells(page, table: str) -> list[list[str]]:
    """Each visible row's cells' text exactly (``textContent``: newlines kept)."""
    return page.evaluate(
        f"[...document.querySelectorAll('{table} tbody tr')].map(r => [...r.cells].map(c => c.textContent))"
    )


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, browser_ctx):
    """The hostile store's report, loaded at the item browser: (report path, page)."""
    store = shared_hostile_store(tmp_path_factory)
    path = write_report(store, tmp_path_factory.mktemp("hostile_report") / "report.html", n_resamples=50)
    return path, _load(browser_ctx, path, "items")


def test_hostile_texts_run_nothing_and_read_literally_in_the_item_browser(hostile):
    path, page = hostile
    assert page.evaluate(INJECTED) == CLEAN and page.log["errors"] == []
    assert [m for m in page.log["console"] if m[0] in ("error", "warning")] == []
    items = {(it["m"], it["t"], it["k"]): it for it in _payload_items(path)}
    for query in LITERAL_SEARCHES:
        expected = [it for it in items.values() if query in _search_text(it)]
        assert len(expected) == 8  # each model's ARC question, GSM8K outputs, ThaiCLI answers and judge replies
        page.fill("#f-search", query)
        assert "Showing 1 to 8 of 8 entries" in page.locator("#items-table_info").inner_text()
        for m, b, t, k, _, _, text in _cells(page, "#items-table"):
            it = items[(m, t, k)]
            assert (b, text) == (it["b"], _short(_search_text(it)))  # every string cell shows its text as it is
    models = page.locator("#items-table tbody td:first-child").all_inner_texts()
    assert models.count(HOSTILE_MODEL) == 5 and set(models) == {HOSTILE_MODEL, "model-b"}
    page.locator("#items-table tbody tr", has_text="th_arc").first.click()
    assert page.locator("#item-detail strong").first.inner_text() == HOSTILE_MODEL
    assert f"Question: {PAYLOAD} " in page.locator("#item-detail h4:text-is('prompt') + pre").text_content()
    page.locator("#items-table tbody tr", has_text="factoid").first.click()
    assert page.locator("#item-detail pre").all_text_contents().count(PAYLOAD) == 2  # the answer, the judge's reply
    assert page.evaluate(INJECTED) == CLEAN
    page.fill("#f-search", "")


def test_hostile_texts_read_literally_in_titles_leaderboard_figures_and_side_by_side(hostile):
    page = hostile[1]
    page.evaluate("location.hash = '#leaderboard'")
    assert HOSTILE_MODEL in page.locator("#lb-h6 tbody td:first-child").all_inner_texts()
    assert page.locator("header .sub").inner_text().startswith(f"2 model(s): {HOSTILE_MODEL}, model-b ·")
    assert f"ThaiCLI: {HOSTILE_MODEL}" in page.locator("figcaption").all_inner_texts()
    page.evaluate("location.hash = '#compare'")
    assert page.locator("#view-compare h3").inner_text() == f"{HOSTILE_MODEL} (A) vs model-b (B)"
    titles = page.locator("#pairs-table thead .dt-column-title").all_inner_texts()
    assert titles[3:5] == [f"A: {HOSTILE_MODEL}", "B: model-b"]
    page.locator(".dt-search input").last.fill("<<3*4=12>>")
    rows = _cells(page, "#pairs-table")
    assert sorted((b, t, k) for b, t, k, *_ in rows) == [  # each pair whose texts hold it (model-b's ARC 0 too)
        ("thai_h6", "th_arc", "0"),
        ("thai_h6", "th_gsm8k", "0"),
        ("thai_h6", "th_gsm8k", "1"),
        ("thaicli", "factoid", "16154ecb0f5176d4f453d4cfecbee85a"),
        ("thaicli", "instruction", "a50b11bd43561d1a8ba44cc025a251ad"),
    ]
    page.locator("#pairs-table tbody tr", has_text="factoid").first.click()
    assert page.locator("#pair-a strong").first.inner_text() == HOSTILE_MODEL
    for side in ("#pair-a", "#pair-b"):
        assert page.locator(f"{side} pre").all_text_contents().count(PAYLOAD) == 2
    assert page.evaluate(INJECTED) == CLEAN


def test_content_security_policy_blocks_handlers_put_in_by_hand(hostile, browser_ctx):
    page = _load(browser_ctx, hostile[0])
    policy = page.locator("meta[http-equiv='Content-Security-Policy']").get_attribute("content")
    assert policy.startswith("script-src 'sha256-") and "unsafe" not in policy.split(";")[0]
    assert page.log["errors"] == [] and [m for m in page.log["console"] if m[0] in ("error", "warning")] == []
    probe = '<img src=x onerror="window.__probe = 1">'
    page.evaluate("html => document.body.insertAdjacentHTML('beforeend', html)", probe)
    page.wait_for_timeout(500)
    assert page.evaluate("window.__probe ?? null") is None
    assert any("Content Security Policy" in text for kind, text in page.log["console"] if kind == "error")
    page.close()
    control = browser_ctx.new_page()  # the same probe on a page without the policy runs: the check can fail
    control.set_content(probe)
    control.wait_for_function("window.__probe === 1", timeout=5_000)
    control.close()
