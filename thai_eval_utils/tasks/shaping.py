"""What code may say where a declared task's data cannot (lm-eval's ``!function``): few-shot **samplers** (which
examples come before each item) and reply **filters** (what part of a generation's reply is scored), as objects
recorded in the declaration by their spec, and the functions a declaration may hold in place of a template or a
field (``prompt``, ``choices``, ``gold``, ``reference``: doc -> value; ``process_docs``: rows -> rows), recorded by
their qualified name (``module:qualname``; a user's task file by its file name) so the config stays stable.

Samplers follow lm-eval's ``ContextSampler`` (``lm_eval/api/samplers.py``): :class:`FirstN` is its ``first_n``
(the first n rows of the pool, every item alike: the package's behaviour before samplers); :class:`RandomSample`
is its default: one ``random.Random(seed)`` drawn in item order, ``sample(pool, n)`` per item, or n + 1 when the
pool is the evaluated data itself, the item's own row then dropped and the first n kept.

Filters follow lm-eval's ``regex`` filter (:class:`RegexExtract`: ``re.findall``, the ``group_select``-th match,
the first non-empty group of a tuple, stripped; no match: the fallback, ``[invalid]``) and SEA-HELM's answer
extraction (:class:`AnswerTag`: the first match of ``tag + r"[\\s\\r\\n`*]*(.*)"``, group 1, else the whole reply,
stripped). The thinking cut always comes first; the filters run in order on what it leaves.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from thai_eval_utils.tasks.metrics import qualified_name

#: lm-eval's GSM8K answer pattern (``#### 42``) and its fallback for a reply without one.
GSM8K_PATTERN = r"#### (\-?[0-9\.\,]+)"
LM_EVAL_FALLBACK = "[invalid]"


class _Declared:
    """An object a declaration records by its class and parameters."""

    def parameters(self) -> dict[str, Any]:
        return {}

    def declaration(self) -> dict[str, Any]:
        """``{"class": "module:qualname", **parameters}``."""
        return {"class": qualified_name(type(self)), **self.parameters()}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.declaration() == self.declaration()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(repr(self.declaration()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.parameters().items())})"


# ------------------------------------------------------------------------------------------ table functions
class TableEntry(Protocol):
    """An entry of a suite's task table: anything with a ``key``."""

    @property
    def key(self) -> str: ...


Entry = TypeVar("Entry", bound=TableEntry)


@dataclass(frozen=True)
class OfTableEntry(Generic[Entry]):
    """A function of a row for one entry of a suite's task table (a subclass defines ``__call__``), recorded in a
    declaration as its class and the entry's key: every task a table builds keeps a stable config while the code
    stays the same (the Thai LLM Leaderboard's and SEA-HELM's prompt, label and gold functions)."""

    task: Entry

    def declaration(self) -> dict[str, str]:
        """``{"function": "module:qualname", "task": key}``."""
        return {"function": qualified_name(type(self)), "task": self.task.key}


# ------------------------------------------------------------------------------------------------- samplers
class Sampler(_Declared):
    """Which rows of the few-shot pool come before each item. ``lm_eval_name``: lm-eval's name of the same sampler
    (an lm-eval export's ``fewshot_config.sampler``), None where lm-eval has none."""

    lm_eval_name: str | None = None

    def choose(self, pool_size: int, n: int, own: Sequence[int | None]) -> list[list[int]]:
        """For each item in order, the pool rows of its examples; ``own[i]``: item i's own row in the pool when the
        pool is the evaluated data, else None."""
        raise NotImplementedError


class FirstN(Sampler):
    """The first n rows of the pool before every item (lm-eval's ``first_n``)."""

    lm_eval_name = "first_n"

    def choose(self, pool_size: int, n: int, own: Sequence[int | None]) -> list[list[int]]:
        return [list(range(min(n, pool_size)))] * len(own)


