"""The Thai LLM Leaderboard suite as the registry sees it: its name, its tasks keyed by the runner's task
keys, its notebook and data folder. The log-likelihood tasks' hooks are in :mod:`.views`.

Task table: :data:`TASK_KINDS` says which engine runs each task. The generation tasks and MT-Bench Thai (modules
``generation.py``, ``nlg_metrics.py``, ``mt_bench.py``) add their keys there with their kind, and their hooks
beside :class:`~.views.NLUViews` (each hook of NLUViews answers only for the log-likelihood tasks).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from thai_eval_utils.core.benchmark import Headline, Interval, LeaderboardTable, Suite, TokenCounter
from thai_eval_utils.core.runs import StoredRun
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

    # Each hook asks the log-likelihood tasks' views, then the generation tasks' (each answers for its own runs).
    def headlines(self, run: StoredRun, data_dir: Path | None = None) -> list[Headline]:
        return NLUViews.headlines(self, run, data_dir) + self.gen_headlines(run)

    def leaderboard_cells(self, model: str, heads: Sequence[Headline], boot: Interval) -> list[dict[str, Any]]:
        return NLUViews.leaderboard_cells(self, model, heads, boot) + self.gen_cells(model, heads, boot)

    def leaderboard_results(self, run: StoredRun) -> dict[str, dict[str, float]]:
        return {**NLUViews.leaderboard_results(self, run), **self.gen_results(run)}

    def leaderboard_folder(self, key: str) -> str:
        """The runner's category folders (``scripts/transform_result.py:22-26, 66-125``): ``MC`` for M3Exam and
        ThaiExam, ``NLU`` for the other log-likelihood tasks, ``NLG`` for the generation tasks, ``LLM`` for MT-Bench
        Thai's categories (its entries are keyed by category)."""
        if key in NLU_TASKS:
            return NLU_TASKS[key].folder
        return "NLG" if key in NLG_TASKS else "LLM"

    def notebook_parameters(self, tasks: tuple[str, ...], options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The tasks asked for (``make demo``: :data:`DEMO_TASKS`), the run's ``max_new_tokens`` and ``greedy``."""
        if not tasks and (options or {}).get("demo"):
            tasks = DEMO_TASKS
        return {**NLUViews.notebook_parameters(self, tasks, options), **self.gen_parameters(tasks, options)}

    def dry_run(
        self,
        data: Path,
        tokenizer: TokenCounter,
        *,
        tasks: tuple[str, ...] = (),
        limit: int | None,
        max_new_tokens: int | None,
    ) -> list[dict[str, Any]]:
        nlu = [t for t in tasks if t in NLU_TASKS]
        rows = (
            NLUViews.dry_run(self, data, tokenizer, tasks=tuple(nlu), limit=limit, max_new_tokens=max_new_tokens)
            if nlu or not tasks
            else []
        )
        return rows + self.gen_dry_run(data, tokenizer, tasks=tasks, limit=limit, max_new_tokens=max_new_tokens)


SUITE = ThaiLLMLeaderboardSuite()
