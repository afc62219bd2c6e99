"""Answers in Thai: whether a reply (its thinking cut: :mod:`.thinking`) is mainly Thai script, per item
and as a rate over a run's replies, shown beside every generation score.

The rule is the Thai-English code-switching check of the Typhoon reasoning-model evaluations (scb10x's SkyThought
fork, ``code_switching_handler.py``, reported as "language accuracy" in Typhoon T1 / R1, arXiv 2502.09042 and
2502.09056), as iapp-technology/chinda-eval's ``code_switching`` adapter re-implements it (``is_mainly_thai``,
"based on the logic from SkyThought code_switching_handler.py"; that adapter is the copy we could read, the
original file was not reachable). Each character of the reply is, in this order:

1. **Thai**: the Thai block U+0E00-U+0E7F (letters, vowels, tone marks, Thai digits and ฯ ๆ);
2. **neutral**: ASCII digits, whitespace (space, tab, newlines, form feed, vertical tab), ASCII punctuation,
   Latin-1 Supplement letters U+00C0-U+00FF, Latin Extended-A/B U+0100-U+024F, General Punctuation U+2000-U+206F,
   mathematical operators U+2200-U+22FF, U+27C0-U+27EF, U+2980-U+29FF, the emoji and pictograph blocks, arrows,
   © ™ ®, the currency signs € £ ¥ ₹ ₩ ₺ ₴ ₦ ₱ ₲ ₵ ₸, superscripts and vulgar fractions (:data:`NEUTRAL_EXTRA`):
   neither for nor against Thai;
3. **English**: ASCII letters A-Z, a-z;
4. **other**: anything else (Chinese, Cyrillic, a no-break space U+00A0, a degree sign U+00B0, ...).

A reply is mainly Thai when it has **no other character and at least as many Thai as English characters**. So a
reply of digits and punctuation only, or an empty one, is mainly Thai under this rule (nothing in it code-switches);
:func:`thai_share` (Thai / (Thai + English), None without letters) shows those apart. One choice is ours: a
**failed answer** (thinking never closed, :attr:`.thinking.SplitReply.failed`) is not an answer in Thai (counted
as not Thai; the reference has no such case: its regex drops everything up to the first ``</think>``).

The rate is the mean over replies with a Wilson score interval (95%; Wilson 1927, the usual interval of a
proportion, defined at every n and at rates 0 and 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from thai_eval_utils.tasks.thinking import DEFAULT, ThinkingOption, split_reply

THAI_BLOCK = (0x0E00, 0x0E7F)
#: Code points ranges that count neither for nor against Thai (the reference's allowed symbols, by block).
NEUTRAL_RANGES: tuple[tuple[int, int], ...] = (
    (0x0030, 0x0039),  # ASCII digits
    (0x00C0, 0x00FF),
    (0x0100, 0x017F),
    (0x0180, 0x024F),  # Latin-1 Supplement letters, Latin Extended-A and -B
    (0x2000, 0x206F),  # General Punctuation
    (0x2200, 0x22FF),
    (0x27C0, 0x27EF),
    (0x2980, 0x29FF),  # mathematical operators and symbols
    (0x1F300, 0x1F5FF),
    (0x1F600, 0x1F64F),
    (0x1F680, 0x1F6FF),
    (0x1F700, 0x1F77F),
    (0x1F780, 0x1F7FF),
    (0x1F800, 0x1F8FF),
    (0x1F900, 0x1F9FF),
    (0x1FA00, 0x1FA6F),
    (0x1FA70, 0x1FAFF),
    (0x2600, 0x26FF),
    (0x2700, 0x27BF),
    (0x1F1E6, 0x1F1FF),  # emoji, pictographs, dingbats, regional indicators
)
#: Single neutral characters outside those ranges: ASCII punctuation and whitespace, and the reference's lists.
NEUTRAL_EXTRA = frozenset(
    ",.;:!?()[]{}'\"-_+=*/\\<>@#$%^&|~`"
    + " \t\n\r\f\v"
    + "©™®"
    + "€£¥₹₩₺₴₦₱₲₵₸"
    + "²³⁴⁵⁶⁷⁸⁹⁰⁻⁺⁼⁽⁾ⁿⁱ"
    + "→←↑↓↔↕↖↗↘↙↩↪↻↼↽↾↿"
    + "".join(chr(c) for c in range(0x21C0, 0x2200))
    + "⟀⟁"
    + "½⅓⅔¼¾⅛⅜⅝⅞⅑⅒⅕"
)
#: The rule's name in signatures and summaries.
RULE = "typhoon-code-switching(thai>=english,no-other-script)"
LEVEL = 0.95
_Z95 = 1.959963984540054


@dataclass(frozen=True)
class ScriptCounts:
    """Characters of a text by the rule's classes (module docstring)."""

    thai: int
    english: int
    other: int
    neutral: int


