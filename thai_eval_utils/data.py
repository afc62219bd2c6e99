"""Loaders for Thai-H6 and ThaiCLI (arXiv 2410.04795; repo UpstageAI/ThaiCLI_H6) and the Thai dialect
benchmark (arXiv 2504.05898; repo mrpeerat/Thai_local_benchmark), from official layouts or flat files.

Every bad input raises :class:`ThaiEvalDataError` naming file, row and field; everything is validated
before anything is returned. Thai text is returned exactly as stored (never Unicode-normalised).
"""

from __future__ import annotations

import hashlib
import json
import pickle
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .errors import ThaiEvalDataError
from .io import SUPPORTED_SUFFIXES, find_data_file, read_records, write_jsonl

__all__ = [
    "DIALECTS",
    "H6_TASKS",
    "H6TaskData",
    "THAICLI_FORMATS",
    "convert_dialect_pickle",
    "dialect_tasks",
    "load_dialect",
    "load_h6_task",
    "load_thaicli",
]


@dataclass(frozen=True)
class H6TaskData:
    """One Thai-H6 task as read from disk.

    Attributes:
        task: ``"th_arc"``, ``"th_hellaswag"``, ``"th_mmlu"``, ``"th_truthfulqa"``, ``"th_winogrande"``
            or ``"th_gsm8k"``.
        docs: the scored split in file order with the official columns as stored (MMLU: plus
            ``"subject"``, the subject folder's name; subjects sorted by name).
        fewshot_pool: the few-shot split in file order (MMLU: all subjects concatenated in the same
            subject order; TruthfulQA: empty).
        fewshot_by_subject: MMLU only: subject -> that subject's few-shot records in file order.
        files: every file read (their hashes go into run cards).
        source: the ``source`` argument as given.
    """

    task: str
    docs: list[dict]
    fewshot_pool: list[dict]
    fewshot_by_subject: dict[str, list[dict]] | None
    files: list[Path]
    source: str


# task -> (folder and file prefix in UpstageAI/ThaiCLI_H6 h6/, scored split, few-shot splits to try).
# ARC: LB uses train; the Thai release ships validation instead (spec thai_h6.md, "Tasks, shots, metrics").
H6_TASKS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "th_arc": ("th_arc_challenge", "test", ("train", "validation")),
    "th_hellaswag": ("th_hellaswag", "validation", ("train",)),
    "th_mmlu": ("th_mmlu", "test", ("dev", "train", "validation")),
    "th_truthfulqa": ("th_truthfulqa", "validation", ()),
    "th_winogrande": ("th_winogrande", "validation", ("train",)),
    "th_gsm8k": ("th_gsm8k", "test", ("train",)),
}

# ARC numeric answer keys map to letters (LB lm_eval/tasks/arc.py, _process_doc).
_ARC_NUM_TO_LETTER = {"1": "A", "2": "B", "3": "C", "4": "D", "5": "E"}
# GSM8K gold extraction (LB lm_eval/tasks/gsm8k.py, ANS_RE).
_GSM8K_ANSWER_RE = re.compile(r"#### (\-?[0-9\.\,]+)")

_H6_FIELDS: dict[str, dict[str, Any]] = {
    "th_arc": {"question": str, "choices": dict, "answerKey": str},
    "th_hellaswag": {"activity_label": str, "ctx_a": str, "ctx_b": str, "endings": list, "label": (int, str)},
    "th_mmlu": {"question": str, "choices": list, "answer": (int, str)},
    "th_truthfulqa": {"question": str, "mc1_targets": dict, "mc2_targets": dict},
    "th_winogrande": {"sentence": str, "option1": str, "option2": str, "answer": (str, int)},
    "th_gsm8k": {"question": str, "answer": str},
}
_H6_JSON_FIELDS = {"th_arc": ("choices",), "th_hellaswag": ("endings",), "th_mmlu": ("choices",),
                   "th_truthfulqa": ("mc1_targets", "mc2_targets")}


