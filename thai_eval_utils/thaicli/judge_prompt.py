"""ThaiCLI judge prompt and reply parser (Kim et al., arXiv 2410.04795, section 4, Figure 5).

The prompt is the versioned template ``templates/judge_v1.txt`` (a reconstruction: the paper prints its
prompt only as an image); its SHA-256 goes into every judgement's cache key. :func:`judge_template` gives it with
the two references in either order (the judge's position bias); the swapped text has its own hash. A
reply must hold
``<score>N</score>`` with N in [1, 10] (:data:`SCORE_PATTERN`) and may hold ``<explanation>``.

ThaiCLI's judge is one instance of the generic judge: :data:`THAICLI_PARSER` and :func:`thaicli_rubric`
declare it for :mod:`thai_eval_utils.judging` (its key hash stays the template file's, so old judgements are found),
and :func:`thaicli_metric` as the judged metric of ThaiCLI's answers task
(:class:`~thai_eval_utils.tasks.judged.JudgedMetric`: up to 16 calls, else 0).
"""

from __future__ import annotations

import importlib.resources
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import openai

from thai_eval_utils.backend.openai_client import ApiError, describe_error
from thai_eval_utils.core.protocols import ChatModel
from thai_eval_utils.core.provenance import sha256_text
from thai_eval_utils.judging.rubric import JudgeParams, JudgeRubric, ReplyParser, split_sections
from thai_eval_utils.tasks.judged import JudgedMetric

#: The versioned prompt template (a reconstruction of the paper's Figure 5; see the file's header).
TEMPLATE_VERSION = "judge_v1"
TEMPLATE_TEXT = (importlib.resources.files("thai_eval_utils") / "templates" / f"{TEMPLATE_VERSION}.txt").read_text(
    encoding="utf-8"
)
#: SHA-256 of the template file's text: part of every cache key, run config and result.
TEMPLATE_SHA256 = sha256_text(TEMPLATE_TEXT)

#: Paper, section 4: at most 16 judge calls per item, then the item scores 0.
MAX_JUDGE_CALLS = 16
FALLBACK_SCORE = 0.0
#: The paper's judge (section 4): the judge ThaiCLI's declaration names; a run names its own.
PAPER_JUDGE = "gpt-4o-2024-05-13"
MIN_SCORE, MAX_SCORE = 1.0, 10.0

#: A ``<score>...</score>`` pair whose content is a number: tags case-insensitive, whitespace allowed inside
#: the tags and around the number, an optional sign (so "-3" is read, then refused as out of range) and an
#: optional decimal part. Digits may be ASCII or Thai (U+0E50-U+0E59, e.g. "๗" = 7): a Thai judge may
#: write Thai numerals and their value is unambiguous; they are mapped digit by digit (no NFKC). The
#: first pair that matches decides; a pair with other content ("N/A", "7/10") is skipped.
SCORE_PATTERN = re.compile(
    r"<\s*score\s*>\s*([+-]?[0-9\u0e50-\u0e59]+(?:\.[0-9\u0e50-\u0e59]+)?)\s*<\s*/\s*score\s*>", re.I
)
#: The text inside the first ``<explanation>`` tag, up to its closing tag or, when a reply was cut off,
#: to the end of the reply.
EXPLANATION_PATTERN = re.compile(r"<\s*explanation\s*>(.*?)(?:<\s*/\s*explanation\s*>|\Z)", re.I | re.S)
#: The ThaiCLI reply parser: the first :data:`SCORE_PATTERN` match in [1, 10], else asked again; after
#: :data:`MAX_JUDGE_CALLS` calls the item scores :data:`FALLBACK_SCORE` (status ``fallback_zero``).
THAICLI_PARSER = ReplyParser(
    patterns=(SCORE_PATTERN,),
    score_range=(MIN_SCORE, MAX_SCORE),
    fallback_score=FALLBACK_SCORE,
    fallback_status="fallback_zero",
    explanation=EXPLANATION_PATTERN,
)
#: The template's fields, in the order the cache key has always named them.
THAICLI_FIELDS = ("question", "chosen", "rejected", "answer")


ReferenceOrder = Literal["chosen_first", "rejected_first"]
#: The orders of the two references in the user message; ``chosen_first`` is the template file as written.
REFERENCE_ORDERS: tuple[ReferenceOrder, ...] = ("chosen_first", "rejected_first")
#: The two reference sections of ``judge_v1.txt`` as written (chosen first); ``rejected_first`` swaps them.
_REFERENCES = "<chosen_answer>\n${chosen}\n</chosen_answer>\n\n<rejected_answer>\n${rejected}\n</rejected_answer>"
_REFERENCES_SWAPPED = "\n\n".join(reversed(_REFERENCES.split("\n\n")))