def _is_neutral(cp: int, ch: str) -> bool:
    return ch in NEUTRAL_EXTRA or any(lo <= cp <= hi for lo, hi in NEUTRAL_RANGES)


def script_counts(text: str) -> ScriptCounts:
    """Count ``text``'s characters as Thai, English, other or neutral (in the rule's order)."""
    thai = english = other = neutral = 0
    for ch in text:
        cp = ord(ch)
        if THAI_BLOCK[0] <= cp <= THAI_BLOCK[1]:
            thai += 1
        elif _is_neutral(cp, ch):
            neutral += 1
        elif "A" <= ch <= "Z" or "a" <= ch <= "z":
            english += 1
        else:
            other += 1
    return ScriptCounts(thai, english, other, neutral)


def thai_share(text: str) -> float | None:
    """Thai characters / (Thai + English characters) of ``text``; None when it has neither."""
    c = script_counts(text)
    return None if c.thai + c.english == 0 else c.thai / (c.thai + c.english)


def is_mainly_thai(text: str) -> bool:
    """The rule: no character of another script, and at least as many Thai as English characters."""
    c = script_counts(text)
    return c.other == 0 and c.thai >= c.english


def reply_in_thai(raw: str, option: ThinkingOption = DEFAULT) -> bool:
    """Whether a raw reply answers in Thai: its thinking cut by ``option``; a failed answer is not."""
    split = split_reply(raw, option)
    return not split.failed and is_mainly_thai(split.scored)


def wilson_interval(k: int, n: int, level: float = LEVEL) -> tuple[float, float] | None:
    """The Wilson score interval of ``k`` successes in ``n`` (95%: z = 1.96); None when n = 0."""
    if n == 0:
        return None
    z = _Z95 if level == LEVEL else _z(level)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _z(level: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(0.5 + level / 2))


def thai_rate(flags: Sequence[bool]) -> dict[str, Any]:
    """The share of True in ``flags`` with n and its Wilson interval (value None when n = 0)."""
    n, k = len(flags), sum(bool(f) for f in flags)
    iv = wilson_interval(k, n)
    return {
        "value": k / n if n else None,
        "n": n,
        "n_thai": k,
        "interval": None if iv is None else {"low": iv[0], "high": iv[1], "level": LEVEL, "method": "wilson"},
        "rule": RULE,
    }


