"""ThaiCLI answer generation (Kim et al., arXiv 2410.04795, section 4): the evaluated model answers every
question through its chat interface, as a declared generation task (:func:`answers_task`, judged by ThaiCLI's judge)
run by :func:`~thai_eval_utils.tasks.runner.run_task` in the layout these runs were always stored in; each answer is
stored as it finishes, so a rerun generates only what is missing. The judge-free variant is in
:mod:`thai_eval_utils.thaicli.judge_free`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from thai_eval_utils.backend.openai_client import stable_identity
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.protocols import Model
from thai_eval_utils.core.provenance import sha256_text
from thai_eval_utils.core.runloop import RunOutcome
from thai_eval_utils.tasks.declared import GenerationTask
from thai_eval_utils.tasks.language import reply_columns, reply_stats
from thai_eval_utils.tasks.runner import RunLayout, TaskRun, run_task
from thai_eval_utils.tasks.thinking import DEFAULT, ThinkingOption, config_entry, summary_entry
from thai_eval_utils.thaicli.judge_prompt import thaicli_metric

#: The run card's benchmark of the answers runs.
BENCHMARK = "thaicli/answers"
#: The columns of a ThaiCLI item frame (``load_thaicli``) that answering and the judge-free variant need.
ITEM_COLUMNS = ("id", "format", "theme", "question", "chosen", "rejected")


def check_columns(df: pd.DataFrame, columns: Sequence[str]) -> None:
    """Raise ThaiEvalDataError naming the first of ``columns`` the frame lacks."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ThaiEvalDataError(f"the ThaiCLI frame lacks columns {missing}", field=missing[0])


def item_key(item_id: Any, question: str) -> str:
    """Stable per-item key: the id plus a hash of the question (an edited question is a new item)."""
    return f"{item_id}:{sha256_text(question)[:8]}"


def select_items(df: pd.DataFrame, limit: int | None) -> pd.DataFrame:
    """The first ``limit`` questions of each format, in file order (None: all). Both formats stay present,
    since ThaiCLI averages the two."""
    if limit is None:
        return df.reset_index(drop=True)
    out = df.groupby("format", sort=False).head(int(limit)).reset_index(drop=True)
    out.attrs.update(df.attrs)
    return out


def answers_task(settings: Mapping[str, Any], system_prompt: str | None = None) -> GenerationTask:
    """The answers as a declared generation task: each question one user turn (after ``system_prompt``, when given),
    the decoding of ``settings`` (max_new_tokens, temperature, top_p, seed), judged by ThaiCLI's judge against the
    chosen reference (:func:`~thai_eval_utils.thaicli.judge_prompt.thaicli_metric`; the judging runs on its own:
    ``judge.judge_answers``)."""
    escaped = (system_prompt or "").replace("{", "{{").replace("}", "}}")  # its braces literal in the template
    system = [{"role": "system", "content": escaped}] if system_prompt else []
    return GenerationTask(
        name="thaicli_answers",
        data="",  # the items come from thaicli.load_thaicli (items=)
        prompt=[*system, {"role": "user", "content": "{question}"}],
        reference="chosen",
        metrics=thaicli_metric(),
        title="ThaiCLI answers (judged 1-10 against the chosen and rejected references)",
        **settings,
    )