@dataclass(frozen=True)
class JudgeTemplate:
    """One judge prompt: its version label (``judge_v1``; ``judge_v1+rejected_first`` when the references are
    swapped), the reference order, the full template text and its SHA-256 (part of every cache key and result)."""

    version: str
    reference_order: ReferenceOrder
    text: str
    sha256: str

    def messages(self, question: str, chosen: str, rejected: str, answer: str) -> list[dict[str, str]]:
        """The judge's system and user messages for one item (texts inserted verbatim, never normalised)."""
        return self.rubric().messages({"question": question, "chosen": chosen, "rejected": rejected, "answer": answer})

    def rubric(self, params: JudgeParams | None = None) -> JudgeRubric:
        """This prompt as a :class:`~thai_eval_utils.judging.rubric.JudgeRubric` (key hash: this template's)."""
        sections = split_sections(self.text)
        texts, params = (sections["system"], sections["user"]), params or JudgeParams(max_calls=MAX_JUDGE_CALLS)
        return JudgeRubric(
            "thaicli", self.version, *texts, THAICLI_FIELDS, THAICLI_PARSER, self.sha256, params, self.text
        )


def thaicli_rubric(reference_order: ReferenceOrder = "chosen_first", params: JudgeParams | None = None) -> JudgeRubric:
    """The ThaiCLI judge as a rubric: the versioned prompt (either reference order), :data:`THAICLI_PARSER`, 16 calls."""
    return judge_template(reference_order).rubric(params)


class ThaiCLIJudged(JudgedMetric):
    """ThaiCLI's judge as a judged metric: the rubric is filled with the item's question, chosen and rejected
    references and the model's answer; why a judgement stays unjudged: a request that failed after the client's
    retries, or another (``unexpected``) error."""

    given_texts = THAICLI_FIELDS

    def texts(self, record: Mapping[str, Any], prediction: str) -> dict[str, str]:
        return {f: str(record[f]) for f in THAICLI_FIELDS[:3]} | {"answer": prediction}

    def describe(self, exc: BaseException) -> str:
        return (
            describe_error(exc) if isinstance(exc, (openai.APIError, ApiError)) else f"unexpected {describe_error(exc)}"
        )


def thaicli_metric(
    judge: str | ChatModel = PAPER_JUDGE,
    params: JudgeParams | None = None,
    reference_order: ReferenceOrder = "chosen_first",
) -> ThaiCLIJudged:
    """The ThaiCLI judge (paper, section 4) on ``judge``: the versioned prompt in ``reference_order``, a 1-10 score,
    up to ``params.max_calls`` calls (default :data:`MAX_JUDGE_CALLS`) while a reply does not parse, else
    :data:`FALLBACK_SCORE` (counted in the means)."""
    params = params or JudgeParams(max_calls=MAX_JUDGE_CALLS)
    rubric = thaicli_rubric(reference_order, params)
    return ThaiCLIJudged(rubric, judge, params=params, unparsed_score=FALLBACK_SCORE, name="thaicli")


def judge_template(reference_order: ReferenceOrder = "chosen_first") -> JudgeTemplate:
    """The versioned judge template with the chosen reference first (the file as written) or the rejected first.

    Raises:
        ValueError: an unknown order, or a template file whose reference sections are not laid out as expected.
    """
    if reference_order not in REFERENCE_ORDERS:
        raise ValueError(f"reference_order must be one of {REFERENCE_ORDERS}, got {reference_order!r}")
    if reference_order == "chosen_first":
        return JudgeTemplate(TEMPLATE_VERSION, reference_order, TEMPLATE_TEXT, TEMPLATE_SHA256)
    if TEMPLATE_TEXT.count(_REFERENCES) != 1:
        raise ValueError(f"{TEMPLATE_VERSION}.txt does not hold the chosen and rejected sections once, in that order")
    text = TEMPLATE_TEXT.replace(_REFERENCES, _REFERENCES_SWAPPED)
    return JudgeTemplate(f"{TEMPLATE_VERSION}+{reference_order}", reference_order, text, sha256_text(text))


def build_messages(
    question: str, chosen: str, rejected: str, answer: str, *, reference_order: ReferenceOrder = "chosen_first"
) -> list[dict[str, str]]:
    """The judge's system and user messages for one item (texts inserted verbatim, never normalised)."""
    return judge_template(reference_order).messages(question, chosen, rejected, answer)


def parse_judgement(text: str | None) -> tuple[float, str] | None:
    """``(score, explanation)`` from a judge reply, or None when it holds no valid score.

    The score is the number in the first ``<score>`` pair matching :data:`SCORE_PATTERN`; outside
    [1, 10] the reply is invalid (no later pair is tried). The explanation is ``""`` when absent.

    Example: ``parse_judgement("<score> 8 </score><explanation>ดี</explanation>")`` -> ``(8.0, "ดี")``.
    """
    return THAICLI_PARSER.parse(text)
