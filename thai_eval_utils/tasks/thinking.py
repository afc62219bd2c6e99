"""Models that think before they answer (issue 31): the thinking block is cut from a reply before answer
extraction and scoring; the raw reply is stored whole.

One rule for every generation task (Thai-H6 GSM8K, ThaiCLI answers, the dialect tasks, declared generation tasks,
the Thai LLM Leaderboard's and SEA-HELM's generation tasks):

- every closed block ``<think>...</think>`` is removed (a reply may think twice);
- a close tag with no open tag before it (chat templates that open the block in the prompt) makes everything
  before it thinking;
- an open tag that never closes is a **failed answer**: nothing is scored from it (lighteval's rule), and the
  runs count it.

The option and its tags go into every score's signature (:meth:`ThinkingOption.signature`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

#: The think tags of DeepSeek-R1, Qwen3 and gpt-oss's chat templates as vLLM renders them.
DEFAULT_OPEN, DEFAULT_CLOSE = "<think>", "</think>"


@dataclass(frozen=True)
class ThinkingOption:
    """How a generation task treats thinking.

    Args:
        strip: cut the thinking block before extraction and scoring (False: score the raw reply, the behaviour
            before issue 31).
        open_tag, close_tag: the model's own think tags.
        max_thinking_tokens: a thinking budget where the model supports one (None: none).
        enable_thinking: passed to chat templates that take it (None: not passed).
    """

    strip: bool = True
    open_tag: str = DEFAULT_OPEN
    close_tag: str = DEFAULT_CLOSE
    max_thinking_tokens: int | None = None
    enable_thinking: bool | None = None

    def __post_init__(self) -> None:
        if not self.open_tag or not self.close_tag or self.open_tag == self.close_tag:
            raise ValueError(f"think tags must be two different non-empty strings, got {self.open_tag!r}, "
                             f"{self.close_tag!r}")
        if self.max_thinking_tokens is not None and self.max_thinking_tokens < 0:
            raise ValueError(f"max_thinking_tokens must be >= 0, got {self.max_thinking_tokens}")

    def signature(self) -> str:
        """The option as a signature part, e.g. ``think:strip(<think>,</think>)`` or ``think:off``."""
        if not self.strip:
            return "think:off"
        extra = "".join([f",budget:{self.max_thinking_tokens}" if self.max_thinking_tokens is not None else "",
                         f",enable:{self.enable_thinking}" if self.enable_thinking is not None else ""])
        return f"think:strip({self.open_tag},{self.close_tag}{extra})"

    def record(self) -> dict[str, Any]:
        """The option as plain data (run cards, configs)."""
        return asdict(self)


@dataclass(frozen=True)
class SplitReply:
    """A reply split into its thinking and its answer.

    ``answer`` is None when the thinking never closed (a failed answer: scored as no answer).
    """

    raw: str
    answer: str | None
    thinking: str

    @property
    def failed(self) -> bool:
        return self.answer is None

    @property
    def scored(self) -> str:
        """The text extraction and metrics read: the answer, or ``""`` for a failed answer."""
        return self.answer if self.answer is not None else ""


def split_reply(raw: str, option: ThinkingOption = ThinkingOption()) -> SplitReply:
    """Split ``raw`` by the rule in this module's docstring (no change when ``option.strip`` is False)."""
    if not option.strip:
        return SplitReply(raw, raw, "")
    o, c = option.open_tag, option.close_tag
    thinking: list[str] = []
    rest = raw
    first_close, first_open = rest.find(c), rest.find(o)
    if first_close != -1 and (first_open == -1 or first_close < first_open):
        thinking.append(rest[:first_close])
        rest = rest[first_close + len(c):]
    out: list[str] = []
    while True:
        start = rest.find(o)
        if start == -1:
            out.append(rest)
            break
        end = rest.find(c, start + len(o))
        if end == -1:
            thinking.append(rest[start + len(o):])
            return SplitReply(raw, None, "".join(thinking))
        out.append(rest[:start])
        thinking.append(rest[start + len(o): end])
        rest = rest[end + len(c):]
    return SplitReply(raw, "".join(out), "\n".join(thinking))
