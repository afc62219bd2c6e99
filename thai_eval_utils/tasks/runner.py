"""Running a declared task on the package's one run loop and store: items validated whole first, then
``core.runloop.run_items`` over ``RunStore.open(model, "<task>/<task>", ...)`` (resumable, kill -9 safe), then the
summary: every metric as a Score with a percentile bootstrap interval over items.

Multiple choice: one ``model.loglikelihood`` call per batch with lm-eval's requests ``(context, delimiter +
choice)`` (the prefix-sharing engine scores the shared context once). Generation: ``model.generate`` (a plain
prompt) or ``model.chat`` (messages) with the task's decoding options; per-item metrics on each record, corpus
metrics (chrF, BLEU) over the outputs at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from thai_eval_utils.backend.api_replies import ApiError
from thai_eval_utils.backend.openai_client import stable_model_identity
from thai_eval_utils.core.provenance import Score, canonical_json, scrub, sha256_text
from thai_eval_utils.core.protocols import prepare_loglikelihood
from thai_eval_utils.core.runloop import RunOutcome, run_items
from thai_eval_utils.core.store import RunStore
from thai_eval_utils.stats.bootstrap import Interval, mean_interval
from thai_eval_utils.stats.corpus import corpus_interval
from thai_eval_utils.tasks.items import load_items
from thai_eval_utils.tasks.language import reply_stats, stats_columns
from thai_eval_utils.tasks.judged import JudgedMetric, judge_batch_mode, judge_records, judged_metrics
from thai_eval_utils.tasks.metrics import Metric, multiple_choice, qualified_name
from thai_eval_utils.tasks.shaping import apply_filters
from thai_eval_utils.tasks.thinking import (
    DEFAULT,
    ThinkingOption,
    apply_to_model,
    config_entry,
    split_reply,
    summary_entry,
)

#: The layout of a declared task's records and summary (recorded in each run's config).
RECORD_FORMAT = 1
#: The bootstrap of the summary's intervals (the report's leaderboard uses the same percentile method).
N_RESAMPLES, LEVEL, BOOT_SEED = 1000, 0.95, 0


def benchmark_of(task: Any) -> str:
    """The run card's ``benchmark`` of a declared task: ``<suite>/<task>``, both the task's name."""
    return f"{task.name}/{task.name}"


def templates_of(task: Any) -> dict[str, str]:
    """The task's prompt templates by name (their hashes key the run)."""
    if task.kind == "generation":
        return task.templates()
    return {"prompt": qualified_name(task.prompt) if callable(task.prompt) else task.prompt}


def signature_of(task: Any, metric_signature: str, n: int, n_docs: int) -> str:
    """A score's provenance line: task, version, declaration hash, metric, and the limit when partial."""
    decl = sha256_text(canonical_json(task.declaration()))[:8]
    limit = f"|limit:{n}/{n_docs}" if n < n_docs else ""
    return f"{task.name}:v{task.version}|decl:{decl}|{metric_signature}{limit}"


