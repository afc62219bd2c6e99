"""The generation part of ``gpu_bench.py``: lm-evaluation-harness 0.4.13's ``HFLM.generate_until``
against thai-eval's generation engine (``LocalModel.generate``, continuous batching) on one random-weight model.

The 8B shape of ``gpu_bench.SHAPES`` (Llama-3.1-8B, bfloat16, random weights, the Gemma 3 tokenizer) generates
from GSM8K-shaped prompts: 5-shot Thai prompts built by ``thai_eval_utils.h6.tasks`` from the shipped samples (the
12 test questions cycled, 5 of the 6 train examples drawn per prompt, the first numbered as ``gpu_bench`` numbers
its tiled documents), greedy, 256 new tokens, lm-eval 0.4.13's GSM8K stops. Both sides run on the same model
object: thai-eval as configured by default and ``HFLM(pretrained=model, tokenizer=tok, batch_size=B)`` at a few
batch sizes, largest first (a smaller one is skipped when its estimate would pass the time budget). Recorded per
side: wall time, generated tokens/s, peak GPU memory, texts equal to thai-eval's. Random weights give garbage, but deterministic greedy garbage: in bfloat16 a
batch's shapes can flip a near-tie token, so differing texts are reported, not failed. The tiny configuration
(``--tiny``: a 2-layer model on the CPU, float32) also checks thai-eval's texts against transformers' ``generate``
at batch size 1.
"""

from __future__ import annotations

import functools
import math
import random
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import gpu_bench as gb
from lmeval_generate import count_positions
from thai_eval_utils.backend.prefix_tree import tree_positions
from thai_eval_utils.h6.protocol import GSM8K_MAX_NEW_TOKENS, GSM8K_STOPS_H

if TYPE_CHECKING:
    from thai_eval_utils.backend.local_model import LocalModel

GSM8K = gb.DATA / "th_gsm8k"
STOPS = GSM8K_STOPS_H  # lm-eval 0.4.13's gsm8k.yaml: "Question:", "</s>", "<|im_end|>"


@dataclass(frozen=True)
class GenPlan:
    """The generation part: model shape, prompts, new tokens, lm-eval's batch sizes (tried in this order) and how
    many prompts are checked against transformers' ``generate`` at batch size 1 (0: none)."""

    shape: str
    prompts: int
    max_new_tokens: int
    batch_sizes: tuple[int, ...]
    reference: int
    shots: int = 5


GEN_PLANS = {
    "gpu": GenPlan("llama-3.1-8b", 64, GSM8K_MAX_NEW_TOKENS, (64, 16, 1), 0),
    "tiny": GenPlan("tiny-llama", 3, 16, (1, 2), 3),
}


def gsm8k_prompts(n: int, seed: int, shots: int) -> list[str]:
    """``n`` GSM8K 5-shot prompts (thai-eval's templates): test questions cycled, ``shots`` train examples drawn
    per prompt (``random.Random(seed:gsm8k:k)``), the first one numbered so that no two prompts are equal."""
    from thai_eval_utils.h6 import tasks as h6_tasks

    spec = h6_tasks.get_task("th_gsm8k")
    templates = h6_tasks.templates_for(spec)
    docs, pool = gb._jsonl(GSM8K / "th_gsm8k_test.jsonl"), gb._jsonl(GSM8K / "th_gsm8k_train.jsonl")
    out = []
    for k in range(n):
        ex = random.Random(f"{seed}:gsm8k:{k}").sample(pool, shots)
        examples = [gb._numbered(ex[0], "question", k + 1), *ex[1:]]
        out.append(h6_tasks.build_requests(spec, docs[k % len(docs)], examples, templates).prompt)
    return out


# --- the sides ------------------------------------------------------------------------------------------------
def run_thai_eval(lm: LocalModel, prompts: list[str], plan: GenPlan) -> tuple[list[str], dict]:
    """thai-eval's ``LocalModel.generate``; (texts, the engine's work counts)."""
    texts = lm.generate(prompts, max_new_tokens=plan.max_new_tokens, stop=list(STOPS))
    return texts, asdict(lm.last_generation)


