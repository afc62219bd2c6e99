"""Scores in the results format the Thai LLM Leaderboard stores: ``{"config": {"model_name": ...}, "results":
{task: {metric: value}}}``, one file per model (``<to>/<model_name_sanitized>/results_<date_id>.json``), plus a
``thai_eval`` key with every task's signature and sample counts.

Each suite says what its runs add (:meth:`~thai_eval_utils.core.benchmark.Suite.leaderboard_results`: task key ->
metric -> value) and what is computed over a model's tasks (``leaderboard_summary``, e.g. an average); the task
keys are documented in README "Export".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from thai_eval_utils import __version__
from thai_eval_utils.core import registry
from thai_eval_utils.core.provenance import redact
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.export.lm_eval import date_id, sanitize_model_name
from thai_eval_utils.export.stored import signature


def leaderboard_tasks(run: StoredRun) -> dict[str, dict[str, float]]:
    """One run's ``results`` entries (task -> metric -> value), as its suite makes them; none for a run no
    registered suite reads."""
    suite = registry.suite_of(run.benchmark)
    return suite.leaderboard_results(run) if suite is not None else {}


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
    for suite in registry.suites().values():
        results.update(suite.leaderboard_summary(results))
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
