"""A Thai-H6 run as an lm-evaluation-harness 0.4.13 task (:meth:`H6Exports.lm_eval_export`): the documents,
``arguments`` and targets as the records store them, the metric keys, the task's ``results`` and ``configs`` entries
(the files' layout is :mod:`thai_eval_utils.export.lm_eval`'s). Task names are thai-eval's (``th_arc`` ...):
lm-eval 0.4.13 ships no Thai-H6 task. Metric keys are ``<metric>,<filter>`` (GSM8K: lm-eval's gsm8k filter names),
each with its ``_stderr`` (the sample standard error).

``arguments`` are what the records say was sent (with the stored ``doc_row``); records stored before they kept it
are rebuilt from the data and the run's protocol (:func:`thai_eval_utils.h6.document_requests`); either is checked
against the stored ``prompt_sha256``. Where lm-eval's task defines them so, this module follows it: Winogrande's
``target`` is the text after the blank, HellaSwag's ``doc`` carries ``query``/``choices``/``gold`` (lm-eval's
``process_docs``), so ``doc_hash`` and ``task_hashes`` equal lm-eval's for the same items. Gold indices and choices
are the task's own (:class:`~thai_eval_utils.h6.tasks.H6Task`), the ones its scoring used.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from thai_eval_utils import __version__
from thai_eval_utils.core.benchmark import LmEvalTask
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.provenance import redact, sha256_text
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.h6 import tasks as T
from thai_eval_utils.h6.data import H6_TASKS, H6TaskData, find_run_data, run_data_roots
from thai_eval_utils.h6.evaluation import DocumentRequests, document_requests, stored_requests
from thai_eval_utils.h6.protocol import H6Protocol

#: thai-eval metric -> (lm-eval metric, filter) per task kind; GSM8K's two matches are lm-eval's two filters.
GSM8K_METRICS = {"exact_match": ("exact_match", "strict-match"), "flexible_match": ("exact_match", "flexible-extract")}
#: GSM8K filter -> the stored field holding the filtered answer.
GSM8K_FILTERED = {"strict-match": "strict", "flexible-extract": "flexible"}
#: lm-eval's order of multiple-choice metrics (``ConfigurableTask.process_results``); others keep thai-eval's order.
METRIC_ORDER = ("acc", "f1", "mcc", "acc_norm", "acc_bytes", "exact_match")


def protocol_of(card: Mapping[str, Any]) -> H6Protocol:
    """The :class:`H6Protocol` a Thai-H6 run card's config records (the options its numbers depend on)."""
    c = card.get("config") or {}
    sampled = c.get("sampler") in ("lb", "h")  # MMLU's first_n and TruthfulQA's none: the preset's sampler, no seed
    options: dict[str, Any] = {
        "num_fewshot": c.get("num_fewshot"),
        "sampler": c.get("sampler") if sampled else "lb",
        "fewshot_seed": c.get("fewshot_seed") if sampled else None,
        "add_bos_token": c.get("add_bos_token"),
    }
    for key in ("mc2", "mmlu_average", "gsm8k_stops", "max_new_tokens"):
        if c.get(key) is not None:
            options[key] = tuple(c[key]) if key == "gsm8k_stops" else c[key]
    return H6Protocol(**options)


def _task_data(run: StoredRun, data: str | Path | None) -> H6TaskData:
    """The task's data whose file hashes are the run card's (the data the run scored), else an error."""
    loaded = find_run_data(run.card, run.task, [data] if data else [])
    if loaded is None:
        tried = [str(t) for t in run_data_roots(run.card, [data] if data else [])]
        raise ThaiEvalDataError(
            f"no data with the hashes recorded for {run.benchmark} (tried {tried}); pass --data "
            "with the Thai-H6 folder the run scored",
            path=run.dir / "run_card.json",
            field="data_files",
        )
    return loaded


def _documents(run: StoredRun, data: str | Path | None) -> dict[int, DocumentRequests]:
    """doc index -> :class:`~thai_eval_utils.h6.DocumentRequests` rebuilt for the run (all documents of the split)."""
    spec = T.get_task(run.task)
    templates = T.templates_for(spec)
    recorded = run.card.get("prompt_template_sha256") or {}
    if recorded and recorded != {k: sha256_text(v) for k, v in templates.items()}:
        raise ThaiEvalDataError(
            f"{run.benchmark} ran with other prompt templates than thai-eval's; its arguments cannot be rebuilt",
            path=run.dir / "run_card.json",
            field="prompt_template_sha256",
        )
    return {d.index: d for d in document_requests(spec.name, _task_data(run, data), protocol_of(run.card))}


