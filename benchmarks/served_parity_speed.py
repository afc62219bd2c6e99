"""Served models: thai-eval's ``completions:`` client against lm-evaluation-harness 0.4.13's ``gguf`` backend, both
scoring the same Thai-H6 requests (data/thai_h6, built as ``h6.evaluate`` builds them, leaderboard shots unless
``--shots``) through one running llama-cpp-python server: per-request log-likelihood parity, per-document metrics
and requests/s.

    .venv/bin/python benchmarks/served_parity_speed.py --shots 0          # embedded Gemma 3 270M GGUF, ARC + HellaSwag
    .venv/bin/python benchmarks/served_parity_speed.py --gguf tiny \
        --tasks th_arc,th_hellaswag,th_mmlu,th_truthfulqa,th_winogrande   # every task, leaderboard shots
    .venv/bin/python benchmarks/served_parity_speed.py --base-url http://127.0.0.1:8000/v1 --model-id gemma-3-270m

``--gguf tiny`` serves tests/tiny_gguf.py's random-weight model with a ~1,100-piece Thai vocabulary: with Gemma 3's
262,144 entries llama-cpp-python spends ~0.3 s per echoed token sorting the vocabulary in Python, so 25-shot ARC
or 5-shot MMLU would take hours on two cores. thai-eval then has no local tokenizer (``tokenizer=None``).

lm-eval runs from ``pip install --no-deps --target benchmarks/.work/lmeval-0.4.13 lm-eval==0.4.13`` (its ``gguf``
module needs only requests/tqdm/numpy/yaml/jinja2, which the project's venv has), in a subprocess, timed around
``GGUFLM.loglikelihood``; thai-eval is timed around ``ServedModel.loglikelihood`` after its one-off probe.
Both sides send the same requests in the same (document) order, so llama-cpp-python's reuse of the previous
prompt's KV cache helps both alike. Requests where a token straddles the context/continuation boundary are
counted apart: the two clients split them differently by design (docs/protocol_notes.md). Results go to
benchmarks/.work/served_parity_<gguf>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
WORK = REPO / "benchmarks" / ".work"
LMEVAL_DIR = WORK / "lmeval-0.4.13"
DATA = REPO / "data" / "thai_h6" / "h6"

LMEVAL_RUNNER = r"""
import json, sys, time
from lm_eval.models.gguf import GGUFLM
class Req:  # lm-eval's Instance: only .args is read by GGUFLM.loglikelihood
    def __init__(self, args): self.args = tuple(args)
