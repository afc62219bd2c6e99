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
  match on the reply with its thinking cut. Stops: :func:`chat_stops`.
- ``generative-mc``: ``<task>.generative-mc`` (``th_arc (generative-mc)``) for ARC, HellaSwag, MMLU, TruthfulQA MC1
  and Winogrande: the question and lettered choices in one zero-shot user turn, the letter read from the reply after
  its thinking block (``tasks.generative_mc``), accuracy. Its budget is the protocol's ``max_new_tokens``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from functools import partial
from typing import Any, ClassVar

from thai_eval_utils.core.protocols import Model
from thai_eval_utils.h6 import prompts as P
from thai_eval_utils.h6 import tasks as T
from thai_eval_utils.h6.protocol import GSM8K_STOPS_H, GSM8K_STOPS_LB, VARIANTS, H6Protocol
from thai_eval_utils.tasks import generative_mc as MC
from thai_eval_utils.tasks.thinking import config_entry, option_of

GSM8K_CHAT, GENERATIVE_MC = VARIANTS
#: HellaSwag as a question: which ending continues the text.
HELLASWAG_QUESTION = "ข้อความใดต่อจากข้อความต่อไปนี้ได้เหมาะสมที่สุด\n\n{text}"
#: Winogrande as a question: which option fills the blank.
WINOGRANDE_QUESTION = "ตัวเลือกใดเติมในช่องว่าง (_) ของประโยคต่อไปนี้ได้ถูกต้อง\n\n{text}"


def chat_stops(protocol: H6Protocol) -> tuple[str, ...]:
    """GSM8K's stop strings in chat: the protocol's, except LB's completion stops (whose ``":"`` would cut a chat
    reply at its first colon), which become lm-eval 0.4.13's (``Question:``, ``</s>``, ``<|im_end|>``), the stops
    ``lm_eval --apply_chat_template`` sends with ``gsm8k``."""
    return GSM8K_STOPS_H if protocol.gsm8k_stops == GSM8K_STOPS_LB else protocol.gsm8k_stops


def _turns(messages: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"role": role, "content": content} for role, content in messages]


@dataclass(frozen=True, kw_only=True)
class ChatGenerationSpec(T.GenerationSpec):
    """GSM8K through the model's chat template, few-shot examples as turns (module docstring)."""

    chat: ClassVar[bool] = True
    variant: ClassVar[str | None] = GSM8K_CHAT
    base: str = "th_gsm8k"

    @property
    def data_task(self) -> str:
        return self.base

    @property
    def label(self) -> str:
        return f"{self.base} (chat)"

    def requests(self, doc, shots, templates) -> T.DocRequests:
        turns: list[tuple[str, str]] = []
        for ex in shots:
            turns += [("user", self.text(ex, templates)), ("assistant", self.target(ex))]
        query = self.text(doc, templates)
        return T.DocRequests(query, messages=(*turns, ("user", query)))

    def model_call(self, model: Model, protocol: H6Protocol) -> Callable[[list[Any]], list[Any]]:
        return partial(
            model.chat, max_new_tokens=protocol.max_new_tokens, stop=list(chat_stops(protocol)), temperature=0.0
        )

    def model_inputs(self, batch: Sequence[T.DocRequests]) -> list[Any]:
        return [_turns(r.messages) for r in batch]

    def config(self, protocol: H6Protocol) -> dict[str, Any]:
        return {
            **super().config(protocol),
            "gsm8k_stops": list(chat_stops(protocol)),
            "variant": GSM8K_CHAT,
            "format": "chat, few-shot as turns",
        }

    def _signature_extra(self, config: Mapping[str, Any]) -> str:
        return f"|variant:{GSM8K_CHAT}" + super()._signature_extra(config)


#: doc, templates -> the question; doc -> (choices, gold index).
Question = Callable[[Mapping[str, Any], Mapping[str, str]], str]
Options = Callable[[Mapping[str, Any]], tuple[list[str], int]]


