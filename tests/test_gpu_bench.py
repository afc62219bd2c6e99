"""benchmarks/gpu_bench.py (the GPU benchmark): its tiny CPU run, its request building and token counts.

The tiny run scores real Thai-H6-shaped requests on random 2-layer Llama and Qwen2 models; thai-eval must match
a direct transformers full forward within 1e-4 per request; the lm-eval side runs when lm-eval is importable
and is skipped with its reason otherwise (a clean clone has no lm-eval).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
import gpu_bench as gb
import gpu_generation as gg

DATA = REPO / "data" / "thai_h6" / "h6"
HAS_LMEVAL = importlib.util.find_spec("lm_eval") is not None


def _n_choices(task: str, n_docs: int) -> int:
    """Requests of the first n tiled documents, counted from the data files: ARC cycles its 12 test items
    (4-5 choices each); HellaSwag has 4 endings; MMLU 4 choices."""
    if task == "arc":
        docs = [json.loads(x) for x in (DATA / gb.TASKS["arc"][1]).read_text(encoding="utf-8").splitlines()]
        return sum(len(docs[k % len(docs)]["choices"]["text"]) for k in range(n_docs))
    return 4 * n_docs


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu_bench")
    assert gb.main(["--tiny", "--out", str(out)]) == 0
    return json.loads((out / "gpu_bench.json").read_text(encoding="utf-8")), (out / "gpu_bench.md").read_text()


def test_tiny_run_records_what_it_measured(tiny_run):
    res, md = tiny_run
    meta = res["meta"]
    assert res["status"] == "complete" and meta["tiny"] is True
    for key in ("date", "device", "torch", "transformers", "python", "lm_eval", "tokenizer", "requests_note"):
        assert meta[key], key
    assert meta["device"].startswith("CPU")
    assert [s["shape"] for s in meta["plan"]] == ["tiny-llama", "tiny-qwen2"]
    assert "1,222" in meta["requests_note"] and "14,585" in meta["requests_note"]
    for step in gb.PLANS["tiny"]:
        entry = res["models"][step.shape]
        assert entry["dtype"] == "float32" and entry["thai_eval_warnings"] == []
        for task, (_, _, _, _, real) in gb.TASKS.items():
            r = entry["tasks"][task]
            assert (r["docs"], r["of_real"], r["shots"]) == (step.docs[task], real, gb.TINY_SHOTS[task])
            assert r["requests"] == _n_choices(task, step.docs[task])
            # counted work: lm-eval feeds no more than the requests hold; the tree no more than lm-eval feeds
            assert r["continuation_tokens"] < r["tree_tokens"] <= r["lmeval_fed_tokens"] <= r["request_tokens"]
            assert r["thai_eval"]["seconds"] > 0 and r["thai_eval"]["requests_per_s"] > 0
    # MMLU's few-shot block is shared by both documents; a single ARC document shares nothing with another
    assert res["models"]["tiny-llama"]["tasks"]["mmlu"]["cross_doc_shared_tokens"] > 0
    assert res["models"]["tiny-llama"]["tasks"]["arc"]["cross_doc_shared_tokens"] == 0
    assert md.count("| tiny-") == 6 and "not a benchmark" in md
    assert "Goal (>= 4x lm-eval's HF backend on llama-3.1-8b, each task): arc: not measured" in md


def test_tiny_run_thai_eval_matches_a_full_forward(tiny_run):
    res, _ = tiny_run
    for entry in res["models"].values():
        for r in entry["tasks"].values():
            ref = r["reference"]["thai_eval"]
            assert ref["requests"] == r["requests"]
            assert ref["max_abs_delta"] <= 1e-4, ref
            assert ref["greedy_equal"] == r["requests"] and ref["metrics_equal"] and ref["docs_differ"] == []


def test_tiny_run_lmeval_side(tiny_run):
    res, md = tiny_run
    for entry in res["models"].values():
        for r in entry["tasks"].values():
            if not HAS_LMEVAL:
                assert r["lmeval"]["skipped"].startswith("lm-eval not importable: ModuleNotFoundError")
                assert "speedup" not in r and "vs_lmeval" not in r
                continue
            assert r["vs_lmeval"]["max_abs_delta"] <= 1e-4 and r["vs_lmeval"]["metrics_equal"]
            assert r["reference"]["lmeval"]["max_abs_delta"] <= 1e-4
            best = min((t for t in r["lmeval"] if "seconds" in t), key=lambda t: t["seconds"])
            assert r["best_batch"] == best["batch_size"]
            # the speed-up is rounded to 2 decimals: more than 1% of a speed-up under 1 (0.4 for 0.404)
            assert r["speedup"] == pytest.approx(best["seconds"] / r["thai_eval"]["seconds"], rel=0.01, abs=0.01)
    if not HAS_LMEVAL:
        assert "lm-eval not importable" in md


def test_tiled_documents_share_no_whole_prompt():
    """60 ARC documents from 12 samples: every context distinct, the first shot numbered 1..60."""
    tiled = gb.tiled_docs("arc", 60, seed=1, shots=25)
    assert [shots[0]["question"].split(". ", 1)[0] for _, shots in tiled] == [f"ข้อ {k}" for k in range(1, 61)]
    reqs = gb.build_requests("arc", 60, seed=1, shots=25)
    contexts = {c for c, _ in reqs.requests}
    assert len(contexts) == 60 and reqs.doc_of[-1] == 59 and len(reqs.requests) == _n_choices("arc", 60)
    assert all(c.startswith("Question: ข้อ ") and c.endswith("\nAnswer:") for c in contexts)
    # MMLU: the first 256 documents are one subject: description and first-5 shots shared, questions numbered
    mmlu = gb.build_requests("mmlu", 300, seed=1, shots=5)
    heads = {c.rsplit("\n\n", 1)[0] for c, _ in mmlu.requests}
    assert len(heads) == 2 and {d["subject"] for d in mmlu.docs} == {"derivatives_markets", "investment_fundamentals"}
    assert mmlu.docs[255]["question"].startswith("ข้อ 256. ") and mmlu.docs[256]["subject"] == "investment_fundamentals"


def test_token_counts_by_hand():
    """Requests (ctx, cont): ([1,2],[3]) and ([1,2],[4]) in doc 0, ([1,5],[6,7]) in doc 1."""
    reqs = gb.TaskRequests(
        "arc", [{}, {}], [("a", " b")] * 3, [0, 0, 1], [([1, 2], [3]), ([1, 2], [4]), ([1, 5], [6, 7])]
    )
    c = gb.token_counts(reqs, max_length=100)
    assert c["request_tokens"] == 10 and c["continuation_tokens"] == 4
    assert c["lmeval_fed_tokens"] == 5  # (1,2) once for both one-token continuations, then (1,5,6)
    assert c["tree_tokens"] == 4  # 1, 2, 5, 6
    assert c["scored_rows"] == 3  # after (1,2); after (1,5) and (1,5,6)
    assert c["cross_doc_shared_tokens"] == 1  # token 1, the common root of both documents
    assert gb._trie_tokens([(1, 2, 3), (1, 2, 4), (5,), (1, 2, 3)]) == 5


def test_encode_moves_trailing_space_like_lmeval():
    tok, _ = gb.load_tokenizer(tiny=True, path=None)
    a = gb.encode(tok, [("คำถาม: น้ำเดือดที่อุณหภูมิเท่าไร ", "หนึ่งร้อย")])
    b = gb.encode(tok, [("คำถาม: น้ำเดือดที่อุณหภูมิเท่าไร", " หนึ่งร้อย")])
    whole = tok("คำถาม: น้ำเดือดที่อุณหภูมิเท่าไร หนึ่งร้อย", add_special_tokens=False).input_ids
    assert a == b and a[0][0] + a[0][1] == whole and a[0][1]


def test_dry_run_prints_the_plan(capsys):
    assert gb.main(["--tiny", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "plan: tiny" in out and "tiny-llama (float32)" in out and "tiny-qwen2 (float32)" in out
    row = next(line for line in out.splitlines() if line.strip().startswith("arc"))
    assert row.split()[1:4] == ["1", "(", "1,222)"] and row.split()[4] == str(_n_choices("arc", 1))
    assert "not a measurement" in out
    assert "generation: tiny-llama (float32), 3 GSM8K 5-shot prompts" in out
    assert gb.main(["--tiny", "--dry-run", "--parts", "generation"]) == 0
    out = capsys.readouterr().out
    assert "generation: tiny-llama" in out and "tiny-qwen2" not in out


def test_tiny_run_generation(tiny_run):
    """The generation part on the tiny model: thai-eval's texts equal transformers' batch-1 greedy ``generate``;
    counts and rates are consistent; lm-eval runs or is skipped with its reason."""
    res, md = tiny_run
    gen, plan = res["generation"], gg.GEN_PLANS["tiny"]
    assert (gen["shape"], gen["prompts"], gen["max_new_tokens"]) == ("tiny-llama", plan.prompts, plan.max_new_tokens)
    assert gen["stops"] == ["Question:", "</s>", "<|im_end|>"] and gen["dtype"] == "float32"
    te, work = gen["thai_eval"], gen["thai_eval"]["work"]
    # 5-shot prompts of a few hundred tokens each; the engine prefills a shared prefix (>= 32 tokens) once
    assert gen["distinct_prompt_tokens"] <= work["prompt_tokens"] <= gen["prompt_tokens"] > 1000
    assert work["prompt_tokens"] + work["shared_tokens"] >= gen["prompt_tokens"]
    assert 0 < work["generated_tokens"] <= plan.prompts * plan.max_new_tokens
    # tokens/s is computed from the unrounded time; "seconds" is kept to 3 decimals
    rate = [work["generated_tokens"] / (te["seconds"] + d) for d in (5e-4, -5e-4)]
    assert rate[0] - 0.05 <= te["tokens_per_s"] <= rate[1] + 0.05
    assert gen["reference"] == {"prompts": plan.prompts, "thai_eval_equal": plan.prompts, "differ": []}
    best = gg.perfect(work, plan.prompts, gen["distinct_prompt_tokens"])
    # no padding, no finished row computed; shared prefixes under 32 tokens are computed again
    assert best <= te["computed_positions"] == best + work["prompt_tokens"] - gen["distinct_prompt_tokens"]
    assert "**Generation**: tiny-llama (float32), 3 GSM8K 5-shot" in md
    if not HAS_LMEVAL:
        assert gen["lmeval"]["skipped"].startswith("lm-eval not importable") and "speedup" not in gen
        assert "| lm-eval | lm-eval not importable" in md
        return
    assert [t["batch_size"] for t in gen["lmeval"]] == list(plan.batch_sizes)
    for t in gen["lmeval"]:  # float32 on the CPU: lm-eval's batches give thai-eval's texts
        assert t["texts_equal"] == plan.prompts and t["computed_positions"] >= best
    assert gen["best_batch"] in plan.batch_sizes and gen["speedup"] > 0


def test_gsm8k_prompts_are_five_shot_and_distinct():
    prompts = gg.gsm8k_prompts(14, seed=1, shots=5)
    assert len(set(prompts)) == 14
    assert all(p.count("Question: ") == 6 and p.endswith("\nAnswer:") for p in prompts)
    assert [p.split(". ", 1)[0] for p in prompts] == [f"Question: ข้อ {k}" for k in range(1, 15)]
    test = [json.loads(x)["question"] for x in (DATA / "th_gsm8k" / "th_gsm8k_test.jsonl").read_text().splitlines()]
    assert prompts[12].rsplit("Question: ", 1)[1] == test[0] + "\nAnswer:"  # the 12 test questions cycle


def test_run_status_counts_the_generation_part():
    done = {"models": {"m": {"tasks": {"arc": {"docs": 1}}}}}
    assert gb.run_status(done) == "complete"
    assert gb.run_status({**done, "generation": {"lmeval": {"skipped": "lm-eval not importable"}}}) == "complete"
    skipped = {"lmeval": [{"batch_size": 64, "seconds": 1.0}, {"batch_size": 1, "skipped": "time budget"}]}
    assert gb.run_status({**done, "generation": skipped}) == "partial: time budget reached"
    assert gb.run_status({**done, "generation": {"error": "OutOfMemoryError"}}) == "failed on generation"
