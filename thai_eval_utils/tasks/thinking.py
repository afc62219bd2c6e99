"""Models that think before they answer: the thinking block is cut from a reply before answer
extraction and scoring; the raw reply is stored whole.

One option for every generation task (Thai-H6 GSM8K, ThaiCLI answers, the dialect tasks, declared generation tasks,
the Thai LLM Leaderboard's and SEA-HELM's generation tasks): :class:`ThinkingOption`, applied by
:func:`split_reply`. Its ``rule`` says which reference the cut follows; the references disagree, so each is a
setting and the signature names it (checked against the references' own functions in ``tests/test_thinking.py``):

- ``"strict"`` (the default, ``think:strip(...)``): the closed blocks are removed exactly as lighteval removes them
  (``lighteval/utils/utils.py`` ``remove_reasoning_tags`` at 3fd1526: repeatedly the first open tag to the first
  close tag after it, the text around kept as is, so a reply may think twice); and two cases lighteval leaves in
  the scored text are decided as vLLM's reasoning parsers decide them (``vllm/reasoning/basic_parsers.py``
  ``BaseThinkingReasoningParser.extract_reasoning``, which SEA-HELM relies on: spec ``seahelm_thai.md`` 3.4):
  a close tag with no open tag before it (chat templates such as DeepSeek-R1's and Qwen3-thinking's open the block
  in the prompt) makes everything before it thinking, and an open tag that never closes is a **failed answer**:
  nothing is scored (the parser returns no content, SEA-HELM scores ``""``: a null, wrong answer;
  huggingface/lighteval#869 asked for the same, "graded as incomplete (i.e. empty string)"). lighteval's merged code
  does not do this: its unclosed block stays in the scored text (its test ``test_no_closing_tag``).
- ``"lighteval"`` (``think:lighteval(...)``): ``remove_reasoning_tags`` exactly: closed blocks removed, an unclosed
  block and a close with no open left in the scored text; nothing fails.
- ``"lm-eval"`` (``think:lm-eval(...)``): lm-evaluation-harness's ``think_end_token``
  (``lm_eval/models/utils.py`` ``postprocess_generated_text`` at 4e7e0d4): the text after the **last** close tag,
  leading whitespace stripped (text between two blocks is dropped); a reply with no close tag is kept whole.
- ``strip=False`` (``think:off``): the raw reply is scored (the behaviour before the thinking option existed).

``stop_after_thinking`` (off by default; ``think:...(...,stops:after-think)``) says the model thinks, so a task's stop
strings apply only to the text after its thinking block: the local engine never stops a row inside an open block, and
servers (which cut at the first stop, thinking or not) are sent no stop strings; the reply is cut after the block
(``backend.stops``; lm-evaluation-harness PR 3700). Off, stop strings cut as lm-eval cuts them, wherever they occur.

Every rule counts the replies whose last open tag never closes (:attr:`SplitReply.unclosed`); only ``"strict"``
fails them. The option and its tags go into every score's signature (:meth:`ThinkingOption.signature`); a run's
config carries it only when it is not the default (:func:`config_entry`), so runs stored before the option existed keep
their config ids (a reply without think tags scores the same under every rule but ``lm-eval``'s whitespace).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

#: The think tags of DeepSeek-R1, Qwen3 and gpt-oss's chat templates as vLLM renders them.
DEFAULT_OPEN, DEFAULT_CLOSE = "<think>", "</think>"
#: The rules :func:`split_reply` follows (module docstring).
RULES = ("strict", "lighteval", "lm-eval")
#: ``thai-eval run --thinking`` / the notebooks' ``thinking`` parameter: "strip" is the strict rule.
MODES = ("strip", "lighteval", "lm-eval", "off")
#: What a run records when the model cannot take a setting (summary ``thinking.support``).
NOT_SUPPORTED = "not supported by this backend"


@dataclass(frozen=True)
class ThinkingOption:
    """How a generation task treats thinking.

    Args:
        strip: cut the thinking block before extraction and scoring (False: score the raw reply, the behaviour
            before the thinking option existed).
        open_tag, close_tag: the model's own think tags.
        max_thinking_tokens: a thinking budget where the model supports one (None: none); see
            :func:`apply_to_model`.
        enable_thinking: passed to chat templates that take it (None: not passed).
        rule: ``"strict"`` (default), ``"lighteval"`` or ``"lm-eval"`` (module docstring).
        stop_after_thinking: the model thinks: stop strings apply only after its thinking block (module
            docstring; needs ``strip``). Set for a run on the models that have ``think_stop_tags``.
    """

    strip: bool = True
    open_tag: str = DEFAULT_OPEN
    close_tag: str = DEFAULT_CLOSE
    max_thinking_tokens: int | None = None
    enable_thinking: bool | None = None
    rule: str = "strict"
    stop_after_thinking: bool = False

    def __post_init__(self) -> None:
        if not self.open_tag or not self.close_tag or self.open_tag == self.close_tag:
            raise ValueError(
                f"think tags must be two different non-empty strings, got {self.open_tag!r}, {self.close_tag!r}"
            )
        if self.max_thinking_tokens is not None and (
            isinstance(self.max_thinking_tokens, bool) or int(self.max_thinking_tokens) < 0
        ):
            raise ValueError(f"max_thinking_tokens must be >= 0, got {self.max_thinking_tokens}")
        if self.rule not in RULES:
            raise ValueError(f"unknown thinking rule {self.rule!r}; expected one of {RULES}")
        if self.stop_after_thinking and not self.strip:
            raise ValueError("stop_after_thinking needs a thinking block to wait for: thinking 'off' has none")

    @property
    def mode(self) -> str:
        """``"off"``, ``"strip"`` (the strict rule), ``"lighteval"`` or ``"lm-eval"``."""
        return "off" if not self.strip else ("strip" if self.rule == "strict" else self.rule)

    def signature(self) -> str:
        """The option as a signature part, e.g. ``think:strip(<think>,</think>)``, ``think:lighteval(<think>,
        </think>)`` or ``think:off`` (with ``,budget:N``, ``,enable:True|False`` and ``,stops:after-think`` when
        set)."""
        extra = "".join(
            [
                f",budget:{self.max_thinking_tokens}" if self.max_thinking_tokens is not None else "",
                f",enable:{self.enable_thinking}" if self.enable_thinking is not None else "",
                ",stops:after-think" if self.stop_after_thinking else "",
            ]
        )
        if not self.strip:
            return f"think:off({extra[1:]})" if extra else "think:off"
        return f"think:{self.mode}({self.open_tag},{self.close_tag}{extra})"

    def record(self) -> dict[str, Any]:
        """The option as plain data (run cards, configs, summaries); ``stop_after_thinking`` only when set, so the
        configs of runs stored before it keep their ids."""
        out = asdict(self)
        if not self.stop_after_thinking:
            del out["stop_after_thinking"]
        return out

    @property
    def is_default(self) -> bool:
        return self == ThinkingOption()


#: The default: the strict rule on ``<think>...</think>``, nothing passed to the model.
DEFAULT = ThinkingOption()


@dataclass(frozen=True)
class SplitReply:
    """A reply split into its thinking and its answer.

    ``answer`` is None when the thinking never closed under the strict rule (a failed answer: scored as no answer);
    ``unclosed`` is True when the reply's last open tag has no close tag after it, under every rule.
    """

    raw: str
    answer: str | None
    thinking: str
    unclosed: bool = False

    @property
    def failed(self) -> bool:
        return self.answer is None

    @property
    def scored(self) -> str:
        """The text extraction and metrics read: the answer, or ``""`` for a failed answer."""
        return self.answer if self.answer is not None else ""

    @property
    def has_thinking(self) -> bool:
        """Whether any thinking was found (a block, closed or not, or a close tag)."""
        return self.answer != self.raw or self.unclosed


def _unclosed(raw: str, o: str, c: str) -> bool:
    """Whether the last open tag of ``raw`` has no close tag after it."""
    last = raw.rfind(o)
    return last != -1 and raw.find(c, last + len(o)) == -1


def _lighteval(raw: str, o: str, c: str) -> tuple[str, list[str]]:
    """lighteval's ``remove_reasoning_tags`` for one tag pair (the text left, the blocks removed)."""
    text, removed = raw, []
    while o in text and c in text:
        start = text.find(o)
        end = text.find(c, start)
        if end == -1:
            break
        removed.append(text[start + len(o) : end])
        text = text[:start] + text[end + len(c) :]
    return text, removed


