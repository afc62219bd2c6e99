"""Parity and speed of thai-eval's log-likelihood engine against lm-evaluation-harness 0.4.13 (Thai-H6 spec,
"Running lm-eval as the side-by-side peer"): ARC-style 5-shot and 25-shot and HellaSwag-style 10-shot over the
repo's samples, lm-eval at batch sizes 1, 4 and 8, then thai-eval on the exact (context, continuation) strings that
lm-eval logged, with transformers' own KV-cache scoring as a parity yardstick and the matrix-multiply work of both
sides counted. Run with the project's Python:

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
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}

# (benchmark task, thai-eval task, scored split file, few-shot split file, shots)
TASKS = {
    "arc5": ("th_arc", "th_arc_challenge/th_arc_challenge_test.jsonl",
             "th_arc_challenge/th_arc_challenge_validation.jsonl", 5),
    "arc": ("th_arc", "th_arc_challenge/th_arc_challenge_test.jsonl",
            "th_arc_challenge/th_arc_challenge_validation.jsonl", 25),
    "hellaswag": ("th_hellaswag", "th_hellaswag/th_hellaswag_validation.jsonl",
                  "th_hellaswag/th_hellaswag_train.jsonl", 10),
}
YAML = """task: {name}
dataset_path: json
dataset_name: null
dataset_kwargs:
  data_files: {{fewshot: {fewshot}, scored: {scored}}}
output_type: multiple_choice
fewshot_split: fewshot
test_split: scored
num_fewshot: {shots}
doc_to_text: "{{{{query}}}}"
doc_to_target: "{{{{gold}}}}"
doc_to_choice: "{{{{choices}}}}"
metric_list:
  - {{metric: acc, aggregation: mean, higher_is_better: true}}
  - {{metric: acc_norm, aggregation: mean, higher_is_better: true}}
