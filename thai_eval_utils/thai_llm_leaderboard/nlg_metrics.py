"""The Thai LLM Leaderboard's generation metrics as its runner computes them (spec thai_llm_leaderboard.md 3.3;
scbdatax/seacrowd-eval @9de9392 ``evaluation/metrics_utils.py:6-55``): ``BLEU``, ``SacreBLEU``, ``chrF++`` and
``ROUGE1/2/L/Lsum``, all on a 0-100 scale, each with n, an interval and a signature.

- ``BLEU`` (``metrics_utils.py:27``): HF ``evaluate``'s "bleu", i.e. TensorFlow-NMT ``compute_bleu`` (max order 4,
  no smoothing, brevity penalty ``exp(1 - r/c)`` when ``c <= r``) on ``pythainlp.word_tokenize(engine="newmm")``
  tokens with whitespace kept (spaces and newlines are tokens); a ZeroDivisionError (no hypothesis or no reference
  token) is 0. Written by hand here: ``evaluate.load("bleu")`` downloads the metric script from the Hub at run
  time, and thai-eval runs offline (the formula is the one in ``tensorflow/nmt`` ``nmt/scripts/bleu.py``).
- ``SacreBLEU`` (``:33``): ``sacrebleu.corpus_bleu(..., tokenize="flores200")`` (spBLEU). sacrebleu downloads the
  FLORES-200 SentencePiece model on first use; here the key is computed only when that model file is already in
  sacrebleu's cache and ``sentencepiece`` is installed (:func:`flores200_status`), otherwise it is absent and the
  summary says why. Never a stand-in number.
- ``chrF++`` (``:39``): ``evaluate``'s "chrf" defaults = sacrebleu ``CHRF()`` (character 6-grams, ``word_order=0``,
  beta 2): that is chrF, not chrF++ (chrF++ has word bigrams). The key keeps the runner's name for parity.
- ``ROUGE*`` (``:51-55``): ``evaluate``'s "rouge" = ``rouge_score`` 0.1.2 ``RougeScorer`` with the newmm tokenizer,
  no stemmer, F1 per row, ``rougeLsum`` on ``"\\n"``-split lines. The runner aggregates with
  ``BootstrapAggregator``: the median of 1000 bootstrap means (quirk 11). Our default is the exact mean;
  :func:`nlg_scores` (``rouge="bootstrap_median"``) replays the runner's draws. Where they come from (read in ``evaluate`` 0.4.2, not in
  the spec): ``EvaluationModule.compute`` runs ``_compute`` inside ``temp_seed(self.seed)``, so every ROUGE call
  reseeds numpy with the metric's own seed and restores the global state after; ``set_seed(42)`` and the order of
  the tasks play no part. ``self.seed`` is taken from numpy's global state when ``evaluate.load("rouge")`` runs
  (``metrics_utils.py:7``, at import, before ``set_seed(42)``): a word of numpy's entropy-seeded initial state, so
  each run of the runner's script draws its own seed and its ROUGE medians are not reproducible. A harness that
  seeds numpy with 42 before loading the metric gets seed 42 (the parity fixtures): our replay's default.

METEOR and the ``*_latin`` columns are not computed: neither is uploaded (``scripts/transform_result.py:75-80``),
METEOR needs NLTK data downloaded at run time and the ``_latin`` scores compare transliterated Thai with Thai.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import math
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import sacrebleu
from sacrebleu.metrics import BLEU as SacreBLEU
from sacrebleu.metrics import CHRF

from thai_eval_utils.core.provenance import Score
from thai_eval_utils.stats.bootstrap import mean_interval
from thai_eval_utils.stats.corpus import corpus_interval
from thai_eval_utils.tasks.metrics import Metric

if TYPE_CHECKING:
    from rouge_score.rouge_scorer import RougeScorer

#: metrics_utils.py:11 ``partial(word_tokenize, engine='newmm')`` (pythainlp's default ``keep_whitespace=True``).
TOKENIZER_ENGINE = "newmm"
#: TF-NMT compute_bleu's default, which evaluate's "bleu" keeps (``max_order=4, smooth=False``).
BLEU_MAX_ORDER = 4
#: evaluate "rouge" default rouge_types, in the order the aggregator consumes the RNG (rouge.py v0.4.2).
ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
#: The runner's key of each rouge type (metrics_utils.py:52-55).
ROUGE_KEYS = {"rouge1": "ROUGE1", "rouge2": "ROUGE2", "rougeL": "ROUGEL", "rougeLsum": "ROUGELsum"}
#: rouge_score BootstrapAggregator defaults (scoring.py): 1000 resamples; the median is the 50th percentile.
ROUGE_BOOT_SAMPLES = 1000
#: The seed numpy is reset to around every ROUGE call (evaluate's ``temp_seed(self.seed)``): 42 when numpy was seeded
#: with 42 before ``evaluate.load("rouge")`` (the parity harness); the runner's own is random per run (module docstring).
ROUGE_SEED = 42
#: sacrebleu's FLORES-200 SentencePiece model file name (sacrebleu tokenizers/tokenizer_spm.py SPM_MODELS).
FLORES200_SPM_FILE = "flores200sacrebleuspm"
#: Aggregations of ROUGE: our exact mean, or the runner's bootstrap median replayed.
ROUGE_AGGREGATIONS = ("mean", "bootstrap_median")
#: Our intervals: percentile bootstrap over items (corpus metrics rescored per resample), as tasks/runner.py.
N_RESAMPLES, LEVEL, BOOT_SEED = 1000, 0.95, 0


def pythainlp_version() -> str:
    """The installed pythainlp version (part of every BLEU / ROUGE signature)."""
    return importlib.metadata.version("pythainlp")


@functools.lru_cache(maxsize=200_000)
def _tokens(text: str) -> tuple[str, ...]:
    from pythainlp import word_tokenize  # seconds to import: loaded by the first run that scores words

    return tuple(word_tokenize(text, engine=TOKENIZER_ENGINE, keep_whitespace=True))


def newmm_tokens(text: str) -> list[str]:
    """The runner's tokens: newmm words with whitespace kept, e.g. ``"แมวกินปลา ที่บ้าน\\nวันนี้"`` ->
    ``['แมว', 'กิน', 'ปลา', ' ', 'ที่', 'บ้าน', '\\n', 'วันนี้']`` (spec 3.3). Never Unicode-normalised."""
    return list(_tokens(text))


class NewmmTokenizer:
    """rouge_score's tokenizer interface over :func:`newmm_tokens` (evaluate wraps the runner's callable the same
    way: ``Tokenizer(tokenizer_func).tokenize``)."""

    tokenize = staticmethod(newmm_tokens)


def _texts(hypotheses: Sequence[str | None], references: Sequence[str | None]) -> tuple[list[str], list[str]]:
    """metrics_utils.py:14-20: non-empty, equal lengths, None -> ""."""
    if not hypotheses or not references or len(hypotheses) != len(references):
        raise ValueError(
            f"need equal, non-zero numbers of hypotheses and references (got {len(hypotheses)}, {len(references)})"
        )
    return ["" if h is None else h for h in hypotheses], ["" if r is None else r for r in references]


# ------------------------------------------------------------------------------------------------- BLEU
def _ngrams(tokens: Sequence[str], max_order: int) -> Counter[tuple[str, ...]]:
    counts: Counter[tuple[str, ...]] = Counter()
    for n in range(1, max_order + 1):
        for i in range(len(tokens) - n + 1):
            counts[tuple(tokens[i : i + n])] += 1
    return counts


class RunnerBleu(Metric):
    """The runner's ``BLEU`` as a corpus metric by per-sentence statistics (``stats.corpus.CorpusMetric``): each
    row holds the hypothesis length, the reference length, the clipped n-gram matches for n = 1..4 and the possible
    n-grams for n = 1..4; compute_bleu sums exactly these over the corpus, so a bootstrap resamples rows."""

    name, kind, max_order = "BLEU", "corpus", BLEU_MAX_ORDER

    def statistics(self, hypotheses: Sequence[str], references: Sequence[str]) -> np.ndarray:
        hyps, refs = _texts(hypotheses, references)
        k = self.max_order
        out = np.zeros((len(hyps), 2 + 2 * k), dtype=np.int64)
        for i, (hyp, ref) in enumerate(zip(hyps, refs, strict=True)):
            h, r = newmm_tokens(hyp), newmm_tokens(ref)
            out[i, 0], out[i, 1] = len(h), len(r)
            for ngram, count in (_ngrams(h, k) & _ngrams(r, k)).items():  # clipped by the one reference
                out[i, 1 + len(ngram)] += count
            for n in range(1, k + 1):
                out[i, 1 + k + n] = max(len(h) - n + 1, 0)
        return out

    def score(self, totals: np.ndarray) -> float:
        """compute_bleu on summed statistics, x100; where it divides by zero (no hypothesis token: ratio 0, or no
        reference token) the runner catches ZeroDivisionError and reports 0 (metrics_utils.py:26-30)."""
        k = self.max_order
        c, r = int(totals[0]), int(totals[1])
        matches, possible = totals[2 : 2 + k], totals[2 + k : 2 + 2 * k]
        precisions = [float(m) / p if p > 0 else 0.0 for m, p in zip(matches, possible)]
        geo_mean = math.exp(sum((1.0 / k) * math.log(p) for p in precisions)) if min(precisions) > 0 else 0.0
        if r == 0 or c == 0:
            return 0.0
        ratio = float(c) / r
        bp = 1.0 if ratio > 1.0 else math.exp(1 - 1.0 / ratio)
        return geo_mean * bp * 100


class RunnerCorpusMetric(Metric):
    """A sacrebleu corpus metric of the runner, named by its summary key (``SacreBLEU``: BLEU with the FLORES-200
    tokenizer; ``chrF++``: ``CHRF()``), by sacrebleu's own per-sentence statistics: the sum of the rows gives exactly
    ``corpus_score`` (sacrebleu sums the same statistics)."""

    kind = "corpus"

    def __init__(self, name: str) -> None:
        self.name = name

    def _metric(self) -> SacreBLEU | CHRF:
        return SacreBLEU(tokenize="flores200") if self.name == "SacreBLEU" else CHRF()

    def statistics(self, hypotheses: Sequence[str], references: Sequence[str]) -> np.ndarray:
        hyps, refs = _texts(hypotheses, references)
        # sacrebleu's per-sentence statistics (what its own paired bootstrap resamples); no public name exists
        stats = self._metric()._extract_corpus_statistics(hyps, [refs])
        return np.asarray(stats, dtype=np.int64).reshape(len(hyps), -1)

    def score(self, totals: np.ndarray) -> float:
        return float(self._metric()._compute_score_from_stats([int(t) for t in totals]).score)


#: The runner's corpus metrics as metric objects, named by their summary keys.
BLEU_OBJECT = RUNNER_BLEU = RunnerBleu()
SPBLEU_OBJECT = RunnerCorpusMetric("SacreBLEU")
CHRF_OBJECT = CHRF_METRIC = RunnerCorpusMetric("chrF++")


def flores200_status() -> str | None:
    """None when ``SacreBLEU`` can be computed offline; else why not (sacrebleu would download the model)."""
    if importlib.util.find_spec("sentencepiece") is None:
        return "SacreBLEU not computed: the sentencepiece package is not installed (sacrebleu's flores200 tokenizer needs it)"
    root = os.environ.get("SACREBLEU", os.path.join(os.path.expanduser("~"), ".sacrebleu"))  # sacrebleu's folder
    path = Path(root) / "models" / FLORES200_SPM_FILE
    if not path.is_file():
        return (
            f"SacreBLEU not computed: sacrebleu's FLORES-200 SentencePiece model is not at {path} "
            "(sacrebleu downloads it on first use; thai-eval never downloads at run time)"
        )
    return None


# ------------------------------------------------------------------------------------------------ ROUGE
@functools.lru_cache(maxsize=1)
def _scorer() -> RougeScorer:
    from rouge_score.rouge_scorer import RougeScorer  # rouge-score loads nltk, seconds to import: on first use

    return RougeScorer(list(ROUGE_TYPES), use_stemmer=False, tokenizer=NewmmTokenizer())


def rouge_rows(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, np.ndarray]:
    """Per row and rouge type, rouge_score's (precision, recall, fmeasure): ``{type: array (n, 3)}`` (the matrix
    the BootstrapAggregator stacks), scored as ``scorer.score(reference, prediction)``."""
    hyps, refs = _texts(hypotheses, references)
    rows: dict[str, list[tuple[float, float, float]]] = {t: [] for t in ROUGE_TYPES}
    for ref, hyp in zip(refs, hyps, strict=True):
        scores = _scorer().score(ref, hyp)
        for t in ROUGE_TYPES:
            rows[t].append(tuple(scores[t]))
    return {t: np.array(v, dtype=float).reshape(len(hyps), 3) for t, v in rows.items()}


def _medians(rows: dict[str, np.ndarray], seed: int) -> dict[str, float]:
    """One aggregator call: per rouge type in order, rouge_score ``BootstrapAggregator._bootstrap_resample``'s middle
    row (the median of the bootstrap means), drawing from a ``RandomState(seed)``: exactly what the global functions
    draw after ``np.random.seed(seed)`` (the global RNG is never touched)."""
    rng, out = np.random.RandomState(seed), {}
    for t in ROUGE_TYPES:
        matrix = rows[t]
        sample_mean = np.zeros((ROUGE_BOOT_SAMPLES, matrix.shape[1]))
        for i in range(ROUGE_BOOT_SAMPLES):
            idx = rng.choice(np.arange(matrix.shape[0]), size=matrix.shape[0])
            sample_mean[i, :] = np.mean(matrix[idx, :], axis=0)
        q = 100 * np.array([0.025, 0.5, 0.975])  # (1 - 0.95) / 2 = 0.025 as the aggregator computes it
        out[t] = float(np.percentile(sample_mean, q, axis=0)[1][2]) * 100
    return out


# ------------------------------------------------------------------------------------------- all scores
def _corpus_score(metric: Metric, hyps: list[str], refs: list[str], signature: str) -> dict:
    """A corpus metric's score with its percentile bootstrap interval over items (None with fewer than 2)."""
    key, iv = metric.name, None
    if len(hyps) >= 2:
        iv = corpus_interval(hyps, refs, metric, name=key, level=LEVEL, n_resamples=N_RESAMPLES, seed=BOOT_SEED)
    return {
        **Score(key, float(metric(hyps, refs)), len(hyps), None, signature).to_dict(),
        "interval": iv and iv.to_dict(),
    }


