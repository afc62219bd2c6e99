"""A declared task's items: its data file read and every row validated before anything runs (DEVELOPERS.md,
"Errors": a missing field, empty text, a gold out of range or an unknown label, a duplicate id is a
``ThaiEvalDataError`` naming the file, the 0-based row and the field), then each row made into the item the
runner sends (lm-eval's ``doc_to_text`` / ``doc_to_choice`` / ``doc_to_target`` and its few-shot context).

Works on either kind of declared task (:mod:`.declared`) by its ``kind``; never imports it (declared imports this).
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping, Sequence
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


def _called(function: Any, row: Row, path: Path, i: int, name: str) -> Any:
    """A declaration's function of one row (``prompt``, ``choices``, ``gold``, ``reference``: doc -> value); what
    it raises is an error naming the file, the row and the field."""
    try:
        return function(dict(row))
    except Exception as exc:  # noqa: BLE001 - a user's function: say which row failed and why, whatever it raised
        raise ThaiEvalDataError(
            f"the {name} function {getattr(function, '__qualname__', function)!r} failed: {type(exc).__name__}: {exc}",
            path=path,
            row=i,
            field=name,
        ) from None


def _prompt(task: Any, row: Row, path: Path, i: int) -> str:
    """The filled prompt: the template with the row's fields, or the prompt function's text."""
    if not callable(task.prompt):
        return fill(task.prompt, row, path, i)
    return require_text(_called(task.prompt, row, path, i, "prompt"), path=path, row=i, field="prompt")


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
    if callable(task.choices):
        value = _called(task.choices, row, path, i, "choices")
        if not isinstance(value, (list, tuple)) or len(value) < 2:
            raise ThaiEvalDataError(
                f"expected a list of at least 2 choices, got {value!r:.80}", path=path, row=i, field="choices"
            )
        return [require_text(v, path=path, row=i, field=f"choices[{k}]") for k, v in enumerate(value)]
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
    name = "gold" if callable(task.gold) else task.gold
    value = _called(task.gold, row, path, i, "gold") if callable(task.gold) else _value(row, task.gold, path, i)
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ThaiEvalDataError(
            f"gold must be a choice index, label or text, got {value!r:.60}", path=path, row=i, field=name
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
                field=name,
            )
    else:
        index = value
    if not 0 <= index < len(choices):
        raise ThaiEvalDataError(
            f"gold {value!r} is out of range for {len(choices)} choices", path=path, row=i, field=name
        )
    return index


def _rows(task: Any, path: Path, rows: Sequence[Row] | None = None) -> list[dict[str, Any]]:
    """The rows of ``path`` (or the given ``rows``), through the task's ``process_docs`` when it has one."""
    json_fields = [task.choices] if task.kind == "multiple_choice" and isinstance(task.choices, str) else []
    out = read_records(path, json_fields=json_fields) if rows is None else [dict(r) for r in rows]
    if getattr(task, "process_docs", None) is None:
        return out
    try:
        processed = task.process_docs(out)
    except Exception as exc:  # noqa: BLE001 - a user's function: say where it failed, whatever it raised
        raise ThaiEvalDataError(
            f"process_docs failed: {type(exc).__name__}: {exc}", path=path, field="process_docs"
        ) from None
    if not isinstance(processed, (list, tuple)) or not all(isinstance(r, Mapping) for r in processed):
        raise ThaiEvalDataError(
            f"process_docs must return a list of rows (mappings), got {type(processed).__name__}",
            path=path,
            field="process_docs",
        )
    return [dict(r) for r in processed]


def _ids(task: Any, rows: Sequence[Row], path: Path) -> list[str]:
    if task.id_field is None:
        return [str(i) for i in range(len(rows))]
    ids = [_text(row, task.id_field, path, i) for i, row in enumerate(rows)]
    require_unique([{task.id_field: v} for v in ids], [task.id_field], path=path)
    return ids


def _mc_item(task: Any, row: Row, path: Path, i: int) -> dict[str, Any]:
    choices = _choices(task, row, path, i)
    return {"question": _prompt(task, row, path, i), "choices": choices, "gold": _gold(task, row, choices, path, i)}


def _gen_item(task: Any, row: Row, path: Path, i: int) -> dict[str, Any]:
    if callable(task.reference):
        reference = require_text(
            _called(task.reference, row, path, i, "reference"), path=path, row=i, field="reference"
        )
    else:
        reference = _text(row, task.reference, path, i)
    if not isinstance(task.prompt, (list, tuple)):
        return {"question": _prompt(task, row, path, i), "reference": reference}
    messages = [{"role": m["role"], "content": fill(m["content"], row, path, i)} for m in task.prompt]
    return {"question": messages[-1]["content"], "messages": messages, "reference": reference}


