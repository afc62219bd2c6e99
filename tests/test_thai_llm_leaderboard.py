"""The Thai LLM Leaderboard's log-likelihood tasks (spec thai_llm_leaderboard.md 1-2, 6): prompts byte for
byte on real rows, label lists, excluded rows, whole-sequence sums against a plain forward, the engine's shared
prompt prefix, the protocol options, named data errors, resumable runs (kill -9) and the suite's hooks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.fakes import FakeModel
from thai_eval_utils.backend.encoding import count_tokens
from thai_eval_utils.core import registry
from thai_eval_utils.core.errors import ThaiEvalDataError, ThaiEvalError
from thai_eval_utils.core.runs import list_runs
from thai_eval_utils.thai_llm_leaderboard import NLU_TASKS, NLUProtocol, load_task, nlu_task, run_nlu_task, score_task
from thai_eval_utils.thai_llm_leaderboard.data import build_items
from thai_eval_utils.thai_llm_leaderboard.metrics import MacroF1, runner_metrics
from thai_eval_utils.thai_llm_leaderboard.prompts import template, with_label
from thai_eval_utils.thai_llm_leaderboard.protocol import runner_max_length
from thai_eval_utils.thai_llm_leaderboard.published import published_accuracy_rows
from thai_eval_utils.thai_llm_leaderboard.scoring import score_batch, sequence_requests

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data" / "thai_llm_leaderboard"


def _items(key: str) -> list[dict]:
    return load_task(nlu_task(key), DATA).items


# ------------------------------------------------------------------------------------------ prompts and labels
def test_templates_are_the_runners_strings_byte_for_byte():
    # spec 2.1 (JSON string literals copied from the spec, which quotes evaluation/prompt_utils.py:9, 17, 21, 33)
    assert template("SA") == json.loads(
        '"จง classify sentiment ของข้อความด้านล่าง\\n[INPUT] => Sentiment ([OPTIONS]): [LABEL_CHOICE]"'
    )
    assert template("TE") == json.loads(
        '"เลือกความสัมพันธ์ที่เหมาะสมที่สุด ([OPTIONS]) ระหว่างข้อความตั้งต้นและสมมติฐาน:\\nความสัมพันธ์ ระหว่าง \\"[INPUT_B]\\" กับ \\"[INPUT_A]\\": [LABEL_CHOICE]"'
    )
    assert template("QA") == json.loads(
        '"[CONTEXT]\\n---\\nคำถาม: [QUESTION]\\nตัวเลือก: [ANSWER_CHOICES]\\nคำตอบ: [LABEL_CHOICE]"'
    )
    assert template("CR") == json.loads(
        '"คำถาม: [CONTEXT]\\nคำตอบใดที่มีเหตุผลมากกว่าในการตอบคำถามนี้?\\nตัวเลือก: [ANSWER_CHOICES]\\nคำตอบ: [LABEL_CHOICE]"'
    )


def test_prompts_on_real_rows_equal_the_specs_worked_examples():
    xcopa = _items("xcopa_tha_seacrowd_qa")[0]
    assert (xcopa["id"], xcopa["gold"]) == ("0", 0)
    assert xcopa["prompt"] == json.loads(
        '"คำถาม: สิ่งของถูกห่อไว้ในพลาสติก\\nคำตอบใดที่มีเหตุผลมากกว่าในการตอบคำถามนี้?\\nตัวเลือก: a. มันบอบบาง\\nb. มันเล็ก\\nคำตอบ: [LABEL_CHOICE]"'
    )
    wise = _items("wisesight_thai_sentiment_seacrowd_text")[0]
    assert (wise["id"], wise["gold"]) == ("543", 2)
    assert wise["prompt"] == json.loads(
        '"จง classify sentiment ของข้อความด้านล่าง\\nนี่คือรูปกุ้งที่ไปทานในวันนั้น ทั้งเน่า ทั้งเหม็น ทั้งดำ ทั้งหมด3ตัว เสิร์ฟมาแมลงวัน พนักงานก็ไม่สนใจ ต้องการให้ทางเอ็มเค ชี้แจงด้วย => Sentiment (positive, neutral, negative, not applicable (question)): [LABEL_CHOICE]"'
    )
    ic = next(it for it in _items("thaiexam_qa") if it["id"] == "ic_test_0")
    assert ic["gold"] == 1 and ic["labels"] == ["a", "b", "c", "d", "e"]  # 4 choices, 5 labels scored (quirk 6)
    head = json.loads('"\\n---\\nคำถาม: ตัวเลือกใดไม่ถูกต้องเกี่ยวกับสัญญาซื้อขายล่วงหน้า\\nตัวเลือก: a. "')
    assert ic["prompt"].startswith(head) and ic["prompt"].endswith("\nคำตอบ: [LABEL_CHOICE]")
    assert [line[:3] for line in ic["prompt"].split("\n")[4:8]] == ["b. ", "c. ", "d. ", "คำต"]
    xnli = _items("xnli.tha_seacrowd_pairs")[0]  # premise is [INPUT_A], hypothesis [INPUT_B], named B first
    assert xnli["prompt"] == (
        "เลือกความสัมพันธ์ที่เหมาะสมที่สุด (contradiction, neutral, irrelevant) ระหว่างข้อความตั้งต้นและสมมติฐาน:\n"
        'ความสัมพันธ์ ระหว่าง "ถนนหน้าบ้านแห้งสนิทตลอดทั้งคืน" กับ "ฝนตกหนักทั้งคืน ทำให้ถนนหน้าบ้านมีน้ำท่วมขัง": [LABEL_CHOICE]'
    )
    assert with_label(xcopa["prompt"], "b").endswith("คำตอบ: b")


def test_label_lists_are_the_runners():
    labels = {k: t.labels for k, t in NLU_TASKS.items()}
    assert labels["wisesight_thai_sentiment_seacrowd_text"] == (
        "positive",
        "neutral",
        "negative",
        "not applicable (question)",
    )
    assert labels["xnli.tha_seacrowd_pairs"] == ("contradiction", "neutral", "irrelevant")
    assert labels["xnli.tha_seacrowd_pairs.corrected"] == ("contradiction", "entailment", "neutral")
    assert labels["m3exam_tha_seacrowd_qa"] == ("a", "b", "c", "d")
    assert labels["xcopa_tha_seacrowd_qa"] == ("a", "b")
    assert labels["belebele_tha_thai_seacrowd_qa"] == ("a", "b", "c", "d")
    assert labels["thaiexam_qa"] == ("a", "b", "c", "d", "e")
    assert list(NLU_TASKS)[:6] == [
        "wisesight_thai_sentiment_seacrowd_text",
        "m3exam_tha_seacrowd_qa",
        "xcopa_tha_seacrowd_qa",
        "belebele_tha_thai_seacrowd_qa",
        "xnli.tha_seacrowd_pairs",
        "thaiexam_qa",
    ]


def test_m3exam_rows_excluded_and_gold_e_as_the_runner_has_them():
    data = load_task(nlu_task("m3exam_tha_seacrowd_qa"), DATA)
    assert (len(data.items), data.n_rows) == (11, 12)
    assert data.excluded == [{"row": 11, "id": "ill-m3exam-11", "reason": "answer is empty"}]
    gold_e = [it for it in data.items if it["gold"] == 4]
    assert [it["id"] for it in gold_e] == ["ill-m3exam-6", "ill-m3exam-7"]
    assert all(it["labels"] == ["a", "b", "c", "d"] and "\ne. " in it["prompt"] for it in gold_e)
    corrected = load_task(nlu_task("m3exam_tha_seacrowd_qa.corrected"), DATA).items
    assert [it["labels"] for it in corrected if it["gold"] == 4] == [["a", "b", "c", "d", "e"]] * 2
    assert [it["labels"] for it in corrected][:1] == [["a", "b", "c", "d"]]


def test_sample_sizes_and_source_ids():
    sizes = {k: len(load_task(t, DATA).items) for k, t in NLU_TASKS.items()}
    assert sizes == {
        "wisesight_thai_sentiment_seacrowd_text": 200,
        "m3exam_tha_seacrowd_qa": 11,
        "xcopa_tha_seacrowd_qa": 200,
        "belebele_tha_thai_seacrowd_qa": 200,
        "xnli.tha_seacrowd_pairs": 12,
        "thaiexam_qa": 200,
        "xnli.tha_seacrowd_pairs.corrected": 12,
        "m3exam_tha_seacrowd_qa.corrected": 11,
    }
    assert _items("thaiexam_qa")[0]["id"] == "onet_test_0"


# ---------------------------------------------------------------------------------------------- data errors
def _write(tmp_path: Path, name: str, rows: list[dict]) -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("key", "bad", "row", "field", "message"),
    [
        (
            "wisesight_thai_sentiment_seacrowd_text",
            {"id": "x", "text": "ดีมาก", "label": 7},
            1,
            "label",
            "unknown label 7",
        ),
        (
            "wisesight_thai_sentiment_seacrowd_text",
            {"id": "x", "text": "ดีมาก", "label": "pos"},
            1,
            "label",
            "expected int",
        ),
        (
            "wisesight_thai_sentiment_seacrowd_text",
            {"id": "x", "text": " \u200b ", "label": 0},
            1,
            "text",
            "empty text",
        ),
        ("xnli.tha_seacrowd_pairs", {"id": "x", "text_1": "ฝนตก", "label": 0}, 1, "text_2", "missing field"),
        (
            "belebele_tha_thai_seacrowd_qa",
            {"id": "x", "context": "ข้อความ", "question": "ข้อใด", "choices": ["ก", "ข"], "answer": "ค"},
            1,
            "answer",
            "not among the choices",
        ),
        (
            "belebele_tha_thai_seacrowd_qa",
            {"id": "x", "context": "ข้อความ", "question": "", "choices": ["ก", "ข"], "answer": ["ก"]},
            1,
            "question",
            "empty text",
        ),
        (
            "xcopa_tha_seacrowd_qa",
            {"id": "x", "context": None, "question": "", "choices": ["ก", "ข"], "answer": ["ก"]},
            1,
            "context",
            "expected text",
        ),
        (
            "belebele_tha_thai_seacrowd_qa",
            {"id": "0", "context": "ข้อความ", "question": "ข้อใด", "choices": ["ก"], "answer": ["ก"]},
            1,
            "id",
            "duplicate id",
        ),
    ],
)
def test_bad_rows_name_file_row_and_field(tmp_path, key, bad, row, field, message):
    task = nlu_task(key)
    good = load_task(task, DATA)
    first = json.loads((DATA / task.file).read_text(encoding="utf-8").splitlines()[0])
    path = _write(tmp_path, task.file, [first, bad])
    with pytest.raises(ThaiEvalDataError) as err:
        load_task(task, tmp_path)
    assert (err.value.path, err.value.row, err.value.field) == (str(path), row, field)
    assert message in str(err.value) and str(path) in str(err.value)
    assert good.items  # the shipped file itself loads


def test_list_answer_not_among_choices_is_excluded_not_an_error(tmp_path):
    task = nlu_task("belebele_tha_thai_seacrowd_qa")
    rows = [
        {"id": "a", "context": "ข้อความ", "question": "ข้อใด", "choices": ["ก", "ข"], "answer": ["ค"]},
        {"id": "b", "context": None, "question": "ข้อใด", "choices": ["ก", "ข", "ก"], "answer": ["ก"]},
    ]
    items, excluded = build_items(task, rows, tmp_path / "x.jsonl")
    assert excluded == [{"row": 0, "id": "a", "reason": "answer[0] is not among the choices"}]
    assert items[0]["gold"] == 0 and items[0]["prompt"].startswith("\n---\nคำถาม: ข้อใด\nตัวเลือก: a. ก\nb. ข\nc. ก\n")


def test_missing_file_and_parquet_export(tmp_path):
    task = nlu_task("xcopa_tha_seacrowd_qa")
    with pytest.raises(ThaiEvalDataError, match="xcopa_tha_seacrowd_qa_test.jsonl"):
        load_task(task, tmp_path)
    import pandas as pd

    rows = [json.loads(line) for line in (DATA / task.file).read_text(encoding="utf-8").splitlines()[:3]]
    pd.DataFrame(rows).to_parquet(tmp_path / "xcopa_tha_seacrowd_qa_test.parquet")
    data = load_task(task, tmp_path)
    assert [it["prompt"] for it in data.items] == [it["prompt"] for it in _items("xcopa_tha_seacrowd_qa")[:3]]
    assert data.source["origin"] == "data folder" and len(data.source["sha256"]) == 64


# -------------------------------------------------------------------------------------------- model length
class _Cfg:
    def __init__(self, **kw):
        self.__dict__.update(kw)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (_Cfg(max_position_embeddings=32768), 8192),
        (_Cfg(max_position_embeddings=2048), 2048),
        (_Cfg(n_positions=1024, max_position_embeddings=4096), 1024),
        (_Cfg(), 2048),
        (_Cfg(max_position_embeddings=2048, rope_scaling={"type": "linear", "factor": 2.0}), 4096),
        (_Cfg(max_position_embeddings=1024, rope_scaling={"rope_type": "llama3", "factor": 8.0}), 1024),
        (
            _Cfg(
                max_position_embeddings=999,
                rope_scaling={"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 1500},
            ),
            3000,
        ),
        (
            _Cfg(
                max_position_embeddings=1000,
                rope_scaling={
                    "full_attention": {"rope_type": "linear", "factor": 3.0},
                    "sliding_attention": {"rope_type": "default"},
                },
            ),
            3000,
        ),
        (_Cfg(max_position_embeddings=32768, rope_scaling={"full_attention": {"rope_type": "default"}}), 8192),
    ],
)
def test_model_max_length_as_the_runner_derives_it(config, expected):
    assert runner_max_length(config) == expected


# ---------------------------------------------------------------------------------------------- scoring
def _hf_sum(model, tok, text: str, limit: int | None = None) -> float:
    """The runner's number: tokenize with default special tokens, right-truncate, sum log p of tokens 1..T-1."""
    ids = tok(text, truncation=limit is not None, max_length=limit, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=ids).logits.float(), dim=-1)
    return float(logp[0, :-1].gather(1, ids[0, 1:, None]).sum())


