"""The stored runs an export reads: the latest finished run per model and benchmark, its items, and thai-eval's
signature of how its numbers were made (protocol options, template and data hashes, versions; secrets redacted).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from thai_eval_utils import __version__
from thai_eval_utils.core.data_origin import keyed_origins
from thai_eval_utils.core.provenance import redact
from thai_eval_utils.core.runs import StoredRun, latest_finished, list_runs, model_matches


def signature(run: StoredRun) -> dict[str, Any]:
    """thai-eval's signature of a run's numbers: benchmark, config id, protocol options, prompt template and data
    file hashes, where fetched data came from (``data_sources``: source@revision:path, only for runs on fetched full
    data), package versions, the scores' signature strings, run dates (secrets redacted)."""
    card = run.card
    scores = (run.summary or {}).get("scores") or {}
    return redact(
        {
            "producer": f"thai-eval {__version__}",
            "benchmark": run.benchmark,
            "config_id": card.get("config_id"),
            "protocol": card.get("config", {}),
            "prompt_template_sha256": card.get("prompt_template_sha256", {}),
            "data_sha256": sorted(set((card.get("data_files") or {}).values())),
            **({"data_sources": keyed_origins(card["data_sources"])} if card.get("data_sources") else {}),
            "package_versions": card.get("package_versions", {}),
            "model": {k: v for k, v in (card.get("model") or {}).items() if k != "base_url"},
            "score_signatures": sorted({s.get("signature", "") for s in scores.values() if isinstance(s, dict)} - {""}),
            "created_at": card.get("created_at"),
            "finished_at": card.get("finished_at"),
        }
    )


def finished_runs(
    outputs: str | Path | None = None, models: Sequence[str] = (), family: str | None = None
) -> list[StoredRun]:
    """The latest finished run (:func:`~thai_eval_utils.core.runs.latest_finished`) per model and benchmark under
    ``<outputs>/runs``; ``models`` keeps those whose model name or folder contains one of the strings; ``family``
    keeps one suite."""
    runs = [r for r in list_runs(outputs) if model_matches(r, models) and (family is None or r.family == family)]
    return sorted(latest_finished(runs).values(), key=lambda r: (r.model_name, r.benchmark))
