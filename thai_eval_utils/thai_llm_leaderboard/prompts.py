"""The runner's Thai prompt templates and label names, and its ``to_prompt`` (spec thai_llm_leaderboard.md 2.1-2.2,
1.3; scbdatax/seacrowd-eval @9de9392 ``evaluation/main_nlu_prompt_batch.py:20-55``, ``evaluation/prompt_utils.py``).

The template and label strings are package data (``prompts/runner_prompts.json``), copied byte for byte from the
runner's ``TASK_TO_PROMPT['tha']`` and ``LABEL_LANG_MAP[task]['eng']`` (``get_label_mapping`` falls back to
``eng``: there are no ``tha`` entries, ``evaluation/prompt_utils.py:1059-1063``).
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

#: The placeholder the scorer replaces by each label (``evaluation/model_utils.py:398``).
LABEL_CHOICE = "[LABEL_CHOICE]"
#: The package data file of the runner's strings.
PROMPTS_FILE = "runner_prompts.json"


@cache
def runner_prompts() -> dict[str, Any]:
    """The package data: ``templates`` (task type -> text and source line), ``label_mappings`` (task key -> the
    mapping's (key, label) pairs in dict order, and its line), ``lang_names`` and ``source``."""
    text = resources.files("thai_eval_utils.thai_llm_leaderboard").joinpath("prompts", PROMPTS_FILE).read_text("utf-8")
    return json.loads(text)


def template(task_type: str) -> str:
    """The runner's one Thai template of a task type (``SA``, ``TE``, ``QA``, ``CR``; ``MT``, ``SUM`` for NLG)."""
    return runner_prompts()["templates"][task_type]["text"]


def runner_labels(task_key: str) -> tuple[str, ...]:
    """The scored label strings of a runner task key, in order: the label mapping's values in dict order
    (``evaluation/main_nlu_prompt_batch.py:156-157``)."""
    return tuple(label for _, label in runner_prompts()["label_mappings"][task_key]["mapping"])


def _options(labels: Sequence[str]) -> str:
    """``[OPTIONS]``: the labels joined by ``", "`` when more than 2, else by ``" "`` (``:30-35``)."""
    return ", ".join(labels) if len(labels) > 2 else " ".join(labels)


def answer_choices(choices: Sequence[str]) -> str:
    """``[ANSWER_CHOICES]``: ``"a. <choice>"`` lines, letters a, b, c, ..., each choice stripped (``:46-51``)."""
    return "\n".join(f"{string.ascii_lowercase[i]}. {c.strip()}" for i, c in enumerate(choices))


def to_prompt(row: Mapping[str, Any], prompt: str, labels: Sequence[str], schema: str) -> str:
    """The runner's ``to_prompt``: the template filled from one row, ``[LABEL_CHOICE]`` left in place.

    text/pairs: ``[INPUT]`` <- ``text.strip()`` when the row has ``text``, else ``[INPUT_A]`` <- ``text_1.strip()``
    and ``[INPUT_B]`` <- ``text_2.strip()``; ``[OPTIONS]`` <- the labels. qa: ``[CONTEXT]`` <- ``context.strip()``
    (``""`` when missing or null), ``[QUESTION]`` <- ``question.strip()``, ``[ANSWER_CHOICES]`` <- the lettered
    choices. Plain ``str.replace``, no escaping.
    """
    if schema in ("text", "pairs"):
        if "text" in row:
            prompt = prompt.replace("[INPUT]", row["text"].strip())
        else:
            prompt = prompt.replace("[INPUT_A]", row["text_1"].strip())
            prompt = prompt.replace("[INPUT_B]", row["text_2"].strip())
        if "[OPTIONS]" in prompt:
            prompt = prompt.replace("[OPTIONS]", _options([f"{label}" for label in labels]))
    elif schema == "qa":
        if "[CONTEXT]" in prompt:
            context = row.get("context")
            prompt = prompt.replace("[CONTEXT]", "" if context is None else context.strip())
        prompt = prompt.replace("[QUESTION]", row["question"].strip())
        prompt = prompt.replace("[ANSWER_CHOICES]", answer_choices(row["choices"]))
    else:
        raise ValueError("Only support `text`, `pairs`, and `qa` schemas.")
    return prompt


def with_label(prompt: str, label: str) -> str:
    """One scored sequence: ``prompt.replace("[LABEL_CHOICE]", label)`` (``evaluation/model_utils.py:398``)."""
    return prompt.replace(LABEL_CHOICE, label)
