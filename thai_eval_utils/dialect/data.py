"""Thai dialect benchmark loaders (Limkonchotiwat et al., arXiv 2504.05898, section 2; repo
mrpeerat/Thai_local_benchmark): ``<dialect>/<task>.jsonl`` folders and the one-off conversion of the
benchmark's ``dataset.pkl`` into them.

Every bad input raises :class:`ThaiEvalDataError` naming file, row and field; everything is validated
before anything is returned. Thai text is returned exactly as stored (never Unicode-normalised).
"""

from __future__ import annotations

import pickle
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.sources.pickles import read_dataset_dict_pickle
from thai_eval_utils.core.records import (
    find_data_file,
    read_records,
    require_finite,
    require_text,
    require_unique,
    write_jsonl,
)

__all__ = ["DIALECTS", "check_dialect", "check_score_rows", "convert_dialect_pickle", "dialect_tasks", "load_dialect"]


DIALECTS = ("center", "east", "north", "south")
_DIALECT_COLUMNS = ["dialect", "task", "id", "text_1", "text_2", "question", "context"]
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_]+$")


def check_dialect(name: Any, *, path: str | Path | None = None, row: int | None = None, field: str = "dialect") -> str:
    """``name`` if it is one of :data:`DIALECTS`; else :class:`ThaiEvalDataError` (a ``ValueError``) listing them."""
    if name not in DIALECTS:
        message = f"unknown dialect {name!r}; expected one of {', '.join(DIALECTS)}"
        raise ThaiEvalDataError(message, path=path, row=row, field=field)
    return name


def check_score_rows(scores: pd.DataFrame) -> None:
    """A tidy score table (``model, dialect, task, metric, value``) fit for ΔDiff: known dialects, finite values,
    one row per (model, dialect, task, metric) (a duplicate would make ΔDiff pick one of two numbers)."""
    records = scores.reset_index(drop=True).to_dict("records")
    for i, rec in enumerate(records):
        check_dialect(rec["dialect"], row=i)
        require_finite(rec["value"], row=i, field="value")
    require_unique(records, ("model", "dialect", "task", "metric"))


def dialect_tasks(dialect: str) -> list[str]:
    """The benchmark's task names for one dialect, in the paper's order."""
    return ["qa", "summarization", f"translation_eng_{dialect}", f"translation_{dialect}_eng", "conversation", "food"]


def _dialect_rows(dialect: str, task: str, path: Path) -> list[dict[str, Any]]:
    kind = "translation" if task.startswith("translation_") else task
    text = (str, None)
    required: dict[str, Any] = {
        "qa": {"id": (str, int), "question": str, "context": str, "text_2": text},
        "summarization": {"id": (str, int), "text_1": str, "text_2": text},
        "translation": {"text_1": str, "text_2": text},
        "conversation": {"id": (str, int), "text_1": str},
        "food": {"id": (str, int), "text_1": str},
    }[kind]
    rows, seen = [], {}
    for i, rec in enumerate(read_records(path, required)):
        rid = rec.get("id", i) if kind == "translation" else rec["id"]
        if isinstance(rid, bool) or not isinstance(rid, (str, int)):
            raise ThaiEvalDataError(f"expected str or int, got {type(rid).__name__}", path=path, row=i, field="id")
        if str(rid) in seen:
            raise ThaiEvalDataError(f"duplicate id {rid!r} (also row {seen[str(rid)]})", path=path, row=i, field="id")
        seen[str(rid)] = i
        gold = rec.get("text_2", ".") if kind in ("conversation", "food") else rec["text_2"]
        if gold is not None:  # null means "no gold" (""); "NaN" is a missing value written as text: refused
            require_text(gold, path=path, row=i, field="text_2", allow_empty=True)
        for name in ("question", "context") if kind == "qa" else ("text_1",):
            require_text(rec[name], path=path, row=i, field=name)
        qa = (rec["question"], rec["context"]) if kind == "qa" else (None, None)
        text_1 = rec.get("text_1") if kind != "qa" else None
        rows.append(dict(zip(_DIALECT_COLUMNS, (dialect, task, str(rid), text_1, gold or "", *qa))))
    return rows


