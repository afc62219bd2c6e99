"""The leaderboard's log-likelihood tasks declared as the package's declared tasks (:mod:`thai_eval_utils.tasks.
declared`): each one's prompt (the runner's ``to_prompt`` with its task type's template), its label choices and its
gold as functions of a row, and its metric objects, accuracy (the leaderboard's number) first, then the runner's
macro F1, a corpus-level metric over the predicted labels (spec thai_llm_leaderboard.md 2.1-2.6).

:mod:`.data` validates every row and builds the scored items with these functions; :mod:`.runner` runs the
declarations with ``tasks.runner.run_task`` in the leaderboard's stored run layout.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from thai_eval_utils.tasks.declared import MultipleChoiceTask
from thai_eval_utils.tasks.shaping import OfTableEntry
from thai_eval_utils.thai_llm_leaderboard.metrics import Accuracy, MacroF1
from thai_eval_utils.thai_llm_leaderboard.prompts import template, to_prompt
from thai_eval_utils.thai_llm_leaderboard.tasks import NLUTask

#: The version every declaration records (the runner whose behaviour they follow: scbdatax/seacrowd-eval).
VERSION = "seacrowd-eval-9de9392"


class Labels(OfTableEntry[NLUTask]):
    """The label strings scored for a row, in order: the task's labels, or the letters of a qa row's choices
    (``per_item_letters``)."""

    def __call__(self, doc: Mapping[str, Any]) -> list[str]:
        n = len(doc["choices"]) if self.task.schema == "qa" else len(self.task.labels)
        return list(self.task.labels_for(n))


class Prompt(OfTableEntry[NLUTask]):
    """The runner's prompt of a row: its task type's template filled by ``to_prompt``, ``[LABEL_CHOICE]`` left in
    place (each label is scored in it)."""

    def __call__(self, doc: Mapping[str, Any]) -> str:
        return to_prompt(doc, template(self.task.task_type), Labels(self.task)(doc), self.task.schema)


class Gold(OfTableEntry[NLUTask]):
    """The gold label's index: a qa row's ``choices.index(answer[0])`` (a list answer; None when it is empty or not
    among the choices: the runner drops the row) or ``choices.index(answer)``; a text/pairs row's ``label``."""

    def __call__(self, doc: Mapping[str, Any]) -> int | None:
        if self.task.schema != "qa":
            return doc["label"]
        choices, answer = doc["choices"], doc["answer"]
        if isinstance(answer, list):
            return choices.index(answer[0]) if answer and answer[0] in choices else None
        return choices.index(answer) if answer in choices else None


def declare(task: NLUTask) -> MultipleChoiceTask:
    """The declaration of one log-likelihood task: each label replaces ``[LABEL_CHOICE]`` in the prompt (no
    delimiter), accuracy and macro F1 over the predicted labels."""
    return MultipleChoiceTask(
        name=task.key,
        data=task.file,
        prompt=Prompt(task),
        choices=Labels(task),
        gold=Gold(task),
        target_delimiter="",
        metrics=(Accuracy(), MacroF1()),
        title=task.title,
        version=VERSION,
    )
