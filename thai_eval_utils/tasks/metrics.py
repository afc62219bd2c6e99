"""The metrics of declared tasks as objects (:class:`Metric`): lm-evaluation-harness's multiple-choice ``acc`` /
``acc_norm`` (:class:`LoglikelihoodAccuracy`, the one implementation in the package; Thai-H6, the leaderboard and the
judge-free ThaiCLI variant use it) and the generation metrics (exact match, sacrebleu chrF and BLEU, ROUGE-L and
token F1 on Thai words).

acc_norm follows lm-eval 0.4.13 ``ConfigurableTask.process_results`` (and the Open LLM Leaderboard's
``MultipleChoiceTask``): each choice's summed log-likelihood divided by ``len(choice)``, the choice text *without*
the target delimiter, in Unicode code points (every Thai vowel and tone mark counts one; never bytes or tokens).
"""

from __future__ import annotations

import re
import sys
import string
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import sacrebleu
from sacrebleu.metrics import BLEU, CHRF

if TYPE_CHECKING:
    from rouge_score.rouge_scorer import RougeScorer

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


# ------------------------------------------------------------------------------------------------ generation
def thai_words(text: str) -> list[str]:
    """Thai words of ``text``: pythainlp newmm without whitespace tokens."""
    from pythainlp.tokenize import word_tokenize  # seconds to import: loaded by the first run that scores words

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
    scorer = _rouge_l_scorer(_ThaiTokenizer())
    return 100.0 * scorer.score(reference, output)["rougeL"].fmeasure


def _rouge_l_scorer(tokenizer: _ThaiTokenizer | _RougeTokenizer) -> RougeScorer:
    """rouge-score's ROUGE-L scorer over ``tokenizer`` (rouge-score loads nltk, seconds to import: on first use)."""
    from rouge_score.rouge_scorer import RougeScorer

    return RougeScorer(["rougeL"], tokenizer=tokenizer)


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
    options: tuple[tuple[str, Any], ...] = ()

    def _metric(self) -> Any:
        options = dict(self.options)
        return BLEU(**{"tokenize": "none", **options}) if self.name == "bleu" else CHRF(**options)

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


# ---------------------------------------------------------------------------------------------- metric objects
#: What a metric's values are: 0/1 per item ("binary": McNemar-style paired tests apply), any number per item
#: averaged ("mean"), or one number over the corpus from summed per-item statistics ("corpus").
KINDS = ("binary", "mean", "corpus")
#: The module prefix under which the registry imports a user's task file (its name holds a per-process hash).
USER_TASK_MODULES = "thai_eval_user_tasks."


def qualified_name(obj: Any) -> str:
    """``module:qualname`` of a function or class, stable across processes: an object of a user's task file is
    named by the file's name (``my_task.py:MyMetric``), never by the registry's per-process module name."""
    module = getattr(obj, "__module__", None) or "?"
    if module.startswith(USER_TASK_MODULES):
        file = getattr(sys.modules.get(module), "__file__", None)
        module = Path(file).name if file else module[len(USER_TASK_MODULES) :].rsplit("_", 1)[0] + ".py"
    return f"{module}:{getattr(obj, '__qualname__', type(obj).__qualname__)}"


