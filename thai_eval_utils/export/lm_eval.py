"""Thai-H6 runs in lm-evaluation-harness 0.4.13's output layout, so its readers (``lm_eval.utils``'s file helpers,
``make_table``, the Hub "details" loader, Zeno and log viewers) read them.

Layout and schema as ``lm_eval.loggers.EvaluationTracker`` writes them: ``<to>/<model_name_sanitized>/
results_<date_id>.json`` (``results``, ``configs``, ``versions``, ``n-shot``, ``higher_is_better``, ``n-samples``,
``config``, ``task_hashes``, ...) and ``samples_<task>_<date_id>.jsonl`` per task, one line per document and filter:
``doc_id, doc, target, arguments ({"gen_args_N": {"arg_0", "arg_1"}}), resps, filtered_resps, filter, metrics,
doc_hash, prompt_hash, target_hash`` and the metric values (``lm_eval/evaluator.py`` ``evaluate``; hashes are
``lm_eval.utils.hash_string``, SHA-256 of the text; resps are stringified as ``sanitize_list`` does).

Metric keys are ``<metric>,<filter>``: ``acc,none``, ``acc_norm,none``, ``acc_bytes,none``, ``mc1,none``,
``mc2,none`` (TruthfulQA: the protocol's mc2; ``mc2_lb``/``mc2_mask`` too), and GSM8K's ``exact_match,strict-match``
and ``exact_match,flexible-extract`` (lm-eval's gsm8k filter names), each with its ``_stderr`` (lm-eval's sample
standard error). Task names are thai-eval's (``th_arc`` ... ``th_gsm8k``): lm-eval 0.4.13 ships no Thai-H6 task.
``arguments`` are rebuilt from the data and the run's protocol (:func:`thai_eval_utils.h6.document_requests`) and
checked against the stored ``prompt_sha256``; ``doc`` is the stored one when the record has it, else the data's.

Checked against files lm-eval 0.4.13 itself wrote for the same items (``tests/data/lmeval_written/``, made by
``benchmarks/lmeval_results_fixture.py``; ``tests/test_export_lmeval_parity.py``): the same keys, targets,
arguments and hashes, log-likelihoods and metrics to float32 noise. Where lm-eval's task defines them so, this
module follows it: Winogrande's ``target`` is the text after the blank (lm-eval's ``doc_to_target``), HellaSwag's
``doc`` carries ``query``/``choices``/``gold`` (lm-eval's ``process_docs``), so ``doc_hash`` and ``task_hashes``
equal lm-eval's for the same items.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from thai_eval_utils import __version__
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.provenance import redact
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.export.stored import signature
from thai_eval_utils.h6 import H6Protocol, document_requests
from thai_eval_utils.h6.data import H6_TASKS, H6TaskData, find_run_data, run_data_roots
from thai_eval_utils.h6 import tasks as T

#: thai-eval metric -> (lm-eval metric, filter) per task kind; GSM8K's two matches are lm-eval's two filters.
GSM8K_METRICS = {"exact_match": ("exact_match", "strict-match"), "flexible_match": ("exact_match", "flexible-extract")}
#: GSM8K filter -> the stored field holding the filtered answer.
GSM8K_FILTERED = {"strict-match": "strict", "flexible-extract": "flexible"}
#: lm-eval's order of multiple-choice metrics (``ConfigurableTask.process_results``); others keep thai-eval's order.
METRIC_ORDER = ("acc", "f1", "mcc", "acc_norm", "acc_bytes", "exact_match")
#: Results keys of an lm-eval run that thai-eval's Thai-H6 runs set the same way: no system instruction, no chat
#: template (Thai-H6 prompts are sent as plain text; a chat-only API model's server template is not seen).
PLAIN_PROMPT_KEYS = ("system_instruction", "system_instruction_sha", "fewshot_as_multiturn", "chat_template",
                     "chat_template_sha")


def hash_string(text: str) -> str:
    """``lm_eval.utils.hash_string``: SHA-256 hex of the UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sanitize_model_name(name: str) -> str:
    """``lm_eval.utils.sanitize_model_name``: the model's folder name."""
    return re.sub(r"[\"<>:/|\\?*\[\]]+", "__", name)


def date_id(when: datetime | None = None) -> str:
    """lm-eval's file time stamp: ``datetime.now().isoformat().replace(":", "-")``."""
    return (when or datetime.now()).isoformat().replace(":", "-")


