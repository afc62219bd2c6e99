"""ThaiCLI answer generation (Kim et al., arXiv 2410.04795, section 4): the evaluated model answers every
question through its chat interface; each answer is stored as it finishes, so a rerun generates only what is
missing. The judge-free variant is in :mod:`thai_eval_utils.thaicli.judge_free`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.backend.openai_client import ApiError, stable_identity
from thai_eval_utils.core.protocols import Model
from thai_eval_utils.core.provenance import scrub, sha256_text
from thai_eval_utils.core.runloop import run_items
from thai_eval_utils.core.store import RunStore
from thai_eval_utils.tasks.language import reply_columns, reply_stats
from thai_eval_utils.tasks.thinking import DEFAULT, ThinkingOption, apply_to_model, config_entry, summary_entry

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


def chat_messages(question: str, system_prompt: str | None = None) -> list[dict[str, str]]:
    """The conversation the evaluated model answers: an optional system message, then the question."""
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return [*messages, {"role": "user", "content": question}]


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
    """
    check_columns(df, ITEM_COLUMNS)
    batch_size = batch_size or getattr(model, "concurrency", None) or 8
    settings = {"max_new_tokens": max_new_tokens, "temperature": temperature, "top_p": top_p, "seed": seed}
    identity = stable_identity(dict(model.identity))
    store = RunStore.open(
        model.name,
        "thaicli/answers",
        {"generation": settings, "chat": True, "system_prompt": system_prompt, **config_entry(thinking)},
        model_identity=identity,
        prompt_templates={"system_prompt": system_prompt or ""},
        outputs=outputs,
    )
    with store, apply_to_model(model, thinking) as support:
        return _answer_all(model, df, store, settings, system_prompt, batch_size, identity, progress, thinking, support)


def _answer_all(
    model: Model,
    df: pd.DataFrame,
    store: RunStore,
    settings: dict[str, Any],
    system_prompt: str | None,
    batch_size: int,
    identity: dict[str, Any],
    progress: bool,
    thinking: ThinkingOption = DEFAULT,
    support: dict[str, str] | None = None,
) -> pd.DataFrame:
    """The run of :func:`generate_answers` in its open store: a batch whose request fails after the client's
    retries (an :class:`ApiError`) stays ungenerated (``answer`` None, listed in ``attrs["ungenerated"]`` and the
    summary) and the run goes on; a rerun generates what is missing."""
    keys = [item_key(i, q) for i, q in zip(df["id"], df["question"], strict=True)]

    def answer(rows: list[int]) -> list[dict[str, Any]]:
        replies = model.chat([chat_messages(df["question"].iloc[i], system_prompt) for i in rows], **settings)
        return [
            {"id": df["id"].iloc[i], "format": df["format"].iloc[i], "theme": df["theme"].iloc[i], "answer": text}
            for i, text in zip(rows, replies, strict=True)
        ]

    run = run_items(
        store,
        range(len(df)),
        keys.__getitem__,
        answer,
        batch_size=batch_size,
        desc=f"answers ({model.name})",
        progress=progress,
        tolerate=(ApiError,),
        describe=lambda exc: scrub(str(exc)),
        fields={"answer": str},
    )
    if run.failed:
        warnings.warn(
            f"{len(run.failed)} of {len(df)} answers not generated (the server failed; rerun to retry): "
            f"{next(iter(run.failed.values()))}",
            stacklevel=3,
        )
    records = [run.records[k] for k in keys if k in run.records]
    replies = reply_stats(records, "answer", thinking)
    store.write_summary(
        {
            "n_items": len(df),
            "n_generated_this_run": run.computed,
            "n_ungenerated": len(run.failed),
            "ungenerated": run.failed,
            "generation": settings,
            "model_identity": dict(model.identity),
            "thinking": summary_entry(thinking, support),
            "replies": replies,
        }
    )
    out = df.reset_index(drop=True).copy()
    raw = [run.records[k]["answer"] if k in run.records else None for k in keys]
    cut = reply_columns(raw, thinking)
    out["raw_answer"], out["answer"] = raw, cut["scored"]  # the judge sees the answer with its thinking cut
    out["thinking_unclosed"], out["answer_failed"] = cut["unclosed"], cut["failed"]  # judge_answers: failed -> 0
    out["answer_in_thai"] = cut["in_thai"]
    out.attrs.update(
        model_name=model.name,
        model_identity=identity,
        config_id=store.config_id,
        run_dir=str(store.root),
        ungenerated=sorted(run.failed),
        replies=replies,
        thinking=thinking.signature(),
    )
    return out
