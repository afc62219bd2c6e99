"""The Thai LLM Leaderboard's generation tasks (spec thai_llm_leaderboard.md 3): prompts as the runner's to_prompt
fills them, its metrics (BLEU, chrF, ROUGE with the replayed bootstrap median), resumable runs, the thinking rule."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import sacrebleu
from rouge_score import rouge_scorer, scoring

from tests.fakes import FakeModel
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.thai_llm_leaderboard import nlg_metrics as M
from thai_eval_utils.thai_llm_leaderboard.generation import (
    NLG_TASKS,
    GenerationOptions,
    encode,
    fill_prompt,
    gold_of,
    load_nlg_rows,
    nlg_task,
    render,
    run_nlg_task,
    stop_ids,
    terminator_ids,
)

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data" / "thai_llm_leaderboard"


def _first(task_key: str) -> dict:
    with open(DATA / nlg_task(task_key).data_file, encoding="utf-8") as f:
        return json.loads(f.readline())


# --------------------------------------------------------------------------------------------- prompts
def test_prompts_byte_for_byte_on_real_rows():
    iapp = _first("iapp_squad_seacrowd_qa")
    assert fill_prompt(nlg_task("iapp_squad_seacrowd_qa"), iapp) == (
        iapp["context"].strip() + "\n---\nคำถาม: " + iapp["question"].strip() + "\nคำตอบ: "
    )  # trailing space
    fl = _first("flores200_eng_Latn_tha_Thai_seacrowd_t2t")
    assert fill_prompt(nlg_task("flores200_eng_Latn_tha_Thai_seacrowd_t2t"), fl) == (
        "แปลข้อความต่อไปนี้จาก English เป็น Thai ให้การแปลของคุณโดยตรงโดยไม่ต้องมีข้อมูลเพิ่มเติมใดๆ\nข้อความ: "
        '"We now have 4-month-old mice that are non-diabetic that used to be diabetic," he added.\nคำแปล:'
    )
    back = _first("flores200_tha_Thai_eng_Latn_seacrowd_t2t")
    assert fill_prompt(nlg_task("flores200_tha_Thai_eng_Latn_seacrowd_t2t"), back).startswith(
        "แปลข้อความต่อไปนี้จาก Thai เป็น English ให้"
    )
    xl = _first("xl_sum_tha_seacrowd_t2t")
    assert (
        fill_prompt(nlg_task("xl_sum_tha_seacrowd_t2t"), xl)
        == "จงสรุปข้อความด้านล่าง\nข้อความ: " + xl["text_1"].strip() + "\nสรุป:"
    )
    assert list(NLG_TASKS) == [
        "xl_sum_tha_seacrowd_t2t",
        "flores200_eng_Latn_tha_Thai_seacrowd_t2t",
        "flores200_tha_Thai_eng_Latn_seacrowd_t2t",
        "iapp_squad_seacrowd_qa",
    ]


def test_prompt_replacement_order_and_unstripped_gold():
    # to_prompt replaces [INPUT] first, so a source text holding "[SOURCE]" is rewritten by the next replacement
    task = nlg_task("flores200_eng_Latn_tha_Thai_seacrowd_t2t")
    assert "ข้อความ: from English\n" in fill_prompt(task, {"text_1": "  from [SOURCE]\n", "text_2": "x"})
    assert gold_of({"text_1": "a", "text_2": "\nคำตอบ "}) == "\nคำตอบ "  # quirk 18: golds unstripped
    assert gold_of({"answer": [" ปลา", "x"], "context": "", "question": "q"}) == " ปลา"
    qa = fill_prompt(nlg_task("iapp_squad_seacrowd_qa"), {"context": " บริบท\n", "question": " ถาม ", "answer": ["x"]})
    assert qa == "บริบท\n---\nคำถาม: ถาม\nคำตอบ: "


def test_bad_rows_are_named(tmp_path):
    path = tmp_path / "iapp_squad_seacrowd_qa_test.jsonl"
    path.write_text(
        '{"id": "a", "context": "c", "question": "q", "answer": ["x"]}\n'
        '{"id": "b", "context": "c", "question": "q", "answer": []}\n',
        encoding="utf-8",
    )
    with pytest.raises(ThaiEvalDataError) as err:
        load_nlg_rows(nlg_task("iapp_squad_seacrowd_qa"), path)
    assert err.value.row == 1 and err.value.field == "answer" and "answer[0]" in str(err.value)
    t2t = tmp_path / "x.jsonl"
    t2t.write_text('{"id": "a", "text_1": "   ", "text_2": "y"}\n', encoding="utf-8")
    with pytest.raises(ThaiEvalDataError) as err:
        load_nlg_rows(nlg_task("xl_sum_tha_seacrowd_t2t"), t2t)
    assert err.value.row == 0 and err.value.field == "text_1"
    dup = tmp_path / "d.jsonl"
    dup.write_text(
        '{"id": "a", "text_1": "x", "text_2": "y"}\n{"id": "a", "text_1": "x", "text_2": "y"}\n', encoding="utf-8"
    )
    with pytest.raises(ThaiEvalDataError, match="also on row 0"):
        load_nlg_rows(nlg_task("xl_sum_tha_seacrowd_t2t"), dup)


# --------------------------------------------------------------------------------------------- metrics
def test_newmm_tokens_keep_whitespace_as_in_the_spec():
    assert M.newmm_tokens("แมวกินปลา ที่บ้าน\nวันนี้") == ["แมว", "กิน", "ปลา", " ", "ที่", "บ้าน", "\n", "วันนี้"]
    assert M.newmm_tokens("he  added") == ["he", "  ", "added"]


def test_bleu_hand_computed():
    # tokens: the _ cat _ sat _ on _ the _ mat (11) vs the _ cat _ sat _ on _ a _ mat (11); matches counted by hand:
    # 1-grams 10/11, 2-grams 8/10, 3-grams 6/9, 4-grams 5/8; c = r, so BP = 1
    expected = 100 * (10 / 11 * 8 / 10 * 6 / 9 * 5 / 8) ** 0.25
    assert M.RUNNER_BLEU(["the cat sat on the mat"], ["the cat sat on a mat"]) == pytest.approx(expected, abs=1e-12)
    # every n-gram matches, c = 5 < r = 7: BP = exp(1 - 7/5)
    assert M.RUNNER_BLEU(["the cat sat"], ["the cat sat down"]) == pytest.approx(100 * math.exp(1 - 7 / 5), abs=1e-12)
    # no 4-gram possible: p4 = 0 -> 0 (no smoothing); empty hypotheses: ZeroDivisionError in the runner -> 0
    assert M.RUNNER_BLEU(["วันนี้ฝนตกหนัก"], ["วันนี้ฝนตกหนักมาก"]) == 0.0
    assert M.RUNNER_BLEU(["", ""], ["ก", "ข"]) == 0.0
    assert M.RUNNER_BLEU(["ก"], [""]) == 0.0


def test_bleu_equals_sacrebleu_on_prejoined_tokens():
    # where no token is whitespace, sacrebleu's BLEU (tokenize none, no smoothing) on space-joined tokens agrees
    hyps = ["วันนี้ฝนตกหนักมากที่กรุงเทพ", "แมวกินปลาทูที่บ้านของฉัน", "เด็กนักเรียนอ่านหนังสือในห้องสมุด"]
    refs = ["วันนี้ฝนตกหนักมากที่เชียงใหม่", "แมวกินปลาทูที่บ้านของเธอ", "เด็กนักเรียนอ่านหนังสือทุกวัน"]
    assert all(not t.isspace() for s in hyps + refs for t in M.newmm_tokens(s))
    joined = sacrebleu.corpus_bleu(
        [" ".join(M.newmm_tokens(h)) for h in hyps],
        [[" ".join(M.newmm_tokens(r)) for r in refs]],
        tokenize="none",
        smooth_method="none",
        force=True,
    )
    assert joined.score > 0
    assert M.RUNNER_BLEU(hyps, refs) == pytest.approx(joined.score, abs=1e-9)


def test_chrf_equals_sacrebleu_on_real_rows():
    rows = [
        json.loads(line)
        for line in open(DATA / nlg_task("flores200_eng_Latn_tha_Thai_seacrowd_t2t").data_file, encoding="utf-8")
    ][:8]
    refs = [r["text_2"] for r in rows]
    hyps = [r[: len(r) // 2] + " ครับ" for r in refs]
    assert M.CHRF_METRIC(hyps, refs) == pytest.approx(sacrebleu.corpus_chrf(hyps, [refs]).score, abs=1e-9)
    assert sacrebleu.CHRF().word_order == 0  # "chrF++" is chrF: evaluate's default word_order 0


CASE_H = ["แมวกินปลา", "วันนี้ฝนตกหนัก\nพรุ่งนี้แดดออก", "the cat sat", "หมา", "เด็กนักเรียนอ่านหนังสือ", "ฉันชอบกินข้าวเหนียวมะม่วง"]
CASE_R = [
    "แมวกินข้าว",
    "วันนี้ฝนตกหนักมาก\nพรุ่งนี้แดดออก",
    "the cat sat down",
    "หมาป่า",
    "นักเรียนอ่านหนังสือในห้องสมุด",
    "ข้าวเหนียวมะม่วงอร่อย",
]


def _rouge(hyps, refs, rouge="mean", seed=M.ROUGE_SEED):
    """The ROUGE values (runner keys) the product scores: ``nlg_scores``' mean or bootstrap-median replay."""
    scores, _ = M.nlg_scores(hyps, refs, rouge=rouge, rouge_seed=seed)
    return {k: scores[k]["value"] for k in M.ROUGE_KEYS.values()}


