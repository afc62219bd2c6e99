"""The report's leaderboard (issue 22): every stored model x benchmark cell with its n and a bootstrap interval,
beside the papers' published rows (Kim et al. Tables 4-5, Limkonchotiwat et al. Table 1), as one tidy frame.

Values are the runs' own summary scores (what the notebooks print); intervals are percentile bootstraps over the
run's items (``docs/statistics.md``): per-item means with ``stats.bootstrap.mean_interval``, averages over
tasks or formats (Thai-H6 average, ThaiCLI) resampled within each task with ``stats.stratified``'s
bootstrap, corpus BLEU from per-sentence statistics per resample (``stats.corpus``), ΔDiff with ``dialect.intervals``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from thai_eval_utils.compare.items import Headline, headlines
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.provenance import scrub
from thai_eval_utils.dialect.intervals import delta_diff_interval
from thai_eval_utils.dialect.metrics import PAPER_BLEU, TABLE1_TASKS, table_task
from thai_eval_utils.h6.tasks import TASKS
from thai_eval_utils.paper.own_runs import DIALECT_DISPLAY
from thai_eval_utils.paper.published import PUBLISHED_TABLES, load_all_published
from thai_eval_utils.report.runs import ReportRuns
from thai_eval_utils.stats.bootstrap import mean_interval
from thai_eval_utils.stats.corpus import corpus_delta_diff_interval, corpus_interval
from thai_eval_utils.stats.stratified import stratified_paired_bootstrap

CELL_COLUMNS = ["table", "model", "dialect", "source", "column", "value", "n", "ci_low", "ci_high", "items", "note"]
#: The leaderboard's tables: key -> (title, value columns in the paper's order).
TABLES: dict[str, tuple[str, list[str]]] = {
    "h6": ("Thai-H6 (0-100; Kim et al. Table 4)", ["thai_h6_avg", *TASKS]),
    "thaicli": ("ThaiCLI (judge score 0-10; Kim et al. Table 5)", ["thaicli_avg", "factoid", "instruction"]),
    "dialect_auto": ("Thai dialects (ROUGE-L, BLEU x100 and ΔDiff; Limkonchotiwat et al. Table 1)",
                     [c for fam, (_, col) in TABLE1_TASKS.items() for c in (col, f"{fam}_delta")]),
}
PUBLISHED = "published"
RUN = "thai-eval run"


@dataclass(frozen=True)
class Bootstrap:
    """How the leaderboard's intervals are made (percentile bootstrap over items)."""

    level: float = 0.95
    n_resamples: int = 1000
    seed: int = 0

    @property
    def caption(self) -> str:
        return (f"{100 * self.level:g}% percentile bootstrap interval over the run's items ({self.n_resamples} "
                f"resamples, seed {self.seed}); averages resample within each task; BLEU is recomputed per resample")


def _cell(table: str, model: str, column: str, value: Any, n: Any, items: str, *, dialect: str | None = None,
          low: float | None = None, high: float | None = None, source: str = RUN, note: str = "") -> dict[str, Any]:
    return {"table": table, "model": model, "dialect": dialect, "source": source, "column": column,
            "value": None if value is None or pd.isna(value) else float(value), "n": None if n is None or pd.isna(n) else int(n),
            "ci_low": low, "ci_high": high, "items": items, "note": note}


def _summary_value(summary: dict[str, Any] | None, name: str, scale: float = 1.0) -> tuple[float | None, int | None]:
    entry = ((summary or {}).get("scores") or {}).get(name)
    if not isinstance(entry, dict) or entry.get("value") is None:
        return None, None
    return scale * float(entry["value"]), entry.get("n")


def _values(h: Headline) -> np.ndarray:
    return h.scale * h.items["value"].to_numpy(dtype=float)


def _mean_ci(h: Headline, boot: Bootstrap) -> tuple[float | None, float | None]:
    x = _values(h)
    if x.size < 2:
        return None, None
    iv = mean_interval(x, method="percentile", level=boot.level, n_resamples=boot.n_resamples, seed=boot.seed)
    return iv.low, iv.high


def _average_ci(parts: Sequence[Headline], boot: Bootstrap) -> tuple[float | None, float | None]:
    """The interval of an unweighted average over tasks (formats), each resampled within itself: compare's
    stratified paired bootstrap against an all-zero partner is exactly the bootstrap of the average alone."""
    frame = pd.concat([h.items[["key"]].assign(value=_values(h), task=h.stratum) for h in parts], ignore_index=True)
    if len(frame) < 2:
        return None, None
    r = stratified_paired_bootstrap(frame, frame.assign(value=0.0), level=boot.level, n_resamples=boot.n_resamples, seed=boot.seed)
    return r.ci_low, r.ci_high


def corpus_ci(hyps: Sequence[str], refs: Sequence[str], boot: Bootstrap) -> tuple[float | None, float | None]:
    """Percentile bootstrap of the paper's corpus BLEU over sentences (``stats.corpus.corpus_interval``: each
    resample's BLEU from summed per-sentence statistics)."""
    if len(hyps) < 2:
        return None, None
    iv = corpus_interval(hyps, refs, PAPER_BLEU, level=boot.level, n_resamples=boot.n_resamples, seed=boot.seed)
    return iv.low, iv.high


