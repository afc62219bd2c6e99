"""Human-evaluation analyses of the dialect paper (arXiv 2504.05898, sections 2.2, 3.3, 3.4, appendix A.4
and B): annotation files, pairwise preferences (Table 2), Generation/Fluency (Table 3), Cohen's kappa
(Table 6) and judge-vs-human Spearman correlation.

Annotation files are tidy CSV or JSONL, one row per (item, model or model pair, annotator):

- preferences: ``dialect, task, item_id, model_a, model_b, annotator, choice`` with choice in
  ``A`` / ``B`` / ``Both`` (equally good) / ``None`` (equally poor); three annotators in the paper;
- Generation/Fluency: ``dialect, task, item_id, model, annotator, generation, fluency`` with each score
  in ``0`` / ``0.5`` / ``1``; two native-speaker annotators per dialect in the paper;
- judge scores: ``dialect, task, item_id, model, judge, score`` (any numeric scale).

Every problem raises :class:`~thai_eval_utils.core.errors.ThaiEvalDataError` naming the file, the 0-based row
and the field: unknown labels, empty keys, duplicate ratings, and items some annotator of the dialect
did not rate. Files are validated completely before anything is returned.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.records import read_records, require_finite
from thai_eval_utils.dialect.data import check_dialect
from thai_eval_utils.stats.bootstrap import spearman, spearman_interval

PREFERENCE_COLUMNS = ("dialect", "task", "item_id", "model_a", "model_b", "annotator", "choice")
#: Pairwise options (paper section 2.2): A better, B better, equally good, equally poor.
PREFERENCE_CHOICES = ("A", "B", "Both", "None")
GENERATION_FLUENCY_COLUMNS = ("dialect", "task", "item_id", "model", "annotator", "generation", "fluency")
#: Generation / Fluency scale (paper section 3.3): 0 none, 0.5 partial, 1 fully in the dialect / fluent.
GF_LABELS = (0.0, 0.5, 1.0)
JUDGE_COLUMNS = ("dialect", "task", "item_id", "model", "judge", "score")


# ------------------------------------------------------------------------------------ loading


def _records(
    source: str | Path | pd.DataFrame, columns: Sequence[str], label_fields: Sequence[str]
) -> tuple[list[dict], str | None]:
    """The rows of a file or DataFrame with ``columns`` (and its path), the other fields than ``label_fields`` (the
    keys) as stripped, non-empty text (ids from JSON ints become "3"); ``dialect`` one of the four."""
    if isinstance(source, pd.DataFrame):
        if missing := [c for c in columns if c not in source.columns]:
            raise ThaiEvalDataError(f"missing column(s) {', '.join(missing)}", field=missing[0])
        recs, path = source[list(columns)].to_dict("records"), None
    else:
        # a label may be a number; a key is text or an integer id
        required = {c: ((str, int, float) if c in label_fields else (str, int)) for c in columns}
        recs, path = read_records(source, required), str(source)
    for i, rec in enumerate(recs):
        for f in (c for c in columns if c not in label_fields):
            value = rec[f]
            missing = value is None or isinstance(value, bool) or (isinstance(value, float) and math.isnan(value))
            if missing or not str(value).strip():
                raise ThaiEvalDataError("empty value", path=path, row=i, field=f)
            rec[f] = str(value).strip()
        check_dialect(rec["dialect"], path=path, row=i)
    return recs, path


def _parse_gf(value: Any, path: str | None, row: int, field: str) -> float:
    try:
        x = float(str(value).strip()) if not isinstance(value, bool) else None
    except ValueError:
        x = None
    if x is None or x not in GF_LABELS:
        raise ThaiEvalDataError(f"unknown label {value!r}; expected one of 0, 0.5, 1", path=path, row=row, field=field)
    return x


def _check_complete(recs: list[dict], unit: Sequence[str], path: str | None, n_annotators: int | None) -> None:
    """No duplicate (unit, annotator) rows; every unit rated by every annotator of its dialect."""
    seen: dict[tuple, int] = {}  # (unit, annotator) -> row
    first_row: dict[tuple, int] = {}
    raters: dict[tuple, set[str]] = defaultdict(set)
    by_dialect: dict[str, set[str]] = defaultdict(set)
    for i, rec in enumerate(recs):
        u, who = tuple(rec[f] for f in unit), rec["annotator"]
        if (*u, who) in seen:
            message = f"duplicate row: annotator {who!r} already rated {'/'.join(u)} in row {seen[(*u, who)]}"
            raise ThaiEvalDataError(message, path=path, row=i, field="annotator")
        seen[(*u, who)] = i
        first_row.setdefault(u, i)
        raters[u].add(who)
        by_dialect[rec["dialect"]].add(who)
    for dialect, names in by_dialect.items():
        if n_annotators is not None and len(names) != n_annotators:
            row = min(r for u, r in first_row.items() if u[0] == dialect)
            shown = ", ".join(sorted(names))
            message = f"dialect {dialect!r} has {len(names)} annotator(s) ({shown}), expected {n_annotators}"
            raise ThaiEvalDataError(message, path=path, row=row, field="annotator")
    for u, names in raters.items():
        if missing := by_dialect[u[0]] - names:
            message = (
                f"item {'/'.join(u)} was not rated by annotator(s) {', '.join(sorted(missing))} of dialect {u[0]!r}"
            )
            raise ThaiEvalDataError(message, path=path, row=first_row[u], field="annotator")


def load_preferences(source: str | Path | pd.DataFrame, *, n_annotators: int | None = 3) -> pd.DataFrame:
    """Read and validate a pairwise-preference file (CSV/JSONL) or DataFrame.

    Args:
        source: the file, or a DataFrame with :data:`PREFERENCE_COLUMNS`.
        n_annotators: annotators expected per dialect (paper: 3); None: any number, but every
            annotator of a dialect must rate every item of it.
    """
    recs, path = _records(source, PREFERENCE_COLUMNS, ("choice",))
    for i, rec in enumerate(recs):
        choice = str(rec["choice"]).strip() if rec["choice"] is not None else ""
        if choice not in PREFERENCE_CHOICES:
            message = f"unknown label {rec['choice']!r}; expected one of {', '.join(PREFERENCE_CHOICES)}"
            raise ThaiEvalDataError(message, path=path, row=i, field="choice")
        if rec["model_a"] == rec["model_b"]:
            message = f"model_a and model_b are both {rec['model_a']!r}"
            raise ThaiEvalDataError(message, path=path, row=i, field="model_b")
        rec["choice"] = choice
    _check_complete(recs, ("dialect", "task", "item_id", "model_a", "model_b"), path, n_annotators)
    return pd.DataFrame(recs, columns=list(PREFERENCE_COLUMNS))


def load_generation_fluency(source: str | Path | pd.DataFrame, *, n_annotators: int | None = 2) -> pd.DataFrame:
    """Read and validate a Generation/Fluency file (CSV/JSONL) or DataFrame (scores become floats)."""
    recs, path = _records(source, GENERATION_FLUENCY_COLUMNS, ("generation", "fluency"))
    for i, rec in enumerate(recs):
        for f in ("generation", "fluency"):
            rec[f] = _parse_gf(rec[f], path, i, f)
    _check_complete(recs, ("dialect", "task", "item_id", "model"), path, n_annotators)
    return pd.DataFrame(recs, columns=list(GENERATION_FLUENCY_COLUMNS))


def load_judge_scores(source: str | Path | pd.DataFrame) -> pd.DataFrame:
    """Read and validate judge scores (one numeric ``score`` per item, model and judge)."""
    recs, path = _records(source, JUDGE_COLUMNS, ("score",))
    seen: dict[tuple, int] = {}
    for i, rec in enumerate(recs):
        if rec["score"] is None or (isinstance(rec["score"], float) and math.isnan(rec["score"])):
            raise ThaiEvalDataError("missing score", path=path, row=i, field="score")
        rec["score"] = require_finite(rec["score"], path=path, row=i, field="score")  # no inf, -Infinity, 1e400
        key = tuple(rec[f] for f in JUDGE_COLUMNS[:-1])
        if key in seen:
            raise ThaiEvalDataError(f"duplicate row (also row {seen[key]})", path=path, row=i, field="item_id")
        seen[key] = i
    return pd.DataFrame(recs, columns=list(JUDGE_COLUMNS))


# ------------------------------------------------------------------------------- Tables 2 and 3


def preference_table(df: pd.DataFrame, *, by_task: bool = False) -> pd.DataFrame:
    """Paper Table 2: per dialect and model pair, how often each option was chosen, averaged over annotators.

    Each annotator's count of A / B / Both / None over the items is averaged over the annotators, so
    counts can be fractional; per row ``A + B + Both + None = n_items``. Pairs are taken as written
    (``(X, Y)`` and ``(Y, X)`` are different rows).
    """
    keys = ["dialect", "task", "model_a", "model_b"] if by_task else ["dialect", "model_a", "model_b"]
    rows = []
    for key, g in df.groupby(keys, sort=False):
        n_ann = g["annotator"].nunique()
        row = dict(zip(keys, key))
        for choice in PREFERENCE_CHOICES:
            row[choice] = float((g["choice"] == choice).sum()) / n_ann
        row["n_items"], row["n_annotators"] = len(g[["task", "item_id"]].drop_duplicates()), n_ann
        rows.append(row)
    return pd.DataFrame(rows, columns=[*keys, *PREFERENCE_CHOICES, "n_items", "n_annotators"])


def generation_fluency(df: pd.DataFrame, *, by_task: bool = False) -> pd.DataFrame:
    """Paper Table 3: Generation and Fluency = 100 x mean over items of the annotators' mean; Avg = (G + F) / 2."""
    keys = ["dialect", "task", "model"] if by_task else ["dialect", "model"]
    unit = [*keys, *(["task"] if not by_task else []), "item_id"]  # one rated item of a model
    per_item = df.groupby(unit, sort=False)[["generation", "fluency"]].mean()
    table = per_item.groupby(level=list(range(len(keys))), sort=False).agg(
        generation=("generation", "mean"), fluency=("fluency", "mean"), n_items=("generation", "size")
    )
    table[["generation", "fluency"]] *= 100.0
    table["avg"] = (table["generation"] + table["fluency"]) / 2
    return table.reset_index()[[*keys, "generation", "fluency", "avg", "n_items"]]


