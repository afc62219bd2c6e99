"""Record readers shared by every loader: JSONL, JSON, CSV and Parquet files as lists of plain dicts.

Every bad input raises :class:`~thai_eval_utils.core.errors.ThaiEvalDataError` naming the file, the row
(0-based record index) and the field; a file is validated completely before anything is returned.
Text is decoded as UTF-8 and never Unicode-normalised (NFKC would decompose Thai SARA AM, U+0E33).
"""

from __future__ import annotations

import csv
import io
import json
import math
import numbers
import os
import tempfile
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.provenance import sha256_file

__all__ = [
    "SUPPORTED_SUFFIXES",
    "find_data_file",
    "read_records",
    "require_finite",
    "is_blank",
    "require_text",
    "require_texts",
    "require_unique",
    "sha256_file",
    "to_plain",
    "write_jsonl",
]

#: Text that is a missing value written out (pandas' ``str(nan)``, ``str(None)``, JSON's null), never real text.
MISSING_SPELLINGS = ("nan", "none", "null", "<na>")

#: File suffixes :func:`read_records` understands, in the order :func:`find_data_file` tries them.
SUPPORTED_SUFFIXES = (".parquet", ".jsonl", ".json", ".csv")

TypeSpec = type | tuple[type | None, ...] | None


def to_plain(value: Any) -> Any:
    """Turn numpy arrays/scalars and pandas missing values inside ``value`` into plain Python objects.

    Parquet read through pandas gives nested lists as ``numpy.ndarray``; loaders return lists and dicts.
    """
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    tolist = getattr(value, "tolist", None)
    if tolist is not None and type(value).__module__ == "numpy":
        return to_plain(tolist())
    if isinstance(value, float) and value != value:  # NaN from a pandas missing cell
        return None
    return value


def _type_names(expected: tuple[type, ...]) -> str:
    return " or ".join("None" if t is type(None) else t.__name__ for t in expected)


def _expected_tuple(spec: TypeSpec) -> tuple[type, ...]:
    if spec is None:
        return (type(None),)
    items = spec if isinstance(spec, tuple) else (spec,)
    return tuple(type(None) if t is None else t for t in items)


def _type_ok(value: Any, expected: tuple[type, ...]) -> bool:
    if isinstance(value, bool) and bool not in expected:
        return False  # bool is an int subclass; True is not a valid label
    if isinstance(value, int) and not isinstance(value, bool) and float in expected:
        return True
    return isinstance(value, expected)


