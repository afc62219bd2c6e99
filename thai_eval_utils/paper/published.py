"""Rebuild the published tables of Kim et al. (arXiv 2410.04795) and Limkonchotiwat et al. (arXiv 2504.05898).

Every derived number in the papers (an average, a total, a ΔDiff, a mean kappa) is recomputed from
its printed components in exact decimal arithmetic on the CSV strings, rounded half-up to the number
of decimals printed in that cell, and compared with the printed value. :func:`check_published`
returns one row per check; :func:`mismatches` keeps the cells that disagree. The published files
are ``thai_eval_utils/paper/published_tables/*.csv``, package data (see its README for their origin). This toolkit's own runs are
placed beside the published rows by :mod:`thai_eval_utils.paper.own_runs` (:func:`run_records`,
:func:`table_with_runs` and the ``*_with_runs`` functions, still importable from here).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from importlib.resources import files
from pathlib import Path

import pandas as pd

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.tables import round_half_up

#: Default folder of the published tables: ``published_tables/`` beside this module (package data, so an installed
#: wheel has them; their origin in its README).
PAPER_RESULTS_DIR = files("thai_eval_utils.paper") / "published_tables"

KIM = "Kim et al."  # arXiv 2410.04795: Thai-H6 and ThaiCLI
LIMKONCHOTIWAT = "Limkonchotiwat et al."  # arXiv 2504.05898: Thai dialects


@dataclass(frozen=True)
class PublishedTable:
    """One published table: its CSV file name, the paper, the table number and a caption."""

    file: str
    paper: str
    number: int
    caption: str

    @property
    def label(self) -> str:
        """How checks name the table, e.g. ``"Kim et al. Table 4"``."""
        return f"{self.paper} Table {self.number}"


#: Every published table, by the short key the rest of the toolkit uses.
PUBLISHED_TABLES: dict[str, PublishedTable] = {
    "h6_sizes": PublishedTable("thai_h6_sizes_table1.csv", KIM, 1, "Thai-H6 dataset sizes"),
    "thaicli_distribution": PublishedTable(
        "thaicli_distribution_table3.csv", KIM, 3, "ThaiCLI questions per format and theme"
    ),
    "h6": PublishedTable("thai_h6_table4.csv", KIM, 4, "Thai-H6 scores"),
    "thaicli": PublishedTable("thaicli_table5.csv", KIM, 5, "ThaiCLI judge scores"),
    "dialect_auto": PublishedTable(
        "dialect_table1_auto_metrics.csv", LIMKONCHOTIWAT, 1, "Dialect automatic metrics and ΔDiff"
    ),
    "dialect_preference": PublishedTable("dialect_table2_preference.csv", LIMKONCHOTIWAT, 2, "Human preference counts"),
    "dialect_gen_fluency": PublishedTable(
        "dialect_table3_generation_fluency.csv", LIMKONCHOTIWAT, 3, "Generation and Fluency"
    ),
    "dialect_counts": PublishedTable(
        "dialect_table4_sample_counts.csv", LIMKONCHOTIWAT, 4, "Items per dialect and task"
    ),
    "dialect_overlap": PublishedTable(
        "dialect_table5_word_overlap.csv", LIMKONCHOTIWAT, 5, "Central/dialect word overlap"
    ),
    "dialect_kappa": PublishedTable("dialect_table6_kappa.csv", LIMKONCHOTIWAT, 6, "Cohen's kappa between annotators"),
}

#: Thai-H6 task columns of Kim et al. Table 4, in the paper's order.
H6_TASKS = ("th_arc", "th_hellaswag", "th_mmlu", "th_truthfulqa", "th_winogrande", "th_gsm8k")
#: Dialect Table 1 metric columns and their ΔDiff columns.
DIALECT_METRICS = (
    "qa_rougeL",
    "summarization_rougeL",
    "translation_en_to_dialect_bleu",
    "translation_dialect_to_en_bleu",
)
CENTRAL = "Central"
#: ``source`` column values: a published row, or a row from this toolkit's own runs.
PAPER_SOURCE = "paper"
RUN_SOURCE = "thai-eval run"
#: Kim et al. section 4 text: "1,790 factoid and 100 instruction" ThaiCLI questions.
THAICLI_TOTALS = {"factoid": 1790, "instruction": 100}
#: Limkonchotiwat et al. section 2: 100 items per dialect (20 QA, 20 summarisation, 2 x 20 translation,
#: 10 conversation, 10 food).
DIALECT_ITEMS_PER_DIALECT = 100
#: Limkonchotiwat et al., text beside Table 6: mean kappa over the three dialects.
MEAN_KAPPA_TEXT = {"generation": "0.7969", "fluency": "0.7449"}

CHECK_COLUMNS = ["table", "row", "column", "rule", "printed", "recomputed", "rounded", "match"]


def load_published(key: str, directory: str | Path | None = None) -> pd.DataFrame:
    """One published table with every cell kept as the printed string (``"7.30"`` stays ``"7.30"``).

    Args:
        key: a key of :data:`PUBLISHED_TABLES`, e.g. ``"h6"``.
        directory: the folder of the CSV files (default :data:`PAPER_RESULTS_DIR`).
    """
    if key not in PUBLISHED_TABLES:
        raise KeyError(f"unknown published table {key!r}; choose from {sorted(PUBLISHED_TABLES)}")
    path = (Path(directory) if directory else PAPER_RESULTS_DIR) / PUBLISHED_TABLES[key].file
    if not path.is_file():
        raise ThaiEvalDataError("published table not found", path=str(path))
    with path.open(encoding="utf-8") as fh:
        return pd.read_csv(fh, dtype=str, keep_default_na=False).apply(lambda col: col.str.strip())


def load_all_published(directory: str | Path | None = None) -> dict[str, pd.DataFrame]:
    """Every table of :data:`PUBLISHED_TABLES`, keyed the same way."""
    return {key: load_published(key, directory) for key in PUBLISHED_TABLES}


def numeric(df: pd.DataFrame) -> pd.DataFrame:
    """A copy with every column whose non-empty cells all parse as numbers turned into floats (for plots).

    Empty cells become NaN; ``"-"`` becomes 0 (the papers' dash for none).
    """
    out = df.copy()
    for col in out.columns:
        text = out[col].astype(str).str.strip().str.replace(",", "", regex=False).replace({"-": "0"})
        filled = text != ""
        converted = pd.to_numeric(text.where(filled), errors="coerce")
        if filled.any() and converted[filled].notna().all():
            out[col] = converted.astype(float)
    return out


def decimals_of(printed: str) -> int:
    """Number of decimals as printed: ``"7.30"`` -> 2, ``"6.0"`` -> 1, ``"1222"`` -> 0."""
    text = printed.strip().replace(",", "")
    return len(text.split(".", 1)[1]) if "." in text else 0


def to_decimal(printed: str, *, path: str | None = None, row: int | None = None, field: str | None = None) -> Decimal:
    """A printed cell as an exact Decimal (thousands separators allowed; ``"-"`` is 0 as in the papers)."""
    text = printed.strip().replace(",", "")
    if text == "-":
        return Decimal(0)
    try:
        return Decimal(text)
    except InvalidOperation as exc:
        raise ThaiEvalDataError(f"not a number: {printed!r}", path=path, row=row, field=field) from exc


def _mean(values: list[Decimal]) -> Decimal:
    return sum(values, Decimal(0)) / len(values)


def _check(table: str, row: str, column: str, rule: str, printed: str, recomputed: Decimal) -> dict:
    rounded = round_half_up(recomputed, decimals_of(printed))
    return {
        "table": table,
        "row": row,
        "column": column,
        "rule": rule,
        "printed": printed,
        "recomputed": recomputed,
        "rounded": str(rounded),
        "match": rounded == to_decimal(printed),
    }


def _predicate_check(table: str, row: str, column: str, rule: str, printed: str, ok: bool) -> dict:
    """A check of a property of the printed value (nothing recomputed)."""
    return {
        "table": table,
        "row": row,
        "column": column,
        "rule": rule,
        "printed": printed,
        "recomputed": None,
        "rounded": None,
        "match": bool(ok),
    }


def check_h6_sizes(sizes: pd.DataFrame) -> list[dict]:
    """Kim et al. Table 1: every dataset size is a positive whole number (the sizes also tell full runs from partial)."""
    label = PUBLISHED_TABLES["h6_sizes"].label
    out = []
    for _, r in sizes.iterrows():
        n = to_decimal(r["n_samples"])
        out.append(
            _predicate_check(
                label,
                r["dataset"],
                "n_samples",
                "positive whole number",
                r["n_samples"],
                n >= 1 and n == n.to_integral_value(),
            )
        )
    return out


def check_thaicli_distribution(dist: pd.DataFrame) -> list[dict]:
    """Kim et al. Table 3: the theme counts of each format add up to the totals in the text."""
    label = PUBLISHED_TABLES["thaicli_distribution"].label
    out = []
    for fmt, total in THAICLI_TOTALS.items():
        cells = dist.loc[dist["format"] == fmt, "n_samples"]
        out.append(
            _check(
                label,
                fmt,
                "n_samples (sum over themes)",
                f"sum of the {fmt} themes = total in the text",
                str(total),
                sum((to_decimal(c) for c in cells), Decimal(0)),
            )
        )
    return out


def check_h6_averages(h6: pd.DataFrame) -> list[dict]:
    """Kim et al. Table 4: each Thai-H6 average is the mean of its six task scores."""
    label = PUBLISHED_TABLES["h6"].label
    return [
        _check(
            label,
            r["model"],
            "thai_h6_avg",
            "mean of the six task scores",
            r["thai_h6_avg"],
            _mean([to_decimal(r[t]) for t in H6_TASKS]),
        )
        for _, r in h6.iterrows()
    ]


def check_thaicli_averages(cli: pd.DataFrame) -> list[dict]:
    """Kim et al. Table 5: each ThaiCLI average is (factoid + instruction) / 2."""
    label = PUBLISHED_TABLES["thaicli"].label
    return [
        _check(
            label,
            r["model"],
            "thaicli_avg",
            "(factoid + instruction) / 2",
            r["thaicli_avg"],
            _mean([to_decimal(r["factoid"]), to_decimal(r["instruction"])]),
        )
        for _, r in cli.iterrows()
    ]


def check_dialect_deltas(auto: pd.DataFrame) -> list[dict]:
    """Limkonchotiwat et al. Table 1: every ΔDiff is the Central score minus the dialect score (same model)."""
    label = PUBLISHED_TABLES["dialect_auto"].label
    central = auto[auto["dialect"] == CENTRAL].set_index("model")
    out = []
    for _, r in auto[auto["dialect"] != CENTRAL].iterrows():
        if r["model"] not in central.index:
            raise ThaiEvalDataError(f"no Central row for {r['model']!r}", field="model")
        for metric in DIALECT_METRICS:
            delta_col = metric.rsplit("_", 1)[0] + "_delta"
            diff = to_decimal(central.at[r["model"], metric]) - to_decimal(r[metric])
            out.append(
                _check(
                    label,
                    f"{r['model']} / {r['dialect']}",
                    delta_col,
                    f"Central {metric} minus dialect",
                    r[delta_col],
                    diff,
                )
            )
    return out


def check_preference_totals(pref: pd.DataFrame, counts: pd.DataFrame) -> list[dict]:
    """Limkonchotiwat et al. Table 2: A + B + Both + None = the dialect's conversation + food items (Table 4)."""
    label = PUBLISHED_TABLES["dialect_preference"].label
    per_dialect = counts.set_index("dialect")
    out = []
    for _, r in pref.iterrows():
        items = to_decimal(per_dialect.at[r["dialect"], "conversation"]) + to_decimal(
            per_dialect.at[r["dialect"], "food"]
        )
        total = sum((to_decimal(r[c]) for c in ("prefer_a", "prefer_b", "both", "none")), Decimal(0))
        out.append(
            _check(
                label,
                f"{r['pair']} / {r['dialect']}",
                "prefer_a+prefer_b+both+none",
                "sum of the counts = conversation + food items (Table 4); printed = the item count",
                str(items),
                total,
            )
        )
    return out


def check_generation_fluency_avg(gf: pd.DataFrame) -> list[dict]:
    """Limkonchotiwat et al. Table 3: Avg = (Generation + Fluency) / 2."""
    label = PUBLISHED_TABLES["dialect_gen_fluency"].label
    return [
        _check(
            label,
            f"{r['model']} / {r['dialect']}",
            "avg",
            "(generation + fluency) / 2",
            r["avg"],
            _mean([to_decimal(r["generation"]), to_decimal(r["fluency"])]),
        )
        for _, r in gf.iterrows()
    ]


def check_sample_counts(counts: pd.DataFrame) -> list[dict]:
    """Limkonchotiwat et al. Table 4: the task counts of each dialect add up to the items per dialect."""
    label = PUBLISHED_TABLES["dialect_counts"].label
    tasks = [c for c in counts.columns if c != "dialect"]
    return [
        _check(
            label,
            r["dialect"],
            "+".join(tasks),
            "sum of the task counts = items per dialect (section 2)",
            str(DIALECT_ITEMS_PER_DIALECT),
            sum((to_decimal(r[t]) for t in tasks), Decimal(0)),
        )
        for _, r in counts.iterrows()
    ]


def check_overlap_range(overlap: pd.DataFrame) -> list[dict]:
    """Limkonchotiwat et al. Table 5: every overlap is a share in [0, 1]."""
    label = PUBLISHED_TABLES["dialect_overlap"].label
    return [
        _predicate_check(label, r["dialect"], col, "0 <= overlap <= 1", r[col], 0 <= to_decimal(r[col]) <= 1)
        for _, r in overlap.iterrows()
        for col in overlap.columns
        if col != "dialect"
    ]


def check_mean_kappa(kappa: pd.DataFrame) -> list[dict]:
    """Limkonchotiwat et al. Table 6: the mean kappa per measure equals the value stated in the text."""
    label = PUBLISHED_TABLES["dialect_kappa"].label
    return [
        _check(
            label,
            "mean over dialects",
            measure,
            "mean of the per-dialect kappas = value in the text",
            printed,
            _mean([to_decimal(v) for v in kappa[measure]]),
        )
        for measure, printed in MEAN_KAPPA_TEXT.items()
    ]


#: table key -> check function over the loaded tables.
CHECKS: dict[str, Callable[[Mapping[str, pd.DataFrame]], list[dict]]] = {
    "h6_sizes": lambda t: check_h6_sizes(t["h6_sizes"]),
    "thaicli_distribution": lambda t: check_thaicli_distribution(t["thaicli_distribution"]),
    "h6": lambda t: check_h6_averages(t["h6"]),
    "thaicli": lambda t: check_thaicli_averages(t["thaicli"]),
    "dialect_auto": lambda t: check_dialect_deltas(t["dialect_auto"]),
    "dialect_preference": lambda t: check_preference_totals(t["dialect_preference"], t["dialect_counts"]),
    "dialect_gen_fluency": lambda t: check_generation_fluency_avg(t["dialect_gen_fluency"]),
    "dialect_counts": lambda t: check_sample_counts(t["dialect_counts"]),
    "dialect_overlap": lambda t: check_overlap_range(t["dialect_overlap"]),
    "dialect_kappa": lambda t: check_mean_kappa(t["dialect_kappa"]),
}


def check_published(
    directory: str | Path | None = None, tables: Mapping[str, pd.DataFrame] | None = None
) -> pd.DataFrame:
    """Every check of every published table: one row per recomputed or range-checked cell.

    Args:
        directory: folder of the published CSVs (default :data:`PAPER_RESULTS_DIR`).
        tables: already loaded tables (as :func:`load_all_published` returns) instead of ``directory``.

    Returns:
        Columns ``table, row, column, rule, printed, recomputed, rounded, match``: ``recomputed`` is
        the exact Decimal, ``rounded`` it rounded half-up to the printed decimals (None for range checks).
    """
    loaded = tables if tables is not None else load_all_published(directory)
    rows = [row for check in CHECKS.values() for row in check(loaded)]
    return pd.DataFrame(rows, columns=CHECK_COLUMNS)


def mismatches(checks: pd.DataFrame | None = None, directory: str | Path | None = None) -> pd.DataFrame:
    """The checks whose recomputed value, rounded as printed, differs from the printed value."""
    checks = check_published(directory) if checks is None else checks
    return checks[~checks["match"].astype(bool)].reset_index(drop=True)


@dataclass(frozen=True)
class RankAgreement:
    """How alike two benchmarks rank the same models: Spearman's rho and Kendall's tau (scipy) with p-values."""

    n: int
    spearman: float
    spearman_p: float
    kendall: float
    kendall_p: float

    def __str__(self) -> str:
        return (
            f"Spearman rho = {self.spearman:.3f} (p = {self.spearman_p:.3f}), "
            f"Kendall tau = {self.kendall:.3f} (p = {self.kendall_p:.3f}), n = {self.n}"
        )


def rank_agreement(a: pd.Series, b: pd.Series) -> RankAgreement:
    """Rank correlation of two scores over the models (index labels) present in both.

    Example: ``rank_agreement(h6.set_index("model")["thai_h6_avg"], cli.set_index("model")["thaicli_avg"])``
    measures the paper's point that Thai-H6 and ThaiCLI rank the open models differently.
    """
    from scipy.stats import kendalltau, spearmanr

    both = pd.concat([pd.to_numeric(a), pd.to_numeric(b)], axis=1, join="inner").dropna()
    if len(both) < 3:
        raise ValueError(f"need at least 3 models scored on both benchmarks, got {len(both)}")
    rho, rho_p = spearmanr(both.iloc[:, 0], both.iloc[:, 1])
    tau, tau_p = kendalltau(both.iloc[:, 0], both.iloc[:, 1])
    return RankAgreement(len(both), float(rho), float(rho_p), float(tau), float(tau_p))


def checks_for(checks: pd.DataFrame, key: str) -> pd.DataFrame:
    """The checks of one published table (by :data:`PUBLISHED_TABLES` key)."""
    return checks[checks["table"] == PUBLISHED_TABLES[key].label].reset_index(drop=True)
