"""Hand-written resampling of corpus metrics (docs/statistics.md): the paired bootstrap of a corpus
metric (BLEU) and the ΔDiff of a corpus metric with a percentile interval. ``scipy.stats.bootstrap`` cannot do
these: a corpus metric is not a mean of per-item values. Following sacrebleu's design, a metric gives each
sentence's sufficient statistics (BLEU: lengths, n-gram matches and totals) and scores their sums, so a resample
sums rows of an array instead of scoring texts again (same numbers, to the last digit, as rescoring the texts).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Protocol

import numpy as np

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.stats.align import check_same_data, sort_key
from thai_eval_utils.stats.bootstrap import (
    DEFAULT_RESAMPLES,
    Interval,
    bootstrap_indices,
    percentile_ci,
)
from thai_eval_utils.stats.paired import PairedResult

#: Resampled statistic cells (rows x sentences x statistics) summed per block: bounds the memory.
_MAX_CELLS = 4_000_000


class CorpusMetric(Protocol):
    """A corpus metric by sufficient statistics, e.g. ``thai_eval_utils.dialect.metrics.PAPER_BLEU``."""

    def statistics(self, hypotheses: Sequence[str], references: Sequence[str]) -> np.ndarray:
        """Per sentence, a row of integer statistics: shape ``(n, d)``."""
        ...

    def score(self, totals: np.ndarray) -> float:
        """The corpus score from the column sums of :meth:`statistics` (shape ``(d,)``)."""
        ...


def _resampled_scores(metric: CorpusMetric, stats: np.ndarray, blocks: list[np.ndarray]) -> np.ndarray:
    """The metric of each resample (one row of indices per resample) from summed per-sentence statistics."""
    return np.array([metric.score(t) for idx in blocks for t in stats[idx].sum(axis=1)], dtype=float)


def _blocks(rng: np.random.Generator, n: int, n_resamples: int, d: int) -> list[np.ndarray]:
    return list(bootstrap_indices(rng, n, n_resamples, max_cells=max(1, _MAX_CELLS // d)))


def shifted_p(boot: np.ndarray, observed: float) -> float:
    """Two-sided p of H0 "no difference" from the bootstrap distribution shifted to mean 0:
    ``(1 + #{|d*_r - mean(d*)| >= |d|}) / (R + 1)`` (Efron and Tibshirani 1993, section 16.4; the
    paired-bootstrap p of sacrebleu's ``--paired-bs``)."""
    centred = np.abs(boot - boot.mean())
    return float((1 + np.sum(centred >= abs(observed) - 1e-12)) / (boot.size + 1))


def corpus_paired_bootstrap(
    hyps_a: Mapping[Hashable, str],
    hyps_b: Mapping[Hashable, str],
    refs: Mapping[Hashable, str],
    metric: CorpusMetric,
    *,
    name: str = "bleu",
    level: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    data_hash_a: str | None = None,
    data_hash_b: str | None = None,
    allow_different_data: bool = False,
) -> PairedResult:
    """Paired bootstrap over sentences of a corpus metric: both systems scored on the same resampled sentences.

    ``metric`` (e.g. ``dialect.metrics.PAPER_BLEU``, the paper-exact dialect BLEU) scores each system's sentences
    once; each resample sums their statistics. The p-value is the shifted-bootstrap p (see :func:`shifted_p`).
    Sentences are matched by key; keys with a hypothesis in one system only are listed.
    """
    note = check_same_data(data_hash_a, data_hash_b, allow_different_data=allow_different_data)
    shared = sorted(hyps_a.keys() & hyps_b.keys(), key=sort_key)
    if not shared:
        raise ThaiEvalDataError("the systems share no sentence key", field="key")
    missing = [k for k in shared if k not in refs]
    if missing:
        raise ThaiEvalDataError(f"no reference for sentence key(s) {', '.join(map(repr, missing[:5]))}", field="key")
    ha, hb, rr = [hyps_a[k] for k in shared], [hyps_b[k] for k in shared], [refs[k] for k in shared]
    stats_a, stats_b = metric.statistics(ha, rr), metric.statistics(hb, rr)
    score_a, score_b = float(metric.score(stats_a.sum(axis=0))), float(metric.score(stats_b.sum(axis=0)))
    n = len(shared)
    blocks = _blocks(np.random.default_rng(seed), n, n_resamples, stats_a.shape[1])
    boot = _resampled_scores(metric, stats_a, blocks) - _resampled_scores(metric, stats_b, blocks)
    low, high = percentile_ci(boot, level)
    return PairedResult(
        metric=name,
        n_paired=n,
        n_only_a=len(hyps_a.keys() - hyps_b.keys()),
        n_only_b=len(hyps_b.keys() - hyps_a.keys()),
        mean_a=score_a,
        mean_b=score_b,
        diff=score_a - score_b,
        ci_low=low,
        ci_high=high,
        level=level,
        method="percentile",
        n_resamples=n_resamples,
        seed=seed,
        test="paired-bootstrap-shifted",
        p_value=shifted_p(boot, score_a - score_b),
        only_in_a=tuple(sorted(hyps_a.keys() - hyps_b.keys(), key=sort_key)),
        only_in_b=tuple(sorted(hyps_b.keys() - hyps_a.keys(), key=sort_key)),
        note="; ".join(filter(None, [note, "corpus metric recomputed per resample (hand-written)"])),
    )


def corpus_delta_diff_interval(
    central: tuple[Mapping[Hashable, str], Mapping[Hashable, str]],
    variety: tuple[Mapping[Hashable, str], Mapping[Hashable, str]],
    metric: CorpusMetric,
    *,
    name: str = "delta_diff",
    level: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> Interval:
    """ΔDiff of a corpus metric (Central minus another variety, e.g. a dialect's paper BLEU) with a percentile
    bootstrap interval.

    ``central`` and ``variety`` are ``(hypotheses, references)``, each ``id -> text``. When both sides have
    the same ids, each resample draws one set of ids for both (paired); otherwise each side is resampled on
    its own (independent). ``Interval.design`` states which.
    """
    sides = []
    for label, (hyps, refs) in (("Central", central), ("variety", variety)):
        if hyps.keys() != refs.keys():
            raise ThaiEvalDataError(f"{label}: hypotheses and references have different ids", field="key")
        ids = sorted(hyps, key=sort_key)
        sides.append(([hyps[k] for k in ids], [refs[k] for k in ids], ids))
    (hc, rc, ic), (hd, rd, idd) = sides
    paired = ic == idd
    design = (
        f"paired over {len(ic)} aligned items"
        if paired
        else f"independent resampling of Central ({len(ic)}) and variety ({len(idd)}) items: ids do not align"
    )
    sc, sd = metric.statistics(hc, rc), metric.statistics(hd, rd)
    estimate = float(metric.score(sc.sum(axis=0))) - float(metric.score(sd.sum(axis=0)))
    rng = np.random.default_rng(seed)
    if paired:
        blocks = _blocks(rng, len(ic), n_resamples, sc.shape[1])
        boot = _resampled_scores(metric, sc, blocks) - _resampled_scores(metric, sd, blocks)
    else:  # each resample draws Central's indices, then the other variety's
        i_c, i_d = [], []
        for _ in range(n_resamples):
            i_c.append(next(bootstrap_indices(rng, len(ic), 1)))
            i_d.append(next(bootstrap_indices(rng, len(idd), 1)))
        boot = _resampled_scores(metric, sc, i_c) - _resampled_scores(metric, sd, i_d)
    low, high = percentile_ci(boot, level)
    return Interval(
        name,
        estimate,
        low,
        high,
        level,
        "percentile",
        n_resamples,
        seed,
        max(len(ic), len(idd)),
        n_resamples,
        design=design,
        note="corpus metric recomputed per resample (hand-written)",
    )


def corpus_interval(
    hypotheses: Sequence[str],
    references: Sequence[str],
    metric: CorpusMetric,
    *,
    name: str = "corpus",
    level: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> Interval:
    """A corpus metric of one run (e.g. the paper's BLEU) with a percentile bootstrap interval over sentences,
    each resample scored from its summed per-sentence statistics (the same draws as the paired bootstrap)."""
    stats = metric.statistics(hypotheses, references)
    estimate = float(metric.score(stats.sum(axis=0)))
    boot = _resampled_scores(
        metric, stats, _blocks(np.random.default_rng(seed), len(stats), n_resamples, stats.shape[1])
    )
    low, high = percentile_ci(boot, level)
    return Interval(
        name,
        estimate,
        low,
        high,
        level,
        "percentile",
        n_resamples,
        seed,
        len(stats),
        n_resamples,
        design=f"{len(stats)} sentences",
        note="corpus metric recomputed per resample (hand-written)",
    )
