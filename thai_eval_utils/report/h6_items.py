"""Thai-H6 items as a reader sees them (issue 22): the question, the choices with their log-likelihoods, the gold
answer, the model's choice or generation and the few-shot block (Kim et al. 2024 section 3; prompts as
``h6.tasks`` builds them).

Records written since issue 22 carry their document row (``doc_row``) and ``gold``; older records are resolved
from the data by their index ``doc``, only when the data files hash as the run card says (else the item shows its
index, prompt hash and a note that the data is not at hand).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.core.provenance import sha256_text
from thai_eval_utils.h6 import tasks as T
from thai_eval_utils.h6.data import find_run_data
from thai_eval_utils.h6.evaluation import record_gold

#: Per-record fields that pick the model's choice for each headline metric.
_PRED_FIELD = {"acc_norm": "pred_norm", "acc": "pred"}
#: Binary headline metrics: an item is correct or not.
_BINARY = ("acc", "acc_norm", "exact_match")


@dataclass
class H6Data:
    """A run's task data when at hand: its documents, few-shot pool and templates; else why not (``missing``)."""

    docs: list[dict] | None
    pool: T.Pool = None
    templates: dict[str, str] = field(default_factory=dict)
    missing: str = ""
    exact_templates: bool = True


def load_run_data(run: StoredRun, data_dir: Path | None) -> H6Data:
    """The data a Thai-H6 run was made on, when some folder holds exactly its files (by SHA-256)."""
    spec = T.get_task(run.benchmark.split("/")[-1])
    wanted = sorted((run.card.get("data_files") or {}).values())
    if not wanted:
        return H6Data(None, missing="the run was made on documents passed in memory: no data files to read")
    data = find_run_data(run.card, spec.name, [Path(data_dir) / "thai_h6"] if data_dir is not None else [])
    if data is not None:
        templates = T.templates_for(spec, (run.card.get("config") or {}).get("templates"))
        exact = {k: sha256_text(v) for k, v in templates.items()} == (run.card.get("prompt_template_sha256") or {})
        return H6Data(list(data.docs), spec.pool_of(data), templates, exact_templates=exact)
    return H6Data(None, missing="the run's data files are not at hand (no folder with files of the hashes in its "
                                "run card): question, choices and gold come from the records only")


def _choices(spec: T.TaskSpec, doc: Mapping[str, Any]) -> list[str]:
    """The texts the log-likelihoods score, in record order (TruthfulQA: the MC1 then the MC2 targets)."""
    if isinstance(spec, T.TruthfulQATask):
        return [str(c) for c in doc["mc1_targets"]["choices"]] + [str(c) for c in doc["mc2_targets"]["choices"]]
    if isinstance(spec, T.WinograndeTask):
        return [str(doc.get("option1", "")), str(doc.get("option2", ""))]
    if isinstance(spec, T.ChoiceTask):
        return T.choices(spec, doc)
    return []


def fewshot_examples(spec: T.TaskSpec, data: H6Data, doc: Mapping[str, Any]) -> tuple[str, list[str]]:
    """(pool id, every example of ``doc``'s few-shot pool as it appears in a prompt: ``text + " " + target``)."""
    pool = spec.pool_for(data.pool, doc)
    pool_id = f"{spec.name}/{doc.get('subject', '')}" if spec.by_subject else spec.name
    try:
        return pool_id, [spec.text(ex, data.templates) + " " + spec.target(ex) for ex in pool]
    except (T.DocError, ValueError):
        return pool_id, []


def h6_items(run: StoredRun, records: list[dict[str, Any]], metric: str, data: H6Data,
             pools: dict[str, list[str]]) -> list[dict[str, Any]]:
    """One browser item per record (fields as :mod:`thai_eval_utils.report.items` documents); few-shot pools are
    added to ``pools`` once and referenced by id."""
    spec = T.get_task(run.benchmark.split("/")[-1])
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
        item: dict[str, Any] = {"b": "thai_h6", "t": spec.name, "k": str(i), "v": float(rec[metric]),
                                "sub": rec.get("subject"), "hash": rec.get("prompt_sha256", "")[:16]}
        if metric in _BINARY:
            item["c"] = bool(rec[metric] == 1.0)
        if "lls" in rec:
            item["ll"] = [round(float(x), 4) for x in rec["lls"]]
        pred = rec.get(_PRED_FIELD.get(metric, "pred"))
        if pred is not None:
            item["p"] = int(pred)
        if "generation" in rec:
            item["o"] = rec["generation"]
        gold = rec.get("gold")
        if doc is not None:
            try:
                item["q"] = spec.context(doc, [], data.templates or T.templates_for(spec))
                item["ch"] = _choices(spec, doc)
                gold = gold if gold is not None else record_gold(spec, doc)
            except (T.DocError, KeyError, ValueError) as exc:
                note = f"document {i} cannot be shown: {exc}"
            if rec.get("shots") and data.docs is not None:
                pool_id, examples = fewshot_examples(spec, data, doc)
                if examples:
                    pools.setdefault(pool_id, examples)
                    item["fs"] = [pool_id, list(rec["shots"])]
            if data.docs is not None and not data.exact_templates:
                note = "; ".join(filter(None, [note, "the run used other prompt templates: the prompt is shown with the default ones"]))
        if gold is not None:
            item["g"] = gold
        if note:
            item["note"] = note
        out.append(item)
    return out

