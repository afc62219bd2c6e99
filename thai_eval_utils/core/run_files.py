"""The files of a run folder read and written defensively (DEVELOPERS.md, "Results store"): standard JSON only
(RFC 8259: no ``NaN`` or ``Infinity``), every damaged or foreign line, run card or summary named with its file,
line and what to do, and every failed write (disk full, permission) named with its file.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from thai_eval_utils.core.errors import ThaiEvalDataError, ThaiEvalError

#: What a run card must hold (field -> type); a card with one of these missing or of another type is refused.
CARD_FIELDS: dict[str, type | tuple[type, ...]] = {
    "model_name": str,
    "benchmark": str,
    "config_id": str,
    "model": dict,
    "config": dict,
    "data_files": dict,
    "prompt_template_sha256": dict,
    "created_at": str,
}
#: Optional run card fields and their types.
CARD_OPTIONAL: dict[str, type | tuple[type, ...]] = {
    "resumed_at": list,
    "migrated_from": str,
    "finished_at": str,
    "package_versions": dict,
    "platform": dict,
    "store_format": int,
    "data_sources": list,
}
FIX_ITEM_LINE = (
    "delete that line (the item is then computed again on the next run) or restore items.jsonl from a backup"
)
FIX_CARD = (
    "restore run_card.json from a backup, or delete it: the next run with the same settings writes a new one "
    "(the folder's name is the config id of those settings, so its items stay valid)"
)
FIX_SUMMARY = "delete summary.json (rerunning the same settings writes it again from the stored items)"


class StoreWriteError(ThaiEvalError, OSError):
    """A file of a run folder could not be written (disk full, no permission): the message names the file;
    ``errno`` and ``filename`` are the failed call's."""

    def __str__(self) -> str:  # OSError would print "[Errno n] strerror: filename" once errno is set
        return str(self.args[0])


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not standard JSON")


def loads_standard(text: str) -> Any:
    """``json.loads`` refusing ``NaN``, ``Infinity`` and ``-Infinity`` (Python's json accepts them by default)."""
    return json.loads(text, parse_constant=_refuse_constant)


