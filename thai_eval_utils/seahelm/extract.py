"""Reading the answer out of a reply as SEA-HELM's metric classes do (spec ``seahelm_thai.md`` 4.0-4.1, 4.10).

``extract_response`` (``src/metrics/seahelm_metric.py:134-160``): ``re.search(pattern, reply, flags)`` on the
first-turn reply; the first match wins and its group 1 is the answer; no match -> the whole reply; the result is
``.strip()``-ped. A failed generation (None) is ``""`` before extraction (``:162-191``). The tag is not escaped.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable

from thai_eval_utils.tasks.shaping import AnswerTag

#: F1AccMetric's normalisation strips these from both ends (``seahelm_metric.py:73-99``): ASCII punctuation only.
_STRIP = string.punctuation + " " + "\n"
#: F1AccMetric's prediction for an answer that is no gold label.
NULL_LABEL = "null"


def choice_pattern(answer_tag: str, labels: Iterable[str]) -> str:
    """F1AccMetric's pattern: ``TAG + r"[\\s\\*]*(" + "|".join(labels) + ")+"`` (``f1_acc_metric.py:49-61``).
    SEA-HELM joins a Python ``set`` (its order is arbitrary); no Thai label set has a label that is a prefix of
    another, so the order never changes a match here. Labels are not escaped (P12)."""
    return answer_tag + r"[\s\*]*(" + "|".join(map(str, labels)) + ")+"


def extract(reply: str | None, pattern: str, *, flags: int = 0) -> str:
    """The answer SEA-HELM reads from ``reply``: group 1 of the first match, else the whole reply, stripped
    (None counts as ``""``: a failed generation is an empty reply, 4.10)."""
    text = "" if reply is None else reply
    match = re.search(pattern, text, flags=flags)
    out = match.group(1) if match is not None and match.group(1) is not None else text
    return out.strip()


def normalize_choice(text: str) -> str:
    """F1AccMetric's ``normalize_answer``: lowercase, strip ASCII punctuation, spaces and newlines at both ends,
    collapse whitespace."""
    return " ".join(text.lower().strip(_STRIP).split())


def extract_choice(reply: str | None, answer_tag: str, labels: Iterable[str]) -> str:
    """F1AccMetric's prediction (``f1_acc_metric.py:63-86``): the tag pattern with ``re.IGNORECASE``, normalised,
    mapped to the gold label it names (case-insensitively), else ``"null"``. ``labels``: the gold labels present
    in the evaluated rows (K and the pattern depend on them, P12/P23)."""
    labels = list(dict.fromkeys(labels))
    label_map = {str(label).lower(): label for label in labels}
    answer = normalize_choice(extract(reply, choice_pattern(answer_tag, labels), flags=re.IGNORECASE))
    return label_map.get(answer, NULL_LABEL)


def extract_text(reply: str | None, answer_tag: str) -> str:
    """The free-text answer of QA, translation and summarisation: the declared tasks' answer-tag reply filter
    (:class:`~thai_eval_utils.tasks.shaping.AnswerTag`: the rest of the tag's line after whitespace, backticks and
    asterisks, ``question_answering.py:42-45``, ``translation_metric.py:31-34``, ``summarization.py:26-29``)."""
    return AnswerTag(answer_tag).apply("" if reply is None else reply)