def test_whole_sequence_sum_equals_a_plain_forward_and_prompt_is_shared(tiny_local_model, tiny_llama):
    hf, tok = tiny_llama
    items = _items("xnli.tha_seacrowd_pairs")[:2] + _items("m3exam_tha_seacrowd_qa")[6:7]
    records = score_batch(tiny_local_model, items, NLUProtocol(sums="whole"), limit=None)
    labels = score_batch(tiny_local_model, items, NLUProtocol(), limit=None)  # the default: sums="labels"
    for it, rec, lab_rec in zip(items, records, labels):
        texts = [with_label(it["prompt"], lab) for lab in it["labels"]]
        expected = [_hf_sum(hf, tok, t) for t in texts]
        assert np.allclose(rec["lls"], expected, atol=1e-4, rtol=0) and rec["sums"] == "whole"
        assert rec["pred"] == int(np.argmax(expected)) and rec["correct"] == int(rec["pred"] == it["gold"])
        assert rec["tokens"] == [len(tok(t)["input_ids"]) - 1 for t in texts]
        # the label parts: the whole sums less one shared number (the prompt's terms), the same prediction
        ids = [tok(t)["input_ids"] for t in texts]
        shared = len(os.path.commonprefix(ids))
        assert lab_rec["sums"] == "labels" and lab_rec["shared_tokens"] == shared > 100
        assert lab_rec["tokens"] == [len(i) - shared for i in ids]
        offset = np.array(expected) - np.array(lab_rec["lls"])
        assert np.allclose(offset, offset[0], atol=1e-3, rtol=0) and offset[0] < -100
        assert lab_rec["pred"] == rec["pred"] and lab_rec["correct"] == rec["correct"]
    assert records[2]["gold"] == 4 and records[2]["correct"] == 0  # M3Exam gold e: never right (quirk 6)
    # the requests the engine gets: empty context, whole text; its prefix tree runs each prompt once
    reqs = sequence_requests(tok, [with_label(items[0]["prompt"], lab) for lab in items[0]["labels"]], None).requests
    assert all(c == "" for c, _ in reqs)
    counts = count_tokens(tok, reqs)
    seqs = [[tok.bos_token_id] + tok(x, add_special_tokens=False)["input_ids"][:-1] for _, x in reqs]
    common = len(os.path.commonprefix(seqs))
    assert counts["fed"] == sum(map(len, seqs))
    assert counts["tree"] == common + sum(len(s) - common for s in seqs) < counts["fed"]


