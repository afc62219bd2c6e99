"""Speed and parity of thai-eval's generation engine: GSM8K 5-shot against lm-evaluation-harness 0.4.13's
``HFLM.generate_until`` at several batch sizes, and ThaiCLI answers and dialect generation against the engine
thai-eval had before (static batches of 8, left padding, seeded sampling one prompt at a time).

GSM8K: ``h6.evaluate`` (leaderboard protocol, 5-shot) builds the prompts of the shipped Thai samples (the 12 test
documents and the 6 train documents, few-shot drawn from the train documents: 18 prompts); lm-eval generates from
exactly those prompts with the leaderboard's stops and 256 new tokens (``benchmarks/lmeval_generate.py``, in the
lm-eval venv that ``h6_parity_speed.py`` builds). ThaiCLI and dialects: ``generate_answers`` / ``run_generation`` end
to end (store included) with the notebooks' settings, once with the old engine and once with the new one.

Work is counted in token positions the decoder computed: a perfect scheduler computes each distinct prompt position
once (a call's prompts in a prefix tree: a shared few-shot block or instruction once) and each generated token but
the last once (the last is never fed back); the old engine and lm-eval compute rows x
(padded width + steps of the batch's longest row - 1) per batch; the new engine counts what it fed. Run with the
project's Python (nothing else should load the CPU; the load average is recorded):

    .venv/bin/python benchmarks/generation_speed.py --write-doc          # the embedded Gemma 3 270M (~20 min)
    .venv/bin/python benchmarks/generation_speed.py --quick              # a tiny random Gemma 3 (a minute)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import fields, replace
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import torch  # noqa: E402
from h6_parity_speed import OFFLINE, VENV, WORK, log, tiny_model_dir, update_doc  # noqa: E402
from transformers import (  # noqa: E402
    AutoModelForCausalLM,
    AutoTokenizer,
    StoppingCriteria,
    StoppingCriteriaList,
    set_seed,
)

from thai_eval_utils import dialect  # noqa: E402
from thai_eval_utils.backend.generation import LOOKUP_TOKENS, Engine, GenerationStats, encode_prompts  # noqa: E402
from thai_eval_utils.backend.local_model import LocalModel  # noqa: E402
from thai_eval_utils.backend.models import GEMMA3_CHAT_TEMPLATE, embedded_model_dir  # noqa: E402
from thai_eval_utils.backend.prefill_plan import MIN_SHARED_TOKENS  # noqa: E402
from thai_eval_utils.backend.prefix_tree import tree_positions  # noqa: E402
from thai_eval_utils.backend.stops import cut_at_stop  # noqa: E402
from thai_eval_utils.h6 import evaluate  # noqa: E402
from thai_eval_utils.h6.data import load_h6_task  # noqa: E402
from thai_eval_utils.h6.protocol import LEADERBOARD  # noqa: E402
from thai_eval_utils.thaicli import generate_answers, load_thaicli, select_items  # noqa: E402

BEGIN, END = "<!-- generation-speed:begin -->", "<!-- generation-speed:end -->"
H6_DATA = REPO / "data" / "thai_h6" / "h6"


class NewEngine(LocalModel):
    """The toolkit's LocalModel, its generation work summed over calls."""

    work = GenerationStats()
    calls: list = []  # (prompts, add_special_tokens, max_new_tokens) of each call, counted after the timing

    def reset(self) -> None:
        """Forget the work of earlier calls (before another timed run)."""
        self.work, self.calls = GenerationStats(), []

    def _generate_ids(self, prompts, add_special_tokens, **kw):
        texts = super()._generate_ids(prompts, add_special_tokens, **kw)
        self.calls = [*self.calls, (list(prompts), add_special_tokens, kw["max_new_tokens"])]
        g, w = self.last_generation, self.work
        self.work = replace(
            w,
            **{
                f.name: getattr(w, f.name) + getattr(g, f.name)
                for f in fields(GenerationStats)
                if not f.name.startswith("peak")
            },
        )
        return texts

    def computed(self) -> int:
        """Token positions fed to the decoder: prompts and each decode step's row."""
        return self.work.prompt_tokens + self.work.decode_row_steps

    def perfect(self) -> int:
        """What a perfect scheduler computes for the same texts: every distinct prompt position (the prompts of one
        call in a prefix tree, so a shared prefix once) and every generated token but each row's last (the
        attention over the frame's padding columns is not counted)."""
        distinct = rows = 0
        for prompts, add_special_tokens, max_new_tokens in self.calls:  # tokenised again here, outside the timing
            encoded = encode_prompts(
                self.tokenizer,
                prompts,
                add_special_tokens=add_special_tokens,
                room=max(1, self.max_length - max_new_tokens),
                max_length=self.max_length,
            )
            distinct, rows = distinct + tree_positions([tuple(p) for p in encoded]), rows + len(prompts)
        return distinct + self.work.generated_tokens - rows


