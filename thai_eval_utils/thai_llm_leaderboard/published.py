"""Published Thai LLM Leaderboard rows (package data ``published/published_results.json``, with their source),
shown beside our runs: accuracy x 100 with its n and the same percentile bootstrap interval our cells carry (an
accuracy k/n is k correct items of n, so its bootstrap needs no per-item file)."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd

from thai_eval_utils.thai_llm_leaderboard.metrics import accuracy_interval

PUBLISHED_FILE = "published_results.json"


@cache
def published_results() -> dict[str, Any]:
    """The package data: ``source`` and ``models`` (model id -> folder -> task key -> metric -> value)."""
    path = resources.files("thai_eval_utils.thai_llm_leaderboard").joinpath("published", PUBLISHED_FILE)
    return json.loads(path.read_text("utf-8"))


def published_accuracy_rows() -> pd.DataFrame:
    """One row per published (model, log-likelihood task): ``model, task, value`` (x 100), ``n``, ``correct``
    (k = round(accuracy x n)), ``ci_low, ci_high`` (x 100), ``source``."""
    data, rows = published_results(), []
    for model, folders in data["models"].items():
        for folder in ("NLU", "MC"):
            for task, entry in (folders.get(folder) or {}).items():
                n = int(entry["n"])
                k = int(round(entry["accuracy"] * n))
                iv = accuracy_interval(np.r_[np.ones(k), np.zeros(n - k)])
                low, high = (None, None) if iv is None else (100 * iv.low, 100 * iv.high)
                rows.append((model, task, 100 * entry["accuracy"], n, k, low, high, "published"))
    return pd.DataFrame(rows, columns=["model", "task", "value", "n", "correct", "ci_low", "ci_high", "source"])
