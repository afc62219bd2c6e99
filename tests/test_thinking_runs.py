"""The thinking option wired through every generation task: fake models that think (<think>...</think>, closed, unclosed, not at
all); the stored record keeps the raw reply whole, the metric reads the cut text, an unclosed block scores as no
answer, the summaries and tables count it and show the answers-in-Thai rate, the default keeps config ids."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from fakes import FakeModel

from thai_eval_utils.dialect import generation as D
from thai_eval_utils.dialect.data import load_dialect
from thai_eval_utils.h6 import evaluation as h6
from thai_eval_utils.h6.protocol import LEADERBOARD
from thai_eval_utils.tasks import GenerationTask, run_task
from thai_eval_utils.tasks.thinking import thinking_option
from thai_eval_utils.thaicli.answers import generate_answers

REPO = Path(__file__).resolve().parents[1]


def card(run_dir) -> dict:
    return json.loads((Path(run_dir) / "run_card.json").read_text())


def summary(run_dir) -> dict:
    return json.loads((Path(run_dir) / "summary.json").read_text())


# --------------------------------------------------------------------------------------------- declared task
def _task(tmp_path: Path) -> GenerationTask:
    rows = [
        {"id": "c1", "country": "ญี่ปุ่น", "capital": "โตเกียว"},
        {"id": "c2", "country": "ลาว", "capital": "เวียงจันทน์"},
        {"id": "c3", "country": "ฝรั่งเศส", "capital": "ปารีส"},
    ]
    (tmp_path / "g.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return GenerationTask(
        name="gen", data="g.jsonl", reference="capital", prompt="เมืองหลวงของ{country}:", metrics=("exact_match", "chrf")
    ).bind(tmp_path)


REPLIES = {"ญี่ปุ่น": "<think>Japan's capital is Tokyo</think>โตเกียว", "ลาว": "<think>ยังคิดไม่จบ เวียงจันทน์", "ฝรั่งเศส": "Paris"}


def _complete(prompt: str) -> str:
    return next(v for k, v in REPLIES.items() if k in prompt)


def test_declared_generation_task(tmp_path):
    task = _task(tmp_path)
    run = run_task(FakeModel(complete=_complete), task, outputs=tmp_path / "out", progress=False)
    assert [r["output"] for r in run.records] == list(REPLIES.values())  # the raw replies, whole
    assert [r["exact_match"] for r in run.records] == [1.0, 0.0, 0.0]  # cut, failed (unclosed), wrong
    replies = run.summary["replies"]
    assert (replies["n_replies"], replies["n_thinking"], replies["n_thinking_unclosed"], replies["n_failed"]) == (
        3,
        2,
        1,
        1,
    )
    assert replies["answers_in_thai"]["value"] == pytest.approx(1 / 3) and replies["answers_in_thai"]["n"] == 3
    assert run.summary["thinking"]["signature"] == "think:strip(<think>,</think>)"
    assert run.scores["exact_match"]["signature"].endswith("|think:strip(<think>,</think>)")
    table = run.table()
    assert table["thai_rate"].tolist() == [pytest.approx(1 / 3)] * 2 and table["n_thinking_unclosed"].tolist() == [1, 1]
    assert "thinking" not in card(run.run_dir)["config"]  # the default keeps the config id of earlier runs
    off = run_task(
        FakeModel(complete=_complete), task, outputs=tmp_path / "out", progress=False, thinking=thinking_option("off")
    )
    assert off.run_dir != run.run_dir and card(off.run_dir)["config"]["thinking"]["strip"] is False
    assert [r["exact_match"] for r in off.records] == [0.0, 0.0, 0.0]  # the raw reply is not "โตเกียว"
    lighteval = run_task(
        FakeModel(complete=_complete),
        task,
        outputs=tmp_path / "out",
        progress=False,
        thinking=thinking_option("lighteval"),
    )
    assert lighteval.summary["replies"]["n_thinking_unclosed"] == 1 and lighteval.summary["replies"]["n_failed"] == 0


def test_declared_task_suite_shows_the_counts(tmp_path):
    task = _task(tmp_path)
    suite = task.as_suite(tmp_path / "g.py")
    run = run_task(FakeModel(complete=_complete), suite.task, outputs=tmp_path / "out", progress=False)
    from thai_eval_utils.core.runs import StoredRun

    stored = StoredRun.from_dir(run.run_dir)
    heads = suite.headlines(stored)
    assert heads[1].items["hyp"].tolist() == ["โตเกียว", "", "Paris"]  # corpus metric on the cut replies

    class Boot:
        level, n_resamples, seed = 0.95, 50, 0

    cells = suite.leaderboard_cells("m", heads, Boot())
    assert "answers in Thai 33.3% (n=3); thinking unclosed 1" in cells[0]["note"]


# ------------------------------------------------------------------------------------------------- GSM8K
def test_gsm8k(tmp_path):
    docs = [
        {"question": "ไข่ 10 ฟอง แตก 4", "answer": "#### 6"},
        {"question": "เงิน 500 บาท ได้เพิ่ม 500", "answer": "#### 1,000"},
        {"question": "แมว 3 ตัว", "answer": "#### 3"},
    ]
    replies = {
        "ไข่": "<think>10-4 = 6 #### 6</think> เหลือ 6 ฟอง #### 6",
        "เงิน": "<think>500+500 #### 1000",
        "แมว": " #### 3",
    }
    model = FakeModel(complete=lambda p: next(v for k, v in replies.items() if k in p.rsplit("Question: ", 1)[1]))
    res = h6.evaluate(model, "th_gsm8k", docs, LEADERBOARD.replace(num_fewshot=0), outputs=tmp_path, progress=False)
    assert res.table["generation"].tolist() == list(replies.values())
    assert res.table["exact_match"].tolist() == [1.0, 0.0, 1.0]  # the unclosed reply's "#### 1000" is not read
    s = summary(res.run_dir)
    assert (s["replies"]["n_thinking"], s["replies"]["n_thinking_unclosed"]) == (2, 1)
    assert s["replies"]["answers_in_thai"]["n"] == 3 and s["replies"]["answers_in_thai"]["value"] == pytest.approx(
        2 / 3
    )
    frame = h6.scores_frame([res])
    assert (
        frame["n_thinking_unclosed"].tolist() == [1, 1] and frame["thai_rate"].tolist() == [pytest.approx(200 / 3)] * 2
    )
    assert res.headline.signature.endswith(
        "|think:strip(<think>,</think>)|thai-eval:" + res.headline.signature.rsplit(":", 1)[1]
    )
    assert "thinking" not in res.config
    off = h6.evaluate(
        model,
        "th_gsm8k",
        docs,
        LEADERBOARD.replace(num_fewshot=0, thinking=thinking_option("off")),
        outputs=tmp_path,
        progress=False,
    )
    assert off.run_dir != res.run_dir and off.table["exact_match"].tolist() == [1.0, 1.0, 1.0]  # raw: thinking read


# ------------------------------------------------------------------------------------------------ ThaiCLI
def test_thaicli_answers(tmp_path):
    df = pd.DataFrame(
        [
            {"id": f"q{i}", "format": f, "theme": "Culture", "question": q, "chosen": "ดี", "rejected": "ไม่ดี"}
            for i, (f, q) in enumerate([("factoid", "หนึ่ง"), ("factoid", "สอง"), ("instruction", "สาม")])
        ]
    )
    replies = {"หนึ่ง": "<think>thinking in English</think>คำตอบหนึ่ง", "สอง": "<think>never closes", "สาม": "Answer three"}
    model = FakeModel("thinker", reply=lambda m: replies[m[-1]["content"]])
    out = generate_answers(model, df, outputs=tmp_path, progress=False)
    assert out["raw_answer"].tolist() == list(replies.values())
    assert out["answer"].tolist() == ["คำตอบหนึ่ง", "", "Answer three"]  # what the judge sees
    assert out["thinking_unclosed"].tolist() == [False, True, False]
    assert out["answer_in_thai"].tolist() == [True, False, False]
    stored = [
        json.loads(line)["answer"] for line in (Path(out.attrs["run_dir"]) / "items.jsonl").read_text().splitlines()
    ]
    assert stored == list(replies.values())
    s = summary(out.attrs["run_dir"])
    assert s["replies"]["n_thinking_unclosed"] == 1 and s["replies"]["answers_in_thai"]["value"] == pytest.approx(1 / 3)
    assert "thinking" not in card(out.attrs["run_dir"])["config"]


class _TemplatedFake(FakeModel):
    """A fake whose chat template would take ``enable_thinking`` (it records what it had at each call)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.chat_template_kwargs = {}
        self.seen = []

    def chat(self, messages_list, **kwargs):
        self.seen.append(dict(self.chat_template_kwargs))
        return super().chat(messages_list, **kwargs)


