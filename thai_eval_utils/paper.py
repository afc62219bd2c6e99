"""Rebuild the published tables of Kim et al. (arXiv 2410.04795) and Limkonchotiwat et al. (arXiv 2504.05898).

Every derived number in the papers (an average, a total, a ΔDiff, a mean kappa) is recomputed from
its printed components in exact decimal arithmetic on the CSV strings, rounded half-up to the number
of decimals printed in that cell, and compared with the printed value. :func:`check_published`
returns one row per check; :func:`mismatches` keeps the cells that disagree. The published files
are ``data/paper_results/*.csv`` (see its README for their origin). This toolkit's own runs are
placed beside the published rows by :func:`run_records` and the ``*_with_runs`` functions below.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import pandas as pd

from .errors import ThaiEvalDataError
from .tables import round_half_up

#: Default folder of the published tables (the repository's ``data/paper_results``).
PAPER_RESULTS_DIR = Path(__file__).resolve().parent.parent / "data" / "paper_results"

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
    "thaicli_distribution": PublishedTable("thaicli_distribution_table3.csv", KIM, 3, "ThaiCLI questions per format and theme"),
    "h6": PublishedTable("thai_h6_table4.csv", KIM, 4, "Thai-H6 scores"),
    "thaicli": PublishedTable("thaicli_table5.csv", KIM, 5, "ThaiCLI judge scores"),
    "dialect_auto": PublishedTable("dialect_table1_auto_metrics.csv", LIMKONCHOTIWAT, 1, "Dialect automatic metrics and ΔDiff"),
    "dialect_preference": PublishedTable("dialect_table2_preference.csv", LIMKONCHOTIWAT, 2, "Human preference counts"),
    "dialect_gen_fluency": PublishedTable("dialect_table3_generation_fluency.csv", LIMKONCHOTIWAT, 3, "Generation and Fluency"),
    "dialect_counts": PublishedTable("dialect_table4_sample_counts.csv", LIMKONCHOTIWAT, 4, "Items per dialect and task"),
    "dialect_overlap": PublishedTable("dialect_table5_word_overlap.csv", LIMKONCHOTIWAT, 5, "Central/dialect word overlap"),
    "dialect_kappa": PublishedTable("dialect_table6_kappa.csv", LIMKONCHOTIWAT, 6, "Cohen's kappa between annotators"),
}

#: Thai-H6 task columns of Kim et al. Table 4, in the paper's order.
H6_TASKS = ("th_arc", "th_hellaswag", "th_mmlu", "th_truthfulqa", "th_winogrande", "th_gsm8k")
#: Dialect Table 1 metric columns and their ΔDiff columns.
DIALECT_METRICS = ("qa_rougeL", "summarization_rougeL", "translation_en_to_dialect_bleu", "translation_dialect_to_en_bleu")
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
    path = Path(directory or PAPER_RESULTS_DIR) / PUBLISHED_TABLES[key].file
    if not path.exists():
        raise ThaiEvalDataError("published table not found", path=path)
    return pd.read_csv(path, dtype=str, keep_default_na=False).apply(lambda col: col.str.strip())


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
        "table": table, "row": row, "column": column, "rule": rule, "printed": printed,
        "recomputed": recomputed,
        "rounded": str(rounded), "match": rounded == to_decimal(printed),
    }


def _predicate_check(table: str, row: str, column: str, rule: str, printed: str, ok: bool) -> dict:
    """A check of a property of the printed value (nothing recomputed)."""
    return {"table": table, "row": row, "column": column, "rule": rule, "printed": printed,
            "recomputed": None, "rounded": None, "match": bool(ok)}


def check_h6_sizes(sizes: pd.DataFrame) -> list[dict]:
    """Kim et al. Table 1: every dataset size is a positive whole number (the sizes also tell full runs from partial)."""
    label = PUBLISHED_TABLES["h6_sizes"].label
    out = []
    for _, r in sizes.iterrows():
        n = to_decimal(r["n_samples"])
        out.append(_predicate_check(label, r["dataset"], "n_samples", "positive whole number", r["n_samples"],
                                    n >= 1 and n == n.to_integral_value()))
    return out


def check_thaicli_distribution(dist: pd.DataFrame) -> list[dict]:
    """Kim et al. Table 3: the theme counts of each format add up to the totals in the text."""
    label = PUBLISHED_TABLES["thaicli_distribution"].label
    out = []
    for fmt, total in THAICLI_TOTALS.items():
        cells = dist.loc[dist["format"] == fmt, "n_samples"]
        out.append(_check(label, fmt, "n_samples (sum over themes)", f"sum of the {fmt} themes = total in the text",
                          str(total), sum((to_decimal(c) for c in cells), Decimal(0))))
    return out


def check_h6_averages(h6: pd.DataFrame) -> list[dict]:
    """Kim et al. Table 4: each Thai-H6 average is the mean of its six task scores."""
    label = PUBLISHED_TABLES["h6"].label
    return [_check(label, r["model"], "thai_h6_avg", "mean of the six task scores", r["thai_h6_avg"],
                   _mean([to_decimal(r[t]) for t in H6_TASKS])) for _, r in h6.iterrows()]


def check_thaicli_averages(cli: pd.DataFrame) -> list[dict]:
    """Kim et al. Table 5: each ThaiCLI average is (factoid + instruction) / 2."""
    label = PUBLISHED_TABLES["thaicli"].label
    return [_check(label, r["model"], "thaicli_avg", "(factoid + instruction) / 2", r["thaicli_avg"],
                   _mean([to_decimal(r["factoid"]), to_decimal(r["instruction"])])) for _, r in cli.iterrows()]


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
            out.append(_check(label, f"{r['model']} / {r['dialect']}", delta_col, f"Central {metric} minus dialect",
                              r[delta_col], diff))
    return out


def check_preference_totals(pref: pd.DataFrame, counts: pd.DataFrame) -> list[dict]:
    """Limkonchotiwat et al. Table 2: A + B + Both + None = the dialect's conversation + food items (Table 4)."""
    label = PUBLISHED_TABLES["dialect_preference"].label
    per_dialect = counts.set_index("dialect")
    out = []
    for _, r in pref.iterrows():
        items = to_decimal(per_dialect.at[r["dialect"], "conversation"]) + to_decimal(per_dialect.at[r["dialect"], "food"])
        total = sum((to_decimal(r[c]) for c in ("prefer_a", "prefer_b", "both", "none")), Decimal(0))
        out.append(_check(label, f"{r['pair']} / {r['dialect']}", "prefer_a+prefer_b+both+none",
                          "sum of the counts = conversation + food items (Table 4); printed = the item count",
                          str(items), total))
    return out


