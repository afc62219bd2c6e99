"""The effect of the order of the two references in the ThaiCLI judge prompt (arXiv 2410.04795
section 4): the same answers judged with the chosen reference first and with the rejected reference first, and
the paired difference of their item scores with a bootstrap interval
(:func:`thai_eval_utils.stats.paired.compare_paired`; docs/statistics.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from thai_eval_utils.core.protocols import ChatModel
from thai_eval_utils.stats.paired import PairedResult, compare_paired
from thai_eval_utils.thaicli.judge import JudgeRun, judge_answers
from thai_eval_utils.thaicli.scores import item_means

#: The row name of the order effect: ``diff`` = mean(rejected first) - mean(chosen first).
ORDER_METRIC = "thaicli/judge_score rejected_first - chosen_first"


def order_effect(
    chosen_first: pd.DataFrame, rejected_first: pd.DataFrame, *, level: float = 0.95, seed: int | None = 0
) -> PairedResult:
    """Paired difference (rejected first - chosen first) of the item scores of two judgings of the same answers.

    Each item's score is the mean of its judged repeats (:func:`~thai_eval_utils.thaicli.scores.item_means`);
    items unjudged in either order are left out (``n_only_a`` / ``n_only_b``). The plain mean over items is
    compared (not ThaiCLI's format average), with a BCa paired bootstrap interval and a sign-flip test.

    Args:
        chosen_first, rejected_first: ``JudgeRun.items`` of the two orders (columns id, repeat, format, theme,
            score, status).
    """
    values = []
    for items in (rejected_first, chosen_first):
        per_item = item_means(items)
        judged = per_item[per_item["status"] != "unjudged"]
        values.append(pd.DataFrame({"key": judged["id"], "value": judged["score"]}))
    return compare_paired(values[0], values[1], metric=ORDER_METRIC, test="permutation", level=level, seed=seed)


@dataclass
class OrderEffect:
    """Both orders' runs and the paired difference of their item scores (rejected first - chosen first)."""

    chosen_first: JudgeRun
    rejected_first: JudgeRun
    effect: PairedResult

    def __str__(self) -> str:
        return str(self.effect)


def judge_both_orders(answers: pd.DataFrame, judge: ChatModel, **kwargs: Any) -> OrderEffect:
    """Judge ``answers`` with each reference order (``judge_answers(..., reference_order=...)``, the other
    keyword arguments passed on, e.g. ``repeats``) and measure the order's effect (:func:`order_effect`).

    The chosen-first run is the ordinary run (the same cache keys), so an existing judging is reused.
    """
    runs = {
        order: judge_answers(answers, judge, reference_order=order, **kwargs)
        for order in ("chosen_first", "rejected_first")
    }
    effect = order_effect(runs["chosen_first"].items, runs["rejected_first"].items)
    return OrderEffect(runs["chosen_first"], runs["rejected_first"], effect)
