"""The ThaiCLI judge's run summary and items table (:func:`~thai_eval_utils.thaicli.judge.judge_answers` writes
them): counts, calls, tokens and costs, the judge's identity, the prompt, repeats and noise floor; one table row per
judgement; the fields a stored judgement takes from its answer row (never in the shared cache:
``judging.run.cache_part``).

The judge's noise floor from repeated judgements (arXiv 2410.04795 section 4; :func:`judge_noise`): per-item spread
and the spread of the ThaiCLI score over k repeats, with seeds ``seed + r`` (method:
:mod:`thai_eval_utils.stats.noise_floor`, docs/statistics.md). Only items judged in every repeat enter (an item with
an unjudged repeat is counted and left out). The ThaiCLI spread uses ``stratum="format"``: each repeat's ThaiCLI is
(factoid mean + instruction mean) / 2.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from thai_eval_utils.backend.openai_client import estimate_cost
from thai_eval_utils.core.protocols import ChatModel
from thai_eval_utils.core.provenance import redact
from thai_eval_utils.stats.noise_floor import item_spread, noise_floor
from thai_eval_utils.thaicli.judge_prompt import TEMPLATE_SHA256, TEMPLATE_VERSION, JudgeTemplate
from thai_eval_utils.thaicli.scores import ThaiCLIScores

#: The columns of the answers table (``generate_answers``) the judge reads and the items table keeps.
ANSWER_COLUMNS = ("id", "format", "theme", "question", "chosen", "rejected", "answer")
#: The fields of a stored judgement that come from its answer row and run, not from the judge (not cached).
ROW_FIELDS = ("id", "format", "theme", "seed", "error", "judgement_key")


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


def complete_repeats(items: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The judged rows of the items judged in every repeat, and the ids of the items left out.

    ``items`` is ``judge_answers(..., repeats=k).items``: one row per (item, repeat), columns ``id, repeat,
    format, score, status``.
    """
    k = items["repeat"].nunique()
    judged = items[items["status"] != "unjudged"]
    n_judged = judged.groupby("id", sort=False)["repeat"].nunique()
    full = set(n_judged[n_judged == k].index)
    left_out = [i for i in dict.fromkeys(items["id"]) if i not in full]
    return judged[judged["id"].isin(full)], left_out


def judge_noise(items: pd.DataFrame, *, level: float = 0.95) -> dict[str, Any] | None:
    """The summary's ``judge_noise`` section; None with fewer than 2 repeats or fewer than 2 complete items.

    Keys: ``n_repeats``, ``n_items`` (judged in every repeat), ``left_out_ids``, ``item_spread`` (per item:
    id, n_repeats, mean, std (ddof=1), range; and their means), ``item_mean`` (the noise floor of the plain
    item mean) and ``thaicli`` (of the ThaiCLI score, per format: its ``repeat_means`` are the ThaiCLI of each
    repeat, ``sd_of_mean`` their sd and ``min_detectable_diff`` the smallest difference between two models,
    each judged once, that exceeds the judge's noise at ``level``).
    """
    if items["repeat"].nunique() < 2:
        return None
    rows, left_out = complete_repeats(items)
    if rows["id"].nunique() < 2:
        return None
    frame = rows[["id", "repeat", "format", "score"]].rename(columns={"id": "key"})
    spread = item_spread(frame)
    floor = noise_floor(frame, level=level)
    thaicli = noise_floor(frame, level=level, stratum="format") if frame["format"].nunique() > 1 else floor
    return {
        "n_repeats": int(items["repeat"].nunique()),
        "n_items": len(spread),
        "left_out_ids": left_out,
        "item_spread": {
            "mean_std": float(spread["std"].mean()),
            "mean_range": float(spread["range"].mean()),
            "max_range": float(spread["range"].max()),
            "n_items_that_vary": int((spread["range"] > 0).sum()),
            "per_item": spread.rename(columns={"key": "id"}).to_dict(orient="records"),
        },
        "item_mean": floor.to_dict(),
        "thaicli": thaicli.to_dict(),
    }
