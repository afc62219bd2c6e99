"""Fixtures from the Thai LLM Leaderboard's own runner (scbdatax/seacrowd-eval), run in a side virtual environment
on the shipped samples (``data/thai_llm_leaderboard/``), for ``tests/test_thai_llm_leaderboard_parity.py``
(spec ``../shared/spec/thai_llm_leaderboard.md`` sections 2.4, 2.6, 3.2, 3.3, 4.3-4.4, 6).

What runs is the runner's code at commit 9de93927f2afe0c6455147c71c09b5b3046a68d7, unchanged except where listed in
``RUNNER_PATCHES`` / ``tests/data/thai_llm_leaderboard_runner/README.md``:

- NLU: ``evaluation/main_nlu_prompt_batch.py`` runs as ``__main__`` (``runpy``) with argv ``tha <model dir> <B>``,
  its ``load_nlu_datasets`` replaced by the shipped files (first ``--nlu-items`` rows of each test file;
  rows ``ROWS`` of the illustrative XNLI and M3Exam files, loaded with
  ``datasets``' json builder as the Hub files are) and its ``load_model_runner`` returning one ``HFModel`` (patched to
  CPU / float32 / sdpa) whose per-label sums are recorded. Its own ``to_prompt``, QA exclusion, label mapping,
  batching, CSV writing and sklearn metrics run as they are. B = 1 (the parity reference) and B = 4 (the
  leaderboard's).
- NLG: prompts from ``main_nlg_prompt_batch.to_prompt`` with ``get_prompt('tha', return_only_one=True)``, the chat
  strings ``HFModel.predict_generation`` builds, and ``metrics_utils.generation_metrics_fn`` on fixed
  (hypothesis, reference) pairs, called in the NLG script's order (per task: Thai hypotheses, then their
  ``anyascii`` forms) after ``set_seed(42)``. ROUGE's bootstrap median does not draw from that seeded stream:
  ``evaluate`` fixes each metric module's seed when ``evaluate.load`` runs (at ``metrics_utils`` import, before
  ``set_seed``) from numpy's global state, entropy-seeded at that point, and runs every ``compute`` under
  ``temp_seed(module seed)`` (evaluate 0.4.2 ``module.py:217-219, 466``): each call redraws from one per-process
  seed, recorded in the fixture. SacreBLEU (FLORES-200 SentencePiece model, downloaded on first use; no package
  ships it) and METEOR (NLTK data downloads) cannot run offline: both are stubs returning NaN.
- MT-Bench Thai: ``main_llm_judge_batch.LLMJudgeEvalHandler`` (load_dataset, generate, calculate_result) on the
  shipped questions with canned model answers and hand-written judge replies (no API call): its judge prompts,
  rating regexes and ``-1``-included category means.

Run (15-30 minutes on 2 cores shared with other sessions; see the fixture README for the environment):

    /work/sidevenv/tllb/bin/python benchmarks/thai_llm_leaderboard_parity.py
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import runpy
import sys
import tempfile
import time
import types
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data" / "thai_llm_leaderboard"
OUT = REPO / "tests" / "data" / "thai_llm_leaderboard_runner"
SIDE = Path("/work/sidevenv/tllb")
RUNNER_COMMIT = "9de93927f2afe0c6455147c71c09b5b3046a68d7"
EVALUATE_TAG = "v0.4.2"  # huggingface/evaluate a4bdc10c48a450b978d91389a48dbb5297835c7d
NMT_COMMIT = "0be864257a76c151eef20ea689755f08bc1faf4e"  # tensorflow/nmt, nmt/scripts/bleu.py (evaluate's nmt_bleu)

NLU_TASKS = [  # evaluation/data_utils.py NLU_TASK_LIST order; (file, split the runner picks)
    ("wisesight_thai_sentiment_seacrowd_text", "wisesight_thai_sentiment_seacrowd_text_test.jsonl", "test"),
    ("m3exam_tha_seacrowd_qa", "m3exam_tha_seacrowd_qa_test.jsonl", "test"),
    ("xcopa_tha_seacrowd_qa", "xcopa_tha_seacrowd_qa_test.jsonl", "test"),
    ("belebele_tha_thai_seacrowd_qa", "belebele_tha_thai_seacrowd_qa_test.jsonl", "test"),
    ("xnli.tha_seacrowd_pairs", "xnli.tha_seacrowd_pairs_test.jsonl", "test"),
    ("thaiexam_qa", "thai_exam.jsonl", "train"),  # kunato/thai-exam-seacrowd: one split, train
]
NLG_TASKS = [  # evaluation/data_utils.py NLG_TASK_LIST order
    ("xl_sum_tha_seacrowd_t2t", "xl_sum_tha_seacrowd_t2t_test.jsonl", "test"),
    ("flores200_eng_Latn_tha_Thai_seacrowd_t2t", "flores200_eng_Latn_tha_Thai_seacrowd_t2t_devtest.jsonl", "devtest"),
    ("flores200_tha_Thai_eng_Latn_seacrowd_t2t", "flores200_tha_Thai_eng_Latn_seacrowd_t2t_devtest.jsonl", "devtest"),
    ("iapp_squad_seacrowd_qa", "iapp_squad_seacrowd_qa_test.jsonl", "test"),
]

# Rows picked in the illustrative files whatever --nlu-items says: M3Exam row 0 (4 options), row 6 (5 options, gold
# e, which the runner never scores) and row 11 (answer [], excluded as the runner excludes it); XNLI rows 0-2 (one
# per gold label)
ROWS = {"m3exam_tha_seacrowd_qa": [0, 6, 11], "xnli.tha_seacrowd_pairs": [0, 1, 2]}

# The only edits to evaluation/model_utils.py (exact text, each must occur once): run on the CPU in float32 with
# PyTorch's sdpa attention instead of a CUDA GPU in bfloat16 with flash-attention 2.
RUNNER_PATCHES = [
    ('device_map="auto",', 'device_map="cpu",', "model_utils.py:345: weights on the CPU (was device_map='auto')"),
    ("torch_dtype=torch.bfloat16,", "torch_dtype=torch.float32,", "model_utils.py:347: float32 (was bfloat16)"),
    (
        'attn_implementation="flash_attention_2",',
        'attn_implementation="sdpa",',
        "model_utils.py:348: sdpa attention (was flash_attention_2, CUDA only)",
    ),
    ('.to("cuda")', '.to("cpu")', "model_utils.py:383: inputs stay on the CPU (was .to('cuda'))"),
]
SHIM = (
    "model_utils._get_and_verify_max_len (model_utils.py:136-223) is called with a view of the config whose "
    "rope_scaling is what transformers 4.53 reported for Gemma 3 (None when every per-layer-type entry of "
    "transformers 5's nested rope_parameters is 'default'; else the full_attention entry): spec section 6, "
    "quirk 19. Gives model_max_length 8192, as at the runner's pinned transformers 4.53.0."
)
ENV_STUBS = [
    "nltk.download is a no-op (data_utils.py:8 downloads punkt_tab at import; nothing here needs it)",
    "evaluate.load('bleu'|'chrf'|'rouge') loads the v0.4.2 metric scripts from a local copy of huggingface/evaluate "
    "(bleu.py's '# From: <url>' import of nmt_bleu made a local import of tensorflow/nmt's bleu.py, same code)",
    "evaluate.load('sacrebleu'|'meteor') returns a stub whose compute gives NaN (offline: the FLORES-200 SPM model "
    "and NLTK's wordnet/punkt data are downloads); neither touches numpy's RNG",
    "modules 'dotenv', 'openai' (judge script imports; no API call is made) and 'nusacrowd.utils.constants' "
    "(NLG script import; Tasks = data_utils.Tasks, same MT/QA/SUM values) are stubs",
]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def default_model_dir() -> str:
    """The embedded Gemma 3 270M as thai-eval caches it (``backend.model_sources.convert_gguf``'s target)."""
    root = Path(os.environ.get("THAI_EVAL_CACHE") or Path.home() / ".cache" / "thai-eval") / "models"
    found = sorted(glob.glob(str(root / "gemma-3-270m-q4_k_m-*")))
    if not found:
        sys.exit(f"no embedded model folder under {root}: run thai-eval once with --model embedded to create it")
    return found[0]


# --- the side environment: offline stubs, the runner's modules ------------------------------------------------
class _NaNMetric:
    """Stand-in for evaluate's sacrebleu/meteor modules (cannot run offline); returns NaN under every key read."""

    def compute(self, **_kwargs):
        return {"score": float("nan"), "meteor": float("nan")}


def setup_side_env(runner: Path, metrics: Path) -> dict:
    """Stub what would download or call an API, load the runner's modules (model_utils patched), return them."""
    for k in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_EVALUATE_OFFLINE"):
        os.environ[k] = "1"
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    import evaluate
    import nltk

    nltk.download = lambda *a, **k: False
    real_load = evaluate.load

    def local_load(name, *args, **kwargs):
        if name in ("bleu", "chrf", "rouge"):
            return real_load(str(metrics / name), *args, **kwargs)
        if name in ("sacrebleu", "meteor"):
            return _NaNMetric()
        raise RuntimeError(f"evaluate.load({name!r}) would download")

    evaluate.load = local_load
    sys.modules["dotenv"] = types.SimpleNamespace(load_dotenv=lambda *a, **k: None)

    class _OpenAIError(Exception):
        pass

    sys.modules["openai"] = types.SimpleNamespace(OpenAI=None, OpenAIError=_OpenAIError)
    ev = runner / "evaluation"
    sys.path.insert(0, str(ev))
    src = (ev / "model_utils.py").read_text()
    for old, new, _ in RUNNER_PATCHES:
        assert src.count(old) == 1, f"model_utils.py: {old!r} occurs {src.count(old)} times"
        src = src.replace(old, new)
    model_utils = types.ModuleType("model_utils")
    model_utils.__file__ = str(ev / "model_utils.py")
    sys.modules["model_utils"] = model_utils
    exec(compile(src, str(ev / "model_utils.py"), "exec"), model_utils.__dict__)
    original_max_len = model_utils._get_and_verify_max_len

    class _Legacy:
        def __init__(self, cfg):
            self._cfg = cfg
            rs = getattr(cfg, "rope_scaling", None)
            if isinstance(rs, dict) and rs and all(isinstance(v, dict) for v in rs.values()):
                rs = None if all(v.get("rope_type") == "default" for v in rs.values()) else rs.get("full_attention")
            self.rope_scaling = rs

        def __getattr__(self, name):
            return getattr(self._cfg, name)

    model_utils._get_and_verify_max_len = lambda cfg, *a, **k: original_max_len(_Legacy(cfg), *a, **k)
    import data_utils  # noqa: E402 (after nltk.download is stubbed)

    constants = types.ModuleType("nusacrowd.utils.constants")
    constants.Tasks = data_utils.Tasks
    sys.modules["nusacrowd"] = types.ModuleType("nusacrowd")
    sys.modules["nusacrowd.utils"] = types.ModuleType("nusacrowd.utils")
    sys.modules["nusacrowd.utils.constants"] = constants
    import prompt_utils

    # main_nlg_prompt_batch.py:7 imports metrics_utils, whose evaluate.load calls (metrics_utils.py:6-10) run before
    # its set_seed(42) (:100): each evaluate module fixes its seed then, from numpy's global RNG state (evaluate
    # module.py:217-219), and every compute() runs under temp_seed(that seed) (module.py:466). Importing it here,
    # before anything seeds numpy, gives the ROUGE module the seed it gets in the runner: entropy-derived, one per
    # process (recorded in the fixture).
    import metrics_utils

    return {
        "model_utils": model_utils,
        "data_utils": data_utils,
        "prompt_utils": prompt_utils,
        "ev": ev,
        "metrics_utils": metrics_utils,
    }


def load_split(path: Path, rows: int | list[int]):
    """The first ``rows`` rows (or the rows listed) of a shipped file, through ``datasets``' json builder (as the
    runner's Hub files load)."""
    from datasets import load_dataset

    ds = load_dataset("json", data_files=str(path), split="train", cache_dir=str(SIDE / "hf-datasets-cache"))
    return ds.select(range(min(rows, len(ds))) if isinstance(rows, int) else rows)


def task_types(ev: Path) -> dict:
    """task key -> data_utils.Tasks value, from evaluation/config/dataset_config.json."""
    cfg = json.loads((ev / "config" / "dataset_config.json").read_text())
    return {k: v[1] for k, v in cfg.items()}


# --- NLU -------------------------------------------------------------------------------------------------------
class Recorder:
    """Wraps one HFModel: every ``predict_classification`` call's per-prompt, per-label sums (``_get_logprobs``'s
    returned tensor, as float) and the unpadded token count of each scored text."""

    def __init__(self, model):
        self.model, self.calls, self._current = model, [], None
        inner_logprobs, inner_predict = model._get_logprobs, model.predict_classification

        def logprobs(m, name, tok, inputs, *a, **k):
            out = inner_logprobs(m, name, tok, inputs, *a, **k)
            self._current.append([float(x) for x in out.float().numpy()])
            return out

        def predict(prompts, labels, **k):
            self._current = []
            hyps = inner_predict(prompts, labels, **k)
            for b, (p, h) in enumerate(zip(prompts, hyps)):
                texts = [p.replace("[LABEL_CHOICE]", lab) for lab in labels]
                n_ids = [len(model.tokenizer(t)["input_ids"]) for t in texts]
                self.calls.append(
                    {
                        "prompt": p,
                        "pred": int(h),
                        "batch": len(prompts),
                        "sums": [self._current[j][b] for j in range(len(labels))],
                        "scored_tokens": [n - 1 for n in n_ids],
                    }
                )
            return hyps

        model._get_logprobs, model.predict_classification = logprobs, predict


def run_nlu(side: dict, model_dir: str, n_items: int, batch_sizes: list[int]) -> dict:
    """The runner's NLU script as ``__main__`` per batch size; per-item records, its CSVs and metrics."""
    import pandas as pd
    from datasets import DatasetDict

    data_utils, model_utils, ev = side["data_utils"], side["model_utils"], side["ev"]
    types_ = task_types(ev)
    datasets_ = {}
    for key, fname, split in NLU_TASKS:
        task = data_utils._get_task_from_value(types_[key])
        rows = ROWS.get(key, list(range(n_items)))
        datasets_[key] = (DatasetDict({split: load_split(DATA / fname, rows)}), task)
    data_utils.load_nlu_datasets = lambda: datasets_
    t0 = time.perf_counter()
    model = model_utils.HFModel(model_dir, compile=False)
    load_s = time.perf_counter() - t0
    rec = Recorder(model)
    model_utils.load_model_runner = lambda *a, **k: model
    runs = {}
    for bs in batch_sizes:
        rec.calls = []
        with tempfile.TemporaryDirectory() as tmp:
            cwd = os.getcwd()
            os.chdir(tmp)
            argv = sys.argv
            sys.argv = [str(ev / "main_nlu_prompt_batch.py"), "tha", model_dir, str(bs)]
            t0 = time.perf_counter()
            try:
                runpy.run_path(str(ev / "main_nlu_prompt_batch.py"), run_name="__main__")
            finally:
                sys.argv = argv
                os.chdir(cwd)
            seconds = time.perf_counter() - t0
            name = Path(model_dir).name
            metrics = pd.read_csv(Path(tmp) / "metrics_nlu" / f"nlu_results_tha_{name}.csv").to_dict("records")
            outputs = {
                key: pd.read_csv(Path(tmp) / "outputs_nlu" / f"{key}_tha_0_{name}.csv", keep_default_na=False).to_dict(
                    "records"
                )
                for key, _, _ in NLU_TASKS
            }
        runs[bs] = {"calls": rec.calls, "metrics": metrics, "outputs": outputs, "seconds": seconds}
        log(f"NLU batch size {bs}: {len(rec.calls)} items in {seconds:.1f} s")
    # which loaded rows the runner scored (QA rows whose answer is not among the choices are dropped,
    # main_nlu_prompt_batch.py:129-147): align its Input column with its to_prompt of every loaded row
    nlu_defs = runpy.run_path(str(ev / "main_nlu_prompt_batch.py"), run_name="nlu")
    templates = side["prompt_utils"].get_prompt("tha")
    ids = {}
    for key, _, split in NLU_TASKS:
        rows = datasets_[key][0][split]
        labels = list(side["prompt_utils"].get_label_mapping(key, "tha").values())
        built = [nlu_defs["to_prompt"](r, templates[types_[key]][0], labels, "tha", key.split("_")[-1]) for r in rows]
        inputs, kept, j = [o["Input"] for o in runs[batch_sizes[0]]["outputs"][key]], [], 0
        for r, b in zip(rows, built):
            if j < len(inputs) and inputs[j] == b:
                kept.append(str(r["id"]))
                j += 1
        assert j == len(inputs), f"{key}: scored prompts are not a subsequence of the loaded rows' prompts"
        ids[key] = {"loaded": [str(r["id"]) for r in rows], "scored": kept}
    return {
        "runs": runs,
        "load_seconds": load_s,
        "model": model,
        "ids": ids,
        "model_max_length": model.model_max_length,
        "label_names": {k: list(side["prompt_utils"].get_label_mapping(k, "tha").values()) for k, _, _ in NLU_TASKS},
    }


def nlu_fixture(nlu: dict, batch_sizes: list[int], n_items: int) -> tuple[list[dict], dict]:
    """Per-item rows (bs1 reference; bs4 sums and prediction beside it) and per-task runner metrics."""
    ref, other = batch_sizes[0], batch_sizes[1:]
    rows, metrics = [], {}
    calls = {bs: list(nlu["runs"][bs]["calls"]) for bs in batch_sizes}
    for key, _, _ in NLU_TASKS:
        out = {bs: nlu["runs"][bs]["outputs"][key] for bs in batch_sizes}
        for i, o in enumerate(out[ref]):
            c = {bs: calls[bs].pop(0) for bs in batch_sizes}
            for bs in batch_sizes:
                assert c[bs]["prompt"] == out[bs][i]["Input"] == o["Input"], (key, i, bs)
                assert int(out[bs][i]["Pred"]) == c[bs]["pred"], (key, i, bs)
            row = {
                "task": key,
                "index": i,
                "id": nlu["ids"][key]["scored"][i],
                "prompt": o["Input"],
                "labels": nlu["label_names"][key],
                "gold": int(o["Gold"]),
                "scored_tokens": c[ref]["scored_tokens"],
                "sums": c[ref]["sums"],
                "pred": c[ref]["pred"],
            }
            for bs in other:
                row[f"sums_bs{bs}"] = c[bs]["sums"]
                row[f"pred_bs{bs}"] = c[bs]["pred"]
                row[f"bs{bs}_changed_pred"] = c[bs]["pred"] != c[ref]["pred"]
            rows.append(row)
        metrics[key] = {"loaded_ids": nlu["ids"][key]["loaded"], "scored_ids": nlu["ids"][key]["scored"]}
        metrics[key] |= {
            f"bs{bs}": next(m for m in nlu["runs"][bs]["metrics"] if m["dataset"] == key) for bs in batch_sizes
        }
    assert all(not v for v in calls.values()), "unmatched predict_classification records"
    return rows, metrics


# --- NLG -------------------------------------------------------------------------------------------------------
def hypotheses(ref: str, i: int) -> str:
    """Fixed, deterministic hypotheses made from the reference (so every metric takes a value strictly between its
    extremes on most rows): item 0 exact, 1 empty, 2 a leading newline plus the first two thirds, 3 the second half
    then the first, others the first 60 % plus a repeated fragment."""
    n = len(ref)
    if i == 0:
        return ref
    if i == 1:
        return ""
    if i == 2:
        return "\n" + ref[: 2 * n // 3]
    if i == 3:
        return ref[n // 2 :] + " " + ref[: n // 2]
    return ref[: 3 * n // 5] + " " + ref[n // 5 : 2 * n // 5]


def run_nlg(side: dict, n_items: int, model) -> dict:
    """The NLG script's prompts, chat strings and metric calls (in its order, after ``set_seed(42)``)."""
    from anyascii import anyascii
    from transformers import set_seed

    ev = side["ev"]
    nlg = runpy.run_path(str(ev / "main_nlg_prompt_batch.py"), run_name="nlg")  # defs only (no __main__)
    import metrics_utils

    templates = side["prompt_utils"].get_prompt("tha", return_only_one=True)
    types_ = task_types(ev)
    tasks = {}
    for key, fname, _ in NLG_TASKS:
        data = load_split(DATA / fname, n_items)
        template = templates[types_[key]][0]
        prompts = [nlg["to_prompt"](row, template, "tha", key, types_[key]) for row in data]
        golds = [row["answer"][0] if "answer" in row else row["text_2"] for row in data]  # main_nlg:206-210
        chat = [
            model.tokenizer.apply_chat_template(
                [{"role": "user", "content": p}], add_generation_prompt=True, tokenize=False
            )
            for p in prompts
        ]  # model_utils.py:422-430
        hyps = [hypotheses(g, i) for i, g in enumerate(golds)]
        tasks[key] = {
            "template": template,
            "prompts": prompts,
            "chat_prompts": chat,
            "golds": golds,
            "hypotheses": hyps,
            "hypotheses_latin": [anyascii(h) for h in hyps],
        }
    set_seed(42)  # main_nlg_prompt_batch.py:100 (no effect on the metrics: see setup_side_env)
    for key, _, _ in NLG_TASKS:
        t = tasks[key]
        t["metrics"] = metrics_utils.generation_metrics_fn(t["hypotheses"], t["golds"])
        t["metrics_latin"] = metrics_utils.generation_metrics_fn(t["hypotheses_latin"], t["golds"])
    for key, _, _ in NLG_TASKS:  # the exact per-row means beside the bootstrap medians (no RNG used)
        t = tasks[key]
        per_row = metrics_utils.rouge.compute(
            predictions=t["hypotheses"], references=t["golds"], tokenizer=metrics_utils.tokenizer, use_aggregator=False
        )
        t["rouge_per_row"] = per_row
        t["rouge_mean"] = {k: 100 * sum(v) / len(v) for k, v in per_row.items()}
        t["newmm_tokens_first_gold"] = metrics_utils.tokenizer(t["golds"][0])
    return {
        "rouge_module_seed": int(metrics_utils.rouge.seed),
        "evaluate_module_seeds": {k: int(getattr(metrics_utils, k).seed) for k in ("bleu", "rouge", "chrf")},
        "tasks": tasks,
    }


# --- MT-Bench Thai judge ---------------------------------------------------------------------------------------
JUDGE_REPLIES = [  # (turn 0 reply, turn 1 reply) per shipped question, in file order; hand-written
    ("The answer is polite and complete.\n\nRating: [[8]]", "Good follow-up. Rating: [[7]]"),
    ("Clear story. Rating: [[6.5]]", "Rating: [6]"),  # float; backup single-bracket pattern
    ("As noted in [2], the extraction misses a field. Rating: [[4]]", "$ERROR$"),  # [[..]] wins; API failure -> -1
    ("I cannot rate this response.", "Rating: [[9]]"),  # no number -> -1
    ("Correct result. Rating: [[10]]", "Wrong final step (see [3]). The rating is 5."),  # backup matches [3]
    ("Rating: [[11]]", "Rating: [[ 7 ]]"),  # not clamped; spaces inside brackets do not match -> -1
    ("Rating: [[7]] and later [[2]]", "Score: 5/10"),  # first match; no brackets -> -1
    ("Rating: [[3.]]", "Rating: [[1]]"),  # '3.' literal_eval -> 3.0
    ("Rating: [[5]]", "Rating: [[2]]"),
]


def run_judge(side: dict) -> dict:
    """The judge script's handler on the shipped MT-Bench Thai questions: canned model answers, canned replies."""
    mod = runpy.run_path(str(side["ev"] / "main_llm_judge_batch.py"), run_name="judge")
    handler_cls, chat_cls = mod["LLMJudgeEvalHandler"], mod["ChatMessage"]
    data_path = str(DATA / "mt_bench_thai_full.json")
    questions = json.loads(Path(data_path).read_text())
    assert len(questions) == len(JUDGE_REPLIES), "one pair of judge replies per shipped question"

    class Canned:  # the model: answer k of a conversation is a fixed string (no generation)
        def predict_generation(self, convs):
            out = []
            for conv in convs:
                assert all(isinstance(m, chat_cls) for m in conv)
                q = next(q for q in questions if q["turns"][0] == conv[0].content)
                out.append(f"คำตอบที่ {len(conv) // 2 + 1} ของคำถาม {q['question_id']}")
            return out

    h = handler_cls.__new__(handler_cls)
    h.data_path, h.judge_num_workers, h.judge_model = data_path, 8, "gpt-4o-2024-05-13"  # main_llm_judge:46-48
    h.judge_prompts, h.model_runner = h._load_judge_prompts(), Canned()
    calls = []

    def call_openai(model, conv, temperature, max_tokens):
        user = conv[1]["content"]
        k = next(i for i, q in enumerate(questions) if q["turns"][0] in user)
        turn = 1 if questions[k]["turns"][1] in user else 0
        calls.append(
            {
                "question_id": questions[k]["question_id"],
                "turn": turn,
                "temperature": temperature,
                "max_tokens": max_tokens,
                "system": conv[0]["content"],
            }
        )
        return JUDGE_REPLIES[k][turn]

    h._call_openai = call_openai
    avg, results = h.pipeline()
    return {
        "avg_rating": avg["avg_rating"],
        "judgments": [
            {
                "question_id": r["question_id"],
                "turn": r["turn"],
                "category": r["category"],
                "rating": r["result"]["rating"],
                "judgment": r["result"]["judgment"],
                "user_prompt": r["result"]["user_prompt"],
                "responses": r["payload"]["responses"],
            }
            for r in results
        ],
        "calls": sorted(calls, key=lambda c: (c["question_id"], c["turn"])),
    }


# --- main ------------------------------------------------------------------------------------------------------
def versions() -> dict:
    names = [
        "torch",
        "transformers",
        "tokenizers",
        "datasets",
        "evaluate",
        "scikit-learn",
        "pythainlp",
        "sacrebleu",
        "rouge_score",
        "nltk",
        "numpy",
        "pandas",
        "anyascii",
    ]
    return {"python": sys.version.split()[0], **{n: metadata.version(n) for n in names}}


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runner", type=Path, default=SIDE / "seacrowd-eval", help="checkout of seacrowd-eval @9de9392")
    ap.add_argument("--metrics", type=Path, default=SIDE / "evaluate-v0.4.2" / "metrics")
    ap.add_argument("--model-dir", default=None, help="the embedded model's cached HF folder (default: found)")
    ap.add_argument("--nlu-items", type=int, default=1)
    ap.add_argument("--nlg-items", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    model_dir = args.model_dir or default_model_dir()
    side = setup_side_env(args.runner, args.metrics)
    log(f"runner {args.runner} (commit {RUNNER_COMMIT[:7]}), model {model_dir}")
    nlu = run_nlu(side, model_dir, args.nlu_items, [1, 4])
    rows, nlu_metrics = nlu_fixture(nlu, [1, 4], args.nlu_items)
    nlg = run_nlg(side, args.nlg_items, nlu["model"])
    judge = run_judge(side)
    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out / "nlu_items.jsonl", rows)
    changed = sum(r["bs4_changed_pred"] for r in rows)
    (args.out / "nlu_metrics.json").write_text(
        json.dumps(
            {
                "tasks": nlu_metrics,
                "items_per_task_requested": args.nlu_items,
                "model_max_length": nlu["model_max_length"],
                "bs4_changed_predictions": changed,
                "items": len(rows),
                "seconds": {f"bs{bs}": nlu["runs"][bs]["seconds"] for bs in (1, 4)},
            },
            ensure_ascii=False,
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )
    (args.out / "nlg_metrics.json").write_text(json.dumps(nlg, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    (args.out / "judge.json").write_text(json.dumps(judge, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    (args.out / "environment.json").write_text(
        json.dumps(
            {
                "runner": "scbdatax/seacrowd-eval",
                "runner_commit": RUNNER_COMMIT,
                "evaluate_metrics_tag": EVALUATE_TAG,
                "tensorflow_nmt_commit": NMT_COMMIT,
                "model_dir": Path(model_dir).name,
                "model_patches": [d for _, _, d in RUNNER_PATCHES],
                "shim": SHIM,
                "environment_stubs": ENV_STUBS,
                "torch_threads": args.threads,
                "versions": versions(),
                "command": "/work/sidevenv/tllb/bin/python benchmarks/thai_llm_leaderboard_parity.py"
                + (f" --nlu-items {args.nlu_items}" if args.nlu_items != 1 else ""),
            },
            ensure_ascii=False,
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )
    log(f"wrote {args.out}: {len(rows)} NLU items, bs4 changed {changed} predictions")


if __name__ == "__main__":
    main()
