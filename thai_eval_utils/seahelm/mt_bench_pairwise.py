"""SEA-HELM's legacy pairwise MT-Bench (Thai up to v1.1.2; spec ``seahelm_thai.md`` 4.8, A.2; aisingapore/SEA-HELM
@6844e6c ``src/dataloaders/judges/pairwise_dataloader.py``, ``src/metrics/llm_judges/pairwise_llm_judge_metric.py``):
a named variant beside v1.2's criteria grading (:mod:`~thai_eval_utils.seahelm.mt_bench`).

Each turn of each row is judged twice against a baseline's answer: ``baseline-before`` (A = baseline, B = model)
and ``baseline-after`` (A = model, B = baseline); ``math`` and ``reasoning`` rows use the prompts with reference
answers. A verdict is WIN / LOSE / TIE / ERROR (not exactly one label in the reply); the turn's verdict is TIE when
the first (baseline-before) is TIE or the two differ, else their common verdict. ``win_rate`` = (wins + ties / 2) /
turns, ERROR in the denominator; ``weighted_win_rate`` = 100 x the mean over categories of each category's win
rate.

The baseline is ``gpt-4.1-2025-04-14``'s answers in SEA-HELM's Hugging Face set (``aisingapore/MultiTurn-Chat-MT-Bench``),
which thai-eval cannot ship: a row must bring its own ``baselines`` (and ``references`` for math and reasoning).
The prompts are SEA-HELM's, verbatim (``judge_prompts/mt_bench_pairwise.json``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.seahelm.mt_bench import prompts

Verdict = Literal["WIN", "LOSE", "TIE", "ERROR"]
ORDERS = ("baseline-before", "baseline-after")
PRIMARY = "weighted_win_rate"
#: ``get_score``: what a turn's verdict is worth.
VERDICT_SCORE: dict[str, float] = {"WIN": 1.0, "TIE": 0.5, "LOSE": 0.0, "ERROR": 0.0}


def config() -> dict[str, Any]:
    """The pairwise task's configuration (prompts, labels, baseline, categories with reference)."""
    return prompts("mt_bench_pairwise")


def parse_verdict(
    text: str | None, order: str, labels: Mapping[str, str] | None = None, ties_allowed: bool = True
) -> Verdict:
    """A judge reply's verdict for the model (``parse_judgement``, ``pairwise_llm_judge_metric.py:176-230``): each
    label is looked for as a substring; not exactly one found -> ERROR; in ``baseline-before`` the model is B, so
    ``[[A]]`` is a LOSE and ``[[B]]`` a WIN."""
    labels = labels or config()["judgement_labels"]
    text = text or ""
    win, lose = labels["A_wins"] in text, labels["B_wins"] in text
    tie = ties_allowed and labels["Tie"] in text
    if win + lose + tie != 1:
        return "ERROR"
    if tie:
        return "TIE"
    model_is_a = order != "baseline-before"
    return "WIN" if win == model_is_a else "LOSE"


def turn_verdict(first: Verdict, second: Verdict, ties_allowed: bool = True) -> Verdict:
    """The turn's verdict from its two judgements in file order, baseline-before first (``get_final_judgement``,
    ``:232-276``): with ties allowed, TIE when the first is TIE or they differ (so WIN + ERROR is a TIE)."""
    if ties_allowed:
        return "TIE" if first == "TIE" or first != second else first
    return "ERROR" if first != second else first


def win_rate(verdicts: Sequence[str]) -> float:
    """(wins + ties / 2) / all verdicts, ERROR counted in the denominator (``get_win_rate``): the mean verdict
    score (exact: every score is a multiple of 1/2)."""
    return sum(VERDICT_SCORE[v] for v in verdicts) / len(verdicts)


def pairwise_metrics(turn_verdicts: Sequence[Sequence[str]], categories: Sequence[str]) -> dict[str, Any]:
    """SEA-HELM's metrics (``get_judge_metrics``, ``:137-174``): ``categories`` (win rate per category over all its
    turn verdicts, 0-1, sorted by name), ``win_rate`` (over every turn verdict, 0-1), ``weighted_win_rate`` (100 x
    the unweighted mean of the category win rates)."""
    by: dict[str, list[str]] = {}
    for verdicts, cat in zip(turn_verdicts, categories, strict=True):
        by.setdefault(cat, []).extend(verdicts)
    cats = {c: win_rate(v) for c, v in sorted(by.items())}
    return {
        "categories": cats,
        "win_rate": win_rate([v for vs in turn_verdicts for v in vs]),
        PRIMARY: sum(cats.values()) / len(cats) * 100,
    }


def judge_conversations(row: Mapping[str, Any], responses: Sequence[str]) -> list[tuple[str, list[dict[str, str]]]]:
    """SEA-HELM's pairwise judge requests for one row (``pairwise_dataloader.py:25-90``): per turn, baseline-before
    then baseline-after, as ``(custom id, messages)``. ``row``: ``question_id``, ``prompts`` (``{"text"}`` per turn),
    ``metadata.category``, ``baselines`` (``{baseline model: [answer per turn]}``), ``references`` when the category
    needs them; ``responses``: the model's answer per turn."""
    cfg = config()
    qid = row.get("question_id", row.get("id"))
    try:
        baseline = row["baselines"][cfg["baseline_model"]]
    except (KeyError, TypeError):
        raise ThaiEvalDataError(
            f"no {cfg['baseline_model']} baseline answers (SEA-HELM's; not shipped with thai-eval)", field="baselines"
        ) from None
    with_ref = row["metadata"]["category"] in cfg["categories_with_reference"]
    templates = cfg["judge_prompts"]["with-reference" if with_ref else "without-reference"]
    out = []
    for turn in range(len(responses)):
        for order in ORDERS:
            info: dict[str, str] = {}
            for i in range(turn + 1):
                model_a = order == "baseline-after"
                info[f"question_{i + 1}"] = row["prompts"][i]["text"]
                info[f"answer_a_{i + 1}"] = responses[i] if model_a else baseline[i]
                info[f"answer_b_{i + 1}"] = baseline[i] if model_a else responses[i]
                if with_ref:
                    info[f"ref_answer_{i + 1}"] = row["references"][i]
            system = templates[turn]["system_prompt"].format(**cfg["judgement_labels"])
            user = templates[turn]["prompt_template"].format(**info)
            messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
            out.append((f"{qid}_turn{turn + 1}_{order}", messages))
    return out