class Metric:
    """A metric of a declared task, with a public contract (as sacrebleu's ``Metric`` and inspect_ai's scorers).

    A subclass sets ``name``, ``kind`` (one of :data:`KINDS`), ``higher_is_better`` and ``scale`` (what turns a
    value into the 0-100 tables: 100 for a 0-1 value, 1 for one already 0-100) and implements

    - per item (``kind`` "binary" or "mean"): :meth:`score_item` (prediction, reference -> a number; the reply with
      its thinking cut and the task's filters applied), aggregated by :meth:`aggregate` (the mean by default);
    - over the corpus (``kind`` "corpus"): :meth:`statistics` (per item, a row of integer sufficient statistics)
      and :meth:`score` (the score from their column sums): ``stats.corpus``'s bootstrap resamples rows.

    :meth:`parameters` are what define the metric beyond its class (recorded in the declaration by :meth:`spec`,
    and in every score's :meth:`signature`). Two metrics are equal when their specs are.
    """

    name: str = ""
    kind: str = "mean"
    higher_is_better: bool = True
    scale: float = 1.0
    #: which kind of declared task takes it: "generation" or "multiple_choice".
    task_kind: str = "generation"

    def parameters(self) -> dict[str, Any]:
        """The settings that define this metric (JSON values); none by default."""
        return {}

    def spec(self) -> dict[str, Any]:
        """The metric as the declaration records it: its class (``module:qualname``), name and parameters."""
        return {"metric": qualified_name(type(self)), "name": self.name, **self.parameters()}

    def signature(self) -> str:
        """The metric's provenance line: its name and each parameter (``name|key:value|...``)."""
        return "|".join([self.name, *(f"{k}:{v}" for k, v in self.parameters().items())])

    def score_item(self, prediction: str, reference: str) -> float:
        """One item's value (per-item metrics)."""
        raise NotImplementedError(f"{type(self).__name__} scores no single item (kind {self.kind!r})")

    def aggregate(self, values: Sequence[float]) -> float:
        """The run's value from its items' values: the mean (NaN when there are none)."""
        return float(np.mean(values)) if len(values) else float("nan")

    def statistics(self, hypotheses: Sequence[str], references: Sequence[str]) -> np.ndarray:
        """Per item, a row of integer sufficient statistics (corpus metrics): shape ``(n, d)``."""
        raise NotImplementedError(f"{type(self).__name__} is not a corpus metric")

    def score(self, totals: np.ndarray) -> float:
        """The corpus score from the column sums of :meth:`statistics` (corpus metrics)."""
        raise NotImplementedError(f"{type(self).__name__} is not a corpus metric")

    def __call__(self, hypotheses: Sequence[str], references: Sequence[str]) -> float:
        """The run's value of raw texts: the corpus score, or the aggregate of the items' values."""
        if self.kind == "corpus":
            if not hypotheses:
                return float("nan")
            return self.score(np.asarray(self.statistics(hypotheses, references)).sum(axis=0))
        return self.aggregate([self.score_item(h, r) for h, r in zip(hypotheses, references, strict=True)])

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.spec() == self.spec()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(repr(sorted(self.spec().items())))

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.parameters().items())
        return f"{type(self).__name__}({params})" if params else f"{type(self).__name__}()"


class ChoiceMetric(Metric):
    """A multiple-choice metric: each item's value from its choices' log-likelihoods (:meth:`score_choices`),
    and the predicted choice (:meth:`predict`)."""

    kind = "binary"
    scale = 100.0
    task_kind = "multiple_choice"

    def choice_scores(self, lls: Sequence[float], choices: Sequence[str]) -> list[float]:
        """What the choices are ranked by (the summed log-likelihoods by default)."""
        return [float(x) for x in lls]

    def predict(self, lls: Sequence[float], choices: Sequence[str]) -> int:
        """The predicted choice: the best score, the first of tied ones (lm-eval's argmax)."""
        return argmax_first(self.choice_scores(lls, choices))

    def score_choices(self, lls: Sequence[float], choices: Sequence[str], gold: int, ties: str = "first") -> float:
        """1.0 when the gold choice has the best score (``ties="split"``: 1/k on a k-way tie holding it)."""
        return _hit(self.choice_scores(lls, choices), gold, ties)


#: Log-likelihood normalisations: none (lm-eval's ``acc``), per character (``acc_norm``), per UTF-8 byte.
NORMALISATIONS = {"none": "acc", "char": "acc_norm", "byte": "acc_bytes"}


class LoglikelihoodAccuracy(ChoiceMetric):
    """Log-likelihood accuracy: the gold choice has the largest summed log-likelihood (``normalization="none"``,
    lm-eval's ``acc``), per character of the choice, the delimiter excluded (``"char"``, lm-eval's ``acc_norm``), or
    per UTF-8 byte (``"byte"``, Thai-H6's ``acc_bytes``). ``name`` defaults to those names."""

    def __init__(self, normalization: str = "none", name: str | None = None) -> None:
        if normalization not in NORMALISATIONS:
            raise ValueError(f"normalization must be one of {list(NORMALISATIONS)}, got {normalization!r}")
        self.normalization = normalization
        self.name = name or NORMALISATIONS[normalization]

    def parameters(self) -> dict[str, Any]:
        return {"normalization": self.normalization}

    def signature(self) -> str:
        norm = "" if self.normalization in ("none", "char") else f"|norm:{self.normalization}"
        return f"{self.name}|lm-eval{norm}"

    def choice_scores(self, lls: Sequence[float], choices: Sequence[str]) -> list[float]:
        if self.normalization == "char":
            return normalised(lls, choices)
        if self.normalization == "byte":
            return per_byte(lls, choices)
        return [float(x) for x in lls]


