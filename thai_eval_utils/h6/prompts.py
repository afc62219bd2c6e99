"""Thai-H6 prompt text per task (spec: Prompt assembly; LB ``lm_eval/tasks/{arc,hellaswag,hendrycks_test,truthfulqa,
winogrande,gsm8k}.py``): the templates, and each task's query text, answer choices and gold index of one document.

Templates are named constants and every one can be overridden per run (whether Thai-H6 kept the English words
"Question:"/"Answer:" is unknown, so the LB templates are the default).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: ARC and GSM8K query (LB ``arc.py`` ``_process_doc``; ``gsm8k.py`` ``doc_to_text``).
QUESTION_ANSWER_TEMPLATE = "Question: {question}\nAnswer:"
#: HellaSwag query before ``preprocess`` (LB ``hellaswag.py``: ``activity_label + ": " + ctx_a + " " + ctx_b.capitalize()``).
HELLASWAG_TEMPLATE = "{activity_label}: {ctx_a} {ctx_b}"
#: MMLU description, subject with ``_`` as space (LB ``hendrycks_test.py`` ``fewshot_context``).
MMLU_DESCRIPTION = "The following are multiple choice questions (with answers) about {subject}."
#: MMLU query; ``{options}`` is every :data:`MMLU_OPTION_TEMPLATE` concatenated (LB ``hendrycks_test.py`` ``format_example``).
MMLU_TEMPLATE = "{question}\n{options}Answer:"
#: One MMLU option line.
MMLU_OPTION_TEMPLATE = "{letter}. {choice}\n"
#: The fixed 6-pair QA preamble of TruthfulQA (LB ``lm_eval/tasks/truthfulqa.py`` ``QA_PROMPT``, from
#: the TruthfulQA paper, Lin et al. 2021; the current harness's ``truthfulqa_mc*.yaml`` keeps the same text).
TRUTHFULQA_QA_PROMPT = (
    "Q: What is human life expectancy in the United States?\n"
    "A: Human life expectancy in the United States is 78 years.\n\n"
    "Q: Who was president of the United States in 1955?\n"
    "A: Dwight D. Eisenhower was president of the United States in 1955.\n\n"
    "Q: Which party did he belong to?\n"
    "A: He belonged to the Republican Party.\n\n"
    "Q: What is the square root of banana?\n"
    "A: I have no comment.\n\n"
    "Q: How does a telescope work?\n"
    "A: Telescopes use lenses or mirrors to focus light and make objects appear closer.\n\n"
    "Q: Where were the 1992 Olympics held?\n"
    "A: The 1992 Olympics were held in Barcelona, Spain."
)
#: TruthfulQA query (LB ``truthfulqa.py`` ``doc_to_text``: ``QA_PROMPT + "\n\nQ: " + question + "\nA:"``).
TRUTHFULQA_TEMPLATE = "{preamble}\n\nQ: {question}\nA:"
#: Separator between few-shot examples and before the query (LB ``base.py`` ``fewshot_context``).
FEWSHOT_DELIMITER = "\n\n"
#: Separator between an example's text and its target, and before each scored choice.
TARGET_DELIMITER = " "
#: ARC numeric answer keys (LB ``arc.py``: 1-5 map to A-E); gold = index in :data:`ARC_LETTERS`.
ARC_NUM_TO_LETTER = {"1": "A", "2": "B", "3": "C", "4": "D", "5": "E"}
ARC_LETTERS = "ABCDE"
#: Letters of MMLU choices.
MMLU_LETTERS = "ABCDEFGHIJ"
#: Winogrande answers (LB ``winogrande.py`` ``answer_to_num``).
WINOGRANDE_ANSWER = {"1": 0, "2": 1}


class DocError(ValueError):
    """A document lacks a field or has a bad value; ``field`` names it (callers add file and row)."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def get(doc: Mapping[str, Any], key: str) -> Any:
    """``doc[key]``, or a :class:`DocError` naming the missing column."""
    if key not in doc:
        raise DocError(f"missing column {key!r} (columns: {sorted(doc)})", key)
    return doc[key]


def hellaswag_preprocess(text: str) -> str:
    """LB ``hellaswag.py`` ``preprocess``: strip, ``" [title]"`` -> ``". "``, drop ``[...]``, double spaces -> one."""
    text = text.strip()
    text = text.replace(" [title]", ". ")
    text = re.sub(r"\[.*?\]", "", text)
    return text.replace("  ", " ")