def test_the_engines_forward_calls_run_each_prompt_once(tiny_local_model, monkeypatch):
    """The tokens that actually go through the decoder body: the prefix tree's (each prompt once), not the
    runner's (each prompt once per label)."""
    from thai_eval_utils.backend import decoder

    items = _items("thaiexam_qa")[:3]
    score_batch(tiny_local_model, items[:1], NLUProtocol(sums="whole"), limit=None)  # the one-off self-check first
    fed, real = [], decoder.Decoder.model_call

    def spy(self, ids, *args, **kwargs):
        fed.append(sum(len(row) for row in ids))
        return real(self, ids, *args, **kwargs)

    monkeypatch.setattr(decoder.Decoder, "model_call", spy)
    score_batch(tiny_local_model, items, NLUProtocol(sums="whole"), limit=None)
    texts = [with_label(it["prompt"], lab) for it in items for lab in it["labels"]]
    counts = count_tokens(
        tiny_local_model.tokenizer, sequence_requests(tiny_local_model.tokenizer, texts, None).requests
    )
    assert sum(fed) == counts["tree"] and counts["fed"] > 4 * counts["tree"]  # 5 labels share each prompt


def test_truncated_items_score_the_kept_tokens_and_tie_to_the_first_label(tiny_local_model, tiny_llama):
    hf, tok = tiny_llama
    item = _items("xcopa_tha_seacrowd_qa")[0]
    limit = 12  # far shorter than the prompt: every label is cut off, so all labels score the same sequence
    rec = score_batch(tiny_local_model, [item], NLUProtocol(sums="whole"), limit=limit)[0]
    assert rec["truncated"] and rec["tokens"] == [limit - 1, limit - 1]
    expected = _hf_sum(hf, tok, with_label(item["prompt"], "a"), limit)
    assert rec["lls"][0] == rec["lls"][1] and abs(rec["lls"][0] - expected) < 1e-4
    assert rec["pred"] == 0
    parts = score_batch(tiny_local_model, [item], NLUProtocol(), limit=limit)[0]  # labels: all shared, nothing left
    assert parts["truncated"] and parts["shared_tokens"] == limit and parts["tokens"] == [0, 0]
    assert parts["lls"] == [0.0, 0.0] and parts["pred"] == 0
    assert not score_batch(tiny_local_model, [item], NLUProtocol(), limit=None)[0]["truncated"]


