"""Thai-H6 items as a reader sees them: the question, the choices with their log-likelihoods, the gold
answer, the model's choice or generation and the few-shot block (Kim et al. 2024 section 3; prompts as
``h6.tasks`` builds them), for the report's item browser and a comparison's side-by-side rows.

Records written since the report's item browser was added carry their document row (``doc_row``) and ``gold``, and
newer ones the prompt that was sent (``context``: shown whole when the run's data is not at hand); older records are
resolved from the data by their index ``doc``, only when the data files hash as the run card says (else the item
shows its index, prompt hash and a note that the data is not at hand).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from thai_eval_utils.core.benchmark import Headline, ItemView, Sides
from thai_eval_utils.core.provenance import sha256_file, sha256_text
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.h6 import tasks as T
from thai_eval_utils.h6.data import find_run_data, load_h6_task
from thai_eval_utils.h6.evaluation import record_gold
from thai_eval_utils.tasks import generative_mc as MC

#: Per-record fields that pick the model's choice for each headline metric.
_PRED_FIELD = {"acc_norm": "pred_norm", "acc": "pred"}
#: Headline metrics that are 0/1 per document (an item is correct or not; compare tests them with exact McNemar);
#: mc2 is a probability mass.
BINARY_METRICS = ("acc", "acc_norm", "exact_match")
#: A document's text by task (the official datasets' columns), for the side-by-side view.
_QUESTION_FIELDS = ("question", "ctx", "sentence", "ctx_a")


@dataclass
class H6Data:
    """A run's task data when at hand: its documents, few-shot pool and templates; else why not (``missing``)."""

    docs: list[dict] | None
    pool: T.Pool = None
    templates: dict[str, str] = field(default_factory=dict)
    missing: str = ""
    exact_templates: bool = True


def load_run_data(run: StoredRun, folder: Path | None) -> H6Data:
    """The data a Thai-H6 run was made on, when the run card's folders or ``folder`` (the suite's data folder)
    hold exactly its files (by SHA-256)."""
    spec = T.get_task(run.task)
    wanted = sorted((run.card.get("data_files") or {}).values())
    if not wanted:
        return H6Data(None, missing="the run was made on documents passed in memory: no data files to read")
    data = find_run_data(run.card, spec.name, [Path(folder)] if folder is not None else [])
    if data is not None:
        templates = T.templates_for(spec, (run.card.get("config") or {}).get("templates"))
        exact = {k: sha256_text(v) for k, v in templates.items()} == (run.card.get("prompt_template_sha256") or {})
        return H6Data(list(data.docs), spec.pool_of(data), templates, exact_templates=exact)
    return H6Data(
        None,
        missing="the run's data files are not at hand (no folder with files of the hashes in its "
        "run card): question, choices and gold come from the records only",
    )


def answer_texts(spec: T.H6Task, doc: Mapping[str, Any], *, mc2: bool = True) -> list[str]:
    """The answer options of a document, in record order: the texts the log-likelihoods score (Winogrande: its two
    options; TruthfulQA: the MC1 targets, then the MC2 targets unless ``mc2`` is False); [] for generation tasks.

    The item browser shows every scored text (beside its log-likelihood); a comparison's side-by-side view shows
    TruthfulQA's MC1 list only (the headline's choice and its gold, the first MC1 target)."""
    if not spec.uses_loglikelihood:
        return []
    if spec.truthfulqa and not mc2:
        return [str(c) for c in doc["mc1_targets"]["choices"]]
    if spec.fewshot_target is not None:  # Winogrande: its two options, shown even when one is missing
        return [str(doc.get("option1", "")), str(doc.get("option2", ""))]
    return spec.choices(doc)


def fewshot_examples(spec: T.H6Task, data: H6Data, doc: Mapping[str, Any]) -> tuple[str, list[str]]:
    """(pool id, every example of ``doc``'s few-shot pool as it appears in a prompt: ``text + " " + target``)."""
    pool = spec.pool_for(data.pool, doc)
    pool_id = f"{spec.name}/{doc.get('subject', '')}" if spec.by_subject else spec.name
    try:
        return pool_id, [spec.text(ex, data.templates) + " " + spec.target(ex) for ex in pool]
    except (T.DocError, ValueError):
        return pool_id, []