def first_non_finite(obj: Any, where: str = "") -> str | None:
    """The path (``lls[2]``, ``scores.acc.value``) of the first NaN or infinite number in ``obj``, or None."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return where or "(the value)"
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            found = first_non_finite(v, f"{where}.{k}" if where else str(k))
            if found:
                return found
    elif isinstance(obj, (list, tuple)):
        for j, v in enumerate(obj):
            found = first_non_finite(v, f"{where}[{j}]")
            if found:
                return found
    return None


def finite_or_null(obj: Any) -> Any:
    """``obj`` with every NaN or infinite number replaced by None (JSON null): an undefined value in a summary
    or run card (e.g. the score of zero items) written as standard JSON."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, Mapping):
        return {k: finite_or_null(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_or_null(v) for v in obj]
    return obj


def dumps_standard(obj: Any, *, indent: int | None = None) -> str:
    """Standard JSON text of ``obj`` (raises ValueError on a non-finite number; other objects as ``str``)."""
    return json.dumps(obj, ensure_ascii=False, indent=indent, default=str, allow_nan=False)


def _write_failed(path: Path, exc: OSError) -> StoreWriteError:
    err = StoreWriteError(
        f"{path}: could not write ({exc.strerror or exc}); free disk space or fix the folder's "
        "permissions, then rerun: the items already stored are kept (a line cut off by the failure "
        "is dropped when the run is opened again)"
    )
    err.errno, err.filename = exc.errno, str(path)
    return err


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write ``obj`` to ``path`` as standard JSON through a temporary file and a rename (never half a file);
    non-finite numbers become null (:func:`finite_or_null`)."""
    write_text_atomic(path, dumps_standard(finite_or_null(obj), indent=2) + "\n")


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file, an fsync and a rename: a crash at any point leaves the
    old file or the new one whole, never half of one; a failure names the file."""
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise _write_failed(path, exc) from None


def append_line(path: Path, line: str) -> None:
    """Append whole lines (``line``: one or more, each ending in a newline) under the file's exclusive ``flock``
    with one write loop and one fsync; a failure names the file."""
    data = line.encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise _write_failed(path, exc) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        done = 0
        while done < len(data):  # os.write may take part of the line (a signal, a nearly full disk)
            done += os.write(fd, data[done:])
        os.fsync(fd)
    except OSError as exc:
        raise _write_failed(path, exc) from None
    finally:
        os.close(fd)  # closing releases the flock


def read_json_file(path: Path, what: str, fix: str) -> Any:
    """The JSON in ``path``; a :class:`ThaiEvalDataError` naming the file and saying what to do when it cannot be
    read, is not UTF-8, or is not JSON. A ``NaN``/``Infinity`` (summaries of earlier versions held NaN for an
    undefined score) is read as None, as this version writes it."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ThaiEvalDataError(f"{what} cannot be read ({exc.strerror or exc}); {fix}", path=path) from None
    try:
        return json.loads(data.decode("utf-8"), parse_constant=lambda name: None)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ThaiEvalDataError(
            f"{what} is damaged ({type(exc).__name__}: {str(exc)[:120]}); {fix}", path=path
        ) from None


def null_legacy_non_finite(line: bytes, fields: Sequence[str]) -> bytes | None:
    """``line`` (a record of ``items.jsonl``) rewritten as standard JSON with the NaN or infinity of its top-level
    ``fields`` as null, when those were its only non-standard values (as an earlier version wrote "none" there);
    None when the line needs no change or is not such a record (it is then reported when read)."""
    try:
        loads_standard(line.decode("utf-8"))
        return None
    except (UnicodeDecodeError, ValueError):
        pass
    try:
        rec = json.loads(line.decode("utf-8"), parse_constant=lambda name: math.nan)
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(rec, dict):
        return None
    fixed = {k: None if k in fields and isinstance(v, float) and not math.isfinite(v) else v for k, v in rec.items()}
    return None if first_non_finite(fixed) is not None else (dumps_standard(fixed) + "\n").encode("utf-8")


def parse_record(path: Path, lineno: int, line: bytes) -> dict[str, Any]:
    """One line of ``items.jsonl``: a JSON object with a string ``key``; a :class:`ThaiEvalDataError` naming the
    file and line (``row`` is the 0-based line number) otherwise."""
    where = f"line {lineno + 1} of the file"
    try:
        rec = loads_standard(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ThaiEvalDataError(
            f"{where} is not a standard JSON record ({type(exc).__name__}: {str(exc)[:120]}); {FIX_ITEM_LINE}",
            path=path,
            row=lineno,
        ) from None
    if not isinstance(rec, dict) or not isinstance(rec.get("key"), str):
        shown = json.dumps(rec, ensure_ascii=False)[:80]
        raise ThaiEvalDataError(
            f"{where} ({shown}) is not a record of this run (a JSON object with a string 'key'); {FIX_ITEM_LINE}",
            path=path,
            row=lineno,
            field="key",
        ) from None
    return rec


def latest_records(path: Path) -> list[dict[str, Any]]:
    """The records of an ``items.jsonl`` in file order, the last record of a key winning (as a resumed run reads
    them); [] when there is no file; a damaged line is a :class:`ThaiEvalDataError` naming the file and line."""
    if not path.exists():
        return []
    latest: dict[str, dict[str, Any]] = {}
    with open(path, "rb") as fh:
        for lineno, line in enumerate(fh):
            if line.strip():
                rec = parse_record(path, lineno, line)
                latest[rec["key"]] = rec
    return list(latest.values())


def check_record_fields(
    path: Path, lineno: int, rec: Mapping[str, Any], fields: Mapping[str, type | tuple[type, ...]]
) -> None:
    """The stored record has each of ``fields`` with its type (a resumed run uses it as the item's result)."""
    for name, kind in fields.items():
        value = rec.get(name)
        if name not in rec or not isinstance(value, kind) or (isinstance(value, bool) and bool not in _types(kind)):
            raise ThaiEvalDataError(
                f"line {lineno + 1} of the file: the stored {name!r} is {json.dumps(value, ensure_ascii=False)[:60]}, "
                f"not {' or '.join(t.__name__ for t in _types(kind))}; {FIX_ITEM_LINE}",
                path=path,
                row=lineno,
                field=name,
            )


def _types(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def check_card(path: Path, card: Any, config_id: str | None) -> dict[str, Any]:
    """A run card read back: an object with :data:`CARD_FIELDS` (and :data:`CARD_OPTIONAL` where present) of
    their types and, given ``config_id``, that id (the folder's name); :class:`ThaiEvalDataError` otherwise."""
    if not isinstance(card, dict):
        raise ThaiEvalDataError(f"the run card is a JSON {type(card).__name__}, not an object; {FIX_CARD}", path=path)
    for name, kind in {**CARD_FIELDS, **{k: v for k, v in CARD_OPTIONAL.items() if k in card}}.items():
        if not isinstance(card.get(name), kind):
            got = "missing" if name not in card else f"{json.dumps(card[name], ensure_ascii=False)[:60]}"
            raise ThaiEvalDataError(
                f"the run card's {name!r} is {got}, not {' or '.join(t.__name__ for t in _types(kind))}; {FIX_CARD}",
                path=path,
                field=name,
            )
    if config_id is not None and card["config_id"] != config_id:
        raise ThaiEvalDataError(
            f"the run card's config_id {card['config_id']!r} is not its folder's {config_id!r} (an "
            f"edited or copied card); {FIX_CARD}",
            path=path,
            field="config_id",
        )
    return card
