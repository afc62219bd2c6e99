"""Leaderboard cells with n and a percentile bootstrap interval (methods in ``docs/statistics.md``): the
generic pieces every suite's ``leaderboard_cells`` hook uses (:class:`~thai_eval_utils.core.benchmark.Suite`):
a run's summary value, the interval of a per-item mean, of an unweighted average over tasks (each resampled within
itself) and of a corpus metric recomputed per resample."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from thai_eval_utils.core.benchmark import Headline, Interval
from thai_eval_utils.stats.bootstrap import mean_interval
from thai_eval_utils.stats.corpus import CorpusMetric, corpus_interval
from thai_eval_utils.stats.stratified import stratified_paired_bootstrap

#: The columns of one leaderboard cell (the report's leaderboard frame).
CELL_COLUMNS = ["table", "model", "group", "source", "column", "value", "n", "ci_low", "ci_high", "items", "note"]
#: The ``source`` of a cell from one of our runs (the papers' rows say ``published (...)``).
RUN = "thai-eval run"


@dataclass(frozen=True)
class Bootstrap:
    """How the leaderboard's intervals are made (percentile bootstrap over items)."""

    level: float = 0.95
    n_resamples: int = 1000
    seed: int = 0

    @property
    def caption(self) -> str:
        return (
            f"{100 * self.level:g}% percentile bootstrap interval over the run's items ({self.n_resamples} "
            f"resamples, seed {self.seed}); averages resample within each task; BLEU is recomputed per resample"
        )


def cell(
    table: str,
    model: str,
    column: str,
    value: Any,
    n: Any,
    items: str,
    *,
    group: str | None = None,
    low: float | None = None,
    high: float | None = None,
    source: str = RUN,
    note: str = "",
) -> dict[str, Any]:
    """One cell (:data:`CELL_COLUMNS`); ``group`` labels a row within a table whose rows are split by a group
    (``LeaderboardTable.group``); ``items`` is the item browser's filter (``<suite>|<task>``)."""
    return {
        "table": table,
        "model": model,
        "group": group,
        "source": source,
        "column": column,
        "value": None if value is None or pd.isna(value) else float(value),
        "n": None if n is None or pd.isna(n) else int(n),
        "ci_low": low,
        "ci_high": high,
        "items": items,
        "note": note,
    }


def summary_value(summary: dict[str, Any] | None, name: str, scale: float = 1.0) -> tuple[float | None, int | None]:
    """(value x ``scale``, n) of ``summary["scores"][name]``; (None, None) when the run has no such score."""
    entry = ((summary or {}).get("scores") or {}).get(name)
    if not isinstance(entry, dict) or entry.get("value") is None:
        return None, None
    return scale * float(entry["value"]), entry.get("n")


def scaled_values(h: Headline) -> np.ndarray:
    """A headline's per-item values on its published scale."""
    return h.scale * h.items["value"].to_numpy(dtype=float)


def mean_ci(h: Headline, boot: Interval) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of the mean of a headline's per-item values (None with fewer than 2)."""
    x = scaled_values(h)
    if x.size < 2:
        return None, None
    iv = mean_interval(x, method="percentile", level=boot.level, n_resamples=boot.n_resamples, seed=boot.seed)
    return iv.low, iv.high


def average_ci(parts: Sequence[Headline], boot: Interval) -> tuple[float | None, float | None]:
    """The interval of an unweighted average over tasks (formats), each resampled within itself: compare's
    stratified paired bootstrap against an all-zero partner is exactly the bootstrap of the average alone."""
    frame = pd.concat(
        [h.items[["key"]].assign(value=scaled_values(h), task=h.stratum) for h in parts], ignore_index=True
    )
    if len(frame) < 2:
        return None, None
    r = stratified_paired_bootstrap(
        frame, frame.assign(value=0.0), level=boot.level, n_resamples=boot.n_resamples, seed=boot.seed
    )
    return r.ci_low, r.ci_high


def corpus_ci(
    hyps: Sequence[str], refs: Sequence[str], boot: Interval, metric: CorpusMetric
) -> tuple[float | None, float | None]:
    """Percentile bootstrap of a corpus metric over sentences (``stats.corpus.corpus_interval``: each resample's
    score from summed per-sentence statistics); (None, None) with fewer than 2 sentences."""
    if len(hyps) < 2:
        return None, None
    iv = corpus_interval(hyps, refs, metric, level=boot.level, n_resamples=boot.n_resamples, seed=boot.seed)
    return iv.low, iv.high
