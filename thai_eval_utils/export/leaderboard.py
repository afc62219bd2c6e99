"""Scores in the results format the Thai LLM Leaderboard stores: ``{"config": {"model_name": ...}, "results":
{task: {metric: value}}}``, one file per model (``<to>/<model_name_sanitized>/results_<date_id>.json``), plus a
``thai_eval`` key with every task's signature and sample counts.

Task names (documented in README "Export"):

- ``th_arc``, ``th_hellaswag``, ``th_mmlu``, ``th_truthfulqa``, ``th_winogrande``, ``th_gsm8k``: every stored score of
  the task on a 0-1 scale (``acc_norm``, ``acc``, ``acc_bytes``, MMLU's ``acc_macro``/``acc_micro``, ``mc1``, ``mc2``,
  ``mc2_lb``, ``mc2_mask``, ``exact_match``, ``flexible_match``);
- ``thai_h6``: ``{"average": ...}``, the Thai-H6 average (0-100), only when all six tasks are present;
- ``thaicli``: ``thaicli``, ``factoid``, ``instruction`` (the judge's 1-10 means);
- ``thaicli_loglik``: ``win_raw``, ``win_norm`` (0-1);
- ``dialect_<dialect>_<task>``: ``{metric: value}`` as the dialect summary stores them (x100, as the paper prints).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from thai_eval_utils import __version__
from thai_eval_utils.core.provenance import redact
from thai_eval_utils.export.lm_eval import date_id, sanitize_model_name
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.export.stored import signature
from thai_eval_utils.h6 import TASKS as H6_TASKS
from thai_eval_utils.h6 import tasks as T


def _value(entry: Any) -> float | None:
    return float(entry["value"]) if isinstance(entry, dict) and entry.get("value") is not None else None


def leaderboard_tasks(run: StoredRun) -> dict[str, dict[str, float]]:
    """One run's ``results`` entries (task -> metric -> value)."""
    scores = run.summary.get("scores") or {}
    family = run.benchmark.split("/")[0]
    if family == "thai_h6":
        spec = T.get_task(run.task)
        return {spec.name: {m: v for m, e in scores.items() if (v := _value(e)) is not None}}  # MMLU: acc_macro/micro too
    if run.benchmark == "thaicli/judge":
        return {"thaicli": {m: v for m in ("thaicli", "factoid", "instruction") if (v := _value(scores.get(m))) is not None}}
    if run.benchmark == "thaicli/loglik":
        return {"thaicli_loglik": {m: v for m in ("win_raw", "win_norm") if (v := _value(scores.get(m))) is not None}}
    if family == "dialect":
        out: dict[str, dict[str, float]] = {}
        for key, entry in scores.items():
            parts = str(key).split("/")
            if len(parts) == 3 and (v := _value(entry)) is not None:
                out.setdefault(f"dialect_{parts[0]}_{parts[1]}", {})[parts[2]] = v
        return out
    return {}


def _counts(run: StoredRun) -> dict[str, Any]:
    s = run.summary
    n, total = s.get("n", s.get("n_items")), s.get("n_docs")
    return {"benchmark": run.benchmark, "n": n, "n_docs": total, "limit": s.get("limit"),
            "partial": bool(s.get("n_unjudged")) or (n is not None and total is not None and n < total),
            **signature(run)}


def leaderboard_document(runs: Sequence[StoredRun]) -> dict[str, Any]:
    """One model's leaderboard results JSON."""
    results: dict[str, dict[str, float]] = {}
    signatures: dict[str, Any] = {}
    for run in runs:
        entries = leaderboard_tasks(run)
        results.update(entries)
        for task in entries:
            signatures[task] = _counts(run)
    if all(t in results for t in H6_TASKS):
        heads = [results[t].get(T.get_task(t).headline) for t in H6_TASKS]
        if all(h is not None for h in heads):
            results["thai_h6"] = {"average": 100 * sum(heads) / len(heads)}
    model = runs[0].model_name
    config = {"model_name": model, "model_sha": (runs[0].card.get("model") or {}).get("weights_fingerprint")
              or (runs[0].card.get("model") or {}).get("gguf_sha256")}
    return redact({"config": config, "results": results,
                   "thai_eval": {"producer": f"thai-eval {__version__}", "tasks": signatures}})


def write_leaderboard(runs: Sequence[StoredRun], to: str | Path, *, when: datetime | None = None) -> list[Path]:
    """One results JSON per model under ``to``; returns the files written."""
    by_model: dict[str, list[StoredRun]] = {}
    for run in runs:
        by_model.setdefault(run.model_name, []).append(run)
    written = []
    for model, model_runs in by_model.items():
        doc = leaderboard_document(model_runs)
        if not doc["results"]:
            continue
        folder = Path(to) / sanitize_model_name(model)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"results_{date_id(when)}.json"
        path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(path)
    return written