def _fake(prefer: dict[str, float]) -> FakeModel:
    """A fake model whose sequence score is ``prefer[label]`` for the label the text ends with (else -50)."""

    def score(ctx: str, text: str) -> tuple[float, bool]:
        assert ctx == ""
        return max((v for lab, v in prefer.items() if text.endswith(": " + lab)), default=-50.0), False

    return FakeModel(score=score)


def test_xnli_runner_labels_vs_corrected_on_a_hand_case():
    # gold 1 = entailment. The runner presents it as "neutral": a model that answers "neutral" (i.e. believes the
    # pair is neutral) is scored right; one that answers "entailment" cannot be, as "entailment" is never scored.
    item = next(it for it in _items("xnli.tha_seacrowd_pairs") if it["gold"] == 1)
    fixed = next(it for it in _items("xnli.tha_seacrowd_pairs.corrected") if it["key"] == item["key"])
    says_entailment, says_neutral = _fake({"entailment": -1.0}), _fake({"neutral": -1.0})
    runner = NLUProtocol()
    assert score_batch(says_entailment, [item], runner, limit=None)[0]["pred"] == 0  # a tie of -50s -> first label
    assert score_batch(says_neutral, [item], runner, limit=None)[0]["correct"] == 1
    assert score_batch(says_entailment, [fixed], runner, limit=None)[0]["correct"] == 1
    assert score_batch(says_neutral, [fixed], runner, limit=None)[0]["pred"] == 2