def lm_eval_target(spec: T.H6Task, doc: Mapping[str, Any]) -> str:
    """lm-eval's ``doc_to_target`` as text, from the task's own gold: the gold choice index (ARC, HellaSwag, MMLU),
    TruthfulQA's 0 (lm-eval's MC1 target: the true answer is listed first), GSM8K's answer, Winogrande's sentence
    after the blank (the task's few-shot target, as lm-eval's ``preprocess_winogrande.doc_to_target``)."""
    if spec.kind == "generation":
        return str(doc.get("answer", ""))
    if spec.truthfulqa:
        return "0"
    if spec.fewshot_target is not None:
        return spec.target(doc)
    return str(T.gold(spec, doc))


def lm_eval_doc(spec: T.H6Task, doc: Mapping[str, Any]) -> dict[str, Any]:
    """The document as lm-eval logs it: HellaSwag's with the ``query``, ``choices`` and ``gold`` columns its
    ``process_docs`` adds (built by thai-eval's own HellaSwag prompt code, the same text), others as loaded."""
    if spec.name != "th_hellaswag":
        return dict(doc)
    return {**doc, "query": spec.text(doc, T.templates_for(spec)), "choices": spec.choices(doc), "gold": spec.gold(doc)}


def ordered_metrics(names: Sequence[str]) -> list[str]:
    """``names`` in lm-eval's order (:data:`METRIC_ORDER` first), the rest in their own order after."""
    known = [m for m in METRIC_ORDER if m in names]
    return known + [m for m in names if m not in known]


def doc_index(rec: Mapping[str, Any]) -> int:
    """A Thai-H6 record's document index: the start of its store key (``<index>-<prompt hash>``)."""
    return int(str(rec["key"]).split("-", 1)[0])


def stored_doc(rec: Mapping[str, Any]) -> dict[str, Any] | None:
    """The document a record carries (``doc_row``: newer records store it as loaded for reports), else None."""
    return dict(rec["doc_row"]) if isinstance(rec.get("doc_row"), dict) else None


def samples(run: StoredRun, data: str | Path | None = None) -> list[dict[str, Any]]:
    """The run's ``samples_<task>`` lines in lm-eval's schema (one per document and filter)."""
    spec = T.get_task(run.task)
    records = sorted(run.records(), key=doc_index)
    stored = [stored_requests(spec, rec) for rec in records]
    docs = _documents(run, data) if any(s is None for s in stored) else {}  # records from before they kept prompts
    protocol = protocol_of(run.card)
    out = []
    for rec, requests in zip(records, stored):
        # a record's own document and requests (:func:`~thai_eval_utils.h6.evaluation.stored_requests`), else rebuilt
        built = (
            DocumentRequests(doc_index(rec), dict(rec["doc_row"]), list(rec.get("shots") or []), requests)
            if requests is not None
            else docs.get(doc_index(rec))
        )
        if built is None or built.requests.sha256 != rec.get("prompt_sha256"):
            raise ThaiEvalDataError(
                f"{run.benchmark} doc {doc_index(rec)}: the rebuilt prompt differs from the stored "
                "one (other data or protocol)",
                path=run.dir / "items.jsonl",
                field="prompt_sha256",
            )
        doc = lm_eval_doc(spec, stored_doc(rec) or built.doc)
        target = lm_eval_target(spec, doc)
        if spec.kind == "generation":  # one line per filter (lm-eval's gsm8k: strict-match, flexible-extract)
            prompt = built.requests.prompt
            until = {"until": list(protocol.gsm8k_stops), "max_gen_toks": protocol.max_new_tokens}
            arguments = {"gen_args_0": {"arg_0": prompt, "arg_1": {**until, "do_sample": False, "temperature": 0.0}}}
            lines = [
                ([[str(rec.get("generation", ""))]], [str(rec.get(GSM8K_FILTERED[filt]))], filt, {name: float(rec[m])})
                for m, (name, filt) in GSM8K_METRICS.items()
            ]
        else:
            pairs = built.requests.requests
            prompt = pairs[0][0]
            arguments = {f"gen_args_{i}": {"arg_0": c, "arg_1": x} for i, (c, x) in enumerate(pairs)}
            answers = [[[str(float(ll)), str(bool(g))]] for ll, g in zip(rec["lls"], rec["is_greedy"])]
            metrics = {m: float(rec[m]) for m in ordered_metrics(spec.metrics) if m in rec}
            lines = [(answers, [a[0] for a in answers], "none", metrics)]
        doc_hash = sha256_text(json.dumps(doc, indent=2, ensure_ascii=False, default=str))
        out += [
            {
                **{"doc_id": doc_index(rec), "doc": doc, "target": target, "arguments": arguments},
                **{"resps": resps, "filtered_resps": filtered, "filter": filt, "metrics": list(values)},
                **{"doc_hash": doc_hash, "prompt_hash": sha256_text(prompt), "target_hash": sha256_text(target)},
                **values,
            }
            for resps, filtered, filt, values in lines
        ]
    return out


