"""Speed of thai-eval against the Thai LLM Leaderboard's runner (scbdatax/seacrowd-eval @9de9392) on the six
log-likelihood tasks and on generation, side by side in one run (spec
``../shared/spec/thai_llm_leaderboard.md`` 2.4, 3.2).

- Log-likelihood: the first ``--items`` scored items of each shipped task (``data/thai_llm_leaderboard/``; prompts
  from thai-eval's loader, equal to the runner's ``to_prompt`` output, as the parity test checks). The runner's
  ``HFModel.predict_classification`` (CPU / float32 / sdpa, see ``thai_llm_leaderboard_parity.RUNNER_PATCHES``) runs
  in the side environment (a subprocess of its Python) at batch size 4 (the leaderboard's) and 1, looping over each
  task's prompts in batches as ``main_nlu_prompt_batch.py`` does; thai-eval scores the same (prompt, label)
  sequences through the suite's ``scoring.score_batch`` (the prefix tree runs each prompt once for all its labels)
  in both settings: ``sums="labels"`` (the default: each label's terms after its item's shared prefix, the same
  argmax) and ``sums="whole"`` (the runner's totals). Timed: the scoring calls (tokenization included, model
  loading excluded). thai-eval runs before, between and after the runner runs (median reported), so both sides see
  similar machine load. Predictions must be identical.
- matmul work ratio (counted, not timed): the runner forwards every label's padded batch through the decoder body
  and the output layer at every position (B x longest sequence per forward); thai-eval runs each distinct prefix-
  tree token through the body once and the output layer at each distinct scored position (every position with
  ``whole``, the label positions with ``labels``; 2 FLOPs per weight per token; attention scores and the
  log-softmax on top, not counted), as ``h6_parity_speed.work_ratio`` counts.
- Generation: the runner's ``predict_generation`` (chat template, ``model.generate``, batch 4) made greedy by
  ``top_k=1`` (its ``do_sample=True, temperature=0.2`` are hard-coded) and both sides capped at ``--new-tokens``
  (the runner's ``max_generation_length`` attribute; it fixes 512) against thai-eval's generation engine on the same
  chat strings and token ids (the runner's double BOS included, spec quirk 14), with the runner's terminator set
  (the tokenizer's EOS only: Gemma's ``<end_of_turn>`` does not stop it). Texts compared.

Run with the project's Python (the runner part runs in /work/sidevenv/tllb, see the fixture README):

    .venv/bin/python benchmarks/thai_llm_leaderboard_speed.py            # --items 2 --gen-items 1 --new-tokens 24
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
FIXTURE = REPO / "tests" / "data" / "thai_llm_leaderboard_runner"
DATA = REPO / "data" / "thai_llm_leaderboard"
SIDE_PY = Path("/work/sidevenv/tllb/bin/python")
DOC = REPO / "docs" / "benchmarks.md"
BEGIN, END = "<!-- tllb-speed:begin -->", "<!-- tllb-speed:end -->"
TASKS = [
    "wisesight_thai_sentiment_seacrowd_text",
    "m3exam_tha_seacrowd_qa",
    "xcopa_tha_seacrowd_qa",
    "belebele_tha_thai_seacrowd_qa",
    "xnli.tha_seacrowd_pairs",
    "thaiexam_qa",
]
NLG_TASKS = [
    "xl_sum_tha_seacrowd_t2t",
    "flores200_eng_Latn_tha_Thai_seacrowd_t2t",
    "flores200_tha_Thai_eng_Latn_seacrowd_t2t",
    "iapp_squad_seacrowd_qa",
]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def selection(n_items: int, n_gen: int) -> dict:
    """The items both sides score, built by thai-eval's loaders (whose prompts ``tests/test_thai_llm_leaderboard_
    parity.py`` checks byte for byte against the runner's): the first ``n_items`` scored items per task, and
    ``n_gen`` generation prompts per NLG task."""
    from thai_eval_utils.thai_llm_leaderboard.data import load_task
    from thai_eval_utils.thai_llm_leaderboard.generation import fill_prompt, load_nlg_rows, nlg_task
    from thai_eval_utils.thai_llm_leaderboard.tasks import nlu_task

    nlu = {}
    for t in TASKS:
        data = load_task(nlu_task(t), DATA)
        nlu[t] = [
            {"id": str(it["id"]), "index": i, "prompt": it["prompt"], "labels": list(it["labels"]), "gold": it["gold"]}
            for i, it in enumerate(data.items[:n_items])
        ]
    gen = []
    for key in NLG_TASKS:
        task = nlg_task(key)
        rows = load_nlg_rows(task, next(DATA.glob(f"{key}_*.jsonl")))
        gen += [fill_prompt(task, r) for r in rows[:n_gen]]
    return {"nlu": nlu, "gen": gen}


# --- the runner's side (runs under the side environment's Python) -------------------------------------------
def runner_part(spec: dict) -> dict:
    """Time the runner's HFModel on ``spec``'s prompts: predict_classification at ``spec['batch']`` or
    predict_generation (batch 4, greedy via top_k=1) when ``spec['generate']``."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import torch

    import thai_llm_leaderboard_parity as parity

    torch.set_num_threads(spec["threads"])
    side = parity.setup_side_env(Path(spec["runner"]), Path(spec["metrics"]))
    model = side["model_utils"].HFModel(spec["model_dir"], compile=False)
    tok = model.tokenizer
    if spec.get("generate"):
        model.max_generation_length = spec["new_tokens"]
        prompts, texts, t0 = spec["gen"], [], time.perf_counter()
        for i in range(0, len(prompts), 4):  # main_nlg_prompt_batch.py: batches of BATCH_SIZE = 4
            texts += model.predict_generation(prompts[i : i + 4], top_k=1)
        return {"seconds": time.perf_counter() - t0, "texts": texts}
    bs, out = spec["batch"], {"seconds": 0.0, "preds": {}, "fed_padded": 0, "forwards": 0}
    for task, items in spec["nlu"].items():
        labels, prompts = items[0]["labels"], [it["prompt"] for it in items]
        preds, t0 = [], time.perf_counter()
        for i in range(0, len(prompts), bs):  # main_nlu_prompt_batch.py:196-225
            preds += model.predict_classification(prompts[i : i + bs], labels)
        out["seconds"] += time.perf_counter() - t0
        out["preds"][task] = preds
        for i in range(0, len(prompts), bs):  # the tokens each forward runs (counted after the timing)
            for label in labels:
                lens = [len(tok(p.replace("[LABEL_CHOICE]", label))["input_ids"]) for p in prompts[i : i + bs]]
                out["fed_padded"] += len(lens) * max(lens)
                out["forwards"] += 1
    return out