def split_reply(raw: str, option: ThinkingOption = DEFAULT) -> SplitReply:
    """Split ``raw`` by ``option``'s rule (module docstring; no change when ``option.strip`` is False)."""
    if not option.strip:
        return SplitReply(raw, raw, "")
    o, c = option.open_tag, option.close_tag
    unclosed = _unclosed(raw, o, c)
    if option.rule == "lm-eval":
        if c not in raw:
            return SplitReply(raw, raw, "", unclosed)
        head, _, tail = raw.rpartition(c)
        return SplitReply(raw, tail.lstrip(), head.replace(o, ""), unclosed)
    if option.rule == "lighteval":
        text, removed = _lighteval(raw, o, c)
        return SplitReply(raw, text, "\n".join(removed), unclosed)
    thinking: list[str] = []
    rest = raw
    first_close, first_open = rest.find(c), rest.find(o)
    if first_close != -1 and (first_open == -1 or first_close < first_open):
        thinking.append(rest[:first_close])
        rest = rest[first_close + len(c) :]
    text, removed = _lighteval(rest, o, c)
    if unclosed:  # the open block left after the closed ones are cut: its text is thinking, nothing is scored
        tail = text[text.rfind(o) + len(o) :]
        return SplitReply(raw, None, "\n".join([*thinking, *removed, tail]), True)
    return SplitReply(raw, text, "\n".join([*thinking, *removed]), False)


