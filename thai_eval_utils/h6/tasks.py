"""The six Thai-H6 tasks: templates, few-shot prompt assembly and per-document requests and metrics
(spec: Tasks, shots, metrics; Prompt assembly; LB ``lm_eval/tasks/{arc,hellaswag,hendrycks_test,truthfulqa,
winogrande,gsm8k}.py``).

A task turns one document (official columns) plus its few-shot examples into :class:`DocRequests`:
``(context, continuation)`` log-likelihood pairs, or a prompt to generate from (GSM8K). Templates are
named constants and every one can be overridden per run (whether Thai-H6 kept the English words
"Question:"/"Answer:" is unknown, so the LB templates are the default).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from thai_eval_utils import __version__
from thai_eval_utils.h6 import metrics as M

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


@dataclass(frozen=True)
class TaskSpec:
    """A Thai-H6 task: default shots, where its shots come from and its headline metric."""

    name: str  # th_arc ... (the paper's Table 4 column)
    data_name: str  # folder of the official release, e.g. th_arc_challenge
    kind: str  # "choice", "truthfulqa", "winogrande" or "generate"
    num_fewshot: int
    fewshot: str  # "sampled" (sampler decides), "first_n" (MMLU, per subject) or "none"
    headline: str  # metric of the Thai-H6 average
    templates: Mapping[str, str] = field(default_factory=dict)


TASK_SPECS: dict[str, TaskSpec] = {
    s.name: s
    for s in (
        TaskSpec("th_arc", "th_arc_challenge", "choice", 25, "sampled", "acc_norm", {"query": QUESTION_ANSWER_TEMPLATE}),
        TaskSpec("th_hellaswag", "th_hellaswag", "choice", 10, "sampled", "acc_norm", {"query": HELLASWAG_TEMPLATE}),
        TaskSpec(
            "th_mmlu", "th_mmlu", "choice", 5, "first_n", "acc",
            {"description": MMLU_DESCRIPTION, "query": MMLU_TEMPLATE, "option": MMLU_OPTION_TEMPLATE},
        ),
        TaskSpec(
            "th_truthfulqa", "th_truthfulqa", "truthfulqa", 0, "none", "mc2",
            {"preamble": TRUTHFULQA_QA_PROMPT, "query": TRUTHFULQA_TEMPLATE},
        ),
        TaskSpec("th_winogrande", "th_winogrande", "winogrande", 5, "sampled", "acc", {}),
        TaskSpec("th_gsm8k", "th_gsm8k", "generate", 5, "sampled", "exact_match", {"query": QUESTION_ANSWER_TEMPLATE}),
    )
}
#: The six tasks in the paper's Table 4 order.
TASKS = tuple(TASK_SPECS)
_ALIASES = {"th_arc_challenge": "th_arc", "arc": "th_arc", "arc_challenge": "th_arc", "hellaswag": "th_hellaswag",
            "mmlu": "th_mmlu", "truthfulqa": "th_truthfulqa", "winogrande": "th_winogrande", "gsm8k": "th_gsm8k"}


def get_task(name: str) -> TaskSpec:
    """The task named ``name`` (``th_arc`` ..., also ``th_arc_challenge``, ``arc``, ``gsm8k`` ...)."""
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in TASK_SPECS:
        raise ValueError(f"unknown Thai-H6 task {name!r}; expected one of {TASKS}")
    return TASK_SPECS[key]


def templates_for(spec: TaskSpec, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The task's templates with ``overrides`` applied (unknown names are an error)."""
    out = dict(spec.templates)
    for key, value in (overrides or {}).items():
        if key not in out:
            raise ValueError(f"{spec.name} has no template {key!r}; it has {sorted(out)}")
        out[key] = value
    return out