def _str_list(value: Any, what: str, min_len: int = 1) -> str | None:
    """Why ``value`` is not a list of at least ``min_len`` strings, or None."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return f"{what} must be a list of strings, got {value!r:.80}"
    if len(value) < min_len:
        return f"{what} has {len(value)} item(s), expected at least {min_len}"
    return None


def _h6_gold(task: str, doc: Mapping[str, Any]) -> int:
    """The 0-based index of the correct choice of a Thai-H6 doc, as the leaderboard harness computes it.

    ARC: position of ``answerKey`` in A-E after mapping 1-5 to A-E; HellaSwag: ``int(label)``; MMLU:
    ``answer`` as 0-3 or A-D; Winogrande: ``int(answer) - 1``; TruthfulQA: 0 (mc1's true answer comes
    first). GSM8K has no choice index (raises ValueError).
    """
    if task == "th_arc":
        key = doc["answerKey"].strip()
        key = _ARC_NUM_TO_LETTER.get(key, key)
        return "ABCDE".index(key) if isinstance(key, str) and len(key) == 1 and key in "ABCDE" else -1
    if task == "th_hellaswag":
        label = doc["label"]
        return int(label) if isinstance(label, int) or str(label).strip().isdigit() else -1
    if task == "th_mmlu":
        ans = doc["answer"]
        if isinstance(ans, int):
            return ans
        ans = ans.strip().upper()
        return int(ans) if ans.isdigit() else ("ABCD".index(ans) if len(ans) == 1 and ans in "ABCD" else -1)
    if task == "th_winogrande":
        return {"1": 0, "2": 1}.get(str(doc["answer"]).strip(), -1)
    if task == "th_truthfulqa":
        return 0
    raise ValueError(f"{task} has no choice index (GSM8K is scored by exact match of the '#### N' answer)")


def _h6_problem(task: str, rec: dict[str, Any]) -> tuple[str, str] | None:
    """(field, reason) for a record that the task cannot score, or None."""
    if task == "th_arc":
        ch = rec["choices"]
        if set(ch) < {"text", "label"}:
            return "choices", f"choices needs keys 'text' and 'label', found {sorted(ch)}"
        bad = _str_list(ch["text"], "choices.text", 2) or _str_list(ch["label"], "choices.label", 2)
        if bad:
            return "choices", bad
        if len(ch["text"]) != len(ch["label"]):
            return "choices", f"{len(ch['text'])} texts but {len(ch['label'])} labels"
        gold = _h6_gold(task, rec)
        if rec["answerKey"].strip() not in ch["label"] or not 0 <= gold < len(ch["text"]):
            return "answerKey", f"answerKey {rec['answerKey']!r} does not pick one of the {len(ch['text'])} choices (labels {ch['label']})"
    elif task == "th_hellaswag":
        bad = _str_list(rec["endings"], "endings", 2)
        if bad:
            return "endings", bad
        if not 0 <= _h6_gold(task, rec) < len(rec["endings"]):
            return "label", f"label {rec['label']!r} is not an index into {len(rec['endings'])} endings"
    elif task == "th_mmlu":
        bad = _str_list(rec["choices"], "choices", 4)
        if bad or len(rec["choices"]) != 4:
            return "choices", bad or f"choices has {len(rec['choices'])} items, expected 4"
        if not 0 <= _h6_gold(task, rec) < 4:
            return "answer", f"answer {rec['answer']!r} is not 0-3 or A-D"
    elif task == "th_truthfulqa":
        for name in ("mc1_targets", "mc2_targets"):
            t = rec[name]
            if set(t) < {"choices", "labels"}:
                return name, f"{name} needs keys 'choices' and 'labels', found {sorted(t)}"
            bad = _str_list(t["choices"], f"{name}.choices", 2)
            if bad:
                return name, bad
            labels = t["labels"]
            if not isinstance(labels, list) or len(labels) != len(t["choices"]) or any(
                isinstance(x, bool) or x not in (0, 1) for x in labels
            ):
                return name, f"{name}.labels must be {len(t['choices'])} values 0/1, got {labels!r:.80}"
        if rec["mc1_targets"]["labels"][0] != 1 or sum(rec["mc1_targets"]["labels"]) != 1:
            return "mc1_targets", "mc1 needs exactly one true answer and it must come first (mc1 = argmax is index 0)"
        if 0 not in rec["mc2_targets"]["labels"] or 1 not in rec["mc2_targets"]["labels"]:
            return "mc2_targets", "mc2 needs at least one true (1) and one false (0) answer"
    elif task == "th_winogrande":
        if rec["sentence"].count("_") != 1:
            return "sentence", f"sentence must contain exactly one '_' blank, found {rec['sentence'].count('_')}"
        if _h6_gold(task, rec) < 0:
            return "answer", f"answer {rec['answer']!r} is not '1' or '2'"
    elif task == "th_gsm8k":
        if not _GSM8K_ANSWER_RE.search(rec["answer"]):
            return "answer", "answer has no '#### <number>' final answer"
    return None


def _read_h6_file(task: str, path: Path) -> list[dict[str, Any]]:
    records = read_records(path, _H6_FIELDS[task], json_fields=_H6_JSON_FIELDS.get(task, ()))
    for i, rec in enumerate(records):
        problem = _h6_problem(task, rec)
        if problem:
            raise ThaiEvalDataError(problem[1], path=path, row=i, field=problem[0])
    return records


def _task_dir(source: Path, folder: str) -> Path:
    for cand in (source / "h6" / folder, source / folder):
        if cand.is_dir():
            return cand
    return source if source.name == folder else source / "h6" / folder


def _require(directory: Path, stem: str) -> Path:
    path = find_data_file(directory, stem)
    if path is None:
        tried = "{" + ",".join(s.lstrip(".") for s in SUPPORTED_SUFFIXES) + "}"
        raise ThaiEvalDataError(f"file not found (tried {stem}.{tried})", path=directory / stem)
    return path


def _fewshot_file(directory: Path, prefix: str, splits: tuple[str, ...], mmlu: bool) -> Path | None:
    found = {s: p for s in splits if (p := find_data_file(directory, f"{prefix}_{s}")) is not None}
    if mmlu and "dev" not in found and len(found) > 1:
        names = ", ".join(p.name for p in found.values())
        raise ThaiEvalDataError(f"ambiguous few-shot split ({names}); keep one", path=directory)
    return next(iter(found.values()), None)


def load_h6_task(source: str | Path, task: str) -> H6TaskData:
    """Load one Thai-H6 task from a checkout of UpstageAI/ThaiCLI_H6 or a folder in the same layout.

    Args:
        source: the repository root (holding ``h6/``), the ``h6/`` folder itself, or the task folder;
            files may be ``.parquet``, ``.jsonl``, ``.json`` or ``.csv`` (CSV nested columns as JSON text),
            e.g. ``h6/th_arc_challenge/th_arc_challenge_test.jsonl`` and
            ``h6/th_mmlu/<subject>/th_mmlu_<subject>_{test,train|validation}.parquet``.
        task: one of :data:`H6_TASKS`.

    Returns:
        H6TaskData (see the class). Column values are kept as stored (``h6_tasks.gold`` turns them into indices).

    Raises:
        ValueError: unknown task.
        ThaiEvalDataError: missing file, wrong columns, wrong types, gold out of range, bad text.
    """
    if task not in H6_TASKS:
        raise ValueError(f"unknown Thai-H6 task {task!r}; expected one of {', '.join(H6_TASKS)}")
    folder, scored, fewshot_splits = H6_TASKS[task]
    directory = _task_dir(Path(source), folder)
    if task != "th_mmlu":
        doc_path = _require(directory, f"{folder}_{scored}")
        pool_path = _fewshot_file(directory, folder, fewshot_splits, False) if fewshot_splits else None
        if fewshot_splits and pool_path is None:
            raise ThaiEvalDataError(f"few-shot file not found (tried {', '.join(fewshot_splits)})", path=directory / folder)
        docs = _read_h6_file(task, doc_path)
        pool = _read_h6_file(task, pool_path) if pool_path else []
        files = [doc_path] + ([pool_path] if pool_path else [])
        return H6TaskData(task, docs, pool, None, files, str(source))
    if not directory.is_dir():
        raise ThaiEvalDataError("folder not found (expected h6/th_mmlu/<subject>/ folders)", path=directory)
    subjects = sorted(p.name for p in directory.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not subjects:
        raise ThaiEvalDataError("no subject folders found", path=directory)
    docs, pool, by_subject, files = [], [], {}, []
    for subject in subjects:
        sub_dir, prefix = directory / subject, f"th_mmlu_{subject}"
        doc_path = _require(sub_dir, f"{prefix}_{scored}")
        pool_path = _fewshot_file(sub_dir, prefix, fewshot_splits, True)
        if pool_path is None:
            raise ThaiEvalDataError("few-shot file not found (tried dev, train, validation)", path=sub_dir / prefix)
        sub_docs = [{**r, "subject": subject} for r in _read_h6_file(task, doc_path)]
        by_subject[subject] = [{**r, "subject": subject} for r in _read_h6_file(task, pool_path)]
        docs += sub_docs
        pool += by_subject[subject]
        files += [doc_path, pool_path]
    return H6TaskData(task, docs, pool, by_subject, files, str(source))


# ---------------------------------------------------------------- ThaiCLI (paper section 4)

THAICLI_FORMATS = ("factoid", "instruction")
_THAICLI_COLUMNS = ["id", "format", "theme", "question", "chosen", "rejected"]


def _question_text(value: Any) -> str | None:
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return value
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, Mapping):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _answer_pair(value: Any) -> tuple[str, str] | str:
    """(chosen, rejected) from the official ``answers`` list, or the reason it is invalid."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            return f"answers is not valid JSON ({exc.msg})"
    if not isinstance(value, list) or not all(isinstance(a, Mapping) for a in value):
        return f"answers must be a list of {{'content', 'score'}} objects, got {value!r:.80}"
    chosen = [a.get("content") for a in value if a.get("score") == 1]  # strings ("1") never compare equal
    rejected = [a.get("content") for a in value if a.get("score") == 0]
    other = len(value) - len(chosen) - len(rejected)
    if len(chosen) != 1 or len(rejected) != 1 or other:
        return (f"expected exactly one chosen (score 1) and one rejected (score 0) answer, found {len(chosen)} chosen, "
                f"{len(rejected)} rejected and {other} other")
    if not isinstance(chosen[0], str) or not isinstance(rejected[0], str):
        return "answer contents must be strings"
    return chosen[0], rejected[0]


