"""Hand-written paired resampling for statistics ``scipy.stats.bootstrap`` cannot vectorise (issue 14):
corpus-level metrics such as BLEU, recomputed on every resample of sentences (Koehn 2004, "Statistical
significance tests for machine translation evaluation"), and averages over tasks such as the Thai-H6 average,
resampled within each task (a stratified bootstrap, Davison and Hinkley 1997, section 3.2).

Why by hand: scipy's bootstrap needs a statistic of per-observation values it can vectorise or call per
resample on one array; a corpus metric takes lists of texts, and a stratified average needs resampling
within strata, which scipy does not do. Indices come from ``numpy.random.default_rng(seed)``; items are put
in canonical key order first, so the input order never changes a result. Intervals are percentile intervals.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence

import numpy as np
import pandas as pd

from thai_eval_utils.stats.align import RunValues, align, check_same_data, sort_key
from thai_eval_utils.stats.bootstrap import DEFAULT_RESAMPLES, Interval, percentile_ci
from thai_eval_utils.stats.paired import PairedResult
from thai_eval_utils.core.errors import ThaiEvalDataError

#: A corpus metric: (hypotheses, references) -> score, e.g. ``thai_eval_utils.dialect.metrics.bleu``.
CorpusMetric = Callable[[Sequence[str], Sequence[str]], float]
_CHUNK = 2_000_000  # resample-by-item cells per batch (bounds memory of the stratified bootstrap)


def _shifted_p(boot: np.ndarray, observed: float) -> float:
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

    ``metric`` is called ``2 * (n_resamples + 1)`` times (e.g. ``metrics.bleu``, the paper-exact dialect BLEU;
    wrap it with a tokenisation cache if that is slow). The p-value is the shifted-bootstrap p (see
    :func:`_shifted_p`). Sentences are matched by key; keys with a hypothesis in one system only are listed.
    """
    note = check_same_data(data_hash_a, data_hash_b, allow_different_data=allow_different_data)
    shared = sorted(hyps_a.keys() & hyps_b.keys(), key=sort_key)
    if not shared:
        raise ThaiEvalDataError("the systems share no sentence key", field="key")
    missing = [k for k in shared if k not in refs]
    if missing:
        raise ThaiEvalDataError(f"no reference for sentence key(s) {', '.join(map(repr, missing[:5]))}", field="key")
    ha, hb, rr = [hyps_a[k] for k in shared], [hyps_b[k] for k in shared], [refs[k] for k in shared]
    score_a, score_b = float(metric(ha, rr)), float(metric(hb, rr))
    rng = np.random.default_rng(seed)
    boot = np.empty(n_resamples)
    n = len(shared)
    for r in range(n_resamples):
        idx = rng.integers(0, n, n)
        refs_r = [rr[i] for i in idx]
        boot[r] = metric([ha[i] for i in idx], refs_r) - metric([hb[i] for i in idx], refs_r)
    low, high = percentile_ci(boot, level)
    return PairedResult(
        metric=name, n_paired=n, n_only_a=len(hyps_a.keys() - hyps_b.keys()), n_only_b=len(hyps_b.keys() - hyps_a.keys()),
        mean_a=score_a, mean_b=score_b, diff=score_a - score_b, ci_low=low, ci_high=high, level=level,
        method="percentile", n_resamples=n_resamples, seed=seed, test="paired-bootstrap-shifted",
        p_value=_shifted_p(boot, score_a - score_b),
        only_in_a=tuple(sorted(hyps_a.keys() - hyps_b.keys(), key=sort_key)),
        only_in_b=tuple(sorted(hyps_b.keys() - hyps_a.keys(), key=sort_key)),
        note="; ".join(filter(None, [note, "corpus metric recomputed per resample (hand-written)"])),
    )


def _by_task(run: pd.DataFrame | Mapping[str, RunValues], task: str) -> dict[str, RunValues]:
    if isinstance(run, pd.DataFrame):
        if task not in run.columns:
            raise ThaiEvalDataError(f"no column {task!r}", field=task)
        return {str(t): g for t, g in run.groupby(task, sort=True)}
    return {str(t): v for t, v in run.items()}


