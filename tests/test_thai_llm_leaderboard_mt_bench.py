"""MT-Bench Thai as the Thai LLM Leaderboard's runner runs it (spec thai_llm_leaderboard.md 4): FastChat's four
single-answer templates byte for byte, the template chosen by the row's reference, the rating parse, both
aggregations by hand, two-turn answers and judging through the one judge (store, cache, resume)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.fakes import FakeModel
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.judging.mt_bench import MT_BENCH_PARSER, MT_BENCH_RUBRICS
from thai_eval_utils.thai_llm_leaderboard.generation import GenerationOptions
from thai_eval_utils.thai_llm_leaderboard.mt_bench import (
    JUDGE_PARAMS,
    Question,
    avg_rating,
    category_ratings,
    generate_answers,
    judge_answers,
    judge_messages,
    load_questions,
    temperature_of,
)

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data" / "thai_llm_leaderboard" / "mt_bench_thai_full.json"
RUNNER_PROMPTS = REPO / "tests" / "data" / "thai_llm_leaderboard_judge" / "judge_prompt_single.jsonl"


def test_templates_equal_the_runners_file_byte_for_byte():
    rows = [json.loads(line) for line in RUNNER_PROMPTS.read_text(encoding="utf-8").splitlines()]
    assert [r["name"] for r in rows] == list(MT_BENCH_RUBRICS)
    for row in rows:
        rubric = MT_BENCH_RUBRICS[row["name"]]
        fields = sorted(set(re.findall(r"\{(\w+)\}", row["prompt_template"])))
        assert sorted(rubric.fields) == fields
        system, user = rubric.messages({f: "{" + f + "}" for f in fields})
        assert system == {"role": "system", "content": row["system_prompt"]}
        assert user == {"role": "user", "content": row["prompt_template"]}
        values = {f: f"<{f} ข้อความ {{x}} $y>" for f in fields}  # str.format and our fill agree, braces and $ kept
        assert rubric.messages(values)[1]["content"] == row["prompt_template"].format(**values)
    assert JUDGE_PARAMS.temperature == 0.0 and JUDGE_PARAMS.max_tokens == 2048 and JUDGE_PARAMS.max_calls == 1


def _q(category: str, reference: tuple[str, str] | None) -> Question:
    return Question(1, ("ถามหนึ่ง", "ถามสอง"), reference, category, {})


def test_template_chosen_by_reference_not_category():
    assert judge_messages(_q("Math", ("อ้างหนึ่ง", "อ้างสอง")), 1, "ตอบ")[0] == "single-math-v1"
    assert judge_messages(_q("Math", ("อ้างหนึ่ง", "อ้างสอง")), 2, "ตอบ", "ตอบสอง")[0] == "single-math-v1-multi-turn"
    assert judge_messages(_q("Math", None), 1, "ตอบ")[0] == "single-v1"  # FastChat would pick math by category
    assert judge_messages(_q("Writing", ("ก", "ข")), 1, "ตอบ")[0] == "single-math-v1"
    name, msgs = judge_messages(_q("Knowledge III", ("อ้างหนึ่ง", "อ้างสอง")), 2, "ตอบหนึ่ง", "ตอบสอง")
    assert name == "single-math-v1-multi-turn"
    assert (
        "### Reference answer:\nอ้างสอง\n" in msgs[1]["content"] and "### Assistant A:\nตอบสอง\n" in msgs[1]["content"]
    )
    assert msgs[0]["content"].startswith("Please act as an impartial judge") and msgs[0]["content"].endswith("\n\n")


@pytest.mark.parametrize(
    ("reply", "rating"),
    [
        ("Rating: [[7]]", 7.0),
        ("Rating: [[7.5]]", 7.5),
        ("as the answer cites [2], it is weak.", 2.0),  # the backup pattern: any single-bracket number
        ("no rating here", None),  # -> the fallback -1
        ("Rating: [[11]]", 11.0),  # unclamped
        ("see [5]; final: [[8]]", 8.0),  # [[n]] anywhere beats an earlier [n]
        ("[[3]] then [[9]]", 3.0),  # the first match
        ("$ERROR$", None),
    ],
)
def test_rating_parse(reply, rating):
    parsed = MT_BENCH_PARSER.parse(reply)
    assert (parsed[0] if parsed else None) == rating
    assert MT_BENCH_PARSER.fallback_score == -1.0 and MT_BENCH_PARSER.score_range is None


def test_aggregations_by_hand():
    items = [{"category": c} for c in ("Writing", "Writing", "Math", "Math", "Coding", "Coding")]
    ratings = [8.0, -1.0, 10.0, 4.0, None, -1.0]
    faithful = avg_rating(category_ratings(items, ratings, "faithful"))
    assert faithful == {"Writing": (8 - 1) / 2, "Math": 7.0, "Coding": -1.0}  # -1 averaged in; unjudged left out
    fastchat = avg_rating(category_ratings(items, ratings, "fastchat"))
    assert fastchat == {"Writing": 8.0, "Math": 7.0, "Coding": None}
    assert list(faithful) == ["Writing", "Math", "Coding"]  # first-seen order, as the runner's dict
    with pytest.raises(ValueError):
        category_ratings(items, ratings, "mean")


def test_questions_validated_and_temperatures(tmp_path):
    qs = load_questions(DATA)
    assert len(qs) == 9 and sum(q.reference is not None for q in qs) == 2
    opts = GenerationOptions()
    assert {temperature_of(q, "runner", opts) for q in qs} == {0.2}  # generation_kwargs ignored, as the runner
    writing = next(q for q in qs if q.category == "Writing")
    assert temperature_of(writing, "fastchat", opts) == writing.generation_kwargs["temperature"]
    assert temperature_of(Question(1, ("a", "b"), None, "Math", {}), "fastchat", opts) == 0.0
    assert temperature_of(Question(1, ("a", "b"), None, "Knowledge III", {}), "fastchat", opts) == 0.7
    bad = tmp_path / "mt.json"
    bad.write_text(
        json.dumps([{"question_id": 1, "turns": ["ก"], "reference": None, "category": "Writing"}]), encoding="utf-8"
    )
    with pytest.raises(ThaiEvalDataError) as err:
        load_questions(bad)
    assert err.value.row == 0 and err.value.field == "turns"
    bad.write_text(
        json.dumps([{"question_id": 1, "turns": ["ก", "ข"], "reference": ["x"], "category": "Math"}]), encoding="utf-8"
    )
    with pytest.raises(ThaiEvalDataError, match="reference"):
        load_questions(bad)


def _answer(conv):
    return f"คำตอบที่ {len(conv)}: " + conv[-1]["content"][:10]


def _judge_reply(messages):
    user = messages[-1]["content"]
    if "<|The Start of Reference Answer|>" in user or "[The Start of Reference Answer]" in user:
        return "ถูกต้อง Rating: [[9]]"
    if "### Assistant A:" in user:
        return "no rating given"  # second turns without a reference: -1
    return "ดี [[6]]"


def test_two_turns_judged_resumed_and_aggregated(tmp_path):
    qs = load_questions(DATA)
    model = FakeModel("fake-answerer", reply=_answer)
    answers = generate_answers(model, qs, outputs=tmp_path, progress=False)
    assert len(answers.records) == 18
    second = [conv for batch in model.inputs for conv in batch if len(conv) == 3]
    assert len(second) == 9 and second[0][1] == {
        "role": "assistant",
        "content": answers.records[(qs[0].question_id, 1)]["output"],
    }
    # each stored answer keeps the chat it answered (round 2: round 1's question and reply, then its own question)
    assert answers.records[(qs[0].question_id, 2)]["messages"] == second[0]
    assert answers.records[(qs[0].question_id, 1)]["messages"] == second[0][:1]
    assert {c[1]["temperature"] for c in model.calls} == {0.2} and {c[1]["max_new_tokens"] for c in model.calls} == {
        512
    }
    judge = FakeModel("fake-judge", reply=_judge_reply)
    run = judge_answers(answers, judge, model_name="fake-answerer", outputs=tmp_path, progress=False)
    # by hand: a question with a reference scores 9 on both turns; without one, 6 then -1
    cats = {q.category: q.reference is not None for q in qs}
    expected = {c: (9.0 if ref else (6 - 1) / 2) for c, ref in cats.items()}
    assert run.avg_rating == expected
    fc = run.summary["by_aggregation"]["fastchat"]["avg_rating"]
    assert fc == {c: (9.0 if ref else 6.0) for c, ref in cats.items()}
    assert run.summary["n_no_rating"] == 7 and run.summary["n_unjudged"] == 0
    assert run.summary["templates_used"] == {
        "single-v1": 7,
        "single-math-v1": 2,
        "single-v1-multi-turn": 7,
        "single-math-v1-multi-turn": 2,
    }
    s = run.summary["scores"]["Math"]
    assert s["n"] == 2 and "judge:fake-judge" in s["signature"] and "agg:faithful" in s["signature"]
    n_calls = len(judge.calls)
    again = judge_answers(
        generate_answers(model, qs, outputs=tmp_path, progress=False),
        judge,
        model_name="fake-answerer",
        outputs=tmp_path,
        progress=False,
    )
    assert len(judge.calls) == n_calls and again.avg_rating == expected  # resumed: no judge call repeated


def test_answers_after_a_failed_call_resume_in_the_same_store(tmp_path):
    """A failed call (an ApiError) leaves its question's first turn, and so its second, unanswered; the rerun
    answers both in the same run and store, the second after the stored first answer with its thinking cut."""
    from thai_eval_utils.backend.api_replies import ApiError

    qs = load_questions(DATA)[:3]
    failing = {qs[1].turns[0]}

    def reply(conv):
        if conv[-1]["content"] in failing:
            raise ApiError("server said 503")
        return "<think>คิด</think>" + _answer(conv)

    model = FakeModel("fake-r", reply=reply)
    first = generate_answers(model, qs, outputs=tmp_path, batch_size=1, progress=False)
    assert sorted(first.records) == sorted((q.question_id, t) for q in (qs[0], qs[2]) for t in (1, 2))
    summary = json.loads(next(tmp_path.glob("runs/*/*/*/*/summary.json")).read_text(encoding="utf-8"))
    assert (summary["n_questions"], summary["n_answers"]) == (3, 4)
    failing.clear()
    again = generate_answers(model, qs, outputs=tmp_path, batch_size=1, progress=False)
    assert again.config_id == first.config_id and len(again.records) == 6
    assert model.inputs[-1] == [
        [
            {"role": "user", "content": qs[1].turns[0]},
            {"role": "assistant", "content": _answer([{"role": "user", "content": qs[1].turns[0]}])},
            {"role": "user", "content": qs[1].turns[1]},
        ]
    ]
    assert len(model.inputs) == 5 + 2  # 3 first turns (one failed), 2 second turns; then only the 2 missing


def test_failed_judge_requests_stay_unjudged(tmp_path):
    qs = load_questions(DATA)[:2]
    answers = generate_answers(FakeModel("fake-a", reply=_answer), qs, outputs=tmp_path, progress=False)

    def flaky(messages):
        if "### Assistant A:" in messages[-1]["content"]:
            raise RuntimeError("server said 503")
        return "[[5]]"

    run = judge_answers(
        answers,
        FakeModel("fake-flaky", reply=flaky),
        model_name="fake-a",
        outputs=tmp_path,
        batch_size=1,
        progress=False,
    )
    assert run.summary["n_unjudged"] == 2 and all(v == 5.0 for v in run.avg_rating.values())  # never -1
    assert [r["rating"] for r in run.records] == [5.0, None, 5.0, None]
    assert all("503" in r["judgements"][0]["error"] for r in run.records if r["rating"] is None)


def test_embedded_answers_and_stub_judge(tmp_path):
    from thai_eval_utils.backend.models import load_model

    model = load_model("embedded")
    qs = load_questions(DATA)[:2]
    answers = generate_answers(model, qs, options=GenerationOptions(max_new_tokens=4), outputs=tmp_path, progress=False)
    assert len(answers.records) == 4 and all(isinstance(r["output"], str) for r in answers.records.values())
    run = judge_answers(
        answers,
        FakeModel("stub-judge", reply=lambda m: "Rating: [[4]]"),
        model_name=model.name,
        outputs=tmp_path,
        progress=False,
    )
    assert set(run.avg_rating.values()) == {4.0} and run.summary["n_judgements"] == 4


def test_suite_hooks_for_mt_bench(tmp_path):
    from thai_eval_utils.core.runs import list_runs
    from thai_eval_utils.thai_llm_leaderboard.suite import SUITE

    qs = load_questions(DATA)
    answers = generate_answers(FakeModel("fake-h", reply=_answer), qs, outputs=tmp_path, progress=False)
    run = judge_answers(
        answers, FakeModel("fake-judge", reply=_judge_reply), model_name="fake-h", outputs=tmp_path, progress=False
    )
    stored = next(r for r in list_runs(tmp_path) if r.task == "mt_bench_thai")
    assert SUITE.leaderboard_results(stored) == {c: {"avg_rating": v} for c, v in run.avg_rating.items()}
    (head,) = SUITE.headlines(stored)
    assert len(head.items) == 18 and sorted(set(head.items["category"])) == sorted({q.category for q in qs})
    assert head.items["value"].mean() == pytest.approx(sum(r["rating"] for r in run.records) / 18)
    rows = SUITE.dry_run(DATA.parent, _Count(), tasks=("mt_bench_thai",), limit=2, max_new_tokens=None)
    assert rows == [
        {
            "benchmark": "thai_llm_leaderboard",
            "task": "mt_bench_thai",
            "documents": 2,
            "requests": 4,
            "fed_tokens": sum(len(t) for q in qs[:2] for t in q.turns),
            "tree_tokens": None,
            "generations": 4,
            "max_new_tokens": 512,
            "judge_calls": 4,
        }
    ]


class _Count:
    def count(self, texts):
        return sum(len(t) for t in texts)

    def count_requests(self, requests, *, add_bos_token=False):
        return None


def test_the_judge_in_offline_batch_files_rates_as_live_calls_rate(tmp_path):
    """``judge_answers(batch=...)`` (``thai-eval run --batch-file-out/-in``): the first run writes every judgement's
    request and rates nothing (each unjudged, never -1); the answered file gives the ratings live calls give. The
    judge is never called."""
    from fake_batch_server import FakeBatchServer
    from fake_openai_server import Reply
    from thai_eval_utils.tasks.judged import judge_batch_mode

    qs = load_questions(DATA)[:2]
    answers = generate_answers(FakeModel("fake-a", reply=_answer), qs, outputs=tmp_path, progress=False)
    live = judge_answers(
        answers, FakeModel("fake-judge", reply=_judge_reply), model_name="fake-a", outputs=tmp_path / "l"
    )
    never = FakeModel("fake-judge")  # the same judge's name; any call raises
    requests, replies = tmp_path / "requests.jsonl", tmp_path / "replies.jsonl"
    first = judge_answers(
        answers, never, model_name="fake-a", outputs=tmp_path, batch=judge_batch_mode(never, file_out=requests)
    )
    assert [r["rating"] for r in first.records] == [None] * 4 and first.summary["n_unjudged"] == 4
    assert first.summary["batch"]["requests_written"] == 4
    lines = [json.loads(x) for x in requests.read_text(encoding="utf-8").splitlines()]
    with replies.open("w", encoding="utf-8") as fh:
        for ln in lines:
            reply = Reply(_judge_reply(ln["body"]["messages"]))
            fh.write(json.dumps(FakeBatchServer.answer_line(ln, reply, "fake-judge", "r")[1]) + "\n")
    again = judge_answers(
        answers, never, model_name="fake-a", outputs=tmp_path, batch=judge_batch_mode(never, file_in=replies)
    )
    assert [r["rating"] for r in again.records] == [r["rating"] for r in live.records] == [6.0, -1.0, 6.0, -1.0]
    assert again.avg_rating == live.avg_rating and again.summary["n_unjudged"] == 0
