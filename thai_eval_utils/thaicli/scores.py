"""ThaiCLI scores from judged items (Kim et al., arXiv 2410.04795, section 4, Table 5): ThaiCLI = (factoid mean +
instruction mean) / 2, per format and per theme; repeated judgements averaged per item first.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import pandas as pd

from thai_eval_utils.core import tables
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.provenance import Score

#: Columns :func:`thaicli_scores` needs; ``status`` (default ``"scored"``) and ``attempts`` (default 1) are optional.
SCORE_COLUMNS = ("format", "theme", "score")


@dataclass
class ThaiCLIScores:
    """ThaiCLI = (factoid mean + instruction mean) / 2, with per-format and per-theme tables."""

    thaicli: Score
    factoid: Score
    instruction: Score
    by_format: pd.DataFrame
    by_theme: pd.DataFrame

    def table5_row(self) -> dict[str, float]:
        """The paper's Table 5 columns, rounded half-up to 2 decimals, with standard errors."""
        row = {}
        for s in (self.thaicli, self.factoid, self.instruction):
            for key, value in ((s.name, s.value), (f"{s.name}_stderr", s.stderr)):  # 7.305 -> 7.31; None, NaN kept
                row[key] = (
                    float(tables.round_half_up(value, 2)) if value is not None and math.isfinite(value) else value
                )
        return row

    def to_dict(self) -> dict[str, Any]:
        return {
            "thaicli": self.thaicli.to_dict(),
            "factoid": self.factoid.to_dict(),
            "instruction": self.instruction.to_dict(),
            "table5_row": self.table5_row(),
            "by_format": self.by_format.to_dict(orient="records"),
            "by_theme": self.by_theme.to_dict(orient="records"),
        }

    def __str__(self) -> str:
        return "\n".join(str(s) for s in (self.thaicli, self.factoid, self.instruction))


def _score_table(items: pd.DataFrame) -> pd.DataFrame:
    """``items`` with ``status`` and ``attempts`` filled in where absent, every judged score checked finite."""
    missing = [c for c in SCORE_COLUMNS if c not in items.columns]
    if missing:
        raise ThaiEvalDataError(
            f"the judged items lack column(s) {missing}; found {list(items.columns)}", field=missing[0]
        )
    defaults = {c: v for c, v in (("status", "scored"), ("attempts", 1)) if c not in items.columns}
    items = items.reset_index(drop=True).assign(**defaults)
    for i, (status, score) in enumerate(zip(items["status"], items["score"])):
        if status == "unjudged":
            continue
        ok = isinstance(score, numbers.Real) and not isinstance(score, bool) and math.isfinite(score)
        if not ok:
            raise ThaiEvalDataError(
                f"a judged item's score must be a finite number, got {score!r}", row=i, field="score"
            )
    return items


def item_means(items: pd.DataFrame) -> pd.DataFrame:
    """One row per item (``id, format, theme, score, status, n_repeats``): the mean of its judged repeats.

    ``items`` has one row per (item, repeat) (``judge_answers(..., repeats=k).items``); an item none of whose
    repeats was judged is ``"unjudged"`` with score NaN, any other is ``"scored"``.

    Raises:
        ThaiEvalDataError: no ``id`` or ``repeat`` column, or an id twice in one repeat.
    """
    for col in ("id", "repeat"):
        if col not in items.columns:
            raise ThaiEvalDataError(
                f"repeated judgements need an {col!r} column; found {list(items.columns)}", field=col
            )
    dup = items.duplicated(["id", "repeat"]).to_numpy().nonzero()[0]
    if dup.size:
        row = items.iloc[dup[0]]
        raise ThaiEvalDataError(
            f"id {row['id']!r} appears twice in repeat {row['repeat']}", row=int(dup[0]), field="id"
        )
    judged = items[items["status"] != "unjudged"]
    out = items.drop_duplicates("id")[["id", "format", "theme"]].reset_index(drop=True)
    out["score"] = out["id"].map(judged.groupby("id", sort=False)["score"].mean())
    out["n_repeats"] = out["id"].map(judged.groupby("id", sort=False).size()).fillna(0).astype(int)
    out["status"] = ["unjudged" if n == 0 else "scored" for n in out["n_repeats"]]
    return out


def thaicli_scores(items: pd.DataFrame, signature: str = "") -> ThaiCLIScores:
    """Aggregate judged items (unjudged rows are excluded).

    ``items`` needs columns ``format, theme, score``; ``status`` is optional (absent: every row is judged,
    ``"scored"``) and so is ``attempts`` (absent: 1 call each). A judged row whose score is not a finite
    number (NaN, inf, a string) raises :class:`ThaiEvalDataError` naming the row.

    Repeated judgements (a ``repeat`` column with more than one value; needs ``id``): each item's score is the
    mean of its judged repeats (:func:`item_means`), so n, means and stderrs are over items; the 0
    fallbacks, parse retries and unjudged counts are over judgements (item x repeat).

    Per format: n, mean, stderr (``std(ddof=1)/sqrt(n)``), the 0 fallbacks, the parse retries
    (``attempts - 1`` summed) and the unjudged count. ThaiCLI's stderr is ``sqrt(se_f² + se_i²) / 2``.
    """
    items = _score_table(items)
    repeated = "repeat" in items.columns and items["repeat"].nunique() > 1
    per_item = item_means(items) if repeated else items
    judged = per_item[per_item["status"] != "unjudged"]
    judged_rows = items[items["status"] != "unjudged"]
    fmt_rows, per = [], {}
    for fmt in ("factoid", "instruction"):
        part = judged[judged["format"] == fmt]
        rows = judged_rows[judged_rows["format"] == fmt]
        per[fmt] = Score.mean(fmt, part["score"].tolist(), signature)
        fmt_rows.append(
            {
                "format": fmt,
                "n": per[fmt].n,
                "mean": per[fmt].value,
                "stderr": per[fmt].stderr,
                "n_zero_fallback": int((rows["status"] == "fallback_zero").sum()),
                "n_parse_retries": int((rows["attempts"] - 1).clip(lower=0).sum()),
                "n_unjudged": int(((items["format"] == fmt) & (items["status"] == "unjudged")).sum()),
            }
        )
    f, i = per["factoid"], per["instruction"]
    se = math.sqrt(f.stderr**2 + i.stderr**2) / 2 if f.stderr is not None and i.stderr is not None else None
    thaicli = Score("thaicli", (f.value + i.value) / 2, f.n + i.n, se, signature)
    theme_rows = []
    for (fmt, theme), part in judged.groupby(["format", "theme"], sort=True):
        s = Score.mean(f"{fmt}/{theme}", part["score"].tolist())
        theme_rows.append({"format": fmt, "theme": theme, "n": s.n, "mean": s.value, "stderr": s.stderr})
    by_theme = pd.DataFrame(theme_rows, columns=["format", "theme", "n", "mean", "stderr"])
    return ThaiCLIScores(thaicli, f, i, pd.DataFrame(fmt_rows), by_theme)
