"""Parity and speed of thai-eval's log-likelihood engine against lm-evaluation-harness 0.4.13 (Thai-H6 spec,
"Running lm-eval as the side-by-side peer") on every leaderboard setting of the log-likelihood tasks: ARC 25-shot
and 5-shot, HellaSwag 10-shot, MMLU 5-shot, TruthfulQA 0-shot (mc1 and mc2 requests), Winogrande 5-shot, over the
repo's samples. ``h6.evaluate`` builds each setting's requests (leaderboard protocol, timed end to end); lm-eval's
HFLM scores exactly those (context, continuation) strings at each batch size (a raw-request task: context as
``doc_to_text``, continuations as choices, no target delimiter); thai-eval's ``loglikelihood`` scores them bare.
Per-document metrics come from thai-eval's metric code on each side's log-likelihoods; the matrix-multiply work of
both sides is counted. Run with the project's Python:

    .venv/bin/python benchmarks/h6_parity_speed.py            # the embedded Gemma 3 270M (slow: tens of minutes)
    .venv/bin/python benchmarks/h6_parity_speed.py --quick    # a tiny random Gemma 3 (a few minutes)

See benchmarks/README.md for what is timed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
WORK = REPO / "benchmarks" / ".work"
VENV = WORK / "lmeval-venv"
DATA = REPO / "data" / "thai_h6" / "h6"
DOC = REPO / "docs" / "benchmarks.md"
BEGIN, END = "<!-- h6-parity:begin -->", "<!-- h6-parity:end -->"
LM_EVAL = "lm-eval[hf]==0.4.13"
TORCH = "torch==2.13.0"  # first, so pip takes the on-disk CPU wheel
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}

# setting -> (thai-eval task, shots); "longanswer0" runs on generated data (see long_answer_root)
SETTINGS = {
    "arc25": ("th_arc", 25),
    "arc5": ("th_arc", 5),
    "hellaswag10": ("th_hellaswag", 10),
    "mmlu5": ("th_mmlu", 5),
    "truthfulqa0": ("th_truthfulqa", 0),
    "winogrande5": ("th_winogrande", 5),
    "longanswer0": ("th_arc", 0),
}
LONG_ANSWER = WORK / "long-answer"  # the generated data of the "longanswer0" setting
YAML = """task: {name}
dataset_path: json
dataset_name: null
dataset_kwargs:
  data_files: {{scored: {scored}}}
output_type: multiple_choice
test_split: scored
num_fewshot: 0
target_delimiter: ""
doc_to_text: context
doc_to_target: 0
doc_to_choice: continuations
metric_list:
  - {{metric: acc, aggregation: mean, higher_is_better: true}}
metadata: {{version: 1.0}}
"""


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# --- environment ----------------------------------------------------------------------------------------------
def ensure_venv() -> Path:
    """benchmarks/.work/lmeval-venv with lm-eval 0.4.13 and the project's torch/transformers/accelerate."""
    pins = [
        f"transformers=={metadata.version('transformers')}",
        f"accelerate=={metadata.version('accelerate')}",
        f"tokenizers=={metadata.version('tokenizers')}",
    ]
    marker = VENV / "h6-installed.json"
    want = {"lm_eval": LM_EVAL, "torch": TORCH, "pins": pins}
    py = VENV / "bin" / "python"
    if marker.exists() and json.loads(marker.read_text()) == want:
        return py
    log(f"creating {VENV} ({LM_EVAL}, {TORCH}, {', '.join(pins)})")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
    pip = [str(py), "-m", "pip", "install", "-q"]
    subprocess.run(pip + [TORCH], check=True)
    subprocess.run(pip + [LM_EVAL, TORCH, *pins], check=True)
    marker.write_text(json.dumps(want))
    return py


