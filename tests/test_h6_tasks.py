"""Exact prompts and requests of the six Thai-H6 tasks, built from small hand-written docs."""

from __future__ import annotations

import pytest

from thai_eval_utils.h6 import prompts as P
from thai_eval_utils.h6 import tasks as T
from thai_eval_utils.h6.protocol import LM_EVAL, gsm8k_stops


def _arc(q, texts, key):
    return {"question": q, "choices": {"text": texts, "label": list("ABCD"[: len(texts)])}, "answerKey": key}


def test_arc_prompt_with_shots_and_numeric_key():
    spec = T.get_task("th_arc")
    shot1 = _arc("ดวงอาทิตย์ขึ้นทางไหน", ["ทิศตะวันออก", "ทิศตะวันตก"], "A")
    shot2 = _arc("น้ำแข็งละลายเป็นอะไร", ["ไอ", "น้ำ"], "2")
    doc = _arc("พืชใช้อะไรสังเคราะห์แสง", ["แสงแดด", "ดิน", "ลม"], "1")
    r = T.build_requests(spec, doc, [shot1, shot2], spec.templates)
    expected = (
        "Question: ดวงอาทิตย์ขึ้นทางไหน\nAnswer: ทิศตะวันออก\n\n"
        "Question: น้ำแข็งละลายเป็นอะไร\nAnswer: น้ำ\n\n"
        "Question: พืชใช้อะไรสังเคราะห์แสง\nAnswer:"
    )
    assert r.prompt == expected
    assert r.requests == ((expected, " แสงแดด"), (expected, " ดิน"), (expected, " ลม"))
    assert T.gold(spec, doc) == 0 and T.gold(spec, shot2) == 1
    assert T.gold(spec, _arc("q", ["a", "b", "c", "d"], "D")) == 3
    with pytest.raises(T.DocError, match="answerKey"):
        T.gold(spec, _arc("q", ["a", "b"], "F"))


def test_hellaswag_preprocess_and_capitalize():
    spec = T.get_task("th_hellaswag")
    shot = {
        "activity_label": "ทำอาหาร",
        "ctx_a": "How to cook [title] Heat the pan",
        "ctx_b": "THEN add oil",
        "endings": ["อย่างนั้น [step] ผัด", "แล้วทอด  ไข่ "],
        "label": "1",
    }
    doc = {"activity_label": "กีฬา", "ctx_a": "เขาวิ่ง", "ctx_b": "แล้ว", "endings": ["หยุด", "กระโดด [header]"], "label": 0}
    assert spec.choices(shot) == ["อย่างนั้น ผัด", "แล้วทอด ไข่"]
    r = T.build_requests(spec, doc, [shot], spec.templates)
    # " [title]" -> ". ", then the double space collapses; ctx_b.capitalize() lower-cases the rest
    expected = "ทำอาหาร: How to cook. Heat the pan Then add oil แล้วทอด ไข่\n\nกีฬา: เขาวิ่ง แล้ว"
    assert r.prompt == expected
    # LB strips before deleting "[...]", so a bracket at the end leaves a trailing space
    assert r.requests == ((expected, " หยุด"), (expected, " กระโดด "))


def test_mmlu_description_and_options():
    spec = T.get_task("th_mmlu")
    shot = {"question": "1+1 เท่ากับเท่าไร", "choices": ["1", "2", "3", "4"], "answer": 1, "subject": "high_school_math"}
    doc = {
        "question": "  2+2 เท่ากับเท่าไร ",
        "choices": ["4", "5", "6", "7"],
        "answer": "A",
        "subject": "high_school_math",
    }
    r = T.build_requests(spec, doc, [shot], spec.templates)
    expected = (
        "The following are multiple choice questions (with answers) about high school math.\n\n"
        "1+1 เท่ากับเท่าไร\nA. 1\nB. 2\nC. 3\nD. 4\nAnswer: B\n\n"
        "2+2 เท่ากับเท่าไร\nA. 4\nB. 5\nC. 6\nD. 7\nAnswer:"
    )
    assert r.prompt == expected
    assert [c for _, c in r.requests] == [" A", " B", " C", " D"]
    assert T.gold(spec, doc) == 0 and T.gold(spec, {**doc, "answer": "3"}) == 3