def stratified_paired_bootstrap(
    run_a: pd.DataFrame | Mapping[str, RunValues],
    run_b: pd.DataFrame | Mapping[str, RunValues],
    *,
    name: str = "average",
    task: str = "task",
    key: str = "key",
    value: str = "value",
    level: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    data_hash_a: str | None = None,
    data_hash_b: str | None = None,
    allow_different_data: bool = False,
) -> PairedResult:
    """Difference of two models' unweighted average over tasks (e.g. the Thai-H6 average of six task
    scores), each task's items resampled within the task, paired by key.

    ``run_a``/``run_b``: a DataFrame with ``task``, ``key``, ``value`` columns, or ``task -> per-item values``.
    Each task's score is the mean of its item values (MMLU's macro average over subjects is not modelled).
    The p-value is a stratified paired sign-flip test: each item's difference flips sign with probability
    1/2, ``p = (1 + #{|T*| >= |T|}) / (R + 1)``.
    """
    note = check_same_data(data_hash_a, data_hash_b, allow_different_data=allow_different_data)
    ta, tb = _by_task(run_a, task), _by_task(run_b, task)
    if set(ta) != set(tb):
        raise ThaiEvalDataError(f"the runs cover different tasks: only A {sorted(set(ta) - set(tb))}, only B {sorted(set(tb) - set(ta))}", field=task)
    names = sorted(ta)
    aligned = [align(ta[t], tb[t], key=key, value=value) for t in names]
    diffs = [al.a - al.b for al in aligned]
    observed = float(np.mean([d.mean() for d in diffs]))
    rng = np.random.default_rng(seed)
    boot, flips = np.zeros(n_resamples), np.zeros(n_resamples)
    for d in diffs:  # tasks in sorted order, each drawing its own indices: same seed -> same numbers
        n = d.size
        step = max(1, _CHUNK // n)
        for start in range(0, n_resamples, step):
            r = min(step, n_resamples - start)
            boot[start:start + r] += d[rng.integers(0, n, (r, n))].mean(axis=1) / len(diffs)
            signs = rng.choice(np.array([-1.0, 1.0]), size=(r, n))
            flips[start:start + r] += (signs * d).mean(axis=1) / len(diffs)
    low, high = percentile_ci(boot, level)
    mean_a = float(np.mean([al.a.mean() for al in aligned]))
    mean_b = float(np.mean([al.b.mean() for al in aligned]))
    only_a = tuple((t, k) for t, al in zip(names, aligned) for k in al.only_in_a)
    only_b = tuple((t, k) for t, al in zip(names, aligned) for k in al.only_in_b)
    p = 1.0 if all(np.all(d == 0) for d in diffs) else float((1 + np.sum(np.abs(flips) >= abs(observed) - 1e-12)) / (n_resamples + 1))
    return PairedResult(
        metric=name, n_paired=sum(d.size for d in diffs), n_only_a=len(only_a), n_only_b=len(only_b),
        mean_a=mean_a, mean_b=mean_b, diff=mean_a - mean_b, ci_low=low, ci_high=high, level=level,
        method="percentile", n_resamples=n_resamples, seed=seed, test="stratified-sign-flip",
        p_value=p, only_in_a=only_a, only_in_b=only_b,
        note="; ".join(filter(None, [note, f"resampled within {len(names)} tasks: {', '.join(names)} (hand-written)"])),
    )


def corpus_delta_diff_interval(
    central: tuple[Mapping[Hashable, str], Mapping[Hashable, str]],
    dialect: tuple[Mapping[Hashable, str], Mapping[Hashable, str]],
    metric: CorpusMetric,
    *,
    name: str = "delta_diff",
    level: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> Interval:
    """ΔDiff of a corpus metric (Central minus dialect, e.g. paper BLEU) with a percentile bootstrap interval.

    ``central`` and ``dialect`` are ``(hypotheses, references)``, each ``id -> text``. When both sides have
    the same ids, each resample draws one set of ids for both (paired); otherwise each side is resampled on
    its own (independent). ``Interval.design`` states which.
    """
    sides = []
    for label, (hyps, refs) in (("Central", central), ("dialect", dialect)):
        if hyps.keys() != refs.keys():
            raise ThaiEvalDataError(f"{label}: hypotheses and references have different ids", field="key")
        ids = sorted(hyps, key=sort_key)
        sides.append(([hyps[k] for k in ids], [refs[k] for k in ids], ids))
    (hc, rc, ic), (hd, rd, idd) = sides
    paired = ic == idd
    design = (f"paired over {len(ic)} aligned items" if paired else
              f"independent resampling of Central ({len(ic)}) and dialect ({len(idd)}) items: ids do not align")
    estimate = float(metric(hc, rc)) - float(metric(hd, rd))
    rng = np.random.default_rng(seed)
    boot = np.empty(n_resamples)
    for r in range(n_resamples):
        i_c = rng.integers(0, len(ic), len(ic))
        i_d = i_c if paired else rng.integers(0, len(idd), len(idd))
        boot[r] = metric([hc[i] for i in i_c], [rc[i] for i in i_c]) - metric([hd[i] for i in i_d], [rd[i] for i in i_d])
    low, high = percentile_ci(boot, level)
    return Interval(name, estimate, low, high, level, "percentile", n_resamples, seed, max(len(ic), len(idd)),
                    n_resamples, design=design, note="corpus metric recomputed per resample (hand-written)")