class DocError(ValueError):
    """A document lacks a field or has a bad value; ``field`` names it (callers add file and row)."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def _get(doc: Mapping[str, Any], key: str) -> Any:
    if key not in doc:
        raise DocError(f"missing column {key!r} (columns: {sorted(doc)})", key)
    return doc[key]


# ---------------------------------------------------------------------------------------------
# Per-task text, target, choices and gold


def hellaswag_preprocess(text: str) -> str:
    """LB ``hellaswag.py`` ``preprocess``: strip, ``" [title]"`` -> ``". "``, drop ``[...]``, double spaces -> one."""
    text = text.strip()
    text = text.replace(" [title]", ". ")
    text = re.sub(r"\[.*?\]", "", text)
    return text.replace("  ", " ")


def choices(spec: TaskSpec, doc: Mapping[str, Any]) -> list[str]:
    """Answer choices of a multiple-choice task (without the leading space)."""
    if spec.name == "th_arc":
        return list(_get(_get(doc, "choices"), "text"))
    if spec.name == "th_hellaswag":
        return [hellaswag_preprocess(e) for e in _get(doc, "endings")]
    if spec.name == "th_mmlu":
        return list(MMLU_LETTERS[: len(_get(doc, "choices"))])
    raise ValueError(f"{spec.name} is not a multiple-choice task")


def gold(spec: TaskSpec, doc: Mapping[str, Any]) -> int:
    """Index of the correct choice (ARC, HellaSwag, MMLU, Winogrande)."""
    if spec.name == "th_arc":
        key = str(_get(doc, "answerKey")).strip()
        key = ARC_NUM_TO_LETTER.get(key, key)
        if len(key) != 1 or key not in ARC_LETTERS:
            raise DocError(f"answerKey {key!r} is not 1-5 or A-E", "answerKey")
        return ARC_LETTERS.index(key)
    if spec.name == "th_hellaswag":
        try:
            return int(_get(doc, "label"))
        except (TypeError, ValueError):
            raise DocError(f"label {doc['label']!r} is not an integer", "label") from None
    if spec.name == "th_mmlu":
        ans = _get(doc, "answer")
        if isinstance(ans, str) and len(ans.strip()) == 1 and ans.strip().upper() in MMLU_LETTERS:
            return MMLU_LETTERS.index(ans.strip().upper())
        try:
            return int(ans)
        except (TypeError, ValueError):
            raise DocError(f"answer {ans!r} is neither an index nor a letter", "answer") from None
    if spec.name == "th_winogrande":
        ans = str(_get(doc, "answer")).strip()
        if ans not in WINOGRANDE_ANSWER:
            raise DocError(f"answer {ans!r} is not '1' or '2'", "answer")
        return WINOGRANDE_ANSWER[ans]
    raise ValueError(f"{spec.name} has no gold index")


def _blank(doc: Mapping[str, Any]) -> int:
    sentence = _get(doc, "sentence")
    if "_" not in sentence:
        raise DocError("sentence has no '_' blank", "sentence")
    return sentence.index("_")


def winogrande_context(doc: Mapping[str, Any], option: str) -> str:
    """The sentence up to the blank with ``option`` filled in (LB ``winogrande.py`` ``partial_context``)."""
    return doc["sentence"][: _blank(doc)] + option


def winogrande_target(doc: Mapping[str, Any]) -> str:
    """Everything after the blank, stripped (without the leading space; empty when the blank ends the sentence)."""
    return doc["sentence"][_blank(doc) + 1 :].strip()


def doc_to_text(spec: TaskSpec, doc: Mapping[str, Any], templates: Mapping[str, str]) -> str:
    """The query part of a document's prompt (for Winogrande: filled in with the correct option)."""
    if spec.name in ("th_arc", "th_gsm8k"):
        return templates["query"].format(question=_get(doc, "question"))
    if spec.name == "th_hellaswag":
        text = templates["query"].format(
            activity_label=_get(doc, "activity_label"), ctx_a=_get(doc, "ctx_a"), ctx_b=_get(doc, "ctx_b").capitalize()
        )
        return hellaswag_preprocess(text)
    if spec.name == "th_mmlu":
        opts = "".join(
            templates["option"].format(letter=letter, choice=c) for letter, c in zip(MMLU_LETTERS, _get(doc, "choices"))
        )
        return templates["query"].format(question=_get(doc, "question").strip(), options=opts)
    if spec.name == "th_truthfulqa":
        return templates["query"].format(preamble=templates["preamble"], question=_get(doc, "question"))
    if spec.name == "th_winogrande":
        options = (_get(doc, "option1"), _get(doc, "option2"))
        return winogrande_context(doc, options[gold(spec, doc)])
    raise ValueError(spec.name)