def tiny_model_dir() -> Path:
    """A tiny random Gemma 3 (sliding window 16 mixed with full attention) and a BPE tokenizer trained on the
    samples, saved once under benchmarks/.work/ (the --quick model)."""
    out = WORK / "tiny-gemma3"
    if (out / "config.json").exists():
        return out
    import torch
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import (
        Gemma3ForCausalLM,
        Gemma3TextConfig,
        PreTrainedTokenizerFast,
    )

    text = [line for f in sorted(DATA.rglob("*.jsonl")) for line in f.read_text(encoding="utf-8").splitlines()]
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(
        text,
        trainers.BpeTrainer(
            vocab_size=3000,
            special_tokens=["<pad>", "<eos>", "<bos>"],
            show_progress=False,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    tk.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 2)])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>")
    torch.manual_seed(0)
    cfg = Gemma3TextConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=4,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=32,
        query_pre_attn_scalar=32,
        sliding_window=16,
        layer_types=["sliding_attention", "sliding_attention", "full_attention", "sliding_attention"],
        max_position_embeddings=4096,
        bos_token_id=2,
        eos_token_id=1,
        pad_token_id=0,
    )
    Gemma3ForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out


# --- requests -----------------------------------------------------------------------------------------------
def long_answer_root() -> Path:
    """The data of the "longanswer0" setting (short contexts, long answers), generated from the shipped
    samples: the 12 Thai ARC test questions, 0-shot (contexts of a few dozen tokens), each with 5 choices cut
    from other shipped Thai texts (HellaSwag contexts and endings, TruthfulQA answers, ARC questions) to 25-90
    characters (about 8-30 Gemma 3 tokens). The answer key is kept as is: the setting measures speed and parity,
    its accuracy means nothing. Deterministic (seed 0); rewritten on every call."""
    import random

    def rows(path: Path) -> list[dict]:
        return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]

    arc = DATA / "th_arc_challenge"
    pool = [r["question"] for r in rows(arc / "th_arc_challenge_validation.jsonl")]
    for r in rows(DATA / "th_hellaswag" / "th_hellaswag_validation.jsonl"):
        pool += [r["ctx"], *r["endings"]]
    for r in rows(DATA / "th_truthfulqa" / "th_truthfulqa_validation.jsonl"):
        pool += r["mc2_targets"]["choices"]
    pool = sorted({" ".join(t.split()) for t in pool if len(t.strip()) >= 25})
    rng = random.Random(0)
    out = LONG_ANSWER / "h6" / "th_arc_challenge"
    out.mkdir(parents=True, exist_ok=True)
    docs = []
    for r in rows(arc / "th_arc_challenge_test.jsonl"):
        texts = [t[: rng.randint(25, 90)].strip() for t in rng.sample(pool, 5)]
        docs.append(
            {
                **r,
                "choices": {"text": texts, "label": list("ABCDE")},
                "answerKey": r["answerKey"] if r["answerKey"] in "ABCDE" else "A",
            }
        )
    (out / "th_arc_challenge_test.jsonl").write_text(
        "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8"
    )
    (out / "th_arc_challenge_validation.jsonl").write_text(
        (arc / "th_arc_challenge_validation.jsonl").read_text(encoding="utf-8"), encoding="utf-8"
    )
    return LONG_ANSWER


def data_root(setting: str) -> Path:
    """The data folder (holding ``h6/``) of a setting: the shipped samples, or generated data."""
    return long_answer_root() if setting == "longanswer0" else DATA.parent


class _Recording:
    """Wraps a LocalModel: records every ``loglikelihood`` request and the seconds spent inside the calls."""

    def __init__(self, model):
        self._model, self.requests, self.seconds = model, [], 0.0

    def __getattr__(self, name):
        return getattr(self._model, name)

    def loglikelihood(self, requests, **kwargs):
        self.requests += list(requests)
        t0 = time.perf_counter()
        out = self._model.loglikelihood(requests, **kwargs)
        self.seconds += time.perf_counter() - t0
        return out


