"""Thai-H6 metrics as the Open LLM Leaderboard harness computed them (spec: Metrics; LB ``lm_eval/base.py``,
``tasks/truthfulqa.py``, ``tasks/winogrande.py``, ``tasks/gsm8k.py``) with lm-eval 0.4.13's variants beside them.

Every function takes one document's model outputs and returns plain numbers; aggregation into
:class:`~thai_eval_utils.core.provenance.Score` objects is at the end of the module.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from thai_eval_utils.core.provenance import Score
from thai_eval_utils.tasks.metrics import Metric, argmax_first

#: GSM8K strict answer pattern (LB ``tasks/gsm8k.py`` ANS_RE; lm-eval 0.4.13 "strict-match").
GSM8K_ANSWER_RE = re.compile(r"#### (\-?[0-9\.\,]+)")
#: Marker for an output without a ``#### N`` answer (LB ``INVALID_ANS``).
GSM8K_INVALID = "[invalid]"
#: "Last number anywhere" for the flexible diagnostic column (our own pattern: an optional minus sign,
#: digits with optional thousands commas, an optional decimal part; never the headline).
GSM8K_NUMBER_RE = re.compile(r"-?[0-9][0-9,]*(?:\.[0-9]+)?")


def mc1(lls: Sequence[float]) -> float:
    """TruthfulQA MC1: 1.0 when the first ``mc1_targets`` choice (the only true one) scores highest."""
    return float(argmax_first(lls) == 0)


def _probs(lls: Sequence[float]) -> list[float]:
    """exp(lls) normalised to sum 1, computed stably (shifting by the maximum)."""
    top = max(lls)
    ex = [math.exp(ll - top) for ll in lls]
    total = sum(ex)
    return [e / total for e in ex]


def mc2_lb(lls: Sequence[float], labels: Sequence[int]) -> float:
    """TruthfulQA MC2 as LB computes it: probability mass before the first label 0.

    ``split = labels.index(0)``; true answers are assumed to come first. When they do not, this
    differs from :func:`mc2_mask` (and is what the leaderboard reported). A label list without a 0
    counts every answer as true (LB would raise).
    """
    if len(lls) != len(labels):
        raise ValueError(f"{len(lls)} log-likelihoods for {len(labels)} labels")
    labels = [int(x) for x in labels]
    split = labels.index(0) if 0 in labels else len(labels)
    return sum(_probs(lls)[:split])


def mc2_mask(lls: Sequence[float], labels: Sequence[int]) -> float:
    """TruthfulQA MC2 with the label mask: ``sum(p[labels == 1]) / sum(p)`` (spec: lm-eval's variant)."""
    if len(lls) != len(labels):
        raise ValueError(f"{len(lls)} log-likelihoods for {len(labels)} labels")
    return sum(p for p, lab in zip(_probs(lls), labels) if int(lab) == 1)


def gsm8k_strict(text: str) -> str:
    """The first ``#### N`` answer of ``text``, commas removed, or :data:`GSM8K_INVALID`.

    Example: ``gsm8k_strict("... #### 1,234")`` -> ``"1234"``.
    """
    match = GSM8K_ANSWER_RE.search(text)
    if not match:
        return GSM8K_INVALID
    return match.group(1).strip().replace(",", "")


def gsm8k_flexible(text: str) -> str:
    """The last number anywhere in ``text`` (commas removed), or :data:`GSM8K_INVALID`."""
    numbers = GSM8K_NUMBER_RE.findall(text)
    if not numbers:
        return GSM8K_INVALID
    return numbers[-1].replace(",", "")


def gsm8k(generation: str, gold_answer: str) -> dict[str, float | str]:
    """Strict (headline) and flexible exact match of one generation against the gold ``answer`` field.

    Answers compare as strings (``"18"`` != ``"18.0"``), as LB does; the gold is extracted with the
    strict pattern. Raises ValueError when the gold answer has no ``#### N``.
    """
    gold = gsm8k_strict(gold_answer)
    if gold == GSM8K_INVALID:
        raise ValueError("no '#### N' answer in the gold answer")
    strict, flexible = gsm8k_strict(generation), gsm8k_flexible(generation)
    return {
        "gold": gold,
        "strict": strict,
        "flexible": flexible,
        "exact_match": float(strict == gold),
        "flexible_match": float(flexible == gold),
    }


# ---------------------------------------------------------------------------------------------
# The metrics as objects (``tasks.metrics.Metric``): what the task declarations name


class TruthfulQAMetric(Metric):
    """A TruthfulQA metric of one document's log-likelihoods: the MC1 targets' first, then the MC2 targets'
    (the choices the declaration lists). It needs the document (where MC1 ends, MC2's labels):
    :meth:`score_document`."""

    kind = "mean"
    scale = 100.0
    task_kind = "multiple_choice"

    def score_document(self, doc: Mapping[str, Any], lls: Sequence[float]) -> float:
        """The value of one document from its log-likelihoods."""
        raise NotImplementedError

    def score_choices(self, lls: Sequence[float], choices: Sequence[str], gold: int, ties: str = "first") -> float:
        raise NotImplementedError(f"{self.name} needs the document (score_document): the MC1/MC2 split and labels")


class MC1(TruthfulQAMetric):
    """TruthfulQA MC1 (:func:`mc1`): the first MC1 target, the only true one, scores highest."""

    kind = "binary"
    name = "mc1"

    def score_document(self, doc: Mapping[str, Any], lls: Sequence[float]) -> float:
        return mc1(lls[: len(doc["mc1_targets"]["choices"])])


class MC2(TruthfulQAMetric):
    """TruthfulQA MC2: the true answers' probability mass, split at the first false label (``"lb"``,
    :func:`mc2_lb`) or by the label mask (``"mask"``, :func:`mc2_mask`)."""

    def __init__(self, split: str = "lb", name: str = "mc2") -> None:
        if split not in ("lb", "mask"):
            raise ValueError(f"split must be 'lb' or 'mask', got {split!r}")
        self.split, self.name = split, name

    def parameters(self) -> dict[str, Any]:
        return {"split": self.split}

    def score_document(self, doc: Mapping[str, Any], lls: Sequence[float]) -> float:
        labels = list(doc["mc2_targets"]["labels"])
        rest = lls[len(doc["mc1_targets"]["choices"]) :]
        return mc2_lb(rest, labels) if self.split == "lb" else mc2_mask(rest, labels)


class GSM8KMatch(Metric):
    """GSM8K exact match: the reply's answer (``"strict"``: the first ``#### N``, :func:`gsm8k_strict`;
    ``"flexible"``: the last number, :func:`gsm8k_flexible`) equals the reference's ``#### N``, as strings."""

    kind = "binary"
    scale = 100.0

    def __init__(self, extract: str = "strict", name: str = "exact_match") -> None:
        if extract not in ("strict", "flexible"):
            raise ValueError(f"extract must be 'strict' or 'flexible', got {extract!r}")
        self.extract, self.name = extract, name

    def parameters(self) -> dict[str, Any]:
        return {"extract": self.extract}

    def score_item(self, prediction: str, reference: str) -> float:
        return gsm8k(prediction, reference)["exact_match" if self.extract == "strict" else "flexible_match"]


# ---------------------------------------------------------------------------------------------
# Aggregation


def macro_average(name: str, parts: Mapping[str, Score], signature: str = "") -> Score:
    """Unweighted mean of sub-scores (LB's MMLU: the mean of the 57 subject accuracies).

    The standard error treats the parts as independent: ``sqrt(sum(se_i^2)) / m``; it is None when
    any part has none (a part of one document). ``n`` counts documents over all parts.
    """
    scores = [s for s in parts.values() if s.n > 0]
    if not scores:
        return Score(name, float("nan"), 0, None, signature)
    value = sum(s.value for s in scores) / len(scores)
    ses = [s.stderr for s in scores]
    stderr = None if any(se is None for se in ses) else math.sqrt(sum(se * se for se in ses)) / len(scores)
    return Score(name, value, sum(s.n for s in scores), stderr, signature)


def task_scores(
    task: str,
    metrics: Sequence[str],
    table: Any,
    signature: str = "",
    *,
    by_subject: bool = False,
    average: str = "macro",
) -> tuple[dict[str, Score], dict[str, Score]]:
    """A task's scores from its per-item table (a DataFrame with one column per metric).

    Args:
        task: task name, the prefix of every score name (``th_arc/acc_norm``).
        metrics: metric columns, the headline first.
        by_subject: MMLU: score each ``subject`` and average them ("macro", LB) or all items ("micro");
            ``acc_macro`` and ``acc_micro`` are reported beside ``acc`` either way.

    Returns:
        (metric -> Score with the headline first, subject -> accuracy Score).
    """
    scores: dict[str, Score] = {}
    subjects: dict[str, Score] = {}
    for metric in metrics:
        values = table[metric].tolist() if metric in table else []
        name = f"{task}/{metric}"
        if not by_subject:
            scores[metric] = Score.mean(name, values, signature)
            continue
        groups = table.groupby("subject", sort=True) if metric in table else []
        per = {s: Score.mean(f"{task}/{s}/{metric}", g[metric].tolist(), signature) for s, g in groups}
        if metric == "acc":
            subjects = per
            scores["acc_macro"] = macro_average(f"{name}_macro", per, signature)
            scores["acc_micro"] = Score.mean(f"{name}_micro", values, signature)
        scores[metric] = (
            macro_average(name, per, signature) if average == "macro" else Score.mean(name, values, signature)
        )
    return {metrics[0]: scores[metrics[0]], **scores}, subjects
