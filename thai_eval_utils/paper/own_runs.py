"""This toolkit's own runs beside the papers' published tables (Kim et al. Tables 4-5; Limkonchotiwat et al.
Table 1): :func:`run_records` reads every run under ``<outputs>/runs`` into tidy score records through one
small adapter per benchmark family, and :func:`table_with_runs` (with the ``*_with_runs`` functions) places
them below the published rows of :mod:`thai_eval_utils.paper.published`, marked partial where a run is incomplete.
Each model's benchmark (at one setting) shows one run, its latest finished one (:mod:`.run_choice`);
:func:`skipped_runs` lists every other run and why it is left out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from thai_eval_utils.core.provenance import slugify
from thai_eval_utils.core.runs import list_runs
from thai_eval_utils.core.tables import round_half_up
from thai_eval_utils.dialect.metrics import DIALECT_NAMES, TABLE1_TASKS, table_task
from thai_eval_utils.h6.variants import is_variant
from thai_eval_utils.paper.published import (
    CENTRAL,
    DIALECT_METRICS,
    H6_TASKS,
    PAPER_SOURCE,
    RUN_SOURCE,
    load_all_published,
    to_decimal,
)
from thai_eval_utils.paper.run_choice import count_items, run_setting, shown_runs, skipped_table

# This toolkit's runs beside the published rows. Each benchmark family has a small adapter that
# turns one run (a ``core.runs.list_runs()`` entry: a ``StoredRun``) into tidy records; the rest is
# shared. Summary keys read (written by h6.evaluate, judge.judge_answers, thaicli.loglikelihood_preferences
# and dialect.run_generation):
#   thai_h6/<task>:   {"task", "n", "n_docs", "limit", "scores": {<headline metric first>: Score dict (0-1)}}
#   thaicli/judge:    {"n_unjudged", "scores": {"thaicli"|"factoid"|"instruction": Score dict (1-10)}}
#   thaicli/loglik:   {"scores": {"win_raw"|"win_norm": Score dict (0-1)}}
#   dialect/...:      {"scores": {"<dialect>/<task>/<metric>": Score dict (x100 as the paper prints it)},
#                     "delta_diff": {...}} (dialect.summary_scores; ΔDiff is recomputed here from the scores).
#                     Runs made before the summary held scores have no "scores" key: for them, the scores the
#                     dialect notebook saved as <outputs>/tables/dialect_scores_<model-slug>.csv (columns
#                     dialect, task, metric, value, n; the model's latest scoring), else "not scored".
# A run whose summary is missing (unfinished) or that has fewer items than the paper's dataset is partial.
# ``shown`` marks the records of the run the tables show for its cell (run_choice.shown_runs); the others are kept
# (``thai-eval runs`` reads every run's partial verdict here) and never reach a table.

RUN_RECORD_COLUMNS = [
    "model",
    "benchmark",
    "table",
    "dialect",
    "column",
    "value",
    "n",
    "expected_n",
    "partial",
    "finished",
    "setting",
    "options",
    "config_id",
    "run_dir",
    "written_at",
    "shown",
]
#: Dialect keys of the benchmark and the names the paper prints (Limkonchotiwat et al. Table 1): the dialect
#: benchmark's own dict (``dialect.metrics.DIALECT_NAMES``), under the name the paper tables and the report use.
DIALECT_DISPLAY = DIALECT_NAMES


def _score_value(entry: Any) -> tuple[float | None, int | None]:
    """A Score dict (``value``, ``n``) or a bare number as (value, n)."""
    if isinstance(entry, Mapping):
        value, n = entry.get("value"), entry.get("n")
        return (None if value is None else float(value)), (None if n is None else int(n))
    if isinstance(entry, (int, float)):
        return float(entry), None
    return None, None


def expected_sizes(tables: Mapping[str, pd.DataFrame]) -> dict[str, int]:
    """Full-run item counts from the published tables: Thai-H6 tasks (Table 1), ThaiCLI formats (Table 3),
    dialect tasks per dialect (Table 4; translation counts both directions, so each direction is half)."""
    sizes = {
        r["dataset"].lower().replace("-", "_"): int(to_decimal(r["n_samples"]))
        for _, r in tables["h6_sizes"].iterrows()
    }
    for fmt, part in tables["thaicli_distribution"].groupby("format"):
        sizes[f"thaicli/{fmt}"] = int(sum(to_decimal(v) for v in part["n_samples"]))
    counts = tables["dialect_counts"]
    for task in ("qa", "summarization"):
        sizes[f"dialect/{task}"] = int(to_decimal(counts[task].iloc[0]))
    half = int(to_decimal(counts["translation"].iloc[0]) / 2)
    sizes["dialect/translation_en_to_dialect"] = sizes["dialect/translation_dialect_to_en"] = half
    return sizes


def _h6_records(run: Mapping[str, Any], sizes: Mapping[str, int]) -> list[dict]:
    card, summary = run.card, run.summary or {}
    task = summary.get("task") or card.get("config", {}).get("task") or card["benchmark"].split("/")[-1]
    if is_variant(task):  # a labelled variant (h6.variants) is not the paper's protocol: no cell of Table 4
        return []
    value, n = None, count_items(run.dir)
    scores = summary.get("scores") or {}
    if scores:  # the headline metric is the first (h6._scores puts it first)
        value, n_scored = _score_value(next(iter(scores.values())))
        value, n = (None if value is None else 100 * value), n_scored or summary.get("n", n)
    return [{"table": "h6", "column": task, "value": value, "n": n, "expected_n": sizes.get(task)}]


def _thaicli_records(run: Mapping[str, Any], sizes: Mapping[str, int]) -> list[dict]:
    scores = (run.summary or {}).get("scores") or {}
    sub = run.card["benchmark"].split("/", 1)[-1]
    names = {"judge": ("factoid", "instruction", "thaicli"), "loglik": ("win_raw", "win_norm")}.get(sub, ())
    out = []
    for name in names:
        value, n = _score_value(scores.get(name))
        expected = (
            (sizes.get("thaicli/factoid", 0) + sizes.get("thaicli/instruction", 0))
            if name not in ("factoid", "instruction")
            else sizes.get(f"thaicli/{name}")
        )
        out.append(
            {
                "table": "thaicli",
                "column": name if sub == "judge" else f"loglik_{name}",
                "value": None if value is None else (100 * value if sub == "loglik" else value),
                "n": n,
                "expected_n": expected,
            }
        )
    if sub == "judge" and (run.summary or {}).get("n_unjudged"):
        for rec in out:
            rec["partial_reason"] = f"{run.summary['n_unjudged']} unjudged"
    return out


def _dialect_scores_file(run: Mapping[str, Any]) -> Path | None:
    """``<outputs>/tables/dialect_scores_<model-slug>.csv``, the scores the dialect notebook saves beside a run
    (read only for runs whose summary predates the scores in it)."""
    runs_dir = next((p for p in Path(run.dir).parents if p.name == "runs"), None)
    if runs_dir is None:
        return None
    path = runs_dir.parent / "tables" / f"dialect_scores_{slugify(str(run.card.get('model_name', '')))}.csv"
    return path if path.exists() else None


def _dialect_summary_scores(scores: Mapping[str, Any]) -> list[dict]:
    """The ``scores`` of a dialect run's summary (``{"<dialect>/<task>/<metric>": Score dict}``) as records
    ``dialect, task, metric, value, n``."""
    out = []
    for key, entry in scores.items():
        parts = str(key).split("/")
        if len(parts) != 3:
            continue
        value, n = _score_value(entry)
        out.append({"dialect": parts[0], "task": parts[1], "metric": parts[2], "value": value, "n": n})
    return out


def _dialect_records(run: Mapping[str, Any], sizes: Mapping[str, int]) -> list[dict]:
    out = []
    summary = run.summary
    scores: list[dict] = []
    if summary is not None and "scores" in summary:
        scores = _dialect_summary_scores(summary["scores"] or {})
    elif summary is not None and (scores_file := _dialect_scores_file(run)) is not None:
        scores = pd.read_csv(scores_file).to_dict("records")  # a run from before summaries held scores
    for rec in scores:
        family = table_task(str(rec.get("task", "")))
        metric, column = TABLE1_TASKS.get(family, (None, None))
        if column is None or rec.get("metric") != metric:
            continue
        dialect = DIALECT_DISPLAY.get(rec.get("dialect"), rec.get("dialect"))
        out.append(
            {
                "table": "dialect_auto",
                "dialect": dialect,
                "column": column,
                "value": rec.get("value"),
                "n": rec.get("n"),
                "expected_n": sizes.get(f"dialect/{family}"),
            }
        )
    if not out:  # generations without scores: say so rather than show nothing
        out.append(
            {
                "table": "dialect_auto",
                "column": None,
                "value": None,
                "n": count_items(run.dir),
                "expected_n": None,
                "partial_reason": "not scored",
            }
        )
    return out


#: Benchmark family (first part of the run's benchmark) -> adapter(run, expected sizes) -> records.
RUN_ADAPTERS: dict[str, Callable[[Mapping[str, Any], Mapping[str, int]], list[dict]]] = {
    "thai_h6": _h6_records,
    "thaicli": _thaicli_records,
    "dialect": _dialect_records,
}


def run_records(outputs: str | Path | None = None, tables: Mapping[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """Every score of this toolkit's runs under ``<outputs>/runs`` as tidy records (see :data:`RUN_RECORD_COLUMNS`).

    ``partial`` is True when the run is unfinished, has unjudged items, or scored fewer items than the
    paper's dataset (``expected_n``); ``options`` is the run's protocol configuration (JSON); ``shown`` is True
    for the run the tables show in its cell (:func:`~.run_choice.shown_runs`: the latest finished one).
    """
    import json

    sizes = expected_sizes(tables if tables is not None else load_all_published())
    runs = list_runs(outputs)
    shown = {run.dir for run in shown_runs(runs, RUN_ADAPTERS).values()}
    rows = []
    for run in runs:
        card = run.card
        adapter = RUN_ADAPTERS.get(str(card.get("benchmark", "")).split("/")[0])
        if adapter is None:
            continue
        for rec in adapter(run, sizes):
            n, expected = rec.get("n"), rec.get("expected_n")
            reason = rec.pop("partial_reason", None)
            rows.append(
                {
                    "model": card.get("model_name"),
                    "benchmark": card.get("benchmark"),
                    "dialect": None,
                    **rec,
                    "partial": run.summary is None
                    or reason is not None
                    or (expected is not None and (n or 0) < expected),
                    "finished": run.summary is not None,
                    "setting": run_setting(card),
                    "options": json.dumps(card.get("config", {}), ensure_ascii=False, sort_keys=True, default=str),
                    "config_id": card.get("config_id"),
                    "run_dir": str(run.dir),
                    "written_at": (run.summary or {}).get("written_at") or card.get("created_at"),
                    "shown": run.dir in shown,
                }
            )
    return pd.DataFrame(rows, columns=RUN_RECORD_COLUMNS)


def skipped_runs(outputs: str | Path | None = None) -> pd.DataFrame:
    """The runs under ``<outputs>/runs`` the tables leave out, one row each with its reason and the run shown
    instead (:func:`~.run_choice.skipped_table`): unfinished, superseded by a later run, or of no paper's benchmark."""
    return skipped_table(list_runs(outputs), RUN_ADAPTERS)


