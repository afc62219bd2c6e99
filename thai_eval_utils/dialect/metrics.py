"""Dialect-benchmark metrics as the paper's code computes them (arXiv 2504.05898, section 3; its
``evaluation/metrics_utils.py``): BLEU and ROUGE-L on pythainlp newmm tokens, sacrebleu BLEU/chrF
beside them, ΔDiff, the Table 1 layout and a parameterised Central/dialect word overlap.

Tokenizer. BLEU and ROUGE-L take a ``tokenizer`` name from :mod:`thai_eval_utils.dialect.tokenizers`; the
default ``newmm`` (whitespace runs kept as tokens, pythainlp 5.0.4) is the paper's, and the name and the
pythainlp version are part of every signature.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
from sacrebleu.metrics import CHRF

from thai_eval_utils.core.provenance import Score
from thai_eval_utils.core.records import require_texts
from thai_eval_utils.dialect.data import check_score_rows
from thai_eval_utils.tasks.metrics import Bleu, ChrF, Metric, RougeL, SacrebleuCorpus
from thai_eval_utils.dialect.tokenizers import (
    DEFAULT_TOKENIZER,
    get_tokenizer,
    pythainlp_version,
)

#: Dialect keys and the names the paper's Table 1 prints.
DIALECT_NAMES = {"center": "Central", "east": "Isan", "north": "Lanna", "south": "Dambro"}
#: Paper Table 1: task family -> (headline metric, column prefix). QA/summarisation: ROUGE-L; translation: BLEU.
TABLE1_TASKS = {
    "qa": ("rougeL", "qa_rougeL"),
    "summarization": ("rougeL", "summarization_rougeL"),
    "translation_en_to_dialect": ("bleu", "translation_en_to_dialect_bleu"),
    "translation_dialect_to_en": ("bleu", "translation_dialect_to_en_bleu"),
}


def table_task(task: str) -> str:
    """Map a benchmark task name to its Table 1 family, e.g. ``translation_eng_east`` -> ``translation_en_to_dialect``."""
    if task.startswith("translation_eng_"):
        return "translation_en_to_dialect"
    if task.startswith("translation_") and task.endswith("_eng"):
        return "translation_dialect_to_en"
    return task


def target_language(task: str) -> str:
    """``"en"`` for dialect->English translation (English references), else ``"th"``."""
    return "en" if table_task(task) == "translation_dialect_to_en" else "th"


def _check_pair(hypotheses: Sequence[str | None], references: Sequence[str | None]) -> tuple[list[str], list[str]]:
    """Non-empty, equal-length lists with None as "" (the paper's code does the same)."""
    if len(hypotheses) == 0 or len(hypotheses) != len(references):
        counts = f"(got {len(hypotheses)}, {len(references)})"
        raise ValueError(f"need equal, non-zero numbers of hypotheses and references {counts}")
    require_texts(hypotheses, field="hypothesis"), require_texts(references, field="reference")  # NaN is no text
    return ["" if h is None else str(h) for h in hypotheses], ["" if r is None else str(r) for r in references]


# ------------------------------------------------------------------------------------------- BLEU
# Hand-written on purpose: the paper called HuggingFace ``evaluate``'s "bleu" (tensorflow/nmt
# compute_bleu), but ``evaluate.load`` downloads the metric script at run time and this toolkit runs
# offline. The formula (facts of nmt/scripts/bleu.py): clipped n-gram matches and possible n-grams
# summed over the corpus, p_n = matches/possible (0 when none possible), geometric mean of p_1..p_4
# (0 if any p_n is 0), ratio = c/r, BP = 1 if ratio > 1 else exp(1 - 1/ratio) = exp(1 - r/c).
# c = 0 (all hypotheses empty) makes nmt divide by zero; the paper's code catches that and reports 0.


@dataclass(frozen=True)
class BleuResult:
    """Corpus BLEU with its parts: ``score`` (x100), n-gram ``precisions``, ``bp``, lengths, counts."""

    score: float
    precisions: tuple[float, ...]
    bp: float
    ratio: float
    hyp_len: int
    ref_len: int
    matches: tuple[int, ...]
    possible: tuple[int, ...]
    signature: str = ""

    def to_dict(self) -> dict[str, object]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}

    def __str__(self) -> str:
        p = "/".join(f"{100 * x:.1f}" for x in self.precisions)
        return f"BLEU = {self.score:.2f} {p} (BP = {self.bp:.3f} ratio = {self.ratio:.3f} hyp_len = {self.hyp_len} ref_len = {self.ref_len}) {self.signature}"


