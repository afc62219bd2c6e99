"""How the generation tasks and MT-Bench Thai show in compare, the report and the exports (the hooks of
:class:`thai_eval_utils.core.benchmark.Suite`, beside :class:`~.views.NLUViews`): per-item ROUGE-L (XL-Sum, iApp) or
corpus BLEU (Flores) and per-judgement MT-Bench ratings as headlines, a cell per task with the metric the leaderboard
displays (spec 3.3 end) and per MT-Bench category, and the entries the leaderboard's transform uploads
(``scripts/transform_result.py:66-125``: the NLG metric subset; MT-Bench ``{category: {"avg_rating": v}}``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from thai_eval_utils.core.benchmark import Headline, Interval, LeaderboardTable, TokenCounter
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.stats.cells import cell, corpus_ci, mean_ci
from thai_eval_utils.tasks.thinking import option_of, split_reply
from thai_eval_utils.thai_llm_leaderboard.generation import NLG_TASKS, SUITE_NAME, fill_prompt, load_nlg_rows
from thai_eval_utils.thai_llm_leaderboard.mt_bench import load_questions
from thai_eval_utils.thai_llm_leaderboard.nlg_metrics import RUNNER_BLEU, rouge_rows
from thai_eval_utils.thai_llm_leaderboard.views import dry_row

NLG_TABLE, LLM_TABLE = "thai_llm_leaderboard_nlg", "thai_llm_leaderboard_mt_bench"
MT_BENCH_TASK = "mt_bench_thai"
#: MT-Bench Thai's nine categories as the results spell them (spec 1.4).
MT_BENCH_CATEGORIES = tuple(
    "Writing,Roleplay,Extraction,Reasoning,Math,Coding,STEM,Social Science,Knowledge III".split(",")
)
#: The file name of MT-Bench Thai in the data folder (HF ``ThaiLLM-Leaderboard/mt-bench-thai``).
MT_BENCH_FILE = "mt_bench_thai_full.json"


def _headline(run: StoredRun, metric: str, kind: str, items: pd.DataFrame, **extra: Any) -> Headline:
    """The headline ``thai_llm_leaderboard/<task>/<metric>`` of a run (scale 1: the values are 0-100 already)."""
    return Headline(f"{SUITE_NAME}/{run.task}/{metric}", SUITE_NAME, run.task, kind, 1.0, items, run, **extra)


class GenerationViews:
    """The hooks of the generation tasks and MT-Bench Thai (each answers only for its own runs)."""

    gen_tables: ClassVar[tuple[LeaderboardTable, ...]] = (
        LeaderboardTable(NLG_TABLE, "Thai LLM Leaderboard: generation (the displayed metric, 0-100)", tuple(NLG_TASKS)),
        LeaderboardTable(
            LLM_TABLE,
            "Thai LLM Leaderboard: MT-Bench Thai (mean judge rating, -1 averaged in as the runner does)",
            MT_BENCH_CATEGORIES,
        ),
    )

    def headlines(self, run: StoredRun, data_dir: Path | None = None) -> list[Headline]:
        """NLG: ROUGE-L F1 per item (x100, the runner's tokens) or the corpus BLEU over items (Flores); MT-Bench:
        each judgement's rating (stratum: its category)."""
        if run.task in NLG_TASKS:
            task, recs, thinking = NLG_TASKS[run.task], run.records(), option_of(run.summary or {})
            hyps = [split_reply(str(r["output"]), thinking).scored for r in recs]  # the summary's thinking rule
            refs = [str(r["reference"]) for r in recs]
            keys, inputs = [str(r["key"]) for r in recs], [r.get("prompt", "") for r in recs]
            frame = pd.DataFrame({"key": keys, "input": inputs, "hyp": hyps, "ref": refs})
            if task.task_type == "MT":
                return [_headline(run, "BLEU", "corpus", frame, corpus_metric=RUNNER_BLEU)]
            frame["value"] = rouge_rows(hyps, refs)["rougeL"][:, 2] * 100 if recs else []
            return [
                _headline(run, "ROUGEL", "mean", frame, note="per-item mean; the runner reports a bootstrap median")
            ]
        if run.task != MT_BENCH_TASK:
            return super().headlines(run, data_dir)
        rows = [
            (str(r["key"]), float(r["score"]), r.get("template", ""), r.get("category", ""))
            for r in run.records()
            if r.get("status") in ("scored", "no_rating")
        ]
        frame = pd.DataFrame(rows, columns=["key", "value", "input", "category"]).assign(hyp="", ref="")
        return [_headline(run, "rating", "mean", frame, note="-1 (no rating) averaged in, as the runner")]

    def leaderboard_cells(self, model: str, heads: Sequence[Headline], boot: Interval) -> list[dict[str, Any]]:
        """NLG: the displayed metric of each task (``SacreBLEU`` for Flores when the FLORES-200 model is at hand,
        else the runner's ``BLEU`` with a note); MT-Bench: the mean rating per category."""
        out = []
        for h in (h for h in heads if h.family == SUITE_NAME and h.stratum in NLG_TASKS):
            task, scores = NLG_TASKS[h.stratum], (h.run.summary or {}).get("scores") or {}
            key = task.displayed if task.displayed in scores else ("BLEU" if task.task_type == "MT" else "ROUGEL")
            entry = scores.get(key) or {}
            note = "" if key == task.displayed else f"{task.displayed} not computed offline; the runner's {key} shown"
            if h.kind == "corpus" and key == "BLEU":
                low, high = corpus_ci(list(h.items["hyp"]), list(h.items["ref"]), boot, RUNNER_BLEU)
            else:
                iv = entry.get("interval") or {}
                low, high = (iv.get("low"), iv.get("high")) if key != "ROUGEL" else mean_ci(h, boot)
            v, n, sig = entry.get("value"), entry.get("n"), f"{SUITE_NAME}|{h.stratum}"
            out.append(cell(NLG_TABLE, model, h.stratum, v, n, sig, low=low, high=high, note=note))
        for h in (h for h in heads if h.family == SUITE_NAME and h.stratum == MT_BENCH_TASK):
            for cat, entry in ((h.run.summary or {}).get("scores") or {}).items():
                iv, v, n = entry.get("interval") or {}, entry.get("value"), entry.get("n")
                low, high, sig = iv.get("low"), iv.get("high"), f"{SUITE_NAME}|{MT_BENCH_TASK}"
                out.append(cell(LLM_TABLE, model, cat, v, n, sig, low=low, high=high))
        return out + super().leaderboard_cells(model, heads, boot)

    def leaderboard_results(self, run: StoredRun) -> dict[str, dict[str, float]]:
        """NLG: ``{task: {metric: value}}`` for the metrics the transform uploads that were computed; MT-Bench:
        ``{category: {"avg_rating": value}}`` (the LLM folder's pivot, ``transform_result.py:101-125``)."""
        summary = run.summary or {}
        if run.task in NLG_TASKS:
            values = summary.get("leaderboard") or {}
            return {run.task: {k: float(v) for k, v in values.items() if v is not None}} if values else {}
        if run.task == MT_BENCH_TASK:
            means = (summary.get("metrics_llm") or {}).get("avg_rating") or {}
            return {c: {"avg_rating": float(v)} for c, v in means.items() if v is not None}
        return super().leaderboard_results(run)

    def dry_run(
        self,
        data: Path,
        tokenizer: TokenCounter,
        *,
        tasks: tuple[str, ...] = (),
        limit: int | None,
        max_new_tokens: int | None,
    ) -> list[dict[str, Any]]:
        """Per generation task: items, the prompt tokens, one generation each (512 new tokens at most); MT-Bench:
        two generations and two judge calls per question."""
        budget, rows = max_new_tokens or 512, []
        for key in [t for t in (tasks or tuple(NLG_TASKS)) if t in NLG_TASKS]:
            task = NLG_TASKS[key]
            prompts = [fill_prompt(task, r) for r in load_nlg_rows(task, data / task.data_file)[:limit]]
            n = len(prompts)
            rows.append(dry_row(key, n, n, tokenizer.count(prompts), None, n, budget, 0))
        if (not tasks or MT_BENCH_TASK in tasks) and (data / MT_BENCH_FILE).is_file():
            qs = load_questions(data / MT_BENCH_FILE)[:limit]
            turns = [t for q in qs for t in q.turns]
            n = len(turns)
            rows.append(dry_row(MT_BENCH_TASK, len(qs), n, tokenizer.count(turns), None, n, budget, n))
        return rows + super().dry_run(data, tokenizer, tasks=tasks, limit=limit, max_new_tokens=max_new_tokens)
