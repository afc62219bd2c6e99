"""The generic judge: a rubric is a declaration (templates, a reply parser with its own pattern, range and
fallback, call settings) judged by any chat model; records and cache keys checked by hand; the parsers' edge cases
(ThaiCLI's ``<score>``, FastChat's ``[[rating]]``)."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from fakes import FakeModel

from thai_eval_utils.core.store import RunStore
from thai_eval_utils.judging import (
    Judge,
    JudgementCache,
    JudgeParams,
    JudgeRubric,
    ReplyParser,
    judge_items,
)
from thai_eval_utils.judging.mt_bench import MT_BENCH_PARSER, MT_BENCH_SINGLE, RATING_PATTERN
from thai_eval_utils.judging.cache import judgement_key
from thai_eval_utils.thaicli.judge_prompt import (
    TEMPLATE_SHA256,
    THAICLI_PARSER,
    build_messages,
    judge_template,
    thaicli_rubric,
)

#: A rubric unlike ThaiCLI's: no system message, one field, "Stars: N" in [0, 5], -1 after 3 unparsed replies.
STARS = ReplyParser(
    patterns=(re.compile(r"Stars:\s*(\d+)"),),
    score_range=(0.0, 5.0),
    fallback_score=-1.0,
    fallback_status="no_rating",
    explanation=re.compile(r"Why:\s*(.*)", re.S),
)
RUBRIC = JudgeRubric.declare(
    "stars",
    "stars_v1",
    user="Rate this Thai sentence from 0 to 5 stars:\n${text}\nReply 'Stars: N'.",
    fields=("text",),
    parser=STARS,
    params=JudgeParams(max_tokens=16, seed=5, max_calls=3),
)


def sha(obj) -> str:
    """SHA-256 of canonical JSON, written out here (sorted keys, no spaces, Thai kept)."""
    return hashlib.sha256(
        json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()
    ).hexdigest()


class Scripted:
    """Replies per text: a list consumed call by call (the last one repeats)."""

    def __init__(self, script: dict[str, list[str]]) -> None:
        self.script = script

    def __call__(self, messages: list[dict[str, str]]) -> str:
        text = messages[-1]["content"].split("\n")[1]
        replies = self.script[text]
        return replies.pop(0) if len(replies) > 1 else replies[0]


def run(model, tmp_path, items, ids, **kw):
    with RunStore.open("m", "stars", {"rubric": RUBRIC.version}, outputs=tmp_path) as store:
        cache = JudgementCache(tmp_path / "cache" / "stars.jsonl", statuses=STARS.final_statuses)
        return judge_items(Judge(RUBRIC, model), items, store, cache, ids=ids, progress=False, **kw), store


def test_a_custom_rubric_judged_by_a_fake_chat_model(tmp_path):
    model = FakeModel(
        "fake-judge", reply=Scripted({"ดีมาก": ["Stars: 4 Why: ชัดเจน"], "แย่": ["Stars: 9"], "ครึ่งๆ": ["???", "Stars: 2"]})
    )
    items = [{"text": "ดีมาก"}, {"text": "แย่"}, {"text": "ครึ่งๆ"}]
    done, store = run(model, tmp_path, items, ["a", "b", "c"])
    # calls: every judgement, then the two that did not parse, then the one still out of range; settings sent
    settings = {"max_new_tokens": 16, "temperature": 0.0, "top_p": 1.0, "seed": 5}
    assert model.calls == [("chat", {"n": n, **settings}) for n in (3, 2, 1)]
    assert model.inputs[0][0] == [
        {"role": "user", "content": "Rate this Thai sentence from 0 to 5 stars:\nดีมาก\nReply 'Stars: N'."}
    ]
    params = {"max_tokens": 16, "temperature": 0.0, "top_p": 1.0, "seed": 5, "max_calls": 3}
    keys = [
        sha(
            {
                "cache_format": 1,
                "text": t,
                "judge_model": "fake-judge",
                "template_sha256": RUBRIC.sha256,
                "params": params,
            }
        )
        for t in ("ดีมาก", "แย่", "ครึ่งๆ")
    ]
    assert [j.key for j in done.plan] == keys and [j.store_key for j in done.plan] == [
        f"{i}:{k[:16]}" for i, k in zip("abc", keys)
    ]
    recs = [done.records[j.store_key] for j in done.plan]
    assert [(r["status"], r["score"], r["attempts"], r["parse_failures"]) for r in recs] == [
        ("scored", 4.0, 1, 0),
        ("no_rating", -1.0, 3, 3),
        ("scored", 2.0, 2, 1),
    ]
    assert recs[0]["explanation"] == "ชัดเจน" and recs[2]["raw_judgements"] == ["???", "Stars: 2"]
    for r, k, ident in zip(recs, keys, "abc"):
        assert (r["id"], r["key"], r["judgement_key"], r["repeat"], r["seed"], r["error"]) == (
            ident,
            f"{ident}:{k[:16]}",
            k,
            0,
            5,
            "",
        )
        assert (r["judge_model"], r["template"], r["template_sha256"], r["params"]) == (
            "fake-judge",
            "stars_v1",
            RUBRIC.sha256,
            params,
        )
        assert (r["served_model"], r["token_usage"]) == ("fake-judge", {"prompt": 0, "completion": 0})
    assert done.usage == {"requests": 6, "prompt_tokens": 0, "completion_tokens": 0} and done.n_asked == 3
    # the shared cache holds the three final judgements (the -1 too: it is the rubric's fallback) under their keys
    cache = JudgementCache(tmp_path / "cache" / "stars.jsonl", statuses=STARS.final_statuses)
    assert sorted(r["key"] for r in cache) == sorted(keys) and cache.get(keys[1])["status"] == "no_rating"
    assert "id" not in cache.get(keys[0]) and cache.n_bad_lines == 0
    # a rerun calls nothing; a second repeat asks only for repeat 1 (seed 6, the key names the repeat)
    again = FakeModel("fake-judge", reply=Scripted({"ดีมาก": ["Stars: 1"], "แย่": ["Stars: 1"], "ครึ่งๆ": ["Stars: 1"]}))
    done2, _ = run(again, tmp_path, items, ["a", "b", "c"])
    assert again.calls == [] and [done2.records[j.store_key]["score"] for j in done2.plan] == [4.0, -1.0, 2.0]
    done3, _ = run(again, tmp_path, items, ["a", "b", "c"], repeats=2)
    assert again.calls == [("chat", {"n": 3, **settings, "seed": 6})]
    assert done3.plan[1].key == sha(
        {
            "cache_format": 1,
            "text": "ดีมาก",
            "judge_model": "fake-judge",
            "repeat": 1,
            "template_sha256": RUBRIC.sha256,
            "params": {**params, "seed": 6},
        }
    )
    assert [done3.record(j)["score"] for j in done3.plan] == [4.0, 1.0, -1.0, 1.0, 2.0, 1.0]


def test_a_failed_chat_call_leaves_its_batch_unjudged_and_uncached(tmp_path):
    crashing = FakeModel("fake-judge", reply=lambda m: "Stars: 3", fail_on_call=1)
    done, _ = run(crashing, tmp_path, [{"text": "ก"}, {"text": "ข"}], ["a", "b"], skip={1: "no text"})
    recs = [done.records[j.store_key] for j in done.plan]
    assert [(r["status"], r["score"], r["error"]) for r in recs] == [
        ("unjudged", None, "RuntimeError: simulated crash"),
        ("unjudged", None, "no text"),
    ]
    assert crashing.calls == [("chat", {"n": 1, "max_new_tokens": 16, "temperature": 0.0, "top_p": 1.0, "seed": 5})]
    assert len(JudgementCache(tmp_path / "cache" / "stars.jsonl", statuses=STARS.final_statuses)) == 0
    fine = FakeModel("fake-judge", reply=lambda m: "Stars: 3")
    done2, _ = run(fine, tmp_path, [{"text": "ก"}, {"text": "ข"}], ["a", "b"])
    assert [done2.records[j.store_key]["score"] for j in done2.plan] == [3.0, 3.0] and fine.calls[0][1]["n"] == 2


def test_the_rubric_hash_covers_templates_and_parser_and_thaicli_keeps_its_keys():
    wider = ReplyParser(STARS.patterns, (0.0, 10.0), -1.0, "no_rating", STARS.explanation)
    other = JudgeRubric.declare(
        "stars", "stars_v1", user=RUBRIC.user, fields=("text",), parser=wider, params=RUBRIC.params
    )
    assert other.sha256 != RUBRIC.sha256  # a changed parser never reuses cached scores
    rubric = thaicli_rubric()
    assert rubric.sha256 == TEMPLATE_SHA256 and rubric.parser is THAICLI_PARSER and rubric.params == JudgeParams()
    assert thaicli_rubric("rejected_first").sha256 == judge_template("rejected_first").sha256
    item = {"question": "ถาม", "chosen": "ดี", "rejected": "ไม่ดี", "answer": "ตอบ"}
    assert rubric.messages(item) == build_messages(*item.values())
    judge = Judge(rubric, FakeModel("fake-judge"))
    assert judge.key(item, 1) == judgement_key(
        item,
        judge_model="fake-judge",
        template_sha256=TEMPLATE_SHA256,
        params=JudgeParams(seed=1).to_dict(),
        repeat=1,
    )
    with pytest.raises(ValueError, match="templates use"):
        JudgeRubric.declare("x", "v", user="${a} ${b}", fields=("a",), parser=STARS)
    with pytest.raises(ValueError, match="cache key uses"):
        JudgeRubric.declare("x", "v", user="${params}", fields=("params",), parser=STARS)
    with pytest.raises(KeyError):
        RUBRIC.messages({"txt": "ก"})


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Stars: 5", (5.0, "")),
        ("Stars: 0 Why: ไม่ตรง", (0.0, "ไม่ตรง")),
        ("Stars: ๓", (3.0, "")),  # Thai digits
        ("Stars: 6", None),
        ("stars: 4", None),
        ("Stars:", None),
        ("", None),
        (None, None),
    ],
)
def test_custom_parser_edges(text, expected):
    assert STARS.parse(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("The answer is fine. Rating: [[7]]", 7.0),
        ("Rating: [[8.5]]", 8.5),
        ("Rating: [[9.]]", 9.0),  # FastChat's \d+\.?\d* reads "9."
        ("[[3]] then [[9]]", 3.0),  # the first match decides
        ("Rating: [6] ... [[2]]", 2.0),  # the backup is tried only when [[...]] matches nowhere
        ("Rating: [6]", 6.0),  # the backup
        ("Rating: [[11]]", 11.0),  # no range check, as FastChat
        ("Rating: [[rating]]", None),
        ("Rating: 7/10", None),
        ("", None),
        ("[[-3]]", None),
    ],
)
def test_mt_bench_parser_as_fastchat(text, expected):
    got = MT_BENCH_PARSER.parse(text)
    assert (got[0] if got else None) == expected


def test_mt_bench_rubric_is_a_declaration():
    assert MT_BENCH_SINGLE.parser.fallback_score == -1.0 and MT_BENCH_SINGLE.params.max_calls == 1
    assert MT_BENCH_SINGLE.parser.patterns[0] is RATING_PATTERN and MT_BENCH_SINGLE.fields == ("question", "answer")
    system, user = MT_BENCH_SINGLE.messages({"question": "กรุงเทพฯ คืออะไร", "answer": "เมืองหลวง ${question}"})
    assert system == {"role": "system", "content": "You are a helpful assistant."}
    assert user["content"].startswith("[Instruction]\nPlease act as an impartial judge")
    assert user["content"].endswith(
        "[Question]\nกรุงเทพฯ คืออะไร\n\n[The Start of Assistant's Answer]\nเมืองหลวง ${question}\n"
        "[The End of Assistant's Answer]"
    )  # answers inserted verbatim, once


@pytest.mark.parametrize(
    "text, expected",
    [
        ("<score>8</score>", (8.0, "")),
        ("<score>0</score><score>8</score>", None),
        ("<score>N/A</score><score>6</score>", (6.0, "")),
    ],
)
def test_thaicli_parser_is_the_declared_one(text, expected):
    assert THAICLI_PARSER.parse(text) == expected
