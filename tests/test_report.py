"""The report's data, without a browser: the leaderboard's cells against the runs' own records and the
papers' rows, the item records (readable on their own; older Thai-H6 records resolved from the data, or a note
saying the data is not at hand), secrets scrubbed, and the Thai-H6 records' stored document and gold."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from fakes import FakeModel
from report_store import H6_DATA, HOSTILE_MODEL, JUDGE_KEY, PAYLOAD, REPO, shared_hostile_store, shared_store

from thai_eval_utils import h6
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.h6.data import load_h6_task
from thai_eval_utils.report import csp, write_report
from thai_eval_utils.report.items import collect_items
from thai_eval_utils.report.leaderboard import Bootstrap, leaderboard, model_headlines
from thai_eval_utils.report.render import TEMPLATES, raw_text, script_json
from thai_eval_utils.report.runs import collect_runs


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return shared_store(tmp_path_factory)


def _run(store: Path, model: str, bench: str) -> StoredRun:
    return collect_runs(store, [model]).selections[model].runs[bench]


def test_leaderboard_cells_are_the_runs_scores_with_n_and_intervals(store):
    runs = collect_runs(store)
    assert runs.models == ["model-a", "model-b"]
    heads, notes = model_headlines(runs)
    assert notes == []
    cells = leaderboard(heads, boot=Bootstrap(n_resamples=500))
    ours = cells[cells["source"] == "thai-eval run"].set_index(["model", "column", "group"], drop=False)
    for model in ("model-a", "model-b"):
        recs = _run(store, model, "thai_h6/th_winogrande").records()
        cell = (
            ours.loc[(model, "th_winogrande", None)]
            if (model, "th_winogrande", None) in ours.index
            else cells[(cells.model == model) & (cells.column == "th_winogrande")].iloc[0]
        )
        assert cell["value"] == pytest.approx(100 * np.mean([r["acc"] for r in recs]))
        assert cell["n"] == 5 and cell["ci_low"] <= cell["value"] <= cell["ci_high"]
        assert cell["items"] == "thai_h6|th_winogrande"
    h6a = cells[(cells.model == "model-a") & (cells.table == "h6")].set_index("column")
    tasks = ["th_arc", "th_truthfulqa", "th_winogrande", "th_gsm8k"]
    assert h6a.loc["thai_h6_avg", "value"] == pytest.approx(h6a.loc[tasks, "value"].mean())
    assert h6a.loc["thai_h6_avg", "note"] == "partial: 4 of 6 tasks"
    cli = cells[cells.table == "thaicli"].set_index(["model", "column"])
    # the fake judge scores model-b's answer (ข้าวเหนียว) 5 and every other answer 7
    assert cli.loc[("model-a", "factoid"), "value"] == 7.0 and cli.loc[("model-b", "instruction"), "value"] == 5.0
    assert cli.loc[("model-a", "thaicli_avg"), "n"] == 6
    dia = cells[(cells.table == "dialect_auto") & (cells.source == "thai-eval run")]
    assert set(dia["group"]) == {"Central", "Isan"}
    assert {"qa_rougeL", "qa_delta", "translation_en_to_dialect_bleu", "translation_en_to_dialect_delta"} <= set(
        dia["column"]
    )
    delta = dia[(dia.model == "model-a") & (dia.column == "qa_delta")].iloc[0]
    central = dia[(dia.model == "model-a") & (dia.column == "qa_rougeL") & (dia.group == "Central")].iloc[0]["value"]
    isan = dia[(dia.model == "model-a") & (dia.column == "qa_rougeL") & (dia.group == "Isan")].iloc[0]["value"]
    assert delta["value"] == pytest.approx(central - isan)
    pub = cells[cells["source"].str.startswith("published")].set_index(["model", "column"])
    assert pub.loc[("Meta-Llama-3.1-8B-Instruct", "thai_h6_avg"), "value"] == 52.42  # Kim et al. Table 4
    assert pub.loc[("GPT-4o", "factoid"), "value"] == 8.42  # Kim et al. Table 5


def test_items_read_on_their_own(store):
    runs = collect_runs(store)
    heads, _ = model_headlines(runs)
    items, pools, notes = collect_items(runs, heads, data_dir=REPO / "data")
    assert notes == []
    assert len(items) == 2 * (4 * 5 + 6 + 2 * 2 * 3)  # Thai-H6 4 tasks x 5, ThaiCLI 6, dialects 2 x 2 tasks x 3
    data = load_h6_task(H6_DATA, "th_winogrande")
    wino = [it for it in items if it["t"] == "th_winogrande" and it["m"] == "model-a"]
    for it in wino:
        doc = data.docs[int(it["k"])]
        assert it["ch"] == [doc["option1"], doc["option2"]] and doc["sentence"].split("_")[0].strip() in it["q"]
        assert it["g"] == int(doc["answer"]) - 1 and it["c"] == (it["p"] == it["g"]) and "note" not in it
    arc = next(it for it in items if it["t"] == "th_arc")
    assert len(arc["fs"][1]) == 25 and len(pools[arc["fs"][0]]) >= 25 and len(arc["ll"]) == len(arc["ch"])
    gsm = next(it for it in items if it["t"] == "th_gsm8k" and it["m"] == "model-a")
    assert gsm["o"] == "คำตอบคือ 42" and gsm["c"] is False
    cli = next(it for it in items if it["b"] == "thaicli" and it["m"] == "model-b")
    assert cli["o"] == "ข้าวเหนียว" and cli["j"] == "พอใช้" and cli["v"] == 5.0 and cli["q"] and "chosen:" in cli["ref"]
    dia = [it for it in items if it["b"] == "dialect"]
    assert {it["t"] for it in dia} == {
        "center/qa",
        "east/qa",
        "center/translation_eng_center",
        "east/translation_eng_east",
    }
    assert all(it["ref"] and it["q"] for it in dia)


def test_new_h6_records_store_the_document_and_gold(store):
    recs = _run(store, "model-a", "thai_h6/th_truthfulqa").records()
    docs = load_h6_task(H6_DATA, "th_truthfulqa").docs
    for r in recs:
        assert r["doc_row"] == docs[r["doc"]]
        assert r["gold"] == docs[r["doc"]]["mc1_targets"]["labels"].index(1)
    gsm = _run(store, "model-a", "thai_h6/th_gsm8k").records()
    assert all(isinstance(r["doc_row"]["answer"], str) and r["gold"] for r in gsm)


def _strip(run_dir: Path, fields: tuple[str, ...]) -> None:
    path = run_dir / "items.jsonl"
    recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    path.write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k not in fields}, ensure_ascii=False) + "\n" for r in recs),
        encoding="utf-8",
    )


def test_older_records_resolve_from_the_data_or_say_why_not(store, tmp_path):
    out = tmp_path / "old"
    shutil.copytree(store / "runs" / "model-a" / "thai_h6", out / "runs" / "model-a" / "thai_h6")
    arc_dir = next((out / "runs" / "model-a" / "thai_h6" / "th_arc").iterdir())
    tqa_dir = next((out / "runs" / "model-a" / "thai_h6" / "th_truthfulqa").iterdir())
    _strip(arc_dir, ("doc_row",))
    _strip(tqa_dir, ("doc_row", "gold"))  # as thai-eval wrote TruthfulQA before records carried doc_row and gold
    runs = collect_runs(out)
    items, _, notes = collect_items(runs, {})
    fresh, _, _ = collect_items(collect_runs(store, ["model-a"]), {})
    key = lambda it: (it["t"], it["k"])  # noqa: E731
    fresh = {key(it): it for it in fresh if it["b"] == "thai_h6"}
    for it in items:
        assert it["q"] == fresh[key(it)]["q"] and it["ch"] == fresh[key(it)]["ch"] and it["g"] == fresh[key(it)]["g"]
    assert all("resolved from the data" in it["note"] for it in items if it["t"] in ("th_arc", "th_truthfulqa"))
    # the data not at hand: the card's files moved away and no data folder given
    card = json.loads((arc_dir / "run_card.json").read_text(encoding="utf-8"))
    card["data_files"] = {"/nowhere/th_arc_challenge_test.jsonl": h for h in card["data_files"].values()}
    (arc_dir / "run_card.json").write_text(json.dumps(card), encoding="utf-8")
    items, _, notes = collect_items(collect_runs(out), {})
    arc = [it for it in items if it["t"] == "th_arc"]
    assert all("q" not in it and "not at hand" in it["note"] and it["hash"] for it in arc)
    assert any("th_arc" in n and "not at hand" in n for n in notes)
    # a data folder with other files is not taken for the run's
    items, _, _ = collect_items(collect_runs(out), {}, data_dir=tmp_path / "nothing")
    assert all("q" not in it for it in items if it["t"] == "th_arc")


def test_without_the_data_an_item_shows_the_prompt_its_record_kept(store, tmp_path):
    """New records keep what was sent (``context``, few-shot block included): with the run's data files out of reach,
    the item shows that whole prompt, which ends with the query the data-backed view shows."""
    out = tmp_path / "moved"
    src = store / "runs" / "model-a" / "thai_h6" / "th_arc"
    shutil.copytree(src, out / "runs" / "model-a" / "thai_h6" / "th_arc")
    arc_dir = next((out / "runs" / "model-a" / "thai_h6" / "th_arc").iterdir())
    card = json.loads((arc_dir / "run_card.json").read_text(encoding="utf-8"))
    card["data_files"] = {"/nowhere/th_arc_challenge_test.jsonl": h for h in card["data_files"].values()}
    (arc_dir / "run_card.json").write_text(json.dumps(card), encoding="utf-8")
    records = {str(r["doc"]): r for r in _run(store, "model-a", "thai_h6/th_arc").records()}
    built = {str(d.index): d.requests for d in h6.document_requests("th_arc", H6_DATA, limit=len(records))}
    items, _, _ = collect_items(collect_runs(out), {})
    fresh = {it["k"]: it for it in collect_items(collect_runs(store, ["model-a"]), {})[0] if it["t"] == "th_arc"}
    arc = [it for it in items if it["t"] == "th_arc"]
    assert len(arc) == len(records) == 5
    for it in arc:
        assert it["q"] == records[it["k"]]["context"] == built[it["k"]].prompt
        assert it["q"].count("\n\n") >= 25 and it["q"].endswith(fresh[it["k"]]["q"])  # 25 shots, then the query
        assert "fs" not in it and "not at hand" not in (it.get("note") or "")


def test_resuming_an_old_run_keeps_its_folder_and_computes_nothing(store, tmp_path):
    out = tmp_path / "resume"
    shutil.copytree(
        store / "runs" / "model-a" / "thai_h6" / "th_winogrande", out / "runs" / "model-a" / "thai_h6" / "th_winogrande"
    )
    run_dir = next((out / "runs" / "model-a" / "thai_h6" / "th_winogrande").iterdir())
    _strip(run_dir, ("doc_row",))
    model = FakeModel("model-a")  # refuses every call: all five documents must come from the store
    res = h6.evaluate(model, "th_winogrande", str(H6_DATA), limit=5, outputs=out, progress=False)
    assert res.run_dir == run_dir and model.calls == [] and "doc_row" not in res.table.columns


def _payload(html: str) -> dict:
    b64 = re.search(r'<script type="text/plain" id="report-items">([^<]*)</script>', html).group(1)
    return json.loads(gzip.decompress(base64.b64decode(b64)).decode("utf-8"))


def test_report_file_is_offline_scrubbed_and_labelled_by_model_name(store, tmp_path, monkeypatch):
    # a secret in the environment that also appears in a stored output must be masked everywhere
    secret = "sk-" + "leakedkey0123456789abcdef"
    monkeypatch.setenv("SOME_API_KEY", secret)
    run_dir = _run(store, "model-b", "thaicli/judge").dir
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    judge = copy / run_dir.relative_to(store) / "items.jsonl"
    text = judge.read_text(encoding="utf-8").replace("พอใช้", f"พอใช้ {secret}", 1)
    judge.write_text(text, encoding="utf-8")
    path = write_report(copy, tmp_path / "r" / "report.html", n_resamples=200)
    html = path.read_text(encoding="utf-8")
    payload = _payload(html)
    everything = html + json.dumps(payload, ensure_ascii=False)
    assert secret not in everything and JUDGE_KEY not in everything and "<redacted>" in everything
    assert str(copy) not in everything and str(tmp_path) not in everything  # labels are names, not paths
    assert re.findall(r"<(?:script|link|img|iframe)[^>]+(?:src|href)=", html) == []  # nothing to fetch
    assert {it["m"] for it in payload["items"]} == {"model-a", "model-b"}
    assert html.count("<svg") >= 4  # Thai-H6 scores, two ThaiCLI distributions, ΔDiff, forest plot


def test_one_model_in_two_outputs_folders_is_labelled_by_what_differs(store, tmp_path):
    # the demo's comparison: the same model again with another few-shot seed, in another outputs folder
    from dataclasses import replace

    from report_store import score_a

    from thai_eval_utils.h6.protocol import LEADERBOARD

    other = tmp_path / "demo_compare"
    h6.evaluate_tasks(
        FakeModel("model-a", score=score_a),
        str(H6_DATA),
        ["th_arc"],
        replace(LEADERBOARD, fewshot_seed=7),
        limit=5,
        outputs=other,
        progress=False,
    )
    runs = collect_runs([store, other], ["model-a"])
    assert runs.models == ["model-a (fewshot_seed=42)", "model-a (fewshot_seed=7)"]
    assert [s.label for s in runs.selections.values()] == runs.models
    assert list(runs.selections["model-a (fewshot_seed=7)"].runs) == ["thai_h6/th_arc"]


def test_corpus_bleu_interval_is_around_the_papers_bleu():
    from thai_eval_utils.dialect.data import load_dialect
    from thai_eval_utils.dialect.metrics import PAPER_BLEU, bleu
    from thai_eval_utils.stats.cells import corpus_ci

    df = load_dialect(REPO / "data" / "dialect", dialects=["east"])
    refs = df["text_2"].fillna("").tolist()
    hyps = [r[: len(r) // 2] + "ครับ" for r in refs]  # partial overlaps: every n-gram order and the brevity penalty
    low, high = corpus_ci(hyps, refs, Bootstrap(n_resamples=300), PAPER_BLEU)
    assert low < bleu(hyps, refs) < high
    assert corpus_ci(hyps[:1], refs[:1], Bootstrap(n_resamples=300), PAPER_BLEU) == (None, None)


def test_explore_notebook_shows_the_runs_and_writes_the_report(store, tmp_path):
    import nbformat
    import papermill

    executed = tmp_path / "explore_runs.ipynb"
    papermill.execute_notebook(
        str(REPO / "notebooks" / "explore_runs.ipynb"),
        str(executed),
        cwd=str(REPO / "notebooks"),
        progress_bar=False,
        parameters={"outputs_dir": str(store), "n_resamples": 200, "report_path": str(tmp_path / "report.html")},
    )
    text = "".join(str(o) for c in nbformat.read(executed, 4).cells for o in c.get("outputs", []))
    thai = (
        "ข้าวเหนียว".encode("ascii", "backslashreplace").decode().replace("\\", "\\\\\\\\")
    )  # as itables' JSON escapes it
    assert "['model-a', 'model-b']" in text and "Meta-Llama-3.1-8B-Instruct" in text and thai in text
    assert (tmp_path / "report.html").stat().st_size > 100_000


def _head_policy(html: str) -> str:
    meta = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', html[: html.index("</head>")])
    return meta.group(1)


def test_hostile_texts_are_escaped_everywhere_in_the_file(tmp_path_factory):
    # a question, output, judge reply and model name holding markup reach the HTML only escaped
    store = shared_hostile_store(tmp_path_factory)
    html = write_report(store, store / "report.html", n_resamples=50).read_text(encoding="utf-8")
    assert PAYLOAD not in html and HOSTILE_MODEL not in html
    assert "<img" not in html and "<b>" not in html and html.count("<script") == 4  # the report's own four
    assert "&lt;b&gt;evil&lt;/b&gt;&lt;img src=x onerror=&#34;window.__pwned=3&#34;&gt;" in html  # leaderboard, header
    meta = json.loads(re.search(r'id="report-meta">([^<]*)</script>', html).group(1))
    assert meta["models"] == [HOSTILE_MODEL, "model-b"] and meta["pair"]["model_a"] == HOSTILE_MODEL
    items = _payload(html)["items"]
    assert {it["o"] for it in items if it["m"] == HOSTILE_MODEL and it["t"] == "th_gsm8k"} == {PAYLOAD}
    assert {it["j"] for it in items if it["b"] == "thaicli"} == {PAYLOAD}


def test_policy_allows_exactly_the_reports_own_script(store, tmp_path):
    html = write_report(store, tmp_path / "report.html", n_resamples=50).read_text(encoding="utf-8")
    js = (TEMPLATES / "report.js").read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode()
    policy = dict(d.split(" ", 1) for d in _head_policy(html).split("; "))
    assert policy["script-src"] == f"'sha256-{digest}' blob:"  # no 'unsafe-inline': inline handlers never run
    assert policy["default-src"] == "'none'" and policy["base-uri"] == "'none'"
    assert csp.executable_scripts(html) == [js]  # the JSON and base64 blocks are data, never run
    # the page's CSS is inserted verbatim (escaped, a `a > b` selector or a quoted font name would not apply)
    styles = re.findall(r"<style>(.*?)</style>", html, re.S)
    assert styles[1] == (TEMPLATES / "report.css").read_text(encoding="utf-8") and "&gt;" not in styles[0]


def test_policy_helpers():
    page = (
        '<head><meta content="{p}"></head><script type="application/json">{{"a": 1}}</script>'
        "<script>one()\r\n</script><SCRIPT TYPE='Module'>two()</SCRIPT><script type=text/plain>x</script>"
    )
    assert csp.executable_scripts(page) == ["one()\r\n", "two()"]
    assert (
        csp.script_hash("one()\r\n")
        == csp.script_hash("one()\n")
        == "'sha256-" + base64.b64encode(hashlib.sha256(b"one()\n").digest()).decode() + "'"
    )
    out = csp.with_policy(page.replace("{p}", csp.PLACEHOLDER))
    assert "script-src " + csp.script_hash("one()\n") + " " + csp.script_hash("two()") + " blob:;" in out
    with pytest.raises(ValueError, match="placeholder"):
        csp.with_policy(page)
    with pytest.raises(ValueError, match="no inline script"):
        csp.policy("<p>nothing</p>")
    with pytest.raises(ValueError, match="</style"):
        raw_text("a { } </STYLE><script>x()</script>", "style")
    with pytest.raises(ValueError, match="<!--"):
        raw_text("const a = '<!--';", "script")
    assert str(script_json({"m": "</script><!--&"})) == '{"m":"\\u003c/script\\u003e\\u003c!--\\u0026"}'
