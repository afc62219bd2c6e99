"""The ThaiCLI benchmark in the export formats and before a run: its Thai LLM Leaderboard entries,
Parquet details and the dry run: the export and run hooks of :class:`thai_eval_utils.core.benchmark.Suite`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from thai_eval_utils.core.benchmark import TokenCounter, score_value
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.thaicli.answers import select_items
from thai_eval_utils.thaicli.data import load_thaicli
from thai_eval_utils.judging.rubric import JudgeParams
from thai_eval_utils.thaicli.judge_prompt import MAX_JUDGE_CALLS as JUDGE_MAX_CALLS
from thai_eval_utils.thaicli.judge_prompt import TEMPLATE_TEXT
from thai_eval_utils.thaicli.judge_free import LL_CONTEXT_TEMPLATE, LL_TARGET_DELIMITER

#: The answer budget per answer (the notebook's default max_new_tokens; its judge_max_calls: ``JUDGE_MAX_CALLS``).
MAX_NEW_TOKENS = 512
#: Thai LLM Leaderboard task key -> the summary scores it carries, per stored task.
LEADERBOARD = {
    "judge": ("thaicli", ("thaicli", "factoid", "instruction")),
    "loglik": ("thaicli_loglik", ("win_raw", "win_norm")),
}


class ThaiCLIExports:
    """The export and run hooks of the ThaiCLI suite (mixed into :class:`~.suite.ThaiCLISuite`)."""

    name: ClassVar[str]
    #: Per-item metric fields: the judge's score; the judge-free task's acc / acc_norm (its win_raw / win_norm; runs
    #: stored before it became a declared task hold win_raw / win_norm themselves).
    detail_metrics: ClassVar[frozenset[str]] = frozenset({"score", "acc", "acc_norm", "win_raw", "win_norm"})

    def leaderboard_results(self, run: StoredRun) -> dict[str, dict[str, float]]:
        """``thaicli``: ThaiCLI, factoid, instruction (the judge's 1-10 means); ``thaicli_loglik``: win_raw,
        win_norm (0-1); nothing for the answers run."""
        if run.family != self.name or run.task not in LEADERBOARD:
            return {}
        key, metrics = LEADERBOARD[run.task]
        scores = (run.summary or {}).get("scores") or {}
        return {key: {m: v for m in metrics if (v := score_value(scores.get(m))) is not None}}

    def notebook_parameters(self, tasks: tuple[str, ...], options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """No judge when tasks are asked for and ``judge`` is not one of them."""
        return {"judge_model": None} if tasks and "judge" not in tasks else {}

    def dry_run(
        self,
        data: Path,
        tokenizer: TokenCounter,
        *,
        tasks: tuple[str, ...] = (),
        limit: int | None,
        max_new_tokens: int | None,
    ) -> list[dict[str, Any]]:
        """Answers to generate, the judge-free log-likelihood pairs, the judge calls (at least one, at most
        :data:`JUDGE_MAX_CALLS` per answer)."""
        items = select_items(load_thaicli(data), limit)
        n = len(items)
        questions, budget = list(items["question"]), max_new_tokens or MAX_NEW_TOKENS
        answers = {"benchmark": self.name, "task": "answers", "documents": n, "generations": n}
        answers |= {"max_new_tokens": budget, "fed_tokens": tokenizer.count(questions)}
        answers["prompt_chars"] = int(sum(len(q) for q in questions))
        texts = list(zip(items["question"], items["chosen"], items["rejected"]))
        requests = [(LL_CONTEXT_TEMPLATE.format(question=q), LL_TARGET_DELIMITER + a) for q, *ab in texts for a in ab]
        loglik: dict[str, Any] = {"benchmark": self.name, "task": "loglik", "documents": n, "requests": len(requests)}
        if (counts := tokenizer.count_requests(requests)) is not None:
            loglik.update(fed_tokens=counts["fed"], tree_tokens=counts["tree"])
        judge = {
            "benchmark": self.name,
            "task": "judge",
            "documents": n,
            "judge_calls": f"{n}-{n * JUDGE_MAX_CALLS}",
            # for cli.dry_run_cost: one call's input is the template, the three texts and the answer (at most
            # its generation budget); not printed without prices
            "judge_prompt_chars": int(sum(len(TEMPLATE_TEXT) + sum(map(len, t)) for t in texts)),
            "judge_answer_tokens": n * budget,
            "judge_max_calls": JUDGE_MAX_CALLS,
            "judge_max_tokens": JudgeParams().max_tokens,
        }
        return [row for row in (answers, loglik, judge) if not tasks or row["task"] in tasks]