def protocol_of(card: Mapping[str, Any]) -> H6Protocol:
    """The :class:`H6Protocol` a Thai-H6 run card's config records (the options its numbers depend on)."""
    c = card.get("config") or {}
    sampler = c.get("sampler") if c.get("sampler") in ("lb", "h") else "lb"
    options: dict[str, Any] = {"num_fewshot": c.get("num_fewshot"), "sampler": sampler,
                               "fewshot_seed": c.get("fewshot_seed") if c.get("sampler") in ("lb", "h") else None,
                               "add_bos_token": c.get("add_bos_token")}
    for key in ("mc2", "mmlu_average", "gsm8k_stops", "max_new_tokens"):
        if c.get(key) is not None:
            options[key] = tuple(c[key]) if key == "gsm8k_stops" else c[key]
    return H6Protocol(**options)


def _task_data(run: StoredRun, data: str | Path | None) -> H6TaskData:
    """The task's data whose file hashes are the run card's (the data the run scored), else an error."""
    loaded = find_run_data(run.card, run.task, [data] if data else [])
    if loaded is None:
        tried = [str(t) for t in run_data_roots(run.card, [data] if data else [])]
        raise ThaiEvalDataError(f"no data with the hashes recorded for {run.benchmark} (tried {tried}); pass --data "
                                "with the Thai-H6 folder the run scored", path=run.dir / "run_card.json",
                                field="data_files")
    return loaded


def _documents(run: StoredRun, data: str | Path | None) -> dict[int, Any]:
    """doc index -> :class:`~thai_eval_utils.h6.DocumentRequests` rebuilt for the run (all documents of the split)."""
    spec = T.get_task(run.task)
    templates = T.templates_for(spec)
    recorded = run.card.get("prompt_template_sha256") or {}
    if recorded and recorded != {k: hash_string(v) for k, v in templates.items()}:
        raise ThaiEvalDataError(f"{run.benchmark} ran with other prompt templates than thai-eval's; its arguments "
                                "cannot be rebuilt", path=run.dir / "run_card.json", field="prompt_template_sha256")
    return {d.index: d for d in document_requests(spec.name, _task_data(run, data), protocol_of(run.card))}


def _target(spec: T.TaskSpec, doc: Mapping[str, Any]) -> str:
    """lm-eval's ``doc_to_target`` as text: the gold choice index, TruthfulQA's 0 (the MC1 target first), GSM8K's
    answer, Winogrande's sentence after the blank (lm-eval's ``preprocess_winogrande.doc_to_target``)."""
    if isinstance(spec, T.GenerationTask):
        return str(doc.get("answer", ""))
    if isinstance(spec, T.TruthfulQATask):
        return "0"
    if isinstance(spec, T.WinograndeTask):
        return spec.target(doc)
    return str(T.gold(spec, doc))


def lm_eval_doc(spec: T.TaskSpec, doc: Mapping[str, Any]) -> dict[str, Any]:
    """The document as lm-eval logs it: HellaSwag's with the ``query``, ``choices`` and ``gold`` columns its
    ``process_docs`` adds (built by thai-eval's own HellaSwag prompt code, the same text), others as loaded."""
    if spec.name != "th_hellaswag" or not isinstance(spec, T.ChoiceTask):
        return dict(doc)
    return {**doc, "query": spec.text(doc, T.templates_for(spec)), "choices": spec.choices(doc), "gold": spec.gold(doc)}


def ordered_metrics(names: Sequence[str]) -> list[str]:
    """``names`` in lm-eval's order (:data:`METRIC_ORDER` first), the rest in their own order after."""
    known = [m for m in METRIC_ORDER if m in names]
    return known + [m for m in names if m not in known]


def _metric_key(spec: T.TaskSpec, metric: str) -> tuple[str, str]:
    return GSM8K_METRICS[metric] if isinstance(spec, T.GenerationTask) else (metric, "none")


def doc_index(rec: Mapping[str, Any]) -> int:
    """A Thai-H6 record's document index: the start of its store key (``<index>-<prompt hash>``)."""
    return int(str(rec["key"]).split("-", 1)[0])


def stored_doc(rec: Mapping[str, Any]) -> dict[str, Any] | None:
    """The document a record carries (newer records store it for reports), else None."""
    for field in ("doc_row",):  # h6.evaluation stores the document as loaded (``doc`` is its index)
        if isinstance(rec.get(field), dict):
            return dict(rec[field])
    return None