# ------------------------------------------------------------------------------- Cohen's kappa


@dataclass(frozen=True)
class KappaResult:
    """Cohen's kappa with its observed/expected agreement, or an explicit *undefined* result.

    ``value`` is NaN when ``defined`` is False (e.g. both annotators used one and the same label for
    every item, so p_e = 1 and kappa = 0/0); ``str()`` then says "undefined", never a number.
    ``p_o``/``p_e`` are the (weighted, when ``weights`` is set) observed and chance agreement.
    """

    value: float
    defined: bool
    p_o: float
    p_e: float
    n: int
    weights: str | None = None
    reason: str = ""

    def __float__(self) -> float:
        return self.value

    def __str__(self) -> str:
        kind = f"{self.weights}-weighted kappa" if self.weights else "kappa"
        if not self.defined:
            return f"{kind} undefined: {self.reason} (n={self.n})"
        return f"{kind} = {self.value:.3f} (p_o = {self.p_o:.3f}, p_e = {self.p_e:.3f}, n={self.n})"

    def display(self, digits: int = 3) -> str:
        """The value rounded for a table, or ``"undefined"``."""
        return f"{self.value:.{digits}f}" if self.defined else "undefined"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["value"] = self.value if self.defined else None
        return d


def cohen_kappa(
    a: Sequence[Any], b: Sequence[Any], *, weights: str | None = None, labels: Sequence[Any] | None = None
) -> KappaResult:
    """Cohen's kappa of two annotators via ``sklearn.metrics.cohen_kappa_score``.

    sklearn rejects 0.5 as a class label ("continuous is not supported"), so labels are mapped to their
    index in ``labels`` (default the Generation/Fluency scale 0 / 0.5 / 1 -> 0 / 1 / 2) and passed with
    ``labels=[0, 1, ...]``, which also keeps the label order for ``weights="linear"``/``"quadratic"``.

    Example: ``cohen_kappa([1, 0.5, 0], [1, 0.5, 0.5])`` -> kappa = 0.500 (p_o = 0.667, p_e = 0.333, n=3).
    """
    labels = list(GF_LABELS if labels is None else labels)
    if len(a) != len(b):
        raise ValueError(f"annotators rated different numbers of items ({len(a)} vs {len(b)})")
    for who, ratings in (("a", a), ("b", b)):  # True == 1 and hash(True) == hash(1.0): it would count as label 1
        for i, v in enumerate(ratings):
            if isinstance(v, (bool, np.bool_)) or (isinstance(v, float) and not math.isfinite(v)):
                raise ValueError(f"annotator {who}, item {i}: {v!r} is not a label (labels: {labels})")
    index = {lab: i for i, lab in enumerate(labels)}
    try:
        x = np.array([index[v] for v in a], dtype=int)
        y = np.array([index[v] for v in b], dtype=int)
    except KeyError as exc:
        raise ValueError(f"label {exc.args[0]!r} not in labels {labels}") from None
    n, k = len(x), len(labels)
    if n == 0:
        return KappaResult(float("nan"), False, float("nan"), float("nan"), 0, weights, "no items")
    observed = np.zeros((k, k))
    np.add.at(observed, (x, y), 1.0 / n)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    i, j = np.indices((k, k))
    scale = max(k - 1, 1)
    weighted = {None: (i != j).astype(float), "linear": np.abs(i - j) / scale, "quadratic": ((i - j) / scale) ** 2}
    disagree = weighted[weights]
    p_o, p_e = 1.0 - float((disagree * observed).sum()), 1.0 - float((disagree * expected).sum())
    if p_e >= 1.0 - 1e-12:
        used = sorted({labels[v] for v in np.concatenate([x, y])}, key=index.get)
        reason = f"both annotators gave every item the label {used[0]!r}, so chance agreement is 1 (0/0)"
        return KappaResult(float("nan"), False, p_o, p_e, n, weights, reason)
    from sklearn.metrics import cohen_kappa_score  # a second to import: loaded when a kappa is computed

    value = float(cohen_kappa_score(x, y, labels=list(range(k)), weights=weights))
    return KappaResult(value, True, p_o, p_e, n, weights)


