"""Thai-H6 runs (Kim et al., arXiv 2410.04795, section 3): evaluate one task with resume, and the H6 average
of the paper's Table 4 (spec ``thai_h6.md``; protocol of the Open LLM Leaderboard's harness, "LB").

``evaluate`` builds every document's prompt with its few-shot draws, sends chunks of documents to the
model in one call, appends each finished document to the results store (so an interrupted run resumes
without recomputing) and returns a per-item table and the task's :class:`~thai_eval_utils.core.store.Score` objects.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

from thai_eval_utils.core.errors import ThaiEvalDataError, ThaiEvalError
from thai_eval_utils.core.protocols import LoglikelihoodModel, Model
from thai_eval_utils.core.provenance import Score, canonical_json, sha256_text
from thai_eval_utils.core.store import RunStore
from thai_eval_utils.h6 import metrics as M
from thai_eval_utils.h6 import tasks as T
from thai_eval_utils.h6.data import load_h6_task
from thai_eval_utils.h6.fewshot import default_seed, draw_shots

TASKS = T.TASKS
#: Table 4 column of the average.
AVERAGE_COLUMN = "thai_h6_avg"


@dataclass
class H6Result:
    """One task's run: the per-item table, its scores (headline first) and where it is stored.

    ``table`` has a row per evaluated document: ``doc`` (index in the scored split), ``key`` (store
    key), ``prompt_sha256``, ``shots`` (few-shot pool indices), per-choice ``lls`` / ``is_greedy`` (or
    GSM8K's ``generation``), ``gold``, predictions and metric values.
    """

    task: str
    table: pd.DataFrame
    scores: dict[str, Score]
    config: dict[str, Any]
    run_dir: Path | None = None
    subject_scores: dict[str, Score] = field(default_factory=dict)

    @property
    def headline(self) -> Score:
        """The score that enters the Thai-H6 average."""
        return self.scores[T.TASK_METRICS[self.task][0]]

    @property
    def items_path(self) -> Path | None:
        """The run's ``items.jsonl`` (one JSON record per document), for drill-down."""
        return self.run_dir / "items.jsonl" if self.run_dir else None

    def subject_table(self) -> pd.DataFrame:
        """MMLU per-subject accuracy (x 100) with standard errors and sizes."""
        rows = [{"subject": k, "acc": 100 * s.value, "stderr": _x100(s.stderr), "n": s.n} for k, s in self.subject_scores.items()]
        return pd.DataFrame(rows, columns=["subject", "acc", "stderr", "n"])

    def __str__(self) -> str:
        return "\n".join(str(s) for s in self.scores.values())


def _x100(v: float | None) -> float | None:
    return None if v is None else 100 * v


def _resolve_data(spec: T.TaskSpec, source_or_docs: Any, fewshot_pool: Any) -> tuple[list[dict], Any, list[Path], str]:
    """(docs, few-shot pool or subject -> pool, data files, source label) from any accepted input."""
    if isinstance(source_or_docs, (str, Path)):
        source_or_docs = load_h6_task(source_or_docs, spec.name)
    if hasattr(source_or_docs, "docs"):
        data = source_or_docs
        pool = data.fewshot_by_subject if spec.name == "th_mmlu" else data.fewshot_pool
        if fewshot_pool is not None:
            pool = fewshot_pool
        return list(data.docs), pool, [Path(p) for p in data.files], str(data.source)
    return list(source_or_docs), fewshot_pool, [], "docs"


def _subject_pool(pool: Any, subject: str) -> list[dict]:
    if pool is None:
        return []
    if isinstance(pool, Mapping):
        return list(pool.get(subject, []))
    return list(pool)


def _draw(spec: T.TaskSpec, docs: list[dict], pool: Any, k: int, sampler: str, seed: int | None) -> list[list[int]]:
    """Few-shot pool indices of every document (of the whole split: ``limit`` never changes them)."""
    if spec.fewshot == "none":
        if k:
            raise ValueError(f"{spec.name} is zero-shot only (the QA preamble is fixed); got num_fewshot={k}")
        return [[] for _ in docs]
    if spec.fewshot == "first_n":
        shots = []
        for i, doc in enumerate(docs):
            n_pool = len(_subject_pool(pool, doc.get("subject", "")))
            if n_pool < k:
                raise ThaiEvalDataError(f"{k} shots requested, the few-shot pool of subject {doc.get('subject')!r} has {n_pool}",
                                        row=i, field="subject")
            shots.append(list(range(k)))
        return shots
    n_pool = len(pool or [])
    if n_pool < k:
        raise ThaiEvalDataError(f"{spec.name}: {k} shots requested from a few-shot pool of {n_pool} (pass num_fewshot)")
    return draw_shots(sampler, len(docs), n_pool, k, seed)


def _selected(spec: T.TaskSpec, docs: list[dict], limit: int | None) -> list[int]:
    """The first ``limit`` documents (MMLU: the first ``limit`` of each subject, as LB's per-subject tasks)."""
    if limit is None:
        return list(range(len(docs)))
    if spec.name != "th_mmlu":
        return list(range(min(limit, len(docs))))
    seen: dict[str, int] = {}
    out = []
    for i, doc in enumerate(docs):
        s = doc.get("subject", "")
        if seen.get(s, 0) < limit:
            seen[s] = seen.get(s, 0) + 1
            out.append(i)
    return out


def _set_bos(model: Model, add_bos_token: bool | None) -> bool | None:
    """Apply ``add_bos_token`` to the model when given; returns the previous setting (to restore)."""
    current = getattr(model, "add_bos_token", None)
    if add_bos_token is not None and current != add_bos_token:
        try:
            model.add_bos_token = add_bos_token
        except AttributeError:
            raise ValueError(f"model has add_bos_token={current!r} and it cannot be changed; load it with "
                             f"add_bos_token={add_bos_token}") from None
    return current


def evaluate(
    model: Model,
    task: str,
    source_or_docs: Any,
    num_fewshot: int | None = None,
    limit: int | None = None,
    *,
    fewshot_pool: Sequence[dict] | Mapping[str, Sequence[dict]] | None = None,
    sampler: str = "lb",
    fewshot_seed: int | None = None,
    add_bos_token: bool | None = None,
    gsm8k_stops: str | Sequence[str] = "lb",
    max_new_tokens: int = T.GSM8K_MAX_NEW_TOKENS,
    mc2: str = "lb",
    mmlu_average: str = "macro",
    templates: Mapping[str, str] | None = None,
    chunk_size: int = 32,
    outputs: str | Path | None = None,
    progress: bool = True,
) -> H6Result:
    """Evaluate ``model`` on one Thai-H6 task; defaults reproduce the leaderboard protocol (LB).

    Args:
        model: a model object (``name``, ``identity``, ``loglikelihood`` / ``generate``, ``add_bos_token``).
        task: ``th_arc``, ``th_hellaswag``, ``th_mmlu``, ``th_truthfulqa``, ``th_winogrande`` or ``th_gsm8k``.
        source_or_docs: a data folder for ``data.load_h6_task``, an ``H6TaskData``, or a list of docs
            (then pass ``fewshot_pool``: a list, or subject -> list for MMLU).
        num_fewshot: shots (default: the task's LB count: 25, 10, 5, 0, 5, 5).
        limit: evaluate only the first ``limit`` documents (MMLU: of each subject), with the few-shot
            draws they get in a full run.
        sampler: "lb" (seed 42, shuffled order), "h" (lm-eval 0.4.13: seed 1234, dataset order) or
            "first_n". MMLU always uses the first 5 of the subject's dev split.
        fewshot_seed: overrides the sampler's seed.
        add_bos_token: BOS before every context (LB: False); None keeps the model's setting. The model's
            own setting is restored afterwards.
        gsm8k_stops: "lb" (``:``, ``Question:``, ``Question``), "h" (``Question:``, ``</s>``, ``<|im_end|>``) or a list.
        max_new_tokens: GSM8K generation budget (256).
        mc2: TruthfulQA headline MC2, "lb" (split at the first label 0) or "mask" (lm-eval's label mask).
        mmlu_average: "macro" (LB: mean of subject accuracies) or "micro" (lm-eval group: all questions).
        templates: template overrides by name (see ``h6_tasks.TASK_SPECS[task].templates``).
        chunk_size: documents sent to the model per call; a crash loses at most one chunk.
        outputs: outputs folder of the results store (default ``$THAI_EVAL_OUTPUTS`` or ``outputs``).
        progress: show a tqdm bar over documents.

    Returns:
        The :class:`H6Result`.
    """
    spec = T.get_task(task)
    if mc2 not in ("lb", "mask"):
        raise ValueError(f"mc2 must be 'lb' or 'mask', not {mc2!r}")
    if mmlu_average not in ("macro", "micro"):
        raise ValueError(f"mmlu_average must be 'macro' or 'micro', not {mmlu_average!r}")
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    if spec.kind != "generate" and not isinstance(model, LoglikelihoodModel):
        raise ThaiEvalError(f"{spec.name} scores answer choices by log-likelihood: {getattr(model, 'name', model)!r} "
                            "has none (API models can run th_gsm8k only)")
    tmpl = T.templates_for(spec, templates)
    docs, pool, files, source = _resolve_data(spec, source_or_docs, fewshot_pool)
    k = spec.num_fewshot if num_fewshot is None else int(num_fewshot)
    eff_sampler = {"none": "none", "first_n": "first_n"}.get(spec.fewshot, sampler)
    seed = fewshot_seed if fewshot_seed is not None or eff_sampler not in ("lb", "h") else default_seed(eff_sampler)
    shots = _draw(spec, docs, pool, k, eff_sampler, seed)
    selected = _selected(spec, docs, limit)

    # Key names avoid "token": results.redact() drops such keys from run cards as if they were secrets.
    config: dict[str, Any] = {
        "task": spec.name, "num_fewshot": k, "sampler": eff_sampler, "fewshot_seed": seed,
        "add_bos": bool(add_bos_token if add_bos_token is not None else getattr(model, "add_bos_token", False)),
        "acc_norm": "unicode code points",
    }
    if spec.kind == "generate":
        config.update(gsm8k_stops=list(T.gsm8k_stops(gsm8k_stops)), max_new=max_new_tokens, decoding="greedy")
    if spec.kind == "truthfulqa":
        config["mc2"] = mc2
    if spec.name == "th_mmlu":
        config["mmlu_average"] = mmlu_average
    if not files:  # docs passed in memory: their content identifies the run
        config["docs_sha256"] = sha256_text(canonical_json([docs, pool]))
    store = RunStore.open(
        model.name, f"thai_h6/{spec.name}", config, model_identity=getattr(model, "identity", None),
        data_files=files, prompt_templates=tmpl, outputs=outputs,
    )
    previous = _set_bos(model, add_bos_token)
    try:
        records = _run(model, spec, docs, pool, shots, selected, tmpl, config, store, chunk_size, progress, mc2)
    finally:
        if add_bos_token is not None and previous is not None:
            model.add_bos_token = previous
    table = _table(spec, docs, records, mc2)
    scores, subjects = _scores(spec, table, config, mmlu_average, limit is not None and len(selected) < len(docs))
    store.write_summary({
        "task": spec.name, "source": source, "n": len(table), "n_docs": len(docs), "limit": limit,
        "scores": {name: s.to_dict() for name, s in scores.items()},
        "subjects": {name: s.to_dict() for name, s in subjects.items()},
    })
    return H6Result(spec.name, table, scores, config, store.root, subjects)


def _requests(spec, docs, pool, shots, i, tmpl) -> T.DocRequests:
    doc = docs[i]
    src = _subject_pool(pool, doc.get("subject", "")) if spec.name == "th_mmlu" else (pool or [])
    try:
        return T.build_requests(spec, doc, [src[j] for j in shots[i]], tmpl)
    except T.DocError as exc:
        raise ThaiEvalDataError(f"{spec.name} doc {i} (or one of its few-shot examples): {exc}", row=i, field=exc.field) from None


def _run(model, spec, docs, pool, shots, selected, tmpl, config, store, chunk_size, progress, mc2) -> list[dict]:
    """Records of the selected documents, computing only those the store lacks, chunk by chunk."""
    done = store.completed()
    records: list[dict] = []
    bar = tqdm(total=len(selected), desc=spec.name, unit="doc", disable=not progress)
    try:
        for start in range(0, len(selected), chunk_size):
            chunk = selected[start : start + chunk_size]
            reqs = {i: _requests(spec, docs, pool, shots, i, tmpl) for i in chunk}
            keys = {i: f"{i}-{reqs[i].sha256[:16]}" for i in chunk}
            todo = [i for i in chunk if keys[i] not in done]
            fresh = _call_model(model, spec, [reqs[i] for i in todo], config) if todo else []
            for i, out in zip(todo, fresh):
                rec = {"doc": i, "prompt_sha256": reqs[i].sha256, "shots": shots[i], **out}
                if "subject" in docs[i]:
                    rec["subject"] = docs[i]["subject"]
                rec.update(_metrics(spec, docs, i, rec, mc2))
                store.append(keys[i], rec)
                done[keys[i]] = {"key": keys[i], **rec}
            records.extend(done[keys[i]] for i in chunk)
            bar.update(len(chunk))
    finally:
        bar.close()
    return records


def _call_model(model, spec, reqs: list[T.DocRequests], config) -> list[dict]:
    """One model call for a chunk of documents; per-document outputs in order."""
    if spec.kind == "generate":
        texts = model.generate([r.prompt for r in reqs], max_new_tokens=config["max_new"],
                               stop=list(config["gsm8k_stops"]), temperature=0.0)
        if len(texts) != len(reqs):
            raise RuntimeError(f"model returned {len(texts)} generations for {len(reqs)} prompts")
        return [{"generation": t} for t in texts]
    flat = [pair for r in reqs for pair in r.requests]
    results = model.loglikelihood(flat)
    if len(results) != len(flat):
        raise RuntimeError(f"model returned {len(results)} log-likelihoods for {len(flat)} requests")
    out, pos = [], 0
    for r in reqs:
        part = results[pos : pos + len(r.requests)]
        pos += len(r.requests)
        out.append({"lls": [float(ll) for ll, _ in part], "is_greedy": [bool(g) for _, g in part]})
    return out


def _metrics(spec, docs, i, rec, mc2) -> dict[str, Any]:
    output = rec["generation"] if spec.kind == "generate" else rec["lls"]
    try:
        return T.process_results(spec, docs[i], output, mc2=mc2)
    except T.DocError as exc:
        raise ThaiEvalDataError(f"{spec.name} doc {i}: {exc}", row=i, field=exc.field) from None


def _table(spec, docs, records: list[dict], mc2: str) -> pd.DataFrame:
    """Per-item table; metrics are recomputed from the stored model outputs (the store keeps them raw)."""
    rows = []
    for rec in records:
        row = {k: v for k, v in rec.items() if k not in T.TASK_METRICS[spec.name]}
        row.update(_metrics(spec, docs, rec["doc"], rec, mc2))
        rows.append(row)
    return pd.DataFrame(rows)


def _scores(spec, table: pd.DataFrame, config, mmlu_average: str, limited: bool):
    """Task scores (headline first) and, for MMLU, per-subject accuracies."""
    sig = T.signature(spec, config, limit=len(table) if limited else None)
    return M.task_scores(spec.name, T.TASK_METRICS[spec.name], table, sig,
                         by_subject=spec.name == "th_mmlu", average=mmlu_average)


def evaluate_tasks(
    model: Model,
    source: Any,
    tasks: Sequence[str] = TASKS,
    limit: int | None = None,
    *,
    limits: Mapping[str, int | None] | None = None,
    **options: Any,
) -> dict[str, H6Result]:
    """:func:`evaluate` each task in ``tasks`` on the data folder ``source``, in the paper's order.

    Args:
        tasks: task names (a comma- or space-separated string works too).
        limit: documents per task (None = all); ``limits`` overrides it per task, e.g.
            ``{"th_gsm8k": 1}`` (generation is slow on a CPU).
        **options: passed to every :func:`evaluate` call (``num_fewshot``, ``sampler``, ``mc2`` ...).

    Returns:
        task -> :class:`H6Result`.
    """
    if isinstance(tasks, str):  # "th_arc,th_gsm8k" or "th_arc th_gsm8k" (e.g. from a command line)
        tasks = tasks.replace(",", " ").split()
    names = [T.get_task(t).name for t in tasks]
    out = {}
    for name in [t for t in TASKS if t in names]:
        task_limit = (limits or {}).get(name, limit)
        out[name] = evaluate(model, name, source, limit=task_limit, **options)
    return out


def scores_frame(results: Mapping[str, H6Result] | Iterable[H6Result]) -> pd.DataFrame:
    """Every score of every task as a tidy table (task, metric, value and stderr x 100, n, headline, signature)."""
    items = results.values() if isinstance(results, Mapping) else results
    rows = []
    for res in items:
        head = T.TASK_METRICS[res.task][0]
        for metric, s in res.scores.items():
            rows.append({"task": res.task, "metric": metric, "value": 100 * s.value, "stderr": _x100(s.stderr),
                         "n": s.n, "headline": metric == head, "signature": s.signature})
    return pd.DataFrame(rows, columns=["task", "metric", "value", "stderr", "n", "headline", "signature"])


# ---------------------------------------------------------------------------------------------
# The Thai-H6 average (paper Table 4)


@dataclass(frozen=True)
class H6Score:
    """The Thai-H6 average (x 100) of the tasks given, with each task's headline score.

    ``partial`` is True when some of the six tasks are missing; the average is then over those
    present and must not be compared with the paper's. The standard error treats the tasks as
    independent: ``100 * sqrt(sum(se_i^2)) / m``.
    """

    value: float
    stderr: float | None
    tasks: dict[str, Score]
    missing: tuple[str, ...]

    @property
    def partial(self) -> bool:
        return bool(self.missing)

    def to_score(self) -> Score:
        """As a :class:`Score` on the 0-100 scale."""
        sig = "thai_h6|mean of " + "+".join(self.tasks) + ("|partial" if self.partial else "")
        return Score(AVERAGE_COLUMN, self.value, len(self.tasks), self.stderr, sig)

    def row(self, model: str | None = None, stderr: bool = True) -> pd.DataFrame:
        """One row like the paper's Table 4 (``thai_h6_avg`` and the six task columns, x 100)."""
        row: dict[str, Any] = {"model": model} if model is not None else {}
        row[AVERAGE_COLUMN] = self.value
        for t in TASKS:
            row[t] = 100 * self.tasks[t].value if t in self.tasks else math.nan
        if stderr:
            row[f"{AVERAGE_COLUMN}_stderr"] = math.nan if self.stderr is None else self.stderr
            for t in TASKS:
                se = self.tasks[t].stderr if t in self.tasks else None
                row[f"{t}_stderr"] = math.nan if se is None else 100 * se
        row["partial"] = self.partial
        return pd.DataFrame([row])

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "stderr": self.stderr, "partial": self.partial, "missing": list(self.missing),
                "tasks": {t: s.to_dict() for t, s in self.tasks.items()}}

    def __str__(self) -> str:
        se = f" ± {self.stderr:.2f}" if self.stderr is not None else ""
        part = f" (partial: missing {', '.join(self.missing)})" if self.partial else ""
        return f"{AVERAGE_COLUMN} = {self.value:.2f}{se} over {len(self.tasks)} tasks{part}"


