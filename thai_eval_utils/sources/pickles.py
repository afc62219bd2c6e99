"""Reading a pickled ``datasets.DatasetDict`` without running the code a pickle may carry.

``pickle.load`` calls whatever callable the file names, so a pickle from the internet is a program. The dialect
benchmark ships its data only as ``datasets/dataset.pkl`` (dialect -> task -> ``datasets.Dataset``). This reader's
``find_class`` admits exactly what such a file needs and refuses anything else by name before it is called:

- the ``datasets`` classes are replaced by inert stand-ins that only keep their state (the ``datasets`` package is
  neither needed nor imported);
- pyarrow's and numpy's reconstructors rebuild arrays from buffers (:data:`ALLOWED_CALLABLES`): they build data,
  they run nothing from the file.

The check against the real file (``mrpeerat/Thai_local_benchmark`` at its pinned commit, 2,495,263 bytes) found
exactly these globals; ``tests/test_data_sources.py`` builds pickles with other classes and sees them refused.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.lib as palib

from thai_eval_utils.core.errors import ThaiEvalDataError


class _Inert:
    """A ``datasets`` object read back as its arguments and state only (no method of the real class runs)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> _Inert:
        obj = object.__new__(cls)
        obj.args, obj.state = args, None
        return obj

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        self.state = state


class _InertDict(dict):
    """A ``datasets`` mapping (``DatasetDict``, ``Features``) read back as a plain dict."""

    def __setstate__(self, state: Any) -> None:
        self.state = state


class InertDataset(_Inert):
    """``datasets.arrow_dataset.Dataset``: its state holds ``_data`` (the table) and ``_indices``."""


class InertTable(_Inert):
    """``datasets.table.InMemoryTable``: its state holds ``table`` (a ``pyarrow.Table``)."""


_reconstruct = np._core.multiarray._reconstruct  # numpy 2's home of what numpy 1 pickled as numpy.core

#: The ``datasets`` classes a DatasetDict pickle names, and their stand-ins.
STAND_INS: dict[tuple[str, str], type] = {
    ("datasets.dataset_dict", "DatasetDict"): _InertDict,
    ("datasets.arrow_dataset", "Dataset"): InertDataset,
    ("datasets.info", "DatasetInfo"): _Inert,
    ("datasets.features.features", "Features"): _InertDict,
    ("datasets.features.features", "Value"): _Inert,
    ("datasets.table", "InMemoryTable"): InertTable,
}
#: The real callables admitted: pyarrow's and numpy's rebuilding of arrays and tables from buffers.
ALLOWED_CALLABLES: dict[tuple[str, str], Callable[..., Any]] = {
    **{
        ("pyarrow.lib", n): getattr(palib, n)
        for n in (
            "type_for_alias",
            "schema",
            "field",
            "_reconstruct_record_batch",
            "_restore_array",
            "py_buffer",
            "_reconstruct_table",
            "chunked_array",
        )
    },
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("builtins", "bytearray"): bytearray,
}


class RefusedPickleError(ThaiEvalDataError):
    """The pickle names a class or function outside the allow-list; nothing it names was called."""


class _AllowListUnpickler(pickle.Unpickler):
    def __init__(self, fh: Any, path: Path) -> None:
        super().__init__(fh)
        self._path = path

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in STAND_INS:
            return STAND_INS[(module, name)]
        if (module, name) in ALLOWED_CALLABLES:
            return ALLOWED_CALLABLES[(module, name)]
        raise RefusedPickleError(
            f"refused to load {module}.{name}: only a datasets.DatasetDict of Arrow tables is "
            "read, and this file names another class or function (nothing was run)",
            path=self._path,
            field=f"{module}.{name}",
        )


def _records(dataset: Any, path: Path, where: str) -> list[dict[str, Any]]:
    """A stand-in Dataset's rows (its Arrow table, through ``_indices`` when it has them)."""
    state = dataset.state if isinstance(dataset, InertDataset) else None
    table = state.get("_data") if isinstance(state, dict) else None
    arrow = table.state.get("table") if isinstance(table, InertTable) and isinstance(table.state, dict) else None
    if not isinstance(arrow, pa.Table):
        raise ThaiEvalDataError("expected a datasets.Dataset holding an Arrow table", path=path, field=where)
    indices = state.get("_indices")
    if indices is not None:
        inner = (
            indices.state.get("table") if isinstance(indices, InertTable) and isinstance(indices.state, dict) else None
        )
        if not isinstance(inner, pa.Table):
            raise ThaiEvalDataError("unreadable row selection (_indices)", path=path, field=where)
        arrow = arrow.take(inner.column(0))
    return arrow.to_pylist()


def read_dataset_dict_pickle(path: str | Path) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """A pickled ``DatasetDict`` of ``DatasetDict``s (outer key -> inner key -> rows), read through the allow-list.

    Raises:
        RefusedPickleError: the file names anything outside :data:`STAND_INS` and :data:`ALLOWED_CALLABLES`.
        ThaiEvalDataError: not a pickle, or not that shape (the field names the outer/inner key).
    """
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            obj = _AllowListUnpickler(fh, path).load()
    except ThaiEvalDataError:
        raise
    except Exception as exc:  # noqa: BLE001 - a damaged or foreign file: say so with the file
        raise ThaiEvalDataError(f"cannot read the pickle ({type(exc).__name__}: {exc})", path=path) from None
    if not isinstance(obj, dict):
        raise ThaiEvalDataError(f"expected a DatasetDict, found {type(obj).__name__}", path=path)
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for outer, inner in obj.items():
        if not isinstance(outer, str) or not isinstance(inner, dict):
            raise ThaiEvalDataError("expected name -> DatasetDict", path=path, field=str(outer))
        out[outer] = {}
        for key, dataset in inner.items():
            if not isinstance(key, str):
                raise ThaiEvalDataError("expected task names as strings", path=path, field=f"{outer}/{key!r}")
            out[outer][key] = _records(dataset, path, f"{outer}/{key}")
    return out