metadata: {{version: 1.0}}
"""


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# --- environment ----------------------------------------------------------------------------------------------
def ensure_venv() -> Path:
    """benchmarks/.work/lmeval-venv with lm-eval 0.4.13 and the project's torch/transformers/accelerate."""
    pins = [f"transformers=={metadata.version('transformers')}", f"accelerate=={metadata.version('accelerate')}",
            f"tokenizers=={metadata.version('tokenizers')}"]
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

    text = [line for spec in TASKS.values() for f in spec[1:3] for line in (DATA / f).read_text().splitlines()]
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(text, trainers.BpeTrainer(
        vocab_size=3000, special_tokens=["<pad>", "<eos>", "<bos>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tk.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 2)])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>")
    torch.manual_seed(0)
    cfg = Gemma3TextConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=4, num_attention_heads=2,
        num_key_value_heads=1, head_dim=32, query_pre_attn_scalar=32, sliding_window=16,
        layer_types=["sliding_attention", "sliding_attention", "full_attention", "sliding_attention"],
        max_position_embeddings=4096, bos_token_id=2, eos_token_id=1, pad_token_id=0)
    Gemma3ForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def write_tasks(task_dir: Path) -> None:
    """One lm-eval YAML per task over JSONL files holding each document's query, choices and gold, built by
    thai_eval_utils.h6.tasks from the repo's samples (so both sides see the thai-eval prompt format)."""
    from thai_eval_utils.h6 import tasks as h6_tasks

    task_dir.mkdir(parents=True, exist_ok=True)
    for name, (spec_name, scored, fewshot, shots) in TASKS.items():
        spec = h6_tasks.get_task(spec_name)
        templates = h6_tasks.templates_for(spec)
        paths = {}
        for split, rel in (("scored", scored), ("fewshot", fewshot)):
            docs = [json.loads(x) for x in (DATA / rel).read_text(encoding="utf-8").splitlines() if x.strip()]
            rows = [{"query": h6_tasks.doc_to_text(spec, d, templates), "choices": h6_tasks.choices(spec, d),
                     "gold": h6_tasks.gold(spec, d)} for d in docs]
            paths[split] = task_dir / f"{name}_{split}.jsonl"
            paths[split].write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        (task_dir / f"h6bench_{name}.yaml").write_text(
            YAML.format(name=f"h6bench_{name}", fewshot=paths["fewshot"], scored=paths["scored"], shots=shots))


# --- the two sides --------------------------------------------------------------------------------------------
def mem_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 8 << 30


def run_lmeval(py: Path, model_dir: Path, task: str, bs: int, out: Path, mem_limit: int,
               threads: int | None) -> dict:
    """One lm-eval run; returns its per-request results and the timed loglikelihood seconds (or the failure)."""
    out.mkdir(parents=True, exist_ok=True)
    timing = out / "timing.jsonl"
    timing.unlink(missing_ok=True)
    cmd = [str(py), str(REPO / "benchmarks" / "lmeval_timed.py"), "--model", "hf",
           "--model_args", f"pretrained={model_dir},dtype=float32,add_bos_token=False",
           "--device", "cpu", "--batch_size", str(bs), "--include_path", str(WORK / "tasks"),
           "--tasks", f"h6bench_{task}", "--output_path", str(out), "--log_samples"]
    env = {**os.environ, **OFFLINE, "H6_TIMING_FILE": str(timing), "HF_HOME": str(WORK / "hf-home")}
    if threads:
        env["H6_THREADS"] = str(threads)

    def cap():  # a failed allocation inside lm-eval rather than the machine's OOM killer
        resource.setrlimit(resource.RLIMIT_AS, (mem_limit, mem_limit))

    log(f"lm-eval {task} batch {bs} (memory cap {mem_limit / 2**30:.1f} GiB)")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, preexec_fn=cap, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    (out / "stderr.txt").write_text(proc.stderr)
    if proc.returncode != 0 or not timing.exists():
        oom = any(s in proc.stderr for s in ("can't allocate memory", "MemoryError", "out of memory"))
        why = "out of memory" if oom or proc.returncode == -9 else f"failed (exit {proc.returncode})"
        log(f"  {why}; see {out / 'stderr.txt'}")
        return {"batch_size": bs, "error": why, "wall": wall}
    samples = sorted(out.rglob(f"samples_h6bench_{task}_*.jsonl"), key=lambda p: p.stat().st_mtime)[-1]
    reqs, docs = [], []
    for line in samples.read_text(encoding="utf-8").splitlines():
        s = json.loads(line)
        args = [s["arguments"][k] for k in sorted(s["arguments"], key=lambda k: int(k.rsplit("_", 1)[1]))]
        for i, (a, r) in enumerate(zip(args, s["resps"])):
            reqs.append({"doc": s["doc_id"], "choice": i, "context": a["arg_0"], "continuation": a["arg_1"],
                         "ll": float(r[0][0]), "greedy": str(r[0][1]) == "True"})
        docs.append({"doc": s["doc_id"], "gold": int(s["target"]), "acc": float(s["acc"]),
                     "acc_norm": float(s["acc_norm"]), "choices": s["doc"]["choices"]})
    seconds = sum(json.loads(x)["seconds"] for x in timing.read_text().splitlines())
    cpu = sum(json.loads(x)["cpu_seconds"] for x in timing.read_text().splitlines())
    threads = json.loads(timing.read_text().splitlines()[0])["torch_threads"]
    log(f"  {len(reqs)} requests, loglikelihood {seconds:.1f} s (process {wall:.1f} s)")
    return {"batch_size": bs, "seconds": seconds, "cpu_seconds": cpu, "wall": wall, "threads": threads,
            "requests": sorted(reqs, key=lambda r: (r["doc"], r["choice"])), "docs": sorted(docs, key=lambda d: d["doc"])}


def run_engine(model, tok, requests: list[dict]) -> tuple[float, float, list[tuple[float, bool]]]:
    """thai-eval's engine on lm-eval's exact strings; timed like lm-eval (tokenization in, model load out)."""
    from thai_eval_utils.core.loglikelihood import loglikelihood

    pairs = [(r["context"], r["continuation"]) for r in requests]
    t0, c0 = time.perf_counter(), time.process_time()
    out = loglikelihood(model, tok, pairs, add_bos_token=False, max_length=max_length(model, tok), progress=False)
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
    scores and lm-eval's full-vocabulary log_softmax come on top and are not counted). The ratio is the speed-up an
    exact method reaches when both sides run at the same FLOP rate."""
    import torch

    from thai_eval_utils.core.loglikelihood import _fed
    from thai_eval_utils.core.prefix_tree import build_tree

    head = model.get_output_embeddings().weight
    body = sum(m.weight.numel() for m in model.base_model.modules() if isinstance(m, torch.nn.Linear))
    seqs, targets = _fed(encoded, max_length(model, tok))
    fed = sum(len(s) for s in seqs if s)
    root, _ = build_tree([s for s in seqs if s])
    tree, stack = 0, [root]
    while stack:
        node = stack.pop()
        tree += node.end - node.start
        stack += node.children
    rows = {s[:len(s) - len(t) + j + 1] for s, t in zip(seqs, targets) if s for j in range(len(t))}
    lm, ours = 2 * fed * (body + head.numel()), 2 * (tree * body + len(rows) * head.numel())
    return {"fed_tokens": fed, "tree_tokens": tree, "scored_rows": len(rows), "lmeval_gflop": lm / 1e9,
            "thai_eval_gflop": ours / 1e9, "work_ratio": lm / ours}


def max_length(model, tok) -> int:
    """lm-eval's default max_length rule for HF models (config n_positions/max_position_embeddings/n_ctx)."""
    cfg = model.config.get_text_config()
    for attr in ("n_positions", "max_position_embeddings", "n_ctx"):
        if getattr(cfg, attr, None):
            return int(getattr(cfg, attr))
    return 2048


def metrics(lls: list[float], docs: list[dict], requests: list[dict]) -> list[tuple[float, float]]:
    """(acc, acc_norm) per document from per-choice log-likelihoods: argmax of ll and of ll / len(choice) in
    characters (ties: first choice)."""
    by_doc: dict[int, list[float]] = {}
    for r, ll in zip(requests, lls):
        by_doc.setdefault(r["doc"], []).append(ll)
    out = []
    for d in docs:
        ll = by_doc[d["doc"]]
        norm = [x / len(c) for x, c in zip(ll, d["choices"])]
        out.append((float(ll.index(max(ll)) == d["gold"]), float(norm.index(max(norm)) == d["gold"])))
    return out


# --- report ---------------------------------------------------------------------------------------------------
def summarise(runs: list[dict], engine: list[tuple[float, float]], out, encoded, yardstick: list[float]) -> dict:
    """Parity and speed of one task: thai-eval against every lm-eval batch size that finished (``encoded``: the
    requests' (context, continuation) tokens as lm-eval encodes them)."""
    ok = [r for r in runs if "requests" in r]
    ref = ok[0]
    for r in ok[1:]:
        assert [(x["context"], x["continuation"]) for x in r["requests"]] == \
            [(x["context"], x["continuation"]) for x in ref["requests"]], "lm-eval requests differ by batch size"
    n_tok = [max(len(c), 1) for _, c in encoded]
    lls = [ll for ll, _ in out]
    deltas = [abs(ll - x["ll"]) for r in ok for ll, x in zip(lls, r["requests"])]
    per_tok = [abs(ll - x["ll"]) / n for r in ok for ll, x, n in zip(lls, r["requests"], n_tok)]
    own = [abs(a["ll"] - b["ll"]) for r in ok[1:] for a, b in zip(ref["requests"], r["requests"])]
    hf = [abs(y - x["ll"]) for y, x in zip(yardstick, ref["requests"])]
    tol = [max(1e-4, 1e-5 * n) for n in n_tok]
    ours = metrics(lls, ref["docs"], ref["requests"])
    best = min(ok, key=lambda r: r["seconds"])
    wall, cpu = statistics.median(w for w, _ in engine), statistics.median(c for _, c in engine)
    return {
        "docs": len(ref["docs"]), "requests": len(ref["requests"]), "scored_tokens": sum(n_tok),
        "lmeval": [{k: v for k, v in r.items() if k not in ("requests", "docs")} for r in runs],
        "engine_seconds": [w for w, _ in engine], "engine_cpu_seconds": [c for _, c in engine],
        "best_batch": best["batch_size"], "speedup": best["seconds"] / wall,
        "cpu_speedup": min(r["cpu_seconds"] for r in ok) / cpu,
        "max_delta": max(deltas), "max_delta_per_token": max(per_tok), "lmeval_own_max_delta": max(own, default=None),
        "hf_cache_max_delta": max(hf), "hf_cache_over_1e-4": sum(d > 1e-4 for d in hf),
        "over_1e-4": sum(abs(ll - x["ll"]) > 1e-4 for ll, x in zip(lls, ref["requests"])),
        "within_token_tolerance": all(abs(ll - x["ll"]) <= t for r in ok for ll, x, t in zip(lls, r["requests"], tol)),
        "greedy_equal": all(g == x["greedy"] for r in ok for (_, g), x in zip(out, r["requests"])),
        "metrics_equal": all(o == (d["acc"], d["acc_norm"]) for r in ok for o, d in zip(ours, r["docs"])),
        "acc": (statistics.mean(d["acc"] for d in ref["docs"]), statistics.mean(o[0] for o in ours)),
        "acc_norm": (statistics.mean(d["acc_norm"] for d in ref["docs"]), statistics.mean(o[1] for o in ours)),
    }


def report(results: dict, model_name: str, command: str) -> str:
    lines = [f"Model: {model_name}, float32, CPU ({os.cpu_count()} cores, torch threads {results['threads']}); "
             f"lm-eval 0.4.13, transformers {metadata.version('transformers')}, torch {metadata.version('torch')}, "
             f"Python {platform.python_version()}. Load average (1 min) before each lm-eval run: {results['load']}.",
             "", f"Command: `{command}`", "",
             "| task | docs / requests | lm-eval s, batch " + " / ".join(str(b) for b in results["batch_sizes"])
             + " | thai-eval s (each run; median) | speed-up, wall (CPU) | matmul work ratio | max abs delta (per token) "
             "| requests over 1e-4 | transformers KV cache: max delta, over 1e-4 "
             "| lm-eval vs itself | greedy equal | acc, lm-eval / thai-eval | acc_norm, lm-eval / thai-eval |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for task, r in results["tasks"].items():
        lm = " / ".join(f"{x['seconds']:.1f}" if "seconds" in x else x["error"] for x in r["lmeval"])
        eng = ", ".join(f"{s:.1f}" for s in r["engine_seconds"]) + f"; {statistics.median(r['engine_seconds']):.1f}"
        own = f"{r['lmeval_own_max_delta']:.1e}" if r["lmeval_own_max_delta"] is not None else "-"
        lines.append(
            f"| {task} ({TASKS[task][3]}-shot) | {r['docs']} / {r['requests']} | {lm} | {eng} | "
            f"**{r['speedup']:.1f}x** ({r['cpu_speedup']:.1f}x) vs batch {r['best_batch']} | "
            f"{r['work']['work_ratio']:.1f}x ({r['work']['lmeval_gflop']:,.0f} / {r['work']['thai_eval_gflop']:,.0f} GFLOP) | "
            f"{r['max_delta']:.1e} ({r['max_delta_per_token']:.1e}) | {r['over_1e-4']} of {r['requests']} | "
            f"{r['hf_cache_max_delta']:.1e}, {r['hf_cache_over_1e-4']} | {own} | {'yes' if r['greedy_equal'] else 'NO'} | "
            f"{r['acc'][0]:.3f} / {r['acc'][1]:.3f} | {r['acc_norm'][0]:.3f} / {r['acc_norm'][1]:.3f} |")
    lines += ["", f"Per-document acc and acc_norm identical to every lm-eval batch size: "
              f"{'yes' if results['metrics_equal'] else 'NO'}; every |delta| <= 1e-4: "
              f"{'yes' if results['parity_strict'] else 'NO'}; every |delta| <= max(1e-4, 1e-5 x continuation tokens): "
              f"{'yes' if results['parity'] else 'NO'}."]
    return "\n".join(lines)


def update_doc(block: str) -> None:
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else f"# Benchmarks\n\n{BEGIN}\n{END}\n"
    if BEGIN not in text:
        text += f"\n{BEGIN}\n{END}\n"
    head, rest = text.split(BEGIN, 1)
    DOC.write_text(f"{head}{BEGIN}\n{block}\n{END}{rest.split(END, 1)[1]}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a tiny random Gemma 3 instead of the embedded model")
    ap.add_argument("--model-dir", type=Path, help="a local HF model directory (default: the embedded model)")
    ap.add_argument("--tasks", default="arc5,hellaswag,arc")
    ap.add_argument("--batch-sizes", default="1,4,8")
    ap.add_argument("--engine-runs", type=int, default=2, help="thai-eval runs after each lm-eval run")
    ap.add_argument("--threads", type=int, help="torch threads on both sides (default: torch's, one per core)")
    ap.add_argument("--mem-fraction", type=float, default=0.7, help="lm-eval's address-space cap, of MemAvailable")
    ap.add_argument("--write-doc", action="store_true", help=f"update the results block of {DOC.relative_to(REPO)}")
    args = ap.parse_args(argv)
    command = ".venv/bin/python benchmarks/h6_parity_speed.py " + " ".join(argv if argv is not None else sys.argv[1:])

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from thai_eval_utils.core.loglikelihood import _encode
    from thai_eval_utils.core.models import embedded_model_dir

    if args.threads:
        torch.set_num_threads(args.threads)
    py = ensure_venv()
    model_dir = (args.model_dir or (tiny_model_dir() if args.quick else embedded_model_dir())).resolve()
    write_tasks(WORK / "tasks")
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(model_dir)
    sizes = [int(b) for b in args.batch_sizes.split(",")]
    results = {"tasks": {}, "threads": torch.get_num_threads(), "load": [], "batch_sizes": sizes}
    run_dir = WORK / ("runs-quick" if args.quick else "runs")
    for task in args.tasks.split(","):
        runs, engine, out = [], [], None
        for bs in sizes:
            results["load"].append(round(os.getloadavg()[0], 1))
            runs.append(run_lmeval(py, model_dir, task, bs, run_dir / task / f"bs{bs}",
                                   int(args.mem_fraction * mem_available()), args.threads))
            ok = [r for r in runs if "requests" in r]
            for _ in range(args.engine_runs if ok else 0):  # after each lm-eval run: both see similar load
                wall, cpu, res = run_engine(model, tok, ok[0]["requests"])
                assert out is None or res == out, "engine results differ between runs"
                engine.append((wall, cpu))
                out = res
                log(f"  thai-eval {task}: {wall:.1f} s (CPU {cpu:.1f} s)")
        if out is None:
            raise SystemExit(f"lm-eval failed on {task} at every batch size")
        log(f"  transformers KV-cache yardstick on {task}")
        requests = [r for r in runs if "requests" in r][0]["requests"]  # the same strings at every batch size
        encoded = _encode(tok, [(r["context"], r["continuation"]) for r in requests], False)  # lm-eval's tokens, once
        results["tasks"][task] = summarise(runs, engine, out, encoded, hf_cache_path(model, encoded))
        results["tasks"][task]["work"] = work_ratio(model, tok, encoded)
    results["metrics_equal"] = all(t["metrics_equal"] and t["greedy_equal"] for t in results["tasks"].values())
    results["parity_strict"] = all(t["max_delta"] <= 1e-4 for t in results["tasks"].values())
    results["parity"] = all(t["within_token_tolerance"] for t in results["tasks"].values())
    name = "tiny random Gemma 3 (--quick)" if args.quick else (
        "embedded Gemma 3 270M (Q4_K_M GGUF dequantised to float32)" if not args.model_dir else str(args.model_dir))
    block = report(results, name, command)
    (run_dir / "results.json").write_text(json.dumps(results, indent=1))
    print("\n" + block)
    if args.write_doc:
        update_doc(block)
        log(f"updated {DOC}")
    return 0 if results["parity"] and results["metrics_equal"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