def _thaicli_files(source: Path) -> list[Path]:
    if source.is_file():
        return [source]
    if not source.exists():
        raise ThaiEvalDataError("file or folder not found", path=source)
    directory = source / "cli" if (source / "cli").is_dir() else source
    files = [p for stem in ("CLI_factoid", "CLI_instruction") if (p := find_data_file(directory, stem))]
    if not files:
        raise ThaiEvalDataError("no ThaiCLI file found (expected CLI_factoid.* and/or CLI_instruction.*)", path=directory)
    return files


def _read_thaicli_file(path: Path) -> list[dict[str, Any]]:
    name_format = next((f for f in THAICLI_FORMATS if f in path.stem.lower()), None)
    records = read_records(path, {"question": (str, dict, list), "theme": str})
    official = "answers" in records[0]
    out, seen = [], {}
    for i, rec in enumerate(records):
        fmt = rec.get("format", name_format)
        fmt = fmt.strip().lower() if isinstance(fmt, str) else fmt
        if fmt not in THAICLI_FORMATS or (name_format and fmt != name_format):
            why = "no format: name the file CLI_factoid/CLI_instruction or add a 'format' column"
            raise ThaiEvalDataError(why if fmt is None else f"format {rec.get('format')!r} is not factoid/instruction"
                                    f"{' (file name says ' + name_format + ')' if name_format else ''}", path=path, row=i, field="format")
        question = _question_text(rec["question"])
        if question is None:
            raise ThaiEvalDataError("question must be a string or a {'content', 'role'} message", path=path, row=i, field="question")
        if official:
            if "answers" not in rec:
                raise ThaiEvalDataError(f"missing field 'answers'; fields found: {', '.join(rec)}", path=path, row=i, field="answers")
            pair = _answer_pair(rec["answers"])
            if isinstance(pair, str):
                raise ThaiEvalDataError(pair, path=path, row=i, field="answers")
        else:
            for name in ("chosen", "rejected"):
                if not isinstance(rec.get(name), str):
                    found = ", ".join(rec)
                    why = f"missing field {name!r}; fields found: {found}" if name not in rec else f"expected str, got {type(rec[name]).__name__}"
                    raise ThaiEvalDataError(why, path=path, row=i, field=name)
            pair = (rec["chosen"], rec["rejected"])
        rid = rec.get("id")
        if rid is None:  # flat files may lack ids: derive a stable 32-hex one
            rid = hashlib.md5(f"{fmt}\n{question}".encode()).hexdigest()
        if not isinstance(rid, (str, int)) or isinstance(rid, bool):
            raise ThaiEvalDataError(f"expected str or int, got {type(rid).__name__}", path=path, row=i, field="id")
        if str(rid) in seen:
            raise ThaiEvalDataError(f"duplicate id {rid!r} (also row {seen[str(rid)]})", path=path, row=i, field="id")
        seen[str(rid)] = i
        out.append({"id": str(rid), "format": fmt, "theme": rec["theme"], "question": question,
                    "chosen": pair[0], "rejected": pair[1]})
    return out


