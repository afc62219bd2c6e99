"""Stored runs in lm-evaluation-harness 0.4.13's output layout, so its readers (``lm_eval.utils``'s file helpers,
``make_table``, the Hub "details" loader, Zeno and log viewers) read them: every run whose suite names an lm-eval
task for it (:meth:`~thai_eval_utils.core.benchmark.Suite.lm_eval_task`; the suite builds the task's entries and
samples, :meth:`~thai_eval_utils.core.benchmark.Suite.lm_eval_export`).

Layout and schema as ``lm_eval.loggers.EvaluationTracker`` writes them: ``<to>/<model_name_sanitized>/
results_<date_id>.json`` (``results``, ``configs``, ``versions``, ``n-shot``, ``higher_is_better``, ``n-samples``,
``config``, ``task_hashes``, ...) and ``samples_<task>_<date_id>.jsonl`` per task, one line per document and filter:
``doc_id, doc, target, arguments ({"gen_args_N": {"arg_0", "arg_1"}}), resps, filtered_resps, filter, metrics,
doc_hash, prompt_hash, target_hash`` and the metric values (``lm_eval/evaluator.py`` ``evaluate``; hashes are
``lm_eval.utils.hash_string``, SHA-256 of the text; resps are stringified as ``sanitize_list`` does), plus a
``thai_eval`` key (the score signature and config id) on every line.

Checked against files lm-eval 0.4.13 itself wrote for the same items (``tests/data/lmeval_written/``, made by
``benchmarks/lmeval_results_fixture.py``; ``tests/test_export_lmeval_parity.py``): the same keys, targets,
arguments and hashes, log-likelihoods and metrics to float32 noise.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from thai_eval_utils import __version__
from thai_eval_utils.core import registry
from thai_eval_utils.core.benchmark import LmEvalTask, Suite
from thai_eval_utils.core.provenance import redact, sha256_text
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.export.stored import signature

#: Results keys of an lm-eval run that thai-eval's runs set the same way: no system instruction, no chat
#: template (prompts are sent as plain text; a chat-only API model's server template is not seen).
PLAIN_PROMPT_KEYS = (
    "system_instruction",
    "system_instruction_sha",
    "fewshot_as_multiturn",
    "chat_template",
    "chat_template_sha",
)


def hash_string(text: str) -> str:
    """``lm_eval.utils.hash_string``: SHA-256 hex of the UTF-8 text."""
    return sha256_text(text)


def sanitize_model_name(name: str) -> str:
    """``lm_eval.utils.sanitize_model_name``: the model's folder name."""
    return re.sub(r"[\"<>:/|\\?*\[\]]+", "__", name)


def date_id(when: datetime | None = None) -> str:
    """lm-eval's file time stamp: ``datetime.now().isoformat().replace(":", "-")``."""
    return (when or datetime.now()).isoformat().replace(":", "-")


def lm_eval_suites() -> list[Suite]:
    """The registered suites that export to lm-eval (they override :meth:`Suite.lm_eval_task`)."""
    return [s for s in registry.suites().values() if type(s).lm_eval_task is not Suite.lm_eval_task]


def exports_lm_eval(run: StoredRun) -> bool:
    """Whether the run's suite names an lm-eval task for it."""
    suite = registry.suite_of(run.benchmark)
    return suite is not None and suite.lm_eval_task(run) is not None


def _order(run: StoredRun) -> tuple[int, str, int]:
    """Runs in suite order, then in their suite's task order."""
    suite = registry.suite_of(run.benchmark)
    if suite is None:
        return (1 << 30, run.family, 0)
    name = suite.lm_eval_task(run) or ""
    return (suite.position, suite.name, suite.tasks.index(name) if name in suite.tasks else len(suite.tasks))


def _stamped(run: StoredRun, task: LmEvalTask) -> list[dict[str, Any]]:
    """The task's samples lines with the ``thai_eval`` key: the run's config id and score signatures."""
    stamp = {"config_id": run.card.get("config_id"), "signature": signature(run)["score_signatures"]}
    return [{**line, "thai_eval": stamp} for line in task.samples]


def _task_hash(lines: Sequence[Mapping[str, Any]]) -> str:
    """lm-eval's task hash: SHA-256 of the concatenated per-sample hashes (one line per document: its first
    filter's)."""
    first = lines[0]["filter"] if lines else None
    return hash_string(
        "".join(s["doc_hash"] + s["prompt_hash"] + s["target_hash"] for s in lines if s.get("filter") == first)
    )


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


