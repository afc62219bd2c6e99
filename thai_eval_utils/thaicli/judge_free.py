"""ThaiCLI judge-free variant (Kim et al., arXiv 2410.04795, section 4 names the idea; the frame is ours).

:func:`thai_eval_utils.thaicli.loglik.loglikelihood_preferences` asks, offline and without a judge: does the model
find the chosen answer more likely than the rejected one, given the question? (a declared two-choice task on the
shared multiple-choice code and lm-eval's acc_norm). Here: its frame's constants, ``judge_free_scores`` (per
format and theme) and ``judge_vs_loglik`` (beside the judge's scores).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from thai_eval_utils.core.provenance import Score, sha256_text

#: Judge-free variant: the context is the question under a Thai "Question:/Answer:" frame (คำถาม = question,
#: คำตอบ = answer), the lm-evaluation-harness pattern of a question/answer prompt; the continuation is
#: ``" " + answer`` (lm-eval's target delimiter). Written for thai-eval: the paper names the idea only.
LL_CONTEXT_TEMPLATE = "คำถาม: {question}\nคำตอบ:"
LL_TARGET_DELIMITER = " "


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
    return {
        "n": raw.n,
        "win_raw": raw.value,
        "win_raw_stderr": raw.stderr,
        "win_norm": norm.value,
        "win_norm_stderr": norm.stderr,
    }


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
        headline[col] = Score(
            f"thaicli_loglik/{col}",
            (vals[0] + vals[1]) / 2,
            int(by_format["n"].sum()),
            se,
            f"context:{sha256_text(LL_CONTEXT_TEMPLATE)[:8]}",
        )
    return JudgeFreeScores(headline["win_raw"], headline["win_norm"], by_format, by_theme)


def judge_vs_loglik(judge_by_theme: pd.DataFrame, loglik_by_theme: pd.DataFrame) -> pd.DataFrame:
    """Per (format, theme): the judge's mean score beside the judge-free win rates, one row each.

    Args:
        judge_by_theme: ``judge.thaicli_scores(...).by_theme`` (format, theme, n, mean, stderr).
        loglik_by_theme: ``judge_free_scores(...).by_theme`` (format, theme, n, win_raw, win_norm, ...).
    """
    left = judge_by_theme.rename(columns={"n": "n_judged", "mean": "judge_mean", "stderr": "judge_stderr"})
    right = loglik_by_theme[["format", "theme", "n", "win_raw", "win_norm"]].rename(columns={"n": "n_loglik"})
    return (
        left.merge(right, on=["format", "theme"], how="outer").sort_values(["format", "theme"]).reset_index(drop=True)
    )