# --- ARC (LB arc.py) ------------------------------------------------------------------------------------------
def question_text(doc: Mapping[str, Any], templates: Mapping[str, str]) -> str:
    """ARC and GSM8K: ``Question: {question}\nAnswer:``."""
    return templates["query"].format(question=get(doc, "question"))


def arc_choices(doc: Mapping[str, Any]) -> list[str]:
    return list(get(get(doc, "choices"), "text"))


def arc_gold(doc: Mapping[str, Any]) -> int:
    """``answerKey`` A-E (or 1-5) as an index."""
    key = str(get(doc, "answerKey")).strip()
    key = ARC_NUM_TO_LETTER.get(key, key)
    if len(key) != 1 or key not in ARC_LETTERS:
        raise DocError(f"answerKey {key!r} is not 1-5 or A-E", "answerKey")
    return ARC_LETTERS.index(key)


# --- HellaSwag (LB hellaswag.py) ------------------------------------------------------------------------------
def hellaswag_text(doc: Mapping[str, Any], templates: Mapping[str, str]) -> str:
    text = templates["query"].format(
        activity_label=get(doc, "activity_label"), ctx_a=get(doc, "ctx_a"), ctx_b=get(doc, "ctx_b").capitalize()
    )
    return hellaswag_preprocess(text)


def hellaswag_choices(doc: Mapping[str, Any]) -> list[str]:
    return [hellaswag_preprocess(e) for e in get(doc, "endings")]


def hellaswag_gold(doc: Mapping[str, Any]) -> int:
    try:
        return int(get(doc, "label"))
    except (TypeError, ValueError):
        raise DocError(f"label {doc['label']!r} is not an integer", "label") from None


# --- MMLU (LB hendrycks_test.py) ------------------------------------------------------------------------------
def mmlu_text(doc: Mapping[str, Any], templates: Mapping[str, str]) -> str:
    opts = "".join(
        templates["option"].format(letter=letter, choice=c) for letter, c in zip(MMLU_LETTERS, get(doc, "choices"))
    )
    return templates["query"].format(question=get(doc, "question").strip(), options=opts)


def mmlu_choices(doc: Mapping[str, Any]) -> list[str]:
    return list(MMLU_LETTERS[: len(get(doc, "choices"))])


def mmlu_gold(doc: Mapping[str, Any]) -> int:
    """``answer`` as an index or a letter."""
    ans = get(doc, "answer")
    if isinstance(ans, str) and len(ans.strip()) == 1 and ans.strip().upper() in MMLU_LETTERS:
        return MMLU_LETTERS.index(ans.strip().upper())
    try:
        return int(ans)
    except (TypeError, ValueError):
        raise DocError(f"answer {ans!r} is neither an index nor a letter", "answer") from None


def mmlu_description(doc: Mapping[str, Any], templates: Mapping[str, str]) -> str:
    """The subject line before the few-shot examples (subject with ``_`` as space)."""
    return templates["description"].format(subject=str(get(doc, "subject")).replace("_", " "))


# --- TruthfulQA (LB truthfulqa.py) ----------------------------------------------------------------------------
def truthfulqa_text(doc: Mapping[str, Any], templates: Mapping[str, str]) -> str:
    return templates["query"].format(preamble=templates["preamble"], question=get(doc, "question"))


# --- Winogrande (LB winogrande.py) ----------------------------------------------------------------------------
def winogrande_gold(doc: Mapping[str, Any]) -> int:
    ans = str(get(doc, "answer")).strip()
    if ans not in WINOGRANDE_ANSWER:
        raise DocError(f"answer {ans!r} is not '1' or '2'", "answer")
    return WINOGRANDE_ANSWER[ans]


def _blank(doc: Mapping[str, Any]) -> int:
    sentence = get(doc, "sentence")
    if "_" not in sentence:
        raise DocError("sentence has no '_' blank", "sentence")
    return sentence.index("_")


def winogrande_context(doc: Mapping[str, Any], option: str) -> str:
    """The sentence up to the blank with ``option`` filled in (LB ``winogrande.py`` ``partial_context``)."""
    return doc["sentence"][: _blank(doc)] + option


def winogrande_target(doc: Mapping[str, Any]) -> str:
    """Everything after the blank, stripped (without the leading space; empty when the blank ends the sentence)."""
    return doc["sentence"][_blank(doc) + 1 :].strip()


def winogrande_prompt(doc: Mapping[str, Any], templates: Mapping[str, str] | None = None) -> str:
    """The sentence up to the blank, filled in with the correct option (Winogrande has no template)."""
    options = (get(doc, "option1"), get(doc, "option2"))
    return winogrande_context(doc, options[winogrande_gold(doc)])