def test_truthfulqa_preamble_and_targets():
    spec = T.get_task("th_truthfulqa")
    doc = {
        "question": "แตงโมงอกในท้องไหม",
        "mc1_targets": {"choices": ["ไม่งอก", "งอก"], "labels": [1, 0]},
        "mc2_targets": {"choices": ["ไม่งอก", "งอก", "ไม่มีอะไรเกิดขึ้น"], "labels": [1, 0, 1]},
    }
    r = T.build_requests(spec, doc, [], spec.templates)
    assert P.TRUTHFULQA_QA_PROMPT.startswith("Q: What is human life expectancy in the United States?\nA: ")
    assert P.TRUTHFULQA_QA_PROMPT.endswith("A: The 1992 Olympics were held in Barcelona, Spain.")
    assert P.TRUTHFULQA_QA_PROMPT.count("\n\nQ: ") == 5
    assert r.prompt == P.TRUTHFULQA_QA_PROMPT + "\n\nQ: แตงโมงอกในท้องไหม\nA:"
    assert [c for _, c in r.requests] == [" ไม่งอก", " งอก", " ไม่งอก", " งอก", " ไม่มีอะไรเกิดขึ้น"]
    import math

    lls = [-1.0, -2.0, math.log(0.2), math.log(0.5), math.log(0.3)]
    out = T.process_results(spec, doc, lls)
    assert out["mc1"] == 1.0 and out["mc2"] == pytest.approx(0.2) and out["mc2_mask"] == pytest.approx(0.5)
    assert T.process_results(spec, doc, lls, protocol=LM_EVAL)["mc2"] == pytest.approx(0.5)


def test_winogrande_partial_scoring_with_shot():
    spec = T.get_task("th_winogrande")
    shot = {"sentence": "แมวไล่หนูเพราะ_หิว", "option1": "แมว", "option2": "หนู", "answer": "1"}
    doc = {"sentence": "ครูชมนักเรียนเพราะ _ ตั้งใจเรียน", "option1": "ครู", "option2": "นักเรียน", "answer": 2}
    r = T.build_requests(spec, doc, [shot], spec.templates)
    assert r.requests == (
        ("แมวไล่หนูเพราะแมว หิว\n\nครูชมนักเรียนเพราะ ครู", " ตั้งใจเรียน"),
        ("แมวไล่หนูเพราะแมว หิว\n\nครูชมนักเรียนเพราะ นักเรียน", " ตั้งใจเรียน"),
    )
    assert T.gold(spec, doc) == 1
    assert T.process_results(spec, doc, [-3.0, -2.5]) == {"gold": 1, "pred": 1, "acc": 1.0}


def test_winogrande_blank_at_the_end():
    spec = T.get_task("th_winogrande")
    doc = {"sentence": "สิ่งที่ฉันชอบที่สุดคือ_", "option1": "แมว", "option2": "หมา", "answer": "2"}
    r = T.build_requests(spec, doc, [], spec.templates)
    assert r.requests == (("สิ่งที่ฉันชอบที่สุดคือแมว", " "), ("สิ่งที่ฉันชอบที่สุดคือหมา", " "))
    # as a few-shot example its target is empty: text + " " + ""
    assert spec.context({"sentence": "x_y", "option1": "a", "option2": "b", "answer": "1"}, [doc], {}) == (
        "สิ่งที่ฉันชอบที่สุดคือหมา \n\nxa"
    )
    with pytest.raises(T.DocError, match="no '_' blank"):
        T.build_requests(spec, {**doc, "sentence": "ไม่มีช่อง"}, [], {})


