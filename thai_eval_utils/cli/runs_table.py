"""``thai-eval runs``: the stored runs under ``<outputs>/runs`` as one table (the store's
:func:`~thai_eval_utils.core.runs.list_runs`), one row per run folder: model, benchmark, task, config id, items
done / total, limit, partial, finished, date and folder. ``items`` counts the records stored (``items.jsonl``);
``total`` the records a whole run holds: the split's documents (``n_docs``, where the summary gives it) times
``per_item``, the records stored per document (a suite that repeats its runs writes ``records_per_item`` into its
summary: one record per run; else 1), so both count the same thing; ``partial`` is also the paper tables' verdict
(fewer items than the paper's dataset).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from thai_eval_utils.core.runs import list_runs
from thai_eval_utils.paper.own_runs import run_records
from thai_eval_utils.paper.run_choice import run_setting

COLUMNS = [
    "model",
    "benchmark",
    "task",
    "config_id",
    "setting",
    "items",
    "total",
    "per_item",
    "limit",
    "partial",
    "finished",
    "date",
    "where",
]


def _count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    with open(path, encoding="utf-8") as fh:
        return sum(1 for line in fh if line.strip())


def _run_row(run: dict[str, Any], paper_partial: dict[str, bool]) -> dict[str, Any]:
    card, summary = run.card, run.summary
    bench = str(card.get("benchmark", ""))
    family, _, task = bench.partition("/")
    done = _count_lines(Path(run.dir) / "items.jsonl")
    per_item = int((summary or {}).get("records_per_item") or 1)  # repeated runs: one stored record per run
    docs = None if summary is None else summary.get("n_docs")  # the split's documents
    total = None if docs is None else int(docs) * per_item  # records, as ``items`` counts them
    limit = None if summary is None else summary.get("limit")
    partial = summary is None or bool(summary.get("n_unjudged")) or (total is not None and done < int(total))
    # the paper tables' verdict too: fewer items than the paper's dataset (ThaiCLI, dialects) is partial
    partial = partial or paper_partial.get(str(run.dir), False)
    when = (summary or {}).get("written_at") or (card.get("resumed_at") or [card.get("created_at")])[-1]
    return {
        "model": card.get("model_name"),
        "benchmark": family,
        "task": task,
        "config_id": card.get("config_id"),
        "setting": run_setting(card),
        "items": done,
        "total": total,
        "per_item": per_item,
        "limit": limit,
        "partial": partial,
        "finished": summary is not None,
        "date": str(when or "")[:19].replace("T", " "),
        "where": str(run.dir),
    }


def runs_table(
    outputs: str | Path | None = None, *, models: Sequence[str] = (), since: str | None = None
) -> pd.DataFrame:
    """Every stored run as a row (see the module docstring); ``models`` keeps runs whose model name or folder slug
    contains one of them; ``since`` (an ISO time) keeps runs created, resumed or finished at or after it."""
    records = run_records(outputs)
    paper_partial = records.groupby("run_dir")["partial"].any().to_dict() if len(records) else {}
    rows = []
    for run in list_runs(outputs):
        card = run.card
        if models and not any(
            m.lower() in str(card.get("model_name", "")).lower() or m.lower() in str(run.dir).lower() for m in models
        ):
            continue
        stamps = [card.get("created_at"), card.get("finished_at"), *(card.get("resumed_at") or [])]
        if since is not None and not any(s and str(s) >= since for s in stamps):
            continue
        rows.append(_run_row(run, paper_partial))
    return pd.DataFrame(rows, columns=COLUMNS)