def _aggregator_median(hyps, refs, seed):
    """rouge_score's BootstrapAggregator on numpy's global RNG reseeded with ``seed`` (evaluate's temp_seed), state
    restored after."""
    saved = np.random.get_state()
    try:
        np.random.seed(seed)
        scorer = rouge_scorer.RougeScorer(list(M.ROUGE_TYPES), use_stemmer=False, tokenizer=M.NewmmTokenizer())
        agg = scoring.BootstrapAggregator()
        for r, h in zip(refs, hyps):
            agg.add_scores(scorer.score(r, h))
        return {M.ROUGE_KEYS[k]: v.mid.fmeasure * 100 for k, v in agg.aggregate().items()}
    finally:
        np.random.set_state(saved)


def test_rouge_mean_by_hand_and_bootstrap_median_replay():
    # row 0: [แมว, กิน, ปลา] vs [แมว, กินข้าว]: 1 unigram shared, P = 1/3, R = 1/2, F = 0.4
    rows = M.rouge_rows(CASE_H[:1], CASE_R[:1])
    assert rows["rouge1"][0] == pytest.approx([1 / 3, 1 / 2, 0.4])
    mean = _rouge(CASE_H, CASE_R)
    assert mean["ROUGE1"] == pytest.approx(100 * np.mean(M.rouge_rows(CASE_H, CASE_R)["rouge1"][:, 2]))
    saved = np.random.get_state()
    replay = _rouge(CASE_H, CASE_R, "bootstrap_median")  # seed 42, reseeded per call as evaluate does
    assert np.array_equal(np.random.get_state()[1], saved[1])  # the global RNG was never drawn from
    assert replay == pytest.approx(_aggregator_median(CASE_H, CASE_R, 42), abs=1e-12)
    assert _rouge(CASE_H, CASE_R, "bootstrap_median") == replay  # a second call restarts at the seed
    assert _rouge(CASE_H, CASE_R, "bootstrap_median", 7) == pytest.approx(
        _aggregator_median(CASE_H, CASE_R, 7), abs=1e-12
    )
    assert abs(replay["ROUGE1"] - mean["ROUGE1"]) > 0.5  # the median is not the exact mean (49.27 vs 49.83 here)


