"""The items on which two compared runs differ most, side by side (issue 14): the input, the reference, both
models' outputs and, for ThaiCLI, both judge explanations; for reading, not for statistics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from thai_eval_utils.compare.items import Headline
from thai_eval_utils.compare.runs import Comparison
from thai_eval_utils.core.provenance import sha256_file
from thai_eval_utils.dialect.metrics import bleu
from thai_eval_utils.h6 import tasks as T
from thai_eval_utils.h6.data import load_h6_task
from thai_eval_utils.thaicli.data import load_thaicli

COLUMNS = ["score", "key", "value_a", "value_b", "diff", "input", "reference", "output_a", "output_b",
           "explanation_a", "explanation_b"]
_QUESTION_FIELDS = ("question", "ctx", "sentence", "ctx_a")  # Thai-H6 doc text by task (official columns)


def _values(h: Headline) -> pd.DataFrame:
    """Per-item values; a corpus metric is ranked by each sentence's own score (ranking only)."""
    items = h.items.copy()
    if h.kind == "corpus":
        items["value"] = [bleu([x], [r]) for x, r in zip(items["hyp"], items["ref"])]
    return items.set_index("key")


def _h6_docs(h: Headline, source: str | Path | None) -> list[dict[str, Any]] | None:
    """The scored split of the run's task, when ``source`` holds exactly the files the run used."""
    if source is None:
        return None
    data = load_h6_task(source, h.stratum)
    if sorted(sha256_file(p) for p in data.files) != sorted((h.run.card.get("data_files") or {}).values()):
        return None
    return list(data.docs)


def _choices(spec: T.TaskSpec, doc: dict[str, Any]) -> list[str]:
    """Answer options to show: the task's choices (Winogrande: its two options; TruthfulQA: the MC1 list)."""
    if isinstance(spec, T.WinograndeTask):
        return [str(doc.get("option1", "")), str(doc.get("option2", ""))]
    if isinstance(spec, T.TruthfulQATask):
        return [str(c) for c in doc["mc1_targets"]["choices"]]
    return T.choices(spec, doc)


def _h6_side(h: Headline, row: pd.Series, docs: list[dict[str, Any]] | None) -> dict[str, str]:
    if docs is None:
        return {"input": f"doc {row.name} (pass h6_data for its text)", "reference": str(row.get("gold", ""))}
    spec = T.get_task(h.stratum)
    doc = docs[int(row.name)]
    text = next((str(doc[f]) for f in _QUESTION_FIELDS if doc.get(f)), "")
    if not spec.uses_loglikelihood:  # GSM8K: the reference answer
        return {"input": text, "reference": str(doc.get("answer", ""))}
    opts = _choices(spec, doc)
    gold = 0 if isinstance(spec, T.TruthfulQATask) else row.get("gold")  # MC1 lists the true answer first
    ref = opts[int(gold)] if gold is not None and not pd.isna(gold) and 0 <= int(gold) < len(opts) else ""
    return {"input": text + "\n" + " | ".join(f"{i}: {c}" for i, c in enumerate(opts)), "reference": ref}


def _h6_output(h: Headline, row: pd.Series, docs: list[dict[str, Any]] | None) -> str:
    if row.get("generation") is not None and not pd.isna(row.get("generation")):
        return str(row["generation"])
    pred = row.get("pred")
    if pred is None or pd.isna(pred):
        return ""
    if docs is None:
        return f"choice {int(pred)}"
    opts = _choices(T.get_task(h.stratum), docs[int(row.name)])
    return opts[int(pred)] if 0 <= int(pred) < len(opts) else f"choice {int(pred)}"


def _answers(h: Headline) -> dict[str, str]:
    """ThaiCLI answers (id -> text) from the answers run the judge run names (``config.answers_run``)."""
    answers_id = (h.run.card.get("config") or {}).get("answers_run")
    path = h.run.dir.parent.parent / "answers" / str(answers_id) / "items.jsonl"
    if not answers_id or not path.exists():
        return {}
    recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {str(r["id"]): r.get("answer", "") for r in recs}


def largest_differences(
    cmp: Comparison,
    n: int = 5,
    *,
    scores: list[str] | None = None,
    h6_data: str | Path | None = None,
    thaicli_data: str | Path | None = None,
) -> pd.DataFrame:
    """The ``n`` items per score with the largest ``|value_a - value_b|`` (ties: by key), side by side.

    Args:
        cmp: a :func:`~thai_eval_utils.compare.runs.compare_runs` result.
        scores: rows to show (default: every per-item row of ``cmp``).
        h6_data: the Thai-H6 data folder (document texts, shown when its files are the run's).
        thaicli_data: the ThaiCLI data (questions and the chosen / rejected references), joined by id.
    """
    cli = load_thaicli(thaicli_data).set_index("id") if thaicli_data else None
    out = []
    for name in scores or [r.metric for r in cmp.rows if r.metric in cmp.headlines_a]:
        ha, hb = cmp.headlines_a[name], cmp.headlines_b[name]
        va, vb = _values(ha), _values(hb)
        both = va.join(vb, how="inner", lsuffix="_a", rsuffix="_b")
        both["diff"] = both["value_a"] - both["value_b"]
        both = both.assign(_abs=both["diff"].abs(), _key=both.index.astype(str)).sort_values(["_abs", "_key"], ascending=[False, True])
        top = both.head(n)
        docs = _h6_docs(ha, h6_data) if ha.family == "thai_h6" else None
        ans_a, ans_b = (_answers(ha), _answers(hb)) if ha.family == "thaicli" else ({}, {})
        for key, row in top.iterrows():
            rec: dict[str, Any] = {"score": name, "key": key, "value_a": row["value_a"], "value_b": row["value_b"], "diff": row["diff"]}
            if ha.family == "thai_h6":
                ra, rb = va.loc[key], vb.loc[key]
                rec |= _h6_side(ha, ra, docs) | {"output_a": _h6_output(ha, ra, docs), "output_b": _h6_output(hb, rb, docs)}
            elif ha.family == "thaicli":
                q = cli.loc[key] if cli is not None and key in cli.index else None
                rec |= {"input": "" if q is None else q["question"],
                        "reference": "" if q is None else f"chosen: {q['chosen']}\nrejected: {q['rejected']}",
                        "output_a": ans_a.get(key, ""), "output_b": ans_b.get(key, ""),
                        "explanation_a": row["explanation_a"], "explanation_b": row["explanation_b"]}
            else:
                rec |= {"input": row["input_a"], "reference": row["ref_a"], "output_a": row["hyp_a"], "output_b": row["hyp_b"]}
            out.append(rec)
    return pd.DataFrame(out, columns=COLUMNS).fillna("")