def evaluate_setting(local, setting: str, outputs: Path) -> dict:
    """``h6.evaluate`` on one setting (leaderboard protocol, the setting's shots, one model call for all
    documents, a fresh results store): its wall time, the time inside ``loglikelihood``, the requests in call
    order and each document's log-likelihoods and metrics."""
    import shutil

    from thai_eval_utils.h6 import evaluate
    from thai_eval_utils.h6.protocol import LEADERBOARD

    task, shots = SETTINGS[setting]
    shutil.rmtree(outputs, ignore_errors=True)
    rec = _Recording(local)
    t0 = time.perf_counter()
    res = evaluate(
        rec,
        task,
        data_root(setting),
        replace(LEADERBOARD, num_fewshot=shots),
        chunk_size=1_000_000,
        outputs=outputs,
        progress=False,
    )
    wall = time.perf_counter() - t0
    table = res.table.sort_values("doc")
    return {
        "wall": wall,
        "ll_seconds": rec.seconds,
        "requests": rec.requests,
        "doc_lls": [list(x) for x in table["lls"]],
        "docs": [int(d) for d in table["doc"]],
    }


def write_task(task_dir: Path, setting: str, requests: list[tuple[str, str]]) -> None:
    """lm-eval's raw-request task for ``setting``: one row per run of consecutive requests sharing a context
    (the choices of a document; Winogrande's two contexts are two rows), continuations as its choices."""
    task_dir.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for ctx, cont in requests:
        if rows and rows[-1]["context"] == ctx:
            rows[-1]["continuations"].append(cont)
        else:
            rows.append({"context": ctx, "continuations": [cont]})
    data = task_dir / f"{setting}_scored.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    (task_dir / f"h6bench_{setting}.yaml").write_text(YAML.format(name=f"h6bench_{setting}", scored=data))


# --- the two sides --------------------------------------------------------------------------------------------
def mem_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 8 << 30


def run_lmeval(
    py: Path, model_dir: Path, setting: str, bs: int, out: Path, mem_limit: int, threads: int | None, task_dir: Path
) -> dict:
    """One lm-eval run; returns its per-request results in request order and the timed loglikelihood seconds
    (or the failure)."""
    out.mkdir(parents=True, exist_ok=True)
    timing = out / "timing.jsonl"
    timing.unlink(missing_ok=True)
    cmd = [
        str(py),
        str(REPO / "benchmarks" / "lmeval_timed.py"),
        "--model",
        "hf",
        "--model_args",
        f"pretrained={model_dir},dtype=float32,add_bos_token=False",
        "--device",
        "cpu",
        "--batch_size",
        str(bs),
        "--include_path",
        str(task_dir),
        "--tasks",
        f"h6bench_{setting}",
        "--output_path",
        str(out),
        "--log_samples",
    ]
    env = {**os.environ, **OFFLINE, "H6_TIMING_FILE": str(timing), "HF_HOME": str(WORK / "hf-home")}
    if threads:
        env["H6_THREADS"] = str(threads)

    def cap():  # a failed allocation inside lm-eval rather than the machine's OOM killer
        resource.setrlimit(resource.RLIMIT_AS, (mem_limit, mem_limit))

    log(f"lm-eval {setting} batch {bs} (memory cap {mem_limit / 2**30:.1f} GiB, load {os.getloadavg()[0]:.1f})")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, preexec_fn=cap, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    (out / "stderr.txt").write_text(proc.stderr)
    if proc.returncode != 0 or not timing.exists():
        oom = any(s in proc.stderr for s in ("can't allocate memory", "MemoryError", "out of memory"))
        why = "out of memory" if oom or proc.returncode == -9 else f"failed (exit {proc.returncode})"
        log(f"  {why}; see {out / 'stderr.txt'}")
        return {"batch_size": bs, "error": why, "wall": wall}
    samples = sorted(out.rglob(f"samples_h6bench_{setting}_*.jsonl"), key=lambda p: p.stat().st_mtime)[-1]
    reqs = []
    for line in sorted(samples.read_text(encoding="utf-8").splitlines(), key=lambda x: json.loads(x)["doc_id"]):
        s = json.loads(line)
        args = [s["arguments"][k] for k in sorted(s["arguments"], key=lambda k: int(k.rsplit("_", 1)[1]))]
        reqs += [
            {"context": a["arg_0"], "continuation": a["arg_1"], "ll": float(r[0][0]), "greedy": str(r[0][1]) == "True"}
            for a, r in zip(args, s["resps"])
        ]
    lines = [json.loads(x) for x in timing.read_text().splitlines()]
    seconds, cpu = sum(x["seconds"] for x in lines), sum(x["cpu_seconds"] for x in lines)
    log(f"  {len(reqs)} requests, loglikelihood {seconds:.1f} s (process {wall:.1f} s)")
    return {
        "batch_size": bs,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "wall": wall,
        "threads": lines[0]["torch_threads"],
        "requests": reqs,
    }


