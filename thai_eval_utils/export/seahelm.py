"""Stored runs in SEA-HELM's output layout (aisingapore/SEA-HELM @6844e6c; spec ``seahelm_thai.md`` 5.1, 6), so that
SEA-HELM's own aggregation (``helpers/results_aggregation.ipynb``) reads thai-eval's runs:

```
<to>/<model basename>/run_<r>/
  configs/<model>_run_config_<ISO time>.yaml     tasks (competency, metric, aggregation_group, languages), seed,
                                                 run_number, run_args.skip_task; thai-eval's signature (thai_eval)
  results/<model>_seahelm_results_<ISO time>.json {lang: {competency: {task: {metric: value}, <group>: v, total}, total}, total}
  inferences/<lang>/<aggregation group or task>/<model>_<task>_<lang>.jsonl   one line per row (individual_scores)
```

Each suite says what its runs are in this layout (:meth:`~thai_eval_utils.core.benchmark.Suite.seahelm_results`);
this module names no benchmark. The results JSON is aggregated as ``aggregate_metrics`` does it
(``src/aggregate_metrics.py:175-272``): a competency's total is the mean over its tasks without a group and, per
aggregation group, the plain mean of the group's primary metrics; a language's total the mean of its competencies;
``total`` the mean over languages. SEA-HELM's ``inference_time_taken`` and ``is_cached`` are not written (thai-eval
stores no such per-task timing).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from thai_eval_utils.core import registry
from thai_eval_utils.core.benchmark import SeahelmRun, SeahelmTask
from thai_eval_utils.core.provenance import redact
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.export.stored import signature

#: The format's name (``thai-eval export --format``): SEA-HELM's own, which its file names carry.
FORMAT = "seahelm"


def seahelm_tasks(run: StoredRun) -> list[SeahelmTask]:
    """A stored run's SEA-HELM tasks, as its suite makes them (none for a run no registered suite exports)."""
    suite = registry.suite_of(run.benchmark)
    return suite.seahelm_results(run) if suite is not None else []


def model_basename(model_name: str) -> str:
    """The model's folder name: SEA-HELM's ``os.path.basename`` of the model, unsafe characters as ``_``."""
    base = Path(model_name.rstrip("/")).name or "model"
    return re.sub(r"[^A-Za-z0-9._-]", "_", base)


def _plain(value: Any) -> Any:
    """JSON as pandas writes it: NaN and infinities as null, containers walked."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def results_document(entries: Sequence[tuple[SeahelmTask, SeahelmRun]]) -> dict[str, Any]:
    """One run's results JSON (``update_metrics`` then ``aggregate_metrics``): the tasks' metrics nested by language
    and competency, group means, competency, language and overall totals."""
    doc: dict[str, Any] = {}
    for task, run in entries:
        doc.setdefault(task.language, {}).setdefault(task.competency, {})[task.task] = _plain(run.metrics)
    langs_total = {}
    for lang, competencies in doc.items():
        comp_total = {}
        for competency, tasks in competencies.items():
            scores: dict[str, float] = {}
            groups: dict[str, list[float]] = {}
            for task, run in entries:
                if task.language != lang or task.competency != competency:
                    continue
                value = float(run.metrics[task.metric])
                if task.aggregation_group:
                    groups.setdefault(task.aggregation_group, []).append(value)
                    scores[task.aggregation_group] = sum(groups[task.aggregation_group]) / len(
                        groups[task.aggregation_group]
                    )
                    tasks[task.aggregation_group] = scores[task.aggregation_group]
                else:
                    scores[task.task] = value
            tasks["total"] = comp_total[competency] = sum(scores.values()) / len(scores)
        competencies["total"] = langs_total[lang] = sum(comp_total.values()) / len(comp_total)
    doc["total"] = sum(langs_total.values()) / len(langs_total) if langs_total else 0.0
    return doc


def run_config(
    entries: Sequence[tuple[SeahelmTask, SeahelmRun]], run_index: int, signatures: Mapping[str, Any]
) -> dict[str, Any]:
    """One run's config (what the aggregation notebook reads: ``tasks`` with each task's competency,
    ``aggregation_group`` and ``languages``; ``run_args.skip_task``), plus thai-eval's signature per task."""
    tasks: dict[str, Any] = {}
    for task, _ in entries:
        entry = tasks.setdefault(task.task, {k: v for k, v in task.config.items() if k != "languages"})
        entry.update({"competency": task.competency, "metric": task.metric})
        if task.aggregation_group:
            entry["aggregation_group"] = task.aggregation_group
        entry.setdefault("languages", {})[task.language] = dict(
            (task.config.get("languages") or {}).get(task.language) or {}
        )
    seeds = {run.seed for _, run in entries if run.seed is not None}
    return _plain(
        {
            "tasks": tasks,
            "seed": seeds.pop() if len(seeds) == 1 else sorted(seeds),
            "run_number": run_index,
            "run_args": {"skip_task": []},
            "thai_eval": redact(dict(signatures)),
        }
    )