def test_enable_thinking_reaches_the_chat_template_and_is_recorded(tmp_path):
    df = pd.DataFrame(
        [{"id": "q0", "format": "factoid", "theme": "x", "question": "หนึ่ง", "chosen": "ก", "rejected": "ข"}]
    )
    model = _TemplatedFake("templated", reply=lambda m: "ตอบ")
    out = generate_answers(
        model,
        df,
        outputs=tmp_path,
        progress=False,
        thinking=thinking_option("strip", enable_thinking=False, max_thinking_tokens=64),
    )
    assert model.seen == [{"enable_thinking": False}] and model.chat_template_kwargs == {}
    s = summary(out.attrs["run_dir"])
    assert s["thinking"]["support"] == {
        "enable_thinking": "chat_template_kwargs",
        "max_thinking_tokens": "not supported by this backend",
    }
    assert card(out.attrs["run_dir"])["config"]["thinking"]["enable_thinking"] is False


# ------------------------------------------------------------------------------------------------ dialects
def test_dialect_generation(tmp_path):
    df = load_dialect(REPO / "data" / "dialect", dialects=["center"])
    df = df[df["task"] == "qa"].head(3).reset_index(drop=True)
    replies = iter(["<think>reasoning</think>คำตอบ", "<think>ไม่จบ", "plain English"])
    answers: dict[str, str] = {}

    def reply(messages):
        key = messages[-1]["content"]
        if key not in answers:
            answers[key] = next(replies)
        return answers[key]

    model = FakeModel("dialect-thinker", reply=reply)
    out = D.run_generation(model, df, outputs=tmp_path, batch_size=3, progress=False, greedy=True)
    assert out["raw_output"].tolist() == ["<think>reasoning</think>คำตอบ", "<think>ไม่จบ", "plain English"]
    assert out["output"].tolist() == ["คำตอบ", "", "plain English"]
    s = summary(out.attrs["run_dir"])
    assert (s["replies"]["n_thinking"], s["replies"]["n_thinking_unclosed"]) == (2, 1)
    assert s["replies_by_task"]["center/qa"]["answers_in_thai"]["n"] == 3
    assert s["replies"]["answers_in_thai"]["value"] == pytest.approx(1 / 3)
    assert "thinking" not in out.attrs["config"]