@dataclass(frozen=True)
class RunLayout:
    """How a suite whose runs were stored before its tasks were declared keeps their layout when
    :func:`run_task` runs them: the run card's benchmark and config, each record, the summary, the files and
    templates that key the run, and the model call, so every config id, record and summary stays what it was.

    Attributes:
        benchmark: the run card's ``benchmark`` (e.g. ``thai_h6/th_arc``).
        config: the stored config (everything that changes the numbers; it keys the run folder).
        record: (item, the model's answer to it) -> the stored record; the answer is the item's
            ``(loglikelihood, is_greedy)`` pairs (multiple choice) or its reply (generation).
        fields: field -> type(s) a stored record must have to be reused.
        summarize: (records in item order, what the model did with the thinking option, the run loop's outcome)
            -> the summary written (None: the declared tasks' summary).
        call: a batch of items -> the model's results (default: the task's call: ``loglikelihood`` of every
            item's requests, or ``generate``/``chat`` with the task's decoding options).
        data_files, templates: what the run card hashes into the config id.
        model_identity: the identity recorded (default: the model's, without what a server's answers fill in).
        tolerate: errors of a call that leave its items unfinished (listed) instead of ending the run.
        thinking_settings: hand the thinking option's settings to the model while the run lasts
            (:func:`~.thinking.apply_to_model`: an endpoint's split-off thinking rejoined, ``enable_thinking``...);
            False for a suite whose stored replies are the server's content as it came (no thinking option).
        judged: judge the task's judged metrics (:class:`~.judged.JudgedMetric`) in this run, after the generations;
            False for a suite that judges them in a run of its own (ThaiCLI's judge run, keyed by this run's).
        batch_key: an item -> its group: items of different groups never share a model call (a suite's repeated
            runs, each with its own seed, batched as one run at a time); None: any consecutive items.
        rounds: later rounds, in order, whose items depend on what the model answered before: each, given the
            records the store holds by then (by key), builds the items of a run loop pass of its own in the same
            store (a chat's second turn after the model's stored first reply); their keys must differ from the
            items', their records follow the items' in the summary's records.
    """

    benchmark: str
    config: Mapping[str, Any]
    record: Callable[[dict[str, Any], Any], dict[str, Any]]
    fields: Mapping[str, type | tuple[type, ...]]
    summarize: Callable[[list[dict[str, Any]], Mapping[str, str], RunOutcome], dict[str, Any]] | None
    call: Callable[[list[dict[str, Any]]], Sequence[Any]] | None = None
    data_files: Sequence[str | Path] = ()
    templates: Mapping[str, str] = field(default_factory=dict)
    model_identity: Mapping[str, Any] | None = None
    tolerate: tuple[type[BaseException], ...] = (ApiError,)
    thinking_settings: bool = True
    judged: bool = True
    batch_key: Callable[[dict[str, Any]], Any] | None = None
    rounds: Sequence[Callable[[Mapping[str, dict[str, Any]]], Sequence[dict[str, Any]]]] = ()


@dataclass
class TaskRun:
    """A finished run of a declared task: its records in item order, its scores (Score dicts with an
    ``interval``), where it is stored."""

    task: str
    records: list[dict[str, Any]]
    scores: dict[str, dict[str, Any]]
    run_dir: Path
    config_id: str
    computed: int = 0
    summary: dict[str, Any] = field(default_factory=dict)

    def table(self) -> pd.DataFrame:
        """One row per metric: value, n, the interval and the signature; a generation task's rows also show the
        answers-in-Thai rate, its n and the replies whose thinking never closed."""
        replies = stats_columns(self.summary.get("replies")) if self.summary.get("kind") == "generation" else {}
        rows = [
            {
                "task": self.task,
                "metric": m,
                "value": s["value"],
                "n": s["n"],
                "ci_low": (s.get("interval") or {}).get("low"),
                "ci_high": (s.get("interval") or {}).get("high"),
                **replies,
                "signature": s["signature"],
            }
            for m, s in self.scores.items()
        ]
        return pd.DataFrame(rows)

    def __str__(self) -> str:
        return "\n".join(f"{self.task}/{m} = {s['value']:.4f} (n={s['n']})" for m, s in self.scores.items())


def scored_text(task: Any, output: str, thinking: ThinkingOption = DEFAULT) -> str:
    """What a generation task's metrics score of a stored reply: its thinking cut first
    (:func:`.thinking.split_reply`), then the task's reply filters in order (:mod:`.shaping`)."""
    return apply_filters(split_reply(output, thinking).scored, getattr(task, "filters", ()))


# ------------------------------------------------------------------------------------------------- compute
def item_requests(task: Any, item: Mapping[str, Any]) -> list[tuple[str, str]]:
    """An item's ``(context, continuation)`` requests: those it carries (``requests``: built per document, e.g.
    Winogrande's partial scoring, where each choice changes the context), else lm-eval's ``(context, delimiter +
    choice)`` per choice."""
    if "requests" in item:
        return [(str(c), str(x)) for c, x in item["requests"]]
    return [(item["context"], task.target_delimiter + c) for c in item["choices"]]


