"""Two models side by side in the report: the paired comparison of ``compare.runs.compare_runs``
(difference, its bootstrap interval, the test's p-value and Holm's adjustment) for the header; the browser pairs
both models' items by key and shows the items on which they differ first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from thai_eval_utils.compare.runs import Comparison, compare_runs
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.provenance import scrub
from thai_eval_utils.report.runs import ReportRuns


@dataclass
class SideBySide:
    """The pair compared, its table (rounded for display), the comparison itself, and why not when it failed."""

    model_a: str
    model_b: str
    table: pd.DataFrame
    caption: str = ""
    comparison: Comparison | None = None
    notes: list[str] = field(default_factory=list)


def side_by_side(
    runs: ReportRuns, pair: Sequence[str] | None = None, *, n_resamples: int = 1000, seed: int = 0
) -> SideBySide | None:
    """Compare ``pair`` (default: the first two models) with ``compare_runs``; None with fewer than two models.

    Percentile intervals: BCa's jackknife holds an n x n array (14k MMLU items: 1.7 GB); ``make compare``
    (``compare_runs.ipynb``) gives BCa and 10,000 resamples."""
    models = list(pair) if pair else runs.models[:2]
    if len(models) < 2:
        return None
    a, b = models[0], models[1]
    if a not in runs.selections or b not in runs.selections:
        raise ValueError(f"side by side: {a!r} and {b!r} must be among the report's models {runs.models}")
    try:
        cmp = compare_runs(
            runs.selections[a],
            runs.selections[b],
            n_resamples=n_resamples,
            seed=seed,
            method="percentile",
            outputs=runs.outputs,
        )
    except (ThaiEvalDataError, ValueError) as exc:
        return SideBySide(a, b, pd.DataFrame(), notes=[scrub(f"not compared: {exc}")])
    table = cmp.table(digits=3)[
        [
            "score",
            "n_paired",
            "mean_a",
            "mean_b",
            "diff",
            "ci_low",
            "ci_high",
            "method",
            "test",
            "p_value",
            "p_holm",
            "note",
        ]
    ]
    return SideBySide(a, b, table, cmp.caption, cmp, [scrub(n) for n in cmp.notes])
