"""ThaiCLI judge-free variant (Kim et al., arXiv 2410.04795, section 4 names the idea; the frame is ours).

``loglikelihood_preferences`` asks, offline and without a judge: does the model find the chosen answer more
likely than the rejected one, given the question? ``judge_free_scores`` aggregates it per format and theme,
and ``judge_vs_loglik`` sets it beside the judge's scores.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from thai_eval_utils.backend.openai_client import stable_identity
from thai_eval_utils.core.protocols import LoglikelihoodModel
from thai_eval_utils.core.provenance import Score, sha256_text
from thai_eval_utils.core.runloop import run_items
from thai_eval_utils.core.store import RunStore
from thai_eval_utils.thaicli.answers import ITEM_COLUMNS, check_columns, item_key

#: Judge-free variant: the context is the question under a Thai "Question:/Answer:" frame (คำถาม = question,
#: คำตอบ = answer), the lm-evaluation-harness pattern of a question/answer prompt; the continuation is
#: ``" " + answer`` (lm-eval's target delimiter). Written for thai-eval: the paper names the idea only.
LL_CONTEXT_TEMPLATE = "คำถาม: {question}\nคำตอบ:"
LL_TARGET_DELIMITER = " "


def loglikelihood_preferences(
    model: LoglikelihoodModel,
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
    check_columns(df, ITEM_COLUMNS)
    store = RunStore.open(
        model.name,
        "thaicli/loglik",
        {"context_template": LL_CONTEXT_TEMPLATE, "target_delimiter": LL_TARGET_DELIMITER},
        model_identity=stable_identity(dict(model.identity)),
        prompt_templates={"context": LL_CONTEXT_TEMPLATE},
        outputs=outputs,
    )
    keys = [item_key(i, q + "\x00" + c + "\x00" + r) for i, q, c, r in zip(df["id"], df["question"], df["chosen"], df["rejected"], strict=True)]

    def score(rows: list[int]) -> list[dict[str, Any]]:
        requests = []
        for i in rows:
            ctx = LL_CONTEXT_TEMPLATE.format(question=df["question"].iloc[i])
            requests += [(ctx, LL_TARGET_DELIMITER + df["chosen"].iloc[i]), (ctx, LL_TARGET_DELIMITER + df["rejected"].iloc[i])]
        results = model.loglikelihood(requests)
        return [{"ll_chosen": float(results[2 * j][0]), "ll_rejected": float(results[2 * j + 1][0]),
                 "chars_chosen": len(requests[2 * j][1]), "chars_rejected": len(requests[2 * j + 1][1])}
                for j in range(len(rows))]  # fmt: skip

    run = run_items(store, range(len(df)), keys.__getitem__, score, batch_size=batch_size,
                    desc=f"log-likelihoods ({model.name})", progress=progress)  # fmt: skip
    rows = []
    for (_, row), rec in zip(df.iterrows(), run.in_order(), strict=True):
        norm_c, norm_r = rec["ll_chosen"] / rec["chars_chosen"], rec["ll_rejected"] / rec["chars_rejected"]
        rows.append({"id": row["id"], "format": row["format"], "theme": row["theme"],
                     **{k: rec[k] for k in ("ll_chosen", "ll_rejected", "chars_chosen", "chars_rejected")},
                     "win_raw": _win(rec["ll_chosen"], rec["ll_rejected"]), "win_norm": _win(norm_c, norm_r)})  # fmt: skip
    out = pd.DataFrame(rows)
    store.write_summary({"n_items": len(out), "n_computed_this_run": run.computed, "scores": judge_free_scores(out).to_dict()})
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
