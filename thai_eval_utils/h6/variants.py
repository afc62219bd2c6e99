"""Labelled Thai-H6 variants for today's instruct and reasoning models (docs/protocol_notes.md, "Thai-H6 variants").

The paper's protocol was written for base models: GSM8K as a plain few-shot completion, the choice tasks scored by
the log-likelihood of each choice. Instruct and reasoning models are mis-scored by it (gpt-oss scores 0.30 on GSM8K
through ``/v1/completions`` and 0.90 through chat, vLLM PR 48253) or cannot run it at all (a chat API gives no
log-probabilities). Two variants, off by default (``H6Protocol.variants``), each under its own task name, label and
signature, **never in the H6 average, the leaderboard's Thai-H6 table or the paper tables**:

- ``gsm8k-chat``: ``th_gsm8k.chat`` (shown as ``th_gsm8k (chat)``): the few-shot examples as alternating user and
  assistant turns and the question as the last user turn, through the model's chat template, as lm-eval's
  ``--apply_chat_template --fewshot_as_multiturn`` builds them (``lm_eval/api/samplers.py`` ``get_chat_context``:
  user = the example's ``doc_to_text``, assistant = its target); GSM8K's strict ``#### N`` and flexible last-number
  match on the reply with its thinking cut. Stops: :meth:`~.tasks.H6Task.stops`.
- ``generative-mc``: ``<task>.generative-mc`` (``th_arc (generative-mc)``) for ARC, HellaSwag, MMLU, TruthfulQA MC1
  and Winogrande: the question and lettered choices in one zero-shot user turn, the letter read from the reply after
  its thinking block (``tasks.generative_mc``), accuracy. Its budget is the protocol's ``max_new_tokens``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from thai_eval_utils.h6 import declarations as D
from thai_eval_utils.h6 import prompts as P
from thai_eval_utils.h6 import tasks as T
from thai_eval_utils.h6.protocol import GSM8K_STOPS_H, VARIANTS, H6Protocol
from thai_eval_utils.tasks import generative_mc as MC
from thai_eval_utils.tasks.declared import GenerationTask, MultipleChoiceTask
from thai_eval_utils.tasks.metrics import ExactMatch

GSM8K_CHAT, GENERATIVE_MC = VARIANTS
#: HellaSwag as a question: which ending continues the text.
HELLASWAG_QUESTION = "ข้อความใดต่อจากข้อความต่อไปนี้ได้เหมาะสมที่สุด\n\n{text}"
#: Winogrande as a question: which option fills the blank.
WINOGRANDE_QUESTION = "ตัวเลือกใดเติมในช่องว่าง (_) ของประโยคต่อไปนี้ได้ถูกต้อง\n\n{text}"
#: doc, templates -> the question; doc -> (choices, gold index).
Question = Callable[[Mapping[str, Any], Mapping[str, str]], str]
Options = Callable[[Mapping[str, Any]], tuple[list[str], int]]


# --- each choice task's question and choices (the machinery is tasks.generative_mc's) --------------------------
def _question(doc: Mapping[str, Any], templates: Mapping[str, str]) -> str:
    return str(P.get(doc, "question")).strip()


def _hellaswag(doc: Mapping[str, Any], templates: Mapping[str, str]) -> str:
    return HELLASWAG_QUESTION.format(text=P.hellaswag_text(doc, templates))


def _winogrande(doc: Mapping[str, Any], templates: Mapping[str, str]) -> str:
    return WINOGRANDE_QUESTION.format(text=P.get(doc, "sentence"))


def _mc1(doc: Mapping[str, Any]) -> tuple[list[str], int]:
    """TruthfulQA's MC1 targets (the true one first in the data) in an order fixed by the question."""
    gold = D.truthfulqa_gold(doc)
    return MC.shuffled(list(P.get(doc["mc1_targets"], "choices")), gold, str(P.get(doc, "question")))


