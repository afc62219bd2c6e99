"""Append-only JSONL cache of final judgements (ThaiCLI spec: resume, no failure cached as final), for any rubric.

The cache (ThaiCLI's: ``<outputs>/cache/thaicli_judgements.jsonl``,
:meth:`~thai_eval_utils.core.store.RunStore.shared_file`) is shared by the judging runs of an outputs folder: a run
reads it before calling the judge and adds its new judgements when it finishes (a run resumes from its own
``items.jsonl``, where each judgement is stored as it finishes: :func:`~thai_eval_utils.judging.run.judge_items`).

One JSON object per line. Appends take an exclusive ``fcntl`` lock and write the whole line with one
``os.write`` on an ``O_APPEND`` descriptor, so concurrent writer processes never interleave. A line torn by
a crash is tolerated: readers skip lines that are not valid JSON (and count them), and the next writer first
ends the torn line with a newline so its own record stays intact. Only final judgements (a valid score, or
the rubric's fallback after the last allowed call: ThaiCLI's 0) belong here; transport failures never do. A record whose score is
not a finite number (NaN, inf, text) is refused on append and skipped (counted as bad) on read.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from thai_eval_utils.core.provenance import canonical_json, redact, sha256_text

#: Version of the record layout; part of every key so a layout change never reuses old records.
CACHE_FORMAT = 1
#: The statuses a cached judgement may have by default (ThaiCLI's: a rubric's are ``parser.final_statuses``).
FINAL_STATUSES = ("scored", "fallback_zero")


def is_final(record: object, statuses: tuple[str, ...] = FINAL_STATUSES) -> bool:
    """A final judgement: a ``key``, a status in ``statuses`` and a finite numeric ``score``."""
    if not isinstance(record, Mapping) or "key" not in record or record.get("status") not in statuses:
        return False
    score = record.get("score")
    return isinstance(score, (int, float)) and not isinstance(score, bool) and math.isfinite(score)


def judgement_key(
    texts: Mapping[str, str], *, judge_model: str, template_sha256: str, params: Mapping[str, Any], repeat: int = 0
) -> str:
    """SHA-256 of everything that decides a judgement: the item's texts (a rubric's ``fields``: ThaiCLI's question,
    chosen, rejected and answer), judge model, rubric hash and parameters, and for a repeated judgement
    its repeat index. Repeat 0 hashes no index, so its key is the key judgements had before repeats existed and old
    caches keep resuming."""
    fields: dict[str, Any] = {
        "cache_format": CACHE_FORMAT,
        **texts,
        "judge_model": judge_model,
        "template_sha256": template_sha256,
        "params": dict(params),
    }
    if repeat:
        fields["repeat"] = repeat
    return sha256_text(canonical_json(fields))


class JudgementCache:
    """The judgement cache at ``path`` (created on first append); the first record of a key wins."""

    def __init__(self, path: str | Path, *, statuses: tuple[str, ...] = FINAL_STATUSES) -> None:
        self.path = Path(path)
        self.statuses = tuple(statuses)
        self._records: dict[str, dict[str, Any]] = {}
        self._offset = 0
        self.n_bad_lines = 0
        self.refresh()

    def refresh(self) -> int:
        """Read records other processes appended since the last read; returns how many were new."""
        if not self.path.exists():
            return 0
        with open(self.path, "rb") as fh:
            fh.seek(self._offset)
            data = fh.read()
        end = data.rfind(b"\n") + 1  # an unfinished last line waits for its newline
        self._offset += end
        added = 0
        for line in data[:end].splitlines():
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                self.n_bad_lines += 1
                continue
            if not is_final(rec, self.statuses):
                self.n_bad_lines += 1
                continue
            if rec["key"] not in self._records:
                self._records[rec["key"]] = rec
                added += 1
        return added

    def get(self, key: str) -> dict[str, Any] | None:
        return self._records.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._records

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._records.values())

    def append(self, record: Mapping[str, Any]) -> None:
        """Append one final judgement (must have ``key`` and a final ``status``), durably and atomically."""
        self.append_many([record])

    def append_many(self, records: list[Mapping[str, Any]]) -> None:
        """Append final judgements under one lock, one write and one fsync (a group commit)."""
        for record in records:
            if not is_final(record, self.statuses):
                raise ValueError(
                    f"only final judgements (finite score) are cached, got status {record.get('status')!r}, "
                    f"score {record.get('score')!r}"
                )
        if not records:
            return
        data = "".join(json.dumps(redact(dict(r)), ensure_ascii=False, default=str) + "\n" for r in records).encode(
            "utf-8"
        )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data  # close a line torn by a crashed writer
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)  # releases the lock
        for record in records:
            self._records.setdefault(record["key"], dict(record))
