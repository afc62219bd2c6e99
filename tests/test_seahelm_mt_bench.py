"""SEA-HELM's mt-bench-judge (spec seahelm_thai.md 4.7, A.1) and the legacy pairwise variant (4.8, A.2): the judge
prompts byte for byte against the spec's Appendix A (tests/data/seahelm_judge/mt_bench_judge_expected.json, written
from the spec by make_judge_prompt_expected.py), the classification parsing, the scores and the win rates by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.records import read_records
from thai_eval_utils.seahelm import mt_bench as mb
from thai_eval_utils.seahelm import mt_bench_pairwise as pw

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data" / "seahelm" / "mt-bench-judge.jsonl"
EXPECTED = json.loads((REPO / "tests" / "data" / "seahelm_judge" / "mt_bench_judge_expected.json").read_text("utf-8"))


def _rows(path) -> list[mb.MTBenchRow]:
    """An mt-bench-judge file's rows as the run reads them (``task_setup(parse=mb.parse_row)``)."""
    return [mb.parse_row(r, path=str(path), row=i) for i, r in enumerate(read_records(path))]


def _seahelm_messages(texts) -> list[dict[str, str]]:
    """The judge's messages built the way SEA-HELM builds them (``str.format`` on its turn template)."""
    cfg = mb.prompts()
    template = cfg["criteria_prompt"]["turn_1" if texts["conversation"] == mb.KINDS[0] else "turn_2"]
    user = template.format(
        transcript=texts["transcript"], response=texts["response"], keyPointText=texts["keyPointText"]
    )
    return [{"role": "system", "content": cfg["system_prompt"]}, {"role": "user", "content": user}]


def test_judge_prompts_byte_for_byte_with_appendix_a():
    rows = _rows(DATA)
    row = next(r for r in rows if r.id == EXPECTED["row_id"])
    items, skipped = mb.judge_items_of([row], [tuple(EXPECTED["answers"])])
    assert skipped == []
    rubric = mb.rubric()
    assert [it.custom_id for it in items] == list(EXPECTED["user"])
    for it in items:
        messages = rubric.messages(it.texts)
        assert messages == [
            {"role": "system", "content": EXPECTED["system"]},
            {"role": "user", "content": EXPECTED["user"][it.custom_id]},
        ]
        assert messages == _seahelm_messages(it.texts)
    # the answer's "{...}" and "$x" reach the judge verbatim (one substitution pass)
    assert "{ไม่ใช่ฟิลด์} $x" in EXPECTED["user"]["th2_turn1_criteria2"]


def test_the_packaged_criteria_prompts_use_only_the_fields_the_code_fills():
    """A changed prompt file that asks for another field fails here, not as a judge prompt with a hole."""
    import string

    for name, text in mb.prompts()["criteria_prompt"].items():
        used = {f for _, f, _, _ in string.Formatter().parse(text) if f}
        assert used == {"transcript", "response", "keyPointText"}, name


def test_turn_conversations():
    row = _rows(DATA)[0]
    assert mb.turn_messages(row, 0) == [{"role": "user", "content": row.prompts[0]["text"].strip()}]
    two = mb.turn_messages(row, 1, "คำตอบแรก")
    assert [m["role"] for m in two] == ["user", "assistant", "user"]
    assert two[1]["content"] == "คำตอบแรก" and two[2]["content"] == row.prompts[1]["text"].strip()
    assert mb.turn_messages(row, 1, None)[1]["content"] == ""


def test_missing_first_answer_skips_turn_two_criteria():
    row = _rows(DATA)[0]
    items, skipped = mb.judge_items_of([row], [(None, "ตอบ")])
    assert [it.turn for it in items] == [0, 0]
    assert items[0].texts["response"] == "None"  # SEA-HELM formats a None answer as "None"
    assert skipped == ["th1_turn1_criteria2", "th1_turn1_criteria3"]
    scores = mb.scored_rows([row], items, {it.custom_id: 1.0 for it in items})
    assert scores[0]["turn_scores"] == [1.0, 0.0] and scores[0]["final_scores"] == 0.5