#: Each choice task's question; its choices and gold are its declaration's, except where listed in ``_OPTIONS``.
_QUESTIONS: dict[str, Question] = {
    "th_arc": _question,
    "th_hellaswag": _hellaswag,
    "th_mmlu": _question,
    "th_truthfulqa": _question,
    "th_winogrande": _winogrande,
}
#: MMLU's choice texts (its declaration scores the letters), TruthfulQA's MC1 targets shuffled.
_OPTIONS: dict[str, Options] = {"th_mmlu": lambda d: (list(P.get(d, "choices")), P.mmlu_gold(d)), "th_truthfulqa": _mc1}


# --- the variants declared: GenerationTasks over their paper task's data ----------------------------------------
#: GSM8K in chat: the paper task's declaration (data, few-shot draw, references, metrics) with lm-eval's chat stops.
TH_GSM8K_CHAT = replace(D.TH_GSM8K, name="th_gsm8k.chat", stop=GSM8K_STOPS_H, title="Thai GSM8K (chat)")


def generative_declaration(base: MultipleChoiceTask, question: Question, options: Options) -> GenerationTask:
    """A choice task asked for a letter: zero-shot, the user turn its question and lettered choices, the reference
    the gold's letter; the letter is read from the reply (``tasks.generative_mc.extract_letter``, which needs each
    item's number of choices) and scored as accuracy."""
    templates = T.TASK_SPECS[base.name].templates
    return GenerationTask(
        name=f"{base.name}.{GENERATIVE_MC}",
        data=base.data,
        prompt=lambda doc: MC.prompt(question(doc, templates), options(doc)[0]),
        reference=lambda doc: MC.LETTERS[options(doc)[1]],
        metrics=(ExactMatch(name="acc"),),
        seed=None,
        id_field=None,
        title=f"{base.title} ({GENERATIVE_MC})",
        version=D.VERSION,
    )


def _generative(name: str) -> T.H6Task:
    base, question = T.TASK_SPECS[name], _QUESTIONS[name]
    options = _OPTIONS.get(name) or (lambda d: (base.choices(d), base.gold(d)))
    return T.H6Task(
        declared=generative_declaration(base.declared, question, options),  # type: ignore[arg-type]
        text=question,
        templates={**base.templates, GENERATIVE_MC: MC.PROMPT},
        by_subject=base.by_subject,
        variant=GENERATIVE_MC,
        options=options,
        order="shuffled by question (tasks.generative_mc.shuffled)" if name == "th_truthfulqa" else "as in the data",
    )


#: variant -> paper task -> the task the variant runs in its place.
BY_VARIANT: dict[str, dict[str, T.H6Task]] = {
    GSM8K_CHAT: {"th_gsm8k": replace(T.TASK_SPECS["th_gsm8k"], declared=TH_GSM8K_CHAT, variant=GSM8K_CHAT)},
    GENERATIVE_MC: {name: _generative(name) for name in _QUESTIONS},
}
#: Every variant task by name.
VARIANT_SPECS: dict[str, T.H6Task] = {s.name: s for by_task in BY_VARIANT.values() for s in by_task.values()}


def is_variant(name: str) -> bool:
    """Whether ``name`` is a variant task (never in the H6 average or the paper tables)."""
    return name in VARIANT_SPECS


def get_spec(name: str) -> T.H6Task:
    """The task named ``name``: a variant's, else the paper's (``tasks.get_task``: aliases too)."""
    return VARIANT_SPECS[name] if name in VARIANT_SPECS else T.get_task(name)


def spec_for(task: str, protocol: H6Protocol) -> T.H6Task:
    """What runs for ``task`` under ``protocol``: the variant task of the first of ``protocol.variants`` that applies
    to it, else the task itself (a variant's own name runs that variant)."""
    spec = get_spec(task)
    for variant in protocol.variants:
        if spec.name in BY_VARIANT[variant]:
            return BY_VARIANT[variant][spec.name]
    return spec


def label(name: str) -> str:
    """A task's name in tables: ``th_gsm8k (chat)`` for a variant, the name itself otherwise."""
    return VARIANT_SPECS[name].label if name in VARIANT_SPECS else name
