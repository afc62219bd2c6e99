"""What a failed generation is in a SEA-HELM run (docs/protocol_notes.md, "Failed generations"): a reply whose
thinking never closed (SEA-HELM's ``None`` content) is a stored, counted, wrong answer that the MetricX judge reads
as ``None``, as SEA-HELM's does; a request that brings back no reply at all (a served model's null content) is never
a record: the client retries it, then the task stops unscored, counting the replies it lacks, and the same command
generates exactly those (SEA-HELM would judge the text ``None``; ours never scores what no model wrote)."""

from __future__ import annotations

import json

import pytest
from fake_openai_server import MALFORMED_REPLIES, FakeOpenAIServer, Reply

from tests.fakes import FakeModel
from thai_eval_utils.backend.api_replies import ApiError
from thai_eval_utils.backend.openai_client import ApiModel
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.seahelm import Protocol, run_seahelm_task, task_config
from thai_eval_utils.seahelm.data import load_task_data
from thai_eval_utils.seahelm.translation import MetricX

LIMIT = 4
#: The sentiment row whose served reply is null (its text opens the sample's fourth row).
NULL_ROW = "สุดท้ายซื้อสเมอนอฟ"


class _Responder:
    """Sentiment replies by row: the fourth row's reply is null (no text, no thinking) while ``null`` holds."""

    def __init__(self) -> None:
        self.null, self.asked = True, {"null": 0, "other": 0}

    def __call__(self, body: dict) -> object:
        hit = NULL_ROW in body["messages"][-1]["content"]
        self.asked["null" if hit else "other"] += 1
        return MALFORMED_REPLIES["content_null"] if hit and self.null else Reply("คำตอบ: แง่ลบ")


def _records(run_dir) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "items.jsonl").read_text(encoding="utf-8").splitlines()]


def test_a_null_served_reply_is_retried_then_never_stored_or_scored(tmp_path):
    responder = _Responder()
    protocol = Protocol(batch_size=2)  # rows 1-2, then rows 3-4 (the null one): one call each
    with FakeOpenAIServer(responder, served_model="served") as srv:
        model = ApiModel(
            "served", base_url=srv.base_url, api_key="not-needed", concurrency=2, max_retries=1, timeout=5.0
        )
        with pytest.raises(ApiError) as err:
            run_seahelm_task(
                model, "sentiment", runs=1, limit=LIMIT, outputs=tmp_path, progress=False, protocol=protocol
            )
        assert responder.asked == {"null": 2, "other": 3}  # the null reply sent twice (1 + max_retries)
        message = str(err.value)
        assert message.startswith(
            "seahelm sentiment: 2 of 4 replies not generated (2 stored), so nothing is scored; "
            "run the same command again to generate them. The failed request: served at "
        )
        assert message.endswith("malformed reply: choices[0].message.content is null, not text")
        run_dir = next(tmp_path.rglob("items.jsonl")).parent
        stored = _records(run_dir)
        assert [r["key"] for r in stored] == ["r0/543", "r0/2649"]  # the failed call's rows: no record
        assert all(isinstance(r["reply"], str) and r["reply"] != "None" for r in stored)
        assert not (run_dir / "summary.json").exists()  # nothing scored
        responder.null = False
        again = run_seahelm_task(
            model, "sentiment", runs=1, limit=LIMIT, outputs=tmp_path, progress=False, protocol=protocol
        )
    assert again.computed == 2 and again.run_dir == run_dir  # exactly the 2 missing replies, generated now
    s = again.summary
    assert (s["n"], s["n_computed_this_run"], s["null_count"], s["failed_thinking"]) == (4, 2, 0, 0)
    assert s["runs"]["0"]["predictions"] == ["แง่ลบ"] * 4
    assert [r["key"] for r in _records(run_dir)] == ["r0/543", "r0/2649", "r0/363", "r0/1473"]


