"""What one SEA-HELM Thai task's run is made of (spec ``seahelm_thai.md`` 3.3, 5): the protocol options that key its
run folder, its rows, shots, runs, sampling, budget and config (:class:`TaskSetup`), the record of a reply, and
:func:`run_repeated`: a task's runs on ``tasks.runner.run_task`` in SEA-HELM's stored layout (one store per task,
items ``r<run>/<id>``), with what every summary shares (:meth:`TaskSetup.score_runs`, :meth:`TaskSetup.summary`,
:meth:`TaskSetup.signature`, :func:`headline`, :func:`reply_summary`)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from thai_eval_utils.backend.api_replies import ApiError
from thai_eval_utils.backend.openai_client import stable_model_identity
from thai_eval_utils.core.protocols import Model, TokenizingModel
from thai_eval_utils.core.provenance import Score, canonical_json, sha256_text
from thai_eval_utils.core.runloop import RunOutcome, current_call
from thai_eval_utils.core.store import RunStore
from thai_eval_utils.seahelm.aggregate import AGGREGATION_SEED, OverRuns, task_over_runs
from thai_eval_utils.seahelm.config import MAX_THINK_TOKENS, SEAHELM_COMMIT, SEEDS, TaskConfig, task_config
from thai_eval_utils.seahelm.data import TaskData, load_task_data
from thai_eval_utils.seahelm.generation import Sampling, base_prompt, gold_logprob, model_sampling
from thai_eval_utils.seahelm.prompts import Messages, build_messages
from thai_eval_utils.seahelm.translation import MetricX
from thai_eval_utils.stats.bootstrap import mean_interval
from thai_eval_utils.tasks.declared import GenerationTask
from thai_eval_utils.tasks.language import reply_stats_by, stats_note
from thai_eval_utils.tasks.runner import RunLayout, run_task
from thai_eval_utils.tasks.runner import reply_summary as declared_reply_summary
from thai_eval_utils.tasks.thinking import ThinkingOption, split_reply

SUITE_NAME = "seahelm"
RECORD_FORMAT = 1
#: Our interval beside SEA-HELM's standard error: a percentile bootstrap over items of the per-item run means.
N_RESAMPLES, LEVEL, BOOT_SEED = 1000, 0.95, 0


@dataclass(frozen=True)
class Protocol:
    """Every option that changes a SEA-HELM number (keyed into the run's config id, except ``n_runs``)."""

    base: bool = False
    reasoning: bool = False
    greedy: bool = False
    max_tokens: int | None = None
    thinking: ThinkingOption = field(default_factory=ThinkingOption)
    batch_size: int | None = None

    def max_new_tokens(self, task: TaskConfig) -> int:
        """The task's ``max_tokens`` (+20000 for reasoning models, ``task_config.py:355-363``), capped by
        ``max_tokens`` (a quick look, recorded; not SEA-HELM's)."""
        n = task.max_tokens + (MAX_THINK_TOKENS if self.reasoning else 0)
        return min(n, self.max_tokens) if self.max_tokens else n

    def keyed(self, task: TaskConfig, sampling: Sampling) -> dict[str, Any]:
        return {
            "base": self.base,
            "reasoning": self.reasoning,
            "max_new_tokens": self.max_new_tokens(task),
            "max_tokens_capped": bool(self.max_tokens and self.max_tokens < task.max_tokens),
            "sampling": asdict(sampling),
            "thinking": self.thinking.record(),
            "thinking_signature": self.thinking.signature(),
            "system_prompt": None,
            "template": "seahelm base_model.jinja" if self.base else "the model's own chat template",
        }


@dataclass
class SeahelmTaskRun:
    """One task's stored run: its summary (per run: metrics, per-item values; over runs: mean and SE)."""

    task: str
    summary: dict[str, Any]
    run_dir: Path
    computed: int = 0

    def __str__(self) -> str:
        o = self.summary.get("over_runs") or {}
        replies = stats_note(self.summary.get("replies"))
        return (
            f"{self.task}: {self.summary.get('primary_metric')} = {o.get('mean', float('nan')):.2f} "
            f"± {o.get('stderr', float('nan')):.2f} (SE over {o.get('runs')} run(s), n={self.summary.get('n')})"
            + (f"; {replies}" if replies else "")
        )


def item_key(run: int, row: Mapping[str, Any]) -> str:
    """The store key of ``row``'s reply in run ``run`` (``benchmarks/seahelm_speed.py`` reads the store by it)."""
    return f"r{run}/{row['id']}"


#: What a stored reply record must hold to be reused (``run_items``' check).
RECORD_FIELDS: dict[str, type] = {"reply": str, "scored": str}


@dataclass
class TaskSetup:
    """One task's run, before any model call: its config and rows, the runs asked for, the sampling and the
    new-token budget, and the store they key (:func:`task_setup`; shared by :func:`run_seahelm_task` and
    :mod:`.pooling`, so both write the same records into the same run folder)."""

    task: TaskConfig
    data: TaskData
    rows: list[Any]
    shots: list[dict[str, Any]]
    run_ids: list[int]
    sampling: Sampling
    protocol: Protocol
    config: dict[str, Any]
    max_new: int

    def open_store(self, model: Model, outputs: str | Path | None) -> RunStore:
        """The task's run store (created or resumed; one writer at a time)."""
        identity = stable_model_identity(model)
        return RunStore.open(
            model.name,
            f"{SUITE_NAME}/{self.task.key}",
            self.config,
            model_identity=identity,
            data_files=self.data.files,
            prompt_templates=self.task.templates(),
            outputs=outputs,
        )

    @property
    def ids(self) -> list[str]:
        """The rows' ids (a row: a mapping with an ``id``, or a parsed row with ``.id``)."""
        return [str(row["id"]) if isinstance(row, Mapping) else row.id for row in self.rows]

    def items(self) -> list[dict[str, Any]]:
        """The items of the repeated run, run after run: each row once per run, keyed ``r<run>/<id>``, with its
        run's seed."""
        return [
            {"id": item_key(r, {"id": i}), "run": r, "seed": SEEDS[r], "row": row}
            for r in self.run_ids
            for i, row in zip(self.ids, self.rows)
        ]

    def run_records(self, records: Mapping[str, Any], run: int) -> list[Any]:
        """Run ``run``'s stored records (by key) in row order: every run is complete (``run_task`` stops at a
        failed reply)."""
        return [records[item_key(run, {"id": i})] for i in self.ids]

    def score_runs(
        self,
        entry: Callable[[int], dict[str, Any]],
        rng: np.random.Generator | None,
        labels: list[list[Any]] | None = None,
    ) -> tuple[dict[str, dict[str, Any]], OverRuns, list[float], int]:
        """Each requested run's summary entry by run index (its seed, then ``entry(run)``), then SEA-HELM's aggregation
        of the runs' ``per_item`` values (an unscored run: ``[]``; ``rng`` consumed, default a fresh
        ``default_rng(94370244)``): the mean and standard error over runs, each item's mean over the scored runs, and
        how many runs were scored."""
        per_run = {str(r): {"seed": SEEDS[r], **entry(r)} for r in self.run_ids}
        scores = [v["per_item"] for v in per_run.values()]
        rng = rng if rng is not None else np.random.default_rng(AGGREGATION_SEED)
        over = task_over_runs(scores, labels or [[] for _ in scores], rng, single_run_logprobs=self.task.is_logprobs)
        done = [s for s in scores if s]
        return per_run, over, (np.mean(done, axis=0).tolist() if done else []), len(done)

    def summary(
        self, primary: str, entries: Mapping[str, Any], per_run: Mapping[str, Any], over: OverRuns, means: list[float]
    ) -> dict[str, Any]:
        """What every task's summary opens with: the suite, the task, its competency and aggregation group and its
        headline metric; then ``entries``; then the runs requested, each scored run, the aggregation, the item means
        and the mean of the runs' headline metric."""
        task, run_means = self.task, [v["metrics"].get(primary) for v in per_run.values()]
        return {
            "suite": SUITE_NAME,
            "task": task.key,
            "competency": task.competency,
            "aggregation_group": task.aggregation_group,
            "primary_metric": primary,
            **entries,
            "runs_requested": list(self.run_ids),
            "records_per_item": len(self.run_ids),
            "runs": dict(per_run),
            "over_runs": over.to_dict(),
            "item_means": means,
            "run_metric_mean": float(np.mean(run_means)) if run_means else None,
        }

    def signature(self, runs: int, metricx: MetricX | None = None) -> str:
        """A score's provenance line over ``runs`` scored runs of these rows: suite, SEA-HELM commit, task, prompts
        hash, data hash (its files and revision), sampling, runs, thinking option, MetricX model, limit."""
        task, protocol, source = self.task, self.protocol, self.data.source
        data = sha256_text(repr(sorted(source.get("files", {}).items())) + repr(source.get("revision")))
        prompts = sha256_text("\x00".join(task.templates().values()))
        parts = [
            f"seahelm@{SEAHELM_COMMIT}",
            task.key,
            f"prompts:{prompts[:8]}",
            f"data:{data[:8]}",
            f"{'base' if protocol.base else 'instruct'}",
            f"max_tokens:{protocol.max_new_tokens(task)}",
            f"T:{self.sampling.temperature},top_p:{self.sampling.top_p}",
            f"runs:{runs}",
            protocol.thinking.signature(),
        ]
        if task.metric_class == "TranslationMetric":
            parts.append(f"metricx:{metricx.model}" if metricx else "metricx:none,chrF++ ours")
        if len(self.rows) < len(self.data.rows):
            parts.append(f"limit:{len(self.rows)}/{len(self.data.rows)}")
        return "|".join(parts)

    def messages(self, row: Mapping[str, Any]) -> Messages:
        """The conversation SEA-HELM sends for ``row`` (its preamble, template and shots)."""
        return build_messages(self.task, row, self.shots)

    def record(self, model: Model, run: int, row: Mapping[str, Any], conv: Messages, raw: str) -> dict[str, Any]:
        """The stored record of one reply: the raw reply whole, the scored text with the thinking cut, and for a
        ``-logprobs`` task the gold answer's log-probability after the tag."""
        split = split_reply(raw, self.protocol.thinking)
        rec = {
            "run": run,
            "seed": SEEDS[run],
            "id": row["id"],
            "label": row.get("label"),
            "source": row["prompts"][0].get("text"),
            "messages": conv,
            "prompt_sha256": sha256_text(canonical_json(conv)),
            "reply": raw,
            "scored": split.scored,
            "failed": split.failed,
        }
        if self.task.is_logprobs:
            chat = not self.protocol.base and isinstance(model, TokenizingModel)
            prompt = model.render_chat(conv) if chat else base_prompt(model, conv)
            rec["gold_logprob"] = gold_logprob(model, prompt, split.scored, self.task.answer_tag, str(row["label"]))
        return rec


def parsed_record(item: Mapping[str, Any], conv: Messages, **replies: Any) -> dict[str, Any]:
    """The stored record of a parsed row's reply (IF-Eval: ``reply``; MT-Bench: both turns' ``replies``): its run,
    seed and id, the conversation sent and its hash, the raw replies whole."""
    record = {"run": item["run"], "seed": item["seed"], "id": item["row"].id, "messages": conv}
    return {**record, "prompt_sha256": sha256_text(repr(conv)), **replies}


def not_generated(key: str, store: RunStore, wanted: Collection[str], exc: ApiError) -> ApiError:
    """A task's request that brought back no reply (an :class:`ApiError` once the client's retries are spent: an
    HTTP error, a null or malformed body) is never a record, so the task stops before anything is scored: the error
    it stops with, saying how many of its replies (``wanted``: the store keys of every run and row) are not
    generated; the same command generates exactly those. SEA-HELM would feed such a generation to its metrics as
    ``None`` (docs/protocol_notes.md, "Failed generations": a deliberate difference)."""
    have = len(set(wanted) & set(store.completed()))
    return ApiError(
        f"seahelm {key}: {len(wanted) - have} of {len(wanted)} replies not generated ({have} stored), "
        f"so nothing is scored; run the same command again to generate them. The failed request: "
        f"{exc}",
        cause=exc.cause,
    )


def run_repeated(
    model: Model,
    setup: TaskSetup,
    declaration: GenerationTask,
    compute: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    summarize: Callable[[dict[str, dict[str, Any]], RunOutcome], dict[str, Any]],
    *,
    fields: Mapping[str, type],
    outputs: str | Path | None,
    progress: bool,
    limit: int | None,
    templates: Mapping[str, str] | None = None,
    reply_field: str = "reply",
) -> SeahelmTaskRun:
    """Run a SEA-HELM task's items (:meth:`TaskSetup.items`) on the package's one task runner
    (``tasks.runner.run_task``) in SEA-HELM's stored layout: the task's one store (``seahelm/<task>``, keyed by
    ``setup.config``), every record as ``compute`` makes it (a batch holds one run's items: one seed per call),
    resumed per run and per item; a reply that fails stops the task unscored (:func:`not_generated`); then the
    summary: ``summarize`` (the records by key, the run's outcome), what the replies did (:func:`reply_summary`
    over each record's ``reply_field``), the count computed now and the limit."""
    key, thinking = declaration.name, setup.protocol.thinking
    items = setup.items()
    wanted = [it["id"] for it in items]

    def call(chunk: list[dict[str, Any]]) -> list[dict[str, Any]]:
        try:
            return compute(chunk)
        except ApiError as exc:
            raise not_generated(key, current_call().store, wanted, exc) from None  # type: ignore[union-attr]

    def summary(records: list[dict[str, Any]], support: Mapping[str, str], run: RunOutcome) -> dict[str, Any]:
        out = summarize({r["key"]: r for r in records}, run)
        out.update(reply_summary(records, thinking, support, field=reply_field))
        out.update({"n_computed_this_run": run.computed, "limit": limit})
        return out

    layout = RunLayout(
        f"{SUITE_NAME}/{key}",
        setup.config,
        lambda item, record: record,  # the call's records, as SEA-HELM's runs always stored them
        fields,
        summary,
        call=call,
        data_files=setup.data.files,
        templates=setup.task.templates() if templates is None else templates,
        model_identity=stable_model_identity(model),
        tolerate=(),
        batch_key=lambda item: item["run"],
    )
    options = {"batch_size": setup.protocol.batch_size, "outputs": outputs, "progress": progress, "thinking": thinking}
    run = run_task(model, declaration, items=items, layout=layout, **options)
    return SeahelmTaskRun(key, run.summary, run.run_dir, run.computed)


def headline(
    key: str, metric: str, over: OverRuns, n: int, sig: str, item_means: Sequence[float], percent: bool = False
) -> dict[str, Any]:
    """The task's headline score over runs: SEA-HELM's mean and standard error, and our interval over items
    (``percent``: on the item means x 100, for the tasks whose per-item values are 0-1)."""
    kind = "ours: percentile bootstrap over items of the per-item mean over runs"
    return {
        **Score(f"{SUITE_NAME}/{key}/{metric}", over.mean, n, over.stderr, sig).to_dict(),
        "stderr_kind": "SEA-HELM: sd of 30 bootstrap replicates over runs / sqrt(30) (not clustered)",
        "interval": item_interval([v * 100 for v in item_means] if percent else item_means),
        "interval_kind": kind + (" x 100" if percent else " (95%, 1000 resamples, seed 0)"),
    }


def task_setup(
    model: Model,
    key: str,
    *,
    runs: int,
    limit: int | None = None,
    data_dir: str | Path | None = None,
    protocol: Protocol = Protocol(),
    parse: Callable[..., Any] | None = None,
) -> TaskSetup:
    """The :class:`TaskSetup` of SEA-HELM task ``key`` for ``runs`` runs. ``parse``: a task whose rows are parsed
    (IF-Eval, MT-Bench: ``parse(row, path=, row=)``, an error naming the data file and the row) and that takes no
    shots; its config has no ``shots`` entry."""
    if not 1 <= runs <= len(SEEDS):
        raise ValueError(f"runs must be 1-{len(SEEDS)} (SEA-HELM's seeds), got {runs}")
    task = task_config(key)
    data = load_task_data(task, data_dir)
    rows = data.rows if parse is None else [parse(r, path=data.files[0], row=i) for i, r in enumerate(data.rows)]
    # the first k few-shot rows (``fewshot_num_examples``, ``huggingface_dataloader.py:84-92``; null: 0, P7)
    shots = list(data.examples[: task.shots(protocol.base) or 0]) if parse is None else []
    sampling = model_sampling(model, greedy=protocol.greedy)
    config = {"suite": SUITE_NAME, "seahelm_commit": SEAHELM_COMMIT, "task": asdict(task)}
    config["protocol"] = protocol.keyed(task, sampling)
    if parse is None:
        config["shots"] = [str(s.get("id", i)) for i, s in enumerate(shots)]
    config.update({"data": data.source, "record_format": RECORD_FORMAT})
    rows = list(rows if limit is None else rows[: max(0, int(limit))])
    run_ids = list(task.runs(runs, reasoning=protocol.reasoning))
    return TaskSetup(task, data, rows, shots, run_ids, sampling, protocol, config, protocol.max_new_tokens(task))


def item_interval(values: Sequence[float]) -> dict[str, Any] | None:
    """Our interval beside SEA-HELM's standard error: a percentile bootstrap over items of the per-item run means
    (None under two items)."""
    if len(values) < 2:
        return None
    if len(set(values)) < 2:
        v = float(values[0])
        return {"low": v, "high": v, "level": LEVEL, "method": "percentile", "note": "every item has the same value"}
    return mean_interval(
        list(values), name="item means", method="percentile", level=LEVEL, n_resamples=N_RESAMPLES, seed=BOOT_SEED
    ).to_dict()


def reply_summary(
    records: Sequence[Mapping[str, Any]], thinking: ThinkingOption, support: Mapping[str, str], field: str = "reply"
) -> dict[str, Any]:
    """What a SEA-HELM task's summary says about its replies (``tasks/language.py``), over the stored
    records of the requested runs (each record's raw reply under ``field``; a list, as MT-Bench's two turns, counts
    each element as a reply): ``thinking`` (the option and what the model did with its settings), ``replies``
    (counts of thinking, unclosed thinking, failed answers, and the answers-in-Thai rate over every reply of every
    run) and ``replies_by_run`` (the same per run)."""
    flat = [
        {"run": rec.get("run"), field: text}
        for rec in records
        for text in (rec[field] if isinstance(rec.get(field), list) else [rec.get(field)])
    ]
    by_run = reply_stats_by(flat, lambda x: str(x["run"]), field, thinking)
    return {**declared_reply_summary(flat, thinking, support, field), "replies_by_run": by_run}