def _ngrams(tokens: Sequence[str], max_order: int) -> Counter:
    counts: Counter = Counter()
    for n in range(1, max_order + 1):
        for i in range(len(tokens) - n + 1):
            counts[tuple(tokens[i : i + n])] += 1
    return counts


def bleu_from_statistics(totals: Sequence[int] | np.ndarray, *, signature: str = "") -> BleuResult:
    """Corpus BLEU (the formula in the comment above) from the column sums of :meth:`PaperBleu.statistics`."""
    counts = [int(v) for v in totals]  # Python ints: the same arithmetic whether summed by numpy or by hand
    max_order = (len(counts) - 2) // 2
    c, r, matches, possible = counts[0], counts[1], counts[2 : 2 + max_order], counts[2 + max_order :]
    precisions = tuple(m / p if p > 0 else 0.0 for m, p in zip(matches, possible))
    geo_mean = math.exp(sum(math.log(p) for p in precisions) / max_order) if min(precisions) > 0 else 0.0
    ratio = c / r if r > 0 else float("inf")
    # c = 0: nmt raises ZeroDivisionError; the paper's code turns that into 0
    bp = 0.0 if c == 0 else 1.0 if ratio > 1.0 else math.exp(1.0 - 1.0 / ratio)
    return BleuResult(100.0 * geo_mean * bp, precisions, bp, ratio, c, r, tuple(matches), tuple(possible), signature)


def bleu_details(
    hypotheses: Sequence[str | None],
    references: Sequence[str | None],
    *,
    max_order: int = 4,
    tokenizer: str = DEFAULT_TOKENIZER,
) -> BleuResult:
    """Corpus BLEU of the paper (see the comment above) with all its parts, on the words of ``tokenizer``
    (a name of :mod:`~thai_eval_utils.dialect.tokenizers`; its signature ends the BLEU signature)."""
    metric = PaperBleu(tokenizer, max_order)
    return bleu_from_statistics(metric.statistics(hypotheses, references).sum(axis=0), signature=metric.signature())


class PaperBleu(Metric):
    """The paper's corpus BLEU (x100) as a declared task's metric object: per-sentence statistics
    (:meth:`statistics`) and the score from their sums, so a bootstrap (``stats.corpus``, the runner's
    intervals) sums resampled rows instead of re-tokenising."""

    kind = "corpus"

    def __init__(self, tokenizer: str = DEFAULT_TOKENIZER, max_order: int = 4, name: str = "bleu") -> None:
        self.tokenizer, self.max_order, self.name = tokenizer, max_order, name

    def parameters(self) -> dict[str, Any]:
        return {"tokenizer": self.tokenizer, "max_order": self.max_order}

    def signature(self) -> str:
        return f"bleu|nmt|max_order:{self.max_order}|smooth:none|{get_tokenizer(self.tokenizer).signature}"

    def statistics(self, hypotheses: Sequence[str | None], references: Sequence[str | None]) -> np.ndarray:
        """Per sentence, the sufficient statistics of corpus BLEU (sacrebleu's design): an int64 array of shape
        ``(n, 2 + 2 * max_order)`` holding hypothesis length, reference length, the clipped n-gram matches for
        n = 1..max_order, then the possible n-grams for n = 1..max_order. Corpus BLEU depends on the sentences only
        through the column sums (:func:`bleu_from_statistics`), so a bootstrap resamples rows, not texts."""
        hyps, refs = _check_pair(hypotheses, references)
        tok, k = get_tokenizer(self.tokenizer), self.max_order
        out = np.zeros((len(hyps), 2 + 2 * k), dtype=np.int64)
        for i, (hyp, ref) in enumerate(zip(hyps, refs)):
            h_tokens, r_tokens = tok.tokenize(hyp), tok.tokenize(ref)
            out[i, 0], out[i, 1] = len(h_tokens), len(r_tokens)
            for ngram, count in (_ngrams(h_tokens, k) & _ngrams(r_tokens, k)).items():  # clipped counts
                out[i, 1 + len(ngram)] += count
            out[i, 2 + k :] = [max(len(h_tokens) - n + 1, 0) for n in range(1, k + 1)]
        return out

    def score(self, totals: np.ndarray) -> float:
        return bleu_from_statistics(totals).score