class OldEngine(LocalModel):
    """The engine before continuous batching, kept here as the reference: prompts sorted by length, static batches of
    ``batch_size`` (1 for seeded sampling), left padding, ``hf_model.generate`` until the batch's longest row stops,
    stop strings checked on every row's whole decoded text; computed positions counted per batch."""

    concurrency = 8  # the run loops' items per call with that engine
    positions = 0

    @torch.inference_mode()
    def _generate_ids(self, prompts, add_special_tokens, *, max_new_tokens, stop, temperature, top_p, seed, desc):
        tok, pad = self.tokenizer, self.tokenizer.pad_token_id

        class Stops(StoppingCriteria):
            def __init__(self, width):
                self.width = width

            def __call__(self, input_ids, scores, **kwargs):
                texts = tok.batch_decode(input_ids[:, self.width :], skip_special_tokens=True)
                return torch.tensor([any(s in t for s in stop if s) for t in texts], dtype=torch.bool)

        encoded = encode_prompts(
            tok,
            prompts,
            add_special_tokens=add_special_tokens,
            room=max(1, self.max_length - max_new_tokens),
            max_length=self.max_length,
        )
        if temperature and temperature > 0:
            sample = {"do_sample": True, "temperature": float(temperature), "top_p": float(top_p)}
            size = 1 if seed is not None else self.batch_size
        else:
            sample, size = {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}, self.batch_size
        order = sorted(range(len(encoded)), key=lambda i: -len(encoded[i]))
        out_texts = [""] * len(encoded)
        for start in range(0, len(order), size):
            idx = order[start : start + size]
            batch = [encoded[i] for i in idx]
            width = max(len(b) for b in batch)
            ids = torch.tensor([[pad] * (width - len(b)) + b for b in batch])
            mask = torch.tensor([[0] * (width - len(b)) + [1] * len(b) for b in batch])
            if seed is not None:
                set_seed(seed)
            crit = StoppingCriteriaList([Stops(width)]) if stop else None
            out = self.hf_model.generate(
                input_ids=ids,
                attention_mask=mask,
                max_new_tokens=max_new_tokens,
                stopping_criteria=crit,
                pad_token_id=pad,
                **sample,
            )
            self.positions += out.shape[0] * (out.shape[1] - 1)
            for i, t in zip(idx, tok.batch_decode(out[:, width:], skip_special_tokens=True)):
                out_texts[i] = cut_at_stop(t, stop)
        return out_texts


def load(model_dir: Path, cls: type[LocalModel]) -> LocalModel:
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(model_dir)
    if not tok.chat_template:
        tok.chat_template = GEMMA3_CHAT_TEMPLATE
    return cls(model, tok, name=f"genbench-{cls.__name__}")


def timed(fn, *args, **kwargs):
    load1 = os.getloadavg()[0]
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0, round(load1, 1)


# --- the three workloads --------------------------------------------------------------------------------------
def gsm8k_prompts(model: LocalModel, limit: int | None) -> list[str]:
    """The leaderboard-protocol GSM8K 5-shot prompts of the shipped samples (test and train documents)."""
    data = load_h6_task(H6_DATA, "th_gsm8k")
    docs = list(data.docs) + list(data.fewshot_pool)
    seen: list[str] = []

    class Recording:
        def __getattr__(self, name):
            return getattr(model, name)

        def generate(self, prompts, **kw):
            seen.extend(prompts)
            return [""] * len(prompts)

    evaluate(
        Recording(),
        "th_gsm8k",
        docs[:limit] if limit else docs,
        LEADERBOARD,
        fewshot_pool=list(data.fewshot_pool),
        outputs=WORK / "genbench-prompts",
        progress=False,
    )
    shutil.rmtree(WORK / "genbench-prompts", ignore_errors=True)
    return seen


