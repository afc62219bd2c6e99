"""The leaderboard's six log-likelihood tasks, keyed by the runner's task keys, and the corrected variants of its two
label defects under their own names (spec thai_llm_leaderboard.md 1.1, 1.3, 6.5-6.6;
``evaluation/config/dataset_config.json``, ``evaluation/data_utils.py:125-132``).

A task says where its data is (HF repo, file, split), its SEACrowd schema, its template type, the label strings it
scores and which results folder the leaderboard files it in (``scripts/transform_result.py:22-26``: the exams go
to ``MC``, the rest to ``NLU``).
"""

from __future__ import annotations

import string
from dataclasses import dataclass, replace
from typing import Literal

from thai_eval_utils.thai_llm_leaderboard.prompts import runner_labels

Schema = Literal["text", "pairs", "qa"]

#: The HF dataset of every task but ThaiExam (``dataset_config.json``), and the upload the file names were read from.
LEADERBOARD_REPO = "kunato/thaillm-leaderboard-dataset"
LEADERBOARD_REVISION = "db8e506c26a48992568abdebcc871c58970663bd"
#: ThaiExam's HF dataset (``use_file: false``: the whole repo, one file ``thai_exam.jsonl``, split ``train``) and the
#: revision the runner pinned at ``53f1143`` (HEAD pins none; spec 1.1).
THAIEXAM_REPO = "kunato/thai-exam-seacrowd"
THAIEXAM_REVISION = "59198720623a81239dbbde1e77a98a183f002c41"


@dataclass(frozen=True)
class NLUTask:
    """One log-likelihood task.

    ``labels``: the scored label strings in order; empty when they depend on the item (``per_item_letters``: the
    letters a, b, ... of the item's choices). ``base``: the runner task key whose data and template it uses (the
    task's own key for the runner's tasks). ``variant``: ``"runner"`` (as the runner scores) or ``"corrected"``.
    """

    key: str
    schema: Schema
    task_type: str
    folder: Literal["NLU", "MC"]
    repo: str
    file: str
    split: str
    revision: str
    labels: tuple[str, ...]
    title: str
    base: str = ""
    variant: Literal["runner", "corrected"] = "runner"
    per_item_letters: bool = False
    note: str = ""

    def labels_for(self, n_choices: int) -> tuple[str, ...]:
        """The label strings scored for an item with ``n_choices`` choices."""
        return tuple(string.ascii_lowercase[:n_choices]) if self.per_item_letters else self.labels

    def label_note(self) -> str:
        """The label set in a score's signature (``labels:a,b,c,d`` or ``labels:letters-per-item``)."""
        return "labels:letters-per-item" if self.per_item_letters else "labels:" + ",".join(self.labels)


def _leaderboard(
    key: str, schema: Schema, task_type: str, folder: Literal["NLU", "MC"], title: str, split: str = "test"
) -> NLUTask:
    where = (LEADERBOARD_REPO, f"{key}_{split}.jsonl", split, LEADERBOARD_REVISION)  # repo, file, split, revision
    return NLUTask(key, schema, task_type, folder, *where, runner_labels(key), title)


_XNLI = "xnli.tha_seacrowd_pairs"
_M3EXAM = "m3exam_tha_seacrowd_qa"

#: The runner's six NLU tasks in ``NLU_TASK_LIST`` order (``evaluation/data_utils.py:125-132``).
RUNNER_TASKS: tuple[NLUTask, ...] = (
    _leaderboard("wisesight_thai_sentiment_seacrowd_text", "text", "SA", "NLU", "Wisesight sentiment"),
    _leaderboard(_M3EXAM, "qa", "QA", "MC", "M3Exam (Thai)"),
    _leaderboard("xcopa_tha_seacrowd_qa", "qa", "CR", "NLU", "XCOPA (Thai)"),
    _leaderboard("belebele_tha_thai_seacrowd_qa", "qa", "QA", "NLU", "Belebele (tha_Thai)"),
    _leaderboard(_XNLI, "pairs", "TE", "NLU", "XNLI (Thai)"),
    replace(
        _leaderboard("thaiexam_qa", "qa", "QA", "MC", "ThaiExam", split="train"),
        repo=THAIEXAM_REPO,
        file="thai_exam.jsonl",
        revision=THAIEXAM_REVISION,
    ),
)
_BY_KEY = {t.key: t for t in RUNNER_TASKS}

#: The corrected variants (spec 6.5, 6.6): XNLI scored with its own label names, M3Exam scoring ``e`` on items with
#: five options. Not leaderboard numbers: their own task names, never exported under the runner's keys.
CORRECTED_TASKS: tuple[NLUTask, ...] = (
    replace(
        _BY_KEY[_XNLI],
        key=f"{_XNLI}.corrected",
        labels=("contradiction", "entailment", "neutral"),
        title="XNLI (Thai), label names corrected",
        base=_XNLI,
        variant="corrected",
        note="gold 1 (entailment) scored as 'entailment' and gold 2 (neutral) as 'neutral', where the runner "
        "scores 'neutral' and 'irrelevant'",
    ),
    replace(
        _BY_KEY[_M3EXAM],
        key=f"{_M3EXAM}.corrected",
        labels=(),
        title="M3Exam (Thai), option e scored",
        base=_M3EXAM,
        variant="corrected",
        per_item_letters=True,
        note="each item scores the letters of its own options (a-e on 5-option items); "
        "the runner scores a-d only, so a gold e is always wrong",
    ),
)

#: Every log-likelihood task by name, in display order: the runner's six, then the corrected variants.
NLU_TASKS: dict[str, NLUTask] = {t.key: t for t in (*RUNNER_TASKS, *CORRECTED_TASKS)}


def nlu_task(name: str) -> NLUTask:
    """The task named ``name``; a ``KeyError`` listing the known ones."""
    try:
        return NLU_TASKS[name]
    except KeyError:
        raise KeyError(f"unknown Thai LLM Leaderboard NLU task {name!r}; choose from {', '.join(NLU_TASKS)}") from None
