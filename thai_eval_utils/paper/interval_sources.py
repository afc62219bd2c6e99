"""Which published table cells could carry bootstrap intervals: only cells whose per-item data is
public can be resampled; aggregates alone cannot. Lists, per table of the two papers, the per-item files an
interval would need and whether ``data/`` ships them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

#: Published table key (``paper.PUBLISHED_TABLES``) -> (cells that could carry an interval, per-item data needed,
#: path under ``data/`` where such files would be shipped, the function that would compute the interval).
INTERVAL_SOURCES: dict[str, tuple[str, str, str, str]] = {
    "h6": (
        "every task score and the H6 average",
        "each model's per-document results (lm-eval sample logs)",
        "paper_items/thai_h6",
        "compare_runs / stratified_paired_bootstrap",
    ),
    "thaicli": (
        "factoid, instruction, ThaiCLI average",
        "each model's answers and per-item judge scores",
        "paper_items/thaicli",
        "compare_runs / mean_interval",
    ),
    "dialect_auto": (
        "ROUGE-L, BLEU and ΔDiff per model, dialect and task",
        "each model's generations per item (the dialect repository's model outputs) with the benchmark references",
        "paper_items/dialect",
        "compare_runs / corpus_delta_diff_interval / delta_diff_interval",
    ),
    "dialect_preference": (
        "preference counts",
        "per-item, per-annotator preference labels",
        "paper_items/human_eval",
        "preference_share_intervals",
    ),
    "dialect_gen_fluency": (
        "Generation / Fluency scores",
        "per-item, per-annotator ratings",
        "paper_items/human_eval",
        "generation_fluency_intervals",
    ),
    "dialect_kappa": (
        "Cohen's kappa per dialect and task",
        "both annotators' per-item labels",
        "paper_items/human_eval",
        "kappa_intervals",
    ),
}
#: Tables of counts or of data properties (no sampling of model outputs): no interval applies.
NO_INTERVAL = {
    "h6_sizes": "dataset sizes",
    "thaicli_distribution": "question counts",
    "dialect_counts": "item counts",
    "dialect_overlap": "word overlap of the shipped texts (a property of the data, not of a model)",
}


def interval_availability(data_dir: str | Path) -> pd.DataFrame:
    """One row per published table: whether its cells could carry intervals, from which per-item data, and
    whether ``data_dir`` holds that data (a non-empty folder at the listed path)."""
    rows = []
    for key, (cells, needed, rel, how) in INTERVAL_SOURCES.items():
        folder = Path(data_dir) / rel
        shipped = folder.is_dir() and any(folder.iterdir())
        rows.append(
            {
                "table": key,
                "cells": cells,
                "per_item_data_needed": needed,
                "expected_at": f"data/{rel}",
                "shipped": shipped,
                "computed_with": how,
            }
        )
    for key, why in NO_INTERVAL.items():
        rows.append(
            {
                "table": key,
                "cells": f"none: {why}",
                "per_item_data_needed": "",
                "expected_at": "",
                "shipped": False,
                "computed_with": "",
            }
        )
    return pd.DataFrame(rows)