def doc_to_target(spec: TaskSpec, doc: Mapping[str, Any]) -> str:
    """A few-shot example's answer (without the leading space)."""
    if spec.kind == "choice":
        return choices(spec, doc)[gold(spec, doc)]
    if spec.name == "th_winogrande":
        return winogrande_target(doc)
    if spec.name == "th_gsm8k":
        return _get(doc, "answer")
    raise ValueError(f"{spec.name} has no few-shot target")


def description(spec: TaskSpec, doc: Mapping[str, Any], templates: Mapping[str, str]) -> str:
    """Text put before the few-shot examples (MMLU only)."""
    if "description" not in templates:
        return ""
    return templates["description"].format(subject=str(_get(doc, "subject")).replace("_", " "))


def fewshot_context(
    spec: TaskSpec, doc: Mapping[str, Any], shots: Sequence[Mapping[str, Any]], templates: Mapping[str, str]
) -> str:
    """``description + "\\n\\n"`` (if any), examples ``text + " " + target`` joined by ``"\\n\\n"``, then the query."""
    desc = description(spec, doc, templates)
    parts = [doc_to_text(spec, ex, templates) + TARGET_DELIMITER + doc_to_target(spec, ex) for ex in shots]
    parts.append(doc_to_text(spec, doc, templates))
    return (desc + FEWSHOT_DELIMITER if desc else "") + FEWSHOT_DELIMITER.join(parts)


# ---------------------------------------------------------------------------------------------
# Requests and per-document metrics