def run_engine(
    model, tok, pairs: list[tuple[str, str]], budget: int | None = None
) -> tuple[float, float, list[tuple[float, bool]]]:
    """thai-eval's engine on the setting's requests; timed like lm-eval (tokenization in, model load out)."""
    from thai_eval_utils.backend.loglikelihood import loglikelihood

    t0, c0 = time.perf_counter(), time.process_time()
    out = loglikelihood(
        model, tok, pairs, add_bos_token=False, max_length=max_length(model, tok), progress=False, batch_tokens=budget
    )
    return time.perf_counter() - t0, time.process_time() - c0, out


def hf_cache_path(model, encoded: list[tuple[list[int], list[int]]]) -> list[float]:
    """The parity yardstick: the same requests scored the way transformers documents KV-cache reuse (the context
    once with a ``DynamicCache``, each continuation over it, the cache cropped back), with lm-eval's tokens and
    float32 ``log_softmax``. Exact arithmetic would give lm-eval's numbers; the gap shows the float32 noise that
    any method reusing a context's keys carries on this model (it is never timed)."""
    import torch
    from transformers import DynamicCache

    out, cache, cached = [], None, None
    with torch.inference_mode():
        for ctx, cont in encoded:
            if cached != ctx:  # the documents' choices are consecutive: one context run per document
                cache, cached = DynamicCache(), ctx
                last = model(torch.tensor([ctx]), past_key_values=cache, use_cache=True).logits[0, -1:]
            if not cont:
                out.append(0.0)
                continue
            logits = last
            if len(cont) > 1:
                more = model(torch.tensor([cont[:-1]]), past_key_values=cache, use_cache=True).logits[0]
                cache.crop(-(len(cont) - 1))
                logits = torch.cat([last, more])
            logp = torch.log_softmax(logits.float(), dim=-1)
            out.append(float(logp.gather(1, torch.tensor(cont)[:, None]).sum()))
    return out


def work_ratio(model, tok, encoded: list[tuple[list[int], list[int]]]) -> dict:
    """Matrix-multiply work of both sides, counted (not timed): lm-eval runs every fed token through the decoder
    body and the output layer; thai-eval runs each distinct tree token through the body once and each distinct
    scored position through the output layer. Per token, a linear layer costs 2 x its weights in FLOPs (attention
    scores and lm-eval's full-vocabulary log_softmax come on top and are not counted). lm-eval runs a fed sequence
    shared by several requests once (its logits cache), so distinct fed sequences are counted. The ratio is the speed-up an
    exact method reaches when both sides run at the same FLOP rate."""
    import torch

    from thai_eval_utils.backend.encoding import fed_tokens
    from thai_eval_utils.backend.prefix_tree import build_tree

    head = model.get_output_embeddings().weight
    body = sum(m.weight.numel() for m in model.base_model.modules() if isinstance(m, torch.nn.Linear))
    seqs, targets = fed_tokens(encoded, max_length(model, tok))
    # lm-eval's logits cache (HFLM, group_by="contexts"): requests with the same fed sequence (one-token
    # continuations after one context, e.g. MMLU's " A".." D") share one forward; so count each distinct one once
    fed = sum(len(s) for s in set(seqs) if s)
    root, _ = build_tree([s for s in seqs if s])
    tree, stack = 0, [root]
    while stack:
        node = stack.pop()
        tree += node.end - node.start
        stack += node.children
    rows = {s[: len(s) - len(t) + j + 1] for s, t in zip(seqs, targets) if s for j in range(len(t))}
    lm, ours = 2 * fed * (body + head.numel()), 2 * (tree * body + len(rows) * head.numel())
    return {
        "fed_tokens": fed,
        "tree_tokens": tree,
        "scored_rows": len(rows),
        "lmeval_gflop": lm / 1e9,
        "thai_eval_gflop": ours / 1e9,
        "work_ratio": lm / ours,
    }