def _h6_cells(model: str, heads: list[Headline], boot: Bootstrap) -> list[dict[str, Any]]:
    out, parts = [], []
    for h in (h for h in heads if h.family == "thai_h6"):
        value, n = _summary_value(h.run.summary, h.name.split("/")[-1], 100.0)
        low, high = _mean_ci(h, boot)
        out.append(_cell("h6", model, h.stratum, value, n, f"thai_h6|{h.stratum}", low=low, high=high))
        parts.append((h, value))
    if parts:
        heads_ = [h for h, _ in parts]
        low, high = _average_ci(heads_, boot)
        note = "" if len(parts) == len(TASKS) else f"partial: {len(parts)} of {len(TASKS)} tasks"
        avg = None if any(v is None for _, v in parts) else float(np.mean([v for _, v in parts]))
        out.append(_cell("h6", model, "thai_h6_avg", avg, sum(len(h.items) for h in heads_), "thai_h6|", low=low,
                         high=high, note=note))
    return out


def _thaicli_cells(model: str, heads: list[Headline], boot: Bootstrap) -> list[dict[str, Any]]:
    parts = [h for h in heads if h.family == "thaicli"]
    out = []
    for h in parts:
        value, n = _summary_value(h.run.summary, h.stratum)
        low, high = _mean_ci(h, boot)
        out.append(_cell("thaicli", model, h.stratum, value, n, f"thaicli|{h.stratum}", low=low, high=high, note=h.note))
    if parts:
        value, n = _summary_value(parts[0].run.summary, "thaicli")
        low, high = _average_ci(parts, boot) if len(parts) == 2 else (None, None)
        out.append(_cell("thaicli", model, "thaicli_avg", value, n, "thaicli|", low=low, high=high, note=parts[0].note))
    return out


def _dialect_cells(model: str, heads: list[Headline], boot: Bootstrap) -> list[dict[str, Any]]:
    out = []
    by = {}  # (table task, dialect) -> headline
    for h in (h for h in heads if h.family == "dialect"):
        dialect, task = h.stratum.split("/", 1)
        fam = table_task(task)
        metric, column = TABLE1_TASKS[fam]
        value, n = _summary_value(h.run.summary, f"{dialect}/{task}/{metric}")
        if h.kind == "corpus":
            low, high = corpus_ci(h.items["hyp"].tolist(), h.items["ref"].tolist(), boot)
        else:
            low, high = _mean_ci(h, boot)
        name = DIALECT_DISPLAY.get(dialect, dialect)
        out.append(_cell("dialect_auto", model, column, value, n, f"dialect|{h.stratum}", dialect=name, low=low, high=high))
        by[(fam, dialect)] = h
    for (fam, dialect), h in by.items():
        central = by.get((fam, "center"))
        if dialect == "center" or central is None:
            continue
        opts = dict(level=boot.level, n_resamples=boot.n_resamples, seed=boot.seed)
        if h.kind == "corpus":
            iv = corpus_delta_diff_interval((dict(zip(central.items["key"], central.items["hyp"])), dict(zip(central.items["key"], central.items["ref"]))),
                                            (dict(zip(h.items["key"], h.items["hyp"])), dict(zip(h.items["key"], h.items["ref"]))),
                                            PAPER_BLEU, **opts)
        else:
            iv = delta_diff_interval(central.items.assign(value=_values(central)), h.items.assign(value=_values(h)),
                                     method="percentile", **opts)
        out.append(_cell("dialect_auto", model, f"{fam}_delta", iv.estimate, iv.n, f"dialect|{h.stratum}",
                         dialect=DIALECT_DISPLAY.get(dialect, dialect), low=iv.low, high=iv.high, note=iv.design))
    return out


def _published_cells() -> list[dict[str, Any]]:
    tables = load_all_published()
    out = []
    for key, (_, columns) in TABLES.items():
        source = f"{PUBLISHED} ({PUBLISHED_TABLES[key].label})"
        for row in tables[key].to_dict("records"):
            for col in columns:
                if col in row and str(row[col]).strip() not in ("", "nan"):
                    out.append(_cell(key, str(row["model"]), col, float(row[col]), None, "", dialect=row.get("dialect"),
                                     source=source))
    return out


def model_headlines(runs: ReportRuns, *, dialect_data: str | Path | None = None) -> tuple[dict[str, list[Headline]], list[str]]:
    """model -> the per-item headline values of its runs (``compare.items.headlines``), and notes on the runs whose
    items cannot be read (e.g. dialect references not at hand: they keep their summary values without intervals)."""
    heads: dict[str, list[Headline]] = {}
    notes = []
    for model, sel in runs.selections.items():
        heads[model] = []
        for run in sel.runs.values():
            try:  # the data where the run card says it was, else dialect_data
                heads[model] += headlines([run])
            except ThaiEvalDataError as exc:
                try:
                    if dialect_data is None:
                        raise
                    heads[model] += headlines([run], dialect_data=dialect_data)
                except ThaiEvalDataError:
                    notes.append(scrub(f"{model} {run.benchmark}: no per-item values ({exc}); no intervals"))
    return heads, notes


def leaderboard(heads: dict[str, list[Headline]], *, boot: Bootstrap = Bootstrap(), published: bool = True) -> pd.DataFrame:
    """Every cell of every model's headlines (:func:`model_headlines`) and the published rows: :data:`CELL_COLUMNS`."""
    rows = []
    for model, hs in heads.items():
        rows += _h6_cells(model, hs, boot) + _thaicli_cells(model, hs, boot) + _dialect_cells(model, hs, boot)
    if published:
        rows += _published_cells()
    return pd.DataFrame(rows, columns=CELL_COLUMNS)

