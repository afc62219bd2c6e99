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
        fail_on_call: raise ``RuntimeError("simulated crash")`` on that (1-based) call of any kind, as a model
            that dies mid-run (the call is recorded, its requests are not).

    ``requests`` collects every ``(context, continuation)`` pair scored, in order.
    """

    def __init__(self, name: str = "fake-model", *, reply: Callable[[list[dict[str, str]]], str] = _refuse,
                 complete: Callable[[str], str] | None = None,
                 score: Callable[[str, str], tuple[float, bool]] = _refuse,
                 add_bos_token: bool = False, identity: dict[str, Any] | None = None, tokenizer: Any = None,
                 fail_on_call: int | None = None) -> None:
        self.name = name
        self._identity = {"name": name, "source": "test double", **(identity or {})}
        self._reply, self._score = reply, score
        self._complete = complete or (lambda prompt: reply([{"role": "user", "content": prompt}]))
        self.add_bos_token = add_bos_token
        self.tokenizer = tokenizer
        self.calls: list[tuple[str, Any]] = []
        self.requests: list[tuple[str, str]] = []
        self.fail_on_call = fail_on_call

    def _called(self, kind: str, info: dict[str, Any]) -> None:
        self.calls.append((kind, info))
        if self.fail_on_call == len(self.calls):
            raise RuntimeError("simulated crash")

    @property
    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    def chat(self, messages_list: list[list[dict[str, str]]], **kwargs: Any) -> list[str]:
        self._called("chat", {"n": len(messages_list), **kwargs})
        return [self._reply(m) for m in messages_list]

    def generate(self, prompts: list[str], **kwargs: Any) -> list[str]:
        self._called("generate", {"n": len(prompts), **kwargs})
        return [self._complete(p) for p in prompts]

    def loglikelihood(self, requests: Sequence[tuple[str, str]], *, progress: bool = True) -> list[tuple[float, bool]]:
        self._called("loglikelihood", {"n": len(requests)})
        self.requests.extend(requests)
        return [self._score(c, x) for c, x in requests]