#: The paper's BLEU (newmm words, up to 4-grams) for the corpus bootstraps of ``compare`` and ``stats``.
PAPER_BLEU = PaperBleu()


def bleu(
    hypotheses: Sequence[str | None], references: Sequence[str | None], *, tokenizer: str = DEFAULT_TOKENIZER
) -> float:
    """Corpus BLEU x100 on ``tokenizer``'s words (default newmm: exactly as the paper's code), one reference each.

    Example: ``bleu(["แมว กิน ปลา"], ["แมว กิน ปลา"])`` -> ``100.0``.
    """
    return bleu_details(hypotheses, references, tokenizer=tokenizer).score


# ---------------------------------------------------------------------------------------- ROUGE-L


class PaperRougeL(RougeL):
    """The paper's per-item ROUGE-L F1 x100 as a declared task's metric object: rouge-score on the words of a
    :mod:`~thai_eval_utils.dialect.tokenizers` tokenizer (newmm with whitespace kept, the paper's; never
    rouge-score's own tokenizer on Thai: that one lowercases and deletes every character outside ``[a-z0-9]``)."""

    def __init__(self, tokenizer: str = DEFAULT_TOKENIZER, name: str = "rougeL") -> None:
        self.tokenizer, self.name = tokenizer, name

    @property
    def _split(self) -> Callable[[str], list[str]]:
        """The tokenizer's words, the tokenizer built on first use (a pythainlp one warns under another version)."""
        return get_tokenizer(self.tokenizer).tokenize

    def signature(self) -> str:
        return f"rougeL|rouge-score|f1-mean|{get_tokenizer(self.tokenizer).signature}"


def rouge_l_scores(
    hypotheses: Sequence[str | None], references: Sequence[str | None], *, tokenizer: str = DEFAULT_TOKENIZER
) -> list[float]:
    """Per-item ROUGE-L F1 x100 of :class:`PaperRougeL` on ``tokenizer``'s words (default newmm, the paper's)."""
    hyps, refs = _check_pair(hypotheses, references)
    metric = PaperRougeL(tokenizer)
    return [metric.score_item(hyp, ref) for hyp, ref in zip(hyps, refs)]


def rouge_l(
    hypotheses: Sequence[str | None], references: Sequence[str | None], *, tokenizer: str = DEFAULT_TOKENIZER
) -> float:
    """Mean ROUGE-L F1 x100 over items (the headline; deterministic)."""
    scores = rouge_l_scores(hypotheses, references, tokenizer=tokenizer)
    return sum(scores) / len(scores)


# --------------------------------------------------------------------------------- sacrebleu
def _sacrebleu_signature(metric: Any) -> str:
    """sacrebleu's signature of ``metric`` (sacrebleu knows the number of references only once it has scored
    something: one reference each here)."""
    metric.corpus_score(["a"], [["a"]])
    return str(metric.get_signature())