def scored_text(raw: str, option: ThinkingOption = DEFAULT) -> str:
    """The text a metric reads of ``raw``: :attr:`SplitReply.scored`."""
    return split_reply(raw, option).scored


# ----------------------------------------------------------------------------------------- options and runs
def thinking_option(
    thinking: str | ThinkingOption | None = "strip",
    think_tags: str | Sequence[str] | None = None,
    max_thinking_tokens: int | None = None,
    enable_thinking: bool | None = None,
    stop_after_thinking: bool | None = None,
) -> ThinkingOption:
    """The option from ``thai-eval run``'s flags or a notebook's parameters: ``thinking`` one of :data:`MODES`
    (None: "strip"), ``think_tags`` ``"OPEN,CLOSE"`` or a pair (None: ``<think>,</think>``),
    ``stop_after_thinking`` (None: False)."""
    if isinstance(thinking, ThinkingOption):
        return thinking
    mode = thinking or "strip"
    if mode not in MODES:
        raise ValueError(f"thinking must be one of {MODES}, not {thinking!r}")
    if isinstance(think_tags, str):
        tags = [t.strip() for t in think_tags.split(",")]
    else:
        tags = list(think_tags) if think_tags is not None else [DEFAULT_OPEN, DEFAULT_CLOSE]
    if len(tags) != 2:
        raise ValueError(f"think_tags must be two tags 'OPEN,CLOSE', got {think_tags!r}")
    rule = "strict" if mode in ("strip", "off") else mode
    budget = None if max_thinking_tokens is None else int(max_thinking_tokens)
    return ThinkingOption(
        strip=mode != "off",
        open_tag=tags[0],
        close_tag=tags[1],
        max_thinking_tokens=budget,
        enable_thinking=enable_thinking,
        rule=rule,
        stop_after_thinking=bool(stop_after_thinking),
    )


