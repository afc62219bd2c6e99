"""Per-item tables of every headline score of a stored run, from its ``items.jsonl`` records: each
registered suite says which of its runs hold headline scores and what they are (``Suite.holds_headlines``,
``Suite.headlines``; :mod:`thai_eval_utils.core.benchmark`), so this module names no benchmark.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from thai_eval_utils.core import registry
from thai_eval_utils.core.benchmark import Headline, Kind
from thai_eval_utils.core.runs import StoredRun

__all__ = ["Headline", "Kind", "headlines"]


def headlines(runs: Sequence[StoredRun], *, data_dir: str | Path | None = None) -> list[Headline]:
    """Every headline score of the runs, in the order given (runs of no registered suite, or holding no headline
    scores, give none).

    Args:
        runs: stored runs.
        data_dir: a data root (each suite reads its own folder in it, or this folder when it is that suite's
            folder) for what the records lack, e.g. references; None: where the run cards say the data was.
    """
    root = None if data_dir is None else Path(data_dir)
    out: list[Headline] = []
    for run in runs:
        suite = registry.suite_of(run.benchmark)
        if suite is not None and suite.holds_headlines(run):
            out += suite.headlines(run, root)
    return out
