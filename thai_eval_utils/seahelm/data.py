"""SEA-HELM Thai rows (spec ``seahelm_thai.md`` 2.1): the shipped samples (``data/seahelm/<key>.jsonl`` and
``<key>_examples.jsonl``) or the same layout written from SEA-HELM's own Hugging Face datasets by ``thai-eval data
fetch`` (the data manifest's converter :func:`hf_files_to_task_files`; SEA-HELM loads them unpinned, pitfall P21: the
fetch records the commit it got). Every row is checked against the row
contract before anything runs: a bad row is a :class:`ThaiEvalDataError` naming the file, the row and the field.

Row contract: ``id``; ``label`` (QA: a list, of which ``label[0]`` is used, P13; none for IF-Eval and MT-Bench);
``prompts``: one dict per turn holding the task template's fields; ``metadata`` with ``language``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.provenance import sha256_file
from thai_eval_utils.core.records import read_records, write_jsonl
from thai_eval_utils.seahelm.config import TaskConfig, task_configs
from thai_eval_utils.tasks.items import template_fields

#: The shipped samples (``data/seahelm`` of the repository).
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "data" / "seahelm"
#: Tasks whose rows carry no label (scored by their own checks or a judge).
UNLABELLED = ("if-eval", "mt-bench-judge")


@dataclass
class TaskData:
    """A task's evaluation rows and few-shot rows, and where they came from (for the run card)."""

    task: str
    rows: list[dict[str, Any]]
    examples: list[dict[str, Any]]
    files: list[str] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=dict)

    def leaked_ids(self) -> list[str]:
        """Ids of few-shot rows that are also evaluation rows (ThaiExam's few-shot split is its test split, P6)."""
        ids = {str(r["id"]) for r in self.rows}
        return [str(e["id"]) for e in self.examples if "id" in e and str(e["id"]) in ids]


def check_rows(
    task: TaskConfig, rows: Sequence[Mapping[str, Any]], path: str | Path, *, examples: bool = False
) -> None:
    """Refuse rows SEA-HELM's prompt code could not format: a missing ``id``, ``label`` (labelled tasks) or
    ``prompts``, a turn that is not a dict, a template field the first turn lacks, a QA label that is not a list of
    text (naming the file, row and field)."""
    fields = [f for f in template_fields(task.task_template) if f not in ("", "answer_tag")]
    seen: set[str] = set()
    qa = task.parent == "qa" and not examples  # a QA test row's label: a list of answers
    for i, r in enumerate(rows):
        bad = partial(ThaiEvalDataError, path=path, row=i)
        for key in ("id", "prompts") + (() if task.parent in UNLABELLED else ("label",)):
            if key not in r or r[key] is None:
                raise bad(f"missing {key!r} (SEA-HELM's row contract: id, label, prompts, metadata)", field=key)
        prompts = r["prompts"]
        if not isinstance(prompts, list) or not prompts or not all(isinstance(p, dict) for p in prompts):
            raise bad("prompts must be a non-empty list of dicts (one per turn)", field="prompts")
        for name in fields:
            if not isinstance(prompts[0].get(name), str):
                need = f"the task template needs text field {name!r} in the first turn; found {sorted(prompts[0])}"
                raise bad(need, field=f"prompts[0].{name}")
        if qa and not (isinstance(r["label"], list) and r["label"] and all(isinstance(x, str) for x in r["label"])):
            raise bad("a QA label is a non-empty list of answer strings (label[0] is scored)", field="label")
        if task.parent not in UNLABELLED and not qa and not isinstance(r["label"], str | list):
            raise bad(f"label must be text, got {type(r['label']).__name__}", field="label")
        if not examples and str(r["id"]) in seen:
            raise bad(f"duplicate id {r['id']!r}", field="id")
        seen.add(str(r["id"]))


def load_task_data(task: TaskConfig, data_dir: str | Path | None = None) -> TaskData:
    """The shipped (or ``data_dir``'s) rows of ``task``: ``<key>.jsonl`` and, if present, ``<key>_examples.jsonl``
    (a ``-logprobs`` twin reads its parent's files, as its config interpolates the parent's ``languages``)."""
    folder = Path(data_dir) if data_dir is not None else DEFAULT_DATA
    path = folder / f"{task.parent}.jsonl"
    rows = read_records(path)
    check_rows(task, rows, path)
    files = [str(path)]
    ex_path = folder / f"{task.parent}_examples.jsonl"
    examples: list[dict[str, Any]] = []
    if ex_path.is_file():
        examples = read_records(ex_path, allow_empty=True)
        check_rows(task, examples, ex_path, examples=True)
        files.append(str(ex_path))
    return TaskData(
        task.key, rows, examples, files, {"kind": "files", "files": {Path(f).name: sha256_file(f) for f in files}}
    )


# ------------------------------------------------------------------------ the data manifest's converter
def thai_exam_rows(raw: Sequence[Mapping[str, Any]], exam: str) -> list[dict[str, Any]]:
    """typhoon-ai/thai_exam rows in SEA-HELM's contract (``thai_exam_dataloader.py:40-54``): ``id`` = row index,
    ``label`` = ``answer.upper()``, ``prompts`` = question and the options present (ic: a-d), ``metadata.subject``."""
    letters = "abcd" if exam == "ic" else "abcde"
    return [
        {
            "id": i,
            "label": str(r["answer"]).upper(),
            "prompts": [{"question": r["question"], **{k: r[k] for k in letters if k in r}}],
            "metadata": {"language": "th", "subject": r.get("subject")},
        }
        for i, r in enumerate(raw)
    ]


def hf_files_to_task_files(task: str, files: Mapping[str, Path], out_dir: Path) -> list[Path]:
    """The data manifest's converter (``"seahelm_rows"``): a task's downloaded Hugging Face split files written as
    ``<task>.jsonl`` (split ``eval``; ThaiExam: its ``test`` split through :func:`thai_exam_rows`) and
    ``<task>_examples.jsonl`` (split ``examples``; ThaiExam: the first five test rows, as its dataloader takes them),
    the layout :func:`load_task_data` reads; every row is checked against the task's contract first."""
    config = task_configs()[task]
    eval_files = sorted(p for name, p in files.items() if "/examples" not in name)
    example_files = sorted(p for name, p in files.items() if "/examples" in name)
    rows = [r for p in eval_files for r in read_records(p)]
    examples = [r for p in example_files for r in read_records(p)]
    if task.startswith("thai_exam_"):
        rows = thai_exam_rows(rows, task.removeprefix("thai_exam_"))
        examples = rows[:5]
    where = ", ".join(str(p) for p in eval_files)
    check_rows(config, rows, where)
    check_rows(config, examples, where, examples=True)
    written = [write_jsonl(Path(out_dir) / f"{task}.jsonl", rows)]
    if examples:
        written.append(write_jsonl(Path(out_dir) / f"{task}_examples.jsonl", examples))
    return written
