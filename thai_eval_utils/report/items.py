"""The report's item browser records (issue 22): one record per item of every selected run, each readable on
its own: Thai-H6 question, choices and log-likelihoods (:mod:`~thai_eval_utils.report.h6_items`), ThaiCLI
question, references, the model's answer and the judge's reply and score (Kim et al. 2024 section 4), dialect
prompt, output and reference with its per-item score (Limkonchotiwat et al. 2025).

Records use short keys (the report embeds tens of thousands of them): ``id``, ``m`` model, ``b`` benchmark family,
``t`` task, ``k`` the key that pairs one item across models, ``v`` the headline value, ``c`` correct (0/1 metrics),
``q`` question or prompt, ``ch`` choices, ``ll`` their log-likelihoods, ``p`` the model's choice, ``g`` gold,
``o`` output, ``fs`` few-shot block (pool id, example indices), ``ref`` reference, ``j`` judge reply, ``js`` judge
status, ``r`` judge repeat, ``sub`` subject, ``hash`` prompt hash, ``note`` what could not be shown and why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from thai_eval_utils.compare.items import Headline
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.dialect.metrics import bleu
from thai_eval_utils.h6.tasks import TASK_METRICS
from thai_eval_utils.report.h6_items import h6_items, load_run_data
from thai_eval_utils.report.runs import ReportRuns
from thai_eval_utils.thaicli.data import load_thaicli


def _answers(judge_run: StoredRun) -> dict[str, str]:
    """ThaiCLI answers (id -> text) of the answers run the judge run names (``config.answers_run``)."""
    answers_id = (judge_run.card.get("config") or {}).get("answers_run")
    folder = judge_run.dir.parent.parent / "answers" / str(answers_id)
    if not answers_id or not (folder / "run_card.json").exists():
        return {}
    return {str(r["id"]): str(r.get("answer", "")) for r in StoredRun.from_dir(folder).records()}


def _thaicli_questions(data_dir: Path | None) -> pd.DataFrame | None:
    folder = None if data_dir is None else Path(data_dir) / "thaicli"
    if folder is None or not folder.exists():
        return None
    return load_thaicli(folder).set_index("id")


def thaicli_items(run: StoredRun, questions: pd.DataFrame | None) -> list[dict[str, Any]]:
    """One item per judgement (item x repeat): the question, both references, the answer, the judge's reply."""
    answers = _answers(run)
    out = []
    for rec in run.records():
        qid = str(rec["id"])
        score = rec.get("score")
        item: dict[str, Any] = {"b": "thaicli", "t": str(rec.get("format", "")), "k": qid,
                                "v": None if score is None else float(score), "o": answers.get(qid, ""),
                                "j": str(rec.get("explanation") or rec.get("error") or ""), "js": rec.get("status"),
                                "r": rec.get("repeat", 0), "sub": rec.get("theme")}
        if questions is not None and qid in questions.index:
            q = questions.loc[qid]
            item["q"], item["ref"] = str(q["question"]), f"chosen: {q['chosen']}\n\nrejected: {q['rejected']}"
        else:
            item["note"] = "question and references not at hand (ThaiCLI data folder not found or has other ids)"
        if not item["o"]:
            item["note"] = "; ".join(filter(None, [item.get("note"), "the answers run is not in this outputs folder"]))
        out.append(item)
    return out


def dialect_items(h: Headline) -> list[dict[str, Any]]:
    """One item per generated sentence of a (dialect, task): prompt, output, reference and its score (ROUGE-L;
    translation: the sentence's own BLEU, for ranking: the task's BLEU is a corpus score)."""
    items = h.items
    values = items["value"] if "value" in items else [bleu([x], [r]) for x, r in zip(items["hyp"], items["ref"])]
    return [{"b": "dialect", "t": h.stratum, "k": str(k), "v": float(v), "q": str(q or ""), "o": str(x), "ref": str(r)}
            for k, v, q, x, r in zip(items["key"], values, items["input"] if "input" in items else [""] * len(items),
                                     items["hyp"], items["ref"])]


def collect_items(runs: ReportRuns, heads: dict[str, list[Headline]], *, data_dir: str | Path | None = None
                  ) -> tuple[list[dict[str, Any]], dict[str, list[str]], list[str]]:
    """Every item of every selected run.

    Args:
        runs: the selected runs (:func:`~thai_eval_utils.report.runs.collect_runs`).
        heads: model -> its headline per-item values (``compare.items.headlines``; dialect items come from them).
        data_dir: a folder with ``thai_h6/``, ``thaicli/``, ``dialect/`` to resolve what older records lack.

    Returns:
        ``(items, few-shot pools, notes)``.
    """
    data_dir = Path(data_dir) if data_dir else None
    items: list[dict[str, Any]] = []
    pools: dict[str, list[str]] = {}
    notes: list[str] = []
    questions = None
    for model, run in runs.runs():
        if run.family == "thai_h6":
            data, records = load_run_data(run, data_dir), run.records()
            if data.docs is None and records and "doc_row" not in records[0]:
                notes.append(f"{model} {run.benchmark}: {data.missing}")
            new = h6_items(run, records, TASK_METRICS[run.benchmark.split("/")[-1]][0], data, pools)
        elif run.benchmark == "thaicli/judge":
            if questions is None:
                try:
                    questions = _thaicli_questions(data_dir)
                except ThaiEvalDataError as exc:
                    notes.append(f"ThaiCLI questions not read: {exc}")
            new = thaicli_items(run, questions)
        elif run.benchmark == "dialect/generation":
            new = [it for h in heads.get(model, []) if h.run is run for it in dialect_items(h)]
            if not new:
                notes.append(f"{model} {run.benchmark}: no scored items (references not at hand?)")
        else:
            continue
        for it in new:
            it["m"] = model
        items += new
    for i, it in enumerate(items):
        it["id"] = i
    return items, pools, notes


def items_frame(items: list[dict[str, Any]]) -> pd.DataFrame:
    """The items as a DataFrame with readable column names, every field a column (for notebooks and tests)."""
    names = {"m": "model", "b": "benchmark", "t": "task", "k": "key", "v": "value", "c": "correct", "q": "question",
             "ch": "choices", "ll": "loglikelihoods", "p": "pred", "g": "gold", "o": "output", "ref": "reference",
             "j": "judge_reply", "js": "judge_status", "r": "repeat", "sub": "subject", "fs": "fewshot", "note": "note"}
    frame = pd.DataFrame(items).rename(columns=names)
    return frame.reindex(columns=["id", *names.values(), *[c for c in frame.columns if c not in names.values() and c != "id"]])


def to_json(obj: Any) -> str:
    """Compact JSON (Thai kept as is) for embedding."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