def samples(run: StoredRun, data: str | Path | None = None) -> list[dict[str, Any]]:
    """The run's ``samples_<task>`` lines in lm-eval's schema (one per document and filter), with a ``thai_eval``
    key (the score signature and config id) on every line."""
    spec = T.get_task(run.task)
    docs = _documents(run, data)
    protocol = protocol_of(run.card)
    stamp = {"config_id": run.card.get("config_id"), "signature": signature(run)["score_signatures"]}
    out = []
    for rec in sorted(run.records(), key=doc_index):
        built = docs.get(doc_index(rec))
        if built is None or built.requests.sha256 != rec.get("prompt_sha256"):
            raise ThaiEvalDataError(f"{run.benchmark} doc {doc_index(rec)}: the rebuilt prompt differs from the stored "
                                    "one (other data or protocol)", path=run.dir / "items.jsonl", field="prompt_sha256")
        doc = lm_eval_doc(spec, stored_doc(rec) or built.doc)
        target = _target(spec, doc)
        common = {"doc_id": doc_index(rec), "doc": doc, "target": target}
        doc_hash = hash_string(json.dumps(doc, indent=2, ensure_ascii=False, default=str))
        if isinstance(spec, T.GenerationTask):
            gen_kwargs = {"until": list(protocol.gsm8k_stops), "max_gen_toks": protocol.max_new_tokens,
                          "do_sample": False, "temperature": 0.0}
            for metric, (name, filt) in GSM8K_METRICS.items():
                out.append({**common, "arguments": {"gen_args_0": {"arg_0": built.requests.prompt, "arg_1": gen_kwargs}},
                            "resps": [[str(rec.get("generation", ""))]], "filtered_resps": [str(rec.get(GSM8K_FILTERED[filt]))],
                            "filter": filt, "metrics": [name], "doc_hash": doc_hash,
                            "prompt_hash": hash_string(built.requests.prompt), "target_hash": hash_string(target),
                            name: float(rec[metric]), "thai_eval": stamp})  # fmt: skip
            continue
        pairs = built.requests.requests
        resps = [[[str(float(ll)), str(bool(g))]] for ll, g in zip(rec["lls"], rec["is_greedy"])]
        metrics = {m: float(rec[m]) for m in ordered_metrics(spec.metrics) if m in rec}
        out.append({**common, "arguments": {f"gen_args_{i}": {"arg_0": c, "arg_1": x} for i, (c, x) in enumerate(pairs)},
                    "resps": resps, "filtered_resps": [r[0] for r in resps], "filter": "none", "metrics": list(metrics),
                    "doc_hash": doc_hash, "prompt_hash": hash_string(pairs[0][0]), "target_hash": hash_string(target),
                    **metrics, "thai_eval": stamp})  # fmt: skip
    return out


def task_results(run: StoredRun) -> dict[str, Any]:
    """The task's ``results`` entry as lm-eval orders it: name, alias, ``sample_len``, then ``<metric>,<filter>``
    and ``<metric>_stderr,<filter>`` from the stored scores (MMLU's acc_macro / acc_micro too)."""
    spec = T.get_task(run.task)
    entry: dict[str, Any] = {"name": spec.name, "alias": spec.name, "sample_len": int(run.summary.get("n", 0))}
    scores = run.summary.get("scores") or {}
    for metric in ordered_metrics(list(scores)):
        if isinstance(spec, T.GenerationTask) and metric not in GSM8K_METRICS:
            continue
        name, filt = _metric_key(spec, metric)
        entry[f"{name},{filt}"] = scores[metric]["value"]
        entry[f"{name}_stderr,{filt}"] = "N/A" if scores[metric].get("stderr") is None else scores[metric]["stderr"]
    return entry


def fewshot_split(run: StoredRun) -> str | None:
    """The split the run's few-shot examples came from (the first of the task's candidates among its data files)."""
    *_, candidates = H6_TASKS[T.get_task(run.task).name]
    stems = [Path(str(f)).stem for f in (run.card.get("data_files") or {})]
    return next((c for c in candidates if any(s.endswith(f"_{c}") or s == c for s in stems)), None)


def task_config(run: StoredRun) -> dict[str, Any]:
    """The task's ``configs`` entry: lm-eval's fields that mean the same for a Thai-H6 run (splits, shots,
    delimiters, sampler, metrics), plus the protocol under ``metadata``."""
    spec = T.get_task(run.task)
    cfg = run.card.get("config") or {}
    split = fewshot_split(run)
    metrics = [k.split(",")[0] for k in task_results(run) if "," in k and "_stderr," not in k]
    return redact({
        "task": spec.name, "dataset_path": run.summary.get("source"), "test_split": H6_TASKS[spec.name][1],
        "fewshot_split": split, "description": T.templates_for(spec).get("description", ""),
        "target_delimiter": " ", "fewshot_delimiter": "\n\n",
        "fewshot_config": {"sampler": "first_n" if spec.shots == "first_n" else "default", "split": split},
        "num_fewshot": cfg.get("num_fewshot"),
        "metric_list": [{"metric": m, "aggregation": "mean", "higher_is_better": True} for m in metrics],
        "output_type": "generate_until" if isinstance(spec, T.GenerationTask) else "multiple_choice", "repeats": 1,
        "metadata": {"version": __version__, "thai_eval_protocol": cfg},
    })  # fmt: skip