def max_length(model, tok) -> int:
    """lm-eval's default max_length rule for HF models (config n_positions/max_position_embeddings/n_ctx)."""
    cfg = model.config.get_text_config()
    for attr in ("n_positions", "max_position_embeddings", "n_ctx"):
        if getattr(cfg, attr, None):
            return int(getattr(cfg, attr))
    return 2048


def doc_metrics(setting: str, docs: list[int], doc_lls: list[list[float]]) -> list[dict]:
    """thai-eval's per-document metrics (``h6.tasks.process_results``) from per-document log-likelihoods."""
    from thai_eval_utils.h6 import tasks as h6_tasks
    from thai_eval_utils.h6.data import load_h6_task

    spec = h6_tasks.get_task(SETTINGS[setting][0])
    data = load_h6_task(data_root(setting), spec.name)
    return [
        {k: float(v) for k, v in h6_tasks.process_results(spec, data.docs[d], lls).items() if k in spec.metrics}
        for d, lls in zip(docs, doc_lls)
    ]


def metric_deltas(ours: list[dict], theirs: list[dict]) -> tuple[bool, float]:
    """(every discrete metric (acc, acc_norm, acc_bytes, mc1) equal per document, largest per-document difference
    of a continuous one (TruthfulQA's mc2 variants: probability mass, moves with float32 noise))."""
    same, delta = True, 0.0
    for a, b in zip(ours, theirs):
        for k in a:
            if k.startswith("mc2"):
                delta = max(delta, abs(a[k] - b[k]))
            else:
                same = same and a[k] == b[k]
    return same, delta


# --- report ---------------------------------------------------------------------------------------------------
def summarise(
    setting: str, runs: list[dict], engine: list[tuple[float, float]], out, ev: dict, encoded, yardstick: list[float]
) -> dict:
    """Parity and speed of one setting: thai-eval against every lm-eval batch size that finished (``encoded``:
    the requests' (context, continuation) tokens as lm-eval encodes them)."""
    ok = [r for r in runs if "requests" in r]
    pairs = ev["requests"]
    for r in ok:
        assert [(x["context"], x["continuation"]) for x in r["requests"]] == pairs, "lm-eval scored other strings"
    n_tok = [max(len(c), 1) for _, c in encoded]
    lls = [ll for ll, _ in out]
    assert lls == [x for d in ev["doc_lls"] for x in d], "bare loglikelihood differs from h6.evaluate's"
    deltas = [abs(ll - x["ll"]) for r in ok for ll, x in zip(lls, r["requests"])]
    per_tok = [abs(ll - x["ll"]) / n for r in ok for ll, x, n in zip(lls, r["requests"], n_tok)]
    own = [abs(a["ll"] - b["ll"]) for r in ok[1:] for a, b in zip(ok[0]["requests"], r["requests"])]
    hf = [abs(y - x["ll"]) for y, x in zip(yardstick, ok[0]["requests"])]
    tol = [max(1e-4, 1e-5 * n) for n in n_tok]
    sizes = [len(d) for d in ev["doc_lls"]]

    ours = doc_metrics(setting, ev["docs"], ev["doc_lls"])
    theirs = [doc_metrics(setting, ev["docs"], per_doc([x["ll"] for x in r["requests"]], sizes)) for r in ok]
    from thai_eval_utils.h6 import tasks as h6_tasks

    headline = h6_tasks.get_task(SETTINGS[setting][0]).metrics[0]
    compared = [metric_deltas(ours, t) for t in theirs]
    best = min(ok, key=lambda r: r["seconds"])
    wall, cpu = statistics.median(w for w, _ in engine), statistics.median(c for _, c in engine)
    return {
        "docs": len(ev["docs"]),
        "requests": len(pairs),
        "scored_tokens": sum(n_tok),
        "lmeval": [{k: v for k, v in r.items() if k != "requests"} for r in runs],
        "engine_seconds": [w for w, _ in engine],
        "engine_cpu_seconds": [c for _, c in engine],
        "evaluate_seconds": ev["wall_runs"],
        "evaluate_ll_seconds": ev["ll_runs"],
        "best_batch": best["batch_size"],
        "lmeval_seconds": best["seconds"],
        "engine_median": wall,
        "speedup": best["seconds"] / wall,
        "cpu_speedup": min(r["cpu_seconds"] for r in ok) / cpu,
        "max_delta": max(deltas),
        "max_delta_per_token": max(per_tok),
        "lmeval_own_max_delta": max(own, default=None),
        "hf_cache_max_delta": max(hf),
        "hf_cache_over_1e-4": sum(d > 1e-4 for d in hf),
        "over_1e-4": sum(abs(ll - x["ll"]) > 1e-4 for ll, x in zip(lls, ok[0]["requests"])),
        "within_token_tolerance": all(abs(ll - x["ll"]) <= t for r in ok for ll, x, t in zip(lls, r["requests"], tol)),
        "greedy_equal": all(g == x["greedy"] for r in ok for (_, g), x in zip(out, r["requests"])),
        "metrics_equal": all(same for same, _ in compared),
        "mc2_max_delta": max(d for _, d in compared),
        "headline": headline,
        "headline_values": (
            statistics.mean(m[headline] for m in theirs[0]),
            statistics.mean(m[headline] for m in ours),
        ),
    }