def test_nlg_scores_carry_n_interval_signature_and_never_fake_sacrebleu(monkeypatch, tmp_path):
    monkeypatch.setenv("SACREBLEU", str(tmp_path))  # an empty sacrebleu folder: no FLORES-200 model
    scores, notes = M.nlg_scores(CASE_H, CASE_R, run_part="greedy|think:off")
    assert "SacreBLEU" not in scores and any("SacreBLEU not computed" in n for n in notes)
    assert set(scores) == {"BLEU", "chrF++", "ROUGE1", "ROUGE2", "ROUGEL", "ROUGELsum"}
    for s in scores.values():
        assert s["n"] == 6 and s["interval"]["n_resamples"] == 1000 and "greedy|think:off" in s["signature"]
        assert s["interval"]["low"] <= s["interval"]["high"]
    assert "pythainlp:" in scores["BLEU"]["signature"] and "word_order:0" in scores["chrF++"]["signature"]
    med, _ = M.nlg_scores(CASE_H, CASE_R, rouge="bootstrap_median")
    assert med["ROUGEL"]["value"] == pytest.approx(_aggregator_median(CASE_H, CASE_R, 42)["ROUGEL"], abs=1e-12)
    assert "agg:bootstrap-median(1000,numpy-reseeded:42)" in med["ROUGEL"]["signature"]


