"""What a model is to thai-eval, as typing protocols (PEP 544): every benchmark takes one of these.

- :class:`ChatModel`: what a judge needs: ``name``, ``identity`` and ``chat``; local, served and API
  models all are one.
- :class:`Model`: every model (local weights, a served model, a judge): ``name``, ``identity``, ``chat``
  and ``generate``. ThaiCLI answers and dialect generation need only this.
- :class:`LoglikelihoodModel`: a model that also scores ``(context, continuation)`` pairs with
  lm-evaluation-harness's contract. Thai-H6's multiple-choice tasks and the judge-free ThaiCLI variant need it.
- :class:`TokenizingModel`: a model whose tokenizer and chat template are at hand (local weights), so a prompt's
  length in tokens is known before it is sent. The dialect benchmark caps prompts with it; a model without
  (a served model) gets the API settings.

:func:`stop_strings` says what every ``stop`` argument means (one string is one stop string, a list is several).

Both are ``runtime_checkable``: ``isinstance(model, LoglikelihoodModel)`` is how a benchmark asks whether a
model can do what it needs (it checks that the members exist, not their signatures).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from thai_eval_utils.core.errors import ThaiEvalDataError

#: A JSON-serialisable description of a model (name, source, revision or weights hash, dtype, devices, ...),
#: recorded in every run card and part of every config id.
Identity = Mapping[str, object]
#: One chat conversation: ``[{"role": "system" | "user" | "assistant", "content": str}, ...]``.
Messages = list[dict[str, str]]


@dataclass(frozen=True)
class Reply:
    """One chat reply and what the model said about it: a judge's, or a batch output line's
    (``core.batch_files.reply_of``). An API's :class:`~thai_eval_utils.backend.api_replies.Completion` has the same
    fields; an in-process model knows no fingerprint, finish reason or per-reply token counts (0)."""

    text: str
    model: str | None
    system_fingerprint: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None


@runtime_checkable
class ChatModel(Protocol):
    """A model that replies to chat conversations: a name, an identity for run cards, ``chat`` (a judge needs no more)."""

    name: str

    @property
    def identity(self) -> Identity: ...

    def chat(
        self,
        messages_list: list[Messages],
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        stop: Sequence[str] | str | None = None,
    ) -> list[str]:
        """One reply per conversation, in order, cut before the first stop string."""
        ...


@runtime_checkable
class Model(ChatModel, Protocol):
    """Every model: a name, an identity for run cards, chat replies (:class:`ChatModel`) and raw completions."""

    def generate(
        self,
        prompts: list[str],
        *,
        max_new_tokens: int = 256,
        stop: Sequence[str] | str | None = None,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
    ) -> list[str]:
        """The raw completion of each prompt, in order, cut before the first stop string."""
        ...


@runtime_checkable
class BudgetPerPromptModel(Model, Protocol):
    """A model whose ``chat`` and ``generate`` take ``max_new_tokens`` as one budget per prompt as well as one for
    all (the local engine: each row stops at its own budget and gets the text a call of its own gives), so prompts
    of tasks with different budgets can share one call and its decode steps (``seahelm.pooling``)."""

    budget_per_prompt: bool


@runtime_checkable
class LoglikelihoodModel(Model, Protocol):
    """A model that scores answer choices: lm-evaluation-harness's ``loglikelihood`` contract.

    ``add_bos_token`` says whether a BOS token precedes every context (the leaderboard ran without).
    """

    add_bos_token: bool

    def loglikelihood(self, requests: Sequence[tuple[str, str]], *, progress: bool = True) -> list[tuple[float, bool]]:
        """``(sum of log-probabilities of the continuation's tokens, whether each was the greedy argmax)``."""
        ...


class Encoding(Protocol):
    """What a tokenizer call returns (a transformers ``BatchEncoding`` of one text)."""

    input_ids: list[int]


class Tokenizer(Protocol):
    """The part of a transformers tokenizer thai-eval uses: encode one text, decode token ids."""

    def __call__(self, text: str, *, add_special_tokens: bool = ...) -> Encoding: ...

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = ...) -> str: ...


@runtime_checkable
class TokenizingModel(Model, Protocol):
    """A model with its tokenizer and chat template at hand (``LocalModel``): prompts can be measured in tokens."""

    tokenizer: Tokenizer

    def render_chat(self, messages: Messages) -> str:
        """The prompt text of one conversation under the chat template (generation prompt added)."""
        ...


def stop_strings(stop: object, *, field: str = "stop") -> tuple[str, ...]:
    """The stop strings a ``stop`` argument means (every model's ``chat`` and ``generate``, a declared task's
    ``stop``): one string is one stop string (never its characters), a list or tuple of strings is those strings,
    None is none. Empty strings are dropped (lm-eval's ``generate_until`` skips them too: they would cut every text
    at its start). Anything else is a :class:`ThaiEvalDataError` naming ``field`` and what was found.

    Example: ``stop_strings("###")`` -> ``("###",)``; ``stop_strings(["\\n", ""])`` -> ``("\\n",)``.
    """
    if stop is None:
        return ()
    if isinstance(stop, str):
        return (stop,) if stop else ()
    if isinstance(stop, (list, tuple)) and all(isinstance(s, str) for s in stop):
        return tuple(s for s in stop if s)
    if isinstance(stop, (list, tuple)):
        bad = next(s for s in stop if not isinstance(s, str))
        found = f"a {type(stop).__name__} holding {type(bad).__name__} {bad!r:.60}"
    else:
        found = f"{type(stop).__name__} {stop!r:.60}"
    raise ThaiEvalDataError(f"expected a stop string or a list of stop strings, got {found}", field=field)


def model_label(model: object) -> str:
    """A model's name for messages (its ``name`` when it has one)."""
    return str(getattr(model, "name", model))


def prepare_loglikelihood(model: object) -> None:
    """Before a log-likelihood run opens its run folder: a model with a ``prepare_loglikelihood`` method runs it
    (a served model's request-order probe, ``backend.served.order_probe``), so that a refusal comes before any
    folder is written and what the check found is in the identity the run card records. Other models: nothing."""
    prepare = getattr(model, "prepare_loglikelihood", None)
    if callable(prepare):
        prepare()
