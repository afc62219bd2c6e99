"""thai-eval's log-likelihood engine against lm-evaluation-harness 0.4.13's HF backend on one GPU.

Random-weight models built from published shapes (Llama-3.1-8B and Qwen2-7B in bfloat16 for speed, a
Llama-3.2-1B shape in float32 for parity), the Gemma 3 tokenizer (262,144 tokens), and requests shaped like
the full Thai-H6 tasks: the repo's Thai samples (``data/thai_h6``) through ``thai_eval_utils.h6.tasks``, tiled
to the published document counts (spec thai_h6.md: th-ARC 1,222, th-HellaSwag 10,052, th-MMLU 14,585) at the
leaderboard's shot counts (25, 10, 5), then subsampled to fit the time budget. Both sides score the same
requests on the same model object: ``HFLM(pretrained=model, tokenizer=tok, batch_size=B).loglikelihood`` at a
few batch sizes, and ``LocalModel(model, tok).loglikelihood``. Results go to ``--out`` (Markdown + JSON),
rewritten after every measurement. The generation part (``gpu_generation.py``: lm-eval's
``generate_until`` against thai-eval's ``LocalModel.generate`` on the 8B shape) runs after it (``--parts``).

    python benchmarks/gpu_bench.py --dry-run          # the plan and its token counts (no model runs)
    python benchmarks/gpu_bench.py --out DIR          # the GPU run (needs CUDA; see benchmarks/README.md)
    python benchmarks/gpu_bench.py --tiny --out DIR   # tiny random models on the CPU (the test suite's run)
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import platform
import random
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import h6_parity_speed as hps  # (also puts the repo root on sys.path)

REPO, DATA = hps.REPO, hps.DATA
OUT_DEFAULT = hps.WORK / "gpu_bench"
CARRIED_TOKENIZER = hps.WORK / "gpu_tokenizer"  # tokenizer.json.gz + tokenizer_config.json (travels with `run`)

# task -> (Thai-H6 task, scored split, few-shot pool split, shots, published document count: spec thai_h6.md)
TASKS = {
    "arc": (
        "th_arc",
        "th_arc_challenge/th_arc_challenge_test.jsonl",
        "th_arc_challenge/th_arc_challenge_validation.jsonl",
        25,
        1222,
    ),
    "hellaswag": (
        "th_hellaswag",
        "th_hellaswag/th_hellaswag_validation.jsonl",
        "th_hellaswag/th_hellaswag_train.jsonl",
        10,
        10052,
    ),
    "mmlu": ("th_mmlu", "th_mmlu", None, 5, 14585),
}
MMLU_SUBJECTS = 57  # th-MMLU: 57 subjects, so about 256 test documents share each subject's 5-shot block
#: A Thai exam item number ("ข้อ" = item) put before the first text of one example per tiled document (ARC and
#: HellaSwag: the first few-shot example; MMLU: the scored question). Copies of the 12 samples would otherwise
#: share whole prompts (or, with pools of 10-25 examples, their first shots), and the prefix tree would get
#: work the full task, whose pools hold hundreds of examples, does not offer. The count of tokens shared across
#: documents is reported.
ITEM_NUMBER = "ข้อ {n}. "


@dataclass(frozen=True)
class Shape:
    """A model shape: published dimensions (vocabulary: the tokenizer's) and the dtype it runs in."""

    family: str  # "llama" or "qwen2"
    dims: dict
    dtype: str


_LLAMA3_ROPE = {
    "rope_type": "llama3",
    "rope_theta": 500000.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
}
SHAPES = {  # published config.json dimensions (rope scaling included; it changes no cost)
    "llama-3.1-8b": Shape(
        "llama",
        {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "rms_norm_eps": 1e-5,
            "max_position_embeddings": 131072,
            "tie_word_embeddings": False,
            "rope_parameters": {**_LLAMA3_ROPE, "factor": 8.0},
        },
        "bfloat16",
    ),
    "qwen2-7b": Shape(
        "qwen2",
        {
            "hidden_size": 3584,
            "intermediate_size": 18944,
            "num_hidden_layers": 28,
            "num_attention_heads": 28,
            "num_key_value_heads": 4,
            "rms_norm_eps": 1e-6,
            "max_position_embeddings": 131072,
            "tie_word_embeddings": False,
            "use_sliding_window": False,
            "sliding_window": 131072,
            "max_window_layers": 28,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
        },
        "bfloat16",
    ),
    "llama-3.2-1b": Shape(
        "llama",
        {
            "hidden_size": 2048,
            "intermediate_size": 8192,
            "num_hidden_layers": 16,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 64,
            "rms_norm_eps": 1e-5,
            "max_position_embeddings": 131072,
            "tie_word_embeddings": True,
            "rope_parameters": {**_LLAMA3_ROPE, "factor": 32.0},
        },
        "float32",
    ),
    "tiny-llama": Shape(
        "llama",
        {
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "max_position_embeddings": 8192,
        },
        "float32",
    ),
    "tiny-qwen2": Shape(
        "qwen2",
        {
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "max_position_embeddings": 8192,
            "use_sliding_window": False,
        },
        "float32",
    ),
}


@dataclass(frozen=True)
class Step:
    """One model of the plan: its documents per task, lm-eval's batch sizes, and on how many documents of each
    task the direct full-forward reference runs (-1: all)."""

    shape: str
    role: str  # "parity" (float32: exact comparison) or "speed"
    docs: dict
    batch_sizes: dict
    reference: int = 0


_BS_SPEED = {"arc": [4, 16, 32], "hellaswag": [8, 32, 64], "mmlu": [8, 32, 64]}
_DOCS_SPEED = {"arc": 48, "hellaswag": 128, "mmlu": 256}
PLANS = {
    "gpu": [
        Step("llama-3.2-1b", "parity", {"arc": 8, "hellaswag": 16, "mmlu": 32}, {t: [8] for t in TASKS}, 5),
        Step("llama-3.1-8b", "speed", _DOCS_SPEED, _BS_SPEED),
        Step("qwen2-7b", "speed", _DOCS_SPEED, _BS_SPEED),
    ],
    "tiny": [
        Step("tiny-llama", "parity", {"arc": 1, "hellaswag": 2, "mmlu": 2}, {t: [1, 4] for t in TASKS}, -1),
        Step("tiny-qwen2", "parity", {"arc": 1, "hellaswag": 2, "mmlu": 2}, {t: [4] for t in TASKS}, -1),
    ],
}
#: Shots of the tiny run: fewer than the tasks' (25, 10, 5) so that it takes seconds on a busy 2-core CPU.
TINY_SHOTS = {"arc": 5, "hellaswag": 4, "mmlu": 1}
GOAL = 4.0  # the goal: at least 4x lm-eval's HF backend on the 8B shape, on each task
GOAL_SHAPE = "llama-3.1-8b"


log = hps.log


# --- tokenizer ------------------------------------------------------------------------------------------------
def prepare_tokenizer() -> Path:
    """Copy the embedded model's tokenizer (gzipped: 33 MB -> 5 MB) to the folder that travels to the GPU."""
    from thai_eval_utils.backend.model_sources import embedded_model_dir

    src = embedded_model_dir()
    CARRIED_TOKENIZER.mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "tokenizer_config.json", CARRIED_TOKENIZER / "tokenizer_config.json")
    with open(src / "tokenizer.json", "rb") as fi, gzip.open(CARRIED_TOKENIZER / "tokenizer.json.gz", "wb", 9) as fo:
        shutil.copyfileobj(fi, fo)
    size = sum(p.stat().st_size for p in CARRIED_TOKENIZER.iterdir())
    log(f"{CARRIED_TOKENIZER.relative_to(REPO)}: {size / 2**20:.1f} MiB (from {src})")
    return CARRIED_TOKENIZER


