"""The declared tasks' runner opened to a suite's own shapes: a per-document request builder
(``MultipleChoiceTask.requests``: Winogrande's partial scoring, each choice its own context) and a suite's stored
run layout (``RunLayout``: its benchmark, config, records and summary, with items it built itself)."""

from __future__ import annotations

import json

from fakes import FakeModel

from thai_eval_utils.backend.api_replies import ApiError
from thai_eval_utils.core.records import write_jsonl
from thai_eval_utils.tasks.declared import GenerationTask, MultipleChoiceTask
from thai_eval_utils.tasks.items import load_items
from thai_eval_utils.tasks.runner import RunLayout, run_task


def fill_blank(doc: dict, context: str) -> list[tuple[str, str]]:
    """Each option fills the blank; the rest of the sentence is the continuation."""
    before, after = doc["sentence"].split("_")
    return [(context[: -len(doc["sentence"])] + before + o, after) for o in (doc["option1"], doc["option2"])]


def blank_task(tmp_path) -> MultipleChoiceTask:
    rows = [{"id": "w0", "sentence": "แมว_กินปลา", "option1": "ดำ", "option2": "ขาว", "answer": 1}]
    write_jsonl(tmp_path / "w.jsonl", rows)
    return MultipleChoiceTask(
        name="blank",
        data="w.jsonl",
        prompt="{sentence}",
        choices=["option1", "option2"],
        gold="answer",
        requests=fill_blank,
    ).bind(tmp_path)


def test_requests_built_per_document_are_what_the_model_scores(tmp_path):
    task = blank_task(tmp_path)
    assert load_items(task)[0]["requests"] == [("แมวดำ", "กินปลา"), ("แมวขาว", "กินปลา")]
    scores = {"แมวดำ": -3.0, "แมวขาว": -1.0}  # option 2 (index 1) is the likelier: acc 1
    model = FakeModel(score=lambda c, x: (scores[c], False))
    run = run_task(model, task, outputs=tmp_path / "o", progress=False)
    assert model.requests == [("แมวดำ", "กินปลา"), ("แมวขาว", "กินปลา")]
    assert run.records[0]["lls"] == [-3.0, -1.0] and run.records[0]["acc"] == 1.0
    assert task.declaration()["requests"] == {"function": f"{__name__}:fill_blank"}


def test_a_task_without_requests_declares_as_before(tmp_path):
    task = MultipleChoiceTask(name="t", data="t.jsonl", prompt="{q}", choices="c", gold="g")
    assert "requests" not in task.declaration()


def test_a_suite_layout_keeps_its_benchmark_config_records_and_summary(tmp_path):
    task = blank_task(tmp_path)
    items = [{"id": "0-abc", "doc": 0, "requests": [("ก", " ข"), ("ก", " ค")]}]
    layout = RunLayout(
        "suite/blank",
        {"task": "blank", "shots": 0},
        lambda item, answer: {"doc": item["doc"], "lls": [ll for ll, _ in answer]},
        {"lls": list},
        lambda records, support, run: {
            "scores": {},
            "n": len(records),
            "computed": run.computed,
            "id": run.store.config_id,
        },
        tolerate=(),
    )
    model = FakeModel(score=lambda c, x: (-float(len(x)), False))
    run = run_task(model, task, items=items, layout=layout, outputs=tmp_path / "o", progress=False)
    assert model.requests == [("ก", " ข"), ("ก", " ค")]
    assert run.records == [{"key": "0-abc", "doc": 0, "lls": [-2.0, -2.0]}]  # the store adds the item's key
    card = json.loads((run.run_dir / "run_card.json").read_text(encoding="utf-8"))
    assert card["benchmark"] == "suite/blank" and card["config"] == {"task": "blank", "shots": 0}
    summary = json.loads((run.run_dir / "summary.json").read_text(encoding="utf-8"))
    assert {k: summary[k] for k in ("scores", "n", "computed")} == {"scores": {}, "n": 1, "computed": 1}
    assert summary["id"] == run.config_id  # the summary reads the run's own store
    again = run_task(model, task, items=items, layout=layout, outputs=tmp_path / "o", progress=False)
    assert again.run_dir == run.run_dir and again.computed == 0 and len(model.calls) == 1  # resumed, not recomputed