def check_generation_fluency_avg(gf: pd.DataFrame) -> list[dict]:
    """Limkonchotiwat et al. Table 3: Avg = (Generation + Fluency) / 2."""
    label = PUBLISHED_TABLES["dialect_gen_fluency"].label
    return [_check(label, f"{r['model']} / {r['dialect']}", "avg", "(generation + fluency) / 2", r["avg"],
                   _mean([to_decimal(r["generation"]), to_decimal(r["fluency"])])) for _, r in gf.iterrows()]


def check_sample_counts(counts: pd.DataFrame) -> list[dict]:
    """Limkonchotiwat et al. Table 4: the task counts of each dialect add up to the items per dialect."""
    label = PUBLISHED_TABLES["dialect_counts"].label
    tasks = [c for c in counts.columns if c != "dialect"]
    return [_check(label, r["dialect"], "+".join(tasks), "sum of the task counts = items per dialect (section 2)",
                   str(DIALECT_ITEMS_PER_DIALECT), sum((to_decimal(r[t]) for t in tasks), Decimal(0)))
            for _, r in counts.iterrows()]


def check_overlap_range(overlap: pd.DataFrame) -> list[dict]:
    """Limkonchotiwat et al. Table 5: every overlap is a share in [0, 1]."""
    label = PUBLISHED_TABLES["dialect_overlap"].label
    return [_predicate_check(label, r["dialect"], col, "0 <= overlap <= 1", r[col], 0 <= to_decimal(r[col]) <= 1)
            for _, r in overlap.iterrows() for col in overlap.columns if col != "dialect"]