def run_lmeval(model_dir: Path, bs: int, prompts: Sequence[str], out: Path) -> dict:
    """lm-eval's ``generate_until`` at batch size ``bs`` in its own venv (its time excludes model loading)."""
    out.mkdir(parents=True, exist_ok=True)
    src, dst = out / "in.json", out / f"bs{bs}.json"
    src.write_text(
        json.dumps(
            {
                "prompts": list(prompts),
                "until": list(LEADERBOARD.gsm8k_stops),
                "max_gen_toks": LEADERBOARD.max_new_tokens,
            },
            ensure_ascii=False,
        ),
        encoding="utf-8",
    )
    load1 = os.getloadavg()[0]
    log(f"lm-eval generate_until batch {bs} (load {load1:.1f})")
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
    if proc.returncode != 0:
        (out / f"bs{bs}.stderr").write_text(proc.stderr)
        log(f"  failed (exit {proc.returncode}); see {out / f'bs{bs}.stderr'}")
        return {"batch_size": bs, "error": f"exit {proc.returncode}", "load": round(load1, 1)}
    res = json.loads(dst.read_text(encoding="utf-8"))
    log(f"  {res['seconds']:.1f} s")
    return {**res, "load": round(load1, 1)}


def gsm8k(model_dir: Path, args) -> dict:
    new, old = load(model_dir, NewEngine), load(model_dir, OldEngine)
    prompts = gsm8k_prompts(new, args.limit)
    log(f"GSM8K: {len(prompts)} prompts")
    kw = {"max_new_tokens": LEADERBOARD.max_new_tokens, "stop": list(LEADERBOARD.gsm8k_stops)}
    ours, sec, load1 = timed(new.generate, prompts, **kw)
    log(f"  thai-eval {sec:.1f} s")
    rows = [
        {"engine": "thai-eval (new)", "seconds": sec, "load": load1, "computed": new.computed(), "equal": len(prompts)}
    ]
    generated, perfect = new.work.generated_tokens, new.perfect()
    variants = (
        [("min_shared", 0, MIN_SHARED_TOKENS, "every prompt prefilled whole (min_shared=0)")]
        if args.whole_prefill
        else []
    )
    variants += [("lookup_tokens", 0, LOOKUP_TOKENS, "prompt lookup off (lookup_tokens=0)")] if args.lookup_off else []
    for attr, value, default, label in variants:  # the engine with one setting changed, then restored
        setattr(new, attr, value)
        new.reset()
        texts, vsec, vload = timed(new.generate, prompts, **kw)
        log(f"  thai-eval, {label}: {vsec:.1f} s")
        rows.append(
            {
                "engine": f"thai-eval, {label}",
                "seconds": vsec,
                "load": vload,
                "computed": new.computed(),
                "equal": sum(a == b for a, b in zip(ours, texts)),
                "differ": diff(ours, texts),
            }
        )
        setattr(new, attr, default)
    if args.gsm8k_old:
        theirs, osec, oload = timed(old.generate, prompts, **kw)
        log(f"  old engine {osec:.1f} s")
        rows.append(
            {
                "engine": "thai-eval old engine (static batches)",
                "seconds": osec,
                "load": oload,
                "computed": old.positions,
                "equal": sum(a == b for a, b in zip(ours, theirs)),
                "differ": diff(ours, theirs),
            }
        )
    if VENV.exists():
        for bs in [int(b) for b in args.batch_sizes.split(",")]:
            r = run_lmeval(model_dir, bs, prompts, WORK / "genbench" / "lmeval")
            if "texts" in r:
                rows.append(
                    {
                        "engine": f"lm-eval 0.4.13 HF, batch {bs}",
                        "seconds": r["seconds"],
                        "load": r["load"],
                        "computed": r["computed_positions"],
                        "equal": sum(a == b for a, b in zip(ours, r["texts"])),
                        "differ": diff(ours, r["texts"]),
                    }
                )
            else:
                rows.append({"engine": f"lm-eval 0.4.13 HF, batch {bs}", "error": r["error"], "load": r["load"]})
    return {"items": len(prompts), "generated": generated, "perfect": perfect, "rows": rows}


def diff(a: Sequence[str], b: Sequence[str]) -> list[int]:
    return [i for i, (x, y) in enumerate(zip(a, b)) if x != y]


def thaicli(model_dir: Path, args) -> dict:
    items = select_items(load_thaicli(REPO / "data" / "thaicli"), args.limit)
    n = args.max_new_tokens or 512
    return _side_by_side(
        model_dir,
        f"ThaiCLI answers (greedy, {n} new tokens)",
        len(items),
        lambda m, out: list(
            generate_answers(m, items, outputs=out, max_new_tokens=n, seed=1234, progress=False)["answer"]
        ),
    )