def generate_answers(
    model: Model,
    df: pd.DataFrame,
    *,
    outputs: str | Path | None = None,
    max_new_tokens: int = 512,
    temperature: float = 0.0,
    top_p: float = 1.0,
    seed: int | None = 1234,
    system_prompt: str | None = None,
    batch_size: int | None = None,
    progress: bool = True,
    thinking: ThinkingOption = DEFAULT,
) -> pd.DataFrame:
    """Answer every question with ``model.chat``; each batch is stored as it finishes and reused on rerun.

    Args:
        model: a ``LocalModel`` or ``ApiModel`` (any :class:`~thai_eval_utils.core.protocols.Model`).
        df: ``data.load_thaicli`` output (id, format, theme, question, chosen, rejected).
        outputs: the outputs folder (default :func:`~thai_eval_utils.core.provenance.outputs_dir`: ``$THAI_EVAL_OUTPUTS`` or ``outputs``).
        max_new_tokens, temperature, top_p, seed: generation settings, recorded in the run config.
        system_prompt: an optional system message (recorded; part of the config id).
        batch_size: conversations per ``model.chat`` call (and per store flush); default: an API model's
            ``concurrency`` (every connection busy), else 8.
        progress: show a tqdm bar.
        thinking: the thinking option (:mod:`thai_eval_utils.tasks.thinking`): the stored record keeps the
            raw reply whole; the judge sees the answer with the thinking cut (a never-closed block under the strict
            rule is a failed answer: ``judge_answers`` scores it 0 without a call);
            in the config only when not the default; ``enable_thinking`` goes to the chat template.

    Returns:
        ``df`` with ``answer`` (what the judge sees: the reply with its thinking cut), ``raw_answer`` (the stored
        reply), ``thinking_unclosed``, ``answer_failed`` (scored 0 by ``judge_answers`` without a judge call) and
        ``answer_in_thai`` columns; ``attrs`` hold model_name, model_identity,
        config_id, run_dir and ``replies`` (``tasks.language.reply_stats``: unclosed thinking, answers in Thai).

    A batch whose request fails after the client's retries (an ``ApiError``) stays ungenerated (``answer`` None,
    listed in ``attrs["ungenerated"]`` and the summary) and the run goes on; a rerun generates what is missing.
    """
    check_columns(df, ITEM_COLUMNS)
    df = df.reset_index(drop=True)
    settings = {"max_new_tokens": max_new_tokens, "temperature": temperature, "top_p": top_p, "seed": seed}
    identity = stable_identity(dict(model.identity))
    keys = [item_key(i, q) for i, q in zip(df["id"], df["question"], strict=True)]
    system = [{"role": "system", "content": system_prompt}] if system_prompt else []  # then the question
    items = [
        {"id": k, "item_id": i, "format": f, "theme": t, "messages": [*system, {"role": "user", "content": q}]}
        for k, i, f, t, q in zip(keys, df["id"], df["format"], df["theme"], df["question"], strict=True)
    ]

    def summarize(records: list[dict[str, Any]], support: Mapping[str, str], run: RunOutcome) -> dict[str, Any]:
        """The summary these runs always had: counts, the failed calls, settings, identity, thinking, replies."""
        return {
            "n_items": len(df),
            "n_generated_this_run": run.computed,
            "n_ungenerated": len(run.failed),
            "ungenerated": run.failed,
            "generation": settings,
            "model_identity": dict(model.identity),
            "thinking": summary_entry(thinking, support),
            "replies": reply_stats(records, "answer", thinking),
        }

    layout = RunLayout(
        BENCHMARK,
        {"generation": settings, "chat": True, "system_prompt": system_prompt, **config_entry(thinking)},
        lambda it, text: {  # the chat as sent (system prompt, question) beside the reply
            "id": it["item_id"],
            "format": it["format"],
            "theme": it["theme"],
            "messages": it["messages"],
            "answer": text,
        },
        {"answer": str},
        summarize,
        call=lambda chunk: model.chat([it["messages"] for it in chunk], **settings),
        templates={"system_prompt": system_prompt or ""},
        model_identity=identity,
        judged=False,  # judge.judge_answers judges the answers in a run of its own
    )
    task = answers_task(settings, system_prompt)
    run = run_task(
        model,
        task,
        items=items,
        layout=layout,
        batch_size=batch_size,
        outputs=outputs,
        progress=progress,
        thinking=thinking,
    )
    return _answers_frame(model, df, keys, run, identity, thinking)


def _answers_frame(
    model: Model, df: pd.DataFrame, keys: list[str], run: TaskRun, identity: dict[str, Any], thinking: ThinkingOption
) -> pd.DataFrame:
    """``df`` with the stored replies (None where ungenerated, with a warning) and what the judge sees of them."""
    failed = run.summary["ungenerated"]
    if failed:
        warnings.warn(
            f"{len(failed)} of {len(df)} answers not generated (the server failed; rerun to retry): "
            f"{next(iter(failed.values()))}",
            stacklevel=3,
        )
    stored = iter(run.records)  # the finished items' records in item order: every item but the failed ones
    raw = [None if k in failed else next(stored)["answer"] for k in keys]
    cut = reply_columns(raw, thinking)
    out = df.copy()
    out["raw_answer"], out["answer"] = raw, cut["scored"]  # the judge sees the answer with its thinking cut
    out["thinking_unclosed"], out["answer_failed"] = cut["unclosed"], cut["failed"]  # judge_answers: failed -> 0
    out["answer_in_thai"] = cut["in_thai"]
    out.attrs.update(
        model_name=model.name,
        model_identity=identity,
        config_id=run.config_id,
        run_dir=str(run.run_dir),
        ungenerated=sorted(failed),
        replies=run.summary["replies"],
        thinking=thinking.signature(),
    )
    return out
