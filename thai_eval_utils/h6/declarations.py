"""The six Thai-H6 tasks declared as the package's declared tasks (:mod:`thai_eval_utils.tasks.declared`): each
one's query text, choices, gold and per-document requests as functions of a document, its few-shot split and
sampler, and its metric objects (headline first), as the Open LLM Leaderboard's harness ran them (Kim et al. 2024,
section 3; LB ``lm_eval/tasks/{arc,hellaswag,hendrycks_test,truthfulqa,winogrande,gsm8k}.py``). ``data`` names the
official release's folder (:func:`~thai_eval_utils.h6.data.load_h6_task`); what the protocol sets per run is applied
by :mod:`.tasks`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from thai_eval_utils.h6 import metrics as M
from thai_eval_utils.h6 import prompts as P
from thai_eval_utils.h6.fewshot import LeaderboardSample
from thai_eval_utils.h6.protocol import GSM8K_MAX_NEW_TOKENS, GSM8K_STOPS_LB
from thai_eval_utils.tasks.declared import FewShot, GenerationTask, MultipleChoiceTask
from thai_eval_utils.tasks.metrics import ACC, ACC_NORM, LoglikelihoodAccuracy
from thai_eval_utils.tasks.shaping import FirstN

#: Each task's templates (every one can be overridden per run: ``H6Protocol.templates``).
QA_TEMPLATES = {"query": P.QUESTION_ANSWER_TEMPLATE}
HELLASWAG_TEMPLATES = {"query": P.HELLASWAG_TEMPLATE}
MMLU_TEMPLATES = {"description": P.MMLU_DESCRIPTION, "query": P.MMLU_TEMPLATE, "option": P.MMLU_OPTION_TEMPLATE}
TRUTHFULQA_TEMPLATES = {"preamble": P.TRUTHFULQA_QA_PROMPT, "query": P.TRUTHFULQA_TEMPLATE}
#: Thai-H6's diagnostic: accuracy per UTF-8 byte of the choice.
ACC_BYTES = LoglikelihoodAccuracy("byte")
#: The version every declaration records (the harness whose behaviour they follow).
VERSION = "lb-b281b09"


# --- each task's functions of one document (with the default templates) ----------------------------------------
def arc_prompt(doc: Mapping[str, Any]) -> str:
    """``Question: {question}\\nAnswer:`` (ARC and GSM8K)."""
    return P.question_text(doc, QA_TEMPLATES)


def hellaswag_prompt(doc: Mapping[str, Any]) -> str:
    return P.hellaswag_text(doc, HELLASWAG_TEMPLATES)


def mmlu_prompt(doc: Mapping[str, Any]) -> str:
    """The question and its lettered options (the subject line goes before the few-shot block)."""
    return P.mmlu_text(doc, MMLU_TEMPLATES)


def truthfulqa_prompt(doc: Mapping[str, Any]) -> str:
    """The fixed six-pair QA preamble, then ``Q: {question}\\nA:``."""
    return P.truthfulqa_text(doc, TRUTHFULQA_TEMPLATES)


def truthfulqa_choices(doc: Mapping[str, Any]) -> list[str]:
    """The MC1 targets, then the MC2 targets: every text scored (mc1 reads the first, mc2 the rest)."""
    return [*P.get(P.get(doc, "mc1_targets"), "choices"), *P.get(P.get(doc, "mc2_targets"), "choices")]


def truthfulqa_gold(doc: Mapping[str, Any]) -> int:
    """MC1's true target, as ``mc1_targets.labels`` marks it."""
    labels = list(P.get(P.get(doc, "mc1_targets"), "labels"))
    if 1 not in labels:
        raise P.DocError("mc1_targets.labels has no true (1) target", "mc1_targets")
    return labels.index(1)


def winogrande_options(doc: Mapping[str, Any]) -> list[str]:
    return [P.get(doc, "option1"), P.get(doc, "option2")]


