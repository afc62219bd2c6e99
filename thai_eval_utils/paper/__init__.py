"""The papers' published tables (``published``: load, re-check every derived cell, rank agreement) and our own
runs beside them (``own_runs``; ``run_choice``: which run each cell shows, and why the others are skipped)."""

from thai_eval_utils.paper.own_runs import (
    DIALECT_DISPLAY,
    RUN_ADAPTERS,
    RUN_RECORD_COLUMNS,
    WITH_RUNS,
    dialect_with_runs,
    expected_sizes,
    h6_with_runs,
    run_records,
    skipped_runs,
    table_with_runs,
    thaicli_with_runs,
)
from thai_eval_utils.paper.published import (
    CENTRAL,
    H6_TASKS,
    PAPER_SOURCE,
    PUBLISHED_TABLES,
    RUN_SOURCE,
    check_published,
    checks_for,
    load_all_published,
    load_published,
    mismatches,
    numeric,
    rank_agreement,
)
from thai_eval_utils.paper.run_choice import SKIP_REASONS, SKIPPED_COLUMNS

__all__ = [
    "CENTRAL",
    "DIALECT_DISPLAY",
    "H6_TASKS",
    "PAPER_SOURCE",
    "PUBLISHED_TABLES",
    "RUN_ADAPTERS",
    "RUN_RECORD_COLUMNS",
    "RUN_SOURCE",
    "SKIPPED_COLUMNS",
    "SKIP_REASONS",
    "WITH_RUNS",
    "check_published",
    "checks_for",
    "dialect_with_runs",
    "expected_sizes",
    "h6_with_runs",
    "load_all_published",
    "load_published",
    "mismatches",
    "numeric",
    "rank_agreement",
    "run_records",
    "skipped_runs",
    "table_with_runs",
    "thaicli_with_runs",
]