def _mc_requests(task: Any, chunk: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    return [pair for it in chunk for pair in item_requests(task, it)]


def _answers(task: Any, chunk: Sequence[dict[str, Any]], results: Sequence[Any]) -> list[Any]:
    """The model's results split per item: each item's ``(loglikelihood, is_greedy)`` pairs (multiple choice,
    as many as its requests) or its reply (generation)."""
    if task.kind != "multiple_choice":
        if len(results) != len(chunk):
            raise RuntimeError(f"model returned {len(results)} generations for {len(chunk)} prompts")
        return list(results)
    sizes = [len(item_requests(task, it)) for it in chunk]
    if len(results) != sum(sizes):
        raise RuntimeError(f"model returned {len(results)} log-likelihoods for {sum(sizes)} requests")
    out, at = [], 0
    for k in sizes:
        out.append(list(results[at : at + k]))
        at += k
    return out


def _mc_records(task: Any, chunk: Sequence[dict[str, Any]], results: Sequence[tuple[float, bool]]) -> list[dict]:
    out, at = [], 0
    for it in chunk:
        k = len(it["choices"])
        part, at = results[at : at + k], at + k
        lls = [float(r[0]) for r in part]
        scores = multiple_choice(lls, it["choices"], it["gold"], ties=task.ties)
        for metric in task.scorers:  # each declared metric under its name (acc and acc_norm: the same values)
            scores[metric.name] = metric.score_choices(lls, it["choices"], it["gold"], task.ties)
        out.append(
            {
                "id": it["id"],
                "doc": it["row"],
                "question": it["question"],
                **sent(it),
                "choices": it["choices"],
                "gold": it["gold"],
                "lls": lls,
                "is_greedy": [bool(r[1]) for r in part],
                **scores,
            }
        )
    return out


def sent(item: Mapping[str, Any]) -> dict[str, Any]:
    """What the model was given for an item, as its record keeps it (so views and exports never rebuild prompts
    from the data files): its own ``requests`` (per-choice contexts), a chat's ``messages``, else the ``context``
    (few-shot block + question)."""
    if "requests" in item:
        return {"requests": [list(pair) for pair in item["requests"]]}
    if "messages" in item:
        return {"messages": list(item["messages"])}
    return {"context": item["context"]}


def _gen_call(model: Any, task: Any):
    options = {
        "max_new_tokens": task.max_new_tokens,
        "stop": list(task.stop) or None,
        "temperature": task.temperature,
        "top_p": task.top_p,
        "seed": task.seed,
    }
    if task.is_chat:
        return lambda chunk: model.chat([it["messages"] for it in chunk], **options)
    return lambda chunk: model.generate([it["context"] for it in chunk], **options)


def _gen_records(
    task: Any, chunk: Sequence[dict[str, Any]], outputs: Sequence[str], thinking: ThinkingOption = DEFAULT
) -> list[dict]:
    """Records of a generation batch: the raw reply stored whole (``output``), each per-item metric on the reply
    with its thinking cut (:func:`.thinking.split_reply`; a failed answer scores as the empty text)."""
    out = []
    for it, text in zip(chunk, outputs, strict=True):
        rec = {
            "id": it["id"],
            "doc": it["row"],
            "question": it["question"],
            **sent(it),
            "output": text,
            "reference": it["reference"],
        }
        scored = scored_text(task, text, thinking)
        for metric in task.scorers:
            if metric.kind != "corpus" and not getattr(metric, "judged", False):
                rec[metric.name] = float(metric.score_item(scored, it["reference"]))
        out.append(rec)
    return out


# ------------------------------------------------------------------------------------------------- scores
def _interval(values: Sequence[float], name: str) -> Interval | None:
    if len(values) < 2 or len(set(values)) < 2:
        return None if len(values) < 2 else _constant(values, name)
    return mean_interval(values, name=name, method="percentile", level=LEVEL, n_resamples=N_RESAMPLES, seed=BOOT_SEED)


def _constant(values: Sequence[float], name: str) -> Interval:
    v = float(values[0])
    return Interval(
        name,
        v,
        v,
        v,
        LEVEL,
        "percentile",
        N_RESAMPLES,
        BOOT_SEED,
        len(values),
        N_RESAMPLES,
        design="bootstrap over items",
        note="every item has the same value",
    )


def score_records(
    task: Any,
    records: Sequence[dict[str, Any]],
    n_docs: int,
    thinking: ThinkingOption = DEFAULT,
    metrics: Sequence[Metric] | None = None,
) -> dict[str, dict[str, Any]]:
    """Each declared metric of the records: mean per item (acc, acc_norm, exact_match, rougeL) or the corpus
    value (chrf, bleu, on the replies with their thinking cut), with n, the standard error (per-item metrics), a
    percentile bootstrap interval over items and the signature (a generation task's with the thinking option).
    ``metrics``: the task's metric objects (default ``task.scorers``; a judged one with the judge in force). An item
    without a value (a judged metric's unjudged item) is left out of the mean and counted (``n_unjudged``)."""
    out: dict[str, dict[str, Any]] = {}
    n = len(records)
    for metric in task.scorers if metrics is None else metrics:
        name = metric.name
        sig_part = metric.signature()
        if task.kind == "multiple_choice":
            sig_part += f"|delimiter:{task.target_delimiter!r}|ties:{task.ties}"
        sig = signature_of(task, sig_part, n, n_docs)
        if task.kind == "generation":
            sig += f"|{thinking.signature()}"
        if metric.kind == "corpus":
            hyps = [scored_text(task, r["output"], thinking) for r in records]
            refs = [r["reference"] for r in records]
            score = Score(f"{task.name}/{name}", metric(hyps, refs), n, None, sig)
            iv = (
                corpus_interval(hyps, refs, metric, name=name, level=LEVEL, n_resamples=N_RESAMPLES, seed=BOOT_SEED)
                if n >= 2
                else None
            )
        else:
            values = [float(r[name]) for r in records if r.get(name) is not None]
            score = Score.mean(f"{task.name}/{name}", values, sig)
            if type(metric).aggregate is not Metric.aggregate:  # the metric's own aggregation
                score = replace(score, value=float(metric.aggregate(values)))
            iv = _interval(values, name)
        out[name] = {**score.to_dict(), "interval": iv.to_dict() if iv is not None else None}
        if metric.kind != "corpus" and len(values) < n:
            out[name]["n_unjudged"] = n - len(values)
    return out


def reply_summary(
    records: Sequence[dict[str, Any]], thinking: ThinkingOption, support: Mapping[str, str], field: str = "output"
) -> dict[str, Any]:
    """A generation run's thinking and answers-in-Thai summary entries: the option and what the model did with it, and
    the stored replies' (each record's ``field``) thinking counts and answers-in-Thai rate
    (:func:`.language.reply_stats`)."""
    return {"thinking": summary_entry(thinking, support), "replies": reply_stats(records, field, thinking)}


# ---------------------------------------------------------------------------------------------------- run
def _declared_summary(
    task: Any,
    records: list[dict[str, Any]],
    n_docs: int,
    limit: int | None,
    run: RunOutcome,
    thinking: ThinkingOption,
    metrics: Sequence[Metric],
    support: Mapping[str, str],
) -> dict[str, Any]:
    """A declared task's summary: every metric's score with its interval, the counts, a generation task's replies."""
    return {
        "task": task.name,
        "kind": task.kind,
        "version": task.version,
        "n": len(records),
        "n_docs": n_docs,
        "limit": limit,
        "n_computed_this_run": run.computed,
        "scores": score_records(task, records, n_docs, thinking, metrics),
        "n_ungenerated": len(run.failed),
        "ungenerated": run.failed,
        **(reply_summary(records, thinking, support) if task.kind == "generation" else {}),
    }


def _declared_layout(
    model: Any,
    task: Any,
    rows: Sequence[Mapping[str, Any]] | None,
    thinking: ThinkingOption,
    n_docs: int,
    limit: int | None,
    benchmark: str | None,
) -> RunLayout:
    """The declared tasks' own layout: the declaration in the config, lm-eval-shaped records, scores with
    bootstrap intervals."""
    config = {"task": task.declaration(), "kind": task.kind, "record_format": RECORD_FORMAT}
    if task.kind == "generation":
        config.update(config_entry(thinking))
    if rows is not None:
        config["docs_sha256"] = sha256_text(canonical_json([dict(r) for r in rows]))
    if task.kind == "multiple_choice":
        record, fields = (lambda it, answer: _mc_records(task, [it], answer)[0]), {"lls": list}
    else:
        record, fields = (lambda it, answer: _gen_records(task, [it], [answer], thinking)[0]), {"output": str}

    files = task.data_files()[1:] if rows is not None else task.data_files()
    return RunLayout(
        benchmark or benchmark_of(task),
        config,
        record,
        fields,
        None,
        data_files=files,
        templates=templates_of(task),
        model_identity=stable_model_identity(model),
    )


def _then(first: RunOutcome, later: RunOutcome) -> RunOutcome:
    """Two passes of the run loop on one store as one outcome: both passes' keys in order, every record, the counts,
    failures and the error that ended either early."""
    return RunOutcome(
        [*first.keys, *later.keys],
        {**first.records, **later.records},
        first.computed + later.computed,
        {**first.failed, **later.failed},
        first.fatal or later.fatal,
        store=first.store,
    )


def run_task(
    model: Any,
    task: Any,
    *,
    limit: int | None = None,
    outputs: str | Path | None = None,
    batch_size: int | None = None,
    progress: bool = True,
    rows: Sequence[Mapping[str, Any]] | None = None,
    benchmark: str | None = None,
    summarize: Callable[[list[dict[str, Any]]], Mapping[str, Any]] | None = None,
    thinking: ThinkingOption = DEFAULT,
    judge: Any = None,
    judge_base_url: str | None = None,
    judge_batch: Mapping[str, Any] | None = None,
    items: Sequence[dict[str, Any]] | None = None,
    layout: RunLayout | None = None,
) -> TaskRun:
    """Run a declared task (:class:`~.declared.MultipleChoiceTask` or :class:`~.declared.GenerationTask`) on
    ``model``, resuming whatever its run already stored, and write the summary.

    Args:
        model: a loaded model (``backend.models.load_model``): ``loglikelihood`` for multiple choice, ``generate`` or
            ``chat`` for generation.
        task: the declared task (bound to its file's folder: ``task.bind(path)`` or the registry's suite ``.task``).
        limit: the first N items (a limited run is the same run folder: a later full run adds the rest).
        outputs: the outputs folder (default ``$THAI_EVAL_OUTPUTS`` or ``outputs``).
        batch_size: items per model call (default: the model's ``concurrency``, else 8); each batch is stored as
            it finishes.
        progress: show a progress bar.
        rows: the task's records in memory instead of its data file (a benchmark's own loader read them; their
            hash keys the run as ``docs_sha256``).
        benchmark: the run card's ``benchmark`` (default ``<task>/<task>``; a benchmark package's own name).
        summarize: records -> more summary entries (their ``scores`` are added to the task's).
        thinking: a generation task's thinking option (:mod:`.thinking`): the reply stored whole, metrics
            on it cut; the summary's ``thinking`` and ``replies`` (:func:`.language.reply_stats`).
        judge: the judge of the task's judged metrics (:class:`~.judged.JudgedMetric`), replacing the one the task
            file names: a chat model, or an OpenAI-compatible model id at ``judge_base_url`` (``thai-eval run
            --judge / --judge-base-url``); None: the task file's.
        judge_batch: the judged metrics' batch mode, keyword arguments of :func:`~.judged.judge_batch_mode`
            (``submit``, ``file_out``, ``file_in``, ``wait_s``: the run options' ``batch``, ``thai-eval run --batch``);
            None or none set: live calls. A batch still running leaves its items unjudged (counted); run again to
            collect.
        items: the items already built by a suite's own builder (each with an ``id``, and ``context`` +
            ``choices`` or its own ``requests`` for multiple choice; ``context`` or ``messages`` for generation),
            in place of the task's data file.
        layout: a suite's stored run layout (:class:`RunLayout`; default: the declared tasks' own).

    Raises:
        ThaiEvalDataError: a bad row (file, row and field named) before any run folder is made or any call.

    A call that fails after the client's retries (an ``ApiError``; in batch mode also a reply not back yet,
    :mod:`thai_eval_utils.backend.batch_model`) leaves its items out of the records and the scores (their n says so),
    listed in ``summary["ungenerated"]``; a rerun computes them.
    """
    all_items = load_items(task, rows=rows) if items is None else list(items)
    items = all_items if limit is None else all_items[: max(0, int(limit))]
    if task.kind == "multiple_choice":
        prepare_loglikelihood(model)  # a served model's order probe: before the run card records its identity
    if layout is None:
        layout = _declared_layout(model, task, rows, thinking, len(all_items), limit, benchmark)
    if layout.call is not None:
        call, prepare = layout.call, None
    elif task.kind == "multiple_choice":
        call, prepare = model.loglikelihood, (lambda chunk: _mc_requests(task, chunk))
    else:
        call, prepare = _gen_call(model, task), None
    size = batch_size or getattr(model, "concurrency", None) or 8
    with RunStore.open(
        model.name,
        layout.benchmark,
        layout.config,
        model_identity=layout.model_identity,
        data_files=[str(p) for p in layout.data_files],
        prompt_templates=layout.templates,
        outputs=outputs,
    ) as store:
        option = thinking if task.kind == "generation" else DEFAULT

        with apply_to_model(model, option) if layout.thinking_settings else nullcontext({}) as support:
            run = RunOutcome([], {}, 0, {}, store=store)  # nothing yet; each pass of the loop adds its own
            for n in range(1 + len(layout.rounds)):  # round 1: the items; each later round built from the store
                batch = items if n == 0 else list(layout.rounds[n - 1](store.completed(layout.fields)))
                outcome = run_items(
                    store,
                    batch,
                    lambda it: it["id"],
                    call,
                    batch_size=size,
                    desc=f"{task.name} ({model.name})" if n == 0 else f"{task.name} round {n + 1} ({model.name})",
                    progress=progress,
                    prepare=prepare,
                    finish=lambda chunk, res: [
                        layout.record(it, a) for it, a in zip(chunk, _answers(task, chunk, res))
                    ],
                    fields=layout.fields,
                    tolerate=layout.tolerate,
                    describe=lambda exc: scrub(str(exc)),
                    group=layout.batch_key,
                )
                run = _then(run, outcome)
        records = run.in_order()
        scorers = getattr(task, "scorers", ())
        metrics = [m.with_judge(judge, judge_base_url) if isinstance(m, JudgedMetric) else m for m in scorers]
        judged = {}
        for metric in judged_metrics(metrics) if layout.judged else ():  # after the generations: the judge scores
            predictions = [scored_text(task, r["output"], thinking) for r in records]
            batch = judge_batch_mode(metric.model(), **(judge_batch or {}), progress=progress)
            records, judged[metric.name] = judge_records(
                store, records, metric, predictions, batch=batch, progress=progress
            )
        if layout.summarize is not None:
            summary = layout.summarize(records, support, run)
        else:
            summary = _declared_summary(task, records, len(all_items), limit, run, thinking, metrics, support)
            summary.update({"judged": judged} if judged else {})
        if summarize is not None:
            extra = dict(summarize(records))
            summary = {**summary, **extra, "scores": {**summary["scores"], **(extra.get("scores") or {})}}
        store.write_summary(summary)
    scores = summary.get("scores", {})  # a layout's summary may score nothing (replies judged in a later run)
    return TaskRun(task.name, records, scores, store.root, store.config_id, run.computed, summary)
