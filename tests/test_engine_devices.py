"""The log-likelihood engine in every dtype and packing path, its memory bounds and its device placement.

Every engine result is compared with a naive full forward per request (``_reference_loglikelihood``) computed
in the same dtype. Tolerance per request: ``max(1e-4, 2 x eps(dtype) x continuation tokens)``. The two sides run
the same weights through matrix products and attention calls of other shapes (packed rows of many documents,
a cached prefix, chunks), so in reduced precision each hidden state is rounded differently, by about eps
relative; a token's log-probability (|log p| <= ln 572 ~ 6.4 for these random models) moves by a small multiple
of eps. Measured on these models: at most 1.6e-3 per token in bfloat16 (eps 2^-8 = 3.9e-3), 1.6e-4 in float16
(eps 2^-11 = 4.9e-4), 7.6e-7 in float32 (the 1e-4 floor, as tests/test_scoring.py). Greedy flags must be equal
wherever the reference's smallest gap between the target's log-probability and the best other token's exceeds
that token tolerance (elsewhere rounding may legitimately flip the argmax).

GPU placement (CUDA dtypes, a ``device_map`` spreading layers over GPU and CPU) is tested when a GPU exists.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from conftest import _tiny_gemma3, _tiny_llama
from test_scoring import _fixed_mode, _requests
from torch.utils._python_dispatch import TorchDispatchMode

from thai_eval_utils.backend import decoder as _decoder
from thai_eval_utils.backend import loglikelihood as scoring
from thai_eval_utils.backend import packed_attention as _attention
from thai_eval_utils.backend import prefix_tree as _prefix
from thai_eval_utils.backend.encoding import encode_pairs, fed_tokens
from thai_eval_utils.backend.loglikelihood import (
    _reference_loglikelihood,
    loglikelihood,
)

DTYPES = [torch.float32, torch.bfloat16, torch.float16]
BUILD = {"llama": _tiny_llama, "gemma3": _tiny_gemma3}


def _tol(dtype: torch.dtype, tokens: int) -> float:
    return max(1e-4, 2 * torch.finfo(dtype).eps * tokens)


def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **k)


def _margins(model, tok, reqs) -> list[float]:
    """Per request, the smallest |log p(target) - max log p(other token)| over its continuation tokens (float32
    log_softmax of a full forward in the model's dtype)."""
    seqs, targets = fed_tokens(encode_pairs(tok, reqs, False), 1024)
    out = []
    with torch.inference_mode():
        for seq, tgt in zip(seqs, targets):
            logp = torch.log_softmax(model(torch.tensor([seq])).logits[0, -len(tgt) :].float(), -1)
            t = torch.tensor(tgt)
            own = logp.gather(1, t[:, None])[:, 0]
            other = logp.scatter(1, t[:, None], float("-inf")).amax(-1)
            out.append(float((own - other).abs().min()))
    return out


def _self_checked(model):
    """``model`` after the engine's one-off self-check (so that hooks count only the calls of the run itself)."""
    assert scoring._mode(model, 4096) == "tree"
    return model


def _check(got, want, dtype, n_tokens, margins=None):
    for i, ((lg, gg), (lw, gw)) in enumerate(zip(got, want)):
        tol = _tol(dtype, n_tokens[i])
        assert abs(lg - lw) <= tol, (i, dtype, lg, lw, tol)
        if margins is None or margins[i] > 2 * torch.finfo(dtype).eps:
            assert gg == gw, (i, gg, gw)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("which", ["llama", "gemma3"])
@pytest.mark.parametrize("path", ["packed", "batch", "chunked"])
def test_every_dtype_and_path_equals_full_forward(tiny_tokenizer, monkeypatch, dtype, which, path):
    """Packed tree calls (many documents per call), the padded-batch fallback, and long contexts chunked into
    7-token calls (with 60-entry masks), on Llama and on Gemma 3's sliding-window layers (window 6)."""
    model, tok = BUILD[which](tiny_tokenizer).to(dtype), tiny_tokenizer
    monkeypatch.setattr(scoring, "_mode", _fixed_mode("batch" if path == "batch" else "tree"))
    monkeypatch.setattr(_attention, "BLOCK_ROWS", 5)  # the block-sparse attention on these short prompts
    if path == "chunked":
        monkeypatch.setattr(_prefix, "MASK_ELEMENTS", 60)
    reqs = _requests(seed=11)
    n_tokens = [max(1, len(t)) for _, t in encode_pairs(tok, reqs, False)]
    got = _quiet(
        loglikelihood, model, tok, reqs, max_length=1024, progress=False, batch_tokens=7 if path == "chunked" else None
    )
    want = _quiet(_reference_loglikelihood, model, tok, reqs, max_length=1024)
    _check(got, want, dtype, n_tokens, _margins(model, tok, reqs))
    assert len({round(x, 2) for x, _ in got}) > len(reqs) // 2  # real, varied values


def test_reduced_precision_tolerance_still_sees_a_wrong_window(tiny_tokenizer):
    """The bfloat16 tolerance is far below what a structural error costs: the same weights with a 512-token
    window instead of 6 differ from the engine by more than the tolerance on a third of the requests or more (those whose
    context reaches well past the window)."""
    from transformers import Gemma3ForCausalLM

    model = _tiny_gemma3(tiny_tokenizer).to(torch.bfloat16)
    cfg = model.config.__class__.from_dict({**model.config.to_dict(), "sliding_window": 512})
    wide = Gemma3ForCausalLM(cfg).eval().to(torch.bfloat16)
    wide.load_state_dict(model.state_dict())
    reqs = _requests(seed=12)
    n_tokens = [max(1, len(t)) for _, t in encode_pairs(tiny_tokenizer, reqs, False)]
    got = _quiet(loglikelihood, model, tiny_tokenizer, reqs, max_length=1024, progress=False)
    wrong = _quiet(_reference_loglikelihood, wide, tiny_tokenizer, reqs, max_length=1024)
    over = [abs(a - b) > _tol(torch.bfloat16, n) for (a, _), (b, _), n in zip(got, wrong, n_tokens)]
    assert sum(over) >= len(reqs) // 3


class _VocabTensors(TorchDispatchMode):
    """Records the element count of every newly allocated tensor (not a view of an input) with a dimension of
    size ``vocab``."""

    def __init__(self, vocab: int):
        super().__init__()
        self.vocab, self.sizes = vocab, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {
            a.untyped_storage().data_ptr()
            for a in torch.utils._pytree.tree_leaves((args, kwargs))
            if isinstance(a, torch.Tensor)
        }
        for t in torch.utils._pytree.tree_leaves(out):
            if isinstance(t, torch.Tensor) and self.vocab in t.shape and t.untyped_storage().data_ptr() not in inputs:
                self.sizes.append(t.numel())
        return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_output_layer_rows_and_vocab_tensors_are_bounded(tiny_tokenizer, monkeypatch, dtype):
    """The output layer sees exactly one row per distinct scored position, at most ``HEAD_BYTES`` / (4 x vocab)
    rows per call, and no tensor with a vocabulary dimension exceeds that many rows (the reference path, which
    materialises [1, length, vocab] logits, is caught by the same probe)."""
    model, tok = _self_checked(_tiny_gemma3(tiny_tokenizer).to(dtype)), tiny_tokenizer
    vocab = model.config.vocab_size
    monkeypatch.setattr(_decoder, "HEAD_BYTES", 4 * vocab * 3)  # three rows per output-layer call
    reqs = _requests(seed=13)
    seqs, targets = fed_tokens(encode_pairs(tok, reqs, False), 1024)
    scored = {s[: len(s) - len(t) + j + 1] for s, t in zip(seqs, targets) if s for j in range(len(t))}
    rows = []
    hook = model.lm_head.register_forward_hook(lambda m, a, o: rows.append(a[0].shape))
    probe = _VocabTensors(vocab)
    try:
        with probe:
            got = _quiet(loglikelihood, model, tok, reqs, max_length=1024, progress=False)
    finally:
        hook.remove()
    assert sum(r[0] for r in rows) == len(scored) and max(r[0] for r in rows) == 3
    assert all(len(r) == 2 for r in rows)  # [rows, hidden]
    assert probe.sizes and max(probe.sizes) <= 3 * vocab
    n_tokens = [max(1, len(t)) for t in targets]
    with _VocabTensors(vocab) as naive:
        want = _quiet(_reference_loglikelihood, model, tok, reqs, max_length=1024)
    assert max(naive.sizes) > 3 * vocab
    _check(got, want, dtype, n_tokens)


def test_long_context_runs_in_bounded_calls(tiny_tokenizer):
    """A 900-token context with choices under a 64-token budget: every forward call of the decoder body takes
    at most 64 new tokens, the context needs at least 900 / 64 calls, and the results equal the reference."""
    model, tok = _self_checked(_tiny_llama(tiny_tokenizer)), tiny_tokenizer
    words = ["สวัสดี", "ครับ", " วันนี้", "อากาศ", "ดีมาก", " Question", ": What", " is", " Bangkok", "\n"]
    ctx = "".join(words[(7 * i) % len(words)] for i in range(400))
    reqs = [(ctx, c) for c in (" Bangkok", " วันนี้อากาศดีมาก", " the quick", " 12")]
    ((c_ids, _),) = encode_pairs(tok, reqs[:1], False)
    assert len(c_ids) > 900
    calls = []
    hook = model.model.register_forward_pre_hook(lambda m, a, k: calls.append(k["input_ids"].shape), with_kwargs=True)
    try:
        got = _quiet(loglikelihood, model, tok, reqs, max_length=1024, batch_tokens=64, progress=False)
        assert len(calls) >= len(c_ids) / 64 and max(s[0] * s[1] for s in calls) <= 64
        calls.clear()
        _quiet(loglikelihood, model, tok, reqs, max_length=1024, progress=False)  # default budget: few calls
        assert len(calls) <= 2
    finally:
        hook.remove()
    n_tokens = [max(1, len(t)) for _, t in encode_pairs(tok, reqs, False)]
    _check(got, _quiet(_reference_loglikelihood, model, tok, reqs, max_length=1024), torch.float32, n_tokens)


def test_local_model_passes_its_token_budget(tiny_tokenizer):
    """``LocalModel.batch_tokens`` bounds the engine's calls the same way (None: the device default)."""
    from thai_eval_utils.backend.local_model import LocalModel

    model = _self_checked(_tiny_llama(tiny_tokenizer))
    local = LocalModel(model, tiny_tokenizer, name="tiny")
    reqs = _requests(seed=17)
    calls = []
    hook = model.model.register_forward_pre_hook(lambda m, a, k: calls.append(k["input_ids"].numel()), with_kwargs=True)
    try:
        default = local.loglikelihood(reqs, progress=False)
        n_default, calls[:] = len(calls), []
        local.batch_tokens = 16
        small = local.loglikelihood(reqs, progress=False)
    finally:
        hook.remove()
    assert local.batch_tokens == 16 and max(calls) <= 16 and len(calls) > 3 * n_default
    n_tokens = [max(1, len(t)) for _, t in encode_pairs(tiny_tokenizer, reqs, False)]
    _check(small, default, torch.float32, n_tokens)


def test_packed_calls_hold_many_documents(tiny_tokenizer):
    """With the default budget the documents' prefix trees share forward calls (far fewer calls than
    documents); with a budget below one document, each runs alone. Same numbers either way."""
    model, tok = _self_checked(_tiny_gemma3(tiny_tokenizer)), tiny_tokenizer
    reqs = _requests(seed=14, docs=12)
    calls = []
    hook = model.model.register_forward_pre_hook(
        lambda m, a, k: calls.append(k["input_ids"].shape[1]), with_kwargs=True
    )
    try:
        packed = _quiet(loglikelihood, model, tok, reqs, max_length=1024, progress=False)
        n_packed, calls[:] = len(calls), []
        single = _quiet(loglikelihood, model, tok, reqs, max_length=1024, progress=False, batch_tokens=40)
        n_single = len(calls)
    finally:
        hook.remove()
    assert n_packed <= 3 and n_single >= 12
    n_tokens = [max(1, len(t)) for _, t in encode_pairs(tok, reqs, False)]
    _check(packed, single, torch.float32, n_tokens)


def test_default_budget_per_device(tiny_tokenizer):
    model = _tiny_llama(tiny_tokenizer)
    assert scoring.loglikelihood_budget(model) == scoring.CPU_TOKENS


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("which", ["llama", "gemma3"])
def test_cuda_equals_full_forward(tiny_tokenizer, dtype, which):
    model, tok = BUILD[which](tiny_tokenizer).to("cuda", dtype), tiny_tokenizer
    assert scoring.loglikelihood_budget(model) == scoring.CUDA_TOKENS
    reqs = _requests(seed=15)
    n_tokens = [max(1, len(t)) for _, t in encode_pairs(tok, reqs, False)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the engine path, not the fallback
        got = loglikelihood(model, tok, reqs, max_length=1024, progress=False)
    _check(got, _quiet(_reference_loglikelihood, model, tok, reqs, max_length=1024), dtype, n_tokens)


@cuda
def test_device_map_spread_over_gpu_and_cpu(tiny_tokenizer, tmp_path):
    """Embeddings and the first layer on the GPU, the rest and the output layer on the CPU (accelerate hooks):
    inputs go to the embeddings' device, log-probabilities are gathered from the output layer's."""
    from transformers import AutoModelForCausalLM

    _tiny_llama(tiny_tokenizer).save_pretrained(tmp_path)
    spread = AutoModelForCausalLM.from_pretrained(
        tmp_path,
        dtype=torch.float32,
        device_map={
            "model.embed_tokens": 0,
            "model.rotary_emb": 0,
            "model.layers.0": 0,
            "model.layers.1": "cpu",
            "model.norm": "cpu",
            "lm_head": "cpu",
        },
    ).eval()
    single = _tiny_llama(tiny_tokenizer)
    reqs = _requests(seed=16)
    n_tokens = [max(1, len(t)) for _, t in encode_pairs(tiny_tokenizer, reqs, False)]
    got = loglikelihood(spread, tiny_tokenizer, reqs, max_length=1024, progress=False)
    _check(
        got, _quiet(_reference_loglikelihood, single, tiny_tokenizer, reqs, max_length=1024), torch.float32, n_tokens
    )


def test_block_attention_gathers_the_keys_each_block_sees():
    """A packed call: a 3-token trunk every row sees, then two documents of 8 tokens (causal within each).
    Blocks of 4 query rows in the second document see the trunk and their own document only, so their keys are
    gathered (an index), not the span from key 0; the result equals one sdpa call on the whole mask."""
    torch.manual_seed(0)
    n = 3 + 8 + 8
    doc = torch.tensor([0] * 3 + [1] * 8 + [2] * 8)
    pos = torch.arange(n)
    mask = (pos[None, :] <= pos[:, None]) & ((doc[None, :] == doc[:, None]) | (doc[None, :] == 0))
    mask = mask[None, None]  # [1, 1, queries, keys]
    _attention.new_call()
    blocks = dict(_attention._spans(mask, 4))
    assert blocks[0] == slice(0, 4) and blocks[4] == slice(0, 8)  # trunk and first document: contiguous
    assert blocks[12].tolist() == [0, 1, 2, 11, 12, 13, 14, 15]  # trunk + its own document, not keys 3..10
    assert blocks[16].tolist() == [0, 1, 2, 11, 12, 13, 14, 15, 16, 17, 18]

    class Attn(torch.nn.Module):  # what transformers' sdpa_attention_forward reads from the attention module
        is_causal, num_key_value_groups = False, 2

    q, k, v = torch.randn(1, 4, n, 8), torch.randn(1, 2, n, 8), torch.randn(1, 2, n, 8)
    _attention.new_call()
    old, _attention.BLOCK_ROWS = _attention.BLOCK_ROWS, 4
    try:
        blocked, _ = _attention._block_sdpa(Attn(), q, k, v, mask)
    finally:
        _attention.BLOCK_ROWS = old
    whole, _ = _attention.sdpa_attention_forward(Attn(), q, k, v, mask)
    assert blocked.shape == whole.shape == (1, n, 4, 8)
    assert torch.allclose(blocked, whole, atol=1e-6)


def test_self_check_keeps_the_engine_for_the_embedded_model_in_bfloat16(monkeypatch):
    """On a real model in bfloat16 the packed path differs from the full forward by bfloat16 noise (up to 0.66 nat
    on Gemma 3 270M), so the self-check must keep the engine (a 0.1-nat tolerance sent every bfloat16 run to the
    slow reference path); masks that let the answer choices see each other must still fail the packed ("tree")
    mode, which leaves the padded-batch mode (it builds no such masks)."""
    import numpy as np

    from thai_eval_utils.backend.models import load_model

    hf = load_model("embedded").hf_model.to(torch.bfloat16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a failed self-check warns
        assert scoring._mode(hf, 2048) == "tree"
    model_call = _decoder.Decoder.model_call

    def siblings_visible(self, ids, cache, positions=None, segment=None, ancestors=None):
        return model_call(self, ids, cache, positions, segment, None if ancestors is None else np.ones_like(ancestors))

    monkeypatch.setattr(_decoder.Decoder, "model_call", siblings_visible)
    scoring._checked.pop(hf, None)
    assert scoring._mode(hf, 2048) == "batch"