@pytest.mark.parametrize(
    ("reply", "label", "score"),
    [
        ("<reflection>ดี</reflection><classification>CLASS_EXACTLY_MET</classification>", "CLASS_EXACTLY_MET", 1.0),
        ("<classification> CLASS_SLIGHTLY_MET </classification>", "CLASS_SLIGHTLY_MET", 0.25),
        (
            "<classification>CLASS_UNMET</classification> ... <classification>CLASS_MAJORLY_MET</classification>",
            "CLASS_MAJORLY_MET",
            0.75,
        ),  # the last tag counts
        ("<classification>CLASS_MODERATELY_MET</classification>", "CLASS_MODERATELY_MET", 0.5),
        ("<classification>CLASS_SORT_OF_MET</classification>", "CLASS_SORT_OF_MET", 0.0),  # unknown class: 0
        ("<classification>CLASS EXACTLY MET</classification>", None, 0.0),  # \w+ only: no match
        (
            "<think><classification>CLASS_UNMET</classification></think><classification>CLASS_EXACTLY_MET</classification>",
            "CLASS_EXACTLY_MET",
            1.0,
        ),
        ("no tag at all", None, 0.0),
    ],
)
def test_classification_parsing(reply, label, score):
    assert mb.extract_classification(reply) == label
    parsed = mb.rubric().parser.parse(reply)
    assert (parsed[0] if parsed else mb.rubric().parser.fallback_score) == score


def test_reflection_is_the_last_one_on_one_line():
    assert mb.extract_reflection("<reflection> a </reflection><reflection>b</reflection>") == "b"
    assert mb.extract_reflection("<reflection>a\nb</reflection>") is None


def test_average_criteria_score_by_hand():
    rows = _rows(DATA)  # th1 Writing 2+2 criteria, th2 Reasoning 2+2, th3 Roleplay 2+1
    items, _ = mb.judge_items_of(rows, [("a", "b")] * 3)
    scores = dict(
        zip(
            [it.custom_id for it in items],
            [
                1.0,
                0.5,
                0.75,
                0.25,  # th1: turns 0.75, 0.5 -> 0.625
                0.0,
                0.0,
                1.0,
                None,  # th2: 0, 0.5 (None counts 0) -> 0.25
                1.0,
                0.5,
                0.25,
            ],
        )
    )  # th3: 0.75, 0.25 -> 0.5
    per_row = mb.scored_rows(rows, items, scores)
    assert [r["final_scores"] for r in per_row] == [0.625, 0.25, 0.5]
    assert per_row[0]["scores"] == [[1.0, 0.5], [0.75, 0.25]]
    m = mb.mt_bench_metrics([r["final_scores"] for r in per_row], [r["category"] for r in per_row])
    assert m["average_criteria_score"] == pytest.approx((0.625 + 0.25 + 0.5) / 3 * 100)
    assert m["categories"] == {"Reasoning": 0.25, "Roleplay": 0.5, "Writing": 0.625}


def test_scores_follow_seahelm_string_order_of_criteria_ids():
    row = mb.MTBenchRow("q", ({"text": "a"}, {"text": "b"}), tuple((0, f"c{i}") for i in range(11)), "Writing")
    judged = {f"q_turn0_criteria{i}": float(i == 10) for i in range(11)}
    out = mb.row_scores(row, judged)
    assert out["scores"][0][:3] == [0.0, 0.0, 1.0]  # criteria0, criteria1, criteria10, ...
    assert out["turn_scores"] == [pytest.approx(1 / 11), 0.0]


def test_bad_rows_are_named(tmp_path):
    base = json.loads(DATA.read_text("utf-8").splitlines()[0])
    cases = [
        ({"criteria": [{"turn": 0, "criterion": "มี {ชื่อ}"}]}, "criteria", "cannot be formatted"),
        ({"id": "th_1"}, "id", "contains '_'"),
        ({"prompts": [{"text": "หนึ่ง"}]}, "prompts", "two turns"),
        ({"criteria": [{"turn": 2, "criterion": "x"}]}, "criteria", "turn 0 or 1"),
    ]
    for patch, field, message in cases:
        path = tmp_path / "bad.jsonl"
        path.write_text(json.dumps({**base, **patch}, ensure_ascii=False) + "\n", encoding="utf-8")
        with pytest.raises(ThaiEvalDataError, match=rf"bad.jsonl, row 0, field '{field}'.*{message}"):
            _rows(path)


def test_judge_settings_are_seahelms():
    p = mb.judge_params(seed=25008113)
    assert (p.max_tokens, p.temperature, p.top_p, p.seed, p.max_calls) == (16384, 1.0, 1.0, 25008113, 1)
    assert mb.DEFAULT_JUDGE == mb.prompts()["judge_model_name"] == "openai/gpt-oss-120b"