class PaperSacreBleu(Bleu):
    """sacrebleu corpus BLEU beside the paper's, as a metric object: pretokenised by ``tokenizer`` (its tokens
    joined by single spaces, whitespace tokens dropped) with ``tokenize="none"`` for Thai targets, sacrebleu's
    ``13a`` for English ones; its signature is sacrebleu's plus the pretokenizer."""

    def __init__(self, target_lang: str = "th", tokenizer: str = DEFAULT_TOKENIZER, name: str = "sacrebleu") -> None:
        self.target_lang, self.tokenizer, self.name = target_lang, tokenizer, name

    def parameters(self) -> dict[str, Any]:
        return {"target_lang": self.target_lang, "tokenizer": self.tokenizer}

    @cached_property
    def corpus(self) -> SacrebleuCorpus:
        """The sacrebleu metric by sufficient statistics (its tokenizer built on first use)."""
        if self.target_lang == "en":
            return SacrebleuCorpus("bleu", options=(("tokenize", "13a"),))
        tok = get_tokenizer(self.tokenizer)
        return SacrebleuCorpus("bleu", prepare=lambda text: " ".join(t for t in tok.tokenize(text) if t.strip()))

    def signature(self) -> str:
        extra = ""
        if self.target_lang != "en":
            tok = get_tokenizer(self.tokenizer)
            extra = f"|pretok:{tok.name}-nows" + (f"|pythainlp:{pythainlp_version()}" if tok.uses_pythainlp else "")
        return f"BLEU|{_sacrebleu_signature(self.corpus._metric())}{extra}"


class PaperChrF(ChrF):
    """sacrebleu corpus chrF (``word_order=2``: chrF++) on the raw texts (chrF ignores whitespace), with
    sacrebleu's own signature."""

    def __init__(self, word_order: int = 0, name: str = "chrf") -> None:
        super().__init__(word_order=word_order, name=name)

    def signature(self) -> str:
        return f"chrF|{_sacrebleu_signature(CHRF(word_order=self.word_order))}"


def metric_score(metric: Metric, hypotheses: Sequence[str | None], references: Sequence[str | None]) -> Score:
    """One metric object's score of a task's outputs (None counts as ""), with the metric's signature: a per-item
    metric's mean with its standard error, a corpus metric's value."""
    hyps, refs = _check_pair(hypotheses, references)
    if metric.kind == "corpus":
        return Score(metric.name, metric(hyps, refs), len(hyps), None, metric.signature())
    return Score.mean(metric.name, [metric.score_item(h, r) for h, r in zip(hyps, refs)], metric.signature())


def task_metrics(task: str, *, tokenizer: str = DEFAULT_TOKENIZER) -> tuple[Metric, ...]:
    """The metric objects of one benchmark task (its declaration's): ``rougeL`` and ``bleu`` (the paper's, on
    ``tokenizer``'s words), ``sacrebleu`` (``13a`` when the reference is English) and ``chrf``."""
    return (PaperRougeL(tokenizer), PaperBleu(tokenizer), PaperSacreBleu(target_language(task), tokenizer), PaperChrF())


def task_scores(
    task: str, hypotheses: Sequence[str | None], references: Sequence[str | None], *, tokenizer: str = DEFAULT_TOKENIZER
) -> list[Score]:
    """Every metric of one task's outputs (:func:`task_metrics`): ``rougeL``, ``bleu`` (paper), ``sacrebleu``,
    ``chrf``; the word-based ones on ``tokenizer``'s words (default newmm, the paper's)."""
    return [metric_score(m, hypotheses, references) for m in task_metrics(task, tokenizer=tokenizer)]


# ------------------------------------------------------------------------------------ ΔDiff, Table 1
def delta_diff(scores: pd.DataFrame) -> pd.DataFrame:
    """ΔDiff = Central score minus dialect score for the same model, task family and metric.

    Args:
        scores: tidy scores with columns ``model, dialect, task, metric, value`` (``task`` may be a
            benchmark name such as ``translation_eng_east``; it is mapped with :func:`table_task`).

    Returns:
        Columns ``model, dialect, task, metric, central, value, delta`` for every non-Central dialect
        that has a Central counterpart (positive delta = worse in the dialect).
    """
    df = scores.assign(task=scores["task"].map(table_task))[["model", "dialect", "task", "metric", "value"]]
    check_score_rows(df)  # known dialects, finite values, no duplicate (one Central value per model/task/metric)
    central = df[df["dialect"] == "center"].drop(columns="dialect").rename(columns={"value": "central"})
    other = df[df["dialect"] != "center"]
    out = other.merge(central, on=["model", "task", "metric"], how="inner")
    out["delta"] = out["central"] - out["value"]
    return out[["model", "dialect", "task", "metric", "central", "value", "delta"]].reset_index(drop=True)


