"""Match two runs' per-item results by item key, never by position (paired comparisons)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from thai_eval_utils.core.errors import ThaiEvalDataError

#: One run's per-item values: ``key -> value``, or a DataFrame with a key column and a value column.
RunValues = Mapping[Hashable, float] | pd.DataFrame


class DataMismatchError(ThaiEvalDataError):
    """Two runs were made on different data (their data hashes differ); pass ``allow_different_data=True``
    to compare them anyway on the items they share."""


def sort_key(key: Hashable) -> tuple[str, str]:
    """A total order over mixed keys (type name, text) so results never depend on input order."""
    return type(key).__name__, str(key)


def per_item(run: RunValues, *, key: str = "key", value: str = "value", name: str = "run") -> dict[Hashable, float]:
    """``key -> float`` from a mapping or a DataFrame; duplicate keys and NaN values are errors.

    Raises:
        ThaiEvalDataError: naming the run, the 0-based row and the field.
    """
    if isinstance(run, pd.DataFrame):
        for col in (key, value):
            if col not in run.columns:
                raise ThaiEvalDataError(
                    f"{name}: no column {col!r} (columns: {', '.join(map(str, run.columns))})", field=col
                )
        pairs = list(zip(run[key].tolist(), run[value].tolist()))
    else:
        pairs = list(run.items())
    out: dict[Hashable, float] = {}
    first: dict[Hashable, int] = {}
    for i, (k, v) in enumerate(pairs):
        if k in out:
            raise ThaiEvalDataError(f"{name}: duplicate item key {k!r} (first in row {first[k]})", row=i, field=key)
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise ThaiEvalDataError(f"{name}: item {k!r} has a non-numeric value {v!r}", row=i, field=value) from None
        if math.isnan(x):
            raise ThaiEvalDataError(f"{name}: item {k!r} has no value (NaN)", row=i, field=value)
        out[k], first[k] = x, i
    return out


@dataclass(frozen=True)
class Aligned:
    """Values of the items both runs have, in canonical key order, and the keys only one run has."""

    keys: tuple[Hashable, ...]
    a: np.ndarray
    b: np.ndarray
    only_in_a: tuple[Hashable, ...]
    only_in_b: tuple[Hashable, ...]


def align(run_a: RunValues, run_b: RunValues, *, key: str = "key", value: str = "value") -> Aligned:
    """Pair items by key. Items present in one run only are listed and left out.

    Raises:
        ThaiEvalDataError: when no item is shared.
    """
    va, vb = per_item(run_a, key=key, value=value, name="run A"), per_item(run_b, key=key, value=value, name="run B")
    shared = sorted(va.keys() & vb.keys(), key=sort_key)
    if not shared:
        raise ThaiEvalDataError(
            f"the runs share no item key (run A: {len(va)} items, run B: {len(vb)} items)", field=key
        )
    return Aligned(
        keys=tuple(shared),
        a=np.array([va[k] for k in shared], dtype=float),
        b=np.array([vb[k] for k in shared], dtype=float),
        only_in_a=tuple(sorted(va.keys() - vb.keys(), key=sort_key)),
        only_in_b=tuple(sorted(vb.keys() - va.keys(), key=sort_key)),
    )


def data_hash(card: Mapping[str, object]) -> str:
    """One hash of a run's data from its run card (``RunStore.card["data_files"]``: path -> SHA-256)."""
    files = card.get("data_files") or {}
    if not isinstance(files, Mapping):
        raise ThaiEvalDataError("run card field data_files is not a mapping", field="data_files")
    return "+".join(sorted(str(h) for h in files.values()))


def check_same_data(hash_a: str | None, hash_b: str | None, *, allow_different_data: bool = False) -> str:
    """Refuse runs on different data unless allowed; returns a note for the result ("" when same/unknown).

    Raises:
        DataMismatchError: when both hashes are known, differ, and ``allow_different_data`` is False.
    """
    if hash_a is None or hash_b is None or hash_a == hash_b:
        return ""
    if not allow_different_data:
        raise DataMismatchError(
            f"the runs used different data (hash {hash_a[:12]} vs {hash_b[:12]}); comparing them item by item "
            "may pair different questions under the same key. Pass allow_different_data=True to compare anyway.",
            field="data_hash",
        )
    return f"different data hashes ({hash_a[:12]} vs {hash_b[:12]}), compared as allowed"