def dialects(model_dir: Path, args) -> dict:
    items = dialect.select_items(dialect.load_dialect(REPO / "data" / "dialect"), limit=args.limit)
    n = args.max_new_tokens or dialect.generation.PAPER_MAX_NEW_TOKENS
    return _side_by_side(
        model_dir,
        f"dialect generation (sampled: temperature 0.2, seed 42, {n} new tokens)",
        len(items),
        lambda m, out: list(dialect.run_generation(m, items, outputs=out, max_new_tokens=n, progress=False)["output"]),
    )


def _side_by_side(model_dir: Path, label: str, n: int, run) -> dict:
    new, old = load(model_dir, NewEngine), load(model_dir, OldEngine)
    log(f"{label}: {n} items")
    out = WORK / "genbench" / "runs"
    shutil.rmtree(out, ignore_errors=True)
    theirs, osec, oload = timed(run, old, out / "old")
    log(f"  old engine {osec:.1f} s")
    ours, sec, load1 = timed(run, new, out / "new")
    log(f"  thai-eval {sec:.1f} s")
    return {
        "label": label,
        "items": n,
        "generated": new.work.generated_tokens,
        "perfect": new.perfect(),
        "rows": [
            {"engine": "thai-eval (new)", "seconds": sec, "load": load1, "computed": new.computed(), "equal": n},
            {
                "engine": "thai-eval old engine (static batches)",
                "seconds": osec,
                "load": oload,
                "computed": old.positions,
                "equal": sum(a == b for a, b in zip(ours, theirs)),
                "differ": diff(ours, theirs),
            },
        ],
    }


def decode_rows(model_dir: Path, args) -> dict:
    """What one decode step costs as the rows in it grow (the engine's ``CPU_MAX_ROWS``): prompts of ~240 tokens,
    30 new tokens with EOS ignored, only the decode steps timed."""
    model = load(model_dir, LocalModel)
    base = model.tokenizer("อธิบายเรื่องการสังเคราะห์แสงของพืช และเขียนเรียงความเกี่ยวกับประเทศไทย " * 12).input_ids
    out = []
    for n in [int(r) for r in args.rows.split(",")]:
        engine = Engine(model.hf_model, model.tokenizer, max_new_tokens=30, stop=None, max_rows=n)
        engine.eos, step, spent = set(), engine._step, [0.0]

        def timed_step(step=step, spent=spent):
            t0 = time.perf_counter()
            ended = step()
            spent[0] += time.perf_counter() - t0
            return ended

        engine._step, load1 = timed_step, round(os.getloadavg()[0], 1)
        engine.run([base[: 240 + i % 7] for i in range(n)], progress=False)
        out.append(
            {
                "rows": n,
                "ms_step": 1000 * spent[0] / engine.stats.steps,
                "ms_row_step": 1000 * spent[0] / engine.stats.decode_row_steps,
                "load": load1,
            }
        )
        log(f"  {n} rows: {out[-1]['ms_step']:.0f} ms a step")
    return {"label": "decode step cost by rows (~240-token prompts, 30 steps)", "kind": "rows", "rows": out}


