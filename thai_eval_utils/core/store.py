"""Results store: per-item JSONL records appended as items finish, a run card and a summary per run.

Layout: ``<outputs>/runs/<model-slug>/<benchmark>/<config-id>/`` holding ``items.jsonl`` (one JSON
record per finished item, flushed and fsynced as it is written), ``run_card.json`` (how the
results were made: model identity, data file hashes, prompt template hashes, protocol options,
package versions, times) and ``summary.json``. ``config-id`` hashes everything that changes the
numbers, so a rerun with the same settings resumes in the same folder and a run with different
settings never mixes with old results. No secret is ever written: see :func:`redact`. Every file is standard
JSON and read defensively (:mod:`.run_files`): a non-finite number is never stored in a record (refused, naming
the field) and is null in a summary or card; a damaged or foreign line, card or summary is a
:class:`ThaiEvalDataError` naming the file and line and saying what to do; a failed write names its file. The
card records the store format it was written in; runs of an earlier format are migrated when opened
(:mod:`.migrate`).

One writer per run: :meth:`RunStore.open` takes an exclusive ``flock`` on ``<run>/.writer.lock`` for as long
as the store is open (until :meth:`RunStore.close`, the end of a ``with`` block, or the store object being
freed); a second process opening the same run gets a :class:`RunLockedError` at once, naming the run folder
and the holding process id, before it computes (or pays for) anything. Stores opened again by the process that
holds the lock share it. Appends and the repair of a torn last line take the ``flock`` of ``items.jsonl``.

Over 400 lines on purpose: every write to a run folder (open, resume, append, compact, summary, the lock) is here, so
the one-writer and crash-safety rules can be read in one place; the file formats are in :mod:`.run_files`.
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

from thai_eval_utils.core.data_origin import keyed_origins, origins_of
from thai_eval_utils.core.errors import ThaiEvalDataError, ThaiEvalError
from thai_eval_utils.core.migrate import STORE_FORMAT, migrate_card
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
from thai_eval_utils.core.run_files import (
    FIX_CARD,
    StoreWriteError,
    append_line,
    check_card,
    check_record_fields,
    dumps_standard,
    first_non_finite,
    null_legacy_non_finite,
    parse_record,
    read_json_file,
    write_json_atomic,
    write_text_atomic,
)

#: Identity keys that say where or when a model ran, not what it is: recorded in the run card, never part of
#: the config id (moving a server to another host or port resumes the same runs; served model ids and
#: fingerprints are filled in by the server's answers and would change the id after the first call). The local
#: engine's prompt lookup (``lookup_tokens``) is recorded, not keyed: it changes how greedy text is computed, not
#: which text (``backend.generation``), so a run resumed with it on or off continues the same run. Servers that
#: thai-eval started record their replicas, GPUs and logs in ``engine_launch`` (unkeyed: each replica computes a
#: request alone); their engine, version and flags are ``engine`` (keyed, ``backend.served.engines``). A served
#: model's request-order probe (``order_probe``: the largest difference it saw and its tolerance, or that it was
#: skipped) describes the servers of one session, as their address does.
UNKEYED_IDENTITY_KEYS = (
    "loaded_at",
    "load_seconds",
    "base_url",
    "base_urls",
    "served_models",
    "system_fingerprints",
    "lookup_tokens",
    "engine_launch",
    "order_probe",
)
#: The unkeyed identity keys that say where the model is served and what its servers did this session: updated
#: in the card when a run resumes.
ADDRESS_KEYS = ("base_url", "base_urls", "engine_launch", "order_probe")
LOCK_NAME = ".writer.lock"


class RunLockedError(ThaiEvalError, RuntimeError):
    """Another process is writing this run (see :meth:`RunStore.open`)."""


class NonFiniteRecordError(ThaiEvalError, ValueError):
    """A record to store holds NaN or an infinity (not standard JSON, and never a valid score)."""


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


def _write_json_atomic(path: Path, obj: Any) -> None:
    write_json_atomic(path, redact(obj))


def _keyed_from_card(card: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a stored run card (of any store format, :func:`~.migrate.migrate_card`) says was keyed, recomputed
    under today's :data:`UNKEYED_IDENTITY_KEYS` (None when the card is not a well-formed card of a known format)."""
    try:
        card = migrate_card(card)
        return {
            "benchmark": card["benchmark"],
            "config": card["config"],
            "model": {k: v for k, v in card["model"].items() if k not in UNKEYED_IDENTITY_KEYS},
            "data": sorted(card["data_files"].values()),
            "templates": card["prompt_template_sha256"],
            **({"data_sources": keyed_origins(card["data_sources"])} if card.get("data_sources") else {}),
        }
    except (KeyError, TypeError, AttributeError, ThaiEvalDataError):
        return None