class ExactMatch(Metric):
    """1.0 when the prediction equals the reference after the filters lm-eval's ``exact_match`` takes: each of
    ``regexes_to_ignore`` removed, then ``ignore_case`` (lowercase), ``ignore_punctuation`` (ASCII punctuation
    removed), and ``strip`` (surrounding whitespace; this package's default)."""

    kind = "binary"
    scale = 100.0

    def __init__(
        self,
        *,
        strip: bool = True,
        ignore_case: bool = False,
        ignore_punctuation: bool = False,
        regexes_to_ignore: Sequence[str] = (),
        name: str = "exact_match",
    ) -> None:
        self.strip, self.ignore_case, self.ignore_punctuation = strip, ignore_case, ignore_punctuation
        self.regexes_to_ignore = tuple(regexes_to_ignore)
        for pattern in self.regexes_to_ignore:
            re.compile(pattern)  # a bad pattern fails at declaration
        self.name = name

    def parameters(self) -> dict[str, Any]:
        return {
            "strip": self.strip,
            "ignore_case": self.ignore_case,
            "ignore_punctuation": self.ignore_punctuation,
            "regexes_to_ignore": list(self.regexes_to_ignore),
        }

    def signature(self) -> str:
        if self == EXACT_MATCH:
            return "exact_match|strip"
        return super().signature()

    def _clean(self, text: str) -> str:
        for pattern in self.regexes_to_ignore:
            text = re.sub(pattern, "", text)
        if self.ignore_case:
            text = text.lower()
        if self.ignore_punctuation:
            text = text.translate(str.maketrans("", "", string.punctuation))
        return text.strip() if self.strip else text

    def score_item(self, prediction: str, reference: str) -> float:
        return float(self._clean(prediction) == self._clean(reference))


#: Word tokenisers of ROUGE-L and token F1: Thai words (pythainlp newmm) or whitespace-separated tokens.
TOKENIZERS: dict[str, Callable[[str], list[str]]] = {"newmm": thai_words, "whitespace": str.split}


def _tokenizer(tokenizer: str) -> Callable[[str], list[str]]:
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"tokenizer must be one of {list(TOKENIZERS)}, got {tokenizer!r}")
    return TOKENIZERS[tokenizer]


class _RougeTokenizer:
    """rouge-score's tokenizer interface over one of :data:`TOKENIZERS`."""

    def __init__(self, split: Callable[[str], list[str]]) -> None:
        self.split = split

    def tokenize(self, text: str) -> list[str]:
        return self.split(text)


class RougeL(Metric):
    """ROUGE-L F1 x100 per item on words (``tokenizer``: ``"newmm"`` Thai words, or ``"whitespace"``)."""

    def __init__(self, tokenizer: str = "newmm", name: str = "rougeL") -> None:
        self._split, self.tokenizer, self.name = _tokenizer(tokenizer), tokenizer, name

    def parameters(self) -> dict[str, Any]:
        return {"tokenizer": self.tokenizer}

    def signature(self) -> str:
        return f"{self.name}|f1|x100|words:{self.tokenizer}"

    def score_item(self, prediction: str, reference: str) -> float:
        scorer = _rouge_l_scorer(_RougeTokenizer(self._split))
        return 100.0 * scorer.score(reference, prediction)["rougeL"].fmeasure


class TokenF1(Metric):
    """SQuAD's token F1 x100 per item: the harmonic mean of the precision and recall of the prediction's words
    against the reference's, counted as multisets (``tokenizer``: ``"newmm"`` Thai words, or ``"whitespace"``);
    both empty: 100."""

    def __init__(self, tokenizer: str = "newmm", name: str = "token_f1") -> None:
        self._split, self.tokenizer, self.name = _tokenizer(tokenizer), tokenizer, name

    def parameters(self) -> dict[str, Any]:
        return {"tokenizer": self.tokenizer}

    def score_item(self, prediction: str, reference: str) -> float:
        hyp, ref = self._split(prediction), self._split(reference)
        if not hyp or not ref:
            return 100.0 * float(hyp == ref)
        common = sum((Counter(hyp) & Counter(ref)).values())
        if common == 0:
            return 0.0
        precision, recall = common / len(hyp), common / len(ref)
        return 100.0 * 2 * precision * recall / (precision + recall)


class Bleu(Metric):
    """sacrebleu's corpus BLEU (0-100) by sufficient statistics. ``tokenizer="newmm"``: Thai words joined by spaces,
    scored with ``tokenize="none"`` (sacrebleu's ``13a`` cannot split Thai); any other value is sacrebleu's own
    tokenizer of that name (``"char"``, ``"13a"``, ``"flores200"``...)."""

    kind = "corpus"

    def __init__(self, tokenizer: str = "newmm", name: str = "bleu") -> None:
        self.tokenizer, self.name = tokenizer, name
        if tokenizer == "newmm":
            self.corpus = SacrebleuCorpus("bleu", prepare=words_joined)
        else:
            self.corpus = SacrebleuCorpus("bleu", options=(("tokenize", tokenizer),))
            self.corpus._metric()  # an unknown tokenizer fails at declaration

    def parameters(self) -> dict[str, Any]:
        return {"tokenizer": self.tokenizer}

    def signature(self) -> str:
        tok = "tok:none|words:newmm" if self.tokenizer == "newmm" else f"tok:{self.tokenizer}"
        return f"{self.name}|sacrebleu:{sacrebleu.__version__}|{tok}"

    def statistics(self, hypotheses: Sequence[str], references: Sequence[str]) -> np.ndarray:
        return self.corpus.statistics(hypotheses, references)

    def score(self, totals: np.ndarray) -> float:
        return self.corpus.score(totals)