def test_thaicli_judge_scores_a_failed_answer_0_without_a_call(tmp_path):
    df = pd.DataFrame(
        [
            {"id": f"q{i}", "format": f, "theme": "Culture", "question": q, "chosen": "ดี", "rejected": "ไม่ดี"}
            for i, (f, q) in enumerate(
                [("factoid", "หนึ่ง"), ("factoid", "สอง"), ("instruction", "สาม"), ("instruction", "สี่")]
            )
        ]
    )
    replies = {"หนึ่ง": "<think>x</think>คำตอบหนึ่ง", "สอง": "<think>never closes", "สาม": "ตอบสาม", "สี่": "ตอบสี่"}
    answers = generate_answers(
        FakeModel("thinker", reply=lambda m: replies[m[-1]["content"]]), df, outputs=tmp_path, progress=False
    )
    assert answers["answer_failed"].tolist() == [False, True, False, False]
    seen: list[str] = []

    def judge_reply(messages):
        seen.append(messages[-1]["content"])
        return "<score>8</score><explanation>ดี</explanation>"

    from thai_eval_utils.thaicli.judge import FAILED_STATUS, judge_answers

    run = judge_answers(answers, FakeModel("judge", reply=judge_reply), outputs=tmp_path, progress=False)
    assert len(seen) == 3 and not any("never closes" in s for s in seen)  # the failed answer never reached the judge
    assert run.items["status"].tolist() == ["scored", FAILED_STATUS, "scored", "scored"]
    assert run.items["score"].tolist() == [8.0, 0.0, 8.0, 8.0]
    assert run.scores.factoid.value == 4.0 and run.scores.factoid.n == 2  # counted as 0, not left out
    assert run.summary["answers_replies"]["n_failed"] == 1
    again = judge_answers(answers, FakeModel("judge", reply=judge_reply), outputs=tmp_path, progress=False)
    assert len(seen) == 3 and again.items["score"].tolist() == [8.0, 0.0, 8.0, 8.0]  # resumed, nothing asked again
    records = (Path(run.store.root) / "items.jsonl").read_text().splitlines()
    assert len(records) == 4
    cache = [json.loads(line) for line in (tmp_path / "cache" / "thaicli_judgements.jsonl").read_text().splitlines()]
    assert len(cache) == 3 and all(c["status"] == "scored" for c in cache)  # no judge saw the failed answer: not cached