def test_m3exam_gold_e_is_scored_only_by_the_corrected_variant():
    says_e = _fake({"e": -1.0})
    runner_item = _items("m3exam_tha_seacrowd_qa")[6]
    fixed_item = _items("m3exam_tha_seacrowd_qa.corrected")[6]
    assert runner_item["gold"] == fixed_item["gold"] == 4
    assert score_batch(says_e, [runner_item], NLUProtocol(), limit=None)[0]["correct"] == 0
    assert score_batch(says_e, [fixed_item], NLUProtocol(), limit=None)[0]["correct"] == 1


def test_bf16_sums_round_the_totals_as_the_runner_at_head_does():
    item = _items("xcopa_tha_seacrowd_qa")[0]
    model = _fake({"a": -300.9, "b": -300.2})
    fp32 = score_batch(model, [item], NLUProtocol(), limit=None)[0]
    bf16 = score_batch(model, [item], NLUProtocol(sum_precision="bf16"), limit=None)[0]
    assert fp32["pred"] == 1 and bf16["pred"] == 0  # both round to -300 in bfloat16: a tie, the first label wins
    assert bf16["lls"] == fp32["lls"]  # the stored sums stay float32
    assert NLUProtocol().signature() == "sum:fp32|trunc:runner@-512|ties:first|sums:labels"
    assert NLUProtocol().for_model(model).sums == "whole"  # a model that cannot score token ids from a position
    assert (
        NLUProtocol(sum_precision="bf16", truncation="none").signature() == "sum:bf16|trunc:none|ties:first|sums:whole"
    )  # bf16 rounds the whole total: label parts cannot mimic it
    with pytest.raises(ThaiEvalError, match="sums must be"):
        NLUProtocol(sums="prompt")
    with pytest.raises(ThaiEvalError):
        NLUProtocol(sum_precision="fp16")


@pytest.fixture(scope="module")
def no_bos_model(tiny_llama):
    """The tiny Llama with a copy of its tokenizer that adds no BOS and has none (as Qwen's): the runner scores every
    token but the first real one."""
    import copy

    from tokenizers import processors

    from thai_eval_utils.backend.models import LocalModel

    model, tok = tiny_llama
    bare = copy.deepcopy(tok)
    bare.backend_tokenizer.post_processor = processors.TemplateProcessing(single="$A", pair="$A $B", special_tokens=[])
    bare.bos_token = None
    return LocalModel(model, bare, name="tiny-no-bos", identity={"name": "tiny-no-bos"})


def test_a_tokenizer_without_bos_scores_every_token_but_the_first(no_bos_model, tiny_llama):
    hf, _ = tiny_llama
    tok = no_bos_model.tokenizer
    xcopa, exam = _items("xcopa_tha_seacrowd_qa")[0], _items("thaiexam_qa")[0]
    texts = [with_label(it["prompt"], "a") for it in (xcopa, exam)]
    plan = sequence_requests(tok, texts, None)
    assert plan.requests[0] == ("คำถาม", texts[0][len("คำถาม") :])  # the first token's text is the unscored context
    assert plan.requests[1] is None  # "\n---\n...": lm-eval's encoding would move the "\n" context out
    whole = score_batch(no_bos_model, [xcopa, exam], NLUProtocol(sums="whole"), limit=None)
    parts = score_batch(no_bos_model, [xcopa, exam], NLUProtocol(), limit=None)
    for it, rec, part in zip((xcopa, exam), whole, parts):
        expected = []
        for lab, ll in zip(it["labels"], rec["lls"]):
            ids = torch.tensor([tok(with_label(it["prompt"], lab))["input_ids"]])
            with torch.no_grad():
                logp = torch.log_softmax(hf(input_ids=ids).logits.float(), dim=-1)
            expected.append(float(logp[0, :-1].gather(1, ids[0, 1:, None]).sum()))
            assert abs(ll - expected[-1]) < 1e-4
        assert part["pred"] == rec["pred"] == int(np.argmax(expected))
        # the totals near -1.9e3 carry float32's spacing there (1.2e-4) into their differences
        assert np.allclose(np.diff(part["lls"]), np.diff(expected), atol=5e-4)


def test_a_sequence_no_request_reproduces_is_an_error_on_a_model_without_token_scoring(no_bos_model):
    exam = _items("thaiexam_qa")[0]
    served_like = FakeModel(score=lambda c, x: (0.0, False), tokenizer=no_bos_model.tokenizer)
    with pytest.raises(ThaiEvalError, match="item 'onet_test_0', label 'a': no \\(context, continuation\\) request"):
        score_batch(served_like, [exam], NLUProtocol(), limit=None)


