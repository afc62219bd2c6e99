"""The stored runs an export reads: the latest finished run per model and benchmark, its items, and thai-eval's
signature of how its numbers were made (protocol options, template and data hashes, versions; secrets redacted).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thai_eval_utils import __version__
from thai_eval_utils.core.provenance import redact
from thai_eval_utils.core.run_files import latest_records
from thai_eval_utils.core.store import list_runs


@dataclass
class StoredRun:
    """One finished run: its folder, run card and summary."""

    dir: Path
    card: dict[str, Any]
    summary: dict[str, Any]

    @property
    def model(self) -> str:
        return str(self.card.get("model_name", ""))

    @property
    def benchmark(self) -> str:
        return str(self.card.get("benchmark", ""))

    @property
    def task(self) -> str:
        """The part after the family (``th_arc`` of ``thai_h6/th_arc``, ``judge`` of ``thaicli/judge``)."""
        return self.benchmark.split("/", 1)[-1]

    def items(self) -> Iterator[dict[str, Any]]:
        """Every stored record, the last one per key (as the store's ``completed``), in file order."""
        yield from latest_records(self.dir / "items.jsonl")

    def signature(self) -> dict[str, Any]:
        """thai-eval's signature of the numbers: benchmark, config id, protocol options, prompt template and data
        file hashes, package versions, the scores' signature strings, run dates (secrets redacted)."""
        card = self.card
        scores = (self.summary or {}).get("scores") or {}
        return redact({
            "producer": f"thai-eval {__version__}", "benchmark": self.benchmark, "config_id": card.get("config_id"),
            "protocol": card.get("config", {}), "prompt_template_sha256": card.get("prompt_template_sha256", {}),
            "data_sha256": sorted(set((card.get("data_files") or {}).values())),
            "package_versions": card.get("package_versions", {}),
            "model": {k: v for k, v in (card.get("model") or {}).items() if k != "base_url"},
            "score_signatures": sorted({s.get("signature", "") for s in scores.values() if isinstance(s, dict)} - {""}),
            "created_at": card.get("created_at"), "finished_at": card.get("finished_at"),
        })  # fmt: skip


def finished_runs(outputs: str | Path | None = None, models: Sequence[str] = (), family: str | None = None) -> list[StoredRun]:
    """The latest finished run (by summary time) per model and benchmark under ``<outputs>/runs``; ``models``
    keeps those whose model name or folder contains one of the strings; ``family`` keeps one benchmark family."""
    latest: dict[tuple[str, str], StoredRun] = {}
    for run in list_runs(outputs):
        if run["summary"] is None:
            continue
        stored = StoredRun(Path(run["dir"]), run["card"], run["summary"])
        if family and stored.benchmark.split("/")[0] != family:
            continue
        if models and not any(m.lower() in stored.model.lower() or m.lower() in str(stored.dir).lower() for m in models):
            continue
        key = (stored.model, stored.benchmark)
        if key not in latest or str(stored.summary.get("written_at", "")) >= str(latest[key].summary.get("written_at", "")):
            latest[key] = stored
    return sorted(latest.values(), key=lambda r: (r.model, r.benchmark))