def annotator_pairs(df: pd.DataFrame) -> Iterator[tuple[str, str, list[str], list[Any], list[Any]]]:
    """Per dialect and aspect (Generation, Fluency): the two annotators' names and their ratings paired by task,
    item and model (the units Table 6's kappa is computed over).

    Raises:
        ValueError: a dialect without exactly two annotators.
    """
    for dialect, g in df.groupby("dialect", sort=False):
        names = sorted(g["annotator"].unique())
        if len(names) != 2:
            raise ValueError(f"dialect {dialect!r} has {len(names)} annotators; Cohen's kappa needs exactly 2")
        unit = ["task", "item_id", "model"]  # one rated unit: a task's item answered by a model
        for aspect in ("generation", "fluency"):
            wide = g.pivot_table(index=unit, columns="annotator", values=aspect, aggfunc="first")
            yield dialect, aspect, names, list(wide[names[0]]), list(wide[names[1]])


def agreement_table(df: pd.DataFrame, *, weights: str | None = None) -> pd.DataFrame:
    """Paper Table 6: kappa between the two annotators per dialect, for Generation and for Fluency.

    Ratings are paired by (task, item_id, model). Returns ``dialect, aspect, annotators, kappa`` (NaN
    when undefined), ``defined, display`` ("undefined" or the rounded value), ``p_o, p_e, n, result``
    (the :class:`KappaResult`).
    """
    cols = ("dialect", "aspect", "annotators", "kappa", "defined", "display", "p_o", "p_e", "n", "result")
    rows = []
    for dialect, aspect, names, a, b in annotator_pairs(df):
        r = cohen_kappa(a, b, weights=weights)
        values = (dialect, aspect, " vs ".join(names), r.value, r.defined, r.display(), r.p_o, r.p_e, r.n, r)
        rows.append(dict(zip(cols, values)))
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ judge vs human


