"""The continuous-batching generation engine (backend.generation) against transformers' own ``generate`` at
batch size 1 (lm-eval's ``generate_until`` path), stop strings across token boundaries, rows that stop at once,
over-long prompts, seeded sampling independent of the batch, the KV budget, and kill -9 / resume of a run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
from conftest import TRAINING_TEXT
from transformers import set_seed

from thai_eval_utils.backend.generation import Engine, generate
from thai_eval_utils.backend.local_model import LocalModel
from thai_eval_utils.backend.stops import StopScanner, cut_at_stop

REPO = Path(__file__).resolve().parents[1]
PROMPTS = [TRAINING_TEXT[i][: 12 + 7 * i] for i in (2, 0, 3, 4, 8, 6)]  # six lengths, Thai and English


def encode(tok, prompts):
    return [tok(p, add_special_tokens=False).input_ids for p in prompts]


def reference(model, tok, ids, n, **sample):
    """transformers' ``generate`` on one prompt alone (lm-eval's generate_until at batch size 1): the new text."""
    sample = sample or {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
    with torch.inference_mode():
        out = model.generate(torch.tensor([ids]), max_new_tokens=n, pad_token_id=tok.pad_token_id, **sample)
    return tok.decode(out[0, len(ids) :], skip_special_tokens=True)


@pytest.fixture(params=["tiny_llama", "tiny_gemma3"])
def lm(request):
    return request.getfixturevalue(request.param)


def test_stop_scanner_finds_stops_across_token_boundaries(tiny_tokenizer):
    tok = tiny_tokenizer
    ids = tok("คำถาม: น้ำเดือดที่อุณหภูมิเท่าไร\nคำตอบ: หนึ่งร้อย", add_special_tokens=False).input_ids
    decode = lambda x: tok.decode(x, skip_special_tokens=True)  # noqa: E731
    for stop in ["ม: น", "\nคำ", "ร้อย", "ไร\n", "ตอบ: ห"]:
        pieces = [decode(ids[:k]) for k in range(1, len(ids) + 1)]
        first = next(k for k, text in enumerate(pieces, 1) if stop in text)
        # the stop string is split over several tokens: no single token holds it
        assert all(stop not in decode([t]) for t in ids)
        scanner = StopScanner(decode, [stop, "never"])
        hits = [k for k in range(1, len(ids) + 1) if scanner.hit(ids[:k])]
        assert hits[0] == first  # found at the token that completes it, never before
    assert not StopScanner(decode, None).hit(ids) and not StopScanner(decode, ["", "zz"]).hit(ids)


def test_greedy_text_equals_batch_one_generate_as_rows_leave_and_join(lm):
    model, tok = lm
    ids = encode(tok, PROMPTS)
    free = [reference(model, tok, x, 16) for x in ids]
    # stops taken from the texts themselves, so rows end at different steps and freed slots are refilled
    stop = [free[0][5:7], free[3][2:4], free[5][9:11]]
    want = [cut_at_stop(t, stop) for t in free]
    assert len({len(t) for t in want}) > 2
    for rows, lookup in ((1, 0), (3, 0), (16, 0), (1, 8), (3, 8), (16, 8)):
        texts, stats = generate(
            model, tok, ids, max_new_tokens=16, stop=stop, max_rows=rows, lookup=lookup, progress=False
        )
        assert texts == want, (rows, lookup)
        assert min(rows, 2) <= stats.peak_rows <= rows and stats.prompt_tokens == sum(map(len, ids))
        after_prefill = stats.generated_tokens - len(ids)  # each row's first token comes from its prefill
        # a step feeds each row's last token and its proposals, and keeps one token more than the proposals kept
        assert stats.decode_row_steps == after_prefill - stats.accepted + stats.proposed < 16 * len(ids)
        assert stats.proposed == stats.accepted == 0 if not lookup else stats.proposed > 0


@pytest.mark.parametrize("rows, lookup", [(1, 0), (5, 0), (1, 8), (5, 8)])
def test_greedy_text_stays_exact_past_the_sliding_window(tiny_gemma3, rows, lookup):
    """Rows of different lengths share one frame of cache columns; on a model whose sliding window (16) is much
    shorter than the text, the window must still hold each row's own last tokens, also when prompt lookup cuts
    rejected proposals out of the rows' columns."""
    model, tok = tiny_gemma3
    ids = encode(tok, PROMPTS[:5])
    want = [reference(model, tok, x, 48) for x in ids]
    texts, stats = generate(model, tok, ids, max_new_tokens=48, max_rows=rows, lookup=lookup, progress=False)
    assert texts == want
    if lookup:  # proposals were kept and rejected, so rows were shifted by different numbers of columns
        assert 0 < stats.accepted < stats.proposed and stats.steps < stats.generated_tokens - len(ids)