def _text(value: Any, decimals: int = 2) -> str:
    """A run's number printed like the paper's cells (half-up, ``decimals`` places); missing -> ``""``."""
    return "" if value is None or pd.isna(value) else str(round_half_up(float(value), decimals))


def _options_text(options: pd.Series) -> str:
    """The runs' protocol options in one line: ``key=value``, or ``key=v1/v2`` where the runs differ."""
    import json

    merged: dict[str, list[str]] = {}
    for text in options:
        for key, value in json.loads(text).items():
            if key in ("task", "docs_sha256"):
                continue
            shown = json.dumps(value, ensure_ascii=False, default=str)
            if shown not in merged.setdefault(key, []):
                merged[key].append(shown)
    return ", ".join(f"{k}={'/'.join(v)}" for k, v in sorted(merged.items()))


def _run_rows(records: pd.DataFrame, table: str, keys: list[str]) -> list[dict]:
    """One row per model (and dialect) and setting of ``table``'s records: the shown run per cell (records without
    ``shown``: the latest by ``written_at``, finished first), values as raw floats."""
    recs = records[records["table"] == table]
    if "shown" in recs:
        recs = recs[recs["shown"].astype(bool)]
    recs = recs.sort_values(["finished", "written_at"], na_position="first", kind="stable")
    keys = [*keys, "setting"]  # differently configured runs are different rows, never merged
    recs = recs.drop_duplicates([*keys, "column"], keep="last")  # one value per cell, whatever records came in
    rows = []
    for key_values, group in recs.groupby(keys, sort=False, dropna=False):
        key_values = key_values if isinstance(key_values, tuple) else (key_values,)
        row: dict[str, Any] = {"source": RUN_SOURCE, **dict(zip(keys, key_values))}
        row["config_ids"] = " ".join(sorted({str(c) for c in group["config_id"].dropna()}))
        scored = group.dropna(subset=["column"])
        row.update(dict(zip(scored["column"], scored["value"])))
        row["partial"] = bool(group["partial"].any())
        row["samples"] = ", ".join(
            f"{c} {'' if pd.isna(n) else int(n)}/{'' if pd.isna(e) else int(e)}"
            if not pd.isna(c)
            else f"{int(n or 0)} items, not scored"
            for c, n, e in zip(group["column"], group["n"], group["expected_n"])
        )
        row["options"] = _options_text(group["options"])
        rows.append(row)
    return rows