def task_results(run: StoredRun) -> dict[str, Any]:
    """The task's ``results`` entry as lm-eval orders it: name, alias, ``sample_len``, then ``<metric>,<filter>``
    and ``<metric>_stderr,<filter>`` from the stored scores (MMLU's acc_macro / acc_micro too)."""
    spec = T.get_task(run.task)
    summary = run.summary or {}
    entry: dict[str, Any] = {"name": spec.name, "alias": spec.name, "sample_len": int(summary.get("n", 0))}
    scores = summary.get("scores") or {}
    for metric in ordered_metrics(list(scores)):
        if spec.kind == "generation" and metric not in GSM8K_METRICS:
            continue
        name, filt = GSM8K_METRICS[metric] if spec.kind == "generation" else (metric, "none")
        entry[f"{name},{filt}"] = scores[metric]["value"]
        entry[f"{name}_stderr,{filt}"] = "N/A" if scores[metric].get("stderr") is None else scores[metric]["stderr"]
    return entry


def fewshot_split(run: StoredRun) -> str | None:
    """The split the run's few-shot examples came from (the first of the task's candidates among its data files)."""
    *_, candidates = H6_TASKS[T.get_task(run.task).name]
    stems = [Path(str(f)).stem for f in (run.card.get("data_files") or {})]
    return next((c for c in candidates if any(s.endswith(f"_{c}") or s == c for s in stems)), None)


def task_config(run: StoredRun, results: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The task's ``configs`` entry: lm-eval's fields that mean the same for a Thai-H6 run (splits, shots,
    delimiters, sampler, metrics), plus the protocol under ``metadata``; ``results``: :func:`task_results`'s."""
    spec = T.get_task(run.task)
    cfg = run.card.get("config") or {}
    split = fewshot_split(run)
    metrics = [k.split(",")[0] for k in (results or task_results(run)) if "," in k and "_stderr," not in k]
    return redact(
        {
            "task": spec.name,
            "dataset_path": (run.summary or {}).get("source"),
            "test_split": H6_TASKS[spec.name][1],
            "fewshot_split": split,
            "description": T.templates_for(spec).get("description", ""),
            "target_delimiter": " ",
            "fewshot_delimiter": "\n\n",
            "fewshot_config": {"sampler": "first_n" if spec.shots == "first_n" else "default", "split": split},
            "num_fewshot": cfg.get("num_fewshot"),
            "metric_list": [{"metric": m, "aggregation": "mean", "higher_is_better": True} for m in metrics],
            "output_type": "generate_until" if spec.kind == "generation" else "multiple_choice",
            "repeats": 1,
            "metadata": {"version": __version__, "thai_eval_protocol": cfg},
        }
    )


def lm_eval_task(run: StoredRun, data: str | Path | None = None) -> LmEvalTask:
    """The run as one lm-eval task: results and configs entries, its shots and its samples lines."""
    results = task_results(run)
    return LmEvalTask(
        name=T.get_task(run.task).name,
        results=results,
        config=task_config(run, results),
        num_fewshot=int((run.card.get("config") or {}).get("num_fewshot") or 0),
        samples=samples(run, data),
    )