def report(results: dict, model_name: str, command: str) -> str:
    lines = [
        f"Model: {model_name}, float32, CPU ({os.cpu_count()} cores, torch threads {results['threads']}); "
        f"lm-eval 0.4.13, transformers {metadata.version('transformers')}, torch {metadata.version('torch')}, "
        f"Python {platform.python_version()}. Load average (1 min) before each lm-eval run: {results['load']}; "
        f"thai-eval token budget per forward call: {results['budget']}.",
        "",
        "Command"
        + ("s" if len(results["commands"]) > 1 else "")
        + ": "
        + "; then ".join(f"`{c}`" for c in results["commands"]),
        "",
        "| setting | docs / requests | lm-eval s, batch size: s | thai-eval `loglikelihood` s (runs; median) | `h6.evaluate` s (inside loglikelihood) | evaluate outside loglikelihood "
        "| speed-up, wall (CPU) | matmul work ratio | % of work ratio | max abs delta (per token) "
        "| requests over 1e-4 | KV-cache yardstick: max delta | lm-eval vs itself | greedy equal "
        "| metrics identical | headline, lm-eval / thai-eval |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results["settings"].items():
        lm = ", ".join(
            f"{x['batch_size']}: " + (f"{x['seconds']:.1f}" if "seconds" in x else x["error"]) for x in r["lmeval"]
        )
        eng = ", ".join(f"{s:.1f}" for s in r["engine_seconds"]) + f"; {r['engine_median']:.1f}"
        ev = statistics.median(r["evaluate_seconds"])
        evll = statistics.median(r["evaluate_ll_seconds"])
        own = f"{r['lmeval_own_max_delta']:.1e}" if r["lmeval_own_max_delta"] is not None else "-"
        head = f"{r['headline']} {r['headline_values'][0]:.4f} / {r['headline_values'][1]:.4f}"
        same = "yes" if r["metrics_equal"] else "NO"
        if r["headline"].startswith("mc2") or r.get("mc2_max_delta"):
            same += f" (mc1; mc2 max delta {r['mc2_max_delta']:.1e})"
        lines.append(
            f"| {name} | {r['docs']} / {r['requests']} | {lm} | {eng} | {ev:.1f} ({evll:.1f}) | "
            f"{100 * statistics.median((w - x) / x for w, x in zip(r['evaluate_seconds'], r['evaluate_ll_seconds'])):+.1f}% | "
            f"**{r['speedup']:.1f}x** ({r['cpu_speedup']:.1f}x) vs batch {r['best_batch']} | "
            f"{r['work']['work_ratio']:.1f}x ({r['work']['lmeval_gflop']:,.0f} / {r['work']['thai_eval_gflop']:,.0f} GFLOP) | "
            f"{100 * r['speedup'] / r['work']['work_ratio']:.0f}% | "
            f"{r['max_delta']:.1e} ({r['max_delta_per_token']:.1e}) | {r['over_1e-4']} of {r['requests']} | "
            f"{r['hf_cache_max_delta']:.1e} | {own} | {'yes' if r['greedy_equal'] else 'NO'} | "
            f"{same} | {head} |"
        )
    if results.get("budgets"):
        lines += [
            "",
            "thai-eval `loglikelihood` seconds by token budget per forward call: "
            + "; ".join(
                f"{name}: " + ", ".join(f"{b} -> {t:.1f}" for b, t in res.items())
                for name, res in results["budgets"].items()
            ),
        ]
    lines += [
        "",
        f"Per-document acc / acc_norm / acc_bytes / mc1 identical to every lm-eval batch size: "
        f"{'yes' if results['metrics_equal'] else 'NO'}; every |delta| <= 1e-4: "
        f"{'yes' if results['parity_strict'] else 'NO'}; every |delta| <= max(1e-4, 1e-5 x continuation tokens): "
        f"{'yes' if results['parity'] else 'NO'}.",
    ]
    return "\n".join(lines)


def update_doc(block: str, begin: str = BEGIN, end: str = END) -> None:
    """Replace the text between the ``begin`` and ``end`` markers of docs/benchmarks.md (added if missing)."""
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else f"# Benchmarks\n\n{begin}\n{end}\n"
    if begin not in text:
        text += f"\n{begin}\n{end}\n"
    head, rest = text.split(begin, 1)
    DOC.write_text(f"{head}{begin}\n{block}\n{end}{rest.split(end, 1)[1]}", encoding="utf-8")


def per_doc(values: list, sizes: list[int]) -> list[list]:
    """Split per-request ``values`` (in request order) into one list per document of ``sizes`` requests."""
    it = iter(values)
    return [[next(it) for _ in range(k)] for k in sizes]


def finish(results: dict, args, command: str, run_dir: Path) -> str:
    """Overall verdicts, results.json and (with --write-doc) the doc block for the settings measured so far."""
    results["metrics_equal"] = all(t["metrics_equal"] and t["greedy_equal"] for t in results["settings"].values())
    results["parity_strict"] = all(t["max_delta"] <= 1e-4 for t in results["settings"].values())
    results["parity"] = all(t["within_token_tolerance"] for t in results["settings"].values())
    name = (
        "tiny random Gemma 3 (--quick)"
        if args.quick
        else (
            "embedded Gemma 3 270M (Q4_K_M GGUF dequantised to float32)" if not args.model_dir else str(args.model_dir)
        )
    )
    block = report(results, name, command)
    (run_dir / "results.json").write_text(json.dumps(results, indent=1))
    if args.write_doc:
        update_doc(block)
        log(f"updated {DOC}")
    return block


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a tiny random Gemma 3 instead of the embedded model")
    ap.add_argument("--model-dir", type=Path, help="a local HF model directory (default: the embedded model)")
    ap.add_argument("--settings", default=",".join(SETTINGS))
    ap.add_argument("--batch-sizes", default="1,4")
    ap.add_argument("--engine-runs", type=int, default=2, help="thai-eval runs after each lm-eval run")
    ap.add_argument("--budgets", default="", help="also time loglikelihood at these token budgets (e.g. 512,2048)")
    ap.add_argument("--threads", type=int, help="torch threads on both sides (default: torch's, one per core)")
    ap.add_argument("--mem-fraction", type=float, default=0.7, help="lm-eval's address-space cap, of MemAvailable")
    ap.add_argument("--report-only", action="store_true", help="only rewrite the report from the last results.json")
    ap.add_argument("--append", action="store_true", help="keep the settings of the last results.json not run again")
    ap.add_argument("--write-doc", action="store_true", help=f"update the results block of {DOC.relative_to(REPO)}")
    args = ap.parse_args(argv)
    command = ".venv/bin/python benchmarks/h6_parity_speed.py " + " ".join(argv if argv is not None else sys.argv[1:])

    if args.report_only:
        run_dir = WORK / ("runs-quick" if args.quick else "runs")
        results = json.loads((run_dir / "results.json").read_text())
        print("\n" + finish(results, args, command, run_dir))
        return 0 if results["parity"] and results["metrics_equal"] else 1

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from thai_eval_utils.backend.local_model import LocalModel
    from thai_eval_utils.backend.encoding import encode_pairs
    from thai_eval_utils.backend.loglikelihood import loglikelihood_budget
    from thai_eval_utils.backend.models import embedded_model_dir

    if args.threads:
        torch.set_num_threads(args.threads)
    py = ensure_venv()
    model_dir = (args.model_dir or (tiny_model_dir() if args.quick else embedded_model_dir())).resolve()
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(model_dir)
    local = LocalModel(model, tok, name="h6bench", max_length=max_length(model, tok))
    sizes = [int(b) for b in args.batch_sizes.split(",")]
    results = {
        "settings": {},
        "threads": torch.get_num_threads(),
        "load": [],
        "batch_sizes": sizes,
        "budget": loglikelihood_budget(model),
        "budgets": {},
    }
    run_dir = WORK / ("runs-quick" if args.quick else "runs")
    if args.append and (run_dir / "results.json").exists():  # an earlier run's settings (their own batch sizes)
        old = json.loads((run_dir / "results.json").read_text())
        results["settings"] = {k: v for k, v in old["settings"].items() if k not in args.settings.split(",")}
        results["load"] = old["load"]
        results["commands"] = old.get("commands", [])
    results["commands"] = [*results.get("commands", []), command]
    block = ""
    for setting in args.settings.split(","):
        ev = evaluate_setting(local, setting, run_dir / setting / "store")  # also the engine's self-check
        ev["wall_runs"], ev["ll_runs"] = [], []
        pairs = ev["requests"]
        log(f"{setting}: {len(ev['docs'])} documents, {len(pairs)} requests")
        task_dir = WORK / ("tasks-quick" if args.quick else "tasks")
        write_task(task_dir, setting, pairs)
        runs, engine, out = [], [], None
        for bs in sizes:
            results["load"].append(round(os.getloadavg()[0], 1))
            runs.append(
                run_lmeval(
                    py,
                    model_dir,
                    setting,
                    bs,
                    run_dir / setting / f"bs{bs}",
                    int(args.mem_fraction * mem_available()),
                    args.threads,
                    task_dir,
                )
            )
            for _ in range(args.engine_runs):  # after each lm-eval run: both see similar load
                wall, cpu, res = run_engine(model, tok, pairs)
                assert out is None or res == out, "engine results differ between runs"
                engine.append((wall, cpu))
                out = res
                again = evaluate_setting(local, setting, run_dir / setting / "store")
                ev["wall_runs"].append(again["wall"])
                ev["ll_runs"].append(again["ll_seconds"])
                log(
                    f"  thai-eval {setting}: loglikelihood {wall:.1f} s (CPU {cpu:.1f} s); h6.evaluate "
                    f"{again['wall']:.1f} s ({again['ll_seconds']:.1f} s inside loglikelihood)"
                )
        if not any("requests" in r for r in runs):
            raise SystemExit(f"lm-eval failed on {setting} at every batch size")
        if args.budgets:
            results["budgets"][setting] = {
                int(b): run_engine(model, tok, pairs, int(b))[0] for b in args.budgets.split(",")
            }
        log(f"  transformers KV-cache yardstick on {setting}")
        encoded = encode_pairs(tok, pairs, False)  # lm-eval's tokens, once
        results["settings"][setting] = summarise(setting, runs, engine, out, ev, encoded, hf_cache_path(model, encoded))
        results["settings"][setting]["work"] = work_ratio(model, tok, encoded)
        block = finish(results, args, command, run_dir)  # after every setting: a partial run still reports
    print("\n" + block)
    return 0 if results["parity"] and results["metrics_equal"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
