"""The Thai dialect benchmark in the export formats and before a run: its Thai LLM Leaderboard entries,
Parquet details and the dry run: the export and run hooks of :class:`thai_eval_utils.core.benchmark.Suite`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from thai_eval_utils.core.benchmark import DETAIL_INPUTS, TokenCounter, score_value
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.dialect.data import load_dialect
from thai_eval_utils.dialect.generation import PAPER_MAX_NEW_TOKENS, build_prompt, load_prompts, select_items


class DialectExports:
    """The export and run hooks of the Thai dialect suite (mixed into :class:`~.suite.DialectSuite`)."""

    name: ClassVar[str]
    #: A record's dialect is part of what was asked.
    detail_inputs: ClassVar[frozenset[str]] = DETAIL_INPUTS | {"dialect"}

    def leaderboard_results(self, run: StoredRun) -> dict[str, dict[str, float]]:
        """``dialect_<dialect>_<task>``: ``{metric: value}`` as the summary stores them (x100, as the paper prints)."""
        out: dict[str, dict[str, float]] = {}
        for key, entry in ((run.summary or {}).get("scores") or {}).items():
            parts = str(key).split("/")
            if len(parts) == 3 and (v := score_value(entry)) is not None:
                out.setdefault(f"{self.name}_{parts[0]}_{parts[1]}", {})[parts[2]] = v
        return out

    def dry_run(
        self,
        data: Path,
        tokenizer: TokenCounter,
        *,
        tasks: tuple[str, ...] = (),
        limit: int | None,
        max_new_tokens: int | None,
    ) -> list[dict[str, Any]]:
        """One generation per item, per task family (all dialects together), with the prompts' tokens."""
        items = select_items(load_dialect(data), limit=limit)
        prompts = load_prompts()
        rows = []
        for task, group in items.groupby("task", sort=False):
            texts = [build_prompt(item, prompts) for item in group.to_dict("records")]
            rows.append(
                {
                    "benchmark": self.name,
                    "task": str(task),
                    "documents": len(group),
                    "generations": len(group),
                    "max_new_tokens": max_new_tokens or PAPER_MAX_NEW_TOKENS,
                    "fed_tokens": tokenizer.count(texts),
                    "prompt_chars": sum(len(t) for t in texts),
                }
            )
        return rows
