"""The metrics of declared tasks: lm-evaluation-harness's multiple-choice ``acc`` / ``acc_norm`` (the one
implementation in the package; Thai-H6 and the judge-free ThaiCLI variant use it) and a small table of generation
metrics (exact match, sacrebleu chrF and BLEU, ROUGE-L on Thai words).

acc_norm follows lm-eval 0.4.13 ``ConfigurableTask.process_results`` (and the Open LLM Leaderboard's
``MultipleChoiceTask``): each choice's summed log-likelihood divided by ``len(choice)``, the choice text *without*
the target delimiter, in Unicode code points (every Thai vowel and tone mark counts one; never bytes or tokens).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sacrebleu
from pythainlp.tokenize import word_tokenize
from rouge_score import rouge_scorer
from sacrebleu.metrics import BLEU, CHRF

#: How a tie between the best choices counts: lm-eval's argmax takes the first ("first"); "split" counts an
#: item whose gold is among k tied best choices as 1/k (the judge-free ThaiCLI variant's 0.5 on a tie).
TIES = ("first", "split")
#: Thai word tokenizer of ROUGE-L and BLEU: pythainlp newmm, whitespace dropped (pythainlp 5.0.4).
THAI_WORD_ENGINE = "newmm"


def argmax_first(values: Sequence[float]) -> int:
    """Index of the largest value; ties go to the first (as ``numpy.argmax``)."""
    if not values:
        raise ValueError("argmax of an empty sequence")
    best = 0
    for i, v in enumerate(values):
        if v > values[best]:
            best = i
    return best


def _nonzero(length: int) -> float:
    # An empty choice would divide by zero (LB yields inf/nan there); count it as length 1 instead.
    return float(length) if length > 0 else 1.0


def normalised(lls: Sequence[float], choices: Sequence[str]) -> list[float]:
    """lm-eval's acc_norm scores: ``ll / len(choice)`` in code points, the choice without the target delimiter."""
    if len(lls) != len(choices):
        raise ValueError(f"{len(lls)} log-likelihoods for {len(choices)} choices")
    return [ll / _nonzero(len(c)) for ll, c in zip(lls, choices)]


def per_byte(lls: Sequence[float], choices: Sequence[str]) -> list[float]:
    """``ll / len(choice.encode("utf-8"))``: the per-byte diagnostic (Thai-H6's ``acc_bytes``)."""
    return [ll / _nonzero(len(c.encode("utf-8"))) for ll, c in zip(lls, choices)]


def _hit(scores: Sequence[float], gold: int, ties: str) -> float:
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, got {ties!r}")
    if ties == "first":
        return float(argmax_first(scores) == gold)
    top = max(scores)
    best = [i for i, s in enumerate(scores) if s == top]
    return 1.0 / len(best) if gold in best else 0.0


def acc(lls: Sequence[float], gold: int, *, ties: str = "first") -> float:
    """lm-eval's ``acc``: 1.0 when the gold choice has the largest summed log-likelihood."""
    return _hit(list(lls), gold, ties)


def acc_norm(lls: Sequence[float], choices: Sequence[str], gold: int, *, ties: str = "first") -> float:
    """lm-eval's ``acc_norm``: 1.0 when the gold choice has the largest ``ll / len(choice)`` (see the module)."""
    return _hit(normalised(lls, choices), gold, ties)


def multiple_choice(
    lls: Sequence[float], choices: Sequence[str], gold: int, *, ties: str = "first"
) -> dict[str, float | int]:
    """acc, acc_norm and the predicted indices (``pred``, ``pred_norm``) of one document."""
    return {
        "acc": acc(lls, gold, ties=ties),
        "acc_norm": acc_norm(lls, choices, gold, ties=ties),
        "pred": argmax_first(lls),
        "pred_norm": argmax_first(normalised(lls, choices)),
    }


# ------------------------------------------------------------------------------------------------ generation
def thai_words(text: str) -> list[str]:
    """Thai words of ``text``: pythainlp newmm without whitespace tokens."""
    return word_tokenize(text, engine=THAI_WORD_ENGINE, keep_whitespace=False)


class _ThaiTokenizer:
    """rouge-score's tokenizer interface over :func:`thai_words` (rouge-score's own deletes every Thai letter)."""

    def tokenize(self, text: str) -> list[str]:
        return thai_words(text)


def exact_match(output: str, reference: str) -> float:
    """1.0 when the output equals the reference after stripping surrounding whitespace (lm-eval's exact_match
    without its optional regex filters)."""
    return float(output.strip() == reference.strip())