def _coerce_csv(value: str, expected: tuple[type, ...]) -> Any:
    """CSV cells are text: turn one into the first numeric/bool/None type the caller asked for."""
    if str in expected:
        return value
    text = value.strip()
    if text == "" and type(None) in expected:
        return None
    if int in expected:
        try:
            return int(text)
        except ValueError:
            pass
    if float in expected:
        try:
            return float(text)
        except ValueError:
            pass
    if bool in expected and text.lower() in ("true", "false"):
        return text.lower() == "true"
    return value


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any("\udc80" <= ch <= "\udcff" for ch in value)
    if isinstance(value, Mapping):
        return any(_has_surrogate(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_surrogate(v) for v in value)
    return False


def _decode(path: Path, data: bytes) -> tuple[str, UnicodeDecodeError | None]:
    """Decode UTF-8 (a BOM is dropped); bad bytes become lone surrogates so they can be located."""
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        return data.decode("utf-8-sig", errors="surrogateescape"), exc


def _utf8_error(
    path: Path, data: bytes, exc: UnicodeDecodeError, row: int | None, field: str | None
) -> ThaiEvalDataError:
    line = data.count(b"\n", 0, exc.start) + 1
    bad = data[exc.start : exc.end].hex(" ")
    return ThaiEvalDataError(f"not valid UTF-8 text (byte(s) {bad} on line {line})", path=path, row=row, field=field)


def _first_bad_field(record: Mapping[str, Any]) -> str | None:
    for key, value in record.items():
        if _has_surrogate(key) or _has_surrogate(value):
            return str(key)
    return None


def _parse_jsonl(path: Path, text: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ThaiEvalDataError(
                f"invalid JSON on line {line_no}: {exc.msg} (column {exc.colno})", path=path, row=len(records)
            ) from None
        if not isinstance(obj, dict):
            raise ThaiEvalDataError(
                f"line {line_no} is a JSON {type(obj).__name__}, expected an object", path=path, row=len(records)
            )
        records.append(obj)
    return records


def _parse_json(path: Path, text: str) -> list[dict[str, Any]]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # JSON Lines saved as .json (what datasets' to_json writes)
            return _parse_jsonl(path, text)
        raise ThaiEvalDataError(f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", path=path) from None
    if isinstance(obj, dict):
        obj = [obj]
    if not isinstance(obj, list):
        raise ThaiEvalDataError(f"expected a JSON array of objects, got {type(obj).__name__}", path=path)
    for i, rec in enumerate(obj):
        if not isinstance(rec, dict):
            raise ThaiEvalDataError(f"expected a JSON object, got {type(rec).__name__}", path=path, row=i)
    return obj


def _parse_csv(path: Path, text: str) -> list[dict[str, Any]]:
    rows = [r for r in csv.reader(io.StringIO(text, newline="")) if r]
    if not rows:
        return []
    header = [h.strip() for h in rows[0]]
    dupes = sorted({h for h in header if header.count(h) > 1})
    if dupes:
        raise ThaiEvalDataError(
            f"duplicate column name(s) in the header: {', '.join(dupes)}", path=path, field=dupes[0]
        )
    records = []
    for i, row in enumerate(rows[1:]):
        if len(row) != len(header):
            raise ThaiEvalDataError(f"{len(row)} cells, the header has {len(header)} columns", path=path, row=i)
        records.append(dict(zip(header, row)))
    return records


def _read_parquet(path: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
        keep = [c for c in table.column_names if not c.startswith("__index_level_")]
        records = table.select(keep).to_pylist()
    except UnicodeDecodeError as exc:
        raise ThaiEvalDataError(f"not valid UTF-8 text in a string column ({exc.reason})", path=path) from None
    except Exception as exc:  # pyarrow raises several types for unreadable files
        raise ThaiEvalDataError(f"not a readable Parquet file ({type(exc).__name__}: {exc})", path=path) from None
    return [to_plain(r) for r in records]


def _check(
    path: Path,
    records: list[dict[str, Any]],
    required: Mapping[str, TypeSpec],
    json_fields: Iterable[str],
    is_csv: bool,
) -> None:
    json_fields = set(json_fields)
    wanted = {name: _expected_tuple(spec) for name, spec in required.items()}
    for i, rec in enumerate(records):
        missing = [name for name in wanted if name not in rec]
        if missing:
            found = ", ".join(map(str, rec)) or "(none)"
            names = ", ".join(repr(m) for m in missing)
            raise ThaiEvalDataError(
                f"missing field(s) {names}; fields found: {found}", path=path, row=i, field=missing[0]
            )
        if is_csv:
            for name in json_fields & rec.keys():
                cell = rec[name]
                if isinstance(cell, str) and cell.strip():
                    try:
                        rec[name] = json.loads(cell)
                    except json.JSONDecodeError as exc:
                        raise ThaiEvalDataError(
                            f"invalid JSON in CSV cell: {exc.msg}", path=path, row=i, field=name
                        ) from None
            for name, expected in wanted.items():
                if isinstance(rec[name], str) and name not in json_fields:
                    rec[name] = _coerce_csv(rec[name], expected)
        for name, expected in wanted.items():
            value = rec[name]
            if not _type_ok(value, expected):
                shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
                raise ThaiEvalDataError(
                    f"expected {_type_names(expected)}, got {type(value).__name__} {shown}",
                    path=path,
                    row=i,
                    field=name,
                )


def read_records(
    path: str | Path,
    required: Mapping[str, TypeSpec] | None = None,
    *,
    json_fields: Iterable[str] = (),
    allow_empty: bool = False,
) -> list[dict[str, Any]]:
    """Read a ``.jsonl``, ``.json``, ``.csv`` or ``.parquet`` file into a list of plain dicts, in file order.

    Args:
        path: the file. ``.json`` may hold an array of objects or JSON Lines.
        required: field name -> expected type or tuple of types (``None`` in a tuple allows null);
            every record must have each field with a value of that type. CSV cells are text: for a
            field whose types do not include ``str`` an integer, float, ``true``/``false`` or empty
            (null) cell is converted to the first such type asked for.
        json_fields: CSV columns whose cells are JSON text (nested values), decoded before type checks.
        allow_empty: return ``[]`` for a file without records instead of raising.

    Returns:
        The records; nested Parquet values are plain lists and dicts, never numpy arrays.

    Raises:
        ThaiEvalDataError: missing or empty file, unsupported suffix, bytes that are not UTF-8,
            invalid JSON, a missing field (the message lists the fields found) or a wrong type; the
            message names the file, the 0-based row and the field.

    Example:
        >>> read_records("data/x.jsonl", {"question": str, "answer": (int, str)})  # doctest: +SKIP
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise ThaiEvalDataError(
            f"unsupported file type {suffix or '(none)'!r}; expected one of {', '.join(SUPPORTED_SUFFIXES)}", path=path
        )
    if not path.is_file():
        raise ThaiEvalDataError("file not found" if not path.exists() else "not a file", path=path)
    if suffix == ".parquet":
        records = _read_parquet(path) if path.stat().st_size else []
    else:
        data = path.read_bytes()
        text, bad_utf8 = _decode(path, data)
        parse = {".jsonl": _parse_jsonl, ".json": _parse_json, ".csv": _parse_csv}[suffix]
        try:
            records = parse(path, text)
        except ThaiEvalDataError as exc:
            if bad_utf8 is not None:  # report the encoding problem, the real cause
                raise _utf8_error(path, data, bad_utf8, exc.row, exc.field) from None
            raise
        if bad_utf8 is not None:
            for i, rec in enumerate(records):
                bad_field = _first_bad_field(rec)
                if bad_field is not None:
                    raise _utf8_error(path, data, bad_utf8, i, bad_field)
            raise _utf8_error(path, data, bad_utf8, None, None)
    if not records:
        if allow_empty:
            return []
        raise ThaiEvalDataError("file is empty (no records)", path=path)
    _check(path, records, required or {}, json_fields, suffix == ".csv")
    return records


def require_finite(
    value: Any, *, path: str | Path | None = None, row: int | None = None, field: str | None = None
) -> float:
    """``value`` as a finite float: a number or numeric text; bools, NaN, ±inf and overflowing text (``1e400``)
    raise :class:`ThaiEvalDataError` naming the file, row and field.

    Example: ``require_finite("7.5")`` -> ``7.5``; ``require_finite("-Infinity", row=2, field="score")`` raises.
    """
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
        raise ThaiEvalDataError(
            f"expected a number, got {type(value).__name__} {value!r:.60}", path=path, row=row, field=field
        )
    try:
        x = float(value.strip() if isinstance(value, str) else value)
    except ValueError:
        raise ThaiEvalDataError(f"not a number: {value!r:.60}", path=path, row=row, field=field) from None
    if not math.isfinite(x):
        raise ThaiEvalDataError(f"not a finite number: {value!r:.60}", path=path, row=row, field=field)
    return x


def is_blank(value: str) -> bool:
    """True when ``value`` shows nothing: only whitespace, format characters (Unicode category Cf: zero-width
    space U+200B, joiners U+200C/U+200D, word joiner U+2060, BOM U+FEFF, soft hyphen) or control characters.
    ``str.strip`` keeps the zero-width ones, so a question of zero-width spaces would pass as text."""
    return all(ch.isspace() or unicodedata.category(ch) in ("Cf", "Cc") for ch in value)


def require_text(
    value: Any,
    *,
    path: str | Path | None = None,
    row: int | None = None,
    field: str | None = None,
    allow_empty: bool = False,
) -> str:
    """``value`` if it is real text: a string, not blank (unless ``allow_empty``), and not a missing value
    written as text (:data:`MISSING_SPELLINGS`, e.g. ``"NaN"``); else :class:`ThaiEvalDataError`."""
    if not isinstance(value, str):
        raise ThaiEvalDataError(
            f"expected text, got {type(value).__name__} {value!r:.60}", path=path, row=row, field=field
        )
    if is_blank(value) and not allow_empty:
        shown = (
            ""
            if not value.strip()
            else f" (only invisible characters: {', '.join(f'U+{ord(c):04X}' for c in dict.fromkeys(value))})"
        )
        raise ThaiEvalDataError(f"empty text{shown[:120]}", path=path, row=row, field=field)
    if value.strip().lower() in MISSING_SPELLINGS:
        raise ThaiEvalDataError(
            f"{value!r} is a missing value written as text, not text", path=path, row=row, field=field
        )
    return value


def require_texts(values: Sequence[Any], *, field: str, path: str | Path | None = None) -> None:
    """Every value is a string or None (None means empty, as the papers' code reads it); a float (pandas' NaN
    for a missing cell) or any other type raises :class:`ThaiEvalDataError` naming the 0-based row."""
    for i, value in enumerate(values):
        if value is not None and not isinstance(value, str):
            raise ThaiEvalDataError(
                f"expected text or None, got {type(value).__name__} {value!r:.60}", path=path, row=i, field=field
            )


def require_unique(
    records: Sequence[Mapping[str, Any]], keys: Sequence[str], *, path: str | Path | None = None
) -> None:
    """No two records share the values of ``keys``; else :class:`ThaiEvalDataError` naming both rows."""
    seen: dict[tuple[Any, ...], int] = {}
    for i, rec in enumerate(records):
        key = tuple(rec[k] for k in keys)
        if key in seen:
            shown = ", ".join(f"{k}={v!r}" for k, v in zip(keys, key))
            raise ThaiEvalDataError(f"duplicate row ({shown}; also row {seen[key]})", path=path, row=i, field=keys[0])
        seen[key] = i


def find_data_file(directory: str | Path, stem: str) -> Path | None:
    """The file ``<directory>/<stem><suffix>`` for one of :data:`SUPPORTED_SUFFIXES`, or None if there is none.

    Raises:
        ThaiEvalDataError: more than one suffix exists (which one to read would be a guess).
    """
    directory = Path(directory)
    found = [directory / f"{stem}{s}" for s in SUPPORTED_SUFFIXES if (directory / f"{stem}{s}").is_file()]
    if len(found) > 1:
        names = ", ".join(p.name for p in found)
        raise ThaiEvalDataError(f"ambiguous: several files for {stem!r} ({names}); keep one", path=directory)
    return found[0] if found else None


def write_jsonl(path: str | Path, records: Iterable[Mapping[str, Any]]) -> Path:
    """Write records as UTF-8 JSON Lines (non-ASCII kept as is), atomically; return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            for rec in records:
                fh.write(json.dumps(to_plain(dict(rec)), ensure_ascii=False) + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