def _migrate_same_settings(parent: Path, root: Path, config_id: str) -> str | None:
    """Rename a sibling run folder whose card, migrated to today's format and keyed as today, has ``config_id``
    (a run stored under old config key names, or keyed with a key that is no longer keyed, e.g. a served model's
    ``base_urls``, at any address) to ``root``; its old id, or None."""
    if not parent.is_dir():
        return None
    for folder in sorted(parent.iterdir()):
        card_path = folder / "run_card.json"
        if folder == root or not card_path.is_file():
            continue
        try:
            card = json.loads(card_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # a damaged card of another run: that run reports it when it is opened
            continue
        keyed = _keyed_from_card(card) if isinstance(card, dict) else None
        if keyed is not None and _config_id(keyed) == config_id:
            try:
                os.rename(folder, root)
            except FileNotFoundError:  # another process migrated it first
                if not root.exists():
                    raise
            return folder.name
    return None


@dataclass
class RunStore:
    """One run's folder. Use :meth:`open` (or ``with RunStore.open(...) as store``); then :meth:`completed`,
    :meth:`append` (:meth:`append_many`: a group commit), :meth:`write_summary`; :meth:`compact` rewrites the
    items in a given order; :meth:`close` lets other processes write the run."""

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
        legacy_nan_fields: Sequence[str] = (),
    ) -> RunStore:
        """Open (create or resume) the run of ``model_name`` on ``benchmark`` with ``config``, as its one writer.

        Args:
            model_name: the model's display name; its slug names the folder.
            benchmark: e.g. ``"thai_h6/th_arc"``, ``"thaicli/judge"``, ``"dialect/generation"``.
            config: protocol options and settings: everything that changes the numbers.
            model_identity: name, source, revision or weights hash (see ``models``).
            data_files: input files whose SHA-256 is recorded and part of the config id.
            prompt_templates: name -> template text; their hashes are recorded and part of the id.
            outputs: the outputs folder (default :func:`outputs_dir`). When no run has these settings yet but
                one was stored with them by an earlier format (:mod:`.migrate`), that run folder is renamed to the
                new config id (its card records ``migrated_from``) and resumed.
            legacy_nan_fields: fields where an older version wrote NaN for "none" (the ThaiCLI judge's runs of
                store format 1): null there from the run's opening on (:meth:`migrate_legacy_nan`).

        Raises:
            RunLockedError: another process has this run open (the message names the folder and its pid).
        """
        bench_parts = [slugify(p) for p in benchmark.split("/") if p]
        data_hashes = {str(p): sha256_file(p) for p in data_files}
        origins = origins_of(data_files)  # fetched full data: source, revision, path (core.data_origin)
        template_hashes = {k: sha256_text(v) for k, v in (prompt_templates or {}).items()}
        identity = redact(dict(model_identity or {"name": model_name}))
        keyed = {
            "benchmark": "/".join(bench_parts),
            "config": redact(dict(config)),
            "model": {k: v for k, v in identity.items() if k not in UNKEYED_IDENTITY_KEYS},
            "data": sorted(data_hashes.values()),
            "templates": template_hashes,
            **({"data_sources": keyed_origins(origins)} if origins else {}),
        }
        config_id = _config_id(keyed)
        parent = Path(outputs or outputs_dir()) / "runs" / slugify(model_name)
        for part in bench_parts:
            parent = parent / part
        root = parent / config_id
        migrated_from = None if root.exists() else _migrate_same_settings(parent, root, config_id)
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreWriteError(
                f"{root}: cannot create the run folder ({exc.strerror or exc}); check the outputs "
                "folder's permissions and free space"
            ) from None
        lock_key = _acquire(root)
        try:
            card = cls._card(
                root, model_name, keyed, config_id, identity, data_hashes, template_hashes, migrated_from, origins
            )
            store = cls(root=root, card=card)
            store.repair_tail()
            store.migrate_legacy_nan(legacy_nan_fields)
        except BaseException:
            _release(lock_key)
            raise
        store._finalizer = weakref.finalize(store, _release, lock_key)
        return store

    @staticmethod
    def _card(
        root: Path,
        model_name: str,
        keyed: Mapping[str, Any],
        config_id: str,
        identity: dict[str, Any],
        data_hashes: dict[str, str],
        template_hashes: dict[str, str],
        migrated_from: str | None,
        origins: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Read (resume) or create the run card, stamp it and write it (``origins``: where fetched data files came
        from, :func:`~.data_origin.origins_of`)."""
        card_path = root / "run_card.json"
        if card_path.exists():
            card = migrate_card(
                check_card(card_path, read_json_file(card_path, "the run card", FIX_CARD), migrated_from or config_id),
                card_path,
            )
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
                **({"data_sources": origins} if origins else {}),
                "created_at": now_utc(),
                "store_format": STORE_FORMAT,
            }
        for key in ADDRESS_KEYS:  # the server may have moved or been probed again (neither is part of the id)
            if key in identity:
                card["model"] = {**card["model"], key: identity[key]}
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

    def migrate_legacy_nan(self, fields: Sequence[str]) -> int:
        """Rewrite (atomically) the records of ``items.jsonl`` whose only non-standard values are NaN or
        infinities in ``fields``, with null there (:func:`~.run_files.null_legacy_non_finite`); how many."""
        if not fields or not self.items_path.exists():
            return 0
        lines = self.items_path.read_bytes().splitlines(keepends=True)
        fixed = [null_legacy_non_finite(line, fields) for line in lines]
        if not any(fixed):
            return 0
        text = b"".join(new or old for old, new in zip(lines, fixed)).decode("utf-8")
        write_text_atomic(self.items_path, text)
        return sum(1 for new in fixed if new)

    def _numbered_records(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """(0-based line number, record) of every stored record (:func:`~.run_files.parse_record`)."""
        if not self.items_path.exists():
            return
        with open(self.items_path, "rb") as fh:
            for lineno, line in enumerate(fh):
                if line.strip():
                    yield lineno, parse_record(self.items_path, lineno, line)

    def iter_records(self) -> Iterator[dict[str, Any]]:
        """Every stored record in file order (a damaged or foreign line: ThaiEvalDataError naming it)."""
        for _, rec in self._numbered_records():
            yield rec

    def completed(self, fields: Mapping[str, type | tuple[type, ...]] | None = None) -> dict[str, dict[str, Any]]:
        """Finished items keyed by their ``key`` (the last record wins); with ``fields`` (name -> type), each
        record must hold them with those types (an edited record: ThaiEvalDataError naming file, line, field)."""
        out = {}
        for lineno, rec in self._numbered_records():
            if fields:
                check_record_fields(self.items_path, lineno, rec, fields)
            out[rec["key"]] = rec
        return out

    def append(self, key: str, record: Mapping[str, Any]) -> None:
        """Append one finished item as standard JSON, flushed and fsynced so a crash never loses it.

        Raises:
            NonFiniteRecordError: the record holds NaN or an infinity (nothing is written).
            StoreWriteError: the write failed (the message names the file).
        """
        self.append_many([(key, record)])

    def append_many(self, records: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """Append finished items, each as :meth:`append` does, under one lock, one write and one fsync (a group
        commit: a crash keeps a whole prefix of them). A non-finite record refuses the lot before anything is
        written (:class:`NonFiniteRecordError`)."""
        lines = [self._line(key, record) for key, record in records]
        if lines:
            append_line(self.items_path, "".join(lines))

    def _line(self, key: str, record: Mapping[str, Any]) -> str:
        """The stored line of one item: redacted standard JSON, ``key`` first; NonFiniteRecordError otherwise."""
        rec = redact({"key": key, **record})
        bad = first_non_finite(rec)
        if bad is not None:
            raise NonFiniteRecordError(
                f"{self.items_path}: item {key!r}: field {bad} is not a finite number; a "
                "non-finite value is never stored (it is no valid score): the model call "
                "returned it, so nothing of this item was written"
            )
        return dumps_standard(rec) + "\n"

    def compact(self, keys: Sequence[str]) -> None:
        """Rewrite ``items.jsonl`` as the last stored record of each of ``keys``, in that order, atomically (a
        crash leaves the old file or the new one): records superseded by a later one of the same key, and
        records of keys not given, are dropped. For the run's one writer when no append is in flight (the
        ThaiCLI judge calls it at the end of a run: its records are appended as they finish, in any order)."""
        records = self.completed()
        kept = [records[k] for k in dict.fromkeys(keys) if k in records]
        write_text_atomic(self.items_path, "".join(dumps_standard(rec) + "\n" for rec in kept))

    def shared_file(self, name: str) -> Path:
        """``<outputs>/cache/<name>``: a file shared by every run of this run's outputs folder (the ThaiCLI
        judgement cache, so that a judgement made for one run is reused by any run with the same texts)."""
        return self.root.parents[len(self.card["benchmark"].split("/")) + 2] / "cache" / name

    def part(self, *names: str) -> RunPart:
        """The store of one part of this run in ``<run>/<names...>/`` (e.g. ``judgements/<metric>``: a judged
        metric's judgements, one record per judgement, beside the items they judge): items and batch files only,
        written under this run's lock (no card, summary or lock of its own, so no listing takes it for a run)."""
        root = self.root.joinpath(*(slugify(n) for n in names))
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreWriteError(f"{root}: cannot create the run's part folder ({exc.strerror or exc})") from None
        part = RunPart(root=root, card=self.card, run=self)
        part.repair_tail()
        return part

    def write_summary(self, summary: Mapping[str, Any]) -> None:
        """Write ``summary.json`` (atomically) and stamp the run card's finish time."""
        _write_json_atomic(self.summary_path, {"config_id": self.config_id, "written_at": now_utc(), **summary})
        self.card["finished_at"] = now_utc()
        _write_json_atomic(self.card_path, self.card)


@dataclass
class RunPart(RunStore):
    """One part of a run (:meth:`RunStore.part`): its own ``items.jsonl`` and batch files, the run's card, lock and
    shared files."""

    run: RunStore | None = None

    def shared_file(self, name: str) -> Path:
        return self.run.shared_file(name) if self.run is not None else super().shared_file(name)

    def write_summary(self, summary: Mapping[str, Any]) -> None:
        raise TypeError(f"{self.root}: a run's part has no summary of its own; the run's store writes it")
