"""The report's leaderboard: every stored model x benchmark cell with its n and a bootstrap interval,
beside the papers' published rows, as one tidy frame. Each suite makes its own cells (``Suite.leaderboard_cells``)
and declares its tables (``Suite.leaderboard_tables``); a table whose key is one of ``paper.PUBLISHED_TABLES`` gets
the paper's rows.

Values are the runs' own summary scores (what the notebooks print); intervals are percentile bootstraps over the
run's items (``docs/statistics.md``; the generic pieces in :mod:`thai_eval_utils.stats.cells`): per-item means,
averages over tasks resampled within each task, corpus metrics recomputed per resample.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from thai_eval_utils.compare.items import Headline, headlines
from thai_eval_utils.core import registry
from thai_eval_utils.core.benchmark import LeaderboardTable
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.provenance import scrub
from thai_eval_utils.paper.published import PUBLISHED_TABLES, load_all_published
from thai_eval_utils.report.runs import ReportRuns
from thai_eval_utils.stats.cells import CELL_COLUMNS, RUN, Bootstrap, cell

__all__ = ["CELL_COLUMNS", "PUBLISHED", "RUN", "Bootstrap", "leaderboard", "model_headlines", "tables"]

PUBLISHED = "published"


def tables() -> list[LeaderboardTable]:
    """Every registered suite's leaderboard tables, in registry order."""
    return [t for suite in registry.suites().values() for t in suite.leaderboard_tables]


def _published_cells() -> list[dict[str, Any]]:
    published = load_all_published()
    out = []
    for table in tables():
        if table.key not in PUBLISHED_TABLES:
            continue
        source = f"{PUBLISHED} ({PUBLISHED_TABLES[table.key].label})"
        for row in published[table.key].to_dict("records"):
            for col in table.columns:
                if col in row and str(row[col]).strip() not in ("", "nan"):
                    out.append(
                        cell(
                            table.key,
                            str(row["model"]),
                            col,
                            float(row[col]),
                            None,
                            "",
                            group=row.get(table.group) if table.group else None,
                            source=source,
                        )
                    )
    return out


def model_headlines(
    runs: ReportRuns, *, data_dir: str | Path | None = None
) -> tuple[dict[str, list[Headline]], list[str]]:
    """model -> the per-item headline values of its runs (``compare.items.headlines``), and notes on the runs whose
    items cannot be read (e.g. references not at hand: they keep their summary values without intervals).

    Each run's data is read where its run card says, else from ``data_dir`` (a data root holding each suite's folder).
    """
    heads: dict[str, list[Headline]] = {}
    notes = []
    for model, sel in runs.selections.items():
        heads[model] = []
        for run in sel.runs.values():
            try:  # the data where the run card says it was, else data_dir
                heads[model] += headlines([run])
            except ThaiEvalDataError as exc:
                try:
                    if data_dir is None:
                        raise
                    heads[model] += headlines([run], data_dir=data_dir)
                except ThaiEvalDataError:
                    notes.append(scrub(f"{model} {run.benchmark}: no per-item values ({exc}); no intervals"))
    return heads, notes


def leaderboard(
    heads: dict[str, list[Headline]], *, boot: Bootstrap = Bootstrap(), published: bool = True
) -> pd.DataFrame:
    """Every cell of every model's headlines (:func:`model_headlines`) and the published rows: :data:`CELL_COLUMNS`."""
    rows = []
    for model, hs in heads.items():
        for suite in registry.suites().values():
            rows += suite.leaderboard_cells(model, [h for h in hs if h.family == suite.name], boot)
    if published:
        rows += _published_cells()
    return pd.DataFrame(rows, columns=CELL_COLUMNS)