def load_dialect(source: str | Path, dialects: Iterable[str] | None = None) -> pd.DataFrame:
    """Load the dialect benchmark from ``<source>/<dialect>/<task>.jsonl`` (or ``.parquet``/``.json``/``.csv``).

    Args:
        source: folder holding ``center/``, ``east/``, ``north/``, ``south/`` (as written by
            :func:`convert_dialect_pickle`).
        dialects: the dialects to read (each must exist); default: every dialect folder present.

    Returns:
        One row per (dialect, task, item), columns ``dialect, task, id, text_1, text_2, question,
        context`` (None where a task lacks the field; a null gold becomes ""; ``id`` as text, the row
        index for translation files without ids). Missing task files are skipped; files with other
        names are ignored. ``df.attrs["files"]`` lists the files read.

    Raises:
        ThaiEvalDataError: a subfolder that is no dialect (hidden ``.x`` and ``_x`` folders aside), a dialect
            folder missing, or a bad row (file, row and field named).
    """
    source = Path(source)
    if not source.is_dir():
        raise ThaiEvalDataError("folder not found", path=source)
    for folder in sorted(p for p in source.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        if folder.name not in DIALECTS:  # e.g. "isan/": skipping it would drop a dialect without a word
            message = (
                f"unknown dialect folder {folder.name!r}; the dialect folders are {', '.join(DIALECTS)} (Isan is "
                "'east', Lanna 'north', Dambro 'south'): rename it or move it out of the folder"
            )
            raise ThaiEvalDataError(message, path=folder)
    wanted = list(dialects) if dialects is not None else [d for d in DIALECTS if (source / d).is_dir()]
    for d in wanted:
        check_dialect(d)
        if not (source / d).is_dir():
            raise ThaiEvalDataError("dialect folder not found", path=source / d)
    rows, files = [], []
    for d in wanted:
        for task in dialect_tasks(d):
            path = find_data_file(source / d, task)
            if path is not None:
                files.append(path)
                rows += _dialect_rows(d, task, path)
    if not files:
        message = f"no dialect task files found (expected <dialect>/<task>.jsonl, dialects {', '.join(DIALECTS)})"
        raise ThaiEvalDataError(message, path=source)
    df = pd.DataFrame(rows, columns=_DIALECT_COLUMNS, dtype=object)
    df.attrs["files"] = files
    return df


def _task_records(obj: Any) -> list[dict[str, Any]]:
    if hasattr(obj, "to_list"):  # datasets.Dataset
        records = obj.to_list()
    elif isinstance(obj, Mapping):  # columns: {"text_1": [...], ...}
        cols = {k: list(v) for k, v in obj.items()}
        if len(n := {len(v) for v in cols.values()}) > 1:
            raise ValueError(f"columns of different lengths {sorted(n)}")
        records = [dict(zip(cols, vals)) for vals in zip(*cols.values())]
    else:
        records = list(obj)
    if not all(isinstance(r, Mapping) for r in records):
        raise ValueError("records must be mappings")
    return [dict(r) for r in records]


def convert_dialect_pickle(pickle_path: str | Path, out_dir: str | Path, *, allow_pickle: bool = False) -> list[Path]:
    """Convert the benchmark's ``datasets/dataset.pkl`` (dialect -> task -> records) to JSONL, once.

    Unpickling runs code stored in the file, so this refuses unless ``allow_pickle=True`` and warns
    when it does. The pickle holds ``datasets.DatasetDict`` objects (the ``datasets`` package must be
    installed to read it); plain dicts of lists of records work too.

    Returns:
        The written files ``<out_dir>/<dialect>/<task>.jsonl`` in the pickle's order (read them with
        :func:`load_dialect`).
    """
    path = Path(pickle_path)
    if not allow_pickle:
        raise ThaiEvalDataError(
            "refusing to unpickle: loading a pickle runs code stored in it. If you trust this file, call "
            "convert_dialect_pickle(..., allow_pickle=True) once and use the JSONL files it writes",
            path=path,
        )
    if not path.is_file():
        raise ThaiEvalDataError("file not found", path=path)
    message = f"unpickling {path}: this runs code stored in the file; do it only for a file you trust"
    warnings.warn(message, UserWarning, stacklevel=2)
    try:
        with open(path, "rb") as fh:
            obj = pickle.load(fh)  # noqa: S301 - explicitly allowed by the caller
    except ModuleNotFoundError as exc:
        message = f"the pickle needs the {exc.name!r} package to be read (pip install it)"
        raise ThaiEvalDataError(message, path=path) from None
    except Exception as exc:
        raise ThaiEvalDataError(f"cannot unpickle ({type(exc).__name__}: {exc})", path=path) from None
    if not hasattr(obj, "items"):
        raise ThaiEvalDataError(f"expected a dict of dialects, got {type(obj).__name__}", path=path)

    def check(dialect: Any, tasks: Any) -> None:
        if not (isinstance(dialect, str) and _SAFE_NAME.match(dialect)) or not hasattr(tasks, "items"):
            raise ThaiEvalDataError(
                f"expected dialect name -> dict of tasks, got {dialect!r} -> {type(tasks).__name__}",
                path=path,
                field=str(dialect),
            )

    return _write_tasks(obj, path, Path(out_dir), check)


def _write_tasks(
    dialects: Mapping[str, Mapping[str, Any]], path: Path, out_dir: Path, check: Callable[[Any, Any], Any]
) -> list[Path]:
    """Every task's records (:func:`_task_records`) of every dialect (``check(dialect, tasks)`` refuses one), as
    ``<out_dir>/<dialect>/<task>.jsonl``; everything is checked before the first file is written."""
    planned: list[tuple[Path, list[dict[str, Any]]]] = []
    for dialect, tasks in dialects.items():
        check(dialect, tasks)
        for task, data in tasks.items():
            if not (isinstance(task, str) and _SAFE_NAME.match(task)):
                raise ThaiEvalDataError(f"bad task name {task!r}", path=path, field=f"{dialect}/{task}")
            try:
                records = _task_records(data)
            except (TypeError, ValueError) as exc:
                raise ThaiEvalDataError(f"cannot read records: {exc}", path=path, field=f"{dialect}/{task}") from None
            planned.append((out_dir / dialect / f"{task}.jsonl", records))
    return [write_jsonl(target, records) for target, records in planned]


#: The benchmark's pickle in its repository (the data manifest's file of the ``generation`` task).
DIALECT_PICKLE = "datasets/dataset.pkl"


def dialect_pickle_to_jsonl(task: str, files: Mapping[str, Path], out_dir: Path) -> list[Path]:
    """The data manifest's converter (``"dialect_pickle"``, ``task`` the manifest's ``generation``): the benchmark's ``datasets/dataset.pkl`` read through
    the allow-list reader (``sources.pickles``: no code from the file runs, any other class is refused by name) and
    written as ``<out_dir>/<dialect>/<task>.jsonl``, validated whole by :func:`load_dialect` before it returns.
    The repository's CSVs are not used: they are the annotation sheets (no conversation or food prompts, other
    columns), not the rows the runner scores."""
    if DIALECT_PICKLE not in files:
        raise ThaiEvalDataError(f"the dialect converter needs {DIALECT_PICKLE}", field="files")
    path = files[DIALECT_PICKLE]
    dialects = read_dataset_dict_pickle(path)
    written = _write_tasks(dialects, path, Path(out_dir), lambda d, _: check_dialect(d, path=path, field=d))
    load_dialect(out_dir)
    return written
