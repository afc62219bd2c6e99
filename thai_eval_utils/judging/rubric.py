"""What a judge is asked and how its reply is read: a :class:`JudgeRubric` is versioned templates (a
system and a user message with named fields), a :class:`ReplyParser` (patterns, the valid score range, what a
reply that never parses scores) and the call settings (:class:`JudgeParams`). A judge is a rubric and any model
that can ``chat`` (:class:`~thai_eval_utils.judging.judge.Judge`); a second judge is a second declaration, as
inspect_ai's ``model_graded_qa(template, grade_pattern, model)``.

Instances: ThaiCLI's (:mod:`thai_eval_utils.thaicli.judge_prompt`) and MT-Bench's single-answer grading
(:mod:`thai_eval_utils.judging.mt_bench`).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from thai_eval_utils.core.provenance import canonical_json, sha256_text

#: Thai digits (U+0E50-U+0E59) read digit by digit (never NFKC: it decomposes U+0E33 SARA AM).
THAI_DIGITS = str.maketrans("๐๑๒๓๔๕๖๗๘๙", "0123456789")
#: Names the cache key uses itself: a rubric's fields may not take them.
RESERVED_FIELDS = ("cache_format", "judge_model", "template_sha256", "params", "repeat")
#: A template file's message markers: a line ``[[system]]`` or ``[[user]]`` starts a message (ThaiCLI's judge_v1.txt).
SECTION_MARKER = re.compile(r"\[\[(system|user)\]\]")


@dataclass(frozen=True)
class JudgeParams:
    """What is sent with every judge call (temperature 0 and a seed, explicitly) and the call budget: a reply that
    does not parse is asked for again, at most ``max_calls`` calls per judgement in all (ThaiCLI: 16)."""

    max_tokens: int = 512
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = 0
    max_calls: int = 16

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def for_repeat(self, repeat: int) -> JudgeParams:
        """The settings of repeat ``repeat``: seed ``seed + repeat`` (None stays None), all else the same."""
        return replace(self, seed=None if self.seed is None else self.seed + repeat)


@dataclass(frozen=True)
class ReplyParser:
    """How a judge's reply becomes a score.

    Args:
        patterns: compiled regexes tried in order; the first that matches anywhere in the reply decides (its group 1
            is the number; a later pattern is tried only when an earlier one matches nowhere, as FastChat's backup).
        score_range: (low, high), both included; a number outside makes the reply invalid (no later match is tried).
            None: any number is kept.
        fallback_score: the score of a judgement none of whose ``max_calls`` replies parsed (ThaiCLI: 0; FastChat: -1).
        fallback_status: that judgement's status (ThaiCLI: ``fallback_zero``).
        explanation: a regex whose group 1 is the explanation (None: no explanation, ``""``).
    """

    patterns: tuple[re.Pattern[str], ...]
    score_range: tuple[float, float] | None
    fallback_score: float
    fallback_status: str
    explanation: re.Pattern[str] | None = None

    def parse(self, text: str | None) -> tuple[float, str] | None:
        """``(score, explanation)`` of a reply, or None when it holds no valid score."""
        if not text:
            return None
        match = next((m for m in (p.search(text) for p in self.patterns) if m is not None), None)
        if match is None:
            return None
        value = float(match.group(1).translate(THAI_DIGITS))
        if self.score_range is not None and not self.score_range[0] <= value <= self.score_range[1]:
            return None
        e = self.explanation.search(text) if self.explanation is not None else None
        return value, (e.group(1).strip() if e else "")

    @property
    def final_statuses(self) -> tuple[str, str]:
        """The statuses of a final judgement (cached, never asked again): ``scored`` and the fallback's."""
        return ("scored", self.fallback_status)

    def spec(self) -> dict[str, Any]:
        """What decides a score, as JSON (hashed into a declared rubric's key: a changed parser never reuses scores)."""
        return {
            "patterns": [[p.pattern, p.flags] for p in self.patterns],
            "score_range": self.score_range,
            "fallback_score": self.fallback_score,
            "fallback_status": self.fallback_status,
            "explanation": None if self.explanation is None else [self.explanation.pattern, self.explanation.flags],
        }


def split_sections(text: str) -> dict[str, str]:
    """The messages of a template file: ``[[system]]`` / ``[[user]]`` marker lines each start one that runs to the
    next marker (blank lines around it trimmed); lines before the first marker (a ``#`` header) are never sent."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        marker = SECTION_MARKER.fullmatch(line.strip())
        if marker:
            current = sections.setdefault(marker.group(1), [])
        elif current is not None:
            current.append(line)
    return {k: "\n".join(v).strip("\n") for k, v in sections.items()}


@dataclass(frozen=True)
class JudgeRubric:
    """One judge: versioned templates, the reply parser and the default call settings.

    ``system`` and ``user`` are :class:`string.Template` texts whose ``${name}`` placeholders are ``fields`` (filled
    in one pass, verbatim: text inside an answer is never substituted again); ``system`` may be None (no system
    message). ``sha256`` keys the judgement cache with the texts of ``fields``, the judge model and the parameters
    (:func:`~thai_eval_utils.judging.cache.judgement_key`); :meth:`declare` hashes the templates and the parser, and a
    rubric made before this (ThaiCLI's) keeps the hash it had (its template file's), so old judgements are found.
    """

    name: str
    version: str
    system: str | None
    user: str
    fields: tuple[str, ...]
    parser: ReplyParser
    sha256: str
    params: JudgeParams = field(default_factory=JudgeParams)
    #: the full template text recorded in run cards (default: the two messages)
    text: str = ""

    def __post_init__(self) -> None:
        clash = sorted(set(self.fields) & set(RESERVED_FIELDS))
        if clash:
            raise ValueError(f"rubric {self.name!r}: fields {clash} are names the cache key uses itself")
        used = {
            m.group("named") or m.group("braced")
            for t in (self.system or "", self.user)
            for m in string.Template.pattern.finditer(t)
            if m.group("named") or m.group("braced")
        }
        if used != set(self.fields):
            raise ValueError(
                f"rubric {self.name!r}: the templates use {sorted(used)}, the fields are {sorted(self.fields)}"
            )
        if not self.text:
            object.__setattr__(self, "text", f"[[system]]\n{self.system or ''}\n[[user]]\n{self.user}\n")

    @classmethod
    def declare(
        cls,
        name: str,
        version: str,
        *,
        user: str,
        fields: tuple[str, ...],
        parser: ReplyParser,
        system: str | None = None,
        params: JudgeParams | None = None,
    ) -> JudgeRubric:
        """A rubric whose key hash covers its name, version, templates and parser."""
        spec = {
            "name": name,
            "version": version,
            "system": system,
            "user": user,
            "fields": list(fields),
            "parser": parser.spec(),
        }
        return cls(
            name,
            version,
            system,
            user,
            tuple(fields),
            parser,
            sha256_text(canonical_json(spec)),
            params or JudgeParams(),
        )

    def messages(self, item: Mapping[str, str]) -> list[dict[str, str]]:
        """The judge's messages for one item (its ``fields``' texts inserted verbatim, never normalised).

        Raises:
            KeyError: the item lacks a field.
        """
        values = {f: item[f] for f in self.fields}
        out = (
            []
            if self.system is None
            else [{"role": "system", "content": string.Template(self.system).substitute(values)}]
        )
        return [*out, {"role": "user", "content": string.Template(self.user).substitute(values)}]

    def key_texts(self, item: Mapping[str, str]) -> dict[str, str]:
        """The texts of an item that key its judgement (its ``fields``)."""
        return {f: item[f] for f in self.fields}