def _combine(published: pd.DataFrame, run_rows: list[dict], value_cols: list[str]) -> pd.DataFrame:
    marks = ["partial", "samples", "setting", "options", "config_ids"]  # what tells a run row from a paper row
    paper_part = published.assign(source=PAPER_SOURCE, partial=False, samples="", setting="", options="", config_ids="")
    runs = pd.DataFrame(run_rows)
    if runs.empty:
        return paper_part[["source", *published.columns, *marks]].reset_index(drop=True)
    for col in value_cols:
        runs[col] = runs[col].map(_text) if col in runs else ""
    extra = [c for c in value_cols if c not in published.columns]
    cols = ["source", *published.columns, *extra, *marks]
    out = pd.concat([paper_part, runs], ignore_index=True).reindex(columns=cols)
    text_cols = [c for c in cols if c != "partial"]
    out[text_cols] = out[text_cols].astype(object).where(out[text_cols].notna(), "")
    return out


def h6_with_runs(published: pd.DataFrame, records: pd.DataFrame) -> pd.DataFrame:
    """Kim et al. Table 4 with this toolkit's runs below it; a run's H6 average only when all six tasks ran."""
    rows = _run_rows(records, "h6", ["model"])
    for row in rows:
        have = [row.get(t) for t in H6_TASKS]
        row["thai_h6_avg"] = sum(have) / len(have) if all(v is not None and not pd.isna(v) for v in have) else None
        row["partial"] = row["partial"] or row["thai_h6_avg"] is None
    return _combine(published, rows, ["thai_h6_avg", *H6_TASKS])


