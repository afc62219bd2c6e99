"""The Thai LLM Leaderboard suite as the registry sees it (issue 30): its name, its tasks keyed by the runner's task
keys, its notebook and data folder. The log-likelihood tasks' hooks are in :mod:`.views`.

Task table: :data:`TASK_KINDS` says which engine runs each task. The generation tasks and MT-Bench Thai (modules
``generation.py``, ``nlg_metrics.py``, ``mt_bench.py``) add their keys there with their kind, and their hooks
beside :class:`~.views.NLUViews` (each hook of NLUViews answers only for the log-likelihood tasks).
"""

from __future__ import annotations

from typing import ClassVar

from thai_eval_utils.core.benchmark import Suite
from thai_eval_utils.thai_llm_leaderboard.tasks import NLU_TASKS
from thai_eval_utils.thai_llm_leaderboard.views import NAME, NLUViews

#: Every task of the suite -> how it is scored, in display order (``--benchmarks thai_llm_leaderboard/<task>``).
#: The log-likelihood tasks: the runner's six (spec 1.1) and the two corrected variants (spec 6.5, 6.6).
#: Generation tasks ("generation") and MT-Bench Thai ("judge") go here at merge.
TASK_KINDS: dict[str, str] = {key: "loglikelihood" for key in NLU_TASKS}


class ThaiLLMLeaderboardSuite(NLUViews, Suite):
    """The Thai LLM Leaderboard (SCB 10X, VISTEC, SEACrowd), scored as its runner scbdatax/seacrowd-eval scores it."""

    name: ClassVar[str] = NAME
    title: ClassVar[str] = "Thai LLM Leaderboard (runner scbdatax/seacrowd-eval)"
    short_title: ClassVar[str] = "Thai LLM Leaderboard tasks"
    position: ClassVar[int] = 40
    tasks: ClassVar[tuple[str, ...]] = tuple(TASK_KINDS)
    notebooks: ClassVar[tuple[str, ...]] = ("thai_llm_leaderboard.ipynb",)
    data_folder: ClassVar[str] = "thai_llm_leaderboard"


SUITE = ThaiLLMLeaderboardSuite()
