"""The Thai LLM Leaderboard suite as the registry sees it: its name, its tasks keyed by the runner's task
keys, its notebook and data folder. The log-likelihood tasks' hooks are in :mod:`.views`.

Task table: :data:`TASK_KINDS` says which engine runs each task. The generation tasks and MT-Bench Thai (modules
``generation.py``, ``nlg_metrics.py``, ``mt_bench.py``) add their keys there with their kind, and their hooks
after :class:`~.views.NLUViews`'s (each hook answers for its own runs and joins the next class's, ``super()``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from thai_eval_utils.core.benchmark import LeaderboardTable, Suite
from thai_eval_utils.thai_llm_leaderboard.gen_views import MT_BENCH_TASK, GenerationViews
from thai_eval_utils.thai_llm_leaderboard.generation import NLG_TASKS
from thai_eval_utils.thai_llm_leaderboard.tasks import NLU_TASKS
from thai_eval_utils.thai_llm_leaderboard.views import NAME, NLUViews

#: Every task of the suite -> how it is scored, in display order (``--benchmarks thai_llm_leaderboard/<task>``).
#: The log-likelihood tasks: the runner's six (spec 1.1) and the two corrected variants (spec 6.5, 6.6).
#: Then the four generation tasks (spec 3) and MT-Bench Thai (spec 4; hooks: :class:`~.gen_views.GenerationViews`).
TASK_KINDS: dict[str, str] = {
    **{key: "loglikelihood" for key in NLU_TASKS},
    **{key: "generation" for key in NLG_TASKS},
    MT_BENCH_TASK: "judge",
}


#: ``make demo``'s slice (its 2 items, 48 greedy tokens): the runner's six log-likelihood tasks and XNLI's corrected
#: variant, and two generation tasks (Thai QA by ROUGE, English -> Thai translation). MT-Bench Thai is left out: with
#: no judge the demo would have the embedded model judge itself, minutes of CPU for ratings that mean nothing.
DEMO_TASKS: tuple[str, ...] = (
    *(key for key, t in NLU_TASKS.items() if t.variant == "runner"),
    "xnli.tha_seacrowd_pairs.corrected",
    "iapp_squad_seacrowd_qa",
    "flores200_eng_Latn_tha_Thai_seacrowd_t2t",
)


class ThaiLLMLeaderboardSuite(NLUViews, GenerationViews, Suite):
    """The Thai LLM Leaderboard (SCB 10X, VISTEC, SEACrowd), scored as its runner scbdatax/seacrowd-eval scores it."""

    name: ClassVar[str] = NAME
    title: ClassVar[str] = "Thai LLM Leaderboard (runner scbdatax/seacrowd-eval)"
    short_title: ClassVar[str] = "Thai LLM Leaderboard tasks"
    position: ClassVar[int] = 40
    tasks: ClassVar[tuple[str, ...]] = tuple(TASK_KINDS)
    notebooks: ClassVar[tuple[str, ...]] = ("thai_llm_leaderboard.ipynb",)
    data_folder: ClassVar[str] = "thai_llm_leaderboard"
    leaderboard_tables: ClassVar[tuple[LeaderboardTable, ...]] = (
        *NLUViews.leaderboard_tables,
        *GenerationViews.gen_tables,
    )

    def leaderboard_folder(self, key: str) -> str:
        """The runner's category folders (``scripts/transform_result.py:22-26, 66-125``): ``MC`` for M3Exam and
        ThaiExam, ``NLU`` for the other log-likelihood tasks, ``NLG`` for the generation tasks, ``LLM`` for MT-Bench
        Thai's categories (its entries are keyed by category)."""
        if key in NLU_TASKS:
            return NLU_TASKS[key].folder
        return "NLG" if key in NLG_TASKS else "LLM"

    def notebook_parameters(self, tasks: tuple[str, ...], options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``tasks`` when some are asked for (the notebook's default: every task; ``make demo``: :data:`DEMO_TASKS`),
        the run's common ``max_new_tokens`` and ``greedy`` under the notebook's names."""
        opts = dict(options or {})
        tasks = DEMO_TASKS if not tasks and opts.get("demo") else tasks
        own = {k: opts[k] for k in ("max_new_tokens", "greedy") if opts.get(k) is not None}
        return {**({"tasks": list(tasks)} if tasks else {}), **own, **super().notebook_parameters(tasks, options)}


SUITE = ThaiLLMLeaderboardSuite()