def run_lmeval(
    hflm_cls, instance_cls, model, tok, prompts: list[str], max_new_tokens: int, batch_size: int
) -> tuple[list[str], int]:
    """lm-eval's ``generate_until`` on the in-memory model (greedy, the GSM8K stops, add_bos_token False);
    (texts, token positions its ``model.generate`` calls computed: rows x (padded width + new tokens - 1))."""
    lm = hflm_cls(pretrained=model, tokenizer=tok, batch_size=batch_size, add_bos_token=False)
    computed = count_positions(lm)
    gen = {"until": list(STOPS), "max_gen_toks": max_new_tokens, "do_sample": False}
    reqs = [instance_cls("generate_until", {}, (p, dict(gen)), i) for i, p in enumerate(prompts)]
    return list(lm.generate_until(reqs, disable_tqdm=True)), sum(computed)


def reference(model, tok, prompts: list[str], max_new_tokens: int) -> list[str]:
    """transformers' greedy ``generate`` one prompt at a time (no BOS added), decoded without special tokens and
    cut before the first stop string: what lm-eval's batch size 1 does."""
    import torch

    from thai_eval_utils.backend.stops import cut_at_stop

    out = []
    with torch.inference_mode():
        for p in prompts:
            ids = torch.tensor([tok(p, add_special_tokens=False).input_ids], device=model.device)
            gen = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=max_new_tokens,
                do_sample=False,
                pad_token_id=tok.pad_token_id,
            )
            out.append(cut_at_stop(tok.decode(gen[0, ids.shape[1] :], skip_special_tokens=True), list(STOPS)))
    return out


def computed(stats: dict) -> int:
    """Token positions thai-eval's engine fed: prompts and one per decode row step."""
    return stats["prompt_tokens"] + stats["decode_row_steps"]


def perfect(stats: dict, prompts: int, distinct_prompt_tokens: int) -> int:
    """Positions a perfect scheduler computes for the same texts: every distinct prompt position (the prompts'
    prefix tree: shared few-shot examples once), every generated token but each row's last (never fed back)."""
    return distinct_prompt_tokens + stats.get("generated_tokens", 0) - prompts


def _side(res: dict, generated: int, base: list[str] | None) -> dict:
    """A timed side: seconds, generated tokens/s (thai-eval's generated-token count as the common numerator),
    peak memory, texts equal to ``base`` and the prompts that differ; or its error."""
    if "error" in res:
        return {k: v for k, v in res.items() if k != "result"}
    s = res["seconds"]
    out = {"seconds": round(s, 3), "tokens_per_s": round(generated / s, 1)}
    if "peak_gib" in res:
        out["peak_gib"] = res["peak_gib"]
    texts = res["result"][0]
    if base is not None:
        out["texts_equal"] = sum(a == b for a, b in zip(texts, base))
        out["differ"] = [i for i, (a, b) in enumerate(zip(texts, base)) if a != b]
    return out


# --- the run --------------------------------------------------------------------------------------------------
def run(ctx: gb.Ctx, plan: GenPlan, budget_s: float) -> dict:
    """Build the model, warm both sides up, time thai-eval and lm-eval at each batch
    size (largest first; skipped once the deadline is passed or its estimate from the last batch size would pass it),
    within ``budget_s`` seconds from the start of this part. The record is kept in ``ctx.results["generation"]``
    and written after every measurement."""
    deadline = time.monotonic() + budget_s
    rec = ctx.results.setdefault("generation", {})
    rec.update(
        {
            "shape": plan.shape,
            "dtype": gb.SHAPES[plan.shape].dtype,
            "prompts": plan.prompts,
            "shots": plan.shots,
            "max_new_tokens": plan.max_new_tokens,
            "stops": list(STOPS),
            "budget_s": budget_s,
        }
    )
    prompts, lm = prepare(ctx, plan, rec)
    model = lm.hf_model
    hflm, inst, why = ctx.lmeval
    t0 = time.perf_counter()
    warm = GenPlan(plan.shape, 1, 4, (1,), 0)
    run_thai_eval(lm, prompts[:1], warm)
    if hflm:
        run_lmeval(hflm, inst, model, ctx.tok, prompts[:1], 4, 1)
    rec["warmup_seconds"] = round(time.perf_counter() - t0, 1)
    ours = gb.timed(functools.partial(run_thai_eval, lm, prompts, plan), ctx.device)  # lm is deleted below
    if "error" in ours:
        rec["thai_eval"] = _side(ours, 0, None)
        return rec
    texts, stats = ours["result"]
    generated = stats["generated_tokens"]
    rec["thai_eval"] = {**_side(ours, generated, None), "computed_positions": computed(stats), "work": stats}
    gb.log(f"  thai-eval {rec['thai_eval']}")
    gb.write_results(ctx.out, ctx.results)
    rec["lmeval"] = lmeval_trials(ctx, plan, model, prompts, texts, generated, deadline) if hflm else {"skipped": why}
    ok = [t for t in rec["lmeval"] if "texts_equal" in t] if hflm else []
    if ok:
        best = min(ok, key=lambda t: t["seconds"])
        rec["best_batch"], rec["speedup"] = best["batch_size"], round(best["seconds"] / rec["thai_eval"]["seconds"], 2)
    if plan.reference:
        ref = reference(model, ctx.tok, prompts[: plan.reference], plan.max_new_tokens)
        rec["reference"] = {
            "prompts": len(ref),
            "thai_eval_equal": sum(a == b for a, b in zip(texts, ref)),
            "differ": [i for i, (a, b) in enumerate(zip(texts, ref)) if a != b],
        }
    del lm, model
    gb.free(ctx.device)
    return rec