@dataclass(frozen=True, kw_only=True)
class GenerativeChoiceTask(T.TaskSpec):
    """A choice task asked for a letter in a chat, zero-shot (module docstring; ``tasks.generative_mc``)."""

    uses_loglikelihood: ClassVar[bool] = False
    chat: ClassVar[bool] = True
    variant: ClassVar[str | None] = GENERATIVE_MC
    base: str
    question: Question
    options: Options
    order: str = "as in the data"

    @property
    def data_task(self) -> str:
        return self.base

    @property
    def label(self) -> str:
        return f"{self.base} ({GENERATIVE_MC})"

    def draw(self, docs, pool, k, protocol) -> list[list[int]]:
        if k:
            raise ValueError(f"{self.name} is zero-shot (one user turn per question); got num_fewshot={k}")
        return [[] for _ in docs]

    def requests(self, doc, shots, templates) -> T.DocRequests:
        choices, _ = self.options(doc)
        text = MC.prompt(self.question(doc, templates), choices, templates[GENERATIVE_MC])
        return T.DocRequests(text, messages=(("user", text),))

    def model_call(self, model: Model, protocol: H6Protocol) -> Callable[[list[Any]], list[Any]]:
        return partial(model.chat, max_new_tokens=protocol.max_new_tokens, temperature=0.0)

    def model_inputs(self, batch: Sequence[T.DocRequests]) -> list[Any]:
        return [_turns(r.messages) for r in batch]

    def score(self, doc, output, protocol) -> dict[str, Any]:
        """The letter read after the thinking block; accuracy against the gold choice."""
        choices, gold = self.options(doc)
        return MC.score(output["generation"], gold, len(choices), protocol.thinking)

    def config(self, protocol: H6Protocol) -> dict[str, Any]:
        return {
            **super().config(protocol),
            "variant": GENERATIVE_MC,
            "format": "chat, zero-shot, letter",
            "choice_order": self.order,
            "max_new_tokens": protocol.max_new_tokens,
            "decoding": "greedy",
            **config_entry(protocol.thinking),
        }

    def _signature_extra(self, config: Mapping[str, Any]) -> str:
        return (
            f"|variant:{GENERATIVE_MC}{super()._signature_extra(config)}|max_new:{config['max_new_tokens']}"
            f"|{option_of(config).signature()}"
        )


# --- each choice task's question and choices (the machinery is tasks.generative_mc's) --------------------------
def _question(doc: Mapping[str, Any], templates: Mapping[str, str]) -> str:
    return str(P.get(doc, "question")).strip()


def _hellaswag(doc: Mapping[str, Any], templates: Mapping[str, str]) -> str:
    return HELLASWAG_QUESTION.format(text=P.hellaswag_text(doc, templates))


def _winogrande(doc: Mapping[str, Any], templates: Mapping[str, str]) -> str:
    return WINOGRANDE_QUESTION.format(text=P.get(doc, "sentence"))


def _mc1(doc: Mapping[str, Any]) -> tuple[list[str], int]:
    """TruthfulQA's MC1 targets (the true one first in the data) in an order fixed by the question."""
    targets = P.get(doc, "mc1_targets")
    labels = list(P.get(targets, "labels"))
    if 1 not in labels:
        raise T.DocError("mc1_targets.labels has no true (1) target", "mc1_targets")
    return MC.shuffled(list(P.get(targets, "choices")), labels.index(1), str(P.get(doc, "question")))


_OPTIONS: dict[str, tuple[Question, Options]] = {
    "th_arc": (_question, lambda d: (P.arc_choices(d), P.arc_gold(d))),
    "th_hellaswag": (_hellaswag, lambda d: (P.hellaswag_choices(d), P.hellaswag_gold(d))),
    "th_mmlu": (_question, lambda d: (list(P.get(d, "choices")), P.mmlu_gold(d))),
    "th_truthfulqa": (_question, _mc1),
    "th_winogrande": (_winogrande, lambda d: ([P.get(d, "option1"), P.get(d, "option2")], P.winogrande_gold(d))),
}


def _generative(base: T.TaskSpec) -> GenerativeChoiceTask:
    question, options = _OPTIONS[base.name]
    return GenerativeChoiceTask(
        name=f"{base.name}.{GENERATIVE_MC}",
        data_name=base.data_name,
        num_fewshot=0,
        metrics=("acc",),
        text=question,
        templates={**base.templates, GENERATIVE_MC: MC.PROMPT},
        shots="none",
        by_subject=base.by_subject,
        base=base.name,
        question=question,
        options=options,
        order="shuffled by question (tasks.generative_mc.shuffled)"
        if base.name == "th_truthfulqa"
        else "as in the data",
    )


def _chat(base: T.TaskSpec) -> ChatGenerationSpec:
    shared = {f.name: getattr(base, f.name) for f in fields(base) if f.init}
    return ChatGenerationSpec(**{**shared, "name": f"{base.name}.chat"}, base=base.name)


#: variant -> paper task -> the task the variant runs in its place.
BY_VARIANT: dict[str, dict[str, T.TaskSpec]] = {
    GSM8K_CHAT: {"th_gsm8k": _chat(T.TASK_SPECS["th_gsm8k"])},
    GENERATIVE_MC: {name: _generative(T.TASK_SPECS[name]) for name in _OPTIONS},
}
#: Every variant task by name.
VARIANT_SPECS: dict[str, T.TaskSpec] = {s.name: s for by_task in BY_VARIANT.values() for s in by_task.values()}


def is_variant(name: str) -> bool:
    """Whether ``name`` is a variant task (never in the H6 average or the paper tables)."""
    return name in VARIANT_SPECS


def get_spec(name: str) -> T.TaskSpec:
    """The task named ``name``: a variant's, else the paper's (``tasks.get_task``: aliases too)."""
    return VARIANT_SPECS[name] if name in VARIANT_SPECS else T.get_task(name)


def spec_for(task: str, protocol: H6Protocol) -> T.TaskSpec:
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