class ChrF(Metric):
    """sacrebleu's corpus chrF (0-100) by sufficient statistics: character n-grams up to ``char_order``, word
    n-grams up to ``word_order`` (2: chrF++), recall weighted by ``beta``; whitespace ignored."""

    kind = "corpus"

    def __init__(self, char_order: int = 6, word_order: int = 0, beta: int = 2, name: str = "chrf") -> None:
        self.char_order, self.word_order, self.beta, self.name = char_order, word_order, beta, name
        options = (("char_order", char_order), ("word_order", word_order), ("beta", beta))
        self.corpus = (
            SacrebleuCorpus("chrf", options=options) if (char_order, word_order, beta) != (6, 0, 2) else CHRF_CORPUS
        )

    def parameters(self) -> dict[str, Any]:
        return {"char_order": self.char_order, "word_order": self.word_order, "beta": self.beta}

    def signature(self) -> str:
        plus = "+" * self.word_order
        orders = "" if (self.char_order, self.word_order) == (6, 0) else f"|c:{self.char_order}|w:{self.word_order}"
        return f"chrF{self.beta}{plus}|sacrebleu:{sacrebleu.__version__}{orders}"

    def statistics(self, hypotheses: Sequence[str], references: Sequence[str]) -> np.ndarray:
        return self.corpus.statistics(hypotheses, references)

    def score(self, totals: np.ndarray) -> float:
        return self.corpus.score(totals)


ACC = LoglikelihoodAccuracy("none")
ACC_NORM = LoglikelihoodAccuracy("char")
EXACT_MATCH = ExactMatch()
ROUGE_L = RougeL()
CHRF_METRIC = ChrF()
BLEU_METRIC = Bleu()


def multiple_choice(
    lls: Sequence[float], choices: Sequence[str], gold: int, *, ties: str = "first"
) -> dict[str, float | int]:
    """What a multiple-choice record stores of one document: lm-eval's ``acc`` and ``acc_norm`` (:data:`ACC`,
    :data:`ACC_NORM`) and their predicted choices (``pred``, ``pred_norm``)."""
    return {
        "acc": ACC.score_choices(lls, choices, gold, ties),
        "acc_norm": ACC_NORM.score_choices(lls, choices, gold, ties),
        "pred": ACC.predict(lls, choices),
        "pred_norm": ACC_NORM.predict(lls, choices),
    }


#: The generation metrics a declared task may name: name -> the default object the name stands for.
GENERATION_METRICS: dict[str, Metric] = {
    "exact_match": EXACT_MATCH,
    "rougeL": ROUGE_L,
    "chrf": CHRF_METRIC,
    "bleu": BLEU_METRIC,
}
#: The multiple-choice metrics a declared task may name: name -> its default object.
MC_METRIC_OBJECTS: dict[str, ChoiceMetric] = {"acc": ACC, "acc_norm": ACC_NORM}
#: The multiple-choice metric names (as before the objects).
MC_METRICS = tuple(MC_METRIC_OBJECTS)


def resolve_metric(metric: str | Metric, task_kind: str) -> Metric:
    """The metric object of a declared name (the identical default object) or the object itself.

    Raises:
        KeyError: an unknown name; TypeError: neither a name nor a :class:`Metric`.
    """
    if isinstance(metric, Metric):
        return metric
    table: Mapping[str, Metric] = MC_METRIC_OBJECTS if task_kind == "multiple_choice" else GENERATION_METRICS
    if isinstance(metric, str):
        return table[metric]
    raise TypeError(f"a metric name or a Metric, got {type(metric).__name__}")


def declared_form(metric: str | Metric, task_kind: str) -> Any:
    """How a declaration records a metric: a name as the name, a default object as its name (the same task as
    naming it), any other object as its :meth:`~Metric.spec`."""
    if isinstance(metric, str):
        return metric
    table: Mapping[str, Metric] = MC_METRIC_OBJECTS if task_kind == "multiple_choice" else GENERATION_METRICS
    return metric.name if table.get(metric.name) == metric else metric.spec()
