"""Generative multiple choice: a question and its lettered choices asked in a chat, the letter read from the reply.

A labelled variant for chat models whose API gives no log-probabilities (so log-likelihood scoring of the choices,
lm-eval's ``multiple_choice``, cannot run): never the log-likelihood protocol, never mixed into its numbers or
averages; every score of it says ``generative-mc`` in its signature. Any multiple-choice task whose question and
choices can be said as text uses it (Thai-H6's five choice tasks: ``h6.variants``).

- **Prompt** (:data:`PROMPT`): the question, a blank line, one ``A. choice`` line per choice, a blank line and the
  instruction to end with ``คำตอบ: X``, modelled on OpenAI simple-evals' ``QUERY_TEMPLATE_MULTICHOICE`` (whose last
  line is ``Answer: $LETTER``), in Thai like the benchmarks' questions. Zero-shot, one user turn.
- **Extraction** (:func:`extract_letter`), after the thinking block is cut (``tasks.thinking.split_reply``: a letter
  the model weighed while thinking is never read): the reply after its last answer cue (:data:`CUE_RE`: ``Answer:``
  or ``คำตอบ:``, any case, ``:`` or ``：``) if it has one, else the whole reply; in it, the first **standalone**
  choice letter (:func:`letter_re`: an upper-case letter of the item's choices, A-E for five, not touching another
  Latin letter or digit, so the ``A`` of ``An`` and the ``B`` of ``B12`` are not answers; Thai text may touch it:
  ``คำตอบคือB``); no letter there, the first standalone letter of the whole reply; none at all, no answer (wrong).
  Without a cue an English article can be read as a letter (``"A cat..."`` -> A): the prompt asks for the cue.
- **Metric**: accuracy (``acc``), the predicted index (``pred``, None for no letter) beside it.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from typing import Any

from thai_eval_utils.tasks.thinking import DEFAULT, ThinkingOption, split_reply

#: The variant's name in every signature, config and table.
NAME = "generative-mc"
#: Choice letters (an item has at most 26 choices).
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#: One choice line.
OPTION = "{letter}. {choice}"
#: The user turn: question, choices, and the instruction to end with the letter (``{letters}``: "A, B, C หรือ D").
PROMPT = (
    "{question}\n\n{options}\n\n"
    "ตอบคำถามข้างต้นโดยเลือกตัวเลือกที่ถูกต้องเพียงข้อเดียว บรรทัดสุดท้ายของคำตอบต้องอยู่ในรูปแบบ "
    '"คำตอบ: X" โดย X คือตัวอักษรของตัวเลือก ({letters})'
)
#: An answer cue: "Answer:" / "คำตอบ:" (any case, ASCII or full-width colon); the letter is read after the last one.
CUE_RE = re.compile(r"(?:(?i:answer)|คำตอบ)\s*[:：]")


def letters_of(n: int) -> str:
    """The letters of ``n`` choices (``"ABCD"`` for 4); a ValueError outside 2-26."""
    if not 2 <= n <= len(LETTERS):
        raise ValueError(f"a multiple-choice item needs 2 to {len(LETTERS)} choices, got {n}")
    return LETTERS[:n]


def prompt(question: str, choices: Sequence[str], template: str = PROMPT) -> str:
    """The user turn of one item: ``template`` filled with the question, its lettered choices and their letters.

    Example: ``prompt("2 + 2 = ?", ["3", "4"])`` starts ``"2 + 2 = ?\\n\\nA. 3\\nB. 4\\n\\n"``.
    """
    letters = letters_of(len(choices))
    options = "\n".join(OPTION.format(letter=a, choice=c) for a, c in zip(letters, choices))
    listed = ", ".join(letters[:-1]) + f" หรือ {letters[-1]}"
    return template.format(question=question, options=options, letters=listed)


def letter_re(n: int) -> re.Pattern[str]:
    """A standalone choice letter of an item with ``n`` choices (module docstring)."""
    return re.compile(rf"(?<![A-Za-z0-9])([{letters_of(n)}])(?![A-Za-z0-9])")


def extract_letter(reply: str, n: int) -> int | None:
    """The index of the choice ``reply`` answers (module docstring: after the last cue, else anywhere; the first
    standalone letter), None when it names none.

    Examples (4 choices): ``"คำตอบ: C"`` -> 2; ``"An apple is B"`` -> 1; ``"Answer: (D)"`` -> 3; ``"ไม่ทราบ"`` -> None.
    """
    pattern = letter_re(n)
    cues = list(CUE_RE.finditer(reply))
    found = pattern.search(reply, cues[-1].end()) if cues else None
    found = found or pattern.search(reply)
    return None if found is None else LETTERS.index(found.group(1))


def score(reply: str, gold: int, n: int, thinking: ThinkingOption = DEFAULT) -> dict[str, Any]:
    """One item's record fields: ``gold``, ``pred`` (the letter's index read after the thinking block, None for
    none or for a thinking block that never closed under the strict rule) and ``acc``."""
    pred = extract_letter(split_reply(reply, thinking).scored, n)
    return {"gold": int(gold), "pred": pred, "acc": float(pred == gold)}


def shuffled(choices: Sequence[str], gold: int, key: str) -> tuple[list[str], int]:
    """The choices in an order fixed by ``key`` (e.g. the question) and the gold's index in it: for sources whose
    correct choice always comes first (TruthfulQA's ``mc1_targets``), where a model answering ``A`` every time would
    score 100%. The order is ``random.Random(seed).shuffle`` with ``seed`` the first 8 bytes of SHA-256(``key``)."""
    order = list(range(len(choices)))
    random.Random(int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big")).shuffle(order)
    return [choices[i] for i in order], order.index(gold)