# --- report ---------------------------------------------------------------------------------------------------
def table(name: str, res: dict) -> list[str]:
    if res.get("kind") == "rows":
        return [
            f"**{name}**",
            "",
            "| rows | ms a decode step | ms a row-step | load (1 min) |",
            "|---|---|---|---|",
            *[f"| {r['rows']} | {r['ms_step']:.0f} | {r['ms_row_step']:.1f} | {r['load']} |" for r in res["rows"]],
        ]
    base = next(r for r in res["rows"] if r["engine"] == "thai-eval (new)")["seconds"]
    lines = [
        f"**{name}** ({res['items']} items; {res['generated']} tokens generated; a perfect scheduler computes "
        f"{res['perfect']:,} token positions, each distinct prompt prefix once)",
        "",
        "| engine | seconds | generated tokens/s | new engine's speed-up | texts equal to the new engine's "
        "| positions computed | perfect / computed | load (1 min) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in res["rows"]:
        if "error" in r:
            lines.append(f"| {r['engine']} | {r['error']} | | | | | | {r['load']} |")
            continue
        differ = f" (differ: {r['differ']})" if r.get("differ") else ""
        lines.append(
            f"| {r['engine']} | {r['seconds']:.1f} | {res['generated'] / r['seconds']:.1f} | "
            f"{r['seconds'] / base:.2f}x | {r['equal']} of {res['items']}{differ} | {r['computed']:,} | "
            f"{100 * res['perfect'] / r['computed']:.0f}% | {r['load']} |"
        )
    return lines


def report(results: dict) -> str:
    lines = [
        f"Model: {results['model']}, float32, CPU ({os.cpu_count()} cores, torch threads {results['threads']}); "
        f"transformers {metadata.version('transformers')}, torch {metadata.version('torch')}. `uptime` before: "
        f"{results['uptime_before']}; after: {results['uptime_after']}.",
        "",
        f"Command: `{results['command']}`",
        "",
    ]
    for name, res in results["parts"].items():
        lines += table(res.get("label", name), res) + [""]
    return "\n".join(lines).rstrip()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a tiny random Gemma 3 instead of the embedded model")
    ap.add_argument("--parts", default="gsm8k,thaicli,dialect")
    ap.add_argument("--batch-sizes", default="1,8,16", help="lm-eval's batch sizes on GSM8K")
    ap.add_argument("--limit", type=int, help="GSM8K: the first N documents; ThaiCLI/dialects: N per format/task")
    ap.add_argument("--max-new-tokens", type=int, help="ThaiCLI/dialects: this budget instead of the notebooks'")
    ap.add_argument("--lookup-off", action="store_true", help="GSM8K: also thai-eval with prompt lookup off")
    ap.add_argument(
        "--whole-prefill",
        action="store_true",
        help="GSM8K: also thai-eval prefilling every prompt whole (no shared prefixes)",
    )
    ap.add_argument("--gsm8k-old", action="store_true", help="GSM8K: also the old engine (static batches)")
    ap.add_argument("--rows", default="1,8,16,32,48,64", help="part 'rows': the decode batch sizes to time")
    ap.add_argument("--append", action="store_true", help="keep the parts of the last results.json not run again")
    ap.add_argument("--run-name", default="genbench", help="results folder under benchmarks/.work/")
    ap.add_argument("--merge", nargs="+", type=Path, help="only report: the parts of these results.json files")
    ap.add_argument("--write-doc", action="store_true", help="update the generation block of docs/benchmarks.md")
    args = ap.parse_args(argv)
    command = ".venv/bin/python benchmarks/generation_speed.py " + " ".join(argv if argv is not None else sys.argv[1:])
    if args.merge:  # runs made apart (e.g. at the same time, each noting its load) reported as one
        runs = [json.loads(p.read_text()) for p in args.merge]
        parts: dict = {}
        for r in runs:  # a part measured in several runs keeps each, numbered
            for k, v in r["parts"].items():
                parts[k if k not in parts else f"{k} ({sum(p.split(' (')[0] == k for p in parts) + 1})"] = v
        results = {
            **runs[0],
            "parts": parts,
            "command": "; and ".join(r["command"] for r in runs),
            "uptime_before": "; ".join(r["uptime_before"] for r in runs),
            "uptime_after": "; ".join(r["uptime_after"] for r in runs),
        }
        block = report(results)
        if args.write_doc:
            update_doc(block, BEGIN, END)
        print(block)
        return 0
    model_dir = (tiny_model_dir() if args.quick else embedded_model_dir()).resolve()
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    results = {
        "model": "tiny random Gemma 3 (--quick)"
        if args.quick
        else "embedded Gemma 3 270M (Q4_K_M GGUF dequantised to float32)",
        "threads": torch.get_num_threads(),
        "command": command,
        "uptime_before": uptime,
        "parts": {},
    }
    run_dir = WORK / (args.run_name + ("-quick" if args.quick else ""))
    run_dir.mkdir(parents=True, exist_ok=True)
    if args.append and (run_dir / "results.json").exists():  # an earlier run's parts, with its command and load
        old = json.loads((run_dir / "results.json").read_text())
        results["parts"] = {k: v for k, v in old["parts"].items() if k not in args.parts.split(",")}
        results["command"] = f"{old['command']}; then {command}"
        results["uptime_before"] = f"{old['uptime_before']} (first run)"
    block = ""
    for part in args.parts.split(","):  # the report is rewritten after every part: a partial run still reports
        results["parts"][part] = {"gsm8k": gsm8k, "thaicli": thaicli, "dialect": dialects, "rows": decode_rows}[part](
            model_dir, args
        )
        results["uptime_after"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        (run_dir / "results.json").write_text(json.dumps(results, indent=1, ensure_ascii=False))
        block = report(results)
        if args.write_doc:
            update_doc(block, BEGIN, END)
    print("\n" + block)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
