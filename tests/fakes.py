"""The one fake model the tests use: a :class:`~thai_eval_utils.core.protocols.LoglikelihoodModel` whose answers
come from plain functions, and which records every call it gets."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def _refuse(*_: Any) -> Any:
    raise AssertionError("this fake model was not given a function for that call")


class FakeModel:
    """A model whose replies, completions and log-likelihoods are computed by the functions it is given.

    Args:
        name: the model name (its identity is ``{"name": name, "source": "test double"}`` plus ``identity``).
        reply: conversation (list of messages) -> reply text, for ``chat``.
        complete: prompt -> completion text, for ``generate`` (default: ``reply`` on one user message).
        score: (context, continuation) -> (log-likelihood, is_greedy), for ``loglikelihood``.
        add_bos_token: the model's BOS setting (changeable, as a local model's).
        identity: extra identity fields.
        tokenizer: the model's tokenizer (None: none).
        render_chat: conversation -> prompt text under a chat template; given (with ``tokenizer``), the model is a
            :class:`~thai_eval_utils.core.protocols.TokenizingModel` (a local model, to the dialect benchmark).
        fail_on_call: the 1-based number of the call (of any kind) that raises ``RuntimeError("simulated crash")``
            after it is recorded, as a model that dies mid-run.

    ``calls`` records ``(kind, {"n": batch size, **settings})`` per call and ``inputs`` each call's batch
    (conversations, prompts or requests), in call order.
    """

    def __init__(
        self,
        name: str = "fake-model",
        *,
        reply: Callable[[list[dict[str, str]]], str] = _refuse,
        complete: Callable[[str], str] | None = None,
        score: Callable[[str, str], tuple[float, bool]] = _refuse,
        add_bos_token: bool = False,
        identity: dict[str, Any] | None = None,
        tokenizer: Any = None,
        render_chat: Callable[[list[dict[str, str]]], str] | None = None,
        fail_on_call: int | None = None,
    ) -> None:
        self.name = name
        self._identity = {"name": name, "source": "test double", **(identity or {})}
        self._reply, self._score = reply, score
        self._complete = complete or (lambda prompt: reply([{"role": "user", "content": prompt}]))
        self.add_bos_token = add_bos_token
        self.tokenizer = tokenizer
        if render_chat is not None:  # only then does the model satisfy TokenizingModel
            if tokenizer is None:
                raise ValueError("render_chat needs a tokenizer")
            self.render_chat = render_chat
        self.fail_on_call = fail_on_call
        self.calls: list[tuple[str, Any]] = []
        self.inputs: list[list[Any]] = []
        self.requests: list[tuple[str, str]] = []  # every (context, continuation) pair scored, in order

    @property
    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    def _record(self, kind: str, batch: Sequence[Any], settings: dict[str, Any]) -> None:
        self.calls.append((kind, {"n": len(batch), **settings}))
        self.inputs.append(list(batch))
        if self.fail_on_call == len(self.calls):
            raise RuntimeError("simulated crash")

    def chat(self, messages_list: list[list[dict[str, str]]], **kwargs: Any) -> list[str]:
        self._record("chat", messages_list, kwargs)
        return [self._reply(m) for m in messages_list]

    def generate(self, prompts: list[str], **kwargs: Any) -> list[str]:
        self._record("generate", prompts, kwargs)
        return [self._complete(p) for p in prompts]

    def loglikelihood(self, requests: Sequence[tuple[str, str]], *, progress: bool = True) -> list[tuple[float, bool]]:
        self._record("loglikelihood", requests, {})
        self.requests.extend(requests)  # after _record: a crashing call's requests are not scored
        return [self._score(c, x) for c, x in requests]