def test_a_layout_without_thinking_settings_leaves_the_models_reply_handling_as_it_is(tmp_path):
    """``RunLayout(thinking_settings=False)``: the endpoint's ``reasoning_tags`` stay None during the call (its
    server's content stored as it came); by default the runner hands the thinking option's tags to the model for
    the run and restores them after."""
    task = blank_task(tmp_path)
    items = [{"id": "0-abc", "doc": 0, "requests": [("ก", " ข"), ("ก", " ค")]}]
    model = FakeModel(score=lambda c, x: (-1.0, False))
    model.reasoning_tags = None
    seen = []

    def call(chunk):
        seen.append(model.reasoning_tags)
        return [answer for _ in chunk for answer in ((-1.0, False), (-2.0, False))]  # one per request

    for settings in (False, True):
        layout = RunLayout(
            f"suite/blank{int(settings)}",
            {"task": "blank"},
            lambda item, answer: {"doc": item["doc"]},
            {},
            lambda records, support, run: {"scores": {}, "support": dict(support)},
            call=call,
            tolerate=(),
            thinking_settings=settings,
        )
        run_task(model, task, items=items, layout=layout, outputs=tmp_path / "o", progress=False)
    assert seen == [None, ("<think>", "</think>")] and model.reasoning_tags is None


def test_a_layout_batch_key_keeps_each_group_to_calls_of_its_own(tmp_path):
    """``RunLayout(batch_key=...)``: five items of runs 0, 0, 0, 1, 1 with a batch of 2 make the calls [0, 0], [0],
    [1, 1] (a run's seed is one per call), not [0, 0], [0, 1], [1]; without it, the batches run across the groups."""
    task = blank_task(tmp_path)
    items = [{"id": f"r{r}/{i}", "run": r, "requests": [("ก", " ข"), ("ก", " ค")]} for r, i in [(0, 0), (0, 1), (0, 2)]]
    items += [{"id": f"r1/{i}", "run": 1, "requests": [("ก", " ข"), ("ก", " ค")]} for i in (0, 1)]
    seen = []

    def call(chunk):
        seen.append([it["run"] for it in chunk])
        return [(-1.0, False)] * (2 * len(chunk))

    for name, key in (("grouped", lambda it: it["run"]), ("plain", None)):
        layout = RunLayout(
            f"suite/{name}",
            {"task": name},
            lambda item, answer: {"run": item["run"]},
            {},
            lambda records, support, run: {"scores": {}},
            call=call,
            tolerate=(),
            batch_key=key,
        )
        run_task(FakeModel(), task, items=items, layout=layout, outputs=tmp_path / "o", batch_size=2, progress=False)
    assert seen == [[0, 0], [0], [1, 1], [0, 0], [0, 1], [1]]


def test_a_layout_round_builds_its_items_from_the_records_stored_before(tmp_path):
    """``RunLayout(rounds=...)``: each question's second turn is asked after the model's stored first reply, in
    the same store; a question whose first turn failed gets no second turn until a rerun answers its first."""
    task = GenerationTask(name="chat", data="", prompt=[{"role": "user", "content": "{q}"}], reference="ref")
    turns = {"a": ("หนึ่ง", "สอง"), "b": ("สาม", "สี่")}
    first = [{"id": f"{q}:1", "messages": [{"role": "user", "content": t[0]}]} for q, t in turns.items()]

    def second(stored):
        return [
            {
                "id": f"{q}:2",
                "messages": [
                    {"role": "user", "content": t[0]},
                    {"role": "assistant", "content": stored[f"{q}:1"]["output"]},
                    {"role": "user", "content": t[1]},
                ],
            }
            for q, t in turns.items()
            if f"{q}:1" in stored
        ]

    layout = RunLayout(
        "suite/chat",
        {"task": "chat"},
        lambda item, reply: {"output": reply},
        {"output": str},
        lambda records, support, run: {"keys": [r["key"] for r in records], "failed": sorted(run.failed)},
        rounds=(second,),
    )
    failing = {"สาม"}

    def reply(conv):
        if conv[-1]["content"] in failing:
            raise ApiError("server said 503")
        return f"ตอบ {conv[-1]['content']}"

    model = FakeModel(reply=reply)
    run = run_task(model, task, items=first, layout=layout, outputs=tmp_path / "o", batch_size=1, progress=False)
    assert run.summary["keys"] == ["a:1", "a:2"] and run.summary["failed"] == ["b:1"] and run.computed == 2
    assert model.inputs[-1] == [
        [
            {"role": "user", "content": "หนึ่ง"},
            {"role": "assistant", "content": "ตอบ หนึ่ง"},
            {"role": "user", "content": "สอง"},
        ]
    ]
    failing.clear()
    again = run_task(model, task, items=first, layout=layout, outputs=tmp_path / "o", batch_size=1, progress=False)
    assert again.summary["keys"] == ["a:1", "b:1", "a:2", "b:2"] and again.computed == 2
    assert [r["output"] for r in again.records] == ["ตอบ หนึ่ง", "ตอบ สาม", "ตอบ สอง", "ตอบ สี่"]
    assert model.inputs[-1][0][1] == {"role": "assistant", "content": "ตอบ สาม"}  # b's first reply, stored