# ----------------------------------------------------------------------------------------------- runs
def _reply(conv):
    text = conv[-1]["content"]
    return "<think>คิดก่อน</think>" + text[-12:] if "คำแปล" in text else text[-10:]


def test_run_thinking_raw_stored_and_leaderboard_keys(tmp_path):
    model = FakeModel("fake-nlg", reply=_reply)
    key = "flores200_eng_Latn_tha_Thai_seacrowd_t2t"
    run = run_nlg_task(model, key, DATA, limit=3, outputs=tmp_path, progress=False, batch_size=2)
    assert [r["output"].startswith("<think>คิดก่อน</think>") for r in run.records] == [True] * 3  # raw kept whole
    assert run.summary["n_thinking_failed"] == 0 and run.summary["displayed"] == "SacreBLEU"
    assert set(run.summary["leaderboard"]) <= {"BLEU", "SacreBLEU", "chrF++"} and "BLEU" in run.summary["leaderboard"]
    assert "think:strip(<think>,</think>)" in run.scores["BLEU"]["signature"]
    assert model.calls[0][1]["temperature"] == 0.2 and model.calls[0][1]["max_new_tokens"] == 512
    assert model.calls[0][1]["seed"] == 42
    # scored text = the reply after the thinking block: recompute chrF from it
    hyps = [r["output"].split("</think>", 1)[1] for r in run.records]
    assert run.scores["chrF++"]["value"] == pytest.approx(M.CHRF_METRIC(hyps, [r["reference"] for r in run.records]))
    greedy = run_nlg_task(
        model, key, DATA, limit=1, options=GenerationOptions(greedy=True), outputs=tmp_path, progress=False
    )
    assert model.calls[-1][1]["temperature"] == 0.0 and greedy.config_id != run.config_id
    assert "greedy|" in greedy.scores["BLEU"]["signature"]


_KILL_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, {repo!r})
    from tests.fakes import FakeModel
    from thai_eval_utils.thai_llm_leaderboard.generation import run_nlg_task
    calls = []
    def reply(conv):
        calls.append(1)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return "ตอบ " + conv[-1]["content"][-8:]
    run_nlg_task(FakeModel("fake-kill", reply=reply), "iapp_squad_seacrowd_qa", {data!r}, limit=4,
                 outputs={out!r}, batch_size=1, progress=False)
