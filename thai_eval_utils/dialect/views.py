"""How the Thai dialect benchmark shows in compare and the report (issue 29): its headline scores per item, its items,
its leaderboard cells and figures: the display hooks of :class:`thai_eval_utils.core.benchmark.Suite`."""

from __future__ import annotations


class DialectViews:
    """The display hooks of the Thai dialect suite (mixed into :class:`~.suite.DialectSuite`)."""
