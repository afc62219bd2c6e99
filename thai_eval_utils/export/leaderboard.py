"""Scores in the layout the Thai LLM Leaderboard ingests: what its runner's
``scripts/transform_result.py`` (scbdatax/seacrowd-eval @9de9392, ``:13-125``) writes for the
``ThaiLLM-Leaderboard/results`` dataset, byte for byte:

- one ``<to>/<FOLDER>/<model>/results.json`` per category folder and model, ``<model>`` the model id's last path
  component;
- its content ``{"config": {"model_name": <id>}, "results": {<key>: {<metric>: value}}}``, ``<id>`` the model id
  or ``"api/" + id`` when the id has no ``/`` (``:157-161``), written as ``json.dump(..., ensure_ascii=False)``:
  one line, no indent, no trailing newline.

Each suite says what its runs add (:meth:`~thai_eval_utils.core.benchmark.Suite.leaderboard_results`: key ->
metric -> value), what is computed over a model's entries (``leaderboard_summary``, e.g. the Thai-H6 average) and
in which folder each key goes (``leaderboard_folder``: the leaderboard's ``NLU``/``MC``/``NLG``/``LLM`` for its own
tasks, the suite's name for the others). The leaderboard reads nothing else, so thai-eval's signature of each entry
(protocol options, template and data hashes, n, limit, config ids) goes beside it in
``<FOLDER>/<model>/thai_eval.json``, never inside ``results.json``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from thai_eval_utils import __version__
from thai_eval_utils.core import registry
from thai_eval_utils.core.benchmark import Suite
from thai_eval_utils.core.provenance import redact
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.export.stored import signature

#: thai-eval's signature file beside each ``results.json``.
SIGNATURE_FILE = "thai_eval.json"


def leaderboard_model_id(run: StoredRun) -> str:
    """The model id the runner is given: a Hub id for a Hub model (``hf:<id>`` source), the served model's id for
    an API model, else the run's model name."""
    model = run.card.get("model") or {}
    source = str(model.get("source") or "")
    if source.startswith("hf:"):
        return source[3:]
    return str(model.get("model_id") or run.model_name)


def leaderboard_model_name(model_id: str) -> str:
    """``config.model_name`` as the transform writes it: the id, or ``api/<id>`` when it has no ``/``."""
    return model_id if "/" in model_id else f"api/{model_id}"


def _counts(run: StoredRun) -> dict[str, Any]:
    s = run.summary
    n, total = s.get("n", s.get("n_items")), s.get("n_docs")
    return {
        "benchmark": run.benchmark,
        "n": n,
        "n_docs": total,
        "limit": s.get("limit"),
        "partial": bool(s.get("n_unjudged")) or (n is not None and total is not None and n < total),
        **signature(run),
    }


def _order(suite: Suite, key: str) -> int:
    return suite.tasks.index(key) if key in suite.tasks else len(suite.tasks)


def model_folders(runs: Sequence[StoredRun]) -> dict[str, dict[str, Any]]:
    """One model's entries by category folder: ``{folder: {"results": {...}, "tasks": {key: signature}}}``, keys
    in each suite's task order (then as the suite gave them)."""
    entries: list[tuple[Suite, str, dict[str, float], StoredRun | None]] = []
    results: dict[str, dict[str, float]] = {}
    for run in runs:
        suite = registry.suite_of(run.benchmark)
        if suite is None:
            continue
        for key, metrics in suite.leaderboard_results(run).items():
            entries.append((suite, key, dict(metrics), run))
            results[key] = dict(metrics)
    for suite in registry.suites().values():
        for key, metrics in suite.leaderboard_summary(results).items():
            entries.append((suite, key, dict(metrics), None))
    ranked = sorted(enumerate(entries), key=lambda e: (e[1][0].position, e[1][0].name, _order(e[1][0], e[1][1]), e[0]))
    folders: dict[str, dict[str, Any]] = {}
    for _, (suite, key, metrics, run) in ranked:
        folder = folders.setdefault(suite.leaderboard_folder(key), {"results": {}, "tasks": {}})
        folder["results"][key] = metrics
        folder["tasks"][key] = _counts(run) if run is not None else {"computed_from": sorted(folder["tasks"])}
    return folders


def results_json(model_id: str, results: Mapping[str, Mapping[str, float]]) -> str:
    """The text of one ``results.json``, as the transform's ``json.dump(..., ensure_ascii=False)`` writes it."""
    return json.dumps(
        {"config": {"model_name": leaderboard_model_name(model_id)}, "results": results}, ensure_ascii=False
    )


def write_leaderboard(runs: Sequence[StoredRun], to: str | Path) -> list[Path]:
    """``<to>/<FOLDER>/<model>/results.json`` (and its ``thai_eval.json``) per model and folder; returns the
    ``results.json`` files written."""
    by_model: dict[str, list[StoredRun]] = {}
    for run in runs:
        by_model.setdefault(leaderboard_model_id(run), []).append(run)
    written = []
    for model_id, model_runs in by_model.items():
        for folder, entry in model_folders(model_runs).items():
            if not entry["results"]:
                continue
            target = Path(to) / folder / model_id.split("/")[-1]
            target.mkdir(parents=True, exist_ok=True)
            path = target / "results.json"
            path.write_text(results_json(model_id, entry["results"]), encoding="utf-8")
            sig = redact(
                {
                    "producer": f"thai-eval {__version__}",
                    "model_name": leaderboard_model_name(model_id),
                    "tasks": entry["tasks"],
                }
            )
            (target / SIGNATURE_FILE).write_text(json.dumps(sig, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            written.append(path)
    return written