def check_mean_kappa(kappa: pd.DataFrame) -> list[dict]:
    """Limkonchotiwat et al. Table 6: the mean kappa per measure equals the value stated in the text."""
    label = PUBLISHED_TABLES["dialect_kappa"].label
    return [_check(label, "mean over dialects", measure, "mean of the per-dialect kappas = value in the text",
                   printed, _mean([to_decimal(v) for v in kappa[measure]])) for measure, printed in MEAN_KAPPA_TEXT.items()]


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


def check_published(directory: str | Path | None = None, tables: Mapping[str, pd.DataFrame] | None = None) -> pd.DataFrame:
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
        return (f"Spearman rho = {self.spearman:.3f} (p = {self.spearman_p:.3f}), "
                f"Kendall tau = {self.kendall:.3f} (p = {self.kendall_p:.3f}), n = {self.n}")


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


# ---------------------------------------------------------------------------------------------
# This toolkit's runs beside the published rows. Each benchmark family has a small adapter that
# turns one run (``results.list_runs()`` entry: dir, card, summary) into tidy records; the rest is
# shared. Summary keys read (written by h6.evaluate, judge.judge_answers, thaicli.loglikelihood_preferences
# and dialect.run_generation):
#   thai_h6/<task>:   {"task", "n", "n_docs", "limit", "scores": {<headline metric first>: Score dict (0-1)}}
#   thaicli/judge:    {"n_unjudged", "scores": {"thaicli"|"factoid"|"instruction": Score dict (1-10)}}
#   thaicli/loglik:   {"scores": {"win_raw"|"win_norm": Score dict (0-1)}}
#   dialect/...:      {"scores": {"<dialect>/<task>/<metric>": Score dict (x100 as the paper prints it)},
#                     "delta_diff": {...}} (dialect.summary_scores; ΔDiff is recomputed here from the scores).
#                     Runs made before the summary held scores have no "scores" key: for them, the scores the
#                     dialect notebook saved as <outputs>/tables/dialect_scores_<model-slug>.csv (columns
#                     dialect, task, metric, value, n; the model's latest scoring), else "not scored".
# A run whose summary is missing (unfinished) or that has fewer items than the paper's dataset is partial.

RUN_RECORD_COLUMNS = ["model", "benchmark", "table", "dialect", "column", "value", "n", "expected_n", "partial",
                      "finished", "options", "config_id", "run_dir", "written_at"]
#: Dialect keys of the benchmark and the names the paper prints (Limkonchotiwat et al. Table 1).
DIALECT_DISPLAY = {"center": "Central", "east": "Isan", "north": "Lanna", "south": "Dambro"}


def _score_value(entry: Any) -> tuple[float | None, int | None]:
    """A Score dict (``value``, ``n``) or a bare number as (value, n)."""
    if isinstance(entry, Mapping):
        value, n = entry.get("value"), entry.get("n")
        return (None if value is None else float(value)), (None if n is None else int(n))
    if isinstance(entry, (int, float)):
        return float(entry), None
    return None, None


def _count_items(run_dir: Path) -> int:
    path = Path(run_dir) / "items.jsonl"
    if not path.exists():
        return 0
    with open(path, encoding="utf-8") as fh:
        return sum(1 for line in fh if line.strip())


def expected_sizes(tables: Mapping[str, pd.DataFrame]) -> dict[str, int]:
    """Full-run item counts from the published tables: Thai-H6 tasks (Table 1), ThaiCLI formats (Table 3),
    dialect tasks per dialect (Table 4; translation counts both directions, so each direction is half)."""
    sizes = {r["dataset"].lower().replace("-", "_"): int(to_decimal(r["n_samples"])) for _, r in tables["h6_sizes"].iterrows()}
    for fmt, part in tables["thaicli_distribution"].groupby("format"):
        sizes[f"thaicli/{fmt}"] = int(sum(to_decimal(v) for v in part["n_samples"]))
    counts = tables["dialect_counts"]
    for task in ("qa", "summarization"):
        sizes[f"dialect/{task}"] = int(to_decimal(counts[task].iloc[0]))
    half = int(to_decimal(counts["translation"].iloc[0]) / 2)
    sizes["dialect/translation_en_to_dialect"] = sizes["dialect/translation_dialect_to_en"] = half
    return sizes