def rouge_l(output: str, reference: str) -> float:
    """ROUGE-L F1 x100 of one output on newmm Thai words (rouge-score's scorer with a Thai tokenizer)."""
    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=_ThaiTokenizer())
    return 100.0 * scorer.score(reference, output)["rougeL"].fmeasure


def words_joined(text: str) -> str:
    """``text`` as newmm Thai words joined by single spaces (what corpus BLEU scores)."""
    return " ".join(thai_words(text))


def _same(text: str) -> str:
    return text


@dataclass(frozen=True)
class SacrebleuCorpus:
    """A sacrebleu corpus metric by per-sentence sufficient statistics (``stats.corpus.CorpusMetric``: a resample
    sums rows instead of rescoring texts, as ``sacrebleu.significance`` does; same numbers as ``corpus_score``).

    Called with raw texts it returns the corpus score. ``prepare`` runs on every text first: BLEU segments Thai
    with :func:`thai_words` (sacrebleu's ``13a`` cannot split Thai) and scores with ``tokenize="none"``.
    """

    name: str
    prepare: Callable[[str], str] = _same

    def _metric(self) -> Any:
        return BLEU(tokenize="none") if self.name == "bleu" else CHRF()

    def statistics(self, hypotheses: Sequence[str], references: Sequence[str]) -> np.ndarray:
        """Per sentence, sacrebleu's statistics (BLEU: lengths, n-gram matches and totals; chrF: per-order counts)."""
        hyps = [self.prepare(h) for h in hypotheses]
        refs = [self.prepare(r) for r in references]
        # sacrebleu's own per-sentence statistics (what its paired bootstrap resamples); no public name exists
        return np.asarray(self._metric()._extract_corpus_statistics(hyps, [refs]), dtype=np.int64).reshape(
            len(hyps), -1
        )

    def score(self, totals: np.ndarray) -> float:
        """The corpus score (0-100) from summed statistics."""
        return float(self._metric()._compute_score_from_stats([int(t) for t in totals]).score)

    def __call__(self, hypotheses: Sequence[str], references: Sequence[str]) -> float:
        if not hypotheses:
            return float("nan")
        return self.score(self.statistics(hypotheses, references).sum(axis=0))


CHRF_CORPUS = SacrebleuCorpus("chrf")
BLEU_CORPUS = SacrebleuCorpus("bleu", prepare=words_joined)


def corpus_chrf(outputs: Sequence[str], references: Sequence[str]) -> float:
    """sacrebleu's corpus chrF (character 6-grams, beta 2; whitespace ignored) of raw texts, 0-100."""
    return CHRF_CORPUS(outputs, references)


def corpus_bleu(outputs: Sequence[str], references: Sequence[str]) -> float:
    """sacrebleu's corpus BLEU (0-100) on newmm Thai words."""
    return BLEU_CORPUS(outputs, references)


@dataclass(frozen=True)
class GenerationMetric:
    """One entry of :data:`GENERATION_METRICS`: per item (``item``: output, reference -> value) or over the corpus
    (``corpus``: a :class:`SacrebleuCorpus`)."""

    name: str
    item: Callable[[str, str], float] | None = None
    corpus: SacrebleuCorpus | None = None
    signature: str = ""
    scale: float = 1.0

    @property
    def kind(self) -> str:
        if self.item is not None:
            return "binary" if self.name == "exact_match" else "mean"
        return "corpus"


#: The generation metrics a declared task may name: name -> how it is computed. ``scale``: what turns a value
#: into the 0-100 scale tables print (exact_match is 0-1; the others are already 0-100).
GENERATION_METRICS: dict[str, GenerationMetric] = {
    "exact_match": GenerationMetric("exact_match", item=exact_match, signature="exact_match|strip", scale=100.0),
    "rougeL": GenerationMetric("rougeL", item=rouge_l, signature="rougeL|f1|x100|words:newmm"),
    "chrf": GenerationMetric("chrf", corpus=CHRF_CORPUS, signature=f"chrF2|sacrebleu:{sacrebleu.__version__}"),
    "bleu": GenerationMetric(
        "bleu", corpus=BLEU_CORPUS, signature=f"bleu|sacrebleu:{sacrebleu.__version__}|tok:none|words:newmm"
    ),
}
#: The multiple-choice metrics a declared task may name.
MC_METRICS = ("acc", "acc_norm")
