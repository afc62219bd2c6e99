"""Thai-H6 loaders (Kim et al., arXiv 2410.04795, section 3; repo UpstageAI/ThaiCLI_H6 ``h6/``): the six tasks
from the official layout or flat files, validated record by record as the leaderboard harness reads them.

Every bad input raises :class:`ThaiEvalDataError` naming file, row and field; everything is validated
before anything is returned. Thai text is returned exactly as stored (never Unicode-normalised).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.h6 import metrics as M
from thai_eval_utils.h6 import prompts as P
from thai_eval_utils.core.provenance import sha256_file
from thai_eval_utils.core.records import (
    SUPPORTED_SUFFIXES,
    find_data_file,
    read_records,
)

__all__ = ["H6_TASKS", "H6TaskData", "load_h6_task"]


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

_H6_FIELDS: dict[str, dict[str, Any]] = {
    "th_arc": {"question": str, "choices": dict, "answerKey": str},
    "th_hellaswag": {"activity_label": str, "ctx_a": str, "ctx_b": str, "endings": list, "label": (int, str)},
    "th_mmlu": {"question": str, "choices": list, "answer": (int, str)},
    "th_truthfulqa": {"question": str, "mc1_targets": dict, "mc2_targets": dict},
    "th_winogrande": {"sentence": str, "option1": str, "option2": str, "answer": (str, int)},
    "th_gsm8k": {"question": str, "answer": str},
}


def _str_list(value: Any, what: str, min_len: int = 1) -> str | None:
    """Why ``value`` is not a list of at least ``min_len`` strings, or None."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return f"{what} must be a list of strings, got {value!r:.80}"
    if len(value) < min_len:
        return f"{what} has {len(value)} item(s), expected at least {min_len}"
    return None


#: The gold index of each choice task by the functions the tasks score with (``h6.prompts``, the one implementation).
_GOLD = {
    "th_arc": P.arc_gold,
    "th_hellaswag": P.hellaswag_gold,
    "th_mmlu": P.mmlu_gold,
    "th_winogrande": P.winogrande_gold,
}


def _h6_gold(task: str, doc: Mapping[str, Any]) -> int:
    """The 0-based index of the correct choice of a Thai-H6 doc, as the task scores it; -1 where it names none."""
    try:
        return _GOLD[task](doc)
    except P.DocError:
        return -1


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
            return (
                "answerKey",
                f"answerKey {rec['answerKey']!r} does not pick one of the {len(ch['text'])} choices (labels {ch['label']})",
            )
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
            if (
                not isinstance(labels, list)
                or len(labels) != len(t["choices"])
                or any(isinstance(x, bool) or x not in (0, 1) for x in labels)
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
        if not M.GSM8K_ANSWER_RE.search(rec["answer"]):
            return "answer", "answer has no '#### <number>' final answer"
    return None


def _read_h6_file(task: str, path: Path) -> list[dict[str, Any]]:
    fields = _H6_FIELDS[task]  # the nested columns (lists, mappings) are JSON text in a CSV file
    records = read_records(path, fields, json_fields=tuple(f for f, kind in fields.items() if kind in (dict, list)))
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


def _files(directory: Path, prefix: str, scored: str, splits: tuple[str, ...], mmlu: bool) -> tuple[Path, Path | None]:
    """The scored split's file and the few-shot file (the first of ``splits`` found; None without few-shot splits)."""
    doc_path = find_data_file(directory, f"{prefix}_{scored}")
    if doc_path is None:
        tried = "{" + ",".join(s.lstrip(".") for s in SUPPORTED_SUFFIXES) + "}"
        raise ThaiEvalDataError(
            f"file not found (tried {prefix}_{scored}.{tried})", path=directory / f"{prefix}_{scored}"
        )
    found = {s: p for s in splits if (p := find_data_file(directory, f"{prefix}_{s}")) is not None}
    if mmlu and "dev" not in found and len(found) > 1:
        names = ", ".join(p.name for p in found.values())
        raise ThaiEvalDataError(f"ambiguous few-shot split ({names}); keep one", path=directory)
    if splits and not found:
        raise ThaiEvalDataError(f"few-shot file not found (tried {', '.join(splits)})", path=directory / prefix)
    return doc_path, next(iter(found.values()), None)


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
        doc_path, pool_path = _files(directory, folder, scored, fewshot_splits, False)
        docs = _read_h6_file(task, doc_path)
        pool = _read_h6_file(task, pool_path) if pool_path else []
        return H6TaskData(task, docs, pool, None, [doc_path, *([pool_path] if pool_path else [])], str(source))
    if not directory.is_dir():
        raise ThaiEvalDataError("folder not found (expected h6/th_mmlu/<subject>/ folders)", path=directory)
    subjects = sorted(p.name for p in directory.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not subjects:
        raise ThaiEvalDataError("no subject folders found", path=directory)
    docs, pool, by_subject, files = [], [], {}, []
    for subject in subjects:
        doc_path, pool_path = _files(directory / subject, f"th_mmlu_{subject}", scored, fewshot_splits, True)
        docs += [{**r, "subject": subject} for r in _read_h6_file(task, doc_path)]
        by_subject[subject] = [{**r, "subject": subject} for r in _read_h6_file(task, pool_path)]  # type: ignore[arg-type]
        pool += by_subject[subject]
        files += [doc_path, pool_path]
    return H6TaskData(task, docs, pool, by_subject, files, str(source))


_REPO = Path(__file__).resolve().parents[2]


def run_data_roots(card: Mapping[str, Any], roots: Sequence[str | Path] = ()) -> list[Path]:
    """Folders that may hold the Thai-H6 data a run card names: ``roots`` first, then the folder above each data
    path's ``h6/`` (as written, from the repository root, from ``notebooks/``), then the shipped samples."""
    found: list[Path] = [Path(r) for r in roots]
    for name in card.get("data_files") or {}:
        parts = Path(name).parts
        if "h6" in parts:
            root = Path(*parts[: parts.index("h6")]) if parts.index("h6") else Path(".")
            found += [root, _REPO / root, _REPO / "notebooks" / root]
    found.append(_REPO / "data" / "thai_h6")
    return list(dict.fromkeys(p for p in found if p.is_dir()))


def find_run_data(card: Mapping[str, Any], task: str, roots: Sequence[str | Path] = ()) -> H6TaskData | None:
    """The task's data whose files hash as the run card records (the data the run scored), from the first of
    :func:`run_data_roots` that holds it; None when no folder does. A card that records no files accepts the first
    loadable folder."""
    want = sorted(set((card.get("data_files") or {}).values()))
    for root in run_data_roots(card, roots):
        try:
            loaded = load_h6_task(root, task)
        except (ThaiEvalDataError, FileNotFoundError, ValueError):
            continue
        if not want or sorted(sha256_file(p) for p in loaded.files) == want:
            return loaded
    return None
