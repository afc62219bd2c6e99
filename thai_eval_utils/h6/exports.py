"""The Thai-H6 benchmark in the export formats and before a run (issue 29): its Thai LLM Leaderboard entries,
Parquet details and the dry run: the export and run hooks of :class:`thai_eval_utils.core.benchmark.Suite`."""

from __future__ import annotations


class H6Exports:
    """The export and run hooks of the Thai-H6 suite (mixed into :class:`~.suite.H6Suite`)."""