class RandomSample(Sampler):
    """lm-eval's default sampler: ``random.Random(seed)``, drawn item after item (see the module)."""

    lm_eval_name = "default"

    def __init__(self, seed: int = 1234) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        self.seed = seed

    def parameters(self) -> dict[str, Any]:
        return {"seed": self.seed}

    def choose(self, pool_size: int, n: int, own: Sequence[int | None]) -> list[list[int]]:
        rnd = random.Random(self.seed)
        rows = range(pool_size)
        out = []
        for mine in own:
            drawn = rnd.sample(rows, min(pool_size, n + 1 if mine is not None else n))
            out.append([r for r in drawn if r != mine][:n])
        return out


# -------------------------------------------------------------------------------------------------- filters
class ReplyFilter(_Declared):
    """A step of a generation task's reply filter chain: text in, text out. ``function``: its name in an lm-eval
    ``filter_list`` (lm-eval's own where it has the filter)."""

    function = "custom"

    def lm_eval_parameters(self) -> dict[str, Any]:
        """Its parameters as an lm-eval ``filter_list`` step names them (default: :meth:`parameters`)."""
        return self.parameters()

    def apply(self, text: str) -> str:
        raise NotImplementedError


class RegexExtract(ReplyFilter):
    """lm-eval's ``regex`` filter: the ``group_select``-th match of ``pattern`` (a tuple of groups: its first
    non-empty one), stripped; ``fallback`` when nothing matches (take-first: one reply per item here)."""

    function = "regex"

    def __init__(self, pattern: str = GSM8K_PATTERN, group_select: int = 0, fallback: str = LM_EVAL_FALLBACK) -> None:
        self.regex = re.compile(pattern)
        self.pattern, self.group_select, self.fallback = pattern, group_select, fallback

    def parameters(self) -> dict[str, Any]:
        return {"pattern": self.pattern, "group_select": self.group_select, "fallback": self.fallback}

    def lm_eval_parameters(self) -> dict[str, Any]:
        """lm-eval's ``RegexFilter`` names the pattern ``regex_pattern``."""
        return {"regex_pattern": self.pattern, "group_select": self.group_select, "fallback": self.fallback}

    def apply(self, text: str) -> str:
        matches = self.regex.findall(text)
        if not matches:
            return self.fallback
        match = matches[self.group_select]
        if isinstance(match, tuple):
            match = next((m for m in match if m), self.fallback)
        return match.strip()


class AnswerTag(ReplyFilter):
    """SEA-HELM's answer extraction: the rest of the tag's line (after whitespace, backticks and asterisks) at the
    tag's first occurrence, stripped; a reply without the tag is kept whole, stripped. The tag is a regex, as
    SEA-HELM's (not escaped)."""

    function = "answer_tag"

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.regex = re.compile(tag + r"[\s\r\n`*]*(.*)")

    def parameters(self) -> dict[str, Any]:
        return {"tag": self.tag}

    def apply(self, text: str) -> str:
        match = self.regex.search(text)
        return (match.group(1) if match is not None and match.group(1) is not None else text).strip()


def filter_name(filters: Sequence[ReplyFilter]) -> str:
    """The name an lm-eval export gives a reply filter chain (its samples' ``filter``, the results' ``metric,filter``
    keys): lm-eval's ``"none"`` without filters, else the filters' functions joined by ``-``.

    Example:
        >>> filter_name(()), filter_name((RegexExtract(), AnswerTag("x")))
        ('none', 'regex-answer_tag')
    """
    return "-".join(f.function for f in filters) or "none"


def lm_eval_filter_list(filters: Sequence[ReplyFilter]) -> list[dict[str, Any]]:
    """The chain as lm-eval's ``filter_list`` config: one named pipeline of the filters (each ``function`` and its
    parameters), then ``take_first`` (one reply per item); empty without filters."""
    if not filters:
        return []
    steps = [{"function": f.function, **f.lm_eval_parameters()} for f in filters]
    return [{"name": filter_name(filters), "filter": [*steps, {"function": "take_first"}]}]


def apply_filters(text: str, filters: Sequence[ReplyFilter]) -> str:
    """``text`` through each filter in order."""
    for f in filters:
        text = f.apply(text)
    return text