def prepare(ctx: gb.Ctx, plan: GenPlan, rec: dict) -> tuple[list[str], LocalModel]:
    """The plan's prompts (their token counts into ``rec``) and a ``LocalModel`` on the freshly built random-weight
    model (build time and parameter count into ``rec``)."""
    from thai_eval_utils.backend.local_model import LocalModel

    prompts = gsm8k_prompts(plan.prompts, ctx.seed, plan.shots)
    ids = ctx.tok(prompts, add_special_tokens=False)["input_ids"]
    lens = [len(x) for x in ids]
    rec.update(
        {
            "prompt_tokens": sum(lens),
            "mean_prompt_tokens": round(sum(lens) / len(lens), 1),
            "distinct_prompt_tokens": tree_positions([tuple(x) for x in ids]),
        }
    )
    t0 = time.perf_counter()
    model = gb.build_model(plan.shape, ctx.tok, ctx.device, ctx.seed)
    gb._sync(ctx.device)
    rec["build_seconds"] = round(time.perf_counter() - t0, 1)
    rec["params"] = sum(p.numel() for p in model.parameters())
    lm = LocalModel(
        model, ctx.tok, name=plan.shape, identity={"name": plan.shape, "source": f"random weights, seed {ctx.seed}"}
    )
    gb.log(
        f"generation: {plan.shape} built in {rec['build_seconds']} s; {len(prompts)} prompts, "
        f"{rec['prompt_tokens']:,} prompt tokens, {plan.max_new_tokens} new tokens"
    )
    return prompts, lm


def lmeval_trials(
    ctx: gb.Ctx, plan: GenPlan, model, prompts: list[str], texts: list[str], generated: int, deadline: float
) -> list[dict]:
    """lm-eval at each batch size of the plan. A batch size is skipped when the deadline has passed or when the
    last one's time scaled by the number of batches (a decode step of a small batch is assumed to cost what one of
    a larger batch did: on a GPU a step is bound by reading the weights) would pass it."""
    hflm, inst, _ = ctx.lmeval
    trials, last = [], None
    for bs in plan.batch_sizes:
        est = (
            last["seconds"] * math.ceil(len(prompts) / bs) / math.ceil(len(prompts) / last["batch_size"])
            if last
            else 0.0
        )
        if time.monotonic() + est > deadline:
            why = "time budget" + (f" (estimated {est:.0f} s)" if est else "")
            trials.append({"batch_size": bs, "skipped": why})
            continue
        res = gb.timed(
            lambda bs=bs: run_lmeval(hflm, inst, model, ctx.tok, prompts, plan.max_new_tokens, bs), ctx.device
        )
        trials.append({"batch_size": bs, **_side(res, generated, texts)})
        if "result" in res:
            trials[-1]["computed_positions"] = res["result"][1]
            last = trials[-1]
        gb.log(f"  lm-eval batch {bs}: {trials[-1]}")
        gb.write_results(ctx.out, ctx.results)
    return trials