def thai_h6_score(results_or_scores: Mapping[str, H6Result | Score] | Iterable[H6Result]) -> H6Score:
    """The Thai-H6 average: mean of the task headline scores x 100 (ARC acc_norm, HellaSwag acc_norm,
    MMLU acc, TruthfulQA mc2, Winogrande acc, GSM8K strict exact match).

    Args:
        results_or_scores: task -> :class:`H6Result` or headline :class:`Score` (0-1 scale), or an
            iterable of results. Fewer than six tasks give a partial score.
    """
    items = results_or_scores.items() if isinstance(results_or_scores, Mapping) else ((r.task, r) for r in results_or_scores)
    tasks: dict[str, Score] = {}
    for name, value in items:
        key = T.get_task(name).name
        tasks[key] = value.headline if isinstance(value, H6Result) else value
    if not tasks:
        raise ValueError("no task scores given")
    tasks = {t: tasks[t] for t in TASKS if t in tasks}
    ses = [s.stderr for s in tasks.values()]
    stderr = None if any(se is None for se in ses) else 100 * math.sqrt(sum(se * se for se in ses)) / len(tasks)
    value = 100 * sum(s.value for s in tasks.values()) / len(tasks)
    return H6Score(value, stderr, tasks, tuple(t for t in TASKS if t not in tasks))