def test_settle_cuts_rejected_columns_and_keeps_rows_right_aligned():
    """Two rows on a frame of 3 columns (row 1 left-padded) fed 3 columns each; row 0 keeps 1, row 1 keeps 3: the
    new frame is 6 wide, row 0's kept columns end at its right edge, its cut columns are gone."""
    from transformers import DynamicCache

    from thai_eval_utils.backend.decode_cache import settle

    cache = DynamicCache()
    keys = torch.tensor([[10, 11, 12, 13, 98, 99], [0, 21, 22, 23, 24, 25]], dtype=torch.float32)
    cache.update(keys[:, None, :, None], -keys[:, None, :, None], 0)
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [0, 1, 1, 1, 1, 1]])
    new = settle(cache, mask, kept=[1, 3], fed=3)
    assert new.tolist() == [[0, 0, 1, 1, 1, 1], [0, 1, 1, 1, 1, 1]]
    assert cache.layers[0].keys[0, 0, 2:, 0].tolist() == [10, 11, 12, 13]
    assert cache.layers[0].keys[1, 0, :, 0].tolist() == [0, 21, 22, 23, 24, 25]
    assert cache.layers[0].values[0, 0, 2:, 0].tolist() == [-10, -11, -12, -13]
    assert settle(cache, new, kept=[2, 2], fed=2) is new  # nothing cut: unchanged


def test_rows_that_stop_at_once(tiny_llama):
    model, tok = tiny_llama
    ids = encode(tok, PROMPTS)
    first = model.generation_config.eos_token_id
    try:  # the first greedy token of prompt 2 made an EOS token: that row ends at its prefill
        with torch.inference_mode():
            eos = int(model(torch.tensor([ids[2]])).logits[0, -1].argmax())
        model.generation_config.eos_token_id = eos
        free = [reference(model, tok, x, 6) for x in ids]
        # another row's first character (a whole one, not a cut byte sequence): that row ends at its first token
        k = next(i for i, t in enumerate(free) if i != 2 and t[:1] not in ("", "\ufffd") and t[:1] not in free[2])
        stop = [free[k][:1]]
        texts, stats = generate(model, tok, ids, max_new_tokens=6, stop=stop, progress=False)
    finally:
        model.generation_config.eos_token_id = first
    assert texts[k] == "" and free[2] == tok.decode([eos]) and texts[2] == free[2]
    assert texts == [cut_at_stop(t, stop) for t in free]
    one, _ = generate(model, tok, ids, max_new_tokens=1, progress=False)
    assert one == [reference(model, tok, x, 1) for x in ids]
    assert generate(model, tok, ids, max_new_tokens=0, progress=False)[0] == [""] * len(ids)


def test_a_prompt_longer_than_the_context_is_left_truncated_with_a_warning(tiny_llama):
    model, tok = tiny_llama
    local = LocalModel(model, tok, name="tiny", max_length=40)
    long = "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย " * 6
    ids = tok(long, add_special_tokens=False).input_ids
    assert len(ids) > 40
    with pytest.warns(UserWarning, match=rf"prompt of {len(ids)} tokens left-truncated to 32 \(max_length 40\)"):
        text = local.generate([long, "สวัสดี"], max_new_tokens=8)
    assert text[0] == reference(model, tok, ids[-32:], 8)