def item_interval(values: np.ndarray, key: str) -> dict | None:
    """The percentile bootstrap interval of a mean over items (None with fewer than 2 or all alike)."""
    if values.size < 2 or np.all(values == values[0]):
        return None
    return mean_interval(
        values.tolist(), name=key, method="percentile", level=LEVEL, n_resamples=N_RESAMPLES, seed=BOOT_SEED
    ).to_dict()


def nlg_signatures(run_part: str) -> dict[str, str]:
    """Each metric's signature: tokenizer and versions, aggregation, then ``run_part`` (sampling or greedy, seed,
    thinking: the generation settings)."""
    tok = f"tok:newmm+ws|pythainlp:{pythainlp_version()}"
    sb = f"sacrebleu:{sacrebleu.__version__}"
    return {
        "BLEU": f"BLEU|tf-nmt-compute_bleu|max_order:4|smooth:no|{tok}|x100|corpus|{run_part}",
        "SacreBLEU": f"SacreBLEU|{sb}|tok:flores200|smooth:exp|corpus|{run_part}",
        "chrF++": f"chrF|{sb}|char_order:6|word_order:0|beta:2|corpus|{run_part}",
        "ROUGE": f"rouge_score:{importlib.metadata.version('rouge-score')}|f1|{tok}|stemmer:no|x100|{run_part}",
    }


