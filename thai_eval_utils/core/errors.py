"""The package's exception types: every bad input names its file, row and field."""

from __future__ import annotations

from pathlib import Path


class ThaiEvalError(Exception):
    """Base class of every error this package raises on purpose."""


class ThaiEvalDataError(ThaiEvalError, ValueError):
    """Bad input data: the message names the file, the row (0-based, as in the file) and the field.

    Example:
        >>> str(ThaiEvalDataError("bad label", path="data/x.jsonl", row=3, field="answer"))
        "data/x.jsonl, row 3, field 'answer': bad label"
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        row: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = str(path) if path is not None else None
        self.row = row
        self.field = field
        self.reason = message
        where = []
        if self.path is not None:
            where.append(self.path)
        if row is not None:
            where.append(f"row {row}")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class ModelLoadError(ThaiEvalError, RuntimeError):
    """A model spec could not be resolved or loaded (e.g. a Hub id while offline)."""


class JudgeError(ThaiEvalError, RuntimeError):
    """The judge endpoint could not be reached after the client's own retries."""