def _h6_records(run: Mapping[str, Any], sizes: Mapping[str, int]) -> list[dict]:
    card, summary = run["card"], run["summary"] or {}
    task = summary.get("task") or card.get("config", {}).get("task") or card["benchmark"].split("/")[-1]
    value, n = None, _count_items(run["dir"])
    scores = summary.get("scores") or {}
    if scores:  # the headline metric is the first (h6._scores puts it first)
        value, n_scored = _score_value(next(iter(scores.values())))
        value, n = (None if value is None else 100 * value), n_scored or summary.get("n", n)
    return [{"table": "h6", "column": task, "value": value, "n": n, "expected_n": sizes.get(task)}]


def _thaicli_records(run: Mapping[str, Any], sizes: Mapping[str, int]) -> list[dict]:
    scores = (run["summary"] or {}).get("scores") or {}
    sub = run["card"]["benchmark"].split("/", 1)[-1]
    names = {"judge": ("factoid", "instruction", "thaicli"), "loglik": ("win_raw", "win_norm")}.get(sub, ())
    out = []
    for name in names:
        value, n = _score_value(scores.get(name))
        expected = (sizes.get("thaicli/factoid", 0) + sizes.get("thaicli/instruction", 0)) if name not in ("factoid", "instruction") \
            else sizes.get(f"thaicli/{name}")
        out.append({"table": "thaicli", "column": name if sub == "judge" else f"loglik_{name}",
                    "value": None if value is None else (100 * value if sub == "loglik" else value), "n": n, "expected_n": expected})
    if sub == "judge" and (run["summary"] or {}).get("n_unjudged"):
        for rec in out:
            rec["partial_reason"] = f"{run['summary']['n_unjudged']} unjudged"
    return out


def _dialect_scores_file(run: Mapping[str, Any]) -> Path | None:
    """``<outputs>/tables/dialect_scores_<model-slug>.csv``, the scores the dialect notebook saves beside a run
    (read only for runs whose summary predates the scores in it)."""
    from .results import slugify

    runs_dir = next((p for p in Path(run["dir"]).parents if p.name == "runs"), None)
    if runs_dir is None:
        return None
    path = runs_dir.parent / "tables" / f"dialect_scores_{slugify(str(run['card'].get('model_name', '')))}.csv"
    return path if path.exists() else None


def _dialect_summary_scores(scores: Mapping[str, Any]) -> list[dict]:
    """The ``scores`` of a dialect run's summary (``{"<dialect>/<task>/<metric>": Score dict}``) as records
    ``dialect, task, metric, value, n``."""
    out = []
    for key, entry in scores.items():
        parts = str(key).split("/")
        if len(parts) != 3:
            continue
        value, n = _score_value(entry)
        out.append({"dialect": parts[0], "task": parts[1], "metric": parts[2], "value": value, "n": n})
    return out


def _dialect_records(run: Mapping[str, Any], sizes: Mapping[str, int]) -> list[dict]:
    out = []
    summary = run["summary"]
    scores: list[dict] = []
    if summary is not None and "scores" in summary:
        scores = _dialect_summary_scores(summary["scores"] or {})
    elif summary is not None and (scores_file := _dialect_scores_file(run)) is not None:
        scores = pd.read_csv(scores_file).to_dict("records")  # a run from before summaries held scores
    if scores:  # imported only when needed: metrics pulls in pythainlp and rouge-score (slow to import)
        from .metrics import TABLE1_TASKS, table_task
    for rec in scores:
        family = table_task(str(rec.get("task", "")))
        metric, column = TABLE1_TASKS.get(family, (None, None))
        if column is None or rec.get("metric") != metric:
            continue
        dialect = DIALECT_DISPLAY.get(rec.get("dialect"), rec.get("dialect"))
        out.append({"table": "dialect_auto", "dialect": dialect, "column": column, "value": rec.get("value"),
                    "n": rec.get("n"), "expected_n": sizes.get(f"dialect/{family}")})
    if not out:  # generations without scores: say so rather than show nothing
        out.append({"table": "dialect_auto", "column": None, "value": None, "n": _count_items(run["dir"]),
                    "expected_n": None, "partial_reason": "not scored"})
    return out


