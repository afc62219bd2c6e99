"""The log-likelihood engine (thai_eval_utils.backend.loglikelihood) against the straightforward full-forward reference."""

from __future__ import annotations

import random
import warnings

import pytest
import torch

from thai_eval_utils.backend import decoder as _decoder
from thai_eval_utils.backend import loglikelihood as scoring
from thai_eval_utils.backend import packed_attention as _attention
from thai_eval_utils.backend import prefix_tree as _prefix
from thai_eval_utils.core.errors import ThaiEvalError
from thai_eval_utils.backend.encoding import encode_pairs
from thai_eval_utils.backend.loglikelihood import (
    _reference_loglikelihood,
    _reference_tokens,
    _score_tokens,
    loglikelihood,
)
from thai_eval_utils.backend.prefix_tree import build_tree

WORDS = [
    "สวัสดี",
    "ครับ",
    " วันนี้",
    "อากาศ",
    "ดีมาก",
    " Question",
    ": What",
    " is",
    " Bangkok",
    "\n",
    " ",
    "ข้าว",
    "เหนียว",
    "มะม่วง",
    " the",
    " quick",
    " 12",
]
TOL = 1e-4


def _text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(WORDS) for _ in range(n))


def _requests(seed: int = 0, docs: int = 6) -> list[tuple[str, str]]:
    """ARC-like requests: per document one long context (several sliding windows) and 2-5 choices; plus
    requests that share nothing, one-token choices over one context (MMLU-like) and unrelated short ones."""
    rng = random.Random(seed)
    shots = _text(rng, 12) + "\n\n"  # a few-shot preamble shared by some documents
    reqs = []
    for d in range(docs):
        ctx = (shots if d % 2 else "") + _text(rng, rng.randint(4, 25)) + rng.choice(["", " ", "\n"])
        reqs += [(ctx, rng.choice([" ", ""]) + _text(rng, rng.randint(1, 6))) for _ in range(rng.randint(2, 5))]
    reqs += [("Question: What is", c) for c in (" A", " B", " C", " D")]
    reqs += [(_text(rng, 3), _text(rng, 2)) for _ in range(4)]
    return reqs


def _assert_same(got, want, tol=TOL):
    assert len(got) == len(want)
    for i, ((lg, gg), (lw, gw)) in enumerate(zip(got, want)):
        assert abs(lg - lw) <= tol, (i, lg, lw)
        assert gg == gw, (i, gg, gw)


def _fixed_mode(name):
    """A stand-in for the engine's self-check (no forward calls) that picks runner mode ``name``."""

    def mode(model, budget):
        return name

    return mode


@pytest.fixture(params=["tree", "batch"])
def mode(request, monkeypatch):
    """Run the engine in one runner mode: packed tree forwards, or padded leaf batches over a repeated cache;
    sdpa attention over blocks of 5 query rows (so the tiny prompts use the block-sparse path)."""
    monkeypatch.setattr(scoring, "_mode", _fixed_mode(request.param))
    monkeypatch.setattr(_attention, "BLOCK_ROWS", 5)
    return request.param


def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **k)


# --- encoding ---------------------------------------------------------------------------------------------------
def test_encoding_follows_lm_eval(tiny_tokenizer):
    tok = tiny_tokenizer
    enc = lambda s, bos=False: tok(s, add_special_tokens=bos)["input_ids"]  # noqa: E731
    # trailing whitespace moves to the continuation; joint encoding; the context fed is encode(context)
    ((ctx, cont),) = encode_pairs(tok, [("Question: What is ", "Bangkok")], False)
    assert ctx == enc("Question: What is")
    assert cont == enc("Question: What is Bangkok")[len(ctx) :]
    # a merge across the boundary: whole[:len(ctx)] differs from encode(ctx), and lm-eval feeds encode(ctx)
    whole, c = enc("สวัสดีครับ"), enc("สวัสดีค")
    assert whole[: len(c)] != c
    ((ctx, cont),) = encode_pairs(tok, [("สวัสดีค", "รับ")], False)
    assert ctx == c and cont == whole[len(c) :]
    # BOS: the tokenizer's special tokens, except when the string already starts with the BOS text
    ((ctx, cont),) = encode_pairs(tok, [("สวัสดี", "ครับ")], True)
    assert ctx[0] == tok.bos_token_id and ctx == enc("สวัสดี", True)
    ((ctx, _),) = encode_pairs(tok, [("<bos>สวัสดี", "ครับ")], True)
    assert ctx.count(tok.bos_token_id) == 1
    # empty context: BOS as the context, continuation encoded without special tokens
    ((ctx, cont),) = encode_pairs(tok, [("", " Bangkok")], True)
    assert ctx == [tok.bos_token_id] and cont == enc(" Bangkok")