def run_runner(spec: dict, args) -> dict:
    spec = {
        **spec,
        "runner": str(args.runner),
        "metrics": str(args.metrics),
        "model_dir": args.model_dir,
        "threads": args.threads,
    }
    path = REPO / "benchmarks" / ".work" / "tllb-runner-spec.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [str(SIDE_PY), __file__, "--runner-part", str(path)], capture_output=True, text=True, env=env, cwd=str(REPO)
    )
    if proc.returncode:
        sys.exit(f"runner part failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- thai-eval's side ---------------------------------------------------------------------------------------
def ours_nlu(model, nlu: dict, sums: str) -> tuple[float, dict, str]:
    """thai-eval's scoring of every task (one engine call per task) with ``NLUProtocol(sums=sums)``; (seconds, preds
    per task, which path)."""
    from thai_eval_utils.thai_llm_leaderboard.protocol import NLUProtocol
    from thai_eval_utils.thai_llm_leaderboard.scoring import model_limit, score_batch

    preds, total = {}, 0.0
    protocol = NLUProtocol(sums=sums)
    for task, items in nlu.items():
        t0 = time.perf_counter()
        its = [
            {
                "id": it["id"],
                "row": it["index"],
                "key": f"{task}/{it['id']}",
                "prompt": it["prompt"],
                "labels": it["labels"],
                "gold": it["gold"],
            }
            for it in items
        ]
        preds[task] = [r["pred"] for r in score_batch(model, its, protocol, limit=model_limit(model, protocol))]
        total += time.perf_counter() - t0
    return total, preds, f"thai_llm_leaderboard.scoring.score_batch, sums={sums}"


def work(model, nlu: dict, runner_fed: dict[int, int]) -> dict:
    """Matrix-multiply FLOPs (h6_parity_speed's count: body = the decoder's linear weights, head = the output layer,
    2 FLOPs per weight per token): the runner's padded forwards run the body and the head at every position;
    thai-eval runs each distinct prefix-tree position through the body once and the head at each distinct scored
    position: every fed position with ``sums="whole"``, only the positions after an item's shared prefix with
    ``sums="labels"``."""
    import torch

    from thai_eval_utils.thai_llm_leaderboard.scoring import shared_prefix

    hf, tok = model.hf_model, model.tokenizer
    head = hf.get_output_embeddings().weight.numel()
    body = sum(m.weight.numel() for m in hf.base_model.modules() if isinstance(m, torch.nn.Linear))
    tree = whole_rows = label_rows = 0
    for items in nlu.values():  # one engine call (one tree) per task
        fed, scored_whole, scored_labels = set(), set(), set()
        for it in items:
            ids = [tuple(tok(it["prompt"].replace("[LABEL_CHOICE]", lab))["input_ids"]) for lab in it["labels"]]
            start = max(1, shared_prefix(ids))
            for seq in ids:
                for p in range(1, len(seq)):  # position p-1 (context seq[:p]) scores token p
                    fed.add(seq[:p])
                    scored_whole.add(seq[:p])
                    if p >= start:
                        scored_labels.add(seq[:p])
        tree, whole_rows, label_rows = tree + len(fed), whole_rows + len(scored_whole), label_rows + len(scored_labels)
    flops = {"whole": 2 * (tree * body + whole_rows * head), "labels": 2 * (tree * body + label_rows * head)}
    out = {
        "tree_tokens": tree,
        "scored_rows_whole": whole_rows,
        "scored_rows_labels": label_rows,
        **{f"thai_eval_{k}_gflop": v / 1e9 for k, v in flops.items()},
        **{f"runner_bs{b}_fed": f for b, f in runner_fed.items()},
        **{f"runner_bs{b}_gflop": 2 * f * (body + head) / 1e9 for b, f in runner_fed.items()},
    }
    out.update({f"ratio_{k}_bs{b}": 2 * f * (body + head) / v for k, v in flops.items() for b, f in runner_fed.items()})
    return out


def ours_generate(model, prompts: list[str], new_tokens: int) -> tuple[float, list[str]]:
    """thai-eval's generation engine on the runner's chat strings, tokenized as the runner does (default special
    tokens: a second BOS), greedy, stopping where the runner stops (the tokenizer's EOS only)."""
    chat = [
        model.tokenizer.apply_chat_template(
            [{"role": "user", "content": p}], add_generation_prompt=True, tokenize=False
        )
        for p in prompts
    ]
    cfg = model.hf_model.generation_config
    saved, cfg.eos_token_id = cfg.eos_token_id, model.tokenizer.eos_token_id
    try:
        t0 = time.perf_counter()
        texts = model._generate_ids(
            chat, True, max_new_tokens=new_tokens, stop=None, temperature=0.0, top_p=1.0, seed=None, desc="chat"
        )
        return time.perf_counter() - t0, texts
    finally:
        cfg.eos_token_id = saved


def fixture_parity(model) -> str:
    """thai-eval's scores of every fixture item against the runner's batch-size-1 (and 4) sums: a line for the docs."""
    rows = [json.loads(x) for x in (FIXTURE / "nlu_items.jsonl").read_text(encoding="utf-8").splitlines()]
    by_task = {t: [r for r in rows if r["task"] == t] for t in TASKS}
    t0, path = time.perf_counter(), "thai_llm_leaderboard.scoring.score_batch"
    from thai_eval_utils.thai_llm_leaderboard.protocol import NLUProtocol
    from thai_eval_utils.thai_llm_leaderboard.scoring import model_limit, score_batch

    deltas, within, same, same4 = [], True, 0, 0
    for t, items in by_task.items():
        its = [
            {
                "id": r["id"],
                "row": r["index"],
                "key": f"{t}/{r['id']}",
                "prompt": r["prompt"],
                "labels": r["labels"],
                "gold": r["gold"],
            }
            for r in items
        ]
        whole = NLUProtocol(sums="whole")  # the runner's totals, to compare with its sums
        ours = score_batch(model, its, whole, limit=model_limit(model, whole))
        for r, o in zip(items, ours):
            for a, b, n in zip(o["lls"], r["sums"], r["scored_tokens"]):
                deltas.append(abs(a - b))
                within &= abs(a - b) <= max(1e-4, 1e-5 * n)
            same += o["pred"] == r["pred"]
            same4 += o["pred"] == r["pred_bs4"]
    seconds = time.perf_counter() - t0
    return (
        f"{len(rows)} fixture items ({len(deltas)} label sums): predictions equal to the runner's batch size 1 "
        f"{same}/{len(rows)}, to its batch size 4 {same4}/{len(rows)}; max |sum delta| {max(deltas):.1e}, all "
        f"within max(1e-4, 1e-5 x tokens): {'yes' if within else 'NO'} ({path}; {seconds:.0f} s)"
    )


# --- report ---------------------------------------------------------------------------------------------------
def short(task: str) -> str:
    """wisesight, m3exam, xcopa, belebele, xnli, thaiexam."""
    return task.split("_")[0].split(".")[0]


def report(res: dict, command: str) -> str:
    w, n = res["work"], res["n_items"]
    best = min((4, 1), key=lambda b: res[f"runner_bs{b}"]["seconds"])
    fast = res[f"runner_bs{best}"]["seconds"]
    g = res["generation"]
    lines = [
        f"Model: embedded Gemma 3 270M (Q4_K_M GGUF dequantised to float32), float32, CPU ({os.cpu_count()} cores, "
        f"torch threads {res['threads']}); runner scbdatax/seacrowd-eval @9de9392 in its side environment "
        f"(transformers {res['versions']['runner']['transformers']}, torch {res['versions']['runner']['torch']}); "
        f"thai-eval path: `thai_llm_leaderboard.scoring.score_batch`. Load average (1 min) at the start of each "
        f"part: {res['loads']}.",
        "",
        f"Command: `{command}`",
        "",
        f"{sum(n.values())} items ({', '.join(short(k) + ' ' + str(v) for k, v in n.items())}). Runner: batch size 4 "
        f"{res['runner_bs4']['seconds']:.1f} s, batch size 1 {res['runner_bs1']['seconds']:.1f} s (the faster: "
        f"batch {best}).",
        "",
        "| thai-eval setting | seconds (runs; median) | speed-up vs the runner's batch "
        f"{best} | matmul work ratio | % of work ratio | predictions identical to the runner's |",
        "|---|---|---|---|---|---|",
    ]
    for sums, what in (
        ("labels", '`sums="labels"` (default): label parts'),
        ("whole", '`sums="whole"`: the runner\'s totals'),
    ):
        secs = res[f"ours_{sums}_seconds"]
        ours = statistics.median(secs)
        speedup, ratio = fast / ours, w[f"ratio_{sums}_bs{best}"]
        lines.append(
            f"| {what} | {', '.join(f'{s:.1f}' for s in secs)}; {ours:.1f} | **{speedup:.1f}x** "
            f"| {ratio:.2f}x ({w[f'runner_bs{best}_gflop']:,.0f} / {w[f'thai_eval_{sums}_gflop']:,.0f} GFLOP) "
            f"| {100 * speedup / ratio:.0f}% | {'yes' if res[f'preds_equal_{sums}'] else 'NO'} |"
        )
    lines += [
        "",
        f"Tokens through the decoder: runner batch 4 {w['runner_bs4_fed']:,} (padding included), batch 1 "
        f"{w['runner_bs1_fed']:,}; thai-eval's prefix tree {w['tree_tokens']:,}, with the output layer at "
        f"{w['scored_rows_whole']:,} positions (`whole`) or {w['scored_rows_labels']:,} (`labels`). The runner's "
        f"batch size 4 changed {res['bs4_changed']} of {sum(n.values())} of its batch-size-1 predictions here.",
        "",
        f"Generation ({len(g['prompts'])} chat prompts, {g['new_tokens']} new tokens, greedy): runner "
        f"`predict_generation` batch 4 {g['runner_seconds']:.1f} s, thai-eval's engine {g['ours_seconds']:.1f} s: "
        f"**{g['runner_seconds'] / g['ours_seconds']:.1f}x**; texts equal {g['equal']} of {len(g['prompts'])}.",
    ]
    return "\n".join(lines)


def write_doc(text: str) -> None:
    doc = DOC.read_text(encoding="utf-8")
    if BEGIN in doc:
        doc = doc[: doc.index(BEGIN) + len(BEGIN)] + "\n" + text + "\n" + doc[doc.index(END) :]
        DOC.write_text(doc, encoding="utf-8")
    else:
        print(f"{DOC} has no {BEGIN} block: results not written", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runner-part", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--items", type=int, default=2, help="scored items per task")
    ap.add_argument("--gen-items", type=int, default=1, help="chat prompts per NLG task")
    ap.add_argument("--new-tokens", type=int, default=24)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runner", type=Path, default=Path("/work/sidevenv/tllb/seacrowd-eval"))
    ap.add_argument("--metrics", type=Path, default=Path("/work/sidevenv/tllb/evaluate-v0.4.2/metrics"))
    ap.add_argument("--model-dir", default=None)
    ap.add_argument(
        "--fixture-parity", action="store_true", help="only: thai-eval on every fixture item against the runner's sums"
    )
    ap.add_argument("--write-doc", action="store_true", help="replace the tllb-speed block of docs/benchmarks.md")
    args = ap.parse_args()
    if args.runner_part:
        print(json.dumps(runner_part(json.loads(args.runner_part.read_text(encoding="utf-8"))), ensure_ascii=False))
        return
    import torch
    import transformers

    from thai_eval_utils.backend.model_sources import embedded_model_dir
    from thai_eval_utils.backend.models import load_model

    torch.set_num_threads(args.threads)
    args.model_dir = args.model_dir or str(embedded_model_dir())
    model = load_model("embedded")
    if args.fixture_parity:
        print(fixture_parity(model))
        return
    sel = selection(args.items, args.gen_items)
    ours_nlu(model, {t: v[:1] for t, v in list(sel["nlu"].items())[:1]}, "whole")  # warm-up: the one-off self-check
    loads, ours_s, runs, preds = [], {"labels": [], "whole": []}, {}, {}
    for step in ("ours", 4, "ours", 1, "ours"):  # thai-eval before, between and after the runner's two settings
        loads.append(round(os.getloadavg()[0], 1))
        if step == "ours":
            for sums in ("labels", "whole"):
                s, preds[sums], _ = ours_nlu(model, sel["nlu"], sums)
                ours_s[sums].append(s)
                log(f"thai-eval sums={sums}: {s:.1f} s")
        else:
            runs[step] = run_runner({"batch": step, "nlu": sel["nlu"]}, args)
            log(f"runner batch {step}: {runs[step]['seconds']:.1f} s")
    equal = {k: p == runs[4]["preds"] == runs[1]["preds"] for k, p in preds.items()}
    changed = sum(a != b for t in TASKS for a, b in zip(runs[4]["preds"][t], runs[1]["preds"][t]))
    loads.append(round(os.getloadavg()[0], 1))
    gen = run_runner({"generate": True, "gen": sel["gen"], "new_tokens": args.new_tokens}, args)
    log(f"runner generation: {gen['seconds']:.1f} s")
    g_s, g_texts = ours_generate(model, sel["gen"], args.new_tokens)
    log(f"thai-eval generation: {g_s:.1f} s")
    side_versions = json.loads(
        subprocess.run(
            [
                str(SIDE_PY),
                "-c",
                "import json, torch, transformers; print(json.dumps({'torch': torch.__version__, "
                "'transformers': transformers.__version__}))",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    res = {
        "threads": args.threads,
        "loads": loads,
        "n_items": {t: len(v) for t, v in sel["nlu"].items()},
        "runner_bs4": {k: v for k, v in runs[4].items() if k != "preds"},
        "runner_bs1": {k: v for k, v in runs[1].items() if k != "preds"},
        "ours_labels_seconds": ours_s["labels"],
        "ours_whole_seconds": ours_s["whole"],
        "preds_equal_labels": equal["labels"],
        "preds_equal_whole": equal["whole"],
        "bs4_changed": changed,
        "work": work(model, sel["nlu"], {4: runs[4]["fed_padded"], 1: runs[1]["fed_padded"]}),
        "versions": {
            "runner": side_versions,
            "thai_eval": {"torch": torch.__version__, "transformers": transformers.__version__},
        },
        "generation": {
            "prompts": sel["gen"],
            "new_tokens": args.new_tokens,
            "runner_seconds": gen["seconds"],
            "ours_seconds": g_s,
            "runner_texts": gen["texts"],
            "ours_texts": g_texts,
            "equal": sum(a == b for a, b in zip(gen["texts"], g_texts)),
        },
    }
    out = REPO / "benchmarks" / ".work" / "tllb-speed.json"
    out.write_text(json.dumps(res, ensure_ascii=False, indent=1), encoding="utf-8")
    cmd = ".venv/bin/python benchmarks/thai_llm_leaderboard_speed.py" + "".join(
        f" --{k} {getattr(args, k.replace('-', '_'))}"
        for k, d in (("items", 2), ("gen-items", 1), ("new-tokens", 24))
        if getattr(args, k.replace("-", "_")) != d
    )
    text = report(res, cmd + (" --write-doc" if args.write_doc else ""))
    print(text)
    if args.write_doc:
        write_doc(text)
    assert all(equal.values()), "thai-eval's predictions differ from the runner's"


if __name__ == "__main__":
    main()
