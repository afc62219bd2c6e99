"""Parity of the Thai LLM Leaderboard's generation metrics and MT-Bench judging with the runner's own code
(scbdatax/seacrowd-eval @9de9392, run by ``benchmarks/thai_llm_leaderboard_parity.py`` in a side environment; its
outputs are the fixtures in ``tests/data/thai_llm_leaderboard_runner/``): prompts byte for byte, BLEU / chrF /
ROUGE to 1e-9 (ROUGE: the bootstrap-median replay, and our exact mean beside it), the judge's prompts, ratings and
category means."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from thai_eval_utils.judging.mt_bench import MT_BENCH_PARSER
from thai_eval_utils.thai_llm_leaderboard import nlg_metrics as M
from thai_eval_utils.thai_llm_leaderboard.generation import NLG_TASKS, fill_prompt, load_nlg_rows
from thai_eval_utils.thai_llm_leaderboard.mt_bench import avg_rating, category_ratings, judge_messages, load_questions

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "data" / "thai_llm_leaderboard_runner"
DATA = REPO / "data" / "thai_llm_leaderboard"
NLG = json.loads((FIXTURES / "nlg_metrics.json").read_text(encoding="utf-8"))
JUDGE = json.loads((FIXTURES / "judge.json").read_text(encoding="utf-8"))


#: The seed evaluate fixed for the runner's ROUGE module when the fixtures were written (recorded with them).
ROUGE_SEED = int(NLG["rouge_module_seed"])


def _rouge(hyps, refs, rouge="mean", seed=M.ROUGE_SEED):
    """The ROUGE values (runner keys) the product scores: ``nlg_scores``' mean or bootstrap-median replay."""
    scores, _ = M.nlg_scores(hyps, refs, rouge=rouge, rouge_seed=seed)
    return {k: scores[k]["value"] for k in M.ROUGE_KEYS.values()}


@pytest.mark.parametrize("key", list(NLG_TASKS))
def test_nlg_prompts_and_metrics_equal_the_runners(key):
    fx = NLG["tasks"][key]
    task = NLG_TASKS[key]
    rows = load_nlg_rows(task, DATA / task.data_file)[: len(fx["golds"])]
    assert [fill_prompt(task, r) for r in rows] == fx["prompts"]
    assert M.newmm_tokens(fx["golds"][0]) == fx["newmm_tokens_first_gold"]
    # the runner scores the predictions, then their anyascii forms, each against the untransliterated golds
    for hyps, runner in ((fx["hypotheses"], fx["metrics"]), (fx["hypotheses_latin"], fx["metrics_latin"])):
        assert M.RUNNER_BLEU(hyps, fx["golds"]) == pytest.approx(runner["BLEU"], abs=1e-9)
        assert M.CHRF_METRIC(hyps, fx["golds"]) == pytest.approx(runner["chrF++"], abs=1e-9)
        replay = _rouge(hyps, fx["golds"], "bootstrap_median", ROUGE_SEED)
        for k in ("ROUGE1", "ROUGE2", "ROUGEL", "ROUGELsum"):
            assert replay[k] == pytest.approx(runner[k], abs=1e-9), k
    rows_ = M.rouge_rows(fx["hypotheses"], fx["golds"])
    for t in M.ROUGE_TYPES:
        assert list(rows_[t][:, 2]) == pytest.approx(fx["rouge_per_row"][t], abs=1e-12)
    mean = _rouge(fx["hypotheses"], fx["golds"])
    assert {t: mean[M.ROUGE_KEYS[t]] for t in M.ROUGE_TYPES} == pytest.approx(fx["rouge_mean"], abs=1e-9)


def test_mt_bench_prompts_ratings_and_means_equal_the_runners():
    questions = {q.question_id: q for q in load_questions(DATA / "mt_bench_thai_full.json")}
    calls = {(c["question_id"], c["turn"]): c for c in JUDGE["calls"]}
    items, ratings = [], []
    for j in JUDGE["judgments"]:
        q = questions[j["question_id"]]
        _, messages = judge_messages(q, j["turn"] + 1, *j["responses"])
        assert messages[1]["content"] == j["user_prompt"]
        assert messages[0]["content"] == calls[(j["question_id"], j["turn"])]["system"]
        parsed = MT_BENCH_PARSER.parse(j["judgment"])
        rating = parsed[0] if parsed else MT_BENCH_PARSER.fallback_score
        assert rating == j["rating"], j["judgment"]
        items.append({"category": j["category"]})
        ratings.append(rating)
    ours = avg_rating(category_ratings(items, ratings, "faithful"))
    assert ours == pytest.approx(JUDGE["avg_rating"], abs=1e-12) and list(ours) == list(JUDGE["avg_rating"])