def _write_jsonl(path: Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(_plain(r), ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _task_order(run: StoredRun) -> tuple[str, int, str]:
    """Runs in their suite's task order (:attr:`Suite.tasks`): the run config lists tasks in that order, and
    SEA-HELM's notebook draws its one generator task by task in the config's order (spec P3), as a suite run of
    thai-eval draws it in the suite's order."""
    suite = registry.suite_of(run.benchmark)
    tasks = suite.tasks if suite is not None else ()
    return (run.family, tasks.index(run.task) if run.task in tasks else len(tasks), run.task)


def write_model(model: str, runs: Sequence[StoredRun], to: str | Path, *, when: datetime | None = None) -> list[Path]:
    """One model's runs in SEA-HELM's layout under ``to``; returns the files written."""
    name = model_basename(model)
    stamp = (when or datetime.now()).strftime("%Y-%m-%dT%H:%M:%S.%f")
    by_run: dict[int, list[tuple[SeahelmTask, SeahelmRun]]] = {}
    sigs: dict[str, Any] = {}
    for stored in sorted(runs, key=_task_order):
        for task in seahelm_tasks(stored):
            sigs[task.task] = signature(stored)
            for r in task.runs:
                by_run.setdefault(r.index, []).append((task, r))
    written = []
    for index, entries in sorted(by_run.items()):
        root = Path(to) / name / f"run_{index}"
        for task, r in entries:
            folder = root / "inferences" / task.language / (task.aggregation_group or task.task)
            written.append(_write_jsonl(folder / f"{name}_{task.task}_{task.language}.jsonl", r.rows))
        (root / "configs").mkdir(parents=True, exist_ok=True)
        config = root / "configs" / f"{name}_run_config_{stamp}.yaml"
        config.write_text(
            yaml.safe_dump(run_config(entries, index, sigs), allow_unicode=True, sort_keys=False), encoding="utf-8"
        )
        (root / "results").mkdir(parents=True, exist_ok=True)
        results = root / "results" / f"{name}_{FORMAT}_results_{stamp}.json"
        results.write_text(json.dumps(results_document(entries), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        written += [config, results]
    return written


def write_seahelm(runs: Sequence[StoredRun], to: str | Path, *, when: datetime | None = None) -> list[Path]:
    """Every model's runs that some suite exports to SEA-HELM's layout; returns the files written."""
    by_model: dict[str, list[StoredRun]] = {}
    for run in runs:
        by_model.setdefault(run.model_name, []).append(run)
    return [p for model, model_runs in by_model.items() for p in write_model(model, model_runs, to, when=when)]


def exports_seahelm(run: StoredRun) -> bool:
    """Whether a stored run has tasks in SEA-HELM's layout."""
    return bool(seahelm_tasks(run))
