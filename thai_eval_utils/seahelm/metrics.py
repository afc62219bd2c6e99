"""SEA-HELM's Thai metrics on extracted answers (spec ``seahelm_thai.md`` 4.0, 4.2-4.5), per run.

Each ``*_metrics`` function takes one run's gold labels and replies and returns ``(task metrics, per-item
values)`` with SEA-HELM's keys: the task metrics as its results JSON holds them (6.2) and the per-item values as its
``individual_scores`` hold them (the values the aggregation over runs reads, 5.2).
"""

from __future__ import annotations

import string
import unicodedata
import warnings
from collections import Counter
from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np

from thai_eval_utils.seahelm.extract import NULL_LABEL, extract_choice, extract_text

_PUNCT = set(string.punctuation)


def normalize_score(score: float, lo: float, hi: float) -> float:
    """``max((score - lo) / (hi - lo), 0)``, 0 when ``lo == hi``, no upper clip (``seahelm_metric.py:199-216``)."""
    if lo == hi:
        return 0.0
    return max((score - lo) / (hi - lo), 0)


# ------------------------------------------------------------------------------------------ multiple choice
def f1_acc_metrics(
    labels: Sequence[str], replies: Sequence[str | None], answer_tag: str
) -> tuple[dict[str, Any], list[float], list[str]]:
    """F1AccMetric (``src/metrics/f1_acc_metric.py:88-139``): predictions (``extract_choice``) against the gold
    labels present; ``accuracy`` = 100 x balanced accuracy (mean recall over gold classes; ``"null"`` and other
    non-gold predictions are wrong), ``normalized_accuracy`` = 100 x max((acc - 1/K)/(1 - 1/K), 0) with K the
    distinct gold labels, ``macro_f1`` (sklearn macro-F1 over gold and predicted labels, ``null`` included, P22),
    ``null_weighted_f1`` = macro-F1 over the gold labels x (1 - nulls/n), ``null_count``. Per item: 1 if the
    prediction is the gold label, else 0. Returns (metrics, per-item values, predictions)."""
    from sklearn.metrics import balanced_accuracy_score, f1_score

    gold = [str(x) for x in labels]
    unique = list(dict.fromkeys(gold))
    preds = [extract_choice(r, answer_tag, unique) for r in replies]
    per_item = [float(p == g) for p, g in zip(preds, gold, strict=True)]
    null_count = sum(p == NULL_LABEL for p in preds)
    with warnings.catch_warnings():  # sklearn warns when a prediction names no gold class; SEA-HELM ignores it
        warnings.simplefilter("ignore")
        acc = float(balanced_accuracy_score(gold, preds))
        avg_f1 = float(f1_score(gold, preds, labels=unique, average="macro"))
        macro_f1 = float(f1_score(gold, preds, average="macro"))
    k = len({g.lower() for g in unique})
    metrics = {
        "accuracy": 100 * acc,
        "macro_f1": 100 * macro_f1,
        "null_weighted_f1": 100 * avg_f1 * (1 - null_count / len(preds)),
        "normalized_accuracy": 100 * normalize_score(acc, 1 / k, 1),
        "null_count": null_count,
    }
    return metrics, per_item, preds


# ------------------------------------------------------------------------------------------------------- QA
def thai_words(text: str) -> str:
    """PyThaiNLP newmm words joined by spaces (``question_answering.py:178-188``; ``keep_whitespace=True``)."""
    return " ".join(_newmm()(text, engine="newmm"))


def _qa_normalize(text: str) -> str:
    """SQuAD normalisation as SEA-HELM has it (``question_answering.py:51-81``): lowercase, delete ASCII
    punctuation, collapse whitespace."""
    return " ".join("".join(ch for ch in text.lower() if ch not in _PUNCT).split())


def squad_f1(prediction: str, truth: str) -> float:
    """Token F1 of the normalised texts (``question_answering.py:91-110``)."""
    pred, gold = _qa_normalize(prediction).split(), _qa_normalize(truth).split()
    same = sum((Counter(pred) & Counter(gold)).values())
    if same == 0:
        return 0
    p, r = same / len(pred), same / len(gold)
    return 2 * p * r / (p + r)


def qa_metrics(
    labels: Sequence[Sequence[str]], replies: Sequence[str | None], answer_tag: str
) -> tuple[dict[str, Any], list[float], list[str]]:
    """QuestionAnsweringMetric for Thai (``question_answering.py:204-272``): prediction and ``label[0]`` as newmm
    words, then SQuAD F1 / exact match; ``f1`` and ``normalized_f1`` = 100 x mean F1, ``exact_match``,
    ``found_in_prediction`` (``label[0].lower().strip(".")`` a substring of the prediction's), ``null_count``
    (empty predictions). Per item: F1 on 0-1."""
    preds = [extract_text(r, answer_tag) for r in replies]
    refs = [thai_words(label[0]) for label in labels]
    toks = [thai_words(p) for p in preds]
    f1s = [float(squad_f1(p, g)) for p, g in zip(toks, refs, strict=True)]
    em = [float(_qa_normalize(p) == _qa_normalize(g)) for p, g in zip(toks, refs, strict=True)]
    n = len(preds)
    f1 = 100.0 * sum(f1s) / n
    found = sum(label[0].lower().strip(".") in p.lower().strip(".") for label, p in zip(labels, preds))
    metrics = {
        "exact_match": 100.0 * sum(em) / n,
        "f1": f1,
        "normalized_f1": normalize_score(f1, 0, 1),
        "found_in_prediction": found * 100 / n,
        "null_count": sum(p == "" for p in preds),
    }
    return metrics, [normalize_score(x, 0, 1) for x in f1s], preds