# ---------------------------------------------------------------------------------------------- metrics
def test_runner_metrics_by_hand_and_macro_f1_closed_form():
    m = runner_metrics([0, 1, 2, 1], [0, 2, 2, 1])
    assert m["accuracy"] == 0.75 and m["micro_f1_score"] == m["micro_prec"] == m["micro_rec"] == 0.75
    # per label F1: 0 -> 1, 1 -> 2/3 (tp 1, fn 1), 2 -> 2/3 (tp 1, fp 1)
    assert m["macro_f1_score"] == pytest.approx((1 + 2 / 3 + 2 / 3) / 3)
    assert m["weighted_f1_score"] == pytest.approx((1 * 1 + 2 * 2 / 3 + 1 * 2 / 3) / 4)
    rng = np.random.default_rng(0)
    for _ in range(20):
        g, p = rng.integers(0, 5, 30), rng.integers(0, 4, 30)
        closed_form = MacroF1().score(MacroF1().statistics(p, g).sum(axis=0))  # what each resample computes
        assert closed_form == pytest.approx(runner_metrics(g.tolist(), p.tolist())["macro_f1_score"], abs=1e-12)


def test_published_row_is_package_data_with_n_and_interval():
    rows = published_accuracy_rows().set_index("task")
    assert rows.loc["wisesight_thai_sentiment_seacrowd_text", "correct"] == 879
    assert rows.loc["m3exam_tha_seacrowd_qa", "correct"] == 891 and rows.loc["m3exam_tha_seacrowd_qa", "n"] == 2168
    assert rows.loc["xcopa_tha_seacrowd_qa", "value"] == pytest.approx(68.4)
    assert (rows["ci_low"] < rows["value"]).all() and (rows["value"] < rows["ci_high"]).all()


# ----------------------------------------------------------------------------------- runs, resume, the suite
def test_run_stores_summary_and_suite_hooks_read_it(tmp_path):
    model = _fake({"a": -1.0, "contradiction": -1.0})
    runs = {
        key: run_nlu_task(model, key, data_dir=DATA, limit=4, outputs=tmp_path, progress=False)
        for key in ("xcopa_tha_seacrowd_qa", "xnli.tha_seacrowd_pairs.corrected", "m3exam_tha_seacrowd_qa")
    }
    xcopa = runs["xcopa_tha_seacrowd_qa"]
    golds = [it["gold"] for it in _items("xcopa_tha_seacrowd_qa")[:4]]
    assert [r["pred"] for r in xcopa.records] == [0] * 4
    assert xcopa.accuracy.value == golds.count(0) / 4 and xcopa.accuracy.n == 4
    sig = xcopa.summary["scores"]["accuracy"]["signature"]
    assert sig.startswith(
        "xcopa_tha_seacrowd_qa:runner|labels:a,b|sum:fp32|trunc:runner@-512|ties:first|sums:whole|data:"
    )  # a fake model scores no token ids: the whole sums
    assert "|limit:4/200" in sig and "model:fake-model" in sig
    assert runs["m3exam_tha_seacrowd_qa"].summary["n_excluded"] == 1
    again = run_nlu_task(model, "xcopa_tha_seacrowd_qa", data_dir=DATA, limit=4, outputs=tmp_path, progress=False)
    assert again.computed == 0 and again.records == xcopa.records  # resumed, nothing recomputed
    suite = registry.get_suite("thai_llm_leaderboard")
    assert registry.resolve(["thai_llm_leaderboard/xnli.tha_seacrowd_pairs"]) == [(suite, ("xnli.tha_seacrowd_pairs",))]
    stored = {r.task: r for r in list_runs(tmp_path)}
    heads = suite.headlines(stored["xcopa_tha_seacrowd_qa"])
    assert heads[0].name == "thai_llm_leaderboard/xcopa_tha_seacrowd_qa/accuracy"
    assert heads[0].items["value"].tolist() == [float(g == 0) for g in golds]
    from thai_eval_utils.stats.cells import Bootstrap

    cells = suite.leaderboard_cells("fake", heads, Bootstrap())
    assert cells[0]["value"] == pytest.approx(100 * golds.count(0) / 4) and cells[0]["n"] == 4
    assert "partial: 4 of 200 items" in cells[0]["note"]
    assert suite.leaderboard_results(stored["xcopa_tha_seacrowd_qa"]) == {
        "xcopa_tha_seacrowd_qa": {"accuracy": golds.count(0) / 4}
    }
    assert suite.leaderboard_results(stored["xnli.tha_seacrowd_pairs.corrected"]) == {}  # not a leaderboard key
    views = suite.item_views(stored["m3exam_tha_seacrowd_qa"], [], None, {}, [])
    assert len(views) == 4 and views[0].choices == ["a", "b", "c", "d"] and len(views[0].loglikelihoods) == 4
    rows = suite.detail_rows(stored["xcopa_tha_seacrowd_qa"])
    assert rows[0]["metrics"] == {"correct": int(golds[0] == 0)}
    assert "prompt" in rows[0]["inputs"] and "lls" in rows[0]["outputs"]


