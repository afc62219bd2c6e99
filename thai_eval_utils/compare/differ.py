"""The items on which two compared runs differ most, side by side: the input, the reference, both
models' outputs and, for judged benchmarks, both judge explanations, as each suite shows them (``Suite.sides``);
for reading, not for statistics."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from thai_eval_utils.compare.items import Headline
from thai_eval_utils.compare.runs import Comparison
from thai_eval_utils.core import registry

COLUMNS = [
    "score",
    "key",
    "value_a",
    "value_b",
    "diff",
    "input",
    "reference",
    "output_a",
    "output_b",
    "explanation_a",
    "explanation_b",
]


def _values(h: Headline) -> pd.DataFrame:
    """Per-item values; a corpus metric is ranked by each sentence's own score (ranking only)."""
    items = h.items.copy()
    if h.kind == "corpus" and h.corpus_metric is not None:
        stats = np.asarray(h.corpus_metric.statistics(items["hyp"].tolist(), items["ref"].tolist()))
        items["value"] = [h.corpus_metric.score(row) for row in stats]
    return items.set_index("key")


def largest_differences(
    cmp: Comparison,
    n: int = 5,
    *,
    scores: list[str] | None = None,
    data_dir: str | Path | None = None,
) -> pd.DataFrame:
    """The ``n`` items per score with the largest ``|value_a - value_b|`` (ties: by key), side by side.

    Args:
        cmp: a :func:`~thai_eval_utils.compare.runs.compare_runs` result.
        scores: rows to show (default: every per-item row of ``cmp``).
        data_dir: a data root holding each suite's data folder (document texts, questions and references the
            records lack; a suite shows them only when its files are the run's).
    """
    root = None if data_dir is None else Path(data_dir)
    out = []
    for name in scores or [r.metric for r in cmp.rows if r.metric in cmp.headlines_a]:
        ha, hb = cmp.headlines_a[name], cmp.headlines_b[name]
        va, vb = _values(ha), _values(hb)
        both = va[["value"]].join(vb[["value"]], how="inner", lsuffix="_a", rsuffix="_b")
        both["diff"] = both["value_a"] - both["value_b"]
        both = both.assign(_abs=both["diff"].abs(), _key=both.index.astype(str)).sort_values(
            ["_abs", "_key"], ascending=[False, True]
        )
        top = both.head(n)
        suite = registry.get_suite(ha.run.benchmark)
        sides = suite.sides(ha, hb, [str(k) for k in top.index], root)
        for (key, row), side in zip(top.iterrows(), sides):
            out.append(
                {
                    "score": name,
                    "key": key,
                    "value_a": row["value_a"],
                    "value_b": row["value_b"],
                    "diff": row["diff"],
                    "input": side.input,
                    "reference": side.reference,
                    "output_a": side.output_a,
                    "output_b": side.output_b,
                    "explanation_a": side.explanation_a,
                    "explanation_b": side.explanation_b,
                }
            )
    return pd.DataFrame(out, columns=COLUMNS).fillna("")