# --- report ---------------------------------------------------------------------------------------------------
def _row(name: str, r: dict, n: int) -> str:
    if "seconds" not in r or "error" in r:
        return f"| {name} | {r.get('error') or r.get('skipped') or '-'} | | | | |"
    peak = f"{r['peak_gib']}" if "peak_gib" in r else "-"
    equal = (
        f"{r['texts_equal']} of {n}" + (f" (differ: {r['differ'][:10]})" if r["differ"] else "")
        if "texts_equal" in r
        else "(the texts compared against)"
    )
    positions = f"{r['computed_positions']:,}" if "computed_positions" in r else ""
    return f"| {name} | {r['seconds']:.2f} | {r['tokens_per_s']:,} | {peak} | {equal} | {positions} |"


def markdown(rec: dict) -> list[str]:
    """The generation part's lines for ``gpu_bench.md``."""
    if "thai_eval" not in rec:
        return ["", f"Generation: {rec.get('error') or rec.get('skipped') or 'not run'}."]
    n, te = rec["prompts"], rec["thai_eval"]
    lines = [
        "",
        (
            f"**Generation**: {rec['shape']} ({rec['dtype']}), {n} GSM8K {rec['shots']}-shot Thai "
            f"prompts ({rec['prompt_tokens']:,} prompt tokens, mean {rec['mean_prompt_tokens']}), greedy, "
            f"{rec['max_new_tokens']} new tokens, stops {rec['stops']}. Tokens/s: thai-eval's generated tokens "
            f"({te.get('work', {}).get('generated_tokens', '-')}) over each side's wall time. Texts equal: to "
            "thai-eval's (in bfloat16 a batch's shapes may flip a near-tie of the random weights: reported, not "
            "failed). Positions computed: prompt tokens plus fed decode positions (lm-eval: rows x (padded "
            "width + new tokens - 1) per batch, padding and finished rows included)."
        ),
        "",
        "| side | seconds | generated tokens/s | peak GiB | texts equal | positions computed |",
        "|---|---|---|---|---|---|",
        _row("thai-eval", te, n),
    ]
    lm = rec.get("lmeval", {})
    if isinstance(lm, dict):
        lines.append(f"| lm-eval | {lm.get('skipped', '-')} | | | | |")
    else:
        lines += [_row(f"lm-eval 0.4.13 HF, batch {t['batch_size']}", t, n) for t in lm]
    w = te.get("work", {})
    lines += [
        "",
        (
            f"thai-eval's engine: {w.get('prompt_tokens', 0):,} prompt tokens, {w.get('decode_row_steps', 0):,} "
            f"decode rows in {w.get('steps', 0):,} steps, widest batch {w.get('peak_rows', 0)} rows; a "
            f"perfect scheduler computes {perfect(w, n, rec.get('distinct_prompt_tokens', 0)):,} positions. Speed-up over lm-eval's best batch: "
            + (f"**{rec['speedup']}x** (batch {rec['best_batch']})." if "speedup" in rec else "not measured.")
        ),
    ]
    if "reference" in rec:
        ref = rec["reference"]
        lines.append(
            f"thai-eval against transformers' `generate` at batch size 1: {ref['thai_eval_equal']} of "
            f"{ref['prompts']} texts equal" + (f" (differ: {ref['differ']})." if ref["differ"] else ".")
        )
    return lines


def print_plan(plan: GenPlan, tok, seed: int) -> None:
    """The generation part's plan: prompts, their tokens, lm-eval's batch sizes and padded positions."""
    prompts = gsm8k_prompts(plan.prompts, seed, plan.shots)
    lens = sorted((len(x) for x in tok(prompts, add_special_tokens=False)["input_ids"]), reverse=True)
    padded = {
        bs: sum(len(lens[i : i + bs]) * (lens[i] + plan.max_new_tokens - 1) for i in range(0, len(lens), bs))
        for bs in plan.batch_sizes
    }
    print(
        f"\ngeneration: {plan.shape} ({gb.SHAPES[plan.shape].dtype}), {len(prompts)} GSM8K {plan.shots}-shot "
        f"prompts, {sum(lens):,} prompt tokens (longest {lens[0]:,}), {plan.max_new_tokens} new tokens, stops "
        f"{list(STOPS)}"
    )
    print(
        "  lm-eval positions at most (rows x (padded width + new tokens - 1)) by batch size: "
        + ", ".join(f"{bs}: {n:,}" for bs, n in padded.items())
        + f"; a perfect scheduler: {sum(lens) + len(lens) * (plan.max_new_tokens - 1):,}"
    )