def results_document(
    runs: Sequence[StoredRun],
    tasks: Sequence[LmEvalTask],
    task_samples: Mapping[str, list[dict[str, Any]]],
    when: datetime,
) -> dict[str, Any]:
    """One model's ``results_<date_id>.json`` over its exported runs (``tasks``: each run's lm-eval task, in the
    same order; lm-eval's keys, plus ``thai_eval``: each task's signature)."""
    model = runs[0].model_name
    results, configs, versions, nshot, better, nsamples, signatures = {}, {}, {}, {}, {}, {}, {}
    for run, task in zip(runs, tasks):
        summary = run.summary or {}
        results[task.name] = task.results
        signatures[task.name] = signature(run)
        configs[task.name] = task.config
        versions[task.name] = __version__
        nshot[task.name] = task.num_fewshot
        better[task.name] = {k.split(",")[0]: True for k in task.results if "," in k and "_stderr," not in k}
        nsamples[task.name] = {
            "original": int(summary.get("n_docs", summary.get("n", 0))),
            "effective": int(summary.get("n", 0)),
        }
    limits = {(r.summary or {}).get("limit") for r in runs} - {None}
    identity = redact({k: v for k, v in (runs[0].card.get("model") or {}).items() if k != "base_url"})
    task_hashes = {t: _task_hash(lines) for t, lines in task_samples.items()}
    dtype = identity.get("dtype")
    return {
        # group_subtasks: lm-eval 0.4.13 lists groups only, and the exported tasks form none
        "results": results,
        "group_subtasks": {},
        "configs": configs,
        "versions": versions,
        "n-shot": nshot,
        "higher_is_better": better,
        "n-samples": nsamples,
        "config": {
            "model": "thai-eval",
            "model_args": identity,
            "model_dtype": f"torch.{dtype}" if dtype else None,
            "batch_size": None,
            "batch_sizes": [],
            "device": identity.get("device"),
            "use_cache": None,
            "limit": max(limits) if limits else None,
            "bootstrap_iters": 0,
            "gen_kwargs": None,
            # the runs seed no global generator (greedy, no sampling): lm-eval's None means "left unset"
            "random_seed": None,
            "numpy_seed": None,
            "torch_seed": None,
            "fewshot_seed": next((r.card.get("config", {}).get("fewshot_seed") for r in runs), None),
        },
        "git_hash": None,
        "upper_git_hash": None,
        "date": when.replace(tzinfo=timezone.utc).timestamp() if when.tzinfo is None else when.timestamp(),
        "lm_eval_version": None,
        "transformers_version": (runs[0].card.get("package_versions") or {}).get("transformers"),
        "max_length": identity.get("max_length"),
        "task_hashes": task_hashes,
        "model_source": "thai-eval",
        "model_name": model,
        "model_name_sanitized": sanitize_model_name(model),
        **dict.fromkeys(PLAIN_PROMPT_KEYS),
        "total_evaluation_time_seconds": evaluation_seconds(runs),
        "thai_eval": {"producer": f"thai-eval {__version__}", "tasks": signatures},
    }


def write_lm_eval(
    runs: Sequence[StoredRun], to: str | Path, *, data: str | Path | None = None, when: datetime | None = None
) -> list[Path]:
    """Write every model's runs that export to lm-eval (:func:`exports_lm_eval`) in lm-eval's layout under ``to``;
    ``data``: where the suites find the data the runs scored. Returns the files written."""
    when = when or datetime.now()
    stamp = date_id(when)
    by_model: dict[str, list[StoredRun]] = {}
    for run in runs:
        if exports_lm_eval(run):
            by_model.setdefault(run.model_name, []).append(run)
    written = []
    for model, model_runs in by_model.items():
        model_runs = sorted(model_runs, key=_order)
        tasks = [registry.get_suite(r.benchmark).lm_eval_export(r, Path(data) if data else None) for r in model_runs]
        folder = Path(to) / sanitize_model_name(model)
        folder.mkdir(parents=True, exist_ok=True)
        lines = {task.name: _stamped(run, task) for run, task in zip(model_runs, tasks)}
        for task_name, task_lines in lines.items():
            path = folder / f"samples_{task_name}_{stamp}.jsonl"
            path.write_text(
                "".join(json.dumps(redact(s), ensure_ascii=False) + "\n" for s in task_lines), encoding="utf-8"
            )
            written.append(path)
        path = folder / f"results_{stamp}.json"
        doc = results_document(model_runs, tasks, lines, when)
        path.write_text(json.dumps(redact(doc), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(path)
    return written