@dataclass(frozen=True)
class DocRequests:
    """What one document asks of the model.

    ``requests`` are ``(context, continuation)`` pairs for ``loglikelihood`` (empty for GSM8K);
    ``prompt`` is the shared context (GSM8K: the generation prompt); TruthfulQA's first ``n_mc1``
    requests are the MC1 targets, the rest MC2.
    """

    prompt: str
    requests: tuple[tuple[str, str], ...] = ()
    n_mc1: int = 0

    @property
    def sha256(self) -> str:
        """Hash of everything sent to the model: the prompt and every request."""
        blob = json.dumps([self.prompt, self.requests], ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def build_requests(
    spec: TaskSpec, doc: Mapping[str, Any], shots: Sequence[Mapping[str, Any]], templates: Mapping[str, str]
) -> DocRequests:
    """The requests of ``doc`` given its few-shot examples ``shots`` (in prompt order)."""
    ctx = fewshot_context(spec, doc, shots, templates)
    if spec.kind == "choice":
        return DocRequests(ctx, tuple((ctx, TARGET_DELIMITER + c) for c in choices(spec, doc)))
    if spec.kind == "truthfulqa":
        mc1 = list(_get(_get(doc, "mc1_targets"), "choices"))
        mc2 = list(_get(_get(doc, "mc2_targets"), "choices"))
        return DocRequests(ctx, tuple((ctx, TARGET_DELIMITER + c) for c in mc1 + mc2), n_mc1=len(mc1))
    if spec.kind == "winogrande":
        # LB ``append_context``: split the prompt on "\n\n", drop the query filled with the correct
        # option, and put each option's partial context in its place.
        prefix = ctx.split(FEWSHOT_DELIMITER)[:-1]
        target = TARGET_DELIMITER + winogrande_target(doc)
        reqs = []
        for option in (_get(doc, "option1"), _get(doc, "option2")):
            reqs.append((FEWSHOT_DELIMITER.join([*prefix, winogrande_context(doc, option)]), target))
        return DocRequests(ctx, tuple(reqs))
    return DocRequests(ctx)


def process_results(spec: TaskSpec, doc: Mapping[str, Any], output: Any, *, mc2: str = "lb") -> dict[str, Any]:
    """Metric values of one document from the model's output.

    Args:
        output: the list of log-likelihoods (one per request) or, for GSM8K, the generated text.
        mc2: which TruthfulQA MC2 is reported as ``mc2`` ("lb": split at the first label 0;
            "mask": label mask); both are always returned as ``mc2_lb`` and ``mc2_mask``.
    """
    if spec.kind == "choice":
        return {"gold": gold(spec, doc), **M.multiple_choice(output, choices(spec, doc), gold(spec, doc))}
    if spec.kind == "winogrande":
        g = gold(spec, doc)
        pred = M.argmax_first(output)
        return {"gold": g, "pred": pred, "acc": float(pred == g)}
    if spec.kind == "truthfulqa":
        n1 = len(_get(doc, "mc1_targets")["choices"])
        labels = list(_get(_get(doc, "mc2_targets"), "labels"))
        lb, mask = M.mc2_lb(output[n1:], labels), M.mc2_mask(output[n1:], labels)
        if mc2 not in ("lb", "mask"):
            raise ValueError(f"mc2 must be 'lb' or 'mask', not {mc2!r}")
        return {"mc1": M.mc1(output[:n1]), "mc2": lb if mc2 == "lb" else mask, "mc2_lb": lb, "mc2_mask": mask}
    try:
        return M.gsm8k(output, _get(doc, "answer"))
    except ValueError as exc:
        raise DocError(str(exc), "answer") from None


#: Metrics each task reports (the headline first).
TASK_METRICS = {
    "th_arc": ("acc_norm", "acc", "acc_bytes"),
    "th_hellaswag": ("acc_norm", "acc", "acc_bytes"),
    "th_mmlu": ("acc", "acc_norm", "acc_bytes"),
    "th_truthfulqa": ("mc2", "mc1", "mc2_lb", "mc2_mask"),
    "th_winogrande": ("acc",),
    "th_gsm8k": ("exact_match", "flexible_match"),
}

#: GSM8K stop strings of LB (``gsm8k.py`` ``greedy_until``; ":" cuts Thai rationales at their first colon).
GSM8K_STOPS_LB = (":", "Question:", "Question")
#: GSM8K stop strings of lm-eval 0.4.13 (``gsm8k.yaml`` ``generation_kwargs.until``).
GSM8K_STOPS_H = ("Question:", "</s>", "<|im_end|>")
#: GSM8K generation budget (LB and lm-eval: at most 256 new tokens).
GSM8K_MAX_NEW_TOKENS = 256


def gsm8k_stops(option: str | Sequence[str]) -> tuple[str, ...]:
    """Stop strings for ``option``: "lb", "h", or an explicit sequence of strings."""
    if isinstance(option, str):
        if option == "lb":
            return GSM8K_STOPS_LB
        if option == "h":
            return GSM8K_STOPS_H
        raise ValueError(f"gsm8k_stops must be 'lb', 'h' or a list of strings, not {option!r}")
    return tuple(option)


def signature(spec: TaskSpec, config: Mapping[str, Any], limit: int | None = None) -> str:
    """A sacrebleu-style signature of the protocol options behind a score, e.g.
    ``th_arc|shots:25|sampler:lb|seed:42|bos:no|thai-eval:0.1.0`` (``limit:N`` when not the whole split)."""
    sig = f"{spec.name}|shots:{config['num_fewshot']}|sampler:{config['sampler']}"
    if config.get("fewshot_seed") is not None:
        sig += f"|seed:{config['fewshot_seed']}"
    sig += f"|bos:{'yes' if config['add_bos'] else 'no'}"
    if spec.kind == "generate":
        sig += f"|stops:{'+'.join(config['gsm8k_stops'])}|max_new:{config['max_new']}"
    if spec.kind == "truthfulqa":
        sig += f"|mc2:{config['mc2']}"
    if spec.name == "th_mmlu":
        sig += f"|avg:{config['mmlu_average']}"
    if limit is not None:
        sig += f"|limit:{limit}"
    return sig + f"|thai-eval:{__version__}"