def _example(task: Any, row: Row, path: Path, i: int) -> str:
    """One few-shot example: its prompt, the target delimiter and its gold choice (or reference)."""
    if task.kind == "multiple_choice":
        item = _mc_item(task, row, path, i)
        return item["question"] + task.target_delimiter + item["choices"][item["gold"]]
    item = _gen_item(task, row, path, i)
    return item["question"] + task.target_delimiter + item["reference"]


def _chosen_examples(task: Any, n_items: int) -> tuple[list[list[int]], Callable[[int], Any]]:
    """Each item's few-shot rows (chosen by the task's sampler) and a function that builds the example of a pool row
    (once per row); no rows without few-shot."""
    if task.fewshot is None or task.fewshot.n <= 0:
        return [[] for _ in range(n_items)], lambda k: None
    path = task.path(task.fewshot.file)
    rows = _rows(task, path)
    if len(rows) < task.fewshot.n:
        raise ThaiEvalDataError(
            f"{task.fewshot.n} shots asked for, the file has {len(rows)} rows", path=path, field="fewshot"
        )
    same = path.resolve() == task.data_path.resolve()  # the pool is the evaluated data: an item never shows itself
    chosen = task.fewshot.chooser.choose(len(rows), task.fewshot.n, [i if same else None for i in range(n_items)])
    build = _chat_example if getattr(task, "is_chat", False) else _example
    examples: dict[int, Any] = {}

    def example(k: int) -> Any:
        if k not in examples:
            examples[k] = build(task, rows[k], path, k)
        return examples[k]

    return chosen, example


def _shots(task: Any, n_items: int) -> list[str]:
    """Each item's few-shot block (its rows chosen by the few-shot sampler), ending with the few-shot delimiter;
    "" for none. First n (the default): the same block before every item."""
    if task.fewshot is None or task.fewshot.n <= 0:
        return [""] * n_items
    chosen, example = _chosen_examples(task, n_items)
    return [task.fewshot.delimiter.join(example(k) for k in picks) + task.fewshot.delimiter for picks in chosen]


def _chat_example(task: Any, row: Row, path: Path, i: int) -> list[dict[str, str]]:
    """One few-shot example of a chat task as two turns (lm-eval's ``fewshot_as_multiturn``): the last message
    filled with the example's row as the user's turn, its reference as the assistant's."""
    item = _gen_item(task, row, path, i)
    return [{"role": "user", "content": item["question"]}, {"role": "assistant", "content": item["reference"]}]


def _with_turns(messages: list[dict[str, str]], examples: list[list[dict[str, str]]]) -> list[dict[str, str]]:
    """The chat with each example's turns before its last message (after any leading messages: a system prompt)."""
    return [*messages[:-1], *(turn for pair in examples for turn in pair), messages[-1]]


def load_items(task: Any, *, limit: int | None = None, rows: Sequence[Row] | None = None) -> list[dict[str, Any]]:
    """Every item of ``task`` (the first ``limit``), validated whole first; each has ``id``, ``row``, ``question``
    (the filled prompt), ``context`` (few-shot block + question; chat tasks: ``messages``) and ``choices`` + ``gold``
    (multiple choice) or ``reference`` (generation). ``rows``: the records in memory instead of the data file
    (a benchmark's own loader already read them); errors then name ``<task name> rows``. The task's
    ``process_docs`` runs on the rows first (and on the few-shot pool's)."""
    path = task.data_path if rows is None else Path(f"<{task.name} rows>")
    rows = _rows(task, path, rows)
    if not rows:
        raise ThaiEvalDataError("no items", path=path)
    ids = _ids(task, rows, path)
    make = _mc_item if task.kind == "multiple_choice" else _gen_item
    items = [{"id": ids[i], "row": i, **make(task, row, path, i)} for i, row in enumerate(rows)]
    if getattr(task, "is_chat", False):  # few-shot examples as turns; the context is the asked question
        chosen, example = _chosen_examples(task, len(items))
        for item, picks in zip(items, chosen, strict=True):
            item["context"] = item["question"]
            if picks:
                item["messages"] = _with_turns(item["messages"], [example(k) for k in picks])
        return items if limit is None else items[: max(0, int(limit))]
    for item, shots in zip(items, _shots(task, len(items)), strict=True):
        item["context"] = shots + item["question"]
        if getattr(task, "requests", None) is not None:  # per-document requests (each choice its own context)
            item["requests"] = [(str(c), str(x)) for c, x in task.requests(rows[item["row"]], item["context"])]
    return items if limit is None else items[: max(0, int(limit))]