# ------------------------------------------------------------------------------------------------ pairwise
@pytest.mark.parametrize(
    ("reply", "order", "verdict"),
    [
        ("... [[A]]", "baseline-after", "WIN"),
        ("[[B]]", "baseline-after", "LOSE"),
        ("[[A]]", "baseline-before", "LOSE"),
        ("[[B]]", "baseline-before", "WIN"),
        ("[[C]]", "baseline-before", "TIE"),
        ("[[A]] or [[B]]", "baseline-after", "ERROR"),
        ("no verdict", "baseline-after", "ERROR"),
        (None, "baseline-after", "ERROR"),
    ],
)
def test_pairwise_verdicts(reply, order, verdict):
    assert pw.parse_verdict(reply, order) == verdict


def test_turn_verdict_rules():
    assert pw.turn_verdict("WIN", "WIN") == "WIN"
    assert pw.turn_verdict("LOSE", "LOSE") == "LOSE"
    assert pw.turn_verdict("TIE", "WIN") == "TIE"
    assert pw.turn_verdict("WIN", "ERROR") == "TIE"  # a disagreement is a tie, even with an error
    assert pw.turn_verdict("ERROR", "ERROR") == "ERROR"
    assert pw.turn_verdict("WIN", "LOSE", ties_allowed=False) == "ERROR"


def _verdicts(replies, n_turns: int, question_id: str) -> list[str]:
    """A row's turn verdicts from its judge replies (custom id -> reply): each turn's two orders parsed, then
    joined."""
    return [
        pw.turn_verdict(*(pw.parse_verdict(replies.get(f"{question_id}_turn{t}_{o}"), o) for o in pw.ORDERS))
        for t in range(1, n_turns + 1)
    ]


def test_weighted_win_rate_by_hand():
    verdicts = [["WIN", "TIE"], ["LOSE", "ERROR"], ["WIN", "WIN"], ["TIE", "LOSE"]]
    cats = ["writing", "writing", "math", "coding"]
    m = pw.pairwise_metrics(verdicts, cats)
    # writing: (1 + 0.5) / 4 = 0.375; math: 1.0; coding: 0.5 / 2 = 0.25
    assert m["categories"] == {"coding": 0.25, "math": 1.0, "writing": 0.375}
    assert m["weighted_win_rate"] == pytest.approx((0.375 + 1.0 + 0.25) / 3 * 100)
    assert m["win_rate"] == pytest.approx((3 + 2 * 0.5) / 8)
    assert [pw.VERDICT_SCORE[v] for v in ("WIN", "TIE", "ERROR")] == [1.0, 0.5, 0.0]


def test_pairwise_judge_requests():
    row = {
        "question_id": 81,
        "prompts": [{"text": "คำถามหนึ่ง"}, {"text": "คำถามสอง"}],
        "metadata": {"category": "math"},
        "baselines": {"gpt-4.1-2025-04-14": ["ฐานหนึ่ง", "ฐานสอง"]},
        "references": ["อ้างอิงหนึ่ง", "อ้างอิงสอง"],
    }
    convs = pw.judge_conversations(row, ["ตอบหนึ่ง", "ตอบสอง"])
    assert [c for c, _ in convs] == [
        "81_turn1_baseline-before",
        "81_turn1_baseline-after",
        "81_turn2_baseline-before",
        "81_turn2_baseline-after",
    ]
    before1 = convs[0][1][1]["content"]
    assert before1 == (
        "[User Question]\nคำถามหนึ่ง\n\n[The Start of Reference Answer]\nอ้างอิงหนึ่ง\n[The End of Reference Answer]\n\n"
        "[The Start of Assistant A's Answer]\nฐานหนึ่ง\n[The End of Assistant A's Answer]\n\n"
        "[The Start of Assistant B's Answer]\nตอบหนึ่ง\n[The End of Assistant B's Answer]"
    )
    assert '"[[A]]" if assistant A is better' in convs[0][1][0]["content"]
    after2 = convs[3][1][1]["content"]
    assert "### Assistant A:\nตอบสอง" in after2 and "### Reference answer:\nอ้างอิงสอง" in after2
    replies = {cid: reply for (cid, _), reply in zip(convs, ["[[B]]", "[[A]]", "[[A]]", "[[C]]"], strict=True)}
    assert _verdicts(replies, 2, "81") == ["WIN", "TIE"]
    with pytest.raises(ThaiEvalDataError, match="baseline"):
        pw.judge_conversations({**row, "baselines": {}}, ["a", "b"])