# ------------------------------------------------------------------------------- an endpoint that thinks
def _vllm_reply(content, reasoning):
    """A chat completion as vLLM's reasoning parser sends it (thinking split off; content None when unclosed)."""
    from fake_openai_server import Raw

    message = {"role": "assistant", "content": content, "reasoning_content": reasoning}
    return Raw.json(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "thinker-served",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
        }
    )


def test_endpoint_model_gets_the_settings_and_its_split_replies_are_stored_whole(tmp_path):
    from fake_openai_server import FakeOpenAIServer

    from thai_eval_utils.backend.openai_client import ApiModel

    def responder(body):
        question = body["messages"][-1]["content"]
        return _vllm_reply("คำตอบ", "คิดก่อน") if question == "หนึ่ง" else _vllm_reply(None, "คิดไม่จบ")

    df = pd.DataFrame(
        [
            {"id": f"q{i}", "format": "factoid", "theme": "x", "question": q, "chosen": "ก", "rejected": "ข"}
            for i, q in enumerate(["หนึ่ง", "สอง"])
        ]
    )
    with FakeOpenAIServer(responder, served_model="thinker-served") as srv:
        model = ApiModel("thinker-served", base_url=srv.base_url, api_key="not-needed", concurrency=1)
        out = generate_answers(
            model,
            df,
            outputs=tmp_path,
            progress=False,
            thinking=thinking_option("strip", enable_thinking=True, max_thinking_tokens=32),
        )
        bodies = list(srv.bodies)
    assert all(
        b["chat_template_kwargs"] == {"enable_thinking": True} and b["thinking_token_budget"] == 32 for b in bodies
    )
    assert out["raw_answer"].tolist() == ["<think>คิดก่อน</think>คำตอบ", "<think>คิดไม่จบ"]
    assert out["answer"].tolist() == ["คำตอบ", ""] and out["answer_failed"].tolist() == [False, True]
    assert model.reasoning_tags is None and model.chat_template_kwargs == {}  # restored after the run
    support = summary(out.attrs["run_dir"])["thinking"]["support"]
    assert support["enable_thinking"] == "chat_template_kwargs" and support["max_thinking_tokens"].startswith("vLLM")


def test_rejoin_reasoning_only_in_generation_runs():
    from types import SimpleNamespace

    from thai_eval_utils.backend.client_options import rejoin_reasoning, thinking_body

    msg = SimpleNamespace(content="ตอบ", reasoning_content="คิด")
    assert rejoin_reasoning(msg, None) is None  # a judge's reply: as the server gives it
    assert rejoin_reasoning(msg, ("<think>", "</think>")) == "<think>คิด</think>ตอบ"
    assert rejoin_reasoning(SimpleNamespace(content="ตอบ"), ("<think>", "</think>")) is None
    assert rejoin_reasoning(SimpleNamespace(content=None, reasoning="คิด"), ("[T]", "[/T]")) == "[T]คิด"
    assert (
        thinking_body(SimpleNamespace()) == {}
        and thinking_body(SimpleNamespace(chat_template_kwargs={}, thinking_budget=None)) == {}
    )


def test_local_model_passes_enable_thinking_to_its_chat_template(tiny_llama):
    import copy

    from thai_eval_utils.backend.models import LocalModel
    from thai_eval_utils.tasks.thinking import NOT_SUPPORTED, apply_to_model

    model, tok = tiny_llama
    tok = copy.deepcopy(tok)
    tok.chat_template = (
        "{% if enable_thinking is defined and not enable_thinking %}/no_think {% endif %}"
        "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    )
    lm = LocalModel(model, tok, name="tiny-thinker", identity={"name": "tiny-thinker"})
    identity = dict(lm.identity)
    messages = [{"role": "user", "content": "หนึ่ง"}]
    assert lm.render_chat(messages) == "หนึ่ง"
    with apply_to_model(lm, thinking_option("strip", enable_thinking=False, max_thinking_tokens=8)) as support:
        assert lm.render_chat(messages) == "/no_think หนึ่ง"
    assert support == {"enable_thinking": "chat_template_kwargs", "max_thinking_tokens": NOT_SUPPORTED}
    assert lm.render_chat(messages) == "หนึ่ง" and lm.identity == identity  # restored; the identity never changes
