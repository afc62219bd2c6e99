"""Served models: thai-eval's ``completions:`` client against lm-evaluation-harness 0.4.13's ``gguf`` backend, both
scoring the same Thai-H6 requests (ARC-style and HellaSwag-style docs from data/thai_h6) through one running
llama-cpp-python server on the embedded Gemma 3 270M GGUF: per-request log-likelihood parity and requests/s.

    .venv/bin/python benchmarks/served_parity_speed.py                 # starts its own server (needs '.[serve]')
    .venv/bin/python benchmarks/served_parity_speed.py --base-url http://127.0.0.1:8000/v1 --model-id gemma-3-270m

lm-eval runs from ``pip install --no-deps --target benchmarks/.work/lmeval-0.4.13 lm-eval==0.4.13`` (its ``gguf``
module needs only requests/tqdm/numpy/yaml/jinja2, which the project's venv has), in a subprocess, timed around
``GGUFLM.loglikelihood``; thai-eval is timed around ``ServedModel.loglikelihood`` after its one-off probe.
Both sides send the same requests in the same (document) order, so llama-cpp-python's reuse of the previous
prompt's KV cache helps both alike. Results go to benchmarks/.work/served_parity.json.
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
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(LMEVAL_DIR),
                        "lm-eval==0.4.13"], check=True)
    return LMEVAL_DIR


def task_requests(task: str, n_docs: int, shots: int) -> list[tuple[str, str]]:
    """The (context, continuation) pairs of the first ``n_docs`` documents, as thai-eval's h6 builds them."""
    from thai_eval_utils.h6 import tasks as T
    from thai_eval_utils.h6.data import load_h6_task
    from thai_eval_utils.h6.fewshot import default_seed, draw_shots

    spec = T.get_task(task)
    data = load_h6_task(DATA, spec.name)
    draws = draw_shots("lb", len(data.docs), len(data.fewshot_pool), shots, default_seed("lb"))
    tmpl = T.templates_for(spec)
    out = []
    for i in range(min(n_docs, len(data.docs))):
        r = T.build_requests(spec, data.docs[i], [data.fewshot_pool[j] for j in draws[i]], tmpl)
        out.extend(r.requests)
    return out


def run_lmeval(base_url: str, requests: list[tuple[str, str]], path: Path) -> dict:
    path.write_text(json.dumps(requests, ensure_ascii=False))
    env = {**os.environ, "PYTHONPATH": str(ensure_lmeval())}
    res = subprocess.run([sys.executable, "-c", LMEVAL_RUNNER, base_url.removesuffix("/v1"), str(path)],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def run_thai_eval(base_url: str, model_id: str, requests: list[tuple[str, str]], concurrency: int | None) -> dict:
    from thai_eval_utils.core.served import ServedModel

    m = ServedModel(model_id, base_url=base_url, tokenizer="embedded", concurrency=concurrency)
    t0 = time.perf_counter()
    ident = m.identity  # the probe
    probe = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = m.loglikelihood(requests, progress=False)
    return {"seconds": time.perf_counter() - t0, "probe_seconds": probe, "results": out, "identity": ident}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", help="a running llama-cpp-python server (default: start one on the embedded GGUF)")
    ap.add_argument("--model-id", default="gemma-3-270m")
    ap.add_argument("--docs", type=int, default=3, help="documents per task")
    ap.add_argument("--shots", type=int, default=0, help="few-shot examples per prompt")
    ap.add_argument("--tasks", default="th_arc,th_hellaswag")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=None,
                    help="requests in flight (default: thai-eval's, 1 for a text-only server such as llama-cpp-python)")
    args = ap.parse_args(argv)
    WORK.mkdir(parents=True, exist_ok=True)
    ensure_lmeval()
    from contextlib import nullcontext

    from thai_eval_utils.core.models import embedded_gguf_path
    from thai_eval_utils.core.served.llamacpp import LlamaCppServer

    server = nullcontext() if args.base_url else LlamaCppServer(
        embedded_gguf_path(), alias=args.model_id, n_ctx=4096, n_threads=args.threads, log=WORK / "llamacpp.log")
    results: dict = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                 "llama_cpp_python": metadata.version("llama_cpp_python"),
                                 "load_before": os.getloadavg()[0]},
                     "settings": vars(args), "tasks": {}}
    with server as srv:
        base_url = args.base_url or srv.base_url
        for task in args.tasks.split(","):
            reqs = task_requests(task, args.docs, args.shots)
            log(f"{task}: {len(reqs)} requests; lm-eval gguf ...")
            lm = run_lmeval(base_url, reqs, WORK / f"served_{task}_requests.json")
            log(f"{task}: lm-eval {lm['seconds']:.1f} s; thai-eval ...")
            te = run_thai_eval(base_url, args.model_id, reqs, args.concurrency)
            log(f"{task}: thai-eval {te['seconds']:.1f} s (probe {te['probe_seconds']:.1f} s)")
            deltas = [abs(a[0] - b[0]) for a, b in zip(te["results"], lm["results"])]
            greedy_same = sum(bool(a[1]) == bool(b[1]) for a, b in zip(te["results"], lm["results"]))
            results["tasks"][task] = {
                "requests": len(reqs), "lmeval_seconds": lm["seconds"], "thai_eval_seconds": te["seconds"],
                "probe_seconds": te["probe_seconds"], "lmeval_req_per_s": len(reqs) / lm["seconds"],
                "thai_eval_req_per_s": len(reqs) / te["seconds"], "speedup": lm["seconds"] / te["seconds"],
                "max_abs_delta": max(deltas), "n_delta_over_1e-4": sum(d > 1e-4 for d in deltas),
                "greedy_agree": greedy_same, "thai_eval": te["results"], "lmeval": lm["results"],
            }
    results["machine"]["load_after"] = os.getloadavg()[0]
    out = WORK / "served_parity.json"
    out.write_text(json.dumps(results, indent=1, ensure_ascii=False))
    print("\n| task | requests | lm-eval gguf req/s | thai-eval req/s | speed-up | max abs delta | deltas > 1e-4 | greedy agree |")
    print("|---|---|---|---|---|---|---|---|")
    for task, r in results["tasks"].items():
        print(f"| {task} | {r['requests']} | {r['lmeval_req_per_s']:.3f} | {r['thai_eval_req_per_s']:.3f} | "
              f"{r['speedup']:.2f}x | {r['max_abs_delta']:.2e} | {r['n_delta_over_1e-4']} | {r['greedy_agree']}/{r['requests']} |")
    log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
