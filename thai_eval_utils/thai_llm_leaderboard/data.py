"""The log-likelihood tasks' data as the runner gets it, validated whole, and made into scored items (spec
thai_llm_leaderboard.md 1.1-1.2, 2.3; ``evaluation/data_utils.py:149-159``, ``evaluation/main_nlu_prompt_batch.py:
113-209``).

Where the file comes from: a data folder holding the HF repos' files (``{task_key}_test.jsonl``, ``thai_exam.jsonl``;
a Parquet export of the same stem is read too), as the shipped samples are or as ``thai-eval data fetch
thai_llm_leaderboard`` writes the Hub's files at their pinned revisions (the one way the package reads the Hub). The
run card records the repo, file and SHA-256 (:attr:`TaskData.source`).

What the runner does with the rows, reproduced here: QA gold = ``choices.index(answer[0])`` (exact match, first
occurrence); a list answer that is empty or not among the choices excludes the row (counted, never scored); a plain
string answer not among the choices aborts the runner, so here it is a :class:`ThaiEvalDataError`. Text/pairs gold =
the integer ``label`` (a SEACrowd ClassLabel index). Rows the runner would fail on later, or score as nonsense, are
errors naming the file, the 0-based row and the field: a missing or mistyped column, an empty text, a label outside
the task's label set.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.provenance import sha256_file
from thai_eval_utils.core.records import find_data_file, read_records, require_text
from thai_eval_utils.tasks.declared import MultipleChoiceTask
from thai_eval_utils.thai_llm_leaderboard.declarations import declare
from thai_eval_utils.thai_llm_leaderboard.tasks import NLUTask

#: The columns each SEACrowd schema must have for the runner (spec 1.2); ``context`` may be absent or null.
SCHEMA_FIELDS: dict[str, dict[str, Any]] = {
    "text": {"text": str, "label": int},
    "pairs": {"text_1": str, "text_2": str, "label": int},
    "qa": {"question": str, "choices": list, "answer": (list, str)},
}


@dataclass
class TaskData:
    """A task's rows made into scored items.

    ``items``: one per scored row, in file order: ``key`` (the row's ``id``, else its row number), ``row``, ``id``,
    ``prompt`` (``[LABEL_CHOICE]`` still in it), ``labels`` (the strings scored), ``gold`` (an index into them, or
    past them: an M3Exam gold ``e``), ``n_choices``. ``excluded``: rows the runner drops (``row``, ``id``,
    ``reason``). ``source``: where the file came from (``repo``, ``revision``, ``file``, ``sha256``, ``path``,
    ``origin``).
    """

    task: NLUTask
    path: Path
    items: list[dict[str, Any]]
    excluded: list[dict[str, Any]] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=dict)

    @property
    def n_rows(self) -> int:
        """Rows in the file: scored plus excluded."""
        return len(self.items) + len(self.excluded)


def local_file(task: NLUTask, data_dir: str | Path) -> Path:
    """The task's file in a data folder: ``<data_dir>/<repo file>`` or a Parquet/JSONL/JSON/CSV file of its stem."""
    folder = Path(data_dir)
    stem = task.file.rsplit(".", 1)[0]
    found = find_data_file(folder, stem)
    if found is None:
        raise ThaiEvalDataError(
            f"no data file for task {task.key!r} (expected {task.file} or {stem}.parquet, as {task.repo} names it)",
            path=folder,
        )
    return found


def _require_int_label(value: Any, n_labels: int, path: Path, row: int) -> int:
    bad = functools.partial(ThaiEvalDataError, path=path, row=row, field="label")
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad(f"label must be a ClassLabel index (int), got {value!r:.40}")
    if not 0 <= value < n_labels:
        raise bad(f"unknown label {value} (the task scores {n_labels} labels: 0..{n_labels - 1})")
    return value


def _check_qa(task: NLUTask, rec: dict[str, Any], path: Path, row: int) -> None:
    """A qa row's types and texts: context str/null/absent; question text (may be empty for CR, whose template has
    no ``[QUESTION]``); choices a non-empty list of strings; answer a string or a list of strings."""
    bad = functools.partial(ThaiEvalDataError, path=path, row=row)
    context = rec.get("context")
    if context is not None and not isinstance(context, str):
        raise bad(f"context must be text or null, got {type(context).__name__}", field="context")
    if task.task_type == "CR":
        require_text(context, path=path, row=row, field="context")
    else:
        require_text(rec["question"], path=path, row=row, field="question")
    choices = rec["choices"]
    if not choices or not all(isinstance(c, str) for c in choices):
        raise bad("choices must be a non-empty list of strings", field="choices")
    if len(choices) > 26:
        raise bad(f"{len(choices)} choices: the runner letters them a-z", field="choices")
    answer = rec["answer"]
    if isinstance(answer, list) and not all(isinstance(a, str) for a in answer):
        raise bad("answer must be a list of strings", field="answer")


def _qa_gold(decl: MultipleChoiceTask, rec: dict[str, Any], path: Path, row: int) -> int | None:
    """The declaration's gold of a qa row (None: excluded, as the runner's bare ``except`` on a list answer); a
    plain string answer not among the choices aborts the runner: an error here."""
    gold = decl.gold(rec)
    if gold is None and not isinstance(rec["answer"], list):
        why = f"answer {rec['answer']!r:.60} is not among the choices (the runner aborts on this row)"
        raise ThaiEvalDataError(why, path=path, row=row, field="answer")
    return gold


def build_items(task: NLUTask, records: list[dict[str, Any]], path: Path) -> tuple[list[dict], list[dict]]:
    """Validate every row, then the scored items (prompt, labels and gold from the task's declaration,
    :mod:`.declarations`) and the excluded rows (:class:`TaskData`)."""
    items, excluded, seen = [], [], {}
    decl = declare(task)
    for row, rec in enumerate(records):
        row_id = rec.get("id")
        key = str(row) if row_id is None else str(row_id)
        if key in seen:
            raise ThaiEvalDataError(f"duplicate id {key!r} (also row {seen[key]})", path=path, row=row, field="id")
        seen[key] = row
        if task.schema == "qa":
            _check_qa(task, rec, path, row)
            gold = _qa_gold(decl, rec, path, row)
            if gold is None:
                reason = "answer is empty" if not rec["answer"] else "answer[0] is not among the choices"
                excluded.append({"row": row, "id": row_id, "reason": reason})
                continue
        else:
            for name in ("text",) if task.schema == "text" else ("text_1", "text_2"):
                require_text(rec[name], path=path, row=row, field=name)
            gold = _require_int_label(rec["label"], len(task.labels), path, row)
        labels = decl.choices(rec)
        n_choices = len(rec["choices"]) if task.schema == "qa" else len(labels)
        values = (key, row, row_id, decl.prompt(rec), list(labels), gold, n_choices)
        items.append(dict(zip(("key", "row", "id", "prompt", "labels", "gold", "n_choices"), values)))
    return items, excluded


def load_task(
    task: NLUTask,
    data_dir: str | Path | None = None,
    *,
    path: str | Path | None = None,
) -> TaskData:
    """A task's data: from ``path``, else the task's file in ``data_dir`` (``thai-eval data fetch
    thai_llm_leaderboard`` writes the Hub's files at their pinned revisions there). Every row is validated before any
    item is returned.

    Raises:
        ThaiEvalDataError: no such file; a wrong column, an empty text, an unknown label, a string answer not among
            the choices, a duplicate id (file, row and field named).
    """
    if path is not None:
        file, origin = Path(path), "file"
    elif data_dir is not None:
        file, origin = local_file(task, data_dir), "data folder"
    else:
        raise ThaiEvalDataError(f"task {task.key!r}: give a data folder or a file")
    records = read_records(file, SCHEMA_FIELDS[task.schema])
    items, excluded = build_items(task, records, file)
    where = {"repo": task.repo, "file": task.file, "split": task.split, "path": str(file), "origin": origin}
    source = {**where, "revision": None, "sha256": sha256_file(file)}  # revision None: a file as found (runs record it)
    return TaskData(task, file, items, excluded, source)