# ------------------------------------------------------------------------------------------------- ROUGE-L
def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    return (
        33 <= cp <= 47
        or 58 <= cp <= 64
        or 91 <= cp <= 96
        or 123 <= cp <= 126
        or unicodedata.category(ch).startswith("P")
    )


def _clean(text: str) -> str:
    """BasicTokenizer._clean_text: drop U+0000, U+FFFD and category C* (tab/CR/LF kept, then spaces; U+200B goes)."""
    out = []
    for ch in text:
        if ch == "\x00" or ch == "\ufffd" or (ch not in "\t\n\r" and unicodedata.category(ch).startswith("C")):
            continue
        out.append(" " if ch in " \t\n\r" or unicodedata.category(ch) == "Zs" else ch)
    return "".join(out)


def basic_tokens(text: str) -> list[str]:
    """The vendored rouge_score BasicTokenizer (``src/rouge_score/tokenizers.py:104-165,204-227``): clean, split on
    whitespace, split on punctuation and drop it: the runs of what is neither."""
    return "".join(" " if _is_punctuation(ch) else ch for ch in _clean(text)).split()


@cache
def _newmm() -> Any:
    from pythainlp.tokenize import word_tokenize

    return word_tokenize


def rouge_tokens(text: str) -> list[str]:
    """ROUGE-L's Thai tokens (``rouge_scorer.py:56-90`` MultiTokenizer(lang="thai"), ``tokenization_wrapper.py``):
    lowercase, strip, BasicTokenizer, rejoin with single spaces, newmm (spaces are tokens), empty tokens dropped.
    (SEA-HELM falls back to pyonmttok when newmm finds no token in a non-empty text; newmm always finds one.)"""
    text = " ".join(basic_tokens(text.lower().strip()))
    return [t for t in _newmm()(text, engine="newmm") if t] if text else []


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence (``rouge_scorer.py:_lcs_table``)."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, 1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def rouge_l(target: str, prediction: str) -> tuple[float, float, float]:
    """(precision, recall, F) of ROUGE-L on Thai tokens; all 0 when either side has no token
    (``rouge_scorer.py:247-268``)."""
    ref, hyp = rouge_tokens(target), rouge_tokens(prediction)
    if not ref or not hyp:
        return 0.0, 0.0, 0.0
    lcs = lcs_length(ref, hyp)
    p, r = lcs / len(hyp), lcs / len(ref)
    return p, r, (2 * p * r / (p + r) if p + r > 0 else 0.0)


def bootstrap_mid(matrix: np.ndarray, n_samples: int = 1000, seed: int = 4156) -> np.ndarray:
    """rouge_score's BootstrapAggregator mid (``src/rouge_score/scoring.py:77-162``): the legacy global RNG seeded
    4156, ``n_samples`` resamples of the rows with ``np.random.choice``, the median (linear interpolation) of the
    column means. A local ``RandomState`` gives the same stream without touching numpy's global state."""
    rng = np.random.RandomState(seed)
    means = np.zeros((n_samples, matrix.shape[1]))
    for i in range(n_samples):
        idx = rng.choice(np.arange(matrix.shape[0]), size=matrix.shape[0])
        means[i, :] = np.mean(matrix[idx, :], axis=0)
    return np.percentile(means, 50, axis=0)


def summarization_metrics(
    labels: Sequence[str], replies: Sequence[str | None], answer_tag: str
) -> tuple[dict[str, Any], list[float], list[str]]:
    """SummarizationMetric (``summarization.py:60-133``): ROUGE-L per item; corpus precision/recall/F = 100 x the
    bootstrap mid; ``normalized_rougel_f1`` = 100 x mid F; ``null_count``. Per item: 100 x F."""
    preds = [extract_text(r, answer_tag) for r in replies]
    scores = np.array([rouge_l(ref, pred) for ref, pred in zip(labels, preds, strict=True)], dtype=float)
    mid = [float(x) for x in bootstrap_mid(scores)]
    metrics = {
        "null_count": sum(p == "" for p in preds),
        "rougel_precision": 100 * mid[0],
        "rougel_recall": 100 * mid[1],
        "rougel_f1": 100 * mid[2],
        "normalized_rougel_f1": 100 * normalize_score(mid[2], 0, 1),
    }
    return metrics, [float(normalize_score(100 * f, 0, 1)) for f in scores[:, 2]], preds