def load_tokenizer(tiny: bool, path: Path | None):
    """(tokenizer, description): ``path``; for --tiny the small BPE of h6_parity_speed's quick model; else the
    carried Gemma 3 tokenizer, else the embedded model's."""
    from transformers import AutoTokenizer

    if path is None and tiny:
        path = hps.tiny_model_dir()
        return AutoTokenizer.from_pretrained(path), f"tiny BPE trained on the samples ({path.name})"
    if path is None and (CARRIED_TOKENIZER / "tokenizer.json.gz").exists():
        tmp = Path(tempfile.mkdtemp(prefix="gemma3-tok-"))
        shutil.copy(CARRIED_TOKENIZER / "tokenizer_config.json", tmp / "tokenizer_config.json")
        with gzip.open(CARRIED_TOKENIZER / "tokenizer.json.gz", "rb") as fi, open(tmp / "tokenizer.json", "wb") as fo:
            shutil.copyfileobj(fi, fo)
        path = tmp
    if path is None:
        from thai_eval_utils.backend.model_sources import embedded_model_dir

        path = embedded_model_dir()
    try:
        return AutoTokenizer.from_pretrained(path), "Gemma 3 (embedded model's tokenizer.json)"
    except Exception as exc:  # noqa: BLE001 - another transformers version may not read this tokenizer_config.json
        from transformers import PreTrainedTokenizerFast

        special = {
            k: v
            for k, v in json.loads((path / "tokenizer_config.json").read_text()).items()
            if k in ("bos_token", "eos_token", "pad_token", "unk_token", "mask_token")
        }
        tok = PreTrainedTokenizerFast(tokenizer_file=str(path / "tokenizer.json"), **special)
        return tok, f"Gemma 3 tokenizer.json as PreTrainedTokenizerFast (AutoTokenizer failed: {type(exc).__name__})"


# --- requests -------------------------------------------------------------------------------------------------
def _jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _numbered(doc: dict, key: str, n: int) -> dict:
    return {**doc, key: ITEM_NUMBER.format(n=n) + doc[key]}


