"""Speed of thai-eval's generation engine against lm-evaluation-harness 0.4.13 on SEA-HELM's Thai prompts:
greedy, the embedded Gemma 3 270M, float32, CPU.

The prompts are what the suite sends (``seahelm.runner``, instruct protocol: zero-shot, the model's chat template,
each task's ``max_tokens``) for the first ``--limit`` items of each generation task. thai-eval generates them as the
suite does (``run_suite`` -> ``seahelm.pooling.pool_replies``: every task's prompts in one engine call per run, each
with its task's budget; greedy, prompt lookup on as by default), timed to the last stored reply; ``--lookup-off``
adds the same path with prompt lookup off (``LocalModel.lookup_tokens = 0``), ``--per-task`` the path before pooling
(one ``chat`` call per task). lm-eval 0.4.13's ``HFLM.generate_until`` gets exactly the same rendered prompt strings with
``until=[]`` (it adds the tokenizer's EOS string) and ``max_gen_toks`` = the task's ``max_tokens``, at each batch
size, in the lm-eval venv ``h6_parity_speed.py`` builds (``benchmarks/lmeval_generate.py``; its time is inside
``generate_until``, model loading excluded). The texts are compared item by item.

Work is counted in token positions the decoder computed, as ``generation_speed.py`` counts it: the exact-work bound
is each distinct prompt position once (every prompt of the run in one prefix tree) plus each generated token but
each row's last; thai-eval counts what it fed (prompt tokens and decode row-steps), lm-eval rows x (padded width +
new tokens - 1) per ``generate`` call. The machine is shared: each row records the 1-minute load average at its
start and end.

    .venv/bin/python benchmarks/seahelm_speed.py --limit 2                  # the embedded model (~10 min)
    .venv/bin/python benchmarks/seahelm_speed.py --limit 2 --write-doc      # and the block in docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import torch  # noqa: E402
from generation_speed import NewEngine, diff, load  # noqa: E402
from h6_parity_speed import OFFLINE, VENV, WORK, ensure_venv, log, update_doc  # noqa: E402

from thai_eval_utils.backend.generation import LOOKUP_TOKENS, encode_prompts  # noqa: E402
from thai_eval_utils.backend.models import embedded_model_dir  # noqa: E402
from thai_eval_utils.backend.prefix_tree import tree_positions  # noqa: E402
from thai_eval_utils.seahelm.config import SEEDS, task_config  # noqa: E402
from thai_eval_utils.seahelm.data import load_task_data  # noqa: E402
from thai_eval_utils.seahelm.generation import chat_replies, model_sampling  # noqa: E402
from thai_eval_utils.seahelm.prompts import build_messages  # noqa: E402

BEGIN, END = "<!-- seahelm-speed:begin -->", "<!-- seahelm-speed:end -->"
#: SEA-HELM's Thai generation tasks (the -logprobs variants, if-eval and mt-bench-judge left out)
TASKS = (
    "sentiment",
    "qa",
    "toxicity",
    "translation-en-xx",
    "translation-xx-en",
    "abssum",
    "causal",
    "nli",
    "thai_exam_a_level",
    "thai_exam_ic",
    "thai_exam_onet",
    "thai_exam_tgat",
    "thai_exam_tpat1",
    "belebele-qa-mc",
)


def conversations(tasks: list[str], limit: int) -> dict[str, list]:
    """Each task's instruct conversations (zero-shot) for its first ``limit`` shipped rows, as ``run_seahelm_task`` builds
    them."""
    out = {}
    for key in tasks:
        task = task_config(key)
        rows = load_task_data(task).rows[:limit]
        out[key] = [build_messages(task, row, []) for row in rows]
    return out


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def load1() -> float:
    return round(os.getloadavg()[0], 1)


def run_suite_path(model: NewEngine, tasks: list[str], limit: int, label: str, lookup: int = LOOKUP_TOKENS) -> dict:
    """The suite's path (``seahelm.runner.run_suite`` generates with ``pooling.pool_replies``: every task's pending
    prompts in one engine call per run, each with its task's budget), greedy, run 0, into a fresh outputs folder;
    timed to the last stored reply (the scoring after it is left out, as it is on lm-eval's side). The texts are
    read back from the task stores, in task and row order."""
    import tempfile

    from thai_eval_utils.seahelm.pooling import pool_replies
    from thai_eval_utils.seahelm.task_run import Protocol, item_key, task_setup

    model.reset()
    model.lookup_tokens = lookup
    protocol = Protocol(greedy=True)
    start = load1()
    log(f"{label} (load {start})")
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        pool_replies(model, tasks, runs=1, limit=limit, outputs=out, protocol=protocol, progress=False)
        seconds = time.perf_counter() - t0
        texts = []
        for key in tasks:
            setup = task_setup(model, key, runs=1, limit=limit, protocol=protocol)
            with setup.open_store(model, out) as store:
                records = store.completed()
                texts += [records[item_key(0, row)]["reply"] for row in setup.rows]
    model.lookup_tokens = LOOKUP_TOKENS
    log(f"  {seconds:.1f} s")
    return {
        "engine": label,
        "seconds": seconds,
        "computed": model.computed(),
        "texts": texts,
        "generated": model.work.generated_tokens,
        "load": [start, load1()],
        "steps": decode_steps(model),
    }


def decode_steps(model: NewEngine) -> str:
    """The decode steps thai-eval ran, and the prompt-lookup tokens it fed and kept."""
    w = model.work
    return f"{w.steps:,} ({w.proposed:,} proposed, {w.accepted:,} kept)"


def run_per_task(model: NewEngine, convs: dict[str, list], label: str) -> dict:
    """The path before pooling: one greedy ``chat`` call per task (``chat_replies``, seed of run 0)."""
    model.reset()
    sampling = model_sampling(model, greedy=True)
    texts, start = [], load1()
    log(f"{label} (load {start})")
    t0 = time.perf_counter()
    for key, cs in convs.items():
        texts += chat_replies(model, cs, max_tokens=task_config(key).max_tokens, seed=SEEDS[0], sampling=sampling)
    seconds = time.perf_counter() - t0
    log(f"  {seconds:.1f} s")
    return {
        "engine": label,
        "seconds": seconds,
        "computed": model.computed(),
        "texts": texts,
        "generated": model.work.generated_tokens,
        "load": [start, load1()],
        "steps": decode_steps(model),
    }


def run_lmeval(model_dir: Path, bs: int, requests: list[dict], out: Path) -> dict:
    """lm-eval's ``generate_until`` on ``requests`` (prompt, until, max_gen_toks each) at batch size ``bs``."""
    out.mkdir(parents=True, exist_ok=True)
    src, dst = out / "in.json", out / f"bs{bs}.json"
    src.write_text(json.dumps({"requests": requests}, ensure_ascii=False), encoding="utf-8")
    start = load1()
    log(f"lm-eval generate_until batch {bs} (load {start})")
    env = {**os.environ, **OFFLINE, "HF_HOME": str(WORK / "hf-home")}
    proc = subprocess.run(
        [
            str(VENV / "bin" / "python"),
            str(REPO / "benchmarks" / "lmeval_generate.py"),
            str(model_dir),
            str(bs),
            str(src),
            str(dst),
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    label = f"lm-eval 0.4.13 HF, batch {bs}"
    if proc.returncode != 0:
        (out / f"bs{bs}.stderr").write_text(proc.stderr)
        log(f"  failed (exit {proc.returncode}); see {out / f'bs{bs}.stderr'}")
        return {"engine": label, "error": f"exit {proc.returncode}", "load": [start, load1()]}
    res = json.loads(dst.read_text(encoding="utf-8"))
    log(f"  {res['seconds']:.1f} s")
    return {
        "engine": label,
        "seconds": res["seconds"],
        "computed": res["computed_positions"],
        "texts": res["texts"],
        "load": [start, load1()],
    }


def exact_bound(model: NewEngine, prompts: list[str], generated: int) -> int:
    """Each distinct prompt position once (all prompts in one prefix tree) + each generated token but a row's last."""
    encoded = encode_prompts(
        model.tokenizer, prompts, add_special_tokens=False, room=model.max_length, max_length=model.max_length
    )
    return tree_positions([tuple(p) for p in encoded]) + generated - len(prompts)


def report(res: dict) -> str:
    lines = [
        f"Model: embedded Gemma 3 270M, float32, CPU ({os.cpu_count()} cores shared with other engineers' jobs, "
        f"torch threads {res['threads']}); transformers {metadata.version('transformers')}, torch "
        f"{metadata.version('torch')}. `uptime` before: {res['uptime_before']}; after: {res['uptime_after']}.",
        "",
        f"Command: `{res['command']}`",
        "",
        f"{res['items']} prompts ({res['limit']} per task: {', '.join(res['tasks'])}); {res['prompt_tokens']:,} "
        f"prompt tokens, {res['generated']:,} generated by thai-eval; the exact-work bound is "
        f"{res['bound']:,} token positions.",
        "",
        "| engine | seconds | lm-eval's best batch / this | texts equal to thai-eval's | positions computed "
        "| exact bound / computed | decode steps | load (1 min) start -> end |",
        "|---|---|---|---|---|---|---|---|",
    ]
    ok = [r for r in res["rows"] if "error" not in r and r["engine"].startswith("lm-eval")]
    best = min((r["seconds"] for r in ok), default=None)
    base = res["rows"][0]["texts"]
    for r in res["rows"]:
        if "error" in r:
            lines.append(f"| {r['engine']} | {r['error']} | | | | | | {r['load'][0]} -> {r['load'][1]} |")
            continue
        d = diff(base, r["texts"])
        differ = f" (differ: {d})" if d else ""
        ratio = f"{best / r['seconds']:.2f}x" if best else ""
        lines.append(
            f"| {r['engine']} | {r['seconds']:.1f} | {ratio} | {len(base) - len(d)} of {len(base)}{differ} "
            f"| {r['computed']:,} | {100 * res['bound'] / r['computed']:.0f}% | {r.get('steps', '')} "
            f"| {r['load'][0]} -> {r['load'][1]} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=2, help="items per task")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--batch-sizes", default="1,8,16", help="lm-eval's batch sizes")
    ap.add_argument("--lookup-off", action="store_true", help="also the suite's path with prompt lookup off")
    ap.add_argument("--per-task", action="store_true", help="also thai-eval's path before pooling (a call per task)")
    ap.add_argument("--run-name", default="seahelm-speed")
    ap.add_argument("--write-doc", action="store_true", help="update the seahelm-speed block of docs/benchmarks.md")
    args = ap.parse_args(argv)
    command = ".venv/bin/python benchmarks/seahelm_speed.py " + " ".join(argv if argv is not None else sys.argv[1:])
    model_dir = embedded_model_dir().resolve()
    tasks = args.tasks.split(",")
    res = {
        "threads": torch.get_num_threads(),
        "command": command,
        "uptime_before": uptime(),
        "limit": args.limit,
        "tasks": tasks,
        "rows": [],
    }
    ensure_venv()
    model = load(model_dir, NewEngine)
    convs = conversations(tasks, args.limit)
    prompts = [model.render_chat(c) for cs in convs.values() for c in cs]
    requests = [
        {"prompt": model.render_chat(c), "until": [], "max_gen_toks": task_config(k).max_tokens}
        for k, cs in convs.items()
        for c in cs
    ]
    log(f"{len(prompts)} prompts over {len(tasks)} tasks")
    run_dir = WORK / args.run_name
    run_dir.mkdir(parents=True, exist_ok=True)
    first = run_suite_path(
        model, tasks, args.limit, "thai-eval, the suite's path (`run_suite`: all tasks pooled, one engine call)"
    )
    res.update(
        {
            "items": len(prompts),
            "generated": first["generated"],
            "rows": [first],
            "prompt_tokens": sum(len(model.tokenizer(p, add_special_tokens=False).input_ids) for p in prompts),
            "bound": exact_bound(model, prompts, first["generated"]),
        }
    )
    steps = (
        [lambda: run_suite_path(model, tasks, args.limit, "thai-eval, the suite's path, prompt lookup off", lookup=0)]
        if args.lookup_off
        else []
    )
    steps += (
        [lambda: run_per_task(model, convs, "thai-eval before pooling (one chat call per task)")]
        if args.per_task
        else []
    )
    steps += [
        lambda bs=bs: run_lmeval(model_dir, bs, requests, run_dir / "lmeval")
        for bs in [int(b) for b in args.batch_sizes.split(",") if b]
    ]
    block = ""
    for step in [None, *steps]:  # the report is rewritten after every row: a stopped run still reports
        if step is not None:
            res["rows"].append(step())
        res["uptime_after"] = uptime()
        (run_dir / "results.json").write_text(json.dumps(res, indent=1, ensure_ascii=False))
        block = report(res)
        if args.write_doc:
            update_doc(block, BEGIN, END)
    print("\n" + block)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