base_url, path = sys.argv[1], sys.argv[2]
reqs = [Req(r) for r in json.load(open(path))]
lm = GGUFLM(base_url=base_url)
t0 = time.perf_counter()
out = lm.loglikelihood(reqs, disable_tqdm=True)
print(json.dumps({"seconds": time.perf_counter() - t0, "results": out}))
"""


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def ensure_lmeval() -> Path:
    if not (LMEVAL_DIR / "lm_eval" / "models" / "gguf.py").exists():
        log(f"installing lm-eval 0.4.13 (no dependencies) into {LMEVAL_DIR}")
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(LMEVAL_DIR), "lm-eval==0.4.13"],
            check=True,
        )
    return LMEVAL_DIR


def task_documents(task: str, n_docs: int, shots: int | None) -> list[tuple[dict, list[tuple[str, str]]]]:
    """(document, its (context, continuation) pairs) of the first ``n_docs`` documents (MMLU: of each subject),
    built as ``h6.evaluate`` builds them under the leaderboard protocol (``shots``: None = the task's count)."""
    from thai_eval_utils.h6 import LEADERBOARD
    from thai_eval_utils.h6 import tasks as T
    from thai_eval_utils.h6.data import load_h6_task

    spec = T.get_task(task)
    data = load_h6_task(DATA, spec.name)
    docs, pool = list(data.docs), spec.pool_of(data)
    k = spec.num_fewshot if shots is None else shots
    draws = spec.draw(docs, pool, k, LEADERBOARD)
    tmpl = T.templates_for(spec)
    out = []
    for i in spec.select(docs, n_docs):
        shots_i = [spec.pool_for(pool, docs[i])[j] for j in draws[i]]
        out.append((docs[i], list(spec.requests(docs[i], shots_i, tmpl).requests)))
    return out


def straddles(gguf: Path, requests: list[tuple[str, str]]) -> list[bool]:
    """Whether llama.cpp's joint tokenization of each request has a token that starts in the context and ends in
    the continuation (the two clients split those differently, by design: docs/protocol_notes.md)."""
    from llama_cpp import Llama

    vocab = Llama(str(gguf), vocab_only=True, verbose=False)
    out = []
    for ctx, cont in requests:
        n = len(ctx) - len(ctx.rstrip())
        ctx, cont = (ctx[:-n], ctx[-n:] + cont) if n else (ctx, cont)
        a = vocab.tokenize(ctx.encode(), add_bos=False, special=True)
        b = vocab.tokenize((ctx + cont).encode(), add_bos=False, special=True)
        out.append(b[: len(a)] != a)
    return out


def explain_delta(base_url: str, model_id: str, request: tuple[str, str], delta: float) -> str:
    """Why thai-eval's and lm-eval's numbers for one request differ, checked against the server's own reply.

    lm-eval 0.4.13's ``gguf`` ``get_result`` sums ``token_logprobs[idx:-1]``: it assumes the server generated exactly
    one token after the echoed prompt. llama-cpp-python keeps generating past ``max_tokens=1`` while the generated
    bytes are an incomplete UTF-8 character (byte-fallback tokens), so lm-eval then adds those extra generated
    tokens to the continuation. Returns ``"extra generated tokens"`` when ``delta`` equals their log-probabilities,
    else ``"unexplained"``."""
    import openai

    ctx, cont = request
    client = openai.OpenAI(base_url=base_url, api_key="none")
    choice = client.completions.create(
        model=model_id, prompt=ctx + cont, echo=True, logprobs=1, max_tokens=1, temperature=0.0
    ).choices[0]
    lp, n = choice.logprobs, len(ctx + cont)
    generated = [v for o, v in zip(lp.text_offset, lp.token_logprobs) if o >= n]
    extra = sum(generated[:-1])  # lm-eval drops only the last one
    # 1e-3: this second request decodes after another cached prompt than the first (llama.cpp's numbers move in
    # the 6th digit with the decode batch; tests/test_served_llamacpp.py)
    if len(generated) > 1 and abs(delta + extra) <= 1e-3:
        return "extra generated tokens"
    return "unexplained"


def metrics_equal(task: str, docs: list[tuple[dict, list]], a: list, b: list) -> tuple[int, int]:
    """(documents whose every metric is equal on both sides' log-likelihoods, documents)."""
    from thai_eval_utils.h6 import tasks as T

    spec, same, k = T.get_task(task), 0, 0
    for doc, reqs in docs:
        la, lb = [x[0] for x in a[k : k + len(reqs)]], [x[0] for x in b[k : k + len(reqs)]]
        k += len(reqs)
        ma, mb = T.process_results(spec, doc, la), T.process_results(spec, doc, lb)
        same += all(abs(ma[m] - mb[m]) <= 1e-9 for m in spec.metrics)
    return same, len(docs)


def run_lmeval(base_url: str, requests: list[tuple[str, str]], path: Path) -> dict:
    path.write_text(json.dumps(requests, ensure_ascii=False))
    env = {**os.environ, "PYTHONPATH": str(ensure_lmeval())}
    res = subprocess.run(
        [sys.executable, "-c", LMEVAL_RUNNER, base_url.removesuffix("/v1"), str(path)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(res.stdout.strip().splitlines()[-1])


def run_thai_eval(
    base_url: str, model_id: str, requests: list[tuple[str, str]], concurrency: int | None, tokenizer: str | None
) -> dict:
    from thai_eval_utils.backend.served import ServedModel

    # no order probe: its requests would change the server's KV cache before the timed ones, and lm-eval has none
    m = ServedModel(model_id, base_url=base_url, tokenizer=tokenizer, concurrency=concurrency, order_probe=False)
    t0 = time.perf_counter()
    ident = m.identity  # the probe
    probe = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = m.loglikelihood(requests, progress=False)
    return {"seconds": time.perf_counter() - t0, "probe_seconds": probe, "results": out, "identity": ident}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--gguf",
        default="embedded",
        help="'embedded' (Gemma 3 270M, 262k vocabulary) or 'tiny' (tests/tiny_gguf.py: random weights, "
        "~1,100-piece Thai vocabulary, so full few-shot prompts fit in the time)",
    )
    ap.add_argument("--base-url", help="a running llama-cpp-python server (default: start one on --gguf)")
    ap.add_argument("--model-id", default=None, help="the served id (default: gemma-3-270m / tiny-thai)")
    ap.add_argument("--docs", type=int, default=3, help="documents per task (MMLU: per subject)")
    ap.add_argument("--shots", type=int, default=None, help="few-shot examples per prompt (default: the leaderboard's)")
    ap.add_argument("--tasks", default="th_arc,th_hellaswag")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="requests in flight (default: thai-eval's, 1 for a text-only server such as llama-cpp-python)",
    )
    args = ap.parse_args(argv)
    WORK.mkdir(parents=True, exist_ok=True)
    ensure_lmeval()
    from contextlib import nullcontext

    from thai_eval_utils.backend.models import embedded_gguf_path
    from thai_eval_utils.backend.served.llamacpp import LlamaCppServer

    if args.gguf == "tiny":
        sys.path.insert(0, str(REPO / "tests"))
        from tiny_gguf import h6_sample_texts, write_tiny_gguf

        gguf, tokenizer, model_id = WORK / "tiny-thai.gguf", None, args.model_id or "tiny-thai"
        write_tiny_gguf(gguf, h6_sample_texts(DATA), n_ctx=16384)
        n_ctx = 16384
    else:
        gguf, tokenizer, model_id, n_ctx = embedded_gguf_path(), "embedded", args.model_id or "gemma-3-270m", 4096
    server = (
        nullcontext()
        if args.base_url
        else LlamaCppServer(gguf, alias=model_id, n_ctx=n_ctx, n_threads=args.threads, log=WORK / "llamacpp.log")
    )
    results: dict = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "llama_cpp_python": metadata.version("llama_cpp_python"),
            "load_before": os.getloadavg()[0],
        },
        "settings": vars(args),
        "tasks": {},
    }
    with server as srv:
        base_url = args.base_url or srv.base_url
        for task in args.tasks.split(","):
            docs = task_documents(task, args.docs, args.shots)
            reqs = [r for _, rs in docs for r in rs]
            log(f"{task}: {len(docs)} docs, {len(reqs)} requests; lm-eval gguf ...")
            lm = run_lmeval(base_url, reqs, WORK / f"served_{task}_requests.json")
            log(f"{task}: lm-eval {lm['seconds']:.1f} s; thai-eval ...")
            te = run_thai_eval(base_url, model_id, reqs, args.concurrency, tokenizer)
            log(f"{task}: thai-eval {te['seconds']:.1f} s (probe {te['probe_seconds']:.1f} s)")
            split = straddles(gguf, reqs)
            deltas = [abs(a[0] - b[0]) for a, b in zip(te["results"], lm["results"])]
            plain = [d for d, st in zip(deltas, split) if not st]
            signed = [a[0] - b[0] for a, b in zip(te["results"], lm["results"])]
            why = {
                i: explain_delta(base_url, model_id, reqs[i], signed[i])
                for i, (d, st) in enumerate(zip(deltas, split))
                if d > 1e-6 and not st
            }
            explained = {i for i, st in enumerate(split) if st} | {i for i, w in why.items() if w != "unexplained"}
            same_docs, n_docs = metrics_equal(task, docs, te["results"], lm["results"])
            results["tasks"][task] = {
                "docs": n_docs,
                "requests": len(reqs),
                "prompt_chars": sum(len(c) + len(x) for c, x in reqs),
                "lmeval_seconds": lm["seconds"],
                "thai_eval_seconds": te["seconds"],
                "probe_seconds": te["probe_seconds"],
                "lmeval_req_per_s": len(reqs) / lm["seconds"],
                "thai_eval_req_per_s": len(reqs) / te["seconds"],
                "speedup": lm["seconds"] / te["seconds"],
                "straddling": sum(split),
                "max_abs_delta": max(plain, default=0.0),
                "max_abs_delta_straddling": max((d for d, st in zip(deltas, split) if st), default=None),
                "n_delta_over_1e-4": sum(d > 1e-4 for d in plain),
                "explained": {i: w for i, w in why.items()},
                "n_extra_generated": sum(w == "extra generated tokens" for w in why.values()),
                "n_unexplained": sum(w == "unexplained" for w in why.values()),
                "max_abs_delta_others": max((d for i, d in enumerate(deltas) if i not in explained), default=0.0),
                "greedy_agree": sum(
                    bool(a[1]) == bool(b[1])
                    for i, (a, b) in enumerate(zip(te["results"], lm["results"]))
                    if i not in explained
                ),
                "others": len(reqs) - len(explained),
                "docs_metrics_equal": same_docs,
                "thai_eval": te["results"],
                "lmeval": lm["results"],
            }
    results["machine"]["load_after"] = os.getloadavg()[0]
    out = WORK / f"served_parity_{args.gguf}.json"
    out.write_text(json.dumps(results, indent=1, ensure_ascii=False))
    print(
        f"\nserver: llama-cpp-python {results['machine']['llama_cpp_python']} on {args.gguf} GGUF; load "
        f"{results['machine']['load_before']:.1f} before, {results['machine']['load_after']:.1f} after"
    )
    print(
        "\n| task | docs / requests | lm-eval gguf req/s | thai-eval req/s | speed-up | straddling (by design) | "
        "lm-eval summed extra generated tokens | other requests: max abs delta | greedy agree (others) | "
        "docs with equal metrics |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for task, r in results["tasks"].items():
        print(
            f"| {task} | {r['docs']} / {r['requests']} | {r['lmeval_req_per_s']:.3f} | "
            f"{r['thai_eval_req_per_s']:.3f} | {r['speedup']:.2f}x | {r['straddling']} | {r['n_extra_generated']} | "
            f"{r['max_abs_delta_others']:.1e} ({r['n_unexplained']} unexplained) | "
            f"{r['greedy_agree']}/{r['others']} | {r['docs_metrics_equal']}/{r['docs']} |"
        )
    log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
