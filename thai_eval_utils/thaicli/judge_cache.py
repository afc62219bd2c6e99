"""The ThaiCLI judgement cache (ThaiCLI spec: resume, no failure cached as final): the shared, append-only
:class:`~thai_eval_utils.judging.cache.JudgementCache` at ``<outputs>/cache/thaicli_judgements.jsonl``, and
ThaiCLI's key of a judgement (its four texts; the key every earlier version wrote, so old caches keep resuming).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from thai_eval_utils.judging.cache import CACHE_FORMAT, FINAL_STATUSES, JudgementCache, is_final
from thai_eval_utils.judging.cache import judgement_key as rubric_judgement_key

__all__ = ["CACHE_FORMAT", "CACHE_NAME", "FINAL_STATUSES", "JudgementCache", "is_final", "judgement_key"]

#: The judgement cache's file in ``<outputs>/cache/`` (:meth:`~thai_eval_utils.core.store.RunStore.shared_file`).
CACHE_NAME = "thaicli_judgements.jsonl"


def judgement_key(
    question: str,
    chosen: str,
    rejected: str,
    answer: str,
    *,
    judge_model: str,
    template_sha256: str,
    params: Mapping[str, Any],
    repeat: int = 0,
) -> str:
    """SHA-256 of everything that decides a ThaiCLI judgement: the four texts, judge model, prompt hash and parameters
    (and the repeat index from repeat 1 on): :func:`thai_eval_utils.judging.cache.judgement_key` of the ThaiCLI rubric."""
    texts = {"question": question, "chosen": chosen, "rejected": rejected, "answer": answer}
    return rubric_judgement_key(
        texts, judge_model=judge_model, template_sha256=template_sha256, params=params, repeat=repeat
    )
