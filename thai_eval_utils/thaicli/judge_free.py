"""ThaiCLI judge-free variant (Kim et al., arXiv 2410.04795, section 4 names the idea; the frame is ours).

:func:`loglikelihood_preferences` asks, offline and without a judge: does the model find the chosen answer more
likely than the rejected one, given the question? The chosen and the rejected answer are the two choices of a
declared :class:`~thai_eval_utils.tasks.MultipleChoiceTask` (:data:`JUDGE_FREE_TASK`), scored on the package's one
multiple-choice engine and metric code (:mod:`thai_eval_utils.tasks`). Here too: the frame's constants,
``judge_free_scores`` (per format and theme) and ``judge_vs_loglik`` (beside the judge's scores).

``win_raw`` is the task's ``acc`` and ``win_norm`` its ``acc_norm`` (lm-eval's: per character of the answer,
*without* the target delimiter; the earlier frame divided by ``" " + answer``, see ``docs/protocol_notes.md``),
both with ties split (an exact tie counts 0.5, as before). The summary keeps the keys its readers use:
``scores.win_raw`` / ``scores.win_norm`` (the mean of the factoid and instruction rates), ``by_format``, ``by_theme``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from thai_eval_utils.core.protocols import LoglikelihoodModel
from thai_eval_utils.core.provenance import Score, sha256_text
from thai_eval_utils.tasks import MultipleChoiceTask, run_task
from thai_eval_utils.thaicli.answers import ITEM_COLUMNS, check_columns

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
        sig = f"context:{sha256_text(LL_CONTEXT_TEMPLATE)[:8]}"
        headline[col] = Score(f"thaicli_loglik/{col}", (vals[0] + vals[1]) / 2, int(by_format["n"].sum()), se, sig)
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


#: Where the runs are stored (the readers of ``thaicli/loglik`` summaries: paper tables, leaderboard export).
BENCHMARK = "thaicli/loglik"
#: The judge-free variant declared: the question under a Thai "Question:/Answer:" frame, chosen (index 0) against
#: rejected, lm-eval's target delimiter, ties split. Version 2: acc_norm per character of the answer alone.
JUDGE_FREE_TASK = MultipleChoiceTask(
    name="thaicli_loglik",
    data="",  # the items come from thaicli.load_thaicli (rows=)
    prompt=LL_CONTEXT_TEMPLATE,
    choices=("chosen", "rejected"),
    gold="gold",
    target_delimiter=LL_TARGET_DELIMITER,
    metrics=("acc", "acc_norm"),
    ties="split",
    id_field="id",
    title="ThaiCLI judge-free (chosen vs rejected by log-likelihood)",
    version="2",
)
PREFERENCE_COLUMNS = "id format theme ll_chosen ll_rejected chars_chosen chars_rejected win_raw win_norm".split()


def _rows(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [
        {"id": str(r["id"]), "question": r["question"], "chosen": r["chosen"], "rejected": r["rejected"], "gold": 0}
        for r in df[list(ITEM_COLUMNS)].to_dict("records")
    ]


def preferences_frame(df: pd.DataFrame, records: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """One row per item (``PREFERENCE_COLUMNS``) from the task's records; ``chars_*`` count the answer alone."""
    by_id = {str(r["id"]): r for r in records}
    rows = []
    for item in df[list(ITEM_COLUMNS)].to_dict("records"):
        rec = by_id[str(item["id"])]
        chars = [len(c) for c in rec["choices"][:2]]
        rows.append((item["id"], item["format"], item["theme"], *rec["lls"][:2], *chars, rec["acc"], rec["acc_norm"]))
    return pd.DataFrame(rows, columns=PREFERENCE_COLUMNS)


def loglikelihood_preferences(
    model: LoglikelihoodModel,
    df: pd.DataFrame,
    *,
    outputs: str | Path | None = None,
    batch_size: int = 16,
    progress: bool = True,
) -> pd.DataFrame:
    """Log-likelihood of the chosen and the rejected answer given the question, per item (resumable): the
    :data:`JUDGE_FREE_TASK` run with :func:`~thai_eval_utils.tasks.run_task`.

    Returns:
        One row per item: id, format, theme, ll_chosen, ll_rejected, chars_chosen, chars_rejected, win_raw,
        win_norm (1 chosen more likely, 0.5 an exact tie, else 0); ``attrs``: model_name, config_id, run_dir.
    """
    check_columns(df, ITEM_COLUMNS)

    def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
        return {"n_items": len(records), "scores": judge_free_scores(preferences_frame(df, records)).to_dict()}

    run = run_task(
        model,
        JUDGE_FREE_TASK,
        rows=_rows(df),
        benchmark=BENCHMARK,
        outputs=outputs,
        batch_size=batch_size,
        progress=progress,
        summarize=summarize,
    )
    out = preferences_frame(df, run.records)
    out.attrs.update(model_name=model.name, config_id=run.config_id, run_dir=str(run.run_dir))
    return out
