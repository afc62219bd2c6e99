"""The ThaiCLI judge's run summary and items table (:func:`~thai_eval_utils.thaicli.judge.judge_answers` writes
them): counts, calls, tokens and costs, the judge's identity, the prompt, repeats and noise floor; one table row per
judgement; the fields a stored judgement takes from its answer row."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from thai_eval_utils.backend.openai_client import estimate_cost
from thai_eval_utils.core.protocols import ChatModel
from thai_eval_utils.core.provenance import redact
from thai_eval_utils.thaicli.judge_noise import judge_noise
from thai_eval_utils.thaicli.judge_prompt import TEMPLATE_SHA256, TEMPLATE_VERSION, JudgeTemplate
from thai_eval_utils.thaicli.scores import ThaiCLIScores

#: The columns of the answers table (``generate_answers``) the judge reads and the items table keeps.
ANSWER_COLUMNS = ("id", "format", "theme", "question", "chosen", "rejected", "answer")
#: The fields of a stored judgement that come from its answer row and run, not from the judge (not cached).
ROW_FIELDS = ("id", "format", "theme", "seed", "error", "judgement_key")


def judgement_part(record: Mapping[str, Any]) -> dict[str, Any]:
    """A stored judgement without its store key and the fields of its answer row (what the shared cache holds)."""
    return {k: v for k, v in record.items() if k not in ("key", *ROW_FIELDS)}


def item_row(row: pd.Series, repeat: int, key: str, rec: Mapping[str, Any], value: float | None) -> dict[str, Any]:
    """One row of the items table: the answer row's texts and its stored judgement, its score ``value`` (the
    judged metric's value of the judgement: NaN when None, unjudged)."""
    return {
        **{c: row[c] for c in ANSWER_COLUMNS},
        "repeat": repeat,
        "seed": rec.get("seed"),
        "reference_order": rec.get("reference_order"),
        "score": math.nan if value is None else value,
        "status": rec.get("status", "unjudged"),
        "attempts": rec.get("attempts", 0),
        "parse_failures": rec.get("parse_failures", 0),
        "explanation": rec.get("explanation", ""),
        "last_judgement": (rec.get("raw_judgements") or [""])[-1],
        "served_model": rec.get("served_model"),
        "system_fingerprint": rec.get("system_fingerprint"),
        "error": rec.get("error", ""),
        "judgement_key": key,
    }


def repeat_summary(
    n_items: int, items: pd.DataFrame, seeds: list[int | None], template: JudgeTemplate
) -> dict[str, Any]:
    """The summary's prompt, order and repeat entries: counts per item and per judgement, seeds, noise floor."""
    return {
        "n_items": n_items,
        "n_judgements": len(items),
        "unjudged_ids": list(dict.fromkeys(items.loc[items["status"] == "unjudged", "id"])),
        "n_repeats": len(seeds),
        "seeds": seeds,
        "reference_order": template.reference_order,
        "template": template.version,
        "template_sha256": template.sha256,
        "judge_noise": judge_noise(items),
    }


def run_summary(
    items: pd.DataFrame,
    judged: Mapping[str, Mapping[str, Any]],
    judge: ChatModel,
    usage: Mapping[str, int],
    n_from_cache: int,
    n_made: int,
    scores: ThaiCLIScores,
) -> dict[str, Any]:
    """The run's counts, calls, tokens and costs (this run's: ``usage``, the answered calls and their tokens; and all
    its judgements': ``judged``, judgement key -> final record), the judge's identity and the scores."""
    served = sorted({r.get("served_model") for r in judged.values() if r.get("served_model")})
    run_tokens = (usage["prompt_tokens"], usage["completion_tokens"])
    all_tokens = (
        sum((r.get("token_usage") or {}).get("prompt", 0) for r in judged.values()),
        sum((r.get("token_usage") or {}).get("completion", 0) for r in judged.values()),
    )
    price_ids = [*served, judge.name]
    unjudged = items[items["status"] == "unjudged"]
    return redact(
        {
            "n_items": len(items),
            "n_judged": int((items["status"] != "unjudged").sum()),
            "n_unjudged": len(unjudged),
            "unjudged_ids": unjudged["id"].tolist(),
            "unjudged_errors": sorted(set(unjudged["error"])),
            "n_judged_this_run": n_made,
            "n_from_cache": n_from_cache,
            "judge_calls_this_run": usage["requests"],
            "token_usage_this_run": {"prompt": run_tokens[0], "completion": run_tokens[1]},
            "token_usage_all_judgements": {"prompt": all_tokens[0], "completion": all_tokens[1]},
            "cost_usd_this_run": estimate_cost(price_ids, *run_tokens),
            "cost_usd_all_judgements": estimate_cost(price_ids, *all_tokens),
            "judge_model": judge.name,
            "judge_identity": judge.identity,
            "served_models": served,
            "system_fingerprints": sorted(
                {r.get("system_fingerprint") for r in judged.values() if r.get("system_fingerprint")}
            ),
            "template": TEMPLATE_VERSION,
            "template_sha256": TEMPLATE_SHA256,
            "scores": scores.to_dict(),
        }
    )
