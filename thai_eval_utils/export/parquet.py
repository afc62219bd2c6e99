"""Per-item details as Parquet, one table per benchmark family (``<to>/details_<family>.parquet``; lighteval's
"details" idea): one row per stored item with ``model, benchmark, task, key, prompt_hash, inputs, outputs,
metrics, config_id, signature``. ``inputs``, ``outputs`` and ``metrics`` are JSON texts (every task's items have
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

from thai_eval_utils.core.provenance import redact
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.export.stored import signature
from thai_eval_utils.h6.tasks import TASK_METRICS

COLUMNS = ["model", "benchmark", "task", "key", "prompt_hash", "inputs", "outputs", "metrics", "config_id", "signature"]
#: Per-item metric fields (Thai-H6 metrics, the ThaiCLI judge's score, the judge-free wins).
METRIC_FIELDS = {m for ms in TASK_METRICS.values() for m in ms} | {"score", "win_raw", "win_norm"}
#: Fields that say what was asked (the rest of a record is what the model answered and how it was read).
INPUT_FIELDS = {"doc", "doc_row", "shots", "subject", "id", "format", "theme", "question", "prompt", "messages",
                "dialect", "task", "gold", "chosen", "rejected", "reference"}


def _json(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, default=str)


def detail_rows(run: StoredRun) -> list[dict[str, Any]]:
    """One row per stored item of ``run``."""
    made = _json({"config_id": run.card.get("config_id"), "scores": signature(run)["score_signatures"]})
    rows = []
    for rec in run.records():
        fields = {k: v for k, v in rec.items() if k not in ("key", "prompt_sha256")}
        rows.append({
            "model": run.model_name, "benchmark": run.benchmark, "task": run.task, "key": str(rec["key"]),
            "prompt_hash": rec.get("prompt_sha256"),
            "inputs": _json({k: v for k, v in fields.items() if k in INPUT_FIELDS}),
            "outputs": _json({k: v for k, v in fields.items() if k not in INPUT_FIELDS and k not in METRIC_FIELDS}),
            "metrics": _json({k: v for k, v in fields.items() if k in METRIC_FIELDS}),
            "config_id": run.card.get("config_id"), "signature": made,
        })  # fmt: skip
    return rows


def write_parquet(runs: Sequence[StoredRun], to: str | Path) -> list[Path]:
    """``details_<family>.parquet`` per benchmark family under ``to``; returns the files written."""
    families: dict[str, list[StoredRun]] = {}
    for run in runs:
        families.setdefault(run.benchmark.split("/")[0], []).append(run)
    written = []
    Path(to).mkdir(parents=True, exist_ok=True)
    for family, family_runs in sorted(families.items()):
        frame = pd.DataFrame([r for run in family_runs for r in detail_rows(run)], columns=COLUMNS)
        frame = pd.DataFrame(redact(frame.to_dict("records")), columns=COLUMNS)
        table = pa.Table.from_pandas(frame, preserve_index=False)
        meta = {**(table.schema.metadata or {}), b"thai_eval": _json(
            {f"{r.model_name}|{r.benchmark}": signature(r) for r in family_runs}).encode("utf-8")}
        path = Path(to) / f"details_{family}.parquet"
        pq.write_table(table.replace_schema_metadata(meta), path)
        written.append(path)
    return written