def nlg_scores(
    hypotheses: Sequence[str],
    references: Sequence[str],
    *,
    run_part: str = "",
    rouge: str = "mean",
    rouge_seed: int = ROUGE_SEED,
) -> tuple[dict[str, dict], list[str]]:
    """Every runner metric of a task's outputs: ``{key: Score dict + "interval"}`` and notes (e.g. why
    ``SacreBLEU`` is absent).

    Args:
        hypotheses: the scored texts (after the thinking rule), unstripped as the runner keeps them (quirk 18).
        references: the golds, unstripped.
        run_part: the generation part of each signature (sampling / greedy, seed, thinking).
        rouge: ``"mean"`` (default: the exact mean of per-row F1) or ``"bootstrap_median"`` (the runner's
            aggregator replayed with numpy reseeded to ``rouge_seed``). Either way the interval is a percentile
            bootstrap of the mean.
        rouge_seed: the replay's seed (the module docstring says why the runner's own is unknowable).
    """
    if rouge not in ROUGE_AGGREGATIONS:
        raise ValueError(f"rouge aggregation must be one of {ROUGE_AGGREGATIONS}, got {rouge!r}")
    hyps, refs = _texts(hypotheses, references)
    sigs, status = nlg_signatures(run_part), flores200_status()
    corpus = (BLEU_OBJECT, CHRF_OBJECT) if status else (BLEU_OBJECT, SPBLEU_OBJECT, CHRF_OBJECT)
    out = {m.name: _corpus_score(m, hyps, refs, sigs[m.name]) for m in corpus}
    notes = [status] if status else []
    rows = rouge_rows(hyps, refs)
    medians = _medians(rows, rouge_seed) if rouge == "bootstrap_median" else None
    agg = "mean" if medians is None else f"bootstrap-median({ROUGE_BOOT_SAMPLES},numpy-reseeded:{rouge_seed})"
    for t in ROUGE_TYPES:
        key, f1 = ROUGE_KEYS[t], rows[t][:, 2] * 100
        value = medians[t] if medians is not None else float(f1.mean())
        sig = sigs["ROUGE"].replace("|f1|", f"|{t}|f1|agg:{agg}|")
        stderr = float(f1.std(ddof=1) / math.sqrt(f1.size)) if f1.size > 1 else None
        out[key] = {**Score(key, value, f1.size, stderr, sig).to_dict(), "interval": item_interval(f1, key)}
    return out, notes


# ---------------------------------------------------------------------------------------------- metric objects
class RunnerRouge(Metric):
    """One ROUGE type's F1 x100 per row on newmm tokens (rouge_score, no stemmer), named by its summary key
    (``ROUGE1``, ``ROUGE2``, ``ROUGEL``, ``ROUGELsum``); a run's value is the mean, or the runner's bootstrap
    median (:func:`nlg_scores`, ``rouge="bootstrap_median"``)."""

    kind = "mean"

    def __init__(self, rouge_type: str) -> None:
        self.rouge_type, self.name = rouge_type, ROUGE_KEYS[rouge_type]

    def parameters(self) -> dict[str, str]:
        return {"rouge_type": self.rouge_type}

    def score_item(self, prediction: str, reference: str) -> float:
        return float(rouge_rows([prediction], [reference])[self.rouge_type][0, 2]) * 100


#: The runner's NLG metrics in the summary's order (SacreBLEU only where the FLORES-200 model is cached).
NLG_METRIC_OBJECTS: tuple[Metric, ...] = (BLEU_OBJECT, SPBLEU_OBJECT, CHRF_OBJECT, *map(RunnerRouge, ROUGE_TYPES))
