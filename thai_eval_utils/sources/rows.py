"""Counting a data file's rows without loading it whole (the manifest's ``rows`` and ``thai-eval data verify``)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from thai_eval_utils.core.errors import ThaiEvalDataError


def count_rows(path: str | Path) -> int | None:
    """Rows of a JSONL (non-blank lines), JSON (array length), Parquet (its metadata) or CSV file; None for a file
    that holds no rows of its own (a pickle, an archive)."""
    path = Path(path)
    suffix = path.suffix.lower()
    try:
        if suffix == ".jsonl":
            with open(path, "rb") as fh:
                return sum(1 for line in fh if line.strip())
        if suffix == ".parquet":
            return pq.ParquetFile(path).metadata.num_rows
        if suffix == ".json":
            data = json.loads(path.read_text(encoding="utf-8"))
            return len(data) if isinstance(data, list) else None
        if suffix == ".csv":
            return len(pd.read_csv(path, dtype=str, keep_default_na=False))
    except (OSError, ValueError) as exc:
        raise ThaiEvalDataError(f"cannot count rows ({type(exc).__name__}: {exc})", path=path) from None
    return None