def test_dry_run_counts_runner_and_tree_tokens(tiny_tokenizer):
    from thai_eval_utils.cli.dry_run import Tokenizer

    suite = registry.get_suite("thai_llm_leaderboard")
    rows = suite.dry_run(
        DATA, Tokenizer(tiny_tokenizer, "tiny"), tasks=("xcopa_tha_seacrowd_qa",), limit=3, max_new_tokens=None
    )
    assert rows[0]["documents"] == 3 and rows[0]["requests"] == 6
    assert rows[0]["tree_tokens"] < rows[0]["fed_tokens"]


CHILD = textwrap.dedent(
    """
    import sys, time
    from thai_eval_utils.backend.models import load_model
    from thai_eval_utils.thai_llm_leaderboard import run_nlu_task
    model_dir, out, data = sys.argv[1], sys.argv[2], sys.argv[3]
    m = load_model(model_dir)
    real, calls = m.loglikelihood_tokens, []
    def slow(sequences, scored_from=None, progress=True):
        calls.append(1)
        if len(calls) > 1:
            time.sleep(60)  # killed here: after one stored batch
        return real(sequences, scored_from=scored_from, progress=progress)
    m.loglikelihood_tokens = slow
    run_nlu_task(m, "xcopa_tha_seacrowd_qa", data_dir=data, limit=6, outputs=out, batch_size=2, progress=False)
    """
)


def test_kill_9_mid_run_then_resume_gives_the_uninterrupted_records(tiny_model_dir, tmp_path):
    from thai_eval_utils.backend.models import load_model

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tiny_model_dir), str(tmp_path / "killed"), str(DATA)], env=env, cwd=REPO
    )
    deadline, store = time.time() + 120, None
    while time.time() < deadline:
        found = list((tmp_path / "killed").rglob("items.jsonl"))
        if found and found[0].read_text().count("\n") >= 2:
            store = found[0]
            break
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert store is not None and store.read_text().count("\n") == 2
    m = load_model(str(tiny_model_dir))
    resumed = run_nlu_task(
        m, "xcopa_tha_seacrowd_qa", data_dir=DATA, limit=6, outputs=tmp_path / "killed", batch_size=2, progress=False
    )
    whole = run_nlu_task(
        m, "xcopa_tha_seacrowd_qa", data_dir=DATA, limit=6, outputs=tmp_path / "whole", batch_size=2, progress=False
    )
    assert resumed.computed == 4 and store.read_text().count("\n") == 6  # nothing lost, nothing twice
    strip = [{k: v for k, v in r.items() if k != "key"} for r in resumed.records]
    assert [(r["pred"], r["gold"]) for r in resumed.records] == [(r["pred"], r["gold"]) for r in whole.records]
    assert np.allclose([r["lls"] for r in strip], [r["lls"] for r in whole.records], atol=1e-5)
    assert resumed.summary["scores"]["accuracy"]["value"] == whole.summary["scores"]["accuracy"]["value"]


def test_score_task_public_entry_point(tiny_local_model):
    records = score_task(tiny_local_model, "xcopa_tha_seacrowd_qa", data_dir=DATA, limit=3)
    assert [r["id"] for r in records] == [it["id"] for it in _items("xcopa_tha_seacrowd_qa")[:3]]
    assert all(len(r["lls"]) == 2 for r in records)
    one_by_one = score_task(tiny_local_model, "xcopa_tha_seacrowd_qa", data_dir=DATA, limit=3, batch_size=1)
    assert [r["pred"] for r in one_by_one] == [r["pred"] for r in records]  # batch-independent (quirk 2)
    assert np.allclose([r["lls"] for r in one_by_one], [r["lls"] for r in records], atol=1e-4)


