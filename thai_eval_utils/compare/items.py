"""Per-item tables of every headline score of a stored run (issue 14), from its ``items.jsonl`` records:
Thai-H6 task metrics per document (Kim et al. 2024, Table 4), ThaiCLI judge scores per question (section 4),
dialect ROUGE-L per sentence and the sentences of corpus BLEU (Limkonchotiwat et al. 2025, Table 1).

Item keys: Thai-H6 pairs documents by their index in the scored split (the store key also hashes the
prompt, which changes with the few-shot draws, so two few-shot seeds would share no key; equal data hashes
make the index safe); ThaiCLI by question ``id`` (the judge-run key hashes the answer); dialects by the
store key ``<dialect>/<task>/<id>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pandas as pd

from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.provenance import sha256_file
from thai_eval_utils.dialect.data import load_dialect
from thai_eval_utils.dialect.generation import UNSCORED_TASKS, item_key
from thai_eval_utils.dialect.metrics import TABLE1_TASKS, rouge_l_scores, table_task
from thai_eval_utils.h6.tasks import TASK_METRICS
from thai_eval_utils.stats.align import DataMismatchError

Kind = Literal["binary", "mean", "corpus"]
#: Thai-H6 headline metrics that are 0/1 per document (tested with exact McNemar); mc2 is a probability mass.
BINARY_METRICS = ("acc", "acc_norm", "exact_match")


@dataclass(frozen=True)
class Headline:
    """One headline score's per-item values in one run.

    ``items`` has ``key`` and ``value`` (corpus metrics: ``hyp`` and ``ref`` instead, the metric is
    recomputed on the corpus) and detail columns for display. ``stratum`` groups rows into averages
    (Thai-H6 task, ThaiCLI format). ``scale`` turns values into the published scale (100 for 0-1 values).
    """

    name: str
    family: str
    stratum: str
    kind: Kind
    scale: float
    items: pd.DataFrame
    run: StoredRun
    note: str = ""


def h6_headline(run: StoredRun) -> Headline:
    """The headline metric of a Thai-H6 task run (``TASK_METRICS[task][0]``) per document."""
    task = run.benchmark.split("/")[-1]
    if task not in TASK_METRICS:
        raise ThaiEvalDataError(f"unknown Thai-H6 task {task!r}", path=run.dir / "run_card.json", field="benchmark")
    metric = TASK_METRICS[task][0]
    rows = []
    for i, rec in enumerate(run.records()):
        if metric not in rec or "doc" not in rec:
            raise ThaiEvalDataError(f"record lacks {metric!r} or 'doc'", path=run.dir / "items.jsonl", row=i, field=metric)
        rows.append({"key": str(rec["doc"]), "value": float(rec[metric]), "store_key": rec["key"], "doc": int(rec["doc"]),
                     "pred": rec.get("pred_norm" if metric == "acc_norm" else "pred"), "gold": rec.get("gold"),
                     "generation": rec.get("generation"), "subject": rec.get("subject")})
    kind: Kind = "binary" if metric in BINARY_METRICS else "mean"
    return Headline(f"thai_h6/{task}/{metric}", "thai_h6", task, kind, 100.0, pd.DataFrame(rows), run)


def thaicli_headlines(run: StoredRun) -> list[Headline]:
    """Factoid and instruction judge scores per question id; unjudged judgements are left out and counted.

    A run judged ``repeats`` times holds one record per (item, repeat): an item's value is the mean of its judged
    repeats, as :func:`thai_eval_utils.thaicli.scores.thaicli_scores` scores it.
    """
    recs = run.records()
    unjudged = sum(1 for r in recs if r.get("status") == "unjudged" or r.get("score") is None)
    out = []
    for fmt in ("factoid", "instruction"):
        judged = [r for r in recs if r.get("format") == fmt and r.get("status") != "unjudged" and r.get("score") is not None]
        rows = pd.DataFrame([{"key": str(r["id"]), "value": float(r["score"]), "status": r.get("status"),
                              "explanation": r.get("explanation", ""), "theme": r.get("theme")} for r in judged],
                            columns=["key", "value", "status", "explanation", "theme"])  # fmt: skip
        rows = rows.groupby("key", sort=False, as_index=False).agg(
            value=("value", "mean"), status=("status", "first"), explanation=("explanation", "first"), theme=("theme", "first"))
        note = f"{unjudged} unjudged judgement(s) left out of the run" if unjudged else ""
        out.append(Headline(f"thaicli/{fmt}", "thaicli", fmt, "mean", 1.0, rows, run, note))
    return out


def _data_folders(run: StoredRun) -> list[Path]:
    """Folders ``<source>`` of the dialect files a run card lists (``<source>/<dialect>/<task>.jsonl``) that exist."""
    return sorted({Path(p).parent.parent for p in (run.card.get("data_files") or {}) if Path(p).exists()})


def dialect_references(run: StoredRun, data_source: str | Path | None = None) -> pd.DataFrame:
    """The items (with reference ``text_2``) a dialect run was made on, keyed by the store key.

    Read from ``data_source`` or else from where the run card says the files were; every file hash in the
    run card must be among the files read.

    Raises:
        ThaiEvalDataError: no data folder found; DataMismatchError: the files differ from the run's.
    """
    sources = [Path(data_source)] if data_source else _data_folders(run)
    if not sources:
        raise ThaiEvalDataError("the run's dialect data files are not found from here; pass the data folder (dialect_data)",
                                path=run.dir / "run_card.json", field="data_files")
    df = load_dialect(sources[0])
    have = {sha256_file(p) for p in df.attrs["files"]}
    missing = [p for p, h in (run.card.get("data_files") or {}).items() if h not in have]
    if missing:
        raise DataMismatchError(f"{sources[0]} does not hold the data the run used (e.g. {missing[0]} differs): its "
                                "references would not be the run's", path=run.dir / "run_card.json", field="data_files")
    df = df.copy()
    df["key"] = [item_key(r) for r in df.to_dict("records")]
    return df.set_index("key")


def dialect_headlines(run: StoredRun, data_source: str | Path | None = None) -> list[Headline]:
    """Per (dialect, task) of a dialect run: ROUGE-L per sentence (QA, summarisation) or the sentences of
    corpus BLEU (translation), the paper's Table 1 metric of the task family (``TABLE1_TASKS``)."""
    refs = dialect_references(run, data_source)
    recs = pd.DataFrame(run.records())
    out = []
    if recs.empty:
        return out
    for (dialect, task), group in recs.groupby(["dialect", "task"], sort=True):
        if task in UNSCORED_TASKS or table_task(task) not in TABLE1_TASKS:
            continue
        metric = TABLE1_TASKS[table_task(task)][0]
        missing = [k for k in group["key"] if k not in refs.index]
        if missing:
            raise ThaiEvalDataError(f"no reference for item {missing[0]!r}", path=run.dir / "items.jsonl", field="key")
        items = pd.DataFrame({"key": group["key"].tolist(), "hyp": group["output"].fillna("").tolist(),
                              "ref": refs.loc[group["key"], "text_2"].fillna("").tolist(),
                              "input": group["prompt"].tolist() if "prompt" in group else None})
        kind: Kind = "corpus"
        if metric == "rougeL":
            items["value"] = rouge_l_scores(items["hyp"].tolist(), items["ref"].tolist())
            kind = "mean"
        out.append(Headline(f"dialect/{dialect}/{task}/{metric}", "dialect", f"{dialect}/{task}", kind, 1.0, items, run))
    return out


def headlines(runs: Sequence[StoredRun], *, dialect_data: str | Path | None = None) -> list[Headline]:
    """Every headline score of the runs, in the order given."""
    out: list[Headline] = []
    for run in runs:
        if run.family == "thai_h6":
            out.append(h6_headline(run))
        elif run.benchmark == "thaicli/judge":
            out += thaicli_headlines(run)
        elif run.benchmark == "dialect/generation":
            out += dialect_headlines(run, dialect_data)
    return out