def test_a_stored_null_reply_is_refused_on_resume(tmp_path):
    model = FakeModel(reply=lambda m: "คำตอบ: แง่ลบ")
    run = run_seahelm_task(model, "sentiment", runs=1, limit=2, outputs=tmp_path, progress=False)
    rec = _records(run.run_dir)[1]
    with (run.run_dir / "items.jsonl").open("a", encoding="utf-8") as fh:  # an edited store: a reply of null
        fh.write(json.dumps({**rec, "reply": None}, ensure_ascii=False) + "\n")
    with pytest.raises(ThaiEvalDataError) as err:
        run_seahelm_task(model, "sentiment", runs=1, limit=2, outputs=tmp_path, progress=False)
    assert err.value.field == "reply" and err.value.row == 2
    assert "line 3 of the file: the stored 'reply' is null, not str" in str(err.value)


class _Inputs(MetricX):
    """A MetricX stand-in that keeps the judge inputs it is given and scores each 5.0."""

    def score(self, inputs):
        self.inputs = list(inputs)
        return [5.0] * len(inputs)


def test_unclosed_thinking_is_a_counted_failed_answer_read_by_metricx_as_none(tmp_path):
    rows = load_task_data(task_config("translation-en-xx")).rows[:2]

    def reply(messages):  # row 1 never closes its thinking; row 2 answers
        first = rows[0]["prompts"][0]["text"] in messages[-1]["content"]
        return "<think>ยังแปลไม่เสร็จ" if first else "คำแปล: สวัสดี"

    metricx = _Inputs("metricx-stand-in")
    run = run_seahelm_task(
        FakeModel(reply=reply), "translation-en-xx", runs=1, limit=2, outputs=tmp_path, progress=False, metricx=metricx
    )
    first, second = _records(run.run_dir)
    assert (first["reply"], first["scored"], first["failed"]) == ("<think>ยังแปลไม่เสร็จ", "", True)
    sources, labels = [r["prompts"][0]["text"] for r in rows], [r["label"] for r in rows]
    assert metricx.inputs == [
        f"source: {sources[0]} candidate: None reference: {labels[0]}",  # SEA-HELM's None
        f"source: {sources[1]} candidate: สวัสดี reference: {labels[1]}",
    ]
    s = run.summary
    assert (s["failed_thinking"], s["null_count"]) == (1, 1)
    assert s["runs"]["0"]["metrics"]["metricx_wmt24_scores"] == 5.0


@pytest.mark.parametrize("key, per_row", [("sentiment", 1), ("if-eval", 1), ("mt-bench-judge", 2)])
def test_every_seahelm_runner_stops_unscored_counting_what_it_lacks(tmp_path, key, per_row):
    """The generation tasks, IF-Eval and MT-Bench (``per_row``: conversations per row, both turns) alike: the
    second row's request fails after the first row is stored; the task stops with the count, writes no summary,
    and the rerun generates that row only."""
    calls = {"n": 0, "fail": True}

    def reply(messages):
        calls["n"] += 1
        if calls["fail"] and calls["n"] > per_row:
            raise ApiError("the endpoint went away")
        return "คำตอบ: แง่ลบ"

    model = FakeModel(reply=reply)
    with pytest.raises(ApiError) as err:
        run_seahelm_task(model, key, runs=1, limit=2, outputs=tmp_path, progress=False, protocol=Protocol(batch_size=1))
    assert str(err.value) == (
        f"seahelm {key}: 1 of 2 replies not generated (1 stored), so nothing is scored; run the "
        "same command again to generate them. The failed request: the endpoint went away"
    )
    run_dir = next(tmp_path.rglob("items.jsonl")).parent
    assert len(_records(run_dir)) == 1 and not (run_dir / "summary.json").exists()
    calls["fail"] = False
    again = run_seahelm_task(
        model, key, runs=1, limit=2, outputs=tmp_path, progress=False, protocol=Protocol(batch_size=1)
    )
    assert again.computed == 1 and again.summary["n_computed_this_run"] == 1 and len(_records(run_dir)) == 2
