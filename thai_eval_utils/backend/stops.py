"""Stop strings, as lm-evaluation-harness's ``generate_until`` applies them: keep the text before the first stop.

``cut_at_stop`` cuts a finished text (every engine, local or served, uses it last); ``StopScanner`` tells the local
engine, token by token, when a row's text has reached a stop string, decoding only the newest tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from thai_eval_utils.core.protocols import stop_strings


def cut_at_stop(text: str, stop: Sequence[str] | str | None) -> str:
    """``text`` cut before the earliest occurrence of any stop string (one string is one stop string, empty ones
    are ignored: :func:`~thai_eval_utils.core.protocols.stop_strings`).

    Example: ``cut_at_stop("ตอบ: 42\\n\\nQuestion: x", [":", "Question:"])`` -> ``"ตอบ"``.
    """
    stops = stop_strings(stop)  # one string is one stop string; anything but strings is refused by name
    return text[: min((i for i in (text.find(s) for s in stops) if i >= 0), default=len(text))]


class StopScanner:
    """Whether the text of a growing token list contains a stop string, checked on the newest tokens only.

    A stop string of ``b`` UTF-8 bytes that is completed by the newest token lies within the last ``b`` tokens
    (every token that is not skipped adds at least one byte), so decoding a window of ``b + 4`` tokens finds it
    across token boundaries; the window's first characters may be a cut multi-byte character (decoded as U+FFFD,
    never part of a stop string). A hit in the window is confirmed on the whole decoded text, so a row never stops
    early (a stop that has slid out of the window is not reported again: the engine stops at the first hit); a
    missed hit only costs more tokens, since the text is cut with :func:`cut_at_stop` at the end anyway.
    Hand-written because transformers' ``StopStringCriteria`` preprocesses the whole vocabulary (262k tokens for
    Gemma 3) for every new set of stop strings.
    """

    def __init__(self, decode: Callable[[list[int]], str], stop: Sequence[str] | str | None) -> None:
        self.decode = decode
        self.stops = stop_strings(stop)
        self.window = max((len(s.encode("utf-8")) for s in self.stops), default=0) + 4

    def hit(self, tokens: list[int]) -> bool:
        """Whether ``tokens`` (the generated tokens so far) decode to a text holding a stop string."""
        if not self.stops:
            return False
        tail = self.decode(tokens[-self.window :])
        if not any(s in tail for s in self.stops):
            return False
        text = self.decode(tokens)
        return any(s in text for s in self.stops)