def load_thaicli(source: str | Path) -> pd.DataFrame:
    """Load ThaiCLI triplets: official ``cli/CLI_{factoid,instruction}.parquet`` or flat files.

    Args:
        source: the repository root, its ``cli/`` folder, or one file. Official rows have ``id``,
            ``question`` (a ``{"content", "role"}`` message or a string), ``answers`` (a list of
            ``{"content", "score": 1|0}``) and ``theme``; flat rows have ``question, chosen, rejected,
            theme`` (``id`` optional). The format comes from the file name or a ``format`` column.

    Returns:
        DataFrame with columns ``id, format, theme, question, chosen, rejected`` in file order
        (factoid file first); ``df.attrs["files"]`` lists the files read.

    Raises:
        ThaiEvalDataError: e.g. a row without exactly one chosen and one rejected answer (field ``answers``).
    """
    files = _thaicli_files(Path(source))
    rows = [r for path in files for r in _read_thaicli_file(path)]
    df = pd.DataFrame(rows, columns=_THAICLI_COLUMNS, dtype=object)
    df.attrs["files"] = files
    return df


# ---------------------------------------------------------------- Thai dialects (arXiv 2504.05898)

DIALECTS = ("center", "east", "north", "south")
_DIALECT_COLUMNS = ["dialect", "task", "id", "text_1", "text_2", "question", "context"]
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_]+$")


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
        if gold is not None and not isinstance(gold, str):
            raise ThaiEvalDataError(f"expected str or None, got {type(gold).__name__}", path=path, row=i, field="text_2")
        rows.append({"dialect": dialect, "task": task, "id": str(rid), "text_1": rec.get("text_1") if kind != "qa" else None,
                     "text_2": gold or "", "question": rec["question"] if kind == "qa" else None,
                     "context": rec["context"] if kind == "qa" else None})
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
    """
    source = Path(source)
    if not source.is_dir():
        raise ThaiEvalDataError("folder not found", path=source)
    wanted = list(dialects) if dialects is not None else [d for d in DIALECTS if (source / d).is_dir()]
    for d in wanted:
        if d not in DIALECTS:
            raise ValueError(f"unknown dialect {d!r}; expected one of {', '.join(DIALECTS)}")
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
        raise ThaiEvalDataError(f"no dialect task files found (expected <dialect>/<task>.jsonl, dialects {', '.join(DIALECTS)})", path=source)
    df = pd.DataFrame(rows, columns=_DIALECT_COLUMNS, dtype=object)
    df.attrs["files"] = files
    return df


def _task_records(obj: Any) -> list[dict[str, Any]]:
    if hasattr(obj, "to_list"):  # datasets.Dataset
        records = obj.to_list()
    elif isinstance(obj, Mapping):  # columns: {"text_1": [...], ...}
        cols = {k: list(v) for k, v in obj.items()}
        n = {len(v) for v in cols.values()}
        if len(n) > 1:
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
            "convert_dialect_pickle(..., allow_pickle=True) once and use the JSONL files it writes", path=path)
    if not path.is_file():
        raise ThaiEvalDataError("file not found", path=path)
    warnings.warn(f"unpickling {path}: this runs code stored in the file; do it only for a file you trust",
                  UserWarning, stacklevel=2)
    try:
        with open(path, "rb") as fh:
            obj = pickle.load(fh)  # noqa: S301 - explicitly allowed by the caller
    except ModuleNotFoundError as exc:
        raise ThaiEvalDataError(f"the pickle needs the {exc.name!r} package to be read (pip install it)", path=path) from None
    except Exception as exc:
        raise ThaiEvalDataError(f"cannot unpickle ({type(exc).__name__}: {exc})", path=path) from None
    if not hasattr(obj, "items"):
        raise ThaiEvalDataError(f"expected a dict of dialects, got {type(obj).__name__}", path=path)
    planned: list[tuple[Path, list[dict[str, Any]]]] = []
    for dialect, tasks in obj.items():
        if not (isinstance(dialect, str) and _SAFE_NAME.match(dialect)) or not hasattr(tasks, "items"):
            raise ThaiEvalDataError(f"expected dialect name -> dict of tasks, got {dialect!r} -> {type(tasks).__name__}", path=path, field=str(dialect))
        for task, data in tasks.items():
            if not (isinstance(task, str) and _SAFE_NAME.match(task)):
                raise ThaiEvalDataError(f"bad task name {task!r}", path=path, field=f"{dialect}/{task}")
            try:
                records = _task_records(data)
            except (TypeError, ValueError) as exc:
                raise ThaiEvalDataError(f"cannot read records: {exc}", path=path, field=f"{dialect}/{task}") from None
            planned.append((Path(out_dir) / dialect / f"{task}.jsonl", records))
    return [write_jsonl(target, records) for target, records in planned]