def reply_stats(
    records: Iterable[Mapping[str, Any]], field: str = "output", option: ThinkingOption = DEFAULT
) -> dict[str, Any]:
    """What a generation run's summary shows about its replies: how many thought, how many never closed their
    thinking (failed answers under the strict rule), and the answers-in-Thai rate.

    Args:
        records: the run's stored records (each holds the raw reply under ``field``; a record without it, or with a
            non-string, is skipped and counted in ``n_no_reply``).
        field: the record field holding the raw reply (``output`` for declared tasks and dialect, ``generation`` for
            GSM8K, ``answer`` for ThaiCLI answers).
        option: the run's thinking option.

    Returns:
        ``{"n_replies", "n_no_reply", "n_thinking", "n_thinking_unclosed", "n_failed", "thinking":
        option.signature(), "answers_in_thai": thai_rate(...)}``.
    """
    n_replies = n_no_reply = n_thinking = n_unclosed = n_failed = 0
    flags: list[bool] = []
    for rec in records:
        raw = rec.get(field)
        if not isinstance(raw, str):
            n_no_reply += 1
            continue
        split = split_reply(raw, option)
        n_replies += 1
        n_thinking += split.has_thinking
        n_unclosed += split.unclosed
        n_failed += split.failed
        flags.append(not split.failed and is_mainly_thai(split.scored))
    return {
        "n_replies": n_replies,
        "n_no_reply": n_no_reply,
        "n_thinking": n_thinking,
        "n_thinking_unclosed": n_unclosed,
        "n_failed": n_failed,
        "thinking": option.signature(),
        "answers_in_thai": thai_rate(flags),
    }


def stats_columns(stats: Mapping[str, Any] | None) -> dict[str, Any]:
    """The columns a score table shows beside a generation score: ``thai_rate``, ``thai_n``,
    ``n_thinking_unclosed`` (empty when the summary has no reply stats, e.g. a run stored before reply stats were
    recorded)."""
    if not stats:
        return {"thai_rate": None, "thai_n": None, "n_thinking_unclosed": None}
    rate = stats.get("answers_in_thai") or {}
    return {
        "thai_rate": rate.get("value"),
        "thai_n": rate.get("n"),
        "n_thinking_unclosed": stats.get("n_thinking_unclosed"),
    }


def stats_note(stats: Mapping[str, Any] | None) -> str:
    """A leaderboard cell's note on a generation score's replies, e.g. ``answers in Thai 75.0% (n=4); thinking
    unclosed 1`` ("" when the summary has no reply stats)."""
    cols = stats_columns(stats)
    if cols["thai_n"] is None:
        return ""
    rate = "n/a" if cols["thai_rate"] is None else f"{100 * cols['thai_rate']:.1f}%"
    return f"answers in Thai {rate} (n={cols['thai_n']}); thinking unclosed {cols['n_thinking_unclosed']}"


def reply_columns(raw: Sequence[str | None], option: ThinkingOption = DEFAULT) -> dict[str, list[Any]]:
    """Per raw reply (None: not generated, None in every column): ``scored`` (the text metrics read),
    ``unclosed``, ``failed`` and ``in_thai`` (:func:`reply_in_thai`), for a suite's per-item frame."""
    splits = [None if r is None else split_reply(r, option) for r in raw]
    return {
        "scored": [None if s is None else s.scored for s in splits],
        "unclosed": [None if s is None else s.unclosed for s in splits],
        "failed": [None if s is None else s.failed for s in splits],
        "in_thai": [None if s is None else (not s.failed and is_mainly_thai(s.scored)) for s in splits],
    }


def group_columns(in_thai: Iterable[Any], unclosed: Iterable[Any]) -> dict[str, Any]:
    """A score table's reply columns for one group of items (per-item ``in_thai`` and ``unclosed`` flags):
    ``thai_rate``, ``thai_n``, ``n_thinking_unclosed``."""
    flags = [bool(x) for x in in_thai]
    return {
        "thai_rate": sum(flags) / len(flags) if flags else None,
        "thai_n": len(flags),
        "n_thinking_unclosed": sum(bool(x) for x in unclosed),
    }


def reply_stats_by(
    records: Iterable[Mapping[str, Any]],
    key: Callable[[Mapping[str, Any]], str],
    field: str = "output",
    option: ThinkingOption = DEFAULT,
) -> dict[str, dict[str, Any]]:
    """:func:`reply_stats` per group of records (``key(record)``, e.g. ``"<dialect>/<task>"``), in first-seen order."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for rec in records:
        groups.setdefault(key(rec), []).append(rec)
    return {k: reply_stats(v, field, option) for k, v in groups.items()}