def test_build_tree_shares_longest_common_prefixes():
    seqs = [(1, 2, 3, 4), (1, 2, 3, 5), (1, 2), (7,), (1, 2, 3, 4), (1, 2, 6)]
    root, term = build_tree(seqs)
    assert [n.tokens for n in root.children] == [(1, 2), (7,)]
    a = root.children[0]
    assert term[2] is a and term[3] is root.children[1] and term[0] is term[4]
    assert [n.tokens for n in a.children] == [(3,), (6,)]
    assert [n.tokens for n in a.children[0].children] == [(4,), (5,)]
    assert term[1].parent is term[0].parent is a.children[0]
    for s, node in zip(seqs, term):  # every sequence ends at its node, and the path spells it
        path, n = [], node
        while n is not root:
            path = list(n.tokens) + path
            n = n.parent
        assert tuple(path) == s and node.end == len(s)


# --- equality with the reference ------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["tiny_llama", "tiny_gemma3"])
@pytest.mark.parametrize("bos", [False, True])
def test_engine_equals_full_forward(request, which, bos, mode):
    model, tok = request.getfixturevalue(which)
    reqs = _requests(seed=1)
    got = _quiet(loglikelihood, model, tok, reqs, add_bos_token=bos, max_length=1024, progress=False)
    want = _quiet(_reference_loglikelihood, model, tok, reqs, add_bos_token=bos, max_length=1024)
    _assert_same(got, want)
    assert len({round(x, 3) for x, _ in got}) > len(reqs) // 2  # real, varied values


def test_gemma3_sliding_window_is_applied_and_matched(tiny_gemma3, mode):
    """Prefix + continuation exceed the 6-token window several times; a wide-window copy of the same weights
    scores differently, so the equality really covers the sliding layers."""
    from transformers import Gemma3ForCausalLM

    model, tok = tiny_gemma3
    reqs = _requests(seed=2)
    assert min(len(tok(c)["input_ids"]) for c, _ in reqs[:8]) > 2 * model.config.sliding_window
    got = _quiet(loglikelihood, model, tok, reqs, max_length=1024, progress=False)
    _assert_same(got, _quiet(_reference_loglikelihood, model, tok, reqs, max_length=1024))
    cfg = model.config.__class__.from_dict(model.config.to_dict())
    cfg.sliding_window = 512
    wide = Gemma3ForCausalLM(cfg).eval()
    wide.load_state_dict(model.state_dict())
    wide_ref = _quiet(_reference_loglikelihood, wide, tok, reqs, max_length=1024)
    assert max(abs(a - b) for (a, _), (b, _) in zip(got, wide_ref)) > 1e-2
    _assert_same(_quiet(loglikelihood, wide, tok, reqs, max_length=1024, progress=False), wide_ref)


def test_order_and_batch_size_independence(tiny_gemma3, mode):
    model, tok = tiny_gemma3
    reqs = _requests(seed=3)
    base = _quiet(loglikelihood, model, tok, reqs, max_length=1024, progress=False)
    perm = list(range(len(reqs)))
    random.Random(0).shuffle(perm)
    shuffled = _quiet(loglikelihood, model, tok, [reqs[i] for i in perm], max_length=1024, progress=False)
    assert [shuffled[perm.index(i)] for i in range(len(reqs))] == base  # bitwise: the tree ignores order
    for budget in (7, 40, 300):  # chunked prefixes, long leaves run alone, several leaf groups per node
        _assert_same(
            _quiet(loglikelihood, model, tok, reqs, max_length=1024, batch_tokens=budget, progress=False),
            base,
            tol=1e-5,
        )
    one_by_one = [_quiet(loglikelihood, model, tok, [r], max_length=1024, progress=False)[0] for r in reqs[::4]]
    _assert_same(one_by_one, base[::4], tol=1e-5)


def test_packing_limits_split_calls(tiny_gemma3, monkeypatch):
    """Tiny limits on packed calls (tokens and mask entries) force every split: the context's head run alone,
    several leaf groups per node, long leaves run on their own; the numbers stay the reference's."""
    monkeypatch.setattr(scoring, "_mode", _fixed_mode("tree"))
    model, tok = tiny_gemma3
    reqs = _requests(seed=9)
    want = _quiet(_reference_loglikelihood, model, tok, reqs, max_length=1024)
    for tokens, elements in ((12, 10_000), (4096, 300), (6, 60), (4096, 1 << 25)):
        monkeypatch.setattr(_prefix, "MASK_ELEMENTS", elements)
        _assert_same(
            _quiet(loglikelihood, model, tok, reqs, max_length=1024, batch_tokens=tokens, progress=False), want
        )