def table1_layout(scores: pd.DataFrame) -> pd.DataFrame:
    """Scores and ΔDiff in the paper's Table 1 layout: one row per (model, dialect).

    Columns: ``model, dialect, qa_rougeL, qa_delta, summarization_rougeL, summarization_delta,
    translation_en_to_dialect_bleu, translation_en_to_dialect_delta, translation_dialect_to_en_bleu,
    translation_dialect_to_en_delta``; Central rows have no delta (NaN). Dialects are printed as
    Central/Isan/Lanna/Dambro.
    """
    df = scores.assign(task=scores["task"].map(table_task))
    deltas = delta_diff(scores)  # refuses duplicates: each (model, dialect, task, metric) below has one value
    value, delta = (
        {k: float(v) for k, v in zip(zip(t["model"], t["dialect"], t["task"], t["metric"]), t[column])}
        for t, column in ((df, "value"), (deltas, "delta"))
    )
    rows = []
    for model, dialect in dict.fromkeys(zip(df["model"], df["dialect"])):  # groupby order: first appearance
        row: dict[str, object] = {"model": model, "dialect": dialect}
        for fam, (metric, col) in TABLE1_TASKS.items():
            key = (model, dialect, fam, metric)
            row[col], row[f"{fam}_delta"] = value.get(key, float("nan")), delta.get(key, float("nan"))
        rows.append(row)
    out = pd.DataFrame(rows)
    order = {d: i for i, d in enumerate(DIALECT_NAMES)}
    out = out.sort_values(["model", "dialect"], key=lambda s: s.map(order) if s.name == "dialect" else s, kind="stable")
    out["dialect"] = out["dialect"].map(lambda d: DIALECT_NAMES.get(d, d))
    return out.reset_index(drop=True)


# ------------------------------------------------------------------------------------ word overlap
def word_overlap(
    dialect_texts: Sequence[str],
    central_texts: Sequence[str],
    *,
    unit: str = "type",
    level: str = "sentence",
    denominator: str = "dialect",
    tokenizer: str = DEFAULT_TOKENIZER,
) -> float:
    """Share of dialect words (``tokenizer``'s, default newmm; whitespace tokens dropped) found in the parallel
    Central text.

    The paper's Table 5 reports 0.90-0.98 without defining the measure; this is our definition.
    For each parallel pair, ``unit="type"`` counts distinct dialect words present among the Central
    words; ``unit="token"`` counts every dialect token occurrence whose word occurs in the Central text.
    ``level="sentence"`` averages the per-pair shares (pairs with no dialect words are skipped);
    ``level="corpus"`` sums matches and totals over all pairs (micro average). ``denominator="central"``
    swaps the roles (share of Central words found in the dialect text).

    Example: ``word_overlap(["ไป กิน ข้าว เด้อ"], ["ไป กิน ข้าว นะ"])`` -> ``0.75``.
    """
    if not (unit in ("type", "token") and level in ("sentence", "corpus") and denominator in ("dialect", "central")):
        choices = "unit must be type|token, level sentence|corpus, denominator dialect|central"
        raise ValueError(f"{choices} (got {unit}, {level}, {denominator})")
    if len(dialect_texts) != len(central_texts) or not dialect_texts:
        raise ValueError("need equal, non-zero numbers of dialect and Central texts")
    tok = get_tokenizer(tokenizer)
    counts = []  # per pair with dialect words: (words found, words)
    for d_text, c_text in zip(dialect_texts, central_texts):
        d_words = [t for t in tok.tokenize(d_text) if t.strip()]
        c_words = [t for t in tok.tokenize(c_text) if t.strip()]
        source, other = (d_words, set(c_words)) if denominator == "dialect" else (c_words, set(d_words))
        units = list(dict.fromkeys(source)) if unit == "type" else source
        if units:
            counts.append((sum(1 for w in units if w in other), len(units)))
    if not counts:
        return float("nan")
    if level == "sentence":
        return sum(hit / n for hit, n in counts) / len(counts)
    return sum(hit for hit, _ in counts) / sum(n for _, n in counts)
