"""The Thai-H6 benchmark in the export formats and before a run: its Thai LLM Leaderboard entries,
Parquet details, lm-evaluation-harness task, the dry run, its notebooks' parameters and the demo's few-shot seed
comparison: the export and run hooks of :class:`thai_eval_utils.core.benchmark.Suite`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from thai_eval_utils.core.benchmark import DemoComparison, LmEvalTask, TokenCounter, score_value
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.h6 import lm_eval_export
from thai_eval_utils.h6 import tasks as T
from thai_eval_utils.h6 import variants as V
from thai_eval_utils.h6.evaluation import DocumentRequests, document_requests
from thai_eval_utils.h6.protocol import protocol_from

#: The demo's comparison: Thai-H6 run again with another few-shot seed on the same few items (the log-likelihood
#: tasks whose draws depend on the seed), then compared with the first run: a difference that must not be significant.
DEMO_COMPARE_TASKS = ("th_arc", "th_hellaswag", "th_winogrande")
DEMO_COMPARE_SEEDS = (42, 7)  # LB's own seed, and another


def _prompt_counts(docs: list[DocumentRequests], tokenizer: TokenCounter) -> dict[str, Any]:
    """A generating task's prompt tokens (``fed_tokens``) and characters: each document's prompt, or the chat it
    sends (:attr:`~.tasks.DocRequests.messages`: a variant's) as the model's chat template renders it."""
    if not any(d.requests.messages for d in docs):
        prompts = [d.requests.prompt for d in docs]
        return {"fed_tokens": tokenizer.count(prompts), "prompt_chars": sum(len(p) for p in prompts)}
    chats = [[{"role": r, "content": c} for r, c in d.requests.messages] for d in docs]
    return {
        "fed_tokens": tokenizer.count_chats(chats),
        "prompt_chars": sum(len(m["content"]) for chat in chats for m in chat),
    }


class H6Exports:
    """The export and run hooks of the Thai-H6 suite (mixed into :class:`~.suite.H6Suite`)."""

    name: ClassVar[str]
    #: Per-item metric fields of Thai-H6 records (the Parquet details' ``metrics``).
    detail_metrics: ClassVar[frozenset[str]] = frozenset(m for ms in T.TASK_METRICS.values() for m in ms)

    # ------------------------------------------------------------------------------------------------ exports
    def leaderboard_results(self, run: StoredRun) -> dict[str, dict[str, float]]:
        """``{<task>: every stored score on a 0-1 scale}`` (MMLU: acc_macro / acc_micro too); nothing for a labelled
        variant's run (``h6.variants``: not the paper's protocol, never a leaderboard number)."""
        if run.task not in T.TASK_SPECS:
            return {}
        scores = (run.summary or {}).get("scores") or {}
        spec = T.get_task(run.task)
        return {spec.name: {m: v for m, e in scores.items() if (v := score_value(e)) is not None}}

    def leaderboard_summary(self, results: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
        """The Thai-H6 average (0-100) of the six headline scores, only when all six tasks are present."""
        heads = [results.get(t, {}).get(T.get_task(t).headline) for t in T.TASKS]
        if any(h is None for h in heads):  # a task missing, or its headline
            return {}
        return {self.name: {"average": 100 * sum(heads) / len(heads)}}  # type: ignore[arg-type]

    def lm_eval_task(self, run: StoredRun) -> str | None:
        """Every Thai-H6 task exports under its own name (``th_arc`` ...)."""
        if run.family != self.name:
            return None
        try:
            return T.get_task(run.task).name
        except ValueError:
            return None

    def lm_eval_export(self, run: StoredRun, data: Path | None) -> LmEvalTask:
        """The run rebuilt as lm-eval's task (:mod:`.lm_eval_export`); ``data``: a Thai-H6 data root."""
        return lm_eval_export.lm_eval_task(run, data)

    # ---------------------------------------------------------------------------------------------------- run
    def notebook_parameters(self, tasks: tuple[str, ...], options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``tasks`` (when some are asked for); the run's ``max_new_tokens`` reaches the notebook under its own name
        (GSM8K's generation budget, the suite's one generation)."""
        return {"tasks": list(tasks)} if tasks else {}

    def dry_run(
        self,
        data: Path,
        tokenizer: TokenCounter,
        *,
        tasks: tuple[str, ...] = (),
        limit: int | None,
        max_new_tokens: int | None,
        variants: tuple[str, ...] = (),
    ) -> list[dict[str, Any]]:
        """One row per task (the notebook's defaults: LB protocol, no BOS) as the run would run it: a paper task one
        of ``variants`` applies to is counted as that variant (its own name, :func:`~.variants.spec_for`).
        Documents and log-likelihood requests built by :func:`~thai_eval_utils.h6.document_requests` as the run
        builds them, their tokens (fed / tree); a generating task's prompt tokens (a chat variant's turns through
        the chat template) and generation budget."""
        protocol = protocol_from("lb", add_bos_token=False, max_new_tokens=max_new_tokens, variants=variants)
        rows = []
        for task in tasks or T.TASKS:
            spec = V.spec_for(task, protocol)
            docs = document_requests(spec.name, data, protocol, limit=limit)
            row: dict[str, Any] = {"benchmark": self.name, "task": spec.name, "documents": len(docs)}
            if spec.uses_loglikelihood:
                requests = [pair for d in docs for pair in d.requests.requests]
                row.update(requests=len(requests), prompt_chars=sum(len(c) + len(t) for c, t in requests))
                if (counts := tokenizer.count_requests(requests, add_bos_token=False)) is not None:
                    row.update(fed_tokens=counts["fed"], tree_tokens=counts["tree"])
            else:
                row.update(
                    generations=len(docs), max_new_tokens=protocol.max_new_tokens, **_prompt_counts(docs, tokenizer)
                )
            rows.append(row)
        return rows

    def demo_comparison(self) -> DemoComparison:
        """Thai-H6 again with the second of :data:`DEMO_COMPARE_SEEDS` on :data:`DEMO_COMPARE_TASKS`, compared with
        the first seed's run."""
        seed_a, seed_b = DEMO_COMPARE_SEEDS
        return DemoComparison(
            notebook="thai_h6.ipynb",
            variant=f"fewshot_seed{seed_b}",
            parameters={"tasks": list(DEMO_COMPARE_TASKS), "fewshot_seed": seed_b},
            where_a={"fewshot_seed": seed_a},
            name=f"fewshot_seed{seed_a}_vs_{seed_b}",
        )
