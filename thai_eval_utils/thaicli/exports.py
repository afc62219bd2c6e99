"""The ThaiCLI benchmark in the export formats and before a run (issue 29): its Thai LLM Leaderboard entries,
Parquet details and the dry run: the export and run hooks of :class:`thai_eval_utils.core.benchmark.Suite`."""

from __future__ import annotations


class ThaiCLIExports:
    """The export and run hooks of the ThaiCLI suite (mixed into :class:`~.suite.ThaiCLISuite`)."""