def tiled_docs(task: str, n: int, seed: int, shots: int) -> list[tuple[dict, list[dict]]]:
    """The first ``n`` documents of the task tiled to its published size, each with ``shots`` examples.

    ARC and HellaSwag: scored samples cycled; shots drawn per document (``random.Random(seed:task:k)``) from the
    few-shot pool, the first one numbered. MMLU: one virtual subject per 256 documents (57 subjects over
    14,585), cycling the three sample subjects: description and first-5 shots of the subject, scored questions
    of that subject cycled and numbered."""
    _, scored, pool, _, real = TASKS[task]
    if task != "mmlu":
        docs, fewshot = _jsonl(DATA / scored), _jsonl(DATA / pool)
        key = "question" if task == "arc" else "activity_label"
        out = []
        for k in range(n):
            ex = random.Random(f"{seed}:{task}:{k}").sample(fewshot, shots)
            out.append((docs[k % len(docs)], [_numbered(ex[0], key, k + 1), *ex[1:]]))
        return out
    subjects = []
    for folder in sorted(p for p in (DATA / scored).iterdir() if p.is_dir()):
        test = next(folder.glob("*_test.jsonl"))
        shot_file = next(p for p in folder.glob("*.jsonl") if p != test)
        subjects.append((folder.name, _jsonl(test), _jsonl(shot_file)[:shots]))
    per_subject = -(-real // MMLU_SUBJECTS)
    out = []
    for k in range(n):
        s = k // per_subject
        name, docs, ex = subjects[s % len(subjects)]
        subject = name if s < len(subjects) else f"{name}_{s}"
        doc = {**_numbered(docs[(k % per_subject) % len(docs)], "question", k + 1), "subject": subject}
        out.append((doc, [{**e, "subject": subject} for e in ex]))
    return out


@dataclass
class TaskRequests:
    """One task's documents and their (context, continuation) requests, in document order."""

    task: str
    docs: list[dict]
    requests: list[tuple[str, str]]
    doc_of: list[int]  # document index of each request
    encoded: list[tuple[list[int], list[int]]] = field(default_factory=list)
    shots: int = 0

    def first(self, n_docs: int) -> TaskRequests:
        k = next((i for i, d in enumerate(self.doc_of) if d >= n_docs), len(self.doc_of))
        return TaskRequests(
            self.task, self.docs[:n_docs], self.requests[:k], self.doc_of[:k], self.encoded[:k], self.shots
        )


def build_requests(task: str, n: int, seed: int, shots: int) -> TaskRequests:
    """Requests of the first ``n`` tiled documents, built by ``thai_eval_utils.h6.tasks`` (thai-eval's prompts)."""
    from thai_eval_utils.h6 import tasks as h6_tasks

    spec = h6_tasks.get_task(TASKS[task][0])
    templates = h6_tasks.templates_for(spec)
    out = TaskRequests(task, [], [], [], shots=shots)
    for i, (doc, examples) in enumerate(tiled_docs(task, n, seed, shots)):
        out.docs.append(doc)
        for req in h6_tasks.build_requests(spec, doc, examples, templates).requests:
            out.requests.append(req)
            out.doc_of.append(i)
    return out


def encode(tok, requests: list[tuple[str, str]]) -> list[tuple[list[int], list[int]]]:
    """Tokens as lm-eval 0.4.13 encodes a pair with add_bos_token=False (``TemplateLM._encode_pair``): trailing
    spaces of the context move to the continuation; continuation = encode(ctx + cont)[len(encode(ctx)):]."""
    pairs = []
    for ctx, cont in requests:
        n = len(ctx) - len(ctx.rstrip())
        pairs.append((ctx[:-n], ctx[-n:] + cont) if n else (ctx, cont))
    strings = sorted({s for c, x in pairs for s in (c, c + x)})
    ids = dict(zip(strings, tok(strings, add_special_tokens=False)["input_ids"]))
    return [(ids[c], ids[c + x][len(ids[c]) :]) for c, x in pairs]


def token_counts(reqs: TaskRequests, max_length: int) -> dict:
    """Counted (not timed) work: request tokens (context + continuation, the numerator of tokens/s on both
    sides); lm-eval's fed tokens (one row per request, single-token continuations of one context grouped, as its
    ``logits_cache`` does); the prefix tree's distinct tokens (what thai-eval's body runs) and distinct scored
    positions (its output-layer rows); the tokens shared across documents (tree per document minus tree)."""
    fed = [tuple((c + x)[-(max_length + 1) :][:-1]) for c, x in reqs.encoded]
    lm_groups = {tuple(c + x[:-1]) for c, x in reqs.encoded}
    rows = {hash(s[: len(s) - len(x) + j + 1]) for s, (_, x) in zip(fed, reqs.encoded) for j in range(len(x))}
    per_doc: dict[int, list] = {}
    for d, s in zip(reqs.doc_of, fed):
        per_doc.setdefault(d, []).append(s)
    tree, per_doc_tree = _trie_tokens(fed), sum(_trie_tokens(v) for v in per_doc.values())
    return {
        "request_tokens": sum(len(c) + len(x) for c, x in reqs.encoded),
        "continuation_tokens": sum(len(x) for _, x in reqs.encoded),
        "lmeval_fed_tokens": sum(len(g) for g in lm_groups),
        "tree_tokens": tree,
        "scored_rows": len(rows),
        "cross_doc_shared_tokens": per_doc_tree - tree,
        "mean_context_tokens": round(sum(len(c) for c, _ in reqs.encoded) / max(len(reqs.encoded), 1), 1),
    }


def _trie_tokens(seqs: list[tuple[int, ...]]) -> int:
    """Nodes of a trie over ``seqs``: sorted, each sequence adds its length minus the prefix it shares with the
    previous one."""
    total, prev = 0, ()
    for s in sorted(set(seqs)):
        lcp = next((i for i, (a, b) in enumerate(zip(s, prev)) if a != b), min(len(s), len(prev)))
        total, prev = total + len(s) - lcp, s
    return total


# --- models ---------------------------------------------------------------------------------------------------
def model_config(shape: str, tok):
    """The shape's transformers config (``LlamaConfig``/``Qwen2Config``), vocabulary = the tokenizer's size."""
    from transformers import LlamaConfig, Qwen2Config

    s = SHAPES[shape]
    cls = LlamaConfig if s.family == "llama" else Qwen2Config
    return cls(
        vocab_size=len(tok),
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        **s.dims,
    )


def build_model(shape: str, tok, device: str, seed: int):
    """Random weights (seeded), initialised directly on ``device`` in the shape's dtype; no download."""
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(model_config(shape, tok), dtype=getattr(torch, SHAPES[shape].dtype))
    return model.eval()


def param_counts(shape: str, tok) -> dict:
    """Weights of the decoder's linear layers and of the output layer (counted on the meta device)."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        m = AutoModelForCausalLM.from_config(model_config(shape, tok))
    body = sum(x.weight.numel() for x in m.base_model.modules() if isinstance(x, torch.nn.Linear))
    return {
        "body_linear": body,
        "head": m.get_output_embeddings().weight.numel(),
        "total": sum(p.numel() for p in m.parameters()),
    }


# --- the two sides and the reference --------------------------------------------------------------------------
def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(fn, device: str) -> dict:
    """Run ``fn()``: wall seconds (CUDA-synchronised), peak GPU memory, its result; or the error it raised (the
    one-shot GPU run records a failure and goes on)."""
    import torch

    if device.startswith("cuda"):  # free what the last run left (collecting takes a second: GPU only)
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    _sync(device)
    t0 = time.perf_counter()
    try:
        out = fn()
        _sync(device)
    except torch.OutOfMemoryError:
        return {"error": "out of memory", "seconds": round(time.perf_counter() - t0, 3)}
    except Exception as exc:  # noqa: BLE001
        traceback.print_exc()
        return {"error": f"{type(exc).__name__}: {str(exc)[:300]}", "seconds": round(time.perf_counter() - t0, 3)}
    res = {"seconds": time.perf_counter() - t0, "result": out}
    if device.startswith("cuda"):
        res["peak_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    return res


def free(device: str) -> None:
    """Return the memory of dropped models to the GPU (collecting takes a second: GPU only)."""
    import torch

    if device.startswith("cuda"):
        gc.collect()
        torch.cuda.empty_cache()


def lmeval_import() -> tuple[type | None, type | None, str]:
    """(HFLM, Instance, '') or (None, None, why lm-eval is not importable)."""
    try:
        from lm_eval.api.instance import Instance
        from lm_eval.models.huggingface import HFLM
    except Exception as exc:  # noqa: BLE001 - any import failure means the side is skipped, with its reason
        return None, None, f"lm-eval not importable: {type(exc).__name__}: {exc}"
    return HFLM, Instance, ""


def run_lmeval(hflm_cls, instance_cls, model, tok, requests, batch_size: int) -> list[tuple[float, bool]]:
    """lm-eval's HF backend on the in-memory model (its defaults otherwise: add_bos_token False as the
    leaderboard ran, max_length from the model config, logits cache on)."""
    lm = hflm_cls(pretrained=model, tokenizer=tok, batch_size=batch_size, add_bos_token=False)
    inst = [instance_cls("loglikelihood", {}, req, i) for i, req in enumerate(requests)]
    return [(float(ll), bool(g)) for ll, g in lm.loglikelihood(inst, disable_tqdm=True)]


def reference(model, encoded, max_length: int) -> list[tuple[float, bool]]:
    """A full transformers forward per request on lm-eval's tokens; float32 log_softmax of the continuation
    positions, summed; greedy = every continuation token is the argmax."""
    import torch

    out, last = [], (None, None)
    with torch.inference_mode():
        for ctx, cont in encoded:
            fed = (ctx + cont)[-(max_length + 1) :][:-1]
            if fed != last[0]:  # one forward per distinct fed sequence (MMLU's choices share theirs)
                last = (fed, model(torch.tensor([fed], device=model.device)).logits[0])
            logp = torch.log_softmax(last[1][len(fed) - len(cont) :].float(), dim=-1)
            t = torch.tensor(cont, device=logp.device)
            out.append((float(logp.gather(1, t[:, None]).sum()), bool((logp.argmax(-1) == t).all())))
    return out


# --- comparison -----------------------------------------------------------------------------------------------
def doc_metrics(reqs: TaskRequests, lls: list[float]) -> list[dict]:
    """acc and acc_norm per document (argmax of the choices' log-likelihoods) by ``h6.tasks.process_results``."""
    from thai_eval_utils.h6 import tasks as h6_tasks

    spec = h6_tasks.get_task(TASKS[reqs.task][0])
    by_doc: dict[int, list[float]] = {}
    for d, ll in zip(reqs.doc_of, lls):
        by_doc.setdefault(d, []).append(ll)
    return [
        {k: r[k] for k in ("acc", "acc_norm")}
        for r in (h6_tasks.process_results(spec, doc, by_doc[i]) for i, doc in enumerate(reqs.docs))
    ]


def compare(reqs: TaskRequests, a: list[tuple[float, bool]], b: list[tuple[float, bool]]) -> dict:
    """Max |delta log-likelihood|, greedy flags equal, per-document acc/acc_norm equal and the documents that
    differ (index in the tiled task)."""
    ma, mb = doc_metrics(reqs, [x for x, _ in a]), doc_metrics(reqs, [x for x, _ in b])
    deltas = [abs(x - y) for (x, _), (y, _) in zip(a, b)]
    n_tok = [max(len(x), 1) for _, x in reqs.encoded[: len(a)]]
    return {
        "requests": len(a),
        "max_abs_delta": max(deltas),
        "max_abs_delta_per_token": max(d / n for d, n in zip(deltas, n_tok)),
        "over_1e-4": sum(d > 1e-4 for d in deltas),
        "greedy_equal": sum(x[1] == y[1] for x, y in zip(a, b)),
        "metrics_equal": ma == mb,
        "docs_differ": [i for i, (x, y) in enumerate(zip(ma, mb)) if x != y],
        "acc": [sum(m["acc"] for m in ms) / len(ms) for ms in (ma, mb)],
        "acc_norm": [sum(m["acc_norm"] for m in ms) / len(ms) for ms in (ma, mb)],
    }


def rates(res: dict, reqs: TaskRequests, counts: dict) -> dict:
    """requests/s and request tokens/s of a timed run (same numerators for both sides)."""
    if "error" in res:
        return {k: v for k, v in res.items() if k != "result"}
    s = res["seconds"]
    out = {
        "seconds": round(s, 3),
        "requests_per_s": round(len(reqs.requests) / s, 1),
        "tokens_per_s": round(counts["request_tokens"] / s),
    }
    return {**out, "peak_gib": res["peak_gib"]} if "peak_gib" in res else out


# --- the run --------------------------------------------------------------------------------------------------
@dataclass
class Ctx:
    """What every step needs: tokenizer, device, the tasks' requests, lm-eval, the deadline, the results."""

    tok: object
    device: str
    tasks: dict
    lmeval: tuple
    deadline: float
    out: Path
    seed: int
    results: dict
    counts: dict = field(default_factory=dict)

    def over(self) -> bool:
        return time.monotonic() > self.deadline

    def count(self, reqs: TaskRequests, max_length: int) -> dict:
        key = (reqs.task, len(reqs.docs), max_length)
        if key not in self.counts:
            self.counts[key] = token_counts(reqs, max_length)
        return self.counts[key]


def run_task(ctx: Ctx, step: Step, lm, task: str) -> dict:
    """One task on one model: thai-eval, lm-eval at each batch size, the comparison, the reference."""
    reqs = ctx.tasks[task].first(step.docs[task])
    counts = ctx.count(reqs, lm.max_length)
    rec = {
        "docs": len(reqs.docs),
        "of_real": TASKS[task][4],
        "shots": reqs.shots,
        "requests": len(reqs.requests),
        **counts,
    }
    log(f"  {task}: {len(reqs.docs)} docs, {len(reqs.requests)} requests, {counts['request_tokens']:,} tokens")
    thai = timed(lambda: lm.loglikelihood(reqs.requests, progress=False), ctx.device)
    rec["thai_eval"] = rates(thai, reqs, counts)
    log(f"    thai-eval {rec['thai_eval']}")
    hflm, inst, why = ctx.lmeval
    trials = []
    for bs in step.batch_sizes[task] if hflm else []:
        if ctx.over():
            trials.append({"batch_size": bs, "skipped": "time budget"})
            continue
        res = timed(lambda bs=bs: run_lmeval(hflm, inst, lm.hf_model, ctx.tok, reqs.requests, bs), ctx.device)
        trials.append({"batch_size": bs, **rates(res, reqs, counts), "result": res.get("result")})
        log(f"    lm-eval batch {bs}: { ({k: v for k, v in trials[-1].items() if k != 'result'}) }")
    ok = [t for t in trials if t.get("result")]
    rec["lmeval"] = [{k: v for k, v in t.items() if k != "result"} for t in trials] if hflm else {"skipped": why}
    if ok and "result" in thai:
        best = min(ok, key=lambda t: t["seconds"])
        rec["best_batch"], rec["speedup"] = best["batch_size"], round(best["seconds"] / rec["thai_eval"]["seconds"], 2)
        rec["vs_lmeval"] = compare(reqs, thai["result"], best["result"])
        rec["lmeval_self_max_delta"] = max(
            (abs(a[0] - b[0]) for t in ok for a, b in zip(t["result"], ok[0]["result"])), default=0.0
        )
    if step.reference and "result" in thai:
        sub = reqs if step.reference < 0 else reqs.first(step.reference)
        ref = timed(lambda: reference(lm.hf_model, sub.encoded, lm.max_length), ctx.device)
        if "error" in ref:
            rec["reference"] = {"docs": len(sub.docs), "error": ref["error"]}
        else:
            ref = ref["result"]
            rec["reference"] = {"docs": len(sub.docs), "thai_eval": compare(sub, thai["result"][: len(ref)], ref)}
            if ok:
                rec["reference"]["lmeval"] = compare(sub, best["result"][: len(ref)], ref)
    return rec


def run_step(ctx: Ctx, step: Step) -> None:
    """Build one model, warm both sides up on the first document, then run each task; results after each."""
    from thai_eval_utils.backend.local_model import LocalModel

    entry = ctx.results["models"].setdefault(
        step.shape, {"dtype": SHAPES[step.shape].dtype, "role": step.role, "tasks": {}}
    )
    if ctx.over():
        entry["skipped"] = "time budget"
        return
    t0 = time.perf_counter()
    model = build_model(step.shape, ctx.tok, ctx.device, ctx.seed)
    _sync(ctx.device)
    entry["build_seconds"] = round(time.perf_counter() - t0, 1)
    entry["params"] = sum(p.numel() for p in model.parameters())
    entry["attn_implementation"] = model.config._attn_implementation
    lm = LocalModel(
        model, ctx.tok, name=step.shape, identity={"name": step.shape, "source": f"random weights, seed {ctx.seed}"}
    )
    log(f"{step.shape} ({entry['params'] / 1e9:.2f} B params, {entry['dtype']}) built in {entry['build_seconds']} s")
    warm = ctx.tasks["arc"].first(1).requests
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:  # e.g. a failed self-check: the slow reference path
        warnings.simplefilter("always")
        lm.loglikelihood(warm, progress=False)
    entry["thai_eval_warnings"] = sorted({str(w.message) for w in caught})
    if ctx.lmeval[0]:
        before = {m.split(".")[0] for m in sys.modules}
        run_lmeval(*ctx.lmeval[:2], model, ctx.tok, warm, 1)
        ctx.results["meta"].setdefault("lmeval_new_imports", sorted({m.split(".")[0] for m in sys.modules} - before))
    entry["warmup_seconds"] = round(time.perf_counter() - t0, 1)
    for task in TASKS:
        if ctx.over():
            entry["tasks"][task] = {"skipped": "time budget"}
        else:
            entry["tasks"][task] = run_task(ctx, step, lm, task)
        write_results(ctx.out, ctx.results)
    del lm, model
    free(ctx.device)


# --- report ---------------------------------------------------------------------------------------------------
def _fmt_side(r: dict) -> str:
    if "seconds" not in r or "error" in r or "skipped" in r:
        return r.get("error") or r.get("skipped") or "-"
    peak = f", {r['peak_gib']} GiB" if "peak_gib" in r else ""
    return f"{r['seconds']:.2f} s ({r['requests_per_s']:,} req/s, {r['tokens_per_s']:,} tok/s{peak})"


def markdown(results: dict) -> str:
    """The results as Markdown: provenance, the subsampling, one row per model and task, the goal."""
    m = results["meta"]
    lines = (
        [
            (
                f"Measured {m['date']} on {m['device']}; torch {m['torch']}, transformers {m['transformers']}, "
                f"lm-eval {m['lm_eval']}, Python {m['python']}. Command: `{m['command']}`. "
                f"Status: {results['status']}."
            ),
            "",
            (
                f"Requests: {m['requests_note']} Tokenizer: {m['tokenizer']}. Tokens/s counts request tokens "
                "(context + continuation as lm-eval encodes them; the same numerator on both sides). Wall time is "
                "CUDA-synchronised and includes tokenization; peak memory is `torch.cuda.max_memory_allocated` "
                "(weights included), reset before each run. Each side ran once per setting after a warm-up. "
                "Parity is the float32 model's: on bfloat16 rows lm-eval's log_softmax runs in bfloat16 and "
                "thai-eval's in float32, so their deltas and metric differences are not a parity measure."
            ),
            "",
            (
                "| model | task | docs (of) / requests | tokens (mean context) | thai-eval | lm-eval by batch size "
                "| lm-eval best | speed-up | max abs delta | acc, acc_norm equal (docs differing) |"
            ),
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        if results["models"]
        else []
    )
    for name, e in results["models"].items():
        if "skipped" in e or "error" in e:
            why = f"skipped: {e['skipped']}" if "skipped" in e else f"error: {e['error']}"
            lines.append(f"| {name} ({e.get('dtype', '')}) | all | {why} | | | | | | | |")
            if not e.get("tasks"):
                continue
        for task, r in e["tasks"].items():
            if "skipped" in r:
                lines.append(f"| {name} ({e['dtype']}) | {task} | skipped: {r['skipped']} | | | | | | | |")
                continue
            lm = r["lmeval"]
            by_bs = (
                " / ".join(
                    f"{t['batch_size']}: "
                    + (f"{t['seconds']:.2f} s" if "requests_per_s" in t else t.get("error") or t.get("skipped"))
                    for t in lm
                )
                if isinstance(lm, list)
                else lm["skipped"]
            )
            best = next((t for t in lm if t["batch_size"] == r.get("best_batch")), {}) if isinstance(lm, list) else {}
            v = r.get("vs_lmeval")
            delta = f"{v['max_abs_delta']:.1e}" if v else "-"
            equal = (("yes" if v["metrics_equal"] else "NO") + f" ({v['docs_differ'][:10]})") if v else "-"
            lines.append(
                f"| {name} ({e['dtype']}) | {task} ({r['shots']}-shot) | {r['docs']} ({r['of_real']:,}) / "
                f"{r['requests']} | {r['request_tokens']:,} ({r['mean_context_tokens']}) | {_fmt_side(r['thai_eval'])} "
                f"| {by_bs} | {('batch ' + str(r['best_batch']) + ': ' + _fmt_side(best)) if best else '-'} "
                f"| {('**' + str(r['speedup']) + 'x**') if 'speedup' in r else '-'} "
                f"| {delta} | {equal} |"
            )
    if results["models"]:
        lines += ["", goal_line(results)] + reference_lines(results)
    for name, e in results["models"].items():
        lines += [f"- {name}: thai-eval warned: {w}" for w in e.get("thai_eval_warnings", [])]
    if "generation" in results:
        import gpu_generation  # (it imports this module: imported here, not at the top)

        lines += gpu_generation.markdown(results["generation"])
    if m["tiny"]:
        lines += [
            "",
            (
                "Tiny run (random 2-layer models on the CPU): a check of the script, not a benchmark; its "
                "timings say nothing about the GPU."
            ),
        ]
    return "\n".join(lines)


def goal_line(results: dict) -> str:
    """The goal (:data:`GOAL` x lm-eval on :data:`GOAL_SHAPE`), per task, as measured (or 'not measured')."""
    tasks = results["models"].get(GOAL_SHAPE, {}).get("tasks", {})
    parts = [
        f"{t}: "
        + (
            f"{tasks[t]['speedup']}x ({'met' if tasks[t]['speedup'] >= GOAL else 'NOT met'})"
            if "speedup" in tasks.get(t, {})
            else "not measured"
        )
        for t in TASKS
    ]
    return f"Goal (>= {GOAL:g}x lm-eval's HF backend on {GOAL_SHAPE}, each task): " + "; ".join(parts) + "."


def reference_lines(results: dict) -> list[str]:
    """Parity against a direct transformers full forward per request, where it ran."""
    out = []
    for name, e in results["models"].items():
        for task, r in e.get("tasks", {}).items():
            ref = r.get("reference")
            if ref and "error" in ref:
                out.append(f"- {name} {task}, full-forward reference: {ref['error']}.")
            elif ref:
                lm = ref.get("lmeval")
                out.append(
                    f"- {name} {task}, full-forward reference on {ref['docs']} docs "
                    f"({ref['thai_eval']['requests']} requests): thai-eval max abs delta "
                    f"{ref['thai_eval']['max_abs_delta']:.1e}"
                    + (f", lm-eval {lm['max_abs_delta']:.1e}" if lm else "")
                    + "."
                )
    return ["", "Parity with a direct transformers forward:", *out] if out else []


def _jsonable(results: dict) -> dict:
    return json.loads(json.dumps(results, default=str))


def write_results(out: Path, results: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_bench.json").write_text(json.dumps(_jsonable(results), indent=1, ensure_ascii=False), encoding="utf-8")
    (out / "gpu_bench.md").write_text(markdown(results) + "\n", encoding="utf-8")


# --- dry run --------------------------------------------------------------------------------------------------
ASSUMED_TFLOPS = {"bfloat16": 400.0, "float32": 40.0}  # planning only: half the H200's measured bf16 matmul rate


def plan(steps: list[Step], tasks: dict, tok) -> dict:
    """Per step and task: documents, requests, counted tokens, batch sizes and a time estimate from the counted
    matrix-multiply work at ASSUMED_TFLOPS (2 FLOPs per weight per token; an assumption, not a measurement)."""
    out = {}
    for step in steps:
        p = param_counts(step.shape, tok)
        max_len = SHAPES[step.shape].dims["max_position_embeddings"]
        rate = ASSUMED_TFLOPS[SHAPES[step.shape].dtype] * 1e12
        rows = {}
        for task in TASKS:
            reqs = tasks[task].first(step.docs[task])
            c = token_counts(reqs, max_len)
            lm = 2 * c["lmeval_fed_tokens"] * (p["body_linear"] + p["head"])
            ours = 2 * (c["tree_tokens"] * p["body_linear"] + c["scored_rows"] * p["head"])
            rows[task] = {
                "docs": len(reqs.docs),
                "of_real": TASKS[task][4],
                "requests": len(reqs.requests),
                **c,
                "batch_sizes": step.batch_sizes[task],
                "work_ratio": round(lm / ours, 2),
                "est_seconds": round((lm * len(step.batch_sizes[task]) + ours) / rate, 1),
            }
        out[step.shape] = {
            "dtype": SHAPES[step.shape].dtype,
            "params": p,
            "tasks": rows,
            "est_seconds": round(sum(r["est_seconds"] for r in rows.values()), 1),
        }
    return out


def print_plan(p: dict) -> None:
    for name, s in p.items():
        print(
            f"\n{name} ({s['dtype']}): {s['params']['total'] / 1e9:.2f} B params "
            f"(linear body {s['params']['body_linear'] / 1e9:.2f} B, output layer {s['params']['head'] / 1e9:.2f} B)"
        )
        print(
            "  task       docs (of)      reqs  req tokens  ctx mean  lm-eval fed  tree tokens  scored rows  "
            "cross-doc shared  work ratio  batch sizes   est s"
        )
        for t, r in s["tasks"].items():
            print(
                f"  {t:<10} {r['docs']:>4} ({r['of_real']:>6,}) {r['requests']:>6} {r['request_tokens']:>11,} "
                f"{r['mean_context_tokens']:>9} {r['lmeval_fed_tokens']:>12,} {r['tree_tokens']:>12,} "
                f"{r['scored_rows']:>12,} {r['cross_doc_shared_tokens']:>17,} {r['work_ratio']:>10}x  "
                f"{r['batch_sizes']!s:<12} {r['est_seconds']:>6}"
            )
        print(
            f"  estimated {s['est_seconds']} s at an assumed {ASSUMED_TFLOPS[s['dtype']]:g} TFLOP/s "
            "(lm-eval once per batch size + thai-eval once; not a measurement)"
        )
    print(
        f"\nestimated total {sum(s['est_seconds'] for s in p.values()):.0f} s of scoring, plus model builds, "
        "warm-ups and the parity reference"
    )


# --- main -----------------------------------------------------------------------------------------------------
def requests_note(steps: list[Step], tasks: dict) -> str:
    """The subsampling, stated."""
    if not steps:
        return "no log-likelihood part (--parts)."
    most = {t: max(s.docs[t] for s in steps) for t in TASKS}
    parts = [f"{t} {most[t]} of {TASKS[t][4]:,} documents ({tasks[t].shots}-shot)" for t in TASKS]
    return (
        "the repo's Thai samples (data/thai_h6) built by thai_eval_utils.h6.tasks and tiled to the published "
        "document counts, subsampled (first documents of the tiled task; a model's row says how many it ran): "
        + ", ".join(parts)
        + ". ARC/HellaSwag shots are drawn per document from the sample pools (25 and 10 "
        "examples), the first one numbered (`ITEM_NUMBER`) so that documents share no more than in the full "
        "task; MMLU's 5-shot block is shared by every document of a subject (about 256 in the full task)."
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT_DEFAULT, help="folder for gpu_bench.md and gpu_bench.json")
    ap.add_argument("--tiny", action="store_true", help="tiny random models on the CPU (automatic without CUDA)")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and its token counts; run nothing")
    ap.add_argument("--models", help="comma-separated subset of the plan's models")
    ap.add_argument(
        "--budget-s",
        type=float,
        default=400.0,
        help="start no measurement after this many seconds (GPU run; the tiny run has none)",
    )
    ap.add_argument(
        "--parts",
        default="loglikelihood,generation",
        help="comma-separated: loglikelihood (the Thai-H6 tasks), generation (gpu_generation.py)",
    )
    ap.add_argument(
        "--gen-budget-s",
        type=float,
        default=240.0,
        help="generation part: start no lm-eval batch size past this many seconds from its start",
    )
    ap.add_argument("--tokenizer", type=Path, help="a tokenizer directory (default: see load_tokenizer)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--prepare-tokenizer", action="store_true", help=f"write {CARRIED_TOKENIZER.name}/ and exit")
    return ap.parse_args(argv)


def run_status(results: dict) -> str:
    """'complete', 'partial: time budget reached' (a measurement skipped) or 'failed on ...' (a model or the
    generation part raised)."""
    gen = results.get("generation", {})
    lmeval_gen = gen.get("lmeval") if isinstance(gen.get("lmeval"), list) else []
    skipped = any(
        "skipped" in e or any("skipped" in r for r in e["tasks"].values()) for e in results["models"].values()
    ) or any("skipped" in t for t in lmeval_gen)
    failed = [name for name, e in results["models"].items() if "error" in e]
    failed += ["generation"] if "error" in gen else []
    return f"failed on {', '.join(failed)}" if failed else "partial: time budget reached" if skipped else "complete"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    start = time.monotonic()
    import gpu_generation  # (it imports this module as gpu_bench: a second copy when this runs as a script)

    if args.prepare_tokenizer:
        prepare_tokenizer()
        return 0
    import torch
    import transformers

    tiny = args.tiny or (not args.dry_run and not torch.cuda.is_available())
    if tiny and not args.tiny:
        log("no CUDA device: running the tiny configuration on the CPU (--tiny)")
    parts = args.parts.split(",")
    steps = [
        s
        for s in PLANS["tiny" if tiny else "gpu"]
        if "loglikelihood" in parts and (not args.models or s.shape in args.models.split(","))
    ]
    gen_plan = gpu_generation.GEN_PLANS["tiny" if tiny else "gpu"] if "generation" in parts else None
    tok, tok_note = load_tokenizer(tiny, args.tokenizer)
    most = {t: max((s.docs[t] for s in steps), default=0) for t in TASKS}
    tasks = {t: build_requests(t, most[t], args.seed, TINY_SHOTS[t] if tiny else TASKS[t][3]) for t in TASKS}
    for t in tasks.values():
        t.encoded = encode(tok, t.requests) if t.requests else []
    if args.dry_run:
        print(f"plan: {'tiny' if tiny else 'gpu'}; tokenizer: {tok_note} ({len(tok):,} tokens)")
        if steps:
            print_plan(plan(steps, tasks, tok))
        if gen_plan:
            gpu_generation.print_plan(gen_plan, tok, args.seed)
        return 0
    before = {m.split(".")[0] for m in sys.modules}
    lmeval = lmeval_import()
    device = "cpu" if tiny else "cuda"
    results = {
        "status": "running",
        "models": {},
        "meta": {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "device": (
                f"{torch.cuda.get_device_name()} ({torch.cuda.get_device_properties(0).total_memory / 2**30:.0f} GiB)"
                if device == "cuda"
                else f"CPU ({platform.processor() or platform.machine()})"
            ),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "lm_eval": metadata.version("lm_eval") if lmeval[0] else lmeval[2],
            "python": platform.python_version(),
            "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
            "command": "python benchmarks/gpu_bench.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "tiny": tiny,
            "seed": args.seed,
            "tokenizer": f"{tok_note}, {len(tok):,} tokens",
            "requests_note": requests_note(steps, tasks),
            "lmeval_import_modules": sorted({m.split(".")[0] for m in sys.modules} - before),
            "plan": [asdict(s) for s in steps],
            "parts": parts,
            "budget_s": None if tiny else args.budget_s,
        },
    }
    ctx = Ctx(
        tok, device, tasks, lmeval, start + (float("inf") if tiny else args.budget_s), args.out, args.seed, results
    )
    write_results(args.out, results)
    for step in steps:
        try:
            run_step(ctx, step)
        except Exception as exc:  # noqa: BLE001 - record it and go on to the next model
            traceback.print_exc()
            results["models"].setdefault(step.shape, {"tasks": {}})["error"] = f"{type(exc).__name__}: {exc}"[:500]
        write_results(args.out, results)
    if gen_plan:
        try:
            gpu_generation.run(ctx, gen_plan, float("inf") if tiny else args.gen_budget_s)
        except Exception as exc:  # noqa: BLE001 - recorded like a model's failure
            traceback.print_exc()
            results.setdefault("generation", {})["error"] = f"{type(exc).__name__}: {exc}"[:500]
        write_results(args.out, results)
    results["status"] = run_status(results)
    results["meta"]["total_seconds"] = round(time.monotonic() - start, 1)
    write_results(args.out, results)
    print("\n" + markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
