"""Stored runs as readers see them: one type (:class:`StoredRun`) and one definition of "the latest finished run"
(:func:`latest_finished`), used by compare, the report, the exports, the runs table and the paper tables.

A run folder ``<outputs>/runs/<model-slug>/<benchmark>/<config-id>/`` is written by :class:`~.store.RunStore`;
here it is only read: the card checked and, for an earlier store format, migrated (:func:`~.migrate.migrate_card`),
the summary checked, the records read defensively (:func:`~.run_files.latest_records`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.migrate import migrate_card
from thai_eval_utils.core.provenance import outputs_dir
from thai_eval_utils.core.run_files import FIX_CARD, FIX_SUMMARY, check_card, latest_records, read_json_file


@dataclass(frozen=True)
class StoredRun:
    """One stored run: its folder, its run card (checked, migrated) and its summary (None while unfinished)."""

    dir: Path
    card: dict[str, Any]
    summary: dict[str, Any] | None

    @property
    def benchmark(self) -> str:
        """The run card's benchmark, ``<suite>/<task>`` (``thai_h6/th_arc``, ``thaicli/judge``)."""
        return str(self.card.get("benchmark", ""))

    @property
    def family(self) -> str:
        """The suite the run belongs to: the part of ``benchmark`` before the first ``/``."""
        return self.benchmark.split("/")[0]

    @property
    def task(self) -> str:
        """The part of ``benchmark`` after the suite (``th_arc`` of ``thai_h6/th_arc``)."""
        return self.benchmark.split("/", 1)[-1]

    @property
    def model_name(self) -> str:
        return str(self.card.get("model_name", ""))

    @property
    def finished(self) -> bool:
        return self.summary is not None

    @property
    def when(self) -> str:
        """When the run last finished (else was created): an ISO time, which sorts chronologically."""
        return str(self.card.get("finished_at") or self.card.get("created_at") or "")

    @property
    def data_hash(self) -> str | None:
        """The data the run read: its data files' hashes, sorted and joined with ``+`` (as
        :func:`thai_eval_utils.stats.align.data_hash`), else the documents passed in memory (the config's
        ``docs_sha256``); None when the card records neither."""
        files = self.card.get("data_files") or {}
        if files:
            return "+".join(sorted(str(h) for h in files.values()))
        docs = (self.card.get("config") or {}).get("docs_sha256")
        return str(docs) if docs else None

    def records(self) -> list[dict[str, Any]]:
        """The records of ``items.jsonl`` in file order, the last record of a key winning (as ``RunStore.completed``)."""
        return latest_records(self.dir / "items.jsonl")

    @classmethod
    def from_dir(cls, folder: str | Path) -> StoredRun:
        """The run in ``folder``; a :class:`ThaiEvalDataError` naming the file when the card or summary is missing
        or damaged."""
        folder = Path(folder)
        card_path, summary_path = folder / "run_card.json", folder / "summary.json"
        if not card_path.exists():
            raise ThaiEvalDataError("no run_card.json: not a run folder", path=folder)
        card = check_card(card_path, read_json_file(card_path, "the run card", FIX_CARD), None)
        summary = _read_summary(summary_path) if summary_path.exists() else None
        return cls(folder, migrate_card(card, card_path), summary)

    def __str__(self) -> str:
        return f"{self.benchmark}: {self.dir} ({self.model_name}, {self.when})"


def _read_summary(path: Path) -> dict[str, Any]:
    summary = read_json_file(path, "the run's summary", FIX_SUMMARY)
    if not isinstance(summary, dict):
        raise ThaiEvalDataError(
            f"the run's summary is a JSON {type(summary).__name__}, not an object; {FIX_SUMMARY}", path=path
        )
    return summary


def read_run(folder: str | Path) -> StoredRun:
    """The run in ``folder`` (:meth:`StoredRun.from_dir`)."""
    return StoredRun.from_dir(folder)


def list_runs(outputs: str | Path | None = None) -> list[StoredRun]:
    """Every run under ``<outputs>/runs`` (default ``$THAI_EVAL_OUTPUTS`` or ``outputs``), in folder order."""
    base = Path(outputs or outputs_dir()) / "runs"
    return [StoredRun.from_dir(card_path.parent) for card_path in sorted(base.rglob("run_card.json"))]


def recency(run: StoredRun) -> tuple[str, str, str]:
    """The one order of "latest": the card's ``finished_at`` (else ``created_at``), then the summary's
    ``written_at``, then the folder name (so two runs finished in the same second are ordered the same everywhere)."""
    return run.when, str((run.summary or {}).get("written_at", "")), run.dir.name


def latest_finished(runs: Iterable[StoredRun]) -> dict[tuple[str, str], StoredRun]:
    """(model name, benchmark) -> the latest finished run of it (by :func:`recency`); unfinished runs never count."""
    latest: dict[tuple[str, str], StoredRun] = {}
    for run in runs:
        if not run.finished:
            continue
        key = (run.model_name, run.benchmark)
        if key not in latest or recency(run) >= recency(latest[key]):
            latest[key] = run
    return latest


def model_matches(run: StoredRun, names: Sequence[str]) -> bool:
    """Whether the run's model name or folder contains one of ``names`` (case-insensitive); True for no names."""
    return not names or any(n.lower() in run.model_name.lower() or n.lower() in str(run.dir).lower() for n in names)