def evaluation_seconds(runs: Sequence[StoredRun]) -> str | None:
    """lm-eval's ``total_evaluation_time_seconds`` (a string): the runs' summed time from run card creation to
    finish (a resumed run counts its pauses), None when a card lacks the times."""
    total = 0.0
    for run in runs:
        start, end = run.card.get("created_at"), run.card.get("finished_at")
        if not (start and end):
            return None
        total += (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    return str(total)


def results_document(runs: Sequence[StoredRun], task_samples: Mapping[str, list[dict[str, Any]]], when: datetime) -> dict[str, Any]:
    """One model's ``results_<date_id>.json`` over its Thai-H6 runs (lm-eval's keys, plus ``thai_eval``: each
    task's signature)."""
    model = runs[0].model_name
    results, configs, versions, nshot, better, nsamples, signatures = {}, {}, {}, {}, {}, {}, {}
    for run in runs:
        spec = T.get_task(run.task)
        cfg = run.card.get("config") or {}
        results[spec.name] = task_results(run)
        signatures[spec.name] = signature(run)
        configs[spec.name] = task_config(run)
        versions[spec.name] = __version__
        nshot[spec.name] = int(cfg.get("num_fewshot") or 0)
        better[spec.name] = {k.split(",")[0]: True for k in results[spec.name] if "," in k and "_stderr," not in k}
        nsamples[spec.name] = {"original": int(run.summary.get("n_docs", run.summary.get("n", 0))),
                               "effective": int(run.summary.get("n", 0))}
    limits = {r.summary.get("limit") for r in runs} - {None}
    identity = redact({k: v for k, v in (runs[0].card.get("model") or {}).items() if k != "base_url"})
    task_hashes = {t: hash_string("".join(s["doc_hash"] + s["prompt_hash"] + s["target_hash"] for s in lines
                                          if s.get("filter") in ("none", "strict-match")))
                   for t, lines in task_samples.items()}
    dtype = identity.get("dtype")
    return {
        # group_subtasks: lm-eval 0.4.13 lists groups only, and the exported Thai-H6 tasks form none
        "results": results, "group_subtasks": {}, "configs": configs, "versions": versions,
        "n-shot": nshot, "higher_is_better": better, "n-samples": nsamples,
        "config": {"model": "thai-eval", "model_args": identity, "model_dtype": f"torch.{dtype}" if dtype else None,
                   "batch_size": None, "batch_sizes": [], "device": identity.get("device"), "use_cache": None,
                   "limit": max(limits) if limits else None, "bootstrap_iters": 0, "gen_kwargs": None,
                   # Thai-H6 seeds no global generator (greedy, no sampling): lm-eval's None means "left unset"
                   "random_seed": None, "numpy_seed": None, "torch_seed": None,
                   "fewshot_seed": next((r.card.get("config", {}).get("fewshot_seed") for r in runs), None)},
        "git_hash": None, "upper_git_hash": None,
        "date": when.replace(tzinfo=timezone.utc).timestamp() if when.tzinfo is None else when.timestamp(),
        "lm_eval_version": None, "transformers_version": (runs[0].card.get("package_versions") or {}).get("transformers"),
        "max_length": identity.get("max_length"), "task_hashes": task_hashes,
        "model_source": "thai-eval", "model_name": model, "model_name_sanitized": sanitize_model_name(model),
        **dict.fromkeys(PLAIN_PROMPT_KEYS), "total_evaluation_time_seconds": evaluation_seconds(runs),
        "thai_eval": {"producer": f"thai-eval {__version__}", "tasks": signatures},
    }  # fmt: skip


def write_lm_eval(runs: Sequence[StoredRun], to: str | Path, *, data: str | Path | None = None,
                  when: datetime | None = None) -> list[Path]:
    """Write every model's Thai-H6 runs in lm-eval's layout under ``to``; returns the files written."""
    when = when or datetime.now()
    stamp = date_id(when)
    by_model: dict[str, list[StoredRun]] = {}
    for run in runs:
        if run.benchmark.startswith("thai_h6/"):
            by_model.setdefault(run.model_name, []).append(run)
    written = []
    for model, model_runs in by_model.items():
        model_runs = sorted(model_runs, key=lambda r: T.TASKS.index(T.get_task(r.task).name))
        folder = Path(to) / sanitize_model_name(model)
        folder.mkdir(parents=True, exist_ok=True)
        lines = {T.get_task(r.task).name: samples(r, data) for r in model_runs}
        for task, task_lines in lines.items():
            path = folder / f"samples_{task}_{stamp}.jsonl"
            path.write_text("".join(json.dumps(redact(s), ensure_ascii=False) + "\n" for s in task_lines), encoding="utf-8")
            written.append(path)
        path = folder / f"results_{stamp}.json"
        path.write_text(json.dumps(redact(results_document(model_runs, lines, when)), indent=2, ensure_ascii=False) + "\n",
                        encoding="utf-8")
        written.append(path)
    return written
