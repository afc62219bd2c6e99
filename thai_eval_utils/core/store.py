"""Results store: per-item JSONL records appended as items finish, a run card and a summary per run.

Layout: ``<outputs>/runs/<model-slug>/<benchmark>/<config-id>/`` holding ``items.jsonl`` (one JSON
record per finished item, flushed and fsynced as it is written), ``run_card.json`` (how the
results were made: model identity, data file hashes, prompt template hashes, protocol options,
package versions, times) and ``summary.json``. ``config-id`` hashes everything that changes the
numbers, so a rerun with the same settings resumes in the same folder and a run with different
settings never mixes with old results. No secret is ever written: see :func:`redact`.

One writer per run: :meth:`RunStore.open` takes an exclusive ``flock`` on ``<run>/.writer.lock`` for as long
as the store is open (until :meth:`RunStore.close`, the end of a ``with`` block, or the store object being
freed); a second process opening the same run gets a :class:`RunLockedError` at once, naming the run folder
and the holding process id, before it computes (or pays for) anything. Stores opened again by the process that
holds the lock share it. Appends and the repair of a torn last line take the ``flock`` of ``items.jsonl``.
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import socket
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from thai_eval_utils.core.errors import ThaiEvalDataError, ThaiEvalError
from thai_eval_utils.core.provenance import (
    canonical_json,
    now_utc,
    outputs_dir,
    package_versions,
    redact,
    sha256_file,
    sha256_text,
    slugify,
)

#: Identity keys that say where or when a model ran, not what it is: recorded in the run card, never part of
#: the config id (moving a server to another host or port resumes the same runs; served model ids and
#: fingerprints are filled in by the server's answers and would change the id after the first call).
UNKEYED_IDENTITY_KEYS = ("loaded_at", "load_seconds", "base_url", "served_models", "system_fingerprints")
#: The identity keys left out of config ids before version 0.3 (runs keyed that way are migrated).
_OLD_UNKEYED_IDENTITY_KEYS = ("loaded_at", "load_seconds")
LOCK_NAME = ".writer.lock"


class RunLockedError(ThaiEvalError, RuntimeError):
    """Another process is writing this run (see :meth:`RunStore.open`)."""


_held: dict[str, list[int]] = {}  # run folder -> [lock fd, open stores in this process, owner pid]
_held_lock = threading.Lock()


def _acquire(root: Path) -> str:
    """Take the run's writer lock (shared by this process's stores); raise :class:`RunLockedError` if taken."""
    key = str(root.resolve())
    with _held_lock:
        entry = _held.get(key)
        if entry is not None and entry[2] == os.getpid():
            entry[1] += 1
            return key
        fd = os.open(root / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown (starting up)"
            os.close(fd)
            raise RunLockedError(
                f"{root}: this run is being written by another process (pid {holder}); wait for it to finish or "
                "stop it: two writers would compute and pay for every item twice"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        _held[key] = [fd, 1, os.getpid()]
        return key


def _release(key: str) -> None:
    with _held_lock:
        entry = _held.get(key)
        if entry is None or entry[2] != os.getpid():
            return
        entry[1] -= 1
        if entry[1] == 0:
            del _held[key]
            os.close(entry[0])  # releases the flock


def _config_id(keyed: Mapping[str, Any]) -> str:
    """The run folder name: the first 12 hex digits of the SHA-256 of everything that changes the numbers."""
    return sha256_text(canonical_json(keyed))[:12]


def _migrate_legacy(parent: Path, root: Path, legacy: Sequence[Mapping[str, Any]]) -> str | None:
    """Rename the first existing run folder keyed as one of ``legacy`` to ``root``; its old config id, or None."""
    for old in legacy:
        old_id = _config_id(old)
        if (parent / old_id).is_dir():
            try:
                os.rename(parent / old_id, root)
            except FileNotFoundError:  # another process migrated it first
                if not root.exists():
                    raise
            return old_id
    return None


def _write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(redact(obj), ensure_ascii=False, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


@dataclass
class RunStore:
    """One run's folder. Use :meth:`open` (or ``with RunStore.open(...) as store``); then :meth:`completed`,
    :meth:`append`, :meth:`write_summary`; :meth:`close` lets other processes write the run."""

    root: Path
    card: dict[str, Any]
    _finalizer: weakref.finalize | None = field(default=None, repr=False, compare=False)

    def close(self) -> None:
        """Release the run's writer lock (idempotent; also done when the store object is freed)."""
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def items_path(self) -> Path:
        return self.root / "items.jsonl"

    @property
    def card_path(self) -> Path:
        return self.root / "run_card.json"

    @property
    def summary_path(self) -> Path:
        return self.root / "summary.json"

    @property
    def config_id(self) -> str:
        return self.card["config_id"]

    @classmethod
    def open(
        cls,
        model_name: str,
        benchmark: str,
        config: Mapping[str, Any],
        *,
        model_identity: Mapping[str, Any] | None = None,
        data_files: Sequence[str | Path] = (),
        prompt_templates: Mapping[str, str] | None = None,
        outputs: str | Path | None = None,
        legacy_configs: Sequence[Mapping[str, Any]] = (),
    ) -> RunStore:
        """Open (create or resume) the run of ``model_name`` on ``benchmark`` with ``config``, as its one writer.

        Args:
            model_name: the model's display name; its slug names the folder.
            benchmark: e.g. ``"thai_h6/th_arc"``, ``"thaicli/judge"``, ``"dialect/generation"``.
            config: protocol options and settings: everything that changes the numbers.
            model_identity: name, source, revision or weights hash (see ``models``).
            data_files: input files whose SHA-256 is recorded and part of the config id.
            prompt_templates: name -> template text; their hashes are recorded and part of the id.
            outputs: the outputs folder (default :func:`outputs_dir`).
            legacy_configs: the same settings as older versions of thai-eval wrote them (e.g. under old key
                names). When no run has ``config`` yet but one was stored under a legacy config, that run folder
                is renamed to the new config id (its card records ``migrated_from``) and resumed.

        Raises:
            RunLockedError: another process has this run open (the message names the folder and its pid).
        """
        bench_parts = [slugify(p) for p in benchmark.split("/") if p]
        data_hashes = {str(p): sha256_file(p) for p in data_files}
        template_hashes = {k: sha256_text(v) for k, v in (prompt_templates or {}).items()}
        identity = redact(dict(model_identity or {"name": model_name}))
        keyed = {
            "benchmark": "/".join(bench_parts),
            "config": redact(dict(config)),
            "model": {k: v for k, v in identity.items() if k not in UNKEYED_IDENTITY_KEYS},
            "data": sorted(data_hashes.values()),
            "templates": template_hashes,
        }
        config_id = _config_id(keyed)
        parent = Path(outputs or outputs_dir()) / "runs" / slugify(model_name)
        for part in bench_parts:
            parent = parent / part
        root = parent / config_id
        old_model = {k: v for k, v in identity.items() if k not in _OLD_UNKEYED_IDENTITY_KEYS}
        legacy = [{**keyed, "config": redact(dict(c))} for c in legacy_configs]
        if old_model != keyed["model"]:  # the same run keyed with its address (before 0.3)
            legacy += [{**k, "model": old_model} for k in [keyed, *legacy]]
        migrated_from = None if root.exists() else _migrate_legacy(parent, root, legacy)
        root.mkdir(parents=True, exist_ok=True)
        lock_key = _acquire(root)
        try:
            card = cls._card(root, model_name, keyed, config_id, identity, data_hashes, template_hashes, migrated_from)
            store = cls(root=root, card=card)
            store.repair_tail()
        except BaseException:
            _release(lock_key)
            raise
        store._finalizer = weakref.finalize(store, _release, lock_key)
        return store

    @staticmethod
    def _card(root: Path, model_name: str, keyed: Mapping[str, Any], config_id: str, identity: dict[str, Any],
              data_hashes: dict[str, str], template_hashes: dict[str, str], migrated_from: str | None) -> dict[str, Any]:
        """Read (resume) or create the run card, stamp it and write it."""
        card_path = root / "run_card.json"
        if card_path.exists():
            card = json.loads(card_path.read_text(encoding="utf-8"))
            card["resumed_at"] = [*card.get("resumed_at", []), now_utc()]
            if migrated_from:
                card.update(config_id=config_id, config=keyed["config"], migrated_from=migrated_from)
        else:
            card = {
                "model_name": model_name,
                "benchmark": keyed["benchmark"],
                "config_id": config_id,
                "model": identity,
                "config": keyed["config"],
                "data_files": data_hashes,
                "prompt_template_sha256": template_hashes,
                "created_at": now_utc(),
            }
        if "base_url" in identity:  # the server may have moved (the address is not part of the id)
            card["model"] = {**card.get("model", {}), "base_url": identity["base_url"]}
        card["package_versions"] = package_versions()
        card["platform"] = {"machine": platform.machine(), "system": platform.system()}
        _write_json_atomic(card_path, card)
        return card

    def repair_tail(self) -> int:
        """Drop a last line cut off by a crash mid-write (no newline); returns the bytes dropped.

        Holds the same exclusive lock as :meth:`append`, so it can never cut a line another writer is
        appending (a record is written whole, newline included, under that lock).
        """
        path = self.items_path
        if not path.exists():
            return 0
        with open(path, "r+b") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                size = os.fstat(fh.fileno()).st_size
                if size == 0:
                    return 0
                data = os.pread(fh.fileno(), min(size, 1 << 20), size - min(size, 1 << 20))
                if data.endswith(b"\n"):
                    return 0
                cut = data.rfind(b"\n")
                if cut < 0 and size > len(data):  # a torn line longer than 1 MiB: read it all
                    data = os.pread(fh.fileno(), size, 0)
                    cut = data.rfind(b"\n")
                good = size - len(data) + cut + 1
                fh.truncate(good)
                os.fsync(fh.fileno())
                return size - good
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def iter_records(self) -> Iterator[dict[str, Any]]:
        """Every stored record in file order."""
        if not self.items_path.exists():
            return
        with open(self.items_path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh):
                if not line.strip():
                    continue
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ThaiEvalDataError(f"corrupt record ({exc})", path=self.items_path, row=lineno) from exc

    def completed(self) -> dict[str, dict[str, Any]]:
        """Finished items keyed by their ``key`` (the last record wins)."""
        return {rec["key"]: rec for rec in self.iter_records()}

    def append(self, key: str, record: Mapping[str, Any]) -> None:
        """Append one finished item, flushed and fsynced so a crash never loses it."""
        line = json.dumps(redact({"key": key, **record}), ensure_ascii=False, default=str) + "\n"
        with open(self.items_path, "a", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def write_summary(self, summary: Mapping[str, Any]) -> None:
        """Write ``summary.json`` (atomically) and stamp the run card's finish time."""
        _write_json_atomic(self.summary_path, {"config_id": self.config_id, "written_at": now_utc(), **summary})
        self.card["finished_at"] = now_utc()
        _write_json_atomic(self.card_path, self.card)

    def read_summary(self) -> dict[str, Any] | None:
        """The summary, or None when the run has not finished."""
        if not self.summary_path.exists():
            return None
        return json.loads(self.summary_path.read_text(encoding="utf-8"))


def list_runs(outputs: str | Path | None = None) -> list[dict[str, Any]]:
    """Every run under ``<outputs>/runs``: its folder, run card and summary (None if unfinished)."""
    base = Path(outputs or outputs_dir()) / "runs"
    runs = []
    for card_path in sorted(base.rglob("run_card.json")):
        summary_path = card_path.with_name("summary.json")
        runs.append(
            {
                "dir": card_path.parent,
                "card": json.loads(card_path.read_text(encoding="utf-8")),
                "summary": json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.exists() else None,
            }
        )
    return runs