def config_entry(option: ThinkingOption) -> dict[str, Any]:
    """What a run's config gets: ``{"thinking": option.record()}`` when the option is not the default, else
    nothing (runs stored before the option existed keep their config ids and resume)."""
    return {} if option.is_default else {"thinking": option.record()}


def option_of(config: Mapping[str, Any]) -> ThinkingOption:
    """The option a stored run's config says (the default when it has none)."""
    value = config.get("thinking")
    return ThinkingOption(**value) if isinstance(value, Mapping) else DEFAULT


@contextmanager
def apply_to_model(model: Any, option: ThinkingOption) -> Iterator[dict[str, str]]:
    """Hand ``option``'s model settings to ``model`` while a run lasts, then restore them; yields what each setting
    became (recorded in the run's summary as ``thinking.support``).

    ``enable_thinking`` goes into ``model.chat_template_kwargs`` (local models: ``apply_chat_template(...,
    enable_thinking=...)``, as lm-eval's ``chat_template_args``; API and served models: ``extra_body``'s
    ``chat_template_kwargs``, as vLLM and SGLang take it). ``max_thinking_tokens`` goes to
    ``model.thinking_budget`` where the model has one (a served model sends vLLM's ``thinking_token_budget``);
    otherwise it is recorded as :data:`NOT_SUPPORTED` (local models: forcing the close tag after N tokens would need
    a per-row finish reason the generation engine does not report). A model without ``chat_template_kwargs`` (a
    plain completion model, a test fake) records :data:`NOT_SUPPORTED` for ``enable_thinking``.
    ``stop_after_thinking`` sets ``model.think_stop_tags`` (local, served and API models: stop strings wait for the
    thinking block to close; ``backend.stops``), else it is recorded as :data:`NOT_SUPPORTED`. An endpoint model
    (``reasoning_tags``) rejoins a reply whose thinking its server split off (``reasoning_content``) with the
    option's tags, so the stored reply is whole and this module's rule, not the server's, decides what is scored.
    """
    support: dict[str, str] = {}
    saved: dict[str, Any] = {}
    if hasattr(model, "reasoning_tags"):  # an endpoint whose server may split the thinking off: rejoin it
        saved["reasoning_tags"] = model.reasoning_tags
        model.reasoning_tags = (option.open_tag, option.close_tag)
    if option.enable_thinking is not None:
        if hasattr(model, "chat_template_kwargs"):
            saved["chat_template_kwargs"] = model.chat_template_kwargs
            model.chat_template_kwargs = {
                **(model.chat_template_kwargs or {}),
                "enable_thinking": option.enable_thinking,
            }
            support["enable_thinking"] = "chat_template_kwargs"
        else:
            support["enable_thinking"] = NOT_SUPPORTED
    if option.strip and option.stop_after_thinking:
        if hasattr(model, "think_stop_tags"):
            saved["think_stop_tags"] = model.think_stop_tags
            model.think_stop_tags = (option.open_tag, option.close_tag)
            support["stop_after_thinking"] = getattr(model, "think_stop_method", "think_stop_tags")
        else:
            support["stop_after_thinking"] = NOT_SUPPORTED
    if option.max_thinking_tokens is not None:
        if hasattr(model, "thinking_budget"):
            saved["thinking_budget"] = model.thinking_budget
            model.thinking_budget = (option.max_thinking_tokens, option.close_tag)
            support["max_thinking_tokens"] = getattr(model, "thinking_budget_method", "thinking_budget")
        else:
            support["max_thinking_tokens"] = NOT_SUPPORTED
    try:
        yield support
    finally:
        for name, value in saved.items():
            setattr(model, name, value)


def summary_entry(option: ThinkingOption, support: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The summary's ``thinking`` entry: the option, its signature and what the model did with its settings."""
    return {**option.record(), "signature": option.signature(), "support": dict(support or {})}