def test_seeded_sampling_does_not_depend_on_the_batch(lm):
    model, tok = lm
    ids = encode(tok, PROMPTS)
    kw = {"max_new_tokens": 12, "temperature": 0.9, "top_p": 0.95, "seed": 7, "progress": False}
    alone = [generate(model, tok, [x], **kw)[0][0] for x in ids]
    for rows, order in ((16, slice(None)), (2, slice(None, None, -1)), (3, slice(1, None, 2))):
        texts, _ = generate(model, tok, ids[order], max_rows=rows, **kw)
        assert texts == alone[order], rows
    assert len(set(alone)) > 1 and alone != generate(model, tok, ids, **{**kw, "seed": 8})[0]
    # the static-batch engine that came before seeded each prompt alone: the same texts
    old = []
    for x in ids:
        set_seed(7)
        old.append(reference(model, tok, x, 12, do_sample=True, temperature=0.9, top_p=0.95))
    assert alone == old


def test_the_kv_budget_bounds_the_rows_in_flight(tiny_gemma3):
    model, tok = tiny_gemma3
    ids = encode(tok, PROMPTS)
    wide, stats = generate(model, tok, ids, max_new_tokens=10, progress=False)
    assert stats.peak_rows == len(ids)
    one_row = stats.peak_kv_bytes // len(ids)  # the rows' frame is shared: a row's share of the peak
    narrow, small = generate(model, tok, ids, max_new_tokens=10, kv_budget=2 * one_row, progress=False)
    assert narrow == wide and 1 <= small.peak_rows < len(ids) and small.peak_kv_bytes <= 2 * one_row
    engine = Engine(model, tok, max_new_tokens=4, stop=None)
    assert (
        engine.kv_budget == 2 * 1024**3 and engine.max_rows == 48 and LocalModel(model, tok, name="t").concurrency == 48
    )


def test_embedded_model_greedy_equals_batch_one_generate():
    from thai_eval_utils.backend.models import load_model

    m = load_model("embedded")
    prompts = ["คำถาม: แม่มีส้ม 5 ผล ให้ลูก 2 ผล เหลือกี่ผล\nคำตอบ:", "1, 2, 3, 4,", "Question: 2 + 3 = ?\nAnswer:"]
    stop = ["Question:", "</s>", "<|im_end|>", "\n\n"]
    texts = m.generate(prompts, max_new_tokens=16, stop=stop)
    ids = encode(m.tokenizer, prompts)
    assert texts == [cut_at_stop(reference(m.hf_model, m.tokenizer, x, 16), stop) for x in ids]
    work = m.last_generation  # prompt lookup (on by default for greedy) kept some proposals: fewer steps than tokens
    assert work.decode_row_steps == work.generated_tokens - 3 - work.accepted + work.proposed
    assert work.accepted > 0 and work.steps < work.generated_tokens - 3


CHILD = """
    import sys, time, pandas as pd
    from thai_eval_utils.backend.models import GEMMA3_CHAT_TEMPLATE, load_model
    from thai_eval_utils.thaicli import generate_answers
    m = load_model(sys.argv[1])
    m.tokenizer.chat_template = GEMMA3_CHAT_TEMPLATE
    chat, calls = m.chat, []
    def slow_chat(*a, **k):  # a slow model after its first batch: the parent kills the run in the second
        calls.append(1)
        if len(calls) > 1:
            time.sleep(float(sys.argv[3]))
        return chat(*a, **k)
    m.chat = slow_chat
    items = pd.read_json(sys.argv[4])
    generate_answers(m, items, outputs=sys.argv[2], max_new_tokens=12, temperature=0.8, seed=11, batch_size=2,
                     progress=False)
"""