def test_left_truncation_warns_and_matches(tiny_llama, mode):
    model, tok = tiny_llama
    reqs = [r for r, (_, t) in zip(_requests(seed=4), encode_pairs(tok, _requests(seed=4), False)) if len(t) <= 12]
    with pytest.warns(UserWarning, match=r"left-truncated"):
        got = loglikelihood(model, tok, reqs, max_length=12, progress=False)
    _assert_same(got, _quiet(_reference_loglikelihood, model, tok, reqs, max_length=12))
    assert got != _quiet(loglikelihood, model, tok, reqs, max_length=1024, progress=False)
    # the fed window is exactly max_length tokens ending just before the last continuation token
    ctx, cont = "".join(WORDS) * 2, " Bangkok"
    ((c_ids, t_ids),) = encode_pairs(tok, [(ctx, cont)], False)
    fed = tuple((c_ids + t_ids)[-13:][:-1])
    want = _reference_tokens(model, [fed], [t_ids])
    with pytest.warns(UserWarning, match=r"1 of 1 requests exceed max_length 12"):
        got = loglikelihood(model, tok, [(ctx, cont)], max_length=12, progress=False)
    _assert_same(got, want)
    assert len(fed) == 12 and len(c_ids) + len(t_ids) > 13
    with pytest.raises(ThaiEvalError, match="exceeds max_length"):
        loglikelihood(model, tok, [("สวัสดี", "".join(WORDS))], max_length=12, progress=False)


def test_empty_and_whitespace_continuations(tiny_gemma3, mode):
    model, tok = tiny_gemma3
    ctx = "ข้าวเหนียวมะม่วง Question: What is"
    reqs = [(ctx, ""), (ctx, " "), (ctx + " ", ""), ("", " Bangkok"), ("", "")]
    assert encode_pairs(tok, [(ctx, "")], False)[0][1] == []
    with pytest.warns(UserWarning, match=r"2 continuation\(s\) encode to no tokens"):
        got = loglikelihood(model, tok, reqs, max_length=1024, progress=False)
    assert got[0] == (0.0, True) and got[4] == (0.0, True)
    assert got[1][0] < 0 and got[1] == pytest.approx(got[2])  # " " moved from the context gives one token
    # empty context: log p(continuation | BOS)
    ((c_ids, t_ids),) = encode_pairs(tok, [("", " Bangkok")], False)
    assert c_ids == [tok.bos_token_id]
    _assert_same([got[3]], _reference_tokens(model, [tuple(c_ids + t_ids[:-1])], [t_ids]))
    _assert_same(got[1:4], _quiet(_reference_loglikelihood, model, tok, reqs[1:4], max_length=1024))


@pytest.mark.parametrize("which", ["tiny_llama", "tiny_gemma3"])
def test_greedy_flags(request, which):
    """Continuations built from the model's own argmax are greedy; changing one token makes them not."""
    model, _ = request.getfixturevalue(which)
    prompts = [[5 + i, 40 + i, 77, 90 + 2 * i, 11, 300 + i, 12, 13, 14, 15] for i in range(3)]
    seqs, targets = [], []
    for p in prompts:
        ids = list(p)
        with torch.inference_mode():
            for _ in range(4):
                ids.append(int(model(torch.tensor([ids])).logits[0, -1].argmax()))
        seqs += [tuple(ids[:-1])] * 2
        bad = (ids[-1] + 1) % model.config.vocab_size
        targets += [ids[len(p) :], ids[len(p) : -1] + [bad]]
    got = _score_tokens(model, seqs, targets, 4096, "tree")
    assert [g for _, g in got] == [True, False] * 3
    _assert_same(got, _reference_tokens(model, seqs, targets))