def test_cli_run_on_the_embedded_model_then_export(tmp_path):
    """``thai-eval run --model embedded --benchmarks thai_llm_leaderboard/<task> --limit 2`` (the notebook through
    papermill), then the leaderboard export: the runner's key with its accuracy; the corrected variant not exported."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "thai_eval_utils", *args],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )

    out = tmp_path / "out"
    proc = cli(
        "run",
        "--model",
        "embedded",
        "--benchmarks",
        "thai_llm_leaderboard/xcopa_tha_seacrowd_qa,thai_llm_leaderboard/xnli.tha_seacrowd_pairs.corrected",
        "--limit",
        "2",
        "--no-paper",
        "--outputs",
        str(out),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    runs = {r.task: r for r in list_runs(out)}
    assert set(runs) == {"xcopa_tha_seacrowd_qa", "xnli.tha_seacrowd_pairs.corrected"}
    summary = runs["xcopa_tha_seacrowd_qa"].summary
    assert summary["n"] == 2 and summary["n_docs"] == 200 and summary["protocol"]["sum_precision"] == "fp32"
    assert summary["scores"]["accuracy"]["signature"].endswith("|limit:2/200")
    assert [len(r["lls"]) for r in runs["xnli.tha_seacrowd_pairs.corrected"].records()] == [3, 3]
    table = (out / "tables" / "thai_llm_leaderboard_gemma-3-270m-embedded.csv").read_text(encoding="utf-8")
    assert "n=2" in table and "n=500" in table  # our cell and the published row
    proc = cli("export", "--format", "thai-llm-leaderboard", "--outputs", str(out), "--to", str(tmp_path / "lb"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads((tmp_path / "lb" / "NLU" / "gemma-3-270m-embedded" / "results.json").read_text(encoding="utf-8"))
    assert doc == {
        "config": {"model_name": "api/gemma-3-270m-embedded"},  # no Hub id: the transform's api/ prefix
        "results": {"xcopa_tha_seacrowd_qa": {"accuracy": summary["scores"]["accuracy"]["value"]}},
    }


# ------------------------------------------------------------------------------ parity with the runner's own code
RUNNER_FIXTURES = REPO / "tests" / "data" / "thai_llm_leaderboard_runner"


def test_every_fixture_item_scores_as_the_runner_scored_it():
    """Every item the runner scored in the fixtures (seacrowd-eval @9de9392's own code, CPU, float32, batch size 1;
    tests/data/thai_llm_leaderboard_runner/README.md) through thai-eval's public scoring on the embedded model:
    prompts byte-equal, predictions equal, every label's sum within max(1e-4, 1e-5 x tokens, 1e-5 x its size), and
    the runner's ten metric columns equal, computed from our predictions."""
    from thai_eval_utils.backend.models import load_model

    fixture = [json.loads(line) for line in (RUNNER_FIXTURES / "nlu_items.jsonl").read_text("utf-8").splitlines()]
    metrics = json.loads((RUNNER_FIXTURES / "nlu_metrics.json").read_text("utf-8"))
    model = load_model("embedded")
    tasks = list(dict.fromkeys(it["task"] for it in fixture))
    assert tasks == list(NLU_TASKS)[:6]
    for task in tasks:
        theirs = [it for it in fixture if it["task"] == task]
        data = load_task(nlu_task(task), DATA)
        data.items = [it for it in data.items if it["id"] in {t["id"] for t in theirs}]
        ours = score_task(model, task, data=data, protocol=NLUProtocol(sums="whole"))
        parts = score_task(model, task, data=data)  # the default, sums="labels"
        assert [r["id"] for r in ours] == [r["id"] for r in parts] == [t["id"] for t in theirs]
        for mine, part, it in zip(ours, parts, theirs):
            assert (mine["prompt"], mine["labels"], mine["gold"]) == (it["prompt"], it["labels"], it["gold"])
            assert mine["pred"] == part["pred"] == it["pred"] and mine["tokens"] == it["scored_tokens"], it["id"]
            for a, b, n in zip(mine["lls"], it["sums"], it["scored_tokens"]):
                # float32 noise: the fixtures were written on another CPU, whose kernels sum in another order; on
                # this one (AMD EPYC) sums differ by up to 1e-5 of their size, never more
                assert abs(a - b) <= max(1e-4, 1e-5 * n, 1e-5 * abs(b)), (task, it["id"], a, b)
            # the label parts differ between labels exactly as the runner's totals do
            for a, b, n in zip(np.diff(part["lls"]), np.diff(it["sums"]), it["scored_tokens"][1:]):
                assert abs(a - b) <= 2 * max(1e-4, 1e-5 * n), (task, it["id"], a, b)
        mine_metrics = runner_metrics([r["gold"] for r in ours], [r["pred"] for r in ours])
        for key, value in mine_metrics.items():
            assert value == pytest.approx(metrics["tasks"][task]["bs1"][key], abs=1e-12), (task, key)


def test_the_notebooks_task_choice_and_judge_budget():
    """What the notebook's setup cells ask the library: the tasks of one catalogue a run names (every one when None,
    another catalogue's keys skipped; an empty list, as the notebook's tasks=None always read) and the MT-Bench judge's reply budget (the runner's 2048 for a real judge,
    256 for the offline embedded one, the asked one over both)."""
    from thai_eval_utils.thai_llm_leaderboard.mt_bench import JUDGE_PARAMS, judge_params_for
    from thai_eval_utils.thai_llm_leaderboard.table import chosen_tasks

    catalogue = ["xcopa_tha_seacrowd_qa", "wisesight_thai_sentiment_seacrowd_text"]
    assert chosen_tasks(None, catalogue) == catalogue
    asked = ["mt_bench_thai", "wisesight_thai_sentiment_seacrowd_text", "xcopa_tha_seacrowd_qa"]
    assert chosen_tasks(asked, catalogue) == ["wisesight_thai_sentiment_seacrowd_text", "xcopa_tha_seacrowd_qa"]
    assert chosen_tasks([], catalogue) == catalogue
    assert judge_params_for(None).max_tokens == 256 and judge_params_for("gpt-4o-2024-05-13").max_tokens == 2048
    assert judge_params_for(None, 100) == replace_tokens(JUDGE_PARAMS, 100)


def replace_tokens(params, max_tokens):
    from dataclasses import replace

    return replace(params, max_tokens=max_tokens)