def thaicli_with_runs(published: pd.DataFrame, records: pd.DataFrame) -> pd.DataFrame:
    """Kim et al. Table 5 with this toolkit's runs below it (judge scores, and the judge-free win rates x100)."""
    rows = _run_rows(records, "thaicli", ["model"])
    for row in rows:
        if (
            pd.isna(row.get("thaicli", None))
            and not pd.isna(row.get("factoid"))
            and not pd.isna(row.get("instruction"))
        ):
            row["thaicli"] = (row["factoid"] + row["instruction"]) / 2
        row["thaicli_avg"] = row.pop("thaicli", None)
        row["partial"] = row["partial"] or row["thaicli_avg"] is None or pd.isna(row["thaicli_avg"])
    return _combine(published, rows, ["thaicli_avg", "factoid", "instruction", "loglik_win_raw", "loglik_win_norm"])


def dialect_with_runs(published: pd.DataFrame, records: pd.DataFrame) -> pd.DataFrame:
    """Limkonchotiwat et al. Table 1 with this toolkit's runs; a run's ΔDiff = its Central minus its dialect score."""
    rows = _run_rows(records, "dialect_auto", ["model", "dialect"])
    central = {r["model"]: r for r in rows if r["dialect"] == CENTRAL}
    for row in rows:
        base = central.get(row["model"])
        for metric in DIALECT_METRICS:
            delta = metric.rsplit("_", 1)[0] + "_delta"
            if row["dialect"] != CENTRAL and base is not None and metric in base and metric in row:
                row[delta] = base[metric] - row[metric]
    cols = [c for c in published.columns if c not in ("model", "dialect")]
    return _combine(published, rows, cols)


#: Published tables that can hold this toolkit's runs, and the function that places them.
WITH_RUNS = {"h6": h6_with_runs, "thaicli": thaicli_with_runs, "dialect_auto": dialect_with_runs}


def table_with_runs(
    key: str,
    tables: Mapping[str, pd.DataFrame] | None = None,
    outputs: str | Path | None = None,
    *,
    include_runs: bool = True,
    records: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """A published table with a ``source`` column (``"paper"`` / ``"thai-eval run"``) and, where the
    benchmark has runs, this toolkit's rows below the paper's, marked ``partial`` and with their
    ``samples`` (scored/full item counts) and ``options``. Cells are printed strings."""
    tables = tables if tables is not None else load_all_published()
    if key in WITH_RUNS and include_runs:
        records = run_records(outputs, tables) if records is None else records
        return WITH_RUNS[key](tables[key], records)
    return tables[key].assign(source=PAPER_SOURCE)[["source", *tables[key].columns]]
