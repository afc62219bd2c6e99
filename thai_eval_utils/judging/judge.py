"""A judge is a rubric and any model that can ``chat``: :class:`Judge`, and :func:`judge_one`, one
judgement under the rubric's attempts policy (ask again while the reply does not parse, at most
``params.max_calls`` calls; then the parser's fallback score).

A failed request (after the model's own retries: an API client's 429 / 5xx / timeouts) is never one of those calls
and never a score: it raises, and the judgement stays unjudged. Errors after which no call can succeed (a refused
key: ``Judge.fatal``) end the run as a :class:`~thai_eval_utils.core.errors.JudgeError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from thai_eval_utils.core.protocols import ChatModel, Messages
from thai_eval_utils.core.provenance import scrub
from thai_eval_utils.judging.cache import judgement_key
from thai_eval_utils.judging.rubric import JudgeParams, JudgeRubric, ReplyParser
from thai_eval_utils.judging.sessions import ChatSession


def describe_exception(exc: BaseException) -> str:
    """An error as ``Type: message`` with secrets masked (the default reason of an unjudged judgement)."""
    return scrub(f"{type(exc).__name__}: {exc}")


@dataclass(frozen=True)
class Judge:
    """A rubric and a model: ``Judge(rubric, model)`` judges with any :class:`~thai_eval_utils.core.protocols.ChatModel`
    (``LocalModel`` in-process, ``ServedModel``, ``ApiModel`` with its concurrent async client).

    Args:
        rubric: the templates, the reply parser and the default settings.
        model: the judge model; its ``name`` keys the cache (an API model's id).
        params: the call settings (default ``rubric.params``).
        fatal: errors after which no call can succeed (ThaiCLI: the openai client's bad key, access, model).
        describe: an error -> the secret-free text recorded for an unjudged judgement.
        batch_size: judgements per ``chat`` call of an in-process model (default its ``concurrency``, else 8).
    """

    rubric: JudgeRubric
    model: ChatModel
    params: JudgeParams | None = None
    fatal: tuple[type[BaseException], ...] = ()
    describe: Callable[[BaseException], str] = describe_exception
    batch_size: int | None = None

    @property
    def label(self) -> str:
        """The judge model's name (an API model's id): part of every key, record and run config."""
        return str(self.model.name)

    @property
    def settings(self) -> JudgeParams:
        """The call settings in force."""
        return self.params or self.rubric.params

    def key(self, item: Mapping[str, str], repeat: int = 0) -> str:
        """The cache key of judging ``item`` in repeat ``repeat`` (seed ``settings.seed + repeat``)."""
        return judgement_key(
            self.rubric.key_texts(item),
            judge_model=self.label,
            template_sha256=self.rubric.sha256,
            params=self.settings.for_repeat(repeat).to_dict(),
            repeat=repeat,
        )


def new_usage() -> dict[str, int]:
    """An empty count of answered calls and their tokens (a run's: ``judge_calls_this_run``, tokens, cost)."""
    return {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}


async def judge_one(
    session: ChatSession,
    messages: Messages,
    params: JudgeParams,
    parser: ReplyParser,
    usage: dict[str, int] | None = None,
) -> dict[str, Any]:
    """Ask until a reply parses, at most ``params.max_calls`` calls; the final judgement as a record (status
    ``scored``, or the parser's fallback status and score when no reply parsed). Every answered call is counted in
    ``usage``. Raises the session's error when a request fails (the judgement stays unjudged)."""
    raws: list[str] = []
    tokens = [0, 0]
    last = None
    result = None
    while result is None and len(raws) < params.max_calls:
        last = await session.complete(
            messages, max_tokens=params.max_tokens, temperature=params.temperature, top_p=params.top_p, seed=params.seed
        )
        raws.append(last.text)
        tokens[0] += last.prompt_tokens
        tokens[1] += last.completion_tokens
        if usage is not None:
            usage["requests"] += 1
            usage["prompt_tokens"] += last.prompt_tokens
            usage["completion_tokens"] += last.completion_tokens
        result = parser.parse(last.text)
    score, explanation = result if result is not None else (parser.fallback_score, "")
    return {
        "status": "scored" if result is not None else parser.fallback_status,
        "score": score,
        "explanation": explanation,
        "attempts": len(raws),
        "parse_failures": len(raws) - (result is not None),
        "raw_judgements": raws,
        "token_usage": {"prompt": tokens[0], "completion": tokens[1]},
        "served_model": last.model if last else None,
        "system_fingerprint": last.system_fingerprint if last else None,
        "finish_reason": last.finish_reason if last else None,
    }