#: Benchmark family (first part of the run's benchmark) -> adapter(run, expected sizes) -> records.
RUN_ADAPTERS: dict[str, Callable[[Mapping[str, Any], Mapping[str, int]], list[dict]]] = {
    "thai_h6": _h6_records,
    "thaicli": _thaicli_records,
    "dialect": _dialect_records,
}


def run_records(outputs: str | Path | None = None, tables: Mapping[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """Every score of this toolkit's runs under ``<outputs>/runs`` as tidy records (see :data:`RUN_RECORD_COLUMNS`).

    ``partial`` is True when the run is unfinished, has unjudged items, or scored fewer items than the
    paper's dataset (``expected_n``); ``options`` is the run's protocol configuration (JSON).
    """
    import json

    from .results import list_runs

    sizes = expected_sizes(tables if tables is not None else load_all_published())
    rows = []
    for run in list_runs(outputs):
        card = run["card"]
        adapter = RUN_ADAPTERS.get(str(card.get("benchmark", "")).split("/")[0])
        if adapter is None:
            continue
        for rec in adapter(run, sizes):
            n, expected = rec.get("n"), rec.get("expected_n")
            reason = rec.pop("partial_reason", None)
            rows.append({
                "model": card.get("model_name"), "benchmark": card.get("benchmark"), "dialect": None, **rec,
                "partial": run["summary"] is None or reason is not None or (expected is not None and (n or 0) < expected),
                "finished": run["summary"] is not None,
                "options": json.dumps(card.get("config", {}), ensure_ascii=False, sort_keys=True, default=str),
                "config_id": card.get("config_id"), "run_dir": str(run["dir"]),
                "written_at": (run["summary"] or {}).get("written_at") or card.get("created_at"),
            })  # fmt: skip
    return pd.DataFrame(rows, columns=RUN_RECORD_COLUMNS)


def _text(value: Any, decimals: int = 2) -> str:
    """A run's number printed like the paper's cells (half-up, ``decimals`` places); missing -> ``""``."""
    return "" if value is None or pd.isna(value) else str(round_half_up(float(value), decimals))


def _options_text(options: pd.Series) -> str:
    """The runs' protocol options in one line: ``key=value``, or ``key=v1/v2`` where the runs differ."""
    import json

    merged: dict[str, list[str]] = {}
    for text in options:
        for key, value in json.loads(text).items():
            if key in ("task", "docs_sha256"):
                continue
            shown = json.dumps(value, ensure_ascii=False, default=str)
            if shown not in merged.setdefault(key, []):
                merged[key].append(shown)
    return ", ".join(f"{k}={'/'.join(v)}" for k, v in sorted(merged.items()))


def _run_rows(records: pd.DataFrame, table: str, keys: list[str]) -> list[dict]:
    """One row per model (and dialect) of ``table``'s records: latest finished run per cell, values as raw floats."""
    recs = records[records["table"] == table].sort_values(["finished", "written_at"], na_position="first", kind="stable")
    recs = recs.drop_duplicates([*keys, "column"], keep="last")
    rows = []
    for key_values, group in recs.groupby(keys, sort=False, dropna=False):
        key_values = key_values if isinstance(key_values, tuple) else (key_values,)
        row: dict[str, Any] = {"source": RUN_SOURCE, **dict(zip(keys, key_values))}
        scored = group.dropna(subset=["column"])
        row.update(dict(zip(scored["column"], scored["value"])))
        row["partial"] = bool(group["partial"].any())
        row["samples"] = ", ".join(
            f"{c} {'' if pd.isna(n) else int(n)}/{'' if pd.isna(e) else int(e)}" if not pd.isna(c) else f"{int(n or 0)} items, not scored"
            for c, n, e in zip(group["column"], group["n"], group["expected_n"]))  # fmt: skip
        row["options"] = _options_text(group["options"])
        rows.append(row)
    return rows


def _combine(published: pd.DataFrame, run_rows: list[dict], value_cols: list[str]) -> pd.DataFrame:
    paper_part = published.assign(source=PAPER_SOURCE, partial=False, samples="", options="")
    runs = pd.DataFrame(run_rows)
    if runs.empty:
        return paper_part[["source", *published.columns, "partial", "samples", "options"]].reset_index(drop=True)
    for col in value_cols:
        runs[col] = runs[col].map(_text) if col in runs else ""
    extra = [c for c in value_cols if c not in published.columns]
    cols = ["source", *published.columns, *extra, "partial", "samples", "options"]
    out = pd.concat([paper_part, runs], ignore_index=True).reindex(columns=cols)
    text_cols = [c for c in cols if c != "partial"]
    out[text_cols] = out[text_cols].astype(object).where(out[text_cols].notna(), "")
    return out


def h6_with_runs(published: pd.DataFrame, records: pd.DataFrame) -> pd.DataFrame:
    """Kim et al. Table 4 with this toolkit's runs below it; a run's H6 average only when all six tasks ran."""
    rows = _run_rows(records, "h6", ["model"])
    for row in rows:
        have = [row.get(t) for t in H6_TASKS]
        row["thai_h6_avg"] = sum(have) / len(have) if all(v is not None and not pd.isna(v) for v in have) else None
        row["partial"] = row["partial"] or row["thai_h6_avg"] is None
    return _combine(published, rows, ["thai_h6_avg", *H6_TASKS])


def thaicli_with_runs(published: pd.DataFrame, records: pd.DataFrame) -> pd.DataFrame:
    """Kim et al. Table 5 with this toolkit's runs below it (judge scores, and the judge-free win rates x100)."""
    rows = _run_rows(records, "thaicli", ["model"])
    for row in rows:
        if pd.isna(row.get("thaicli", None)) and not pd.isna(row.get("factoid")) and not pd.isna(row.get("instruction")):
            row["thaicli"] = (row["factoid"] + row["instruction"]) / 2
        row["thaicli_avg"] = row.pop("thaicli", None)
        row["partial"] = row["partial"] or row["thaicli_avg"] is None or pd.isna(row["thaicli_avg"])
    return _combine(published, rows, ["thaicli_avg", "factoid", "instruction", "loglik_win_raw", "loglik_win_norm"])


def dialect_with_runs(published: pd.DataFrame, records: pd.DataFrame) -> pd.DataFrame:
    """Limkonchotiwat et al. Table 1 with this toolkit's runs; a run's ΔDiff = its Central minus its dialect score."""
    rows = _run_rows(records, "dialect_auto", ["model", "dialect"])
    central = {r["model"]: r for r in rows if r["dialect"] == CENTRAL}
    for row in rows:
        base = central.get(row["model"])
        for metric in DIALECT_METRICS:
            delta = metric.rsplit("_", 1)[0] + "_delta"
            if row["dialect"] != CENTRAL and base is not None and metric in base and metric in row:
                row[delta] = base[metric] - row[metric]
    cols = [c for c in published.columns if c not in ("model", "dialect")]
    return _combine(published, rows, cols)


#: Published tables that can hold this toolkit's runs, and the function that places them.
WITH_RUNS = {"h6": h6_with_runs, "thaicli": thaicli_with_runs, "dialect_auto": dialect_with_runs}


def table_with_runs(
    key: str,
    tables: Mapping[str, pd.DataFrame] | None = None,
    outputs: str | Path | None = None,
    *,
    include_runs: bool = True,
    records: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """A published table with a ``source`` column (``"paper"`` / ``"thai-eval run"``) and, where the
    benchmark has runs, this toolkit's rows below the paper's, marked ``partial`` and with their
    ``samples`` (scored/full item counts) and ``options``. Cells are printed strings."""
    tables = tables if tables is not None else load_all_published()
    if key in WITH_RUNS and include_runs:
        records = run_records(outputs, tables) if records is None else records
        return WITH_RUNS[key](tables[key], records)
    return tables[key].assign(source=PAPER_SOURCE)[["source", *tables[key].columns]]


def checks_for(checks: pd.DataFrame, key: str) -> pd.DataFrame:
    """The checks of one published table (by :data:`PUBLISHED_TABLES` key)."""
    return checks[checks["table"] == PUBLISHED_TABLES[key].label].reset_index(drop=True)