""")


def test_resume_after_kill_9(tmp_path):
    script = _KILL_SCRIPT.format(repo=str(REPO), data=str(DATA), out=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    model = FakeModel("fake-kill", reply=lambda conv: "ตอบ " + conv[-1]["content"][-8:])
    run = run_nlg_task(model, "iapp_squad_seacrowd_qa", DATA, limit=4, outputs=tmp_path, batch_size=1, progress=False)
    assert run.computed == 2 and len(model.calls) == 2  # two stored before the kill, two computed now
    assert [r["row"] for r in run.records] == [0, 1, 2, 3]
    lines = (run.run_dir / "items.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4 and len({json.loads(x)["key"] for x in lines}) == 4


# ------------------------------------------------------------------------------------- embedded model
@pytest.fixture(scope="module")
def embedded():
    from thai_eval_utils.backend.models import load_model

    return load_model("embedded")


def test_embedded_chat_encoding_terminators_and_double_bos(embedded):
    tok = embedded.tokenizer
    assert terminator_ids(tok) == [tok.eos_token_id]  # Gemma 3 has none of <|eot_id|>, <|im_start|>, <|im_end|>
    eot = tok.convert_tokens_to_ids("<end_of_turn>")
    assert stop_ids(embedded.hf_model, tok, GenerationOptions()) == sorted({tok.eos_token_id, eot})
    assert stop_ids(embedded.hf_model, tok, GenerationOptions(runner_terminators=True)) == [tok.eos_token_id]
    text = render(tok, [{"role": "user", "content": "สวัสดี"}], GenerationOptions())
    single, _ = encode(tok, text, 10_000, GenerationOptions())
    double, _ = encode(tok, text, 10_000, GenerationOptions(double_bos=True))
    assert single[0] == tok.bos_token_id != single[1] and double[:2] == [tok.bos_token_id] * 2  # quirk 14
    cut, was_cut = encode(tok, text, 3, GenerationOptions(truncation="right"))
    assert was_cut and cut == single[:3]


def test_embedded_each_task_limit_2(embedded, tmp_path):
    opts = GenerationOptions(max_new_tokens=4)
    for key in NLG_TASKS:
        run = run_nlg_task(embedded, key, DATA, limit=2, options=opts, outputs=tmp_path, progress=False)
        assert len(run.records) == 2 and all(isinstance(r["output"], str) for r in run.records)
        assert run.summary["n"] == 2 and run.summary["n_docs"] == sum(1 for _ in open(DATA / nlg_task(key).data_file))
        assert (
            "limit:2/" in run.scores["BLEU"]["signature"]
            and "sample(T:0.2,seed:42/item)" in run.scores["BLEU"]["signature"]
        )
        again = run_nlg_task(embedded, key, DATA, limit=2, options=opts, outputs=tmp_path, progress=False)
        assert again.computed == 0 and [r["output"] for r in again.records] == [r["output"] for r in run.records]


def test_suite_hooks_for_generation_runs(tmp_path):
    from thai_eval_utils.core.runs import StoredRun, list_runs
    from thai_eval_utils.stats.bootstrap import Interval
    from thai_eval_utils.thai_llm_leaderboard.suite import SUITE, TASK_KINDS

    assert [TASK_KINDS[k] for k in NLG_TASKS] == ["generation"] * 4 and TASK_KINDS["mt_bench_thai"] == "judge"
    model = FakeModel("fake-hooks", reply=lambda conv: conv[-1]["content"][-15:])
    for key in ("xl_sum_tha_seacrowd_t2t", "flores200_tha_Thai_eng_Latn_seacrowd_t2t"):
        run_nlg_task(model, key, DATA, limit=3, outputs=tmp_path, progress=False)
    runs = {r.task: r for r in list_runs(tmp_path)}
    xl, fl = runs["xl_sum_tha_seacrowd_t2t"], runs["flores200_tha_Thai_eng_Latn_seacrowd_t2t"]
    assert isinstance(xl, StoredRun)
    (h_xl,), (h_fl,) = SUITE.headlines(xl), SUITE.headlines(fl)
    assert h_xl.kind == "mean" and h_xl.items["value"].mean() == pytest.approx(xl.summary["scores"]["ROUGEL"]["value"])
    assert h_fl.kind == "corpus" and h_fl.corpus_metric is M.RUNNER_BLEU
    assert SUITE.leaderboard_results(xl) == {
        "xl_sum_tha_seacrowd_t2t": {k: xl.summary["scores"][k]["value"] for k in ("ROUGE1", "ROUGE2", "ROUGEL")}
    }
    assert set(SUITE.leaderboard_results(fl)["flores200_tha_Thai_eng_Latn_seacrowd_t2t"]) >= {"BLEU", "chrF++"}
    boot = Interval("x", 0, 0, 0, 0.95, "percentile", 200, 0, 3, 200)
    cells = SUITE.leaderboard_cells("fake-hooks", [h_xl, h_fl], boot)
    by = {c["column"]: c for c in cells}
    assert by["xl_sum_tha_seacrowd_t2t"]["value"] == pytest.approx(xl.summary["scores"]["ROUGEL"]["value"])
    assert by["flores200_tha_Thai_eng_Latn_seacrowd_t2t"]["n"] == 3
    if "SacreBLEU" not in fl.summary["scores"]:
        assert "SacreBLEU not computed offline" in by["flores200_tha_Thai_eng_Latn_seacrowd_t2t"]["note"]
