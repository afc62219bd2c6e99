"""The judge-free ThaiCLI variant as an ordinary two-choice task (Kim et al., arXiv 2410.04795, section 4
names the idea, the frame is ours): the chosen and the rejected answer are the two choices of a declared
:class:`~thai_eval_utils.tasks.MultipleChoiceTask`, scored on the package's one multiple-choice engine and metric
code (:mod:`thai_eval_utils.tasks`).

``win_raw`` is the task's ``acc`` and ``win_norm`` its ``acc_norm`` (lm-eval's: per character of the answer,
*without* the target delimiter; ``judge_free.py`` divided by ``" " + answer``, see ``docs/protocol_notes.md``),
both with ties split (an exact tie counts 0.5, as before). The summary keeps the keys its readers use:
``scores.win_raw`` / ``scores.win_norm`` (the mean of the factoid and instruction rates), ``by_format``, ``by_theme``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from thai_eval_utils.core.protocols import LoglikelihoodModel
from thai_eval_utils.tasks import MultipleChoiceTask, run_task
from thai_eval_utils.thaicli.answers import ITEM_COLUMNS, check_columns
from thai_eval_utils.thaicli.judge_free import LL_CONTEXT_TEMPLATE, LL_TARGET_DELIMITER, judge_free_scores

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
PREFERENCE_COLUMNS = [
    "id",
    "format",
    "theme",
    "ll_chosen",
    "ll_rejected",
    "chars_chosen",
    "chars_rejected",
    "win_raw",
    "win_norm",
]


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
        rows.append(
            {
                "id": item["id"],
                "format": item["format"],
                "theme": item["theme"],
                "ll_chosen": rec["lls"][0],
                "ll_rejected": rec["lls"][1],
                "chars_chosen": len(rec["choices"][0]),
                "chars_rejected": len(rec["choices"][1]),
                "win_raw": rec["acc"],
                "win_norm": rec["acc_norm"],
            }
        )
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
