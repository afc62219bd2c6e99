"""Per-item details as Parquet, one table per suite (``<to>/details_<suite>.parquet``; lighteval's "details"
idea): one row per stored item with ``model, benchmark, task, key, prompt_hash, inputs, outputs, metrics,
config_id, signature``; the suite splits its records into inputs, outputs and metrics
(:meth:`~thai_eval_utils.core.benchmark.Suite.detail_rows`). ``inputs``, ``outputs`` and ``metrics`` are JSON texts (every task's items have
other fields; JSON keeps one schema per file that ``pandas.read_parquet`` and ``datasets``' parquet loader read
alike). The file's schema metadata holds ``thai_eval``: every run's signature.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from thai_eval_utils.core import registry
from thai_eval_utils.core.benchmark import Suite
from thai_eval_utils.core.provenance import redact
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.export.stored import signature

COLUMNS = ["model", "benchmark", "task", "key", "prompt_hash", "inputs", "outputs", "metrics", "config_id", "signature"]
#: What reads a run no registered suite reads: the contract's defaults.
_UNREGISTERED = Suite()


def _json(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, default=str)


def detail_rows(run: StoredRun) -> list[dict[str, Any]]:
    """One row per stored item of ``run`` (:data:`COLUMNS`; inputs, outputs and metrics as JSON texts)."""
    sig = signature(run)
    made = _json(
        {
            "config_id": run.card.get("config_id"),
            "scores": sig["score_signatures"],
            **({"data_sources": sig["data_sources"]} if "data_sources" in sig else {}),
        }
    )
    suite = registry.suite_of(run.benchmark) or _UNREGISTERED
    return [
        {
            "model": run.model_name,
            "benchmark": run.benchmark,
            "task": run.task,
            "key": str(row["key"]),
            "prompt_hash": row.get("prompt_hash"),
            "inputs": _json(row.get("inputs") or {}),
            "outputs": _json(row.get("outputs") or {}),
            "metrics": _json(row.get("metrics") or {}),
            "config_id": run.card.get("config_id"),
            "signature": made,
        }
        for row in suite.detail_rows(run)
    ]


def write_parquet(runs: Sequence[StoredRun], to: str | Path) -> list[Path]:
    """``details_<suite>.parquet`` per suite under ``to``; returns the files written."""
    families: dict[str, list[StoredRun]] = {}
    for run in runs:
        families.setdefault(run.family, []).append(run)
    written = []
    Path(to).mkdir(parents=True, exist_ok=True)
    for family, family_runs in sorted(families.items()):
        frame = pd.DataFrame([r for run in family_runs for r in detail_rows(run)], columns=COLUMNS)
        frame = pd.DataFrame(redact(frame.to_dict("records")), columns=COLUMNS)
        table = pa.Table.from_pandas(frame, preserve_index=False)
        meta = {
            **(table.schema.metadata or {}),
            b"thai_eval": _json({f"{r.model_name}|{r.benchmark}": signature(r) for r in family_runs}).encode("utf-8"),
        }
        path = Path(to) / f"details_{family}.parquet"
        pq.write_table(table.replace_schema_metadata(meta), path)
        written.append(path)
    return written