def h6_items(
    run: StoredRun, records: list[dict[str, Any]], metric: str, data: H6Data, pools: dict[str, list[str]]
) -> list[ItemView]:
    """One browser item per record; few-shot pools are added to ``pools`` once and referenced by id."""
    spec = T.get_task(run.task)
    out = []
    for rec in records:
        i = int(rec["doc"])
        doc = rec.get("doc_row")
        note = ""
        if doc is None and data.docs is not None and 0 <= i < len(data.docs):
            doc = data.docs[i]
            note = "question resolved from the data files (the record predates stored documents)"
        elif doc is None:
            note = data.missing
        pred = rec.get(_PRED_FIELD.get(metric, "pred"))
        item = ItemView(
            task=spec.name,
            key=str(i),
            value=float(rec[metric]),
            correct=bool(rec[metric] == 1.0) if metric in BINARY_METRICS else None,
            loglikelihoods=[round(float(x), 4) for x in rec["lls"]] if "lls" in rec else None,
            pred=None if pred is None else int(pred),
            output=rec.get("generation"),
            subject=rec.get("subject"),
            prompt_hash=rec.get("prompt_sha256", "")[:16],
        )
        gold = rec.get("gold")
        if doc is not None:
            try:
                item.question = _question(spec, rec, doc, data)
                item.choices = answer_texts(spec, doc)
                gold = gold if gold is not None else record_gold(spec, doc)
            except (T.DocError, KeyError, ValueError) as exc:
                note = f"document {i} cannot be shown: {exc}"
            if rec.get("shots") and data.docs is not None:
                pool_id, examples = fewshot_examples(spec, data, doc)
                if examples:
                    pools.setdefault(pool_id, examples)
                    item.fewshot = [pool_id, list(rec["shots"])]
            if data.docs is not None and not data.exact_templates:
                other = "the run used other prompt templates: the prompt is shown with the default ones"
                note = f"{note}; {other}" if note else other
        item.gold = gold
        item.note = note or None
        out.append(item)
    return out


def _question(spec: T.H6Task, rec: Mapping[str, Any], doc: Mapping[str, Any], data: H6Data) -> str:
    """The prompt an item shows: the query alone when the run's data is at hand (its few-shot examples are shown
    from their pool, once per pool), else the whole prompt the record says was sent (few-shot block included)."""
    if data.docs is None and isinstance(rec.get("context"), str):
        return str(rec["context"])
    return spec.context(doc, [], data.templates or T.templates_for(spec))


# --------------------------------------------------------------------------------------------- side by side
def scored_docs(h: Headline, folder: Path | None) -> list[dict[str, Any]] | None:
    """The scored split of the headline's task, when ``folder`` holds exactly the files the run used."""
    if folder is None:
        return None
    data = load_h6_task(folder, h.stratum)
    if sorted(sha256_file(p) for p in data.files) != sorted((h.run.card.get("data_files") or {}).values()):
        return None
    return list(data.docs)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and pd.isna(value))


def _input(h: Headline, key: str, row: pd.Series, docs: list[dict[str, Any]] | None) -> tuple[str, str]:
    """(the document's text with its numbered options, the reference answer)."""
    if docs is None:
        return f"doc {key} (pass the data folder for its text)", str(row.get("gold", ""))
    spec = T.get_task(h.stratum)
    doc = docs[int(key)]
    text = next((str(doc[f]) for f in _QUESTION_FIELDS if doc.get(f)), "")
    if not spec.uses_loglikelihood:  # GSM8K: the reference answer
        return text, str(doc.get("answer", ""))
    opts = answer_texts(spec, doc, mc2=False)
    gold = 0 if spec.truthfulqa else row.get("gold")  # MC1 lists the true answer first
    ref = opts[int(gold)] if not _missing(gold) and 0 <= int(gold) < len(opts) else ""
    return text + "\n" + " | ".join(f"{i}: {c}" for i, c in enumerate(opts)), ref


def _output(h: Headline, key: str, row: pd.Series, docs: list[dict[str, Any]] | None) -> str:
    if not _missing(row.get("generation")):
        return str(row["generation"])
    pred = row.get("pred")
    if _missing(pred):
        return ""
    if docs is None:
        return f"choice {int(pred)}"
    opts = answer_texts(T.get_task(h.stratum), docs[int(key)], mc2=False)
    return opts[int(pred)] if 0 <= int(pred) < len(opts) else f"choice {int(pred)}"


def h6_sides(head_a: Headline, head_b: Headline, keys: Sequence[str], folder: Path | None) -> list[Sides]:
    """Documents ``keys`` of two runs side by side: the text and options (when ``folder`` holds the run's data),
    the reference answer and each model's choice or generation; a labelled variant's from its records alone."""
    if head_a.variant:
        return _variant_sides(head_a, head_b, keys)
    docs = scored_docs(head_a, folder)
    a, b = head_a.items.set_index("key"), head_b.items.set_index("key")
    out = []
    for key in keys:
        text, ref = _input(head_a, key, a.loc[key], docs)
        out.append(Sides(text, ref, _output(head_a, key, a.loc[key], docs), _output(head_b, key, b.loc[key], docs)))
    return out


def _variant_sides(head_a: Headline, head_b: Headline, keys: Sequence[str]) -> list[Sides]:
    """A labelled variant's documents side by side from what its records keep: the prompt sent (A's), the reference
    (GSM8K's answer; generative-mc's gold letter, in the order asked) and both replies."""
    a, b = head_a.items.set_index("key"), head_b.items.set_index("key")
    out = []
    for key in keys:
        gold = a.at[key, "gold"]
        ref = "" if _missing(gold) else gold if isinstance(gold, str) else MC.LETTERS[int(gold)]
        text = a.at[key, "prompt"] if "prompt" in a.columns and not _missing(a.at[key, "prompt"]) else f"doc {key}"
        out.append(Sides(str(text), ref, str(a.at[key, "generation"] or ""), str(b.at[key, "generation"] or "")))
    return out
