"""Dialect metrics: paper BLEU / ROUGE-L on newmm tokens (hand-computed cases, nltk parity), sacrebleu,
ΔDiff, Table 1 layout and word overlap."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from rouge_score import rouge_scorer

from thai_eval_utils.dialect import metrics as M
from thai_eval_utils.dialect import tokenizers as T

REPO = Path(__file__).resolve().parents[1]


def test_newmm_tokenizer_keeps_whitespace_runs_as_tokens():
    tok = T.get_tokenizer("newmm")
    assert tok.tokenize("ฉัน กิน ข้าว") == ["ฉัน", " ", "กิน", " ", "ข้าว"]
    assert tok.tokenize("สวัสดี  ครับ") == ["สวัสดี", "  ", "ครับ"]  # a run stays one token
    assert tok.tokenize(None) == []
    assert tok.signature == "tok:newmm|keep_ws:yes|pythainlp:5.0.4"


def test_pythainlp_is_the_papers_version():
    assert T.pythainlp_version() == T.PAPER_PYTHAINLP_VERSION == "5.0.4"


def test_tokenizer_registry_names_and_one_instance_each():
    assert T.tokenizer_names() == ["longest", "newmm", "whitespace"] and T.DEFAULT_TOKENIZER == "newmm"
    assert T.get_tokenizer() is T.get_tokenizer("newmm")  # built once
    assert T.get_tokenizer("longest").tokenize("สวัสดี  ครับ") == ["สวัสดี", " ", " ", "ครับ"]  # one token per space
    assert T.get_tokenizer("whitespace").tokenize(" แมวกินปลา  ตอนเช้า ") == ["แมวกินปลา", "ตอนเช้า"]
    assert T.get_tokenizer("longest").signature == "tok:longest|keep_ws:yes|pythainlp:5.0.4"
    assert T.get_tokenizer("whitespace").signature == "tok:whitespace|keep_ws:no"


def test_unknown_tokenizer_names_the_registered_ones():
    message = "unknown word tokenizer 'deepcut'; registered: longest, newmm, whitespace"
    for call in (
        lambda: T.get_tokenizer("deepcut"),
        lambda: M.bleu(["ก"], ["ก"], tokenizer="deepcut"),
        lambda: M.rouge_l(["ก"], ["ก"], tokenizer="deepcut"),
    ):
        with pytest.raises(ValueError) as err:
            call()
        assert str(err.value) == message


def test_a_pythainlp_tokenizer_warns_under_another_version(monkeypatch):
    monkeypatch.setattr(T, "pythainlp_version", lambda: "5.4.0")
    with pytest.warns(UserWarning, match="pythainlp 5.4.0 is installed; the paper's scores used 5.0.4"):
        tok = T._pythainlp("newmm", "newmm")()
    assert tok.signature == "tok:newmm|keep_ws:yes|pythainlp:5.4.0"


def _references(df: pd.DataFrame, dialect: str, task: str) -> list[str]:
    return list(df[(df["dialect"] == dialect) & (df["task"] == task)].sort_values("id")["text_2"])


def test_default_tokenizer_reproduces_the_scores_before_the_registry():
    """On data/dialect, Central references scored against each dialect's parallel references: the values the code
    before the tokenizer registry (commit 2dce311, NewmmTokenizer built per call) gave, to the last bit; and every
    text of the samples tokenises as pythainlp.word_tokenize(engine="newmm") does."""
    from pythainlp import word_tokenize

    from thai_eval_utils.dialect.data import load_dialect

    df = load_dialect(REPO / "data" / "dialect")
    before = {
        "east": (65.85478351435798, 12.146614460392835),
        "north": (58.754623502663826, 8.903254989974647),
        "south": (70.21821164889253, 12.365744378941685),
    }
    for dialect, (summary_rouge, translation_bleu) in before.items():
        assert (
            M.rouge_l(_references(df, "center", "summarization"), _references(df, dialect, "summarization"))
            == summary_rouge
        )
        hyps, refs = (
            _references(df, "center", "translation_eng_center"),
            _references(df, dialect, f"translation_eng_{dialect}"),
        )
        assert M.bleu(hyps, refs) == translation_bleu
        assert M.bleu(hyps, refs, tokenizer="newmm") == translation_bleu
    tok = T.get_tokenizer()
    texts = [t for col in ("text_1", "text_2", "question", "context") for t in df[col] if isinstance(t, str)]
    assert len(texts) > 100 and all(
        tok.tokenize(t) == word_tokenize(t, engine="newmm", keep_whitespace=True) for t in texts
    )


def test_other_tokenizers_give_other_hand_checked_scores():
    # whitespace: ไป กิน ข้าว กับ แม่ (c=5) vs ... ที่ บ้าน (r=7): every n-gram matches, BP = exp(1 - 7/5).
    # newmm counts the 4 and 6 spaces too: c=9, r=13, BP = exp(1 - 13/9).
    hyp, ref = ["ไป กิน ข้าว กับ แม่"], ["ไป กิน ข้าว กับ แม่ ที่ บ้าน"]
    ws = M.bleu_details(hyp, ref, tokenizer="whitespace")
    assert (ws.hyp_len, ws.ref_len, ws.score) == (5, 7, pytest.approx(100 * math.exp(-0.4)))
    assert ws.signature == "bleu|nmt|max_order:4|smooth:none|tok:whitespace|keep_ws:no"
    assert M.bleu(hyp, ref) == pytest.approx(100 * math.exp(1 - 13 / 9))
    # ROUGE-L, newmm: สวัสดี _ ครับ vs สวัสดี __ ครับ (a run of two spaces is one token): LCS 2 of 3 and 3 -> F = 2/3.
    # longest: สวัสดี _ ครับ vs สวัสดี _ _ ครับ: LCS 3, P = 1, R = 3/4 -> F = 6/7.
    assert M.rouge_l(["สวัสดี ครับ"], ["สวัสดี  ครับ"]) == pytest.approx(100 * 2 / 3)
    assert M.rouge_l(["สวัสดี ครับ"], ["สวัสดี  ครับ"], tokenizer="longest") == pytest.approx(100 * 6 / 7)
    # whitespace: แมวกินปลา is one word, no match with แมว กิน ปลา; newmm: LCS 3, P = 1, R = 3/5 -> F = 0.75.
    assert M.rouge_l(["แมวกินปลา"], ["แมว กิน ปลา"], tokenizer="whitespace") == 0.0
    assert M.rouge_l(["แมวกินปลา"], ["แมว กิน ปลา"]) == pytest.approx(75.0)
    scores = {s.name: s for s in M.task_scores("qa", ["สวัสดี ครับ"], ["สวัสดี  ครับ"], tokenizer="longest")}
    assert scores["rougeL"].value == pytest.approx(100 * 6 / 7)
    assert scores["rougeL"].signature == "rougeL|rouge-score|f1-mean|tok:longest|keep_ws:yes|pythainlp:5.0.4"
    assert scores["bleu"].signature.endswith("|tok:longest|keep_ws:yes|pythainlp:5.0.4")
    assert scores["sacrebleu"].signature.endswith("|pretok:longest-nows|pythainlp:5.0.4")


def test_bleu_whitespace_tokens_count_and_brevity_penalty():
    # hyp: ฉัน _ กิน _ ข้าว (c=5); ref: ฉัน _ กิน _ ข้าว _ แล้ว (r=7). Every hyp n-gram occurs in the ref:
    # p1..p4 = 5/5, 4/4, 3/3, 2/2; BP = exp(1 - 7/5).
    r = M.bleu_details(["ฉัน กิน ข้าว"], ["ฉัน กิน ข้าว แล้ว"])
    assert (r.hyp_len, r.ref_len) == (5, 7)
    assert r.matches == (5, 4, 3, 2) and r.possible == (5, 4, 3, 2)
    assert r.bp == pytest.approx(math.exp(-0.4))
    assert r.score == pytest.approx(100 * math.exp(-0.4))  # 67.032...
    assert M.bleu(["ฉัน กิน ข้าว"], ["ฉัน กิน ข้าว แล้ว"]) == pytest.approx(67.0320046)
    assert str(r).startswith(
        "BLEU = 67.03 100.0/100.0/100.0/100.0 (BP = 0.670 ratio = 0.714 hyp_len = 5 ref_len = 7) bleu|nmt"
    )
    assert json.loads(json.dumps(r.to_dict()))["matches"] == [5, 4, 3, 2]


def test_bleu_clips_counts_and_sums_over_the_corpus():
    # pair 1: ดี _ ดี _ ดี _ ดี (7) vs ดี _ มาก (3): clipped 1-gram matches 1 (ดี) + 1 (_) = 2 of 7,
    #         2-grams 1 of 6 ((ดี,_)), 3-grams 0 of 5, 4-grams 0 of 4.
    # pair 2: identical 7 tokens: 7/7, 6/6, 5/5, 4/4.  c = 14 > r = 10, so BP = 1.
    hyps = ["ดี ดี ดี ดี", "ไป ตลาด กับ แม่"]
    refs = ["ดี มาก", "ไป ตลาด กับ แม่"]
    r = M.bleu_details(hyps, refs)
    assert r.matches == (9, 7, 5, 4) and r.possible == (14, 12, 10, 8)
    assert r.bp == 1.0
    expected = 100 * (9 / 14 * 7 / 12 * 5 / 10 * 4 / 8) ** 0.25
    assert r.score == pytest.approx(expected)
    assert r.score == pytest.approx(55.3341, abs=1e-4)


def test_bleu_identical_and_short_and_empty():
    assert M.bleu(["แมว กิน ปลา"], ["แมว กิน ปลา"]) == pytest.approx(100.0)  # 5 tokens
    # 3 tokens (แมว/กิน/ปลา without spaces): no 4-gram is possible, p4 = 0, so BLEU is 0 even when identical.
    assert M.bleu(["แมวกินปลา"], ["แมวกินปลา"]) == 0.0
    # every hypothesis empty: c = 0 (nmt divides by zero; the paper's code reports 0)
    assert M.bleu(["", None], ["ไป ตลาด", "กิน ข้าว"]) == 0.0
    # one empty hypothesis only shortens the corpus: p_n = 1, c = 7, r = 5 + 7, BP = exp(1 - 12/7)
    assert M.bleu(["", "ไป ตลาด กับ แม่"], ["ฉัน กิน ข้าว", "ไป ตลาด กับ แม่"]) == pytest.approx(100 * math.exp(1 - 12 / 7))
    with pytest.raises(ValueError):
        M.bleu([], [])
    with pytest.raises(ValueError):
        M.bleu(["a"], ["a", "b"])


def test_bleu_english_target_is_case_sensitive_newmm():
    # tokens: The _ cat _ sat _ on _ the _ mat .  (12) vs The _ cat _ is _ on _ the _ mat . (12)
    # p1 = 11/12, p2 = 9/11, p3 = 7/10, p4 = 5/9, BP = 1 -> BLEU = 100 * (35/120)^(1/4)
    r = M.bleu_details(["The cat sat on the mat."], ["The cat is on the mat."])
    assert r.matches == (11, 9, 7, 5) and r.possible == (12, 11, 10, 9)
    assert r.score == pytest.approx(100 * (35 / 120) ** 0.25)
    assert M.bleu(["the cat sat on the mat."], ["The cat sat on the mat."]) < 100


def test_bleu_matches_nltk_corpus_bleu_on_thai_tokens():
    from nltk.translate.bleu_score import corpus_bleu

    refs, hyps = [], []
    for dialect in ("east", "north", "south"):
        for line in (
            (REPO / "data" / "dialect" / dialect / "summarization.jsonl").read_text(encoding="utf-8").splitlines()
        ):
            ref = json.loads(line)["text_2"]
            refs.append(ref)
            tokens = T.get_tokenizer("newmm").tokenize(ref)
            hyps.append("".join(tokens[: max(4, len(tokens) * 2 // 3)]) + " เด้อ")  # a shortened, altered copy
    ours = M.bleu(hyps, refs)
    tok = T.get_tokenizer("newmm")
    # nltk counts at least one possible n-gram per sentence; every hypothesis here has >= 4 tokens, so both agree.
    theirs = 100 * corpus_bleu([[tok.tokenize(r)] for r in refs], [tok.tokenize(h) for h in hyps])
    assert 0 < ours < 100
    assert ours == pytest.approx(theirs, rel=1e-12)


def test_rouge_l_hand_computed_with_whitespace_tokens():
    # ฉัน _ กิน _ ข้าว vs ฉัน _ กิน _ ข้าว _ แล้ว: LCS 5, P = 1, R = 5/7, F = 10/12
    # แมว _ กิน _ ปลา vs ปลา _ กิน _ แมว: LCS (_ กิน _) 3, P = R = 3/5, F = 0.6
    per_item = M.rouge_l_scores(["ฉัน กิน ข้าว", "แมว กิน ปลา"], ["ฉัน กิน ข้าว แล้ว", "ปลา กิน แมว"])
    assert per_item == pytest.approx([100 * 10 / 12, 60.0])
    assert M.rouge_l(["ฉัน กิน ข้าว", "แมว กิน ปลา"], ["ฉัน กิน ข้าว แล้ว", "ปลา กิน แมว"]) == pytest.approx(
        (100 * 10 / 12 + 60) / 2
    )
    assert M.rouge_l(["สวัสดีครับ"], ["สวัสดีครับ"]) == 100.0
    assert M.rouge_l([""], ["สวัสดีครับ"]) == 0.0
    assert M.rouge_l([None], ["สวัสดีครับ"]) == 0.0


def test_rouge_score_default_tokenizer_pitfall_on_thai():
    default = rouge_scorer.RougeScorer(["rougeL"])
    assert default.score("สวัสดีครับ", "สวัสดีครับ")["rougeL"].fmeasure == 0.0  # Thai deleted entirely
    assert default.score("ปี 2567 ดี", "ปี 2567 แย่")["rougeL"].fmeasure == 1.0  # only "2567" survives
    assert M.rouge_l(["สวัสดีครับ"], ["สวัสดีครับ"]) == 100.0
    # ours: ปี _ 2567 _ ดี vs ปี _ 2567 _ แย่: LCS 4 of 5 -> F = 0.8
    assert M.rouge_l(["ปี 2567 แย่"], ["ปี 2567 ดี"]) == pytest.approx(80.0)


def test_sacrebleu_drops_whitespace_tokens_and_carries_signature():
    th = M.metric_score(M.PaperSacreBleu(), ["ไป ตลาด กับ แม่"], ["ไปตลาดกับแม่"])
    assert th.value == pytest.approx(100.0)  # the same 4 words once whitespace tokens are dropped
    assert "tok:none" in th.signature and "pythainlp:5.0.4" in th.signature and th.n == 1
    # the paper's BLEU sees the space tokens: no hypothesis bigram occurs in the reference
    assert M.bleu(["ไป ตลาด กับ แม่"], ["ไปตลาดกับแม่"]) == 0.0
    en = M.metric_score(M.PaperSacreBleu("en"), ["The cat sat on the mat."], ["The cat sat on the mat."])
    assert en.value == pytest.approx(100.0) and "tok:13a" in en.signature
    chrf = M.metric_score(M.PaperChrF(), ["ไปตลาดกับแม่"], ["ไป ตลาด กับ แม่"])
    assert chrf.value == pytest.approx(100.0) and chrf.signature.startswith("chrF|") and "nw:0" in chrf.signature


def test_task_scores_names_and_values():
    scores = {s.name: s for s in M.task_scores("qa", ["ฉัน กิน ข้าว"], ["ฉัน กิน ข้าว แล้ว"])}
    assert set(scores) == {"rougeL", "bleu", "sacrebleu", "chrf"}
    assert scores["rougeL"].value == pytest.approx(100 * 10 / 12)
    assert scores["bleu"].value == pytest.approx(100 * math.exp(-0.4))
    assert "pythainlp:5.0.4" in scores["rougeL"].signature and "pythainlp:5.0.4" in scores["bleu"].signature
    assert (
        "tok:13a" in {s.name: s for s in M.task_scores("translation_east_eng", ["a b"], ["a b"])}["sacrebleu"].signature
    )


def test_task_families():
    assert M.table_task("translation_eng_east") == "translation_en_to_dialect"
    assert M.table_task("translation_south_eng") == "translation_dialect_to_en"
    assert M.table_task("translation_eng_center") == "translation_en_to_dialect"
    assert M.table_task("qa") == "qa"
    assert M.target_language("translation_north_eng") == "en" and M.target_language("translation_eng_north") == "th"


def _scores() -> pd.DataFrame:
    rows = [
        ("m1", "center", "qa", "rougeL", 40.0),
        ("m1", "east", "qa", "rougeL", 31.5),
        ("m1", "north", "qa", "rougeL", 42.0),
        ("m1", "center", "translation_eng_center", "bleu", 20.0),
        ("m1", "east", "translation_eng_east", "bleu", 5.25),
        ("m1", "center", "translation_center_eng", "bleu", 30.0),
        ("m1", "east", "translation_east_eng", "bleu", 12.0),
        ("m1", "center", "summarization", "rougeL", 18.0),
        ("m1", "east", "summarization", "rougeL", 17.0),
        ("m2", "center", "qa", "rougeL", 10.0),
        ("m2", "south", "qa", "rougeL", 4.0),
    ]
    return pd.DataFrame(rows, columns=["model", "dialect", "task", "metric", "value"])


def test_delta_diff_is_central_minus_dialect():
    d = M.delta_diff(_scores()).set_index(["model", "dialect", "task", "metric"])["delta"]
    assert d[("m1", "east", "qa", "rougeL")] == pytest.approx(8.5)
    assert d[("m1", "north", "qa", "rougeL")] == pytest.approx(-2.0)  # better in the dialect
    assert d[("m1", "east", "translation_en_to_dialect", "bleu")] == pytest.approx(14.75)
    assert d[("m1", "east", "translation_dialect_to_en", "bleu")] == pytest.approx(18.0)
    assert d[("m2", "south", "qa", "rougeL")] == pytest.approx(6.0)
    assert len(d) == 6 and "center" not in d.index.get_level_values("dialect")


def test_table1_layout():
    t = M.table1_layout(_scores())
    assert list(t.columns) == [
        "model",
        "dialect",
        "qa_rougeL",
        "qa_delta",
        "summarization_rougeL",
        "summarization_delta",
        "translation_en_to_dialect_bleu",
        "translation_en_to_dialect_delta",
        "translation_dialect_to_en_bleu",
        "translation_dialect_to_en_delta",
    ]
    assert list(zip(t["model"], t["dialect"])) == [
        ("m1", "Central"),
        ("m1", "Isan"),
        ("m1", "Lanna"),
        ("m2", "Central"),
        ("m2", "Dambro"),
    ]
    isan = t.iloc[1]
    assert (isan["qa_rougeL"], isan["qa_delta"]) == (31.5, 8.5)
    assert (isan["summarization_rougeL"], isan["summarization_delta"]) == (17.0, 1.0)
    assert (isan["translation_en_to_dialect_bleu"], isan["translation_en_to_dialect_delta"]) == (5.25, 14.75)
    assert math.isnan(t.iloc[0]["qa_delta"]) and t.iloc[0]["qa_rougeL"] == 40.0
    assert math.isnan(t.iloc[2]["summarization_rougeL"])  # Lanna has no summarisation score


def test_word_overlap_type_token_sentence_corpus():
    d = ["ไป กิน ข้าว เด้อ", "กิน กิน เด้อ"]
    c = ["ไป กิน ข้าว นะ", "กิน ข้าว"]
    # pair 1: types {ไป, กิน, ข้าว, เด้อ}: 3 of 4 in Central. pair 2: types {กิน, เด้อ}: 1 of 2; tokens กิน กิน เด้อ: 2 of 3
    assert M.word_overlap(d, c) == pytest.approx((3 / 4 + 1 / 2) / 2)
    assert M.word_overlap(d, c, level="corpus") == pytest.approx(4 / 6)
    assert M.word_overlap(d, c, unit="token") == pytest.approx((3 / 4 + 2 / 3) / 2)
    assert M.word_overlap(d, c, unit="token", level="corpus") == pytest.approx(5 / 7)
    # Central words found in the dialect text: {ไป, กิน, ข้าว, นะ} 3/4; {กิน, ข้าว} 1/2
    assert M.word_overlap(d, c, denominator="central") == pytest.approx((3 / 4 + 1 / 2) / 2)
    assert M.word_overlap(["ข้าว"], ["ข้าว"]) == 1.0
    with pytest.raises(ValueError):
        M.word_overlap(d, c, unit="char")