def winogrande_requests(doc: Mapping[str, Any], context: str) -> list[tuple[str, str]]:
    """LB ``append_context``: the prompt split on ``"\\n\\n"``, the query (filled with the correct option) dropped and
    each option's partial context put in its place; the rest of the sentence is the continuation."""
    prefix = context.split(P.FEWSHOT_DELIMITER)[:-1]
    target = P.TARGET_DELIMITER + P.winogrande_target(doc)
    return [
        (P.FEWSHOT_DELIMITER.join([*prefix, P.winogrande_context(doc, o)]), target) for o in winogrande_options(doc)
    ]


def gsm8k_reference(doc: Mapping[str, Any]) -> str:
    """The reference solution, ending ``#### N``."""
    return str(P.get(doc, "answer"))


# --- the declarations ------------------------------------------------------------------------------------------
TH_ARC = MultipleChoiceTask(
    name="th_arc",
    data="th_arc_challenge",
    prompt=arc_prompt,
    choices=P.arc_choices,
    gold=P.arc_gold,
    fewshot=FewShot("th_arc_challenge", 25, sampler=LeaderboardSample()),
    metrics=(ACC_NORM, ACC, ACC_BYTES),
    id_field=None,
    title="Thai ARC (challenge)",
    version=VERSION,
)
TH_HELLASWAG = MultipleChoiceTask(
    name="th_hellaswag",
    data="th_hellaswag",
    prompt=hellaswag_prompt,
    choices=P.hellaswag_choices,
    gold=P.hellaswag_gold,
    fewshot=FewShot("th_hellaswag", 10, sampler=LeaderboardSample()),
    metrics=(ACC_NORM, ACC, ACC_BYTES),
    id_field=None,
    title="Thai HellaSwag",
    version=VERSION,
)
TH_MMLU = MultipleChoiceTask(
    name="th_mmlu",
    data="th_mmlu",
    prompt=mmlu_prompt,
    choices=P.mmlu_choices,
    gold=P.mmlu_gold,
    fewshot=FewShot("th_mmlu", 5, sampler=FirstN()),  # per subject: the first 5 of its dev split
    metrics=(ACC, ACC_NORM, ACC_BYTES),
    id_field=None,
    title="Thai MMLU",
    version=VERSION,
)
TH_TRUTHFULQA = MultipleChoiceTask(
    name="th_truthfulqa",
    data="th_truthfulqa",
    prompt=truthfulqa_prompt,
    choices=truthfulqa_choices,
    gold=truthfulqa_gold,
    metrics=(M.MC2("lb", "mc2"), M.MC1(), M.MC2("lb", "mc2_lb"), M.MC2("mask", "mc2_mask")),
    id_field=None,
    title="Thai TruthfulQA (MC)",
    version=VERSION,
)
TH_WINOGRANDE = MultipleChoiceTask(
    name="th_winogrande",
    data="th_winogrande",
    prompt=P.winogrande_prompt,
    choices=winogrande_options,
    gold=P.winogrande_gold,
    requests=winogrande_requests,
    fewshot=FewShot("th_winogrande", 5, sampler=LeaderboardSample()),
    metrics=(ACC,),
    id_field=None,
    title="Thai Winogrande",
    version=VERSION,
)
TH_GSM8K = GenerationTask(
    name="th_gsm8k",
    data="th_gsm8k",
    prompt=arc_prompt,
    reference=gsm8k_reference,
    metrics=(M.GSM8KMatch("strict", "exact_match"), M.GSM8KMatch("flexible", "flexible_match")),
    max_new_tokens=GSM8K_MAX_NEW_TOKENS,
    stop=GSM8K_STOPS_LB,
    temperature=0.0,
    seed=None,
    fewshot=FewShot("th_gsm8k", 5, sampler=LeaderboardSample()),
    id_field=None,
    title="Thai GSM8K",
    version=VERSION,
)
