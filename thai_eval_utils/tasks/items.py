"""A declared task's items: its data file read and every row validated before anything runs (DEVELOPERS.md,
"Errors": a missing field, empty text, a gold out of range or an unknown label, a duplicate id is a
``ThaiEvalDataError`` naming the file, the 0-based row and the field), then each row made into the item the
runner sends (lm-eval's ``doc_to_text`` / ``doc_to_choice`` / ``doc_to_target`` and its few-shot context).

Works on either kind of declared task (:mod:`.declared`) by its ``kind``; never imports it (declared imports this).
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.records import read_records, require_text, require_unique

Row = Mapping[str, Any]


def template_fields(template: str) -> list[str]:
    """The ``{field}`` names of a ``str.format`` template (``{{`` and ``}}`` are literal braces)."""
    try:
        return [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        raise ThaiEvalDataError(f"bad prompt template {template!r:.80}: {exc}", field="prompt") from None


def _value(row: Row, name: str, path: Path, i: int) -> Any:
    if name not in row:
        raise ThaiEvalDataError(
            f"missing field {name!r} (fields: {', '.join(map(str, row))})", path=path, row=i, field=name
        )
    return row[name]


def _text(row: Row, name: str, path: Path, i: int) -> str:
    value = _value(row, name, path, i)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return require_text(value, path=path, row=i, field=name)


def fill(template: str, row: Row, path: Path, i: int) -> str:
    """``template`` with each ``{field}`` replaced by the row's text (a number is written as text)."""
    names = template_fields(template)
    values = {n: _text(row, n, path, i) for n in dict.fromkeys(names) if n}
    try:
        return template.format_map(values)
    except (KeyError, IndexError, ValueError) as exc:  # a positional {} or a format spec on text
        raise ThaiEvalDataError(
            f"the prompt template cannot be filled: {exc!r}", path=path, row=i, field="prompt"
        ) from None


def _choices(task: Any, row: Row, path: Path, i: int) -> list[str]:
    if isinstance(task.choices, str):
        value = _value(row, task.choices, path, i)
        if not isinstance(value, (list, tuple)) or len(value) < 2:
            raise ThaiEvalDataError(
                f"expected a list of at least 2 choices, got {value!r:.80}", path=path, row=i, field=task.choices
            )
        return [require_text(v, path=path, row=i, field=f"{task.choices}[{k}]") for k, v in enumerate(value)]
    return [_text(row, name, path, i) for name in task.choices]


def _gold(task: Any, row: Row, choices: Sequence[str], path: Path, i: int) -> int:
    """The gold index: an int in range, one of ``labels``, a choice's text, or (CSV) an index written as text."""
    value = _value(row, task.gold, path, i)
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ThaiEvalDataError(
            f"gold must be a choice index, label or text, got {value!r:.60}", path=path, row=i, field=task.gold
        )
    if isinstance(value, str):
        if value in task.labels:
            index = task.labels.index(value)
        elif value in choices:
            return list(choices).index(value)
        elif value.strip().isdigit():
            index = int(value.strip())
        else:
            known = f"labels {list(task.labels)} or " if task.labels else ""
            raise ThaiEvalDataError(
                f"unknown gold {value!r:.60}: not one of the {known}choices {list(choices)!r:.200}",
                path=path,
                row=i,
                field=task.gold,
            )
    else:
        index = value
    if not 0 <= index < len(choices):
        raise ThaiEvalDataError(
            f"gold {value!r} is out of range for {len(choices)} choices", path=path, row=i, field=task.gold
        )
    return index


def _rows(task: Any, path: Path) -> list[dict[str, Any]]:
    json_fields = [task.choices] if task.kind == "multiple_choice" and isinstance(task.choices, str) else []
    return read_records(path, json_fields=json_fields)


def _ids(task: Any, rows: Sequence[Row], path: Path) -> list[str]:
    if task.id_field is None:
        return [str(i) for i in range(len(rows))]
    ids = [_text(row, task.id_field, path, i) for i, row in enumerate(rows)]
    require_unique([{task.id_field: v} for v in ids], [task.id_field], path=path)
    return ids


def _mc_item(task: Any, row: Row, path: Path, i: int) -> dict[str, Any]:
    choices = _choices(task, row, path, i)
    return {"question": fill(task.prompt, row, path, i), "choices": choices, "gold": _gold(task, row, choices, path, i)}


def _gen_item(task: Any, row: Row, path: Path, i: int) -> dict[str, Any]:
    reference = _text(row, task.reference, path, i)
    if isinstance(task.prompt, str):
        return {"question": fill(task.prompt, row, path, i), "reference": reference}
    messages = [{"role": m["role"], "content": fill(m["content"], row, path, i)} for m in task.prompt]
    return {"question": messages[-1]["content"], "messages": messages, "reference": reference}


def _shots(task: Any) -> str:
    """The few-shot block (first n rows of the split file), ending with the few-shot delimiter; "" for none."""
    if task.fewshot is None or task.fewshot.n <= 0:
        return ""
    path = task.path(task.fewshot.file)
    rows = _rows(task, path)
    if len(rows) < task.fewshot.n:
        raise ThaiEvalDataError(
            f"{task.fewshot.n} shots asked for, the file has {len(rows)} rows", path=path, field="fewshot"
        )
    parts = []
    for i, row in enumerate(rows[: task.fewshot.n]):
        if task.kind == "multiple_choice":
            item = _mc_item(task, row, path, i)
            target = item["choices"][item["gold"]]
        else:
            item = _gen_item(task, row, path, i)
            target = item["reference"]
        parts.append(item["question"] + task.target_delimiter + target)
    return task.fewshot.delimiter.join(parts) + task.fewshot.delimiter


def load_items(task: Any, *, limit: int | None = None, rows: Sequence[Row] | None = None) -> list[dict[str, Any]]:
    """Every item of ``task`` (the first ``limit``), validated whole first; each has ``id``, ``row``, ``question``
    (the filled prompt), ``context`` (few-shot block + question; chat tasks: ``messages``) and ``choices`` + ``gold``
    (multiple choice) or ``reference`` (generation). ``rows``: the records in memory instead of the data file
    (a benchmark's own loader already read them); errors then name ``<task name> rows``."""
    path = task.data_path if rows is None else Path(f"<{task.name} rows>")
    rows = _rows(task, path) if rows is None else [dict(r) for r in rows]
    if not rows:
        raise ThaiEvalDataError("no items", path=path)
    ids = _ids(task, rows, path)
    make = _mc_item if task.kind == "multiple_choice" else _gen_item
    items = [{"id": ids[i], "row": i, **make(task, row, path, i)} for i, row in enumerate(rows)]
    shots = _shots(task)
    for item in items:
        item["context"] = shots + item["question"]
    return items if limit is None else items[: max(0, int(limit))]