def test_kill_9_mid_generation_then_resume_gives_the_uninterrupted_texts(tiny_model_dir, tmp_path):
    import pandas as pd

    items = pd.DataFrame(
        {
            "id": [f"q{i}" for i in range(8)],
            "format": ["factoid", "instruction"] * 4,
            "theme": ["Culture"] * 8,
            "question": PROMPTS + PROMPTS[:2],
            "chosen": ["ดี"] * 8,
            "rejected": ["ไม่ดี"] * 8,
        }
    )
    src = tmp_path / "items.json"
    items.to_json(src)
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def run(out: Path, pause: float) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(CHILD), str(tiny_model_dir), str(out), str(pause), str(src)],
            env=env,
            cwd=REPO,
        )

    killed = run(tmp_path / "killed", 30.0)
    deadline = time.time() + 120
    store = None
    while time.time() < deadline:
        found = list((tmp_path / "killed").rglob("items.jsonl"))
        if found and found[0].read_text().count("\n") >= 2:
            store = found[0]
            break
        time.sleep(0.05)
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    assert store is not None and store.read_text().count("\n") == 2  # one batch of two stored, then killed
    from thai_eval_utils.backend.models import GEMMA3_CHAT_TEMPLATE, load_model
    from thai_eval_utils.thaicli import generate_answers

    m = load_model(str(tiny_model_dir))
    m.tokenizer.chat_template = GEMMA3_CHAT_TEMPLATE
    for out in ("killed", "whole"):  # the rerun generates the six missing; then a run never interrupted
        generate_answers(
            m, items, outputs=tmp_path / out, max_new_tokens=12, temperature=0.8, seed=11, batch_size=2, progress=False
        )

    def answers(root: Path) -> dict[str, str]:
        lines = next(root.rglob("items.jsonl")).read_text().splitlines()
        return {r["key"]: r["answer"] for r in map(json.loads, lines)}

    resumed, whole = answers(tmp_path / "killed"), answers(tmp_path / "whole")
    assert len(resumed) == len(whole) == 8 and resumed == whole and len(set(whole.values())) > 1


def test_a_budget_per_prompt_gives_each_prompt_the_text_of_a_call_of_its_own(lm):
    """Prompts of several tasks in one call (SEA-HELM: each task its own ``max_tokens``): each row stops
    at its own budget, and its text is the one a call with that budget alone gives; a budget of 0 gives ""."""
    model, tok = lm
    ids = encode(tok, PROMPTS)
    budgets = [3, 16, 0, 9, 1, 12]
    want = [generate(model, tok, [x], max_new_tokens=n, progress=False)[0][0] for x, n in zip(ids, budgets)]
    assert want[2] == ""
    for rows in (1, 3, 16):
        texts, stats = generate(model, tok, ids, max_new_tokens=budgets, max_rows=rows, progress=False)
        assert texts == want, rows
        assert stats.generated_tokens == sum(budgets)  # a random model never says EOS early here; none ran over
    with pytest.raises(ValueError, match="2 max_new_tokens for 6 prompts"):
        generate(model, tok, ids, max_new_tokens=[1, 2], progress=False)


def test_prompt_lookup_is_recorded_in_the_run_card_and_resumes_the_same_run(tiny_llama, tmp_path):
    """``lookup_tokens`` goes into the model identity (so every run card says which engine setting made the text),
    outside the config id: a run resumed with lookup off is the same run."""
    from thai_eval_utils.core.store import RunStore

    model, tok = tiny_llama
    local = LocalModel(model, tok, name="tiny")
    assert local.lookup_tokens == 8 and local.identity["lookup_tokens"] == 8
    with RunStore.open("tiny", "demo/task", {"k": 1}, model_identity=local.identity, outputs=tmp_path) as store:
        on = store.config_id
    local.lookup_tokens = 0
    with RunStore.open("tiny", "demo/task", {"k": 1}, model_identity=local.identity, outputs=tmp_path) as store:
        assert store.config_id == on and store.card["model"]["lookup_tokens"] == 8  # the card of the run's opening
    card = json.loads(next(tmp_path.rglob("run_card.json")).read_text())
    assert card["model"]["lookup_tokens"] == 8 and local.identity["lookup_tokens"] == 0
