"""The ThaiCLI judge's noise floor from repeated judgements (arXiv 2410.04795 section 4): per-item
spread and the spread of the ThaiCLI score over k repeats, with seeds ``seed + r`` (method:
:mod:`thai_eval_utils.stats.noise_floor`, docs/statistics.md).

Only items judged in every repeat enter (an item with an unjudged repeat is counted and left out). The
ThaiCLI spread uses ``stratum="format"``: each repeat's ThaiCLI is (factoid mean + instruction mean) / 2.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from thai_eval_utils.stats.noise_floor import item_spread, noise_floor


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