def test_gsm8k_prompt_and_stops():
    spec = T.get_task("th_gsm8k")
    shot = {"question": "มีส้ม 3 ผล กินไป 1 ผล เหลือกี่ผล", "answer": "3-1 = <<3-1=2>>2\n#### 2"}
    doc = {"question": "มีไข่ 12 ฟอง ใช้ไป 5 ฟอง", "answer": "#### 7"}
    r = T.build_requests(spec, doc, [shot], spec.templates)
    assert r.prompt == (
        "Question: มีส้ม 3 ผล กินไป 1 ผล เหลือกี่ผล\nAnswer: 3-1 = <<3-1=2>>2\n#### 2\n\n"
        "Question: มีไข่ 12 ฟอง ใช้ไป 5 ฟอง\nAnswer:"
    )
    assert r.requests == ()
    assert gsm8k_stops("lb") == (":", "Question:", "Question")
    assert gsm8k_stops("h") == ("Question:", "</s>", "<|im_end|>")
    assert gsm8k_stops(["\n\n"]) == ("\n\n",)
    assert T.process_results(spec, doc, " ใช้ไป 5 เหลือ 7 #### 7")["exact_match"] == 1.0


def test_template_override_and_errors():
    spec = T.get_task("arc")
    tmpl = T.templates_for(spec, {"query": "คำถาม: {question}\nคำตอบ:"})
    doc = _arc("ฟ้าสีอะไร", ["ฟ้า", "แดง"], "A")
    assert T.build_requests(spec, doc, [], tmpl).prompt == "คำถาม: ฟ้าสีอะไร\nคำตอบ:"
    with pytest.raises(ValueError, match="has no template 'prompt'"):
        T.templates_for(spec, {"prompt": "x"})
    with pytest.raises(ValueError, match="unknown Thai-H6 task"):
        T.get_task("th_piqa")
    with pytest.raises(T.DocError, match="missing column 'question'"):
        T.build_requests(spec, {"choices": {"text": ["a"], "label": ["A"]}, "answerKey": "A"}, [], tmpl)


def test_prompt_hash_changes_with_any_request():
    spec = T.get_task("th_arc")
    a = T.build_requests(spec, _arc("q", ["x", "y"], "A"), [], spec.templates)
    b = T.build_requests(spec, _arc("q", ["x", "z"], "A"), [], spec.templates)
    assert a.sha256 != b.sha256 and len(a.sha256) == 64


def test_specs_carry_their_behaviour():
    """Limit, few-shot pool, config keys and headline come from the spec (MMLU: per subject)."""
    from thai_eval_utils.h6.protocol import LEADERBOARD

    mmlu, arc, tqa, gsm = (T.get_task(t) for t in ("th_mmlu", "th_arc", "th_truthfulqa", "th_gsm8k"))
    docs = [{"subject": s} for s in ("a", "a", "b", "b", "b", "c")]
    assert mmlu.select(docs, 1) == [0, 2, 5] and mmlu.select(docs, 2) == [0, 1, 2, 3, 5]
    assert arc.select(docs, 2) == [0, 1] and arc.select(docs, None) == list(range(6))
    pools = {"a": [{"q": 1}], "b": [{"q": 2}, {"q": 3}]}
    assert mmlu.pool_for(pools, docs[3]) == [{"q": 2}, {"q": 3}] and mmlu.pool_for(pools, docs[5]) == []
    assert arc.pool_for([{"q": 1}], docs[0]) == [{"q": 1}] and arc.pool_for(None, docs[0]) == []
    assert mmlu.config(LM_EVAL) == {"mmlu_average": "micro"} and arc.config(LM_EVAL) == {}
    assert tqa.config(LM_EVAL) == {"mc2": "mask"}
    assert gsm.config(LEADERBOARD) == {
        "gsm8k_stops": [":", "Question:", "Question"],
        "max_new_tokens": 256,
        "decoding": "greedy",
    }
    assert mmlu.sampler(LM_EVAL) == ("first_n", None) and tqa.sampler(LEADERBOARD) == ("none", None)
    assert arc.sampler(LM_EVAL) == ("h", 1234) and arc.sampler(LEADERBOARD.replace(fewshot_seed=3)) == ("lb", 3)
    assert [T.get_task(t).headline for t in T.TASKS] == ["acc_norm", "acc_norm", "acc", "mc2", "acc", "exact_match"]
    assert not gsm.uses_loglikelihood and arc.uses_loglikelihood