# --- work avoided -----------------------------------------------------------------------------------------------
def test_each_prefix_runs_once_and_output_layer_only_at_scored_positions(tiny_gemma3, mode):
    model, tok = tiny_gemma3
    reqs = _requests(seed=5)
    enc = encode_pairs(tok, reqs, False)
    fed = [tuple((c + t)[:-1]) for c, t in enc if t]
    distinct_prefixes = {s[:k] for s in fed for k in range(1, len(s) + 1)}
    scored = {s[:k] for (c, t), s in zip([e for e in enc if e[1]], fed) for k in range(len(s) - len(t) + 1, len(s) + 1)}
    embedded, head_rows = [], []
    pad = 0
    assert pad == tok.pad_token_id and all(pad not in s for s in fed)
    hooks = [
        model.model.embed_tokens.register_forward_hook(lambda m, a, o: embedded.append(a[0].flatten())),
        model.lm_head.register_forward_hook(lambda m, a, o: head_rows.append(a[0].shape)),
    ]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no fallback to the reference path
            got = loglikelihood(model, tok, reqs, max_length=1024, progress=False)
    finally:
        for h in hooks:
            h.remove()
    ids = torch.cat(embedded)
    assert int((ids != pad).sum()) == len(distinct_prefixes)  # every distinct prefix token runs exactly once
    assert int((ids == pad).sum()) <= (0 if mode == "tree" else len(distinct_prefixes) // 4)  # (little) padding
    assert sum(r[0] for r in head_rows) == len(scored)  # one output-layer row per distinct scored position
    assert all(len(r) == 2 for r in head_rows)  # [rows, hidden]: never [batch, length, hidden]
    assert sum(len(s) for s in fed) > 2 * len(distinct_prefixes)  # the reference would run far more tokens
    _assert_same(got, _quiet(_reference_loglikelihood, model, tok, reqs, max_length=1024))


def test_token_scores_from_a_given_position_run_the_head_only_there(tiny_gemma3):
    """``token_loglikelihood(..., scored_from=)`` (the Thai LLM Leaderboard's ``sums="labels"``): the tokens before
    the start are context only; each sum equals a plain forward's terms from the start on; the output layer gets
    one row per distinct scored position; nothing to score gives (0.0, True)."""
    from thai_eval_utils.backend.loglikelihood import token_loglikelihood

    model, tok = tiny_gemma3
    prompt = tok("คำถาม: ข้อใดถูกต้อง ตอบ:", add_special_tokens=False)["input_ids"]
    seqs = [[tok.bos_token_id, *prompt, *tok(f" {x}", add_special_tokens=False)["input_ids"]] for x in "abc"]
    start = len(prompt) + 1
    whole = token_loglikelihood(model, seqs)  # the default, every token after the first (and the one-off self-check)
    head_rows = []
    hook = model.lm_head.register_forward_hook(lambda m, a, o: head_rows.append(a[0].shape[0]))
    try:
        got = token_loglikelihood(model, [*seqs, seqs[0][:start]], scored_from=[start] * 4)
    finally:
        hook.remove()
    assert got[3] == (0.0, True)
    for seq, (ll, _) in zip(seqs, got):
        with torch.inference_mode():
            logp = torch.log_softmax(model(input_ids=torch.tensor([seq])).logits[0].float(), dim=-1)
        expected = sum(float(logp[p - 1, seq[p]]) for p in range(start, len(seq)))
        assert abs(ll - expected) < 1e-4
    assert sum(head_rows) == len({tuple(s[:p]) for s in seqs for p in range(start, len(s))})
    assert all(w[0] < g[0] for w, g in zip(whole, got))


def test_output_layer_chunks_rows(tiny_llama, monkeypatch):
    """At most ``_HEAD_BYTES`` of float32 logits exist at once, however many positions are scored."""
    model, tok = tiny_llama
    vocab = model.config.vocab_size
    monkeypatch.setattr(_decoder, "HEAD_BYTES", 4 * vocab * 3)  # three rows per output-layer call
    rows = []
    hook = model.lm_head.register_forward_hook(lambda m, a, o: rows.append(o.shape[0]))
    reqs = [("สวัสดี", " Question: What is the quick Bangkok"), ("ข้าว", "เหนียวมะม่วง วันนี้อากาศดีมาก")]
    try:
        got = loglikelihood(model, tok, reqs, max_length=1024, progress=False)
    finally:
        hook.remove()
    assert max(rows) == 3 and sum(rows) >= 10
    _assert_same(got, _reference_loglikelihood(model, tok, reqs, max_length=1024))


def test_mode_selection(tiny_tokenizer, tiny_gemma3, monkeypatch):
    """The self-check picks packed tree forwards for sdpa and eager attention, padded batches when masks cannot
    be expressed, and the chosen mode equals the reference."""
    from conftest import _tiny_gemma3
    from transformers import Gemma3ForCausalLM

    model, tok = tiny_gemma3
    assert scoring._mode(model, 4096) == "tree"
    base = _tiny_gemma3(tiny_tokenizer)
    cfg = base.config.__class__.from_dict(base.config.to_dict())
    cfg._attn_implementation = "eager"
    eager = Gemma3ForCausalLM(cfg).eval()
    eager.load_state_dict(base.state_dict())
    assert eager.config._attn_implementation == "eager" and scoring._mode(eager, 4096) == "tree"
    reqs = _requests(seed=8, docs=3)
    _assert_same(
        loglikelihood(eager, tok, reqs, max_length=1024, progress=False),
        _reference_loglikelihood(eager, tok, reqs, max_length=1024),
    )
    monkeypatch.setattr(scoring, "tree_supported", lambda m: False)
    fresh = _tiny_gemma3(tiny_tokenizer)
    assert scoring._mode(fresh, 4096) == "batch"


def test_progress_bar_shows_requests_and_tokens(tiny_llama, capsys):
    model, tok = tiny_llama
    reqs = _requests(seed=10, docs=2)
    loglikelihood(model, tok, reqs, max_length=1024, progress=True)
    err = capsys.readouterr().err
    assert f"{len(reqs)}/{len(reqs)}" in err and ("req/s" in err or "s/req" in err) and "tok/s" in err
    loglikelihood(model, tok, reqs, max_length=1024, progress=False)
    assert capsys.readouterr().err == ""


def test_training_mode_warns(tiny_llama):
    model, tok = tiny_llama
    model.train()
    try:
        with pytest.warns(UserWarning, match="training mode"):
            loglikelihood(model, tok, [("สวัสดี", "ครับ")], max_length=1024, progress=False)
    finally:
        model.eval()


def test_attention_implementation_restored(tiny_llama, monkeypatch):
    """The block-sparse sdpa is swapped in only while the engine runs, also when it fails."""
    model, tok = tiny_llama
    seen = []
    real_call = _decoder.Decoder.model_call

    def spy(self, *args):
        seen.append(model.config._attn_implementation)
        return real_call(self, *args)

    monkeypatch.setattr(_decoder.Decoder, "model_call", spy)
    loglikelihood(model, tok, [("สวัสดี", "ครับ")], max_length=1024, progress=False)
    assert seen[-1] == "thai_eval_block_sdpa" and model.config._attn_implementation == "sdpa"

    def boom(self, *args):
        raise RuntimeError("boom")

    monkeypatch.setattr(_decoder.Decoder, "model_call", boom)
    with pytest.raises(RuntimeError, match="boom"):
        loglikelihood(model, tok, [("สวัสดี", "ครับ")], max_length=1024, progress=False)
    assert model.config._attn_implementation == "sdpa"


# --- other output layers -----------------------------------------------------------------------------------------
def test_final_logit_softcapping(tiny_tokenizer):
    from conftest import _tiny_gemma3
    from transformers import Gemma3ForCausalLM

    base = _tiny_gemma3(tiny_tokenizer)
    cfg = base.config.__class__.from_dict({**base.config.to_dict(), "final_logit_softcapping": 0.02})
    model = Gemma3ForCausalLM(cfg).eval()
    model.load_state_dict(base.state_dict())
    reqs = _requests(seed=6, docs=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the engine path, not the fallback
        got = loglikelihood(model, tiny_tokenizer, reqs, max_length=1024, progress=False)
    want = _reference_loglikelihood(model, tiny_tokenizer, reqs, max_length=1024)
    _assert_same(got, want)
    uncapped = _reference_loglikelihood(base, tiny_tokenizer, reqs, max_length=1024)
    assert max(abs(a - b) for (a, _), (b, _) in zip(want, uncapped)) > 0.1


def test_unknown_output_layer_falls_back_to_reference(tiny_tokenizer):
    """A model whose logits are post-processed in a way the engine does not know fails the self-check: the
    engine warns and returns the reference numbers."""
    from conftest import _tiny_llama
    from transformers import LlamaForCausalLM

    class Scaled(LlamaForCausalLM):
        def forward(self, *a, **k):
            out = super().forward(*a, **k)
            out.logits = out.logits * 3.0
            return out

    base = _tiny_llama(tiny_tokenizer)
    model = Scaled(base.config).eval()
    model.load_state_dict(base.state_dict())
    reqs = _requests(seed=7, docs=2)
    with pytest.warns(UserWarning, match="self-check failed for Scaled"):
        got = loglikelihood(model, tiny_tokenizer, reqs, max_length=1024, progress=False)
    _assert_same(got, _reference_loglikelihood(model, tiny_tokenizer, reqs, max_length=1024))
