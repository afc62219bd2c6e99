"""ThaiCLI answer generation and the judge-free log-likelihood variant (Kim et al., arXiv 2410.04795, section 4).

``generate_answers`` has the evaluated model answer every question through its chat interface and stores
each answer as it finishes (a rerun generates only what is missing). ``loglikelihood_preferences`` is the
offline, judge-free signal the paper mentions: does the model find the chosen answer more likely than the
rejected one, given the question? ``judge_free_scores`` aggregates it per format and theme.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .api import stable_identity
from .errors import ThaiEvalDataError
from .results import RunStore, Score, sha256_text

#: Judge-free variant: the context is the question under a Thai "Question:/Answer:" frame (คำถาม = question,
#: คำตอบ = answer), the lm-evaluation-harness pattern of a question/answer prompt; the continuation is
#: ``" " + answer`` (lm-eval's target delimiter). Written for thai-eval: the paper names the idea only.
LL_CONTEXT_TEMPLATE = "คำถาม: {question}\nคำตอบ:"
LL_TARGET_DELIMITER = " "
_ITEM_COLUMNS = ("id", "format", "theme", "question", "chosen", "rejected")


def _check(df: pd.DataFrame, columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ThaiEvalDataError(f"the ThaiCLI frame lacks columns {missing}", field=missing[0])


def _item_key(item_id: Any, question: str) -> str:
    """Stable per-item key: the id plus a hash of the question (an edited question is a new item)."""
    return f"{item_id}:{sha256_text(question)[:8]}"


def _batches(seq: list[int], size: int) -> list[list[int]]:
    return [seq[i : i + size] for i in range(0, len(seq), max(1, size))]


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
    model: Any,
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
) -> pd.DataFrame:
    """Answer every question with ``model.chat``; each batch is stored as it finishes and reused on rerun.

    Args:
        model: a ``LocalModel`` or ``ApiModel`` (anything with ``name``, ``identity`` and ``chat``).
        df: ``data.load_thaicli`` output (id, format, theme, question, chosen, rejected).
        outputs: the outputs folder (default ``results.outputs_dir()``).
        max_new_tokens, temperature, top_p, seed: generation settings, recorded in the run config.
        system_prompt: an optional system message (recorded; part of the config id).
        batch_size: conversations per ``model.chat`` call (and per store flush); default: an API model's
            ``concurrency`` (every connection busy), else 8.
        progress: show a tqdm bar.

    Returns:
        ``df`` with an ``answer`` column; ``attrs`` hold model_name, model_identity, config_id, run_dir.
    """
    from tqdm.auto import tqdm

    _check(df, _ITEM_COLUMNS)
    batch_size = batch_size or getattr(model, "concurrency", None) or 8
    settings = {"max_new_tokens": max_new_tokens, "temperature": temperature, "top_p": top_p, "seed": seed}
    identity = stable_identity(dict(model.identity))
    store = RunStore.open(
        model.name,
        "thaicli/answers",
        {"generation": settings, "chat": True, "system_prompt": system_prompt},
        model_identity=identity,
        prompt_templates={"system_prompt": system_prompt or ""},
        outputs=outputs,
    )
    keys = [_item_key(i, q) for i, q in zip(df["id"], df["question"], strict=True)]
    done = {k: r["answer"] for k, r in store.completed().items()}
    todo = [i for i, k in enumerate(keys) if k not in done]
    bar = tqdm(total=len(todo), desc=f"answers ({model.name})", disable=not progress)
    for batch in _batches(todo, batch_size):
        replies = model.chat(
            [chat_messages(df["question"].iloc[i], system_prompt) for i in batch],
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            top_p=top_p,
            seed=seed,
        )
        for i, text in zip(batch, replies, strict=True):
            row = df.iloc[i]
            store.append(keys[i], {"id": row["id"], "format": row["format"], "theme": row["theme"], "answer": text})
            done[keys[i]] = text
        bar.update(len(batch))
    bar.close()
    store.write_summary(
        {"n_items": len(df), "n_generated_this_run": len(todo), "generation": settings, "model_identity": dict(model.identity)}
    )
    out = df.reset_index(drop=True).copy()
    out["answer"] = [done[k] for k in keys]
    out.attrs.update(model_name=model.name, model_identity=identity, config_id=store.config_id, run_dir=str(store.root))
    return out


def loglikelihood_preferences(
    model: Any,
    df: pd.DataFrame,
    *,
    outputs: str | Path | None = None,
    batch_size: int = 16,
    progress: bool = True,
) -> pd.DataFrame:
    """Log-likelihood of the chosen and the rejected answer given the question, per item (resumable).

    Requests follow lm-eval's ``(context, continuation)`` contract with :data:`LL_CONTEXT_TEMPLATE` and
    :data:`LL_TARGET_DELIMITER`. A win is 1 when chosen is more likely, 0.5 on an exact tie, else 0;
    ``win_raw`` compares summed log-likelihoods, ``win_norm`` compares them per character of the
    continuation (lm-eval's ``acc_norm`` normalisation, delimiter included).

    Returns:
        One row per item: id, format, theme, ll_chosen, ll_rejected, chars_chosen, chars_rejected,
        win_raw, win_norm.
    """
    from tqdm.auto import tqdm

    _check(df, _ITEM_COLUMNS)
    store = RunStore.open(
        model.name,
        "thaicli/loglik",
        {"context_template": LL_CONTEXT_TEMPLATE, "target_delimiter": LL_TARGET_DELIMITER},
        model_identity=stable_identity(dict(model.identity)),
        prompt_templates={"context": LL_CONTEXT_TEMPLATE},
        outputs=outputs,
    )
    keys = [_item_key(i, q + "\x00" + c + "\x00" + r) for i, q, c, r in zip(df["id"], df["question"], df["chosen"], df["rejected"], strict=True)]
    done = store.completed()
    todo = [i for i, k in enumerate(keys) if k not in done]
    bar = tqdm(total=len(todo), desc=f"log-likelihoods ({model.name})", disable=not progress)
    for batch in _batches(todo, batch_size):
        requests = []
        for i in batch:
            ctx = LL_CONTEXT_TEMPLATE.format(question=df["question"].iloc[i])
            requests += [(ctx, LL_TARGET_DELIMITER + df["chosen"].iloc[i]), (ctx, LL_TARGET_DELIMITER + df["rejected"].iloc[i])]
        results = model.loglikelihood(requests)
        for j, i in enumerate(batch):
            (ll_c, _), (ll_r, _) = results[2 * j], results[2 * j + 1]
            rec = {"ll_chosen": float(ll_c), "ll_rejected": float(ll_r), "chars_chosen": len(requests[2 * j][1]),
                   "chars_rejected": len(requests[2 * j + 1][1])}  # fmt: skip
            store.append(keys[i], rec)
            done[keys[i]] = rec
        bar.update(len(batch))
    bar.close()
    rows = []
    for (_, row), key in zip(df.iterrows(), keys, strict=True):
        rec = done[key]
        norm_c, norm_r = rec["ll_chosen"] / rec["chars_chosen"], rec["ll_rejected"] / rec["chars_rejected"]
        rows.append({"id": row["id"], "format": row["format"], "theme": row["theme"],
                     **{k: rec[k] for k in ("ll_chosen", "ll_rejected", "chars_chosen", "chars_rejected")},
                     "win_raw": _win(rec["ll_chosen"], rec["ll_rejected"]), "win_norm": _win(norm_c, norm_r)})  # fmt: skip
    out = pd.DataFrame(rows)
    store.write_summary({"n_items": len(out), "n_computed_this_run": len(todo), "scores": judge_free_scores(out).to_dict()})
    out.attrs.update(model_name=model.name, config_id=store.config_id, run_dir=str(store.root))
    return out


def _win(chosen: float, rejected: float) -> float:
    return 1.0 if chosen > rejected else 0.5 if chosen == rejected else 0.0


@dataclass
class JudgeFreeScores:
    """Share of items where chosen beats rejected; the headline values average the two formats like ThaiCLI."""

    win_raw: Score
    win_norm: Score
    by_format: pd.DataFrame
    by_theme: pd.DataFrame

    def to_dict(self) -> dict[str, Any]:
        return {
            "win_raw": self.win_raw.to_dict(),
            "win_norm": self.win_norm.to_dict(),
            "by_format": self.by_format.to_dict(orient="records"),
            "by_theme": self.by_theme.to_dict(orient="records"),
        }

    def __str__(self) -> str:
        return f"{self.win_raw}\n{self.win_norm}"


def _rates(part: pd.DataFrame) -> dict[str, Any]:
    raw, norm = Score.mean("win_raw", part["win_raw"].tolist()), Score.mean("win_norm", part["win_norm"].tolist())
    return {"n": raw.n, "win_raw": raw.value, "win_raw_stderr": raw.stderr, "win_norm": norm.value, "win_norm_stderr": norm.stderr}


def judge_free_scores(prefs: pd.DataFrame) -> JudgeFreeScores:
    """Aggregate :func:`loglikelihood_preferences` per format and per (format, theme).

    The headline ``win_raw``/``win_norm`` are (factoid rate + instruction rate) / 2, the ThaiCLI
    averaging; their stderr is ``sqrt(se_f² + se_i²) / 2``.
    """
    by_format = pd.DataFrame([{"format": f, **_rates(prefs[prefs["format"] == f])} for f in ("factoid", "instruction")])
    by_theme = pd.DataFrame(
        [{"format": f, "theme": t, **_rates(part)} for (f, t), part in prefs.groupby(["format", "theme"], sort=True)],
        columns=["format", "theme", "n", "win_raw", "win_raw_stderr", "win_norm", "win_norm_stderr"],
    )
    headline = {}
    for col in ("win_raw", "win_norm"):
        vals, ses = by_format[col].tolist(), by_format[f"{col}_stderr"].tolist()
        se = math.sqrt(ses[0] ** 2 + ses[1] ** 2) / 2 if all(s is not None and not math.isnan(s) for s in ses) else None
        headline[col] = Score(f"thaicli_loglik/{col}", (vals[0] + vals[1]) / 2, int(by_format["n"].sum()), se,
                              f"context:{sha256_text(LL_CONTEXT_TEMPLATE)[:8]}")  # fmt: skip
    return JudgeFreeScores(headline["win_raw"], headline["win_norm"], by_format, by_theme)


def judge_vs_loglik(judge_by_theme: pd.DataFrame, loglik_by_theme: pd.DataFrame) -> pd.DataFrame:
    """Per (format, theme): the judge's mean score beside the judge-free win rates, one row each.

    Args:
        judge_by_theme: ``judge.thaicli_scores(...).by_theme`` (format, theme, n, mean, stderr).
        loglik_by_theme: ``judge_free_scores(...).by_theme`` (format, theme, n, win_raw, win_norm, ...).
    """
    left = judge_by_theme.rename(columns={"n": "n_judged", "mean": "judge_mean", "stderr": "judge_stderr"})
    right = loglik_by_theme[["format", "theme", "n", "win_raw", "win_norm"]].rename(columns={"n": "n_loglik"})
    return left.merge(right, on=["format", "theme"], how="outer").sort_values(["format", "theme"]).reset_index(drop=True)
