"""The report's item browser records: one record per item of every selected run, each readable on
its own, as the run's suite shows it (``Suite.item_views`` -> :class:`~thai_eval_utils.core.benchmark.ItemView`).

Records use short keys (the report embeds tens of thousands of them; ``ItemView.SHORT``): ``id``, ``m`` model,
``b`` benchmark (the suite), ``t`` task, ``k`` the key that pairs one item across models, ``v`` the headline value,
``c`` correct (0/1 metrics), ``q`` question or prompt, ``ch`` choices, ``ll`` their log-likelihoods, ``p`` the
model's choice, ``g`` gold, ``o`` output, ``fs`` few-shot block (pool id, example indices), ``ref`` reference,
``j`` judge reply, ``js`` judge status, ``r`` judge repeat, ``sub`` subject, ``hash`` prompt hash, ``note`` what
could not be shown and why, ``ql``/``ol`` what the detail pane calls the question and the output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from thai_eval_utils.compare.items import Headline
from thai_eval_utils.core import registry
from thai_eval_utils.report.runs import ReportRuns


def collect_items(
    runs: ReportRuns, heads: dict[str, list[Headline]], *, data_dir: str | Path | None = None
) -> tuple[list[dict[str, Any]], dict[str, list[str]], list[str]]:
    """Every item of every selected run.

    Args:
        runs: the selected runs (:func:`~thai_eval_utils.report.runs.collect_runs`).
        heads: model -> its headline per-item values (``report.leaderboard.model_headlines``; some suites show
            their items from them).
        data_dir: a data root holding each suite's data folder, to resolve what older records lack.

    Returns:
        ``(items, few-shot pools, notes)``.
    """
    data_dir = Path(data_dir) if data_dir else None
    items: list[dict[str, Any]] = []
    pools: dict[str, list[str]] = {}
    notes: list[str] = []
    for model, run in runs.runs():
        suite = registry.suite_of(run.benchmark)
        if suite is None:
            continue
        said: list[str] = []
        views = suite.item_views(run, [h for h in heads.get(model, []) if h.run is run], data_dir, pools, said)
        notes += [f"{model} {n}" for n in said]
        for view in views:
            rec = view.record(suite.name)
            rec["m"] = model
            items.append(rec)
    for i, it in enumerate(items):
        it["id"] = i
    return items, pools, notes


def items_frame(items: list[dict[str, Any]]) -> pd.DataFrame:
    """The items as a DataFrame with readable column names, every field a column (for notebooks and tests)."""
    names = {
        "m": "model",
        "b": "benchmark",
        "t": "task",
        "k": "key",
        "v": "value",
        "c": "correct",
        "q": "question",
        "ch": "choices",
        "ll": "loglikelihoods",
        "p": "pred",
        "g": "gold",
        "o": "output",
        "ref": "reference",
        "j": "judge_reply",
        "js": "judge_status",
        "r": "repeat",
        "sub": "subject",
        "fs": "fewshot",
        "note": "note",
        "ql": "question_label",
        "ol": "output_label",
    }
    frame = pd.DataFrame(items).rename(columns=names)
    return frame.reindex(
        columns=["id", *names.values(), *[c for c in frame.columns if c not in names.values() and c != "id"]]
    )


def to_json(obj: Any) -> str:
    """Compact JSON (Thai kept as is) for embedding."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
