"""Stop strings, as lm-evaluation-harness's ``generate_until`` applies them: keep the text before the first stop.

``cut_at_stop`` cuts a finished text (every engine, local or served, uses it last); ``StopScanner`` tells the local
engine, token by token, when a row's text has reached a stop string, decoding only the newest tokens.

A model that thinks (a run's ``stop_after_thinking``, ``tasks.thinking``) writes its reasoning in a block such as
``<think>...</think>`` before the answer, and a stop string written for the answer (GSM8K's ``":"``,
``"Question:"``) may occur in the reasoning: lm-eval's cut would then end the reply inside the block and lose the
answer (lm-evaluation-harness PR 3700). Given the model's ``think_tags``, a stop string counts only outside the
thinking (:func:`thinking_spans`): while a block is open the row goes on, and the cut falls after the block.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from thai_eval_utils.core.protocols import stop_strings

#: A model's think tags (open, close), e.g. ``("<think>", "</think>")``.
ThinkTags = tuple[str, str]


def thinking_spans(text: str, tags: ThinkTags, *, starts_open: bool = False) -> list[tuple[int, int]]:
    """Where ``text``'s thinking lies: ``(start, end)`` of each block, its tags included; a block that never closes
    runs to the end of the text.

    ``starts_open``: the text begins inside a block (the prompt opened it, as the chat templates of DeepSeek-R1 and
    Qwen3-thinking do); otherwise a close tag with no open tag before it makes everything before it thinking, as the
    strict thinking rule reads a reply (``tasks.thinking.split_reply``).

    Example: ``thinking_spans("<think>a</think>b", ("<think>", "</think>"))`` -> ``[(0, 16)]``.
    """
    o, c = tags
    spans: list[tuple[int, int]] = []
    pos, first_close, first_open = 0, text.find(c), text.find(o)
    if starts_open or (first_close != -1 and (first_open == -1 or first_close < first_open)):
        if first_close == -1:
            return [(0, len(text))]
        pos = first_close + len(c)
        spans.append((0, pos))
    while (start := text.find(o, pos)) != -1:
        end = text.find(c, start + len(o))
        if end == -1:
            spans.append((start, len(text)))
            break
        pos = end + len(c)
        spans.append((start, pos))
    return spans


def opens_thinking(prompt: str, tags: ThinkTags) -> bool:
    """Whether ``prompt`` ends inside a thinking block (its last open tag has no close tag after it), so the reply
    starts in the block: a chat template that opens it for the model."""
    last = prompt.rfind(tags[0])
    return last != -1 and prompt.find(tags[1], last + len(tags[0])) == -1


def first_stop(
    text: str, stops: Sequence[str], think_tags: ThinkTags | None = None, *, starts_open: bool = False
) -> int | None:
    """Where the earliest stop string of ``stops`` starts in ``text`` (None: none); with ``think_tags``, only
    occurrences that start outside every thinking block count (:func:`thinking_spans`)."""
    if think_tags is None:
        hits = [i for i in (text.find(s) for s in stops) if i >= 0]
        return min(hits, default=None)
    spans = thinking_spans(text, think_tags, starts_open=starts_open)
    best: int | None = None
    for s in stops:
        at = text.find(s)
        while at != -1 and (best is None or at < best):
            inside = next((end for start, end in spans if start <= at < end), None)
            if inside is None:
                best = at
                break
            at = text.find(s, inside)  # the next occurrence after this block
    return best


def cut_at_stop(
    text: str, stop: Sequence[str] | str | None, *, think_tags: ThinkTags | None = None, starts_open: bool = False
) -> str:
    """``text`` cut before the earliest occurrence of any stop string (one string is one stop string, empty ones
    are ignored: :func:`~thai_eval_utils.core.protocols.stop_strings`); with ``think_tags``, a stop string inside a
    thinking block does not cut (:func:`first_stop`).

    Example: ``cut_at_stop("ตอบ: 42\\n\\nQuestion: x", [":", "Question:"])`` -> ``"ตอบ"``;
    ``cut_at_stop("<think>a: b</think>42: c", ":", think_tags=("<think>", "</think>"))`` -> ``"<think>a: b</think>42"``.
    """
    stops = stop_strings(stop)  # one string is one stop string; anything but strings is refused by name
    at = first_stop(text, stops, think_tags, starts_open=starts_open)
    return text if at is None else text[:at]


def sent_stops(stop: Sequence[str] | str | None, think_tags: ThinkTags | None) -> tuple[str, ...]:
    """The stop strings a server is sent: none when the model thinks (``think_tags``), since a server cuts at the
    first occurrence, thinking or not; the client then cuts the reply with :func:`cut_at_stop`."""
    stops = stop_strings(stop)  # refused by name before any request, sent or not
    return () if think_tags is not None else stops


class StopScanner:
    """Whether the text of a growing token list contains a stop string, checked on the newest tokens only.

    A stop string of ``b`` UTF-8 bytes that is completed by the newest token lies within the last ``b`` tokens
    (every token that is not skipped adds at least one byte), so decoding a window of ``b + 4`` tokens finds it
    across token boundaries; the window's first characters may be a cut multi-byte character (decoded as U+FFFD,
    never part of a stop string). A hit in the window is confirmed on the whole decoded text, so a row never stops
    early (a stop that has slid out of the window is not reported again: the engine stops at the first hit); a
    missed hit only costs more tokens, since the text is cut with :func:`cut_at_stop` at the end anyway. With
    ``think_tags`` the confirmation counts only stop strings outside the thinking (:func:`first_stop`), so a row
    never stops inside an open block.
    Hand-written because transformers' ``StopStringCriteria`` preprocesses the whole vocabulary (262k tokens for
    Gemma 3) for every new set of stop strings.
    """

    def __init__(
        self, decode: Callable[[list[int]], str], stop: Sequence[str] | str | None, think_tags: ThinkTags | None = None
    ) -> None:
        self.decode = decode
        self.stops = stop_strings(stop)
        self.think_tags = think_tags
        self.window = max((len(s.encode("utf-8")) for s in self.stops), default=0) + 4

    def hit(self, tokens: list[int], *, starts_open: bool = False) -> bool:
        """Whether ``tokens`` (the generated tokens so far) decode to a text holding a stop string (outside the
        thinking, with ``think_tags``; ``starts_open``: the text begins inside a block)."""
        if not self.stops:
            return False
        tail = self.decode(tokens[-self.window :])
        if not any(s in tail for s in self.stops):
            return False
        text = self.decode(tokens)
        if self.think_tags is None:
            return any(s in text for s in self.stops)
        return first_stop(text, self.stops, self.think_tags, starts_open=starts_open) is not None
