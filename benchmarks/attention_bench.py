"""Masked attention for packed prefix-tree calls: torch's sdpa with the explicit mask, thai-eval's block sdpa
(``packed_attention._block_sdpa``: blocks of query rows against the keys they can see) and torch's ``flex_attention``
with a block mask, to keep whichever measures faster. The packed rows are the ones the engine builds for a real
setting: ``h6.evaluate``'s requests on the repo's samples, tokenized, laid out as the runner lays them out (a shared
trunk, each document's context and its answer choices as child segments) by the engine's own ``packed_masks``, so the
masks are the engine's masks (Gemma 3's sliding-window and full layers). Queries, keys and values are random with the
model's attention shape; each method runs one call's worth of layers (Gemma 3 270M: 15 sliding-window, 3 full) and the
outputs are compared.

    .venv/bin/python benchmarks/attention_bench.py --setting arc5          # embedded Gemma 3 270M shape, CPU
    .venv/bin/python benchmarks/attention_bench.py --setting arc5 --no-compile

flex_attention runs compiled (``torch.compile``; the compile time is reported, not timed) and, for reference,
eagerly only when the call is small (eager flex materialises every score).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import h6_parity_speed as bench  # noqa: E402


def packed_row(tok, pairs: list[tuple[str, str]], budget: int):
    """The first packed row the tree runner would build for these requests: the common prefix of every fed
    sequence as the trunk, then whole documents (context segment, one child segment per continuation) in order,
    up to ``budget`` tokens. Returns ``(ids, positions, segments, ancestors, n_docs)``."""
    from thai_eval_utils.backend.encoding import encode_pairs
    from thai_eval_utils.backend.prefix_tree import ancestor_matrix

    docs: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
    for ctx, cont in encode_pairs(tok, pairs, False):
        docs.setdefault(tuple(ctx), []).append(tuple(cont[:-1]) if len(cont) > 1 else ())
    ctxs = list(docs)
    trunk = 0
    while all(len(c) > trunk and c[trunk] == ctxs[0][trunk] for c in ctxs):
        trunk += 1
    ids, pos, seg, parent = list(ctxs[0][:trunk]), list(range(trunk)), [0] * trunk, [-1]
    n_docs = 0
    for ctx in ctxs:
        conts = [c for c in docs[ctx] if c]
        size = len(ctx) - trunk + sum(len(c) for c in conts)
        if n_docs and len(ids) + size > budget:
            break
        k = len(parent)
        parent.append(0)
        ids += ctx[trunk:]
        pos += range(trunk, len(ctx))
        seg += [k] * (len(ctx) - trunk)
        for c in conts:
            parent.append(k)
            ids += c
            pos += range(len(ctx), len(ctx) + len(c))
            seg += [len(parent) - 1] * len(c)
        n_docs += 1
    return ids, pos, seg, ancestor_matrix(parent), n_docs


def timed(fn, repeats: int) -> tuple[float, object]:
    out, times = None, []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--setting", default="arc5", choices=list(bench.SETTINGS))
    ap.add_argument("--budget", type=int, default=2048, help="tokens of the packed row (the CPU default)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-compile", action="store_true", help="skip compiled flex_attention")
    args = ap.parse_args(argv)

    import torch
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from thai_eval_utils.backend import packed_attention as pt
    from thai_eval_utils.backend.decoder import Decoder
    from thai_eval_utils.backend.local_model import LocalModel
    from thai_eval_utils.backend.models import embedded_model_dir

    md = embedded_model_dir()
    model = AutoModelForCausalLM.from_pretrained(md, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(md)
    cfg = model.config.get_text_config()
    local = LocalModel(model, tok, name="attn", max_length=bench.max_length(model, tok))
    pairs = bench.evaluate_setting(local, args.setting, bench.WORK / "attn-store" / args.setting)["requests"]
    ids, pos, seg, anc, n_docs = packed_row(tok, pairs, args.budget)
    dec = Decoder(model)
    masks = pt.packed_masks(
        torch.tensor(pos), torch.tensor(seg), torch.from_numpy(anc), 0, dec.kinds, dec.window, None
    )  # layer type -> [1, 1, T, T] bool: the engine's own masks
    layers = list(cfg.layer_types)
    T, H, KV, D = len(ids), cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    torch.manual_seed(0)
    q, k, v = torch.randn(1, H, T, D), torch.randn(1, KV, T, D), torch.randn(1, KV, T, D)

    class Attn(torch.nn.Module):  # what transformers' sdpa attention reads from the attention module
        is_causal, num_key_value_groups = False, H // KV

    attn, scale = Attn(), cfg.query_pre_attn_scalar**-0.5
    allowed = sum(int(masks[t].sum()) for t in layers)
    print(
        f"{args.setting}: one packed call of {T} tokens ({n_docs} documents), {len(layers)} layers "
        f"({layers.count('sliding_attention')} sliding-window {cfg.sliding_window}, {layers.count('full_attention')} "
        f"full); heads {H}/{KV}, head_dim {D}; visible (query, key) pairs: {allowed / (len(layers) * T * T):.1%}"
    )

    def full():
        return [sdpa_attention_forward(attn, q, k, v, masks[t], scaling=scale)[0] for t in layers]

    def block():
        pt.new_call()  # as at the start of each forward call: spans once per mask, reused by the layers
        return [pt._block_sdpa(attn, q, k, v, masks[t], scaling=scale)[0] for t in layers]

    rows = {}
    rows["sdpa, explicit mask"] = timed(full, args.repeats)
    rows["block sdpa (thai-eval)"] = timed(block, args.repeats)
    P, S, A = torch.tensor(pos), torch.tensor(seg), torch.from_numpy(anc)

    def mod(window):
        def mask_mod(b, h, qi, ki):
            ok = A[S[qi], S[ki]] & (P[ki] <= P[qi])
            return ok & (P[qi] - P[ki] < window) if window else ok

        return mask_mod

    t0 = time.perf_counter()
    bm = {
        t: create_block_mask(mod(cfg.sliding_window if t == "sliding_attention" else None), 1, 1, T, T, device="cpu")
        for t in set(layers)
    }
    build = time.perf_counter() - t0

    def flex(fn):
        def run():  # flex returns [batch, heads, T, D]; transformers' layout is [batch, T, heads, D]
            return [fn(q, k, v, block_mask=bm[t], scale=scale, enable_gqa=True).transpose(1, 2) for t in layers]

        return run

    if T <= 1024:
        rows["flex_attention, eager"] = timed(flex(flex_attention), 1)
    if not args.no_compile:
        compiled = torch.compile(flex_attention, dynamic=False)
        t0 = time.perf_counter()
        try:
            flex(compiled)()
            compile_s = time.perf_counter() - t0
            rows[f"flex_attention, compiled (compile {compile_s:.0f} s, block masks {build:.2f} s)"] = timed(
                flex(compiled), args.repeats
            )
        except Exception as exc:  # report, do not hide: a CPU without a working compiler toolchain
            print(f"compiled flex_attention failed: {type(exc).__name__}: {str(exc)[:300]}")
    ref = rows["sdpa, explicit mask"][1]
    print("\n| method | seconds per call (median of runs) | max abs difference to sdpa |\n|---|---|---|")
    for name, (sec, out) in rows.items():
        diff = max(float((a - b).abs().max()) for a, b in zip(out, ref))
        print(f"| {name} | {sec:.3f} | {diff:.1e} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