def human_item_scores(df: pd.DataFrame, *, aspect: str = "avg") -> pd.DataFrame:
    """Per (dialect, task, item_id, model): the annotators' mean ``generation``, ``fluency`` or ``avg`` of both."""
    if aspect not in ("generation", "fluency", "avg"):
        raise ValueError(f"aspect must be generation, fluency or avg, got {aspect!r}")
    per = df.assign(avg=(df["generation"] + df["fluency"]) / 2)
    out = per.groupby(["dialect", "task", "item_id", "model"], sort=False)[aspect].mean().reset_index()
    return out.rename(columns={aspect: "human_score"})


def merge_judge_human(
    judge: pd.DataFrame, human: pd.DataFrame, *, aspect: str = "avg", judge_name: str | None = None
) -> pd.DataFrame:
    """Pair judge scores with the human item scores (inner join on dialect, task, item_id, model)."""
    if judge_name is not None:
        judge = judge[judge["judge"] == judge_name]
    if judge["judge"].nunique() > 1:
        raise ValueError(f"several judges ({', '.join(sorted(judge['judge'].unique()))}): pass judge_name")
    human = human_item_scores(human, aspect=aspect)
    return judge.rename(columns={"score": "judge_score"}).merge(human, on=["dialect", "task", "item_id", "model"])


def judge_human_spearman(
    df: pd.DataFrame, *, n_resamples: int = 1000, level: float = 0.95, seed: int = 0
) -> pd.DataFrame:
    """Spearman's rho (``scipy.stats.spearmanr``, ties get average ranks) between ``judge_score`` and
    ``human_score`` (:func:`merge_judge_human`) per dialect.

    The confidence interval is :func:`thai_eval_utils.stats.bootstrap.spearman_interval`: a percentile bootstrap
    over items (``n_resamples`` resamples drawn by ``numpy.random.default_rng(seed)``; resamples where one side is
    constant are dropped, and ``n_used`` counts the others). rho is NaN when undefined (fewer than 3 items or
    constant scores).

    Returns: ``dialect, rho, p_value, n, ci_low, ci_high, n_used``.
    """
    rows, cols = [], ["dialect", "rho", "p_value", "n", "ci_low", "ci_high", "n_used"]
    for dialect, g in df.groupby("dialect", sort=False):
        x, y = g["judge_score"].to_numpy(float), g["human_score"].to_numpy(float)
        rho, p, _ = spearman(x, y)
        iv = spearman_interval(x, y, level=level, n_resamples=n_resamples, seed=seed)
        rows.append(dict(zip(cols, (dialect, rho, p, len(x), iv.low, iv.high, iv.n_used))))
    return pd.DataFrame(rows, columns=cols)
