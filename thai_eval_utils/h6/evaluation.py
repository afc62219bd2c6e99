"""Thai-H6 runs (Kim et al., arXiv 2410.04795, section 3): evaluate one task with resume, or the six (spec
``thai_h6.md``; protocol of the Open LLM Leaderboard's harness, "LB"). The H6 average of the paper's Table 4 is
in :mod:`.average`.

``evaluate`` builds every document's prompt with its few-shot draws and hands the documents to the declared tasks'
runner (:func:`thai_eval_utils.tasks.runner.run_task`) in Thai-H6's stored run layout (a
:class:`~thai_eval_utils.tasks.runner.RunLayout`: the benchmark, config, records and summary of the runs stored
before the tasks were declared), so an interrupted run resumes without recomputing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from thai_eval_utils.core.errors import ThaiEvalDataError, ThaiEvalError
from thai_eval_utils.core.protocols import LoglikelihoodModel, Model, model_label, prepare_loglikelihood
from thai_eval_utils.core.provenance import Score, canonical_json, sha256_text
from thai_eval_utils.h6 import prompts as P
from thai_eval_utils.h6 import tasks as T
from thai_eval_utils.h6 import variants as V
from thai_eval_utils.h6.data import H6TaskData, load_h6_task
from thai_eval_utils.h6.protocol import LEADERBOARD, H6Protocol
from thai_eval_utils.tasks.language import stats_columns
from thai_eval_utils.tasks.runner import RunLayout, reply_summary, run_task
from thai_eval_utils.tasks.thinking import NOT_SUPPORTED, ThinkingOption

TASKS = T.TASKS
#: What ``evaluate`` reads documents from: a data folder, loaded task data, or a list of docs.
H6Source = str | Path | H6TaskData | Sequence[Mapping[str, Any]]


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
    #: the ``limit`` when it cut the split short (None: every document was scored); a limited run is partial.
    limit: int | None = None
    #: GSM8K: the replies' thinking and answers-in-Thai stats (``tasks.language.reply_stats``)
    replies: dict[str, Any] | None = None

    @property
    def headline(self) -> Score:
        """The task's headline score (the one that enters the Thai-H6 average, for the paper's six tasks)."""
        return self.scores[V.get_spec(self.task).headline]

    @property
    def items_path(self) -> Path | None:
        """The run's ``items.jsonl`` (one JSON record per document), for drill-down."""
        return self.run_dir / "items.jsonl" if self.run_dir else None

    def subject_table(self) -> pd.DataFrame:
        """MMLU per-subject accuracy (x 100) with standard errors and sizes."""
        rows = [
            {"subject": k, "acc": 100 * s.value, "stderr": _x100(s.stderr), "n": s.n}
            for k, s in self.subject_scores.items()
        ]
        return pd.DataFrame(rows, columns=["subject", "acc", "stderr", "n"])

    def __str__(self) -> str:
        return "\n".join(str(s) for s in self.scores.values())


def _x100(v: float | None) -> float | None:
    return None if v is None else 100 * v


@contextmanager
def _bos(model: Model, add_bos_token: bool | None) -> Iterator[None]:
    """Apply ``add_bos_token`` to the model while the run lasts (None: keep its setting), then restore it."""
    current = getattr(model, "add_bos_token", None)
    if add_bos_token is None or current == add_bos_token:
        yield
        return
    try:
        model.add_bos_token = add_bos_token  # type: ignore[attr-defined]
    except AttributeError:
        raise ValueError(
            f"model has add_bos_token={current!r} and it cannot be changed; load it with add_bos_token={add_bos_token}"
        ) from None
    try:
        yield
    finally:
        if current is not None:
            model.add_bos_token = current  # type: ignore[attr-defined]


def _config(
    spec: T.H6Task, model: Model, protocol: H6Protocol, k: int, docs: list[dict], pool: T.Pool, in_memory: bool
) -> dict[str, Any]:
    """The run's config: every option that changes this task's numbers (the run folder hashes it)."""
    sampler, seed = spec.sampler(protocol)
    bos = protocol.add_bos_token if protocol.add_bos_token is not None else getattr(model, "add_bos_token", False)
    config: dict[str, Any] = {
        "task": spec.name,
        "num_fewshot": k,
        "sampler": sampler,
        "fewshot_seed": seed,
        "add_bos_token": bool(bos),
        "acc_norm": "unicode code points",
        **spec.config(protocol),
    }
    if in_memory:  # docs passed in memory: their content identifies the run
        config["docs_sha256"] = sha256_text(canonical_json([docs, pool]))
    return config


def evaluate(
    model: Model,
    task: str,
    data: H6Source,
    protocol: H6Protocol = LEADERBOARD,
    *,
    fewshot_pool: T.Pool = None,
    limit: int | None = None,
    chunk_size: int = 32,
    outputs: str | Path | None = None,
    progress: bool = True,
) -> H6Result:
    """Evaluate ``model`` on one Thai-H6 task under ``protocol`` (default: the leaderboard's, LB).

    Args:
        model: a model; every task but ``th_gsm8k`` (and the variants) needs a :class:`LoglikelihoodModel`.
        task: ``th_arc``, ``th_hellaswag``, ``th_mmlu``, ``th_truthfulqa``, ``th_winogrande`` or ``th_gsm8k``; a
            variant's task (``th_gsm8k.chat``, ``th_arc.generative-mc``, ...: :mod:`.variants`) runs under its own
            name, as does a paper task that one of ``protocol.variants`` applies to.
        data: a data folder for ``data.load_h6_task``, an ``H6TaskData``, or a list of docs (then pass
            ``fewshot_pool``: a list, or subject -> list for MMLU).
        protocol: the options that change numbers (:class:`H6Protocol`; presets ``LEADERBOARD``, ``LM_EVAL``).
        fewshot_pool: overrides the loaded data's few-shot pool.
        limit: evaluate only the first ``limit`` documents (MMLU: of each subject), with the few-shot
            draws they get in a full run.
        chunk_size: documents sent to the model per call; a crash loses at most one chunk.
        outputs: outputs folder of the results store (default ``$THAI_EVAL_OUTPUTS`` or ``outputs``).
        progress: show a tqdm bar over documents.

    Returns:
        The :class:`H6Result`.
    """
    spec = V.spec_for(task, protocol)
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    if spec.uses_loglikelihood and not isinstance(model, LoglikelihoodModel):
        raise ThaiEvalError(
            f"{spec.name} scores answer choices by log-likelihood: {model_label(model)!r} "
            "has none (API models can run th_gsm8k, or the labelled generative-mc variant: "
            "H6Protocol(variants=['generative-mc']))"
        )
    tmpl, docs, pool, files, source, k, shots = _prepare(spec, data, protocol, fewshot_pool)
    selected = spec.select(docs, limit)
    config = _config(spec, model, protocol, k, docs, pool, in_memory=not files)
    call = None if spec.uses_loglikelihood else spec.model_call(model, protocol)  # run_task calls loglikelihood
    # every selected document's requests are built (and so checked) before the run folder exists
    built = _requests(spec, docs, pool, shots, tmpl, selected)
    items = [{"id": f"{i}-{built[i].sha256[:16]}", "doc": i, "requests": built[i].requests} for i in selected]
    limited = limit is not None and len(selected) < len(docs)
    scored: dict[str, Any] = {}

    def summarize(records: list[dict[str, Any]], support: Mapping[str, str], run: Any) -> dict[str, Any]:
        """The summary: the scores (headline first), MMLU's subjects, GSM8K's replies."""
        table = _table(spec, records)
        scores, subjects = spec.scores(table, spec.signature(config, limit=len(table) if limited else None), protocol)
        scored.update(table=table, scores=scores, subject_scores=subjects)
        return {
            "task": spec.name,
            "source": source,
            "n": len(table),
            "n_docs": len(docs),
            "limit": limit,
            "scores": {name: s.to_dict() for name, s in scores.items()},
            "subjects": {name: s.to_dict() for name, s in subjects.items()},
            **(
                reply_summary(records, protocol.thinking, _support(spec, protocol, support), "generation")
                if not spec.uses_loglikelihood
                else {}
            ),
        }

    if spec.uses_loglikelihood:
        prepare_loglikelihood(model)  # a served model's order probe: before the layout takes the model's identity

    def record(item: dict[str, Any], answer: Any) -> dict[str, Any]:
        i = item["doc"]
        return _record(spec, protocol, i, docs[i], shots[i], built[i], answer)

    def call_items(chunk: list[dict[str, Any]]) -> list[Any]:
        """The model's answers to a batch of items (one call: every prompt or chat)."""
        return call(spec.model_inputs([built[it["doc"]] for it in chunk]))  # type: ignore[misc]

    layout = RunLayout(
        f"thai_h6/{spec.name}",
        config,
        record,
        _record_fields(spec),
        summarize,
        call=None if call is None else call_items,  # log-likelihoods: the runner sends the items' requests
        data_files=files,
        templates=tmpl,
        model_identity=getattr(model, "identity", None),
        tolerate=(),
    )
    with _bos(model, protocol.add_bos_token):
        run = run_task(
            model,
            spec,
            items=items,
            layout=layout,
            batch_size=chunk_size,
            outputs=outputs,
            progress=progress,
            thinking=_thinking_option(protocol, spec),
        )
    replies = run.summary.get("replies")
    return H6Result(
        spec.name, config=config, run_dir=run.run_dir, limit=limit if limited else None, replies=replies, **scored
    )


def _thinking_option(protocol: H6Protocol, spec: T.H6Task) -> ThinkingOption:
    """The thinking option a generating run applies to the model (``tasks.thinking.apply_to_model``). GSM8K prompts
    are plain few-shot completions: ``enable_thinking`` has no chat template to go to (a chat variant's has)."""
    option = protocol.thinking
    return option if spec.chat or spec.uses_loglikelihood else replace(option, enable_thinking=None)


def _support(spec: T.H6Task, protocol: H6Protocol, support: Mapping[str, str]) -> dict[str, str]:
    """What the model did with the thinking option, and why a plain GSM8K prompt has no ``enable_thinking``."""
    out = dict(support)
    if not spec.chat and protocol.thinking.enable_thinking is not None:
        out["enable_thinking"] = f"{NOT_SUPPORTED}: GSM8K prompts are plain completions (no chat template)"
    return out


def _prepare(
    spec: T.H6Task, data: H6Source, protocol: H6Protocol, fewshot_pool: T.Pool
) -> tuple[dict[str, str], list[dict], T.Pool, list[Path], str, int, list[list[int]]]:
    """(templates, docs, pool, data files, source label, shots k, every document's few-shot indices) of a task."""
    tmpl = T.templates_for(spec, protocol.templates)
    if isinstance(data, (str, Path)):
        data = load_h6_task(data, spec.data_task)
    if isinstance(data, H6TaskData):
        pool = spec.pool_of(data) if fewshot_pool is None else fewshot_pool
        docs, files, source = list(data.docs), [Path(p) for p in data.files], str(data.source)
    else:
        docs, pool, files, source = [dict(d) for d in data], fewshot_pool, [], "docs"
    k = spec.num_fewshot if protocol.num_fewshot is None else protocol.num_fewshot
    return tmpl, docs, pool, files, source, k, spec.draw(docs, pool, k, protocol)


def _requests(
    spec: T.H6Task, docs: list[dict], pool: T.Pool, shots: list[list[int]], tmpl: dict[str, str], selected: list[int]
) -> dict[int, T.DocRequests]:
    """Each selected document's requests with its few-shot examples (a bad document or example names its row)."""
    out = {}
    for i in selected:
        try:
            out[i] = spec.requests(docs[i], [spec.pool_for(pool, docs[i])[j] for j in shots[i]], tmpl)
        except T.DocError as exc:
            raise ThaiEvalDataError(
                f"{spec.name} doc {i} (or one of its few-shot examples): {exc}", row=i, field=exc.field
            ) from None
    return out


@dataclass(frozen=True)
class DocumentRequests:
    """One document as :func:`evaluate` sends it: its index in the split, the document, its few-shot pool indices
    and its :class:`~thai_eval_utils.h6.tasks.DocRequests` (``sha256`` is the stored ``prompt_sha256``)."""

    index: int
    doc: dict[str, Any]
    shots: list[int]
    requests: T.DocRequests


def document_requests(
    task: str,
    data: H6Source,
    protocol: H6Protocol = LEADERBOARD,
    *,
    fewshot_pool: T.Pool = None,
    limit: int | None = None,
) -> list[DocumentRequests]:
    """Every selected document's requests exactly as :func:`evaluate` builds them (same few-shot draws, templates
    and ``limit`` selection), without a model: for cost estimates (``thai-eval run --dry-run``) and for
    rebuilding what a stored run asked (the lm-eval export's ``arguments``)."""
    spec = V.spec_for(task, protocol)
    tmpl, docs, pool, _, _, _, shots = _prepare(spec, data, protocol, fewshot_pool)
    selected = spec.select(docs, limit)
    built = _requests(spec, docs, pool, shots, tmpl, selected)
    return [DocumentRequests(i, docs[i], list(shots[i]), built[i]) for i in selected]


def _record_fields(spec: T.H6Task) -> dict[str, type | tuple[type, ...]]:
    """The fields (and types) a stored record must have to be reused: the model's output and the metrics."""
    output: dict[str, type | tuple[type, ...]] = (
        {"lls": list, "is_greedy": list} if spec.uses_loglikelihood else {"generation": str}
    )
    return {**output, **{m: (int, float) for m in spec.metrics}}


def _record(
    spec: T.H6Task, protocol: H6Protocol, i: int, doc: dict, shots: list[int], built: T.DocRequests, answer: Any
) -> dict[str, Any]:
    """The stored record of document ``i``: what was asked, the model's output and its metrics."""
    if spec.uses_loglikelihood:
        output: dict[str, Any] = {"lls": [float(ll) for ll, _ in answer], "is_greedy": [bool(g) for _, g in answer]}
    else:
        output = {"generation": answer}
    rec: dict[str, Any] = {"doc": i, "prompt_sha256": built.sha256, "shots": shots, **output}
    if "subject" in doc:
        rec["subject"] = doc["subject"]
    try:
        rec.update(spec.score(doc, output, protocol))
        if "gold" not in rec:
            rec["gold"] = record_gold(spec, doc)
    except T.DocError as exc:
        raise ThaiEvalDataError(f"{spec.name} doc {i}: {exc}", row=i, field=exc.field) from None
    # the scored row as loaded and what was sent, so a record reads on its own; record fields only: the config
    # id, the key and resuming are unchanged, and records stored before them are resolved from the data instead
    rec["doc_row"] = doc
    rec.update(sent_fields(spec, built))
    return rec


#: The record fields that hold what was sent (:func:`sent_fields`); the per-item table leaves them in ``items.jsonl``.
SENT_FIELDS = ("context", "requests", "messages")


def sent_fields(spec: T.H6Task, built: T.DocRequests) -> dict[str, Any]:
    """What the model was given for a document, as its record keeps it (the declared runner's ``context`` /
    ``requests`` / ``messages``, :func:`thai_eval_utils.tasks.runner.sent`): the prompt (few-shot block included);
    a task's own per-choice ``requests`` (Winogrande's partial contexts); a variant's chat ``messages``. With the
    stored ``doc_row`` they rebuild :class:`~thai_eval_utils.h6.tasks.DocRequests` exactly (:func:`stored_requests`,
    checked against ``prompt_sha256``), so views and exports need no data files."""
    out: dict[str, Any] = {"context": built.prompt}
    if spec.uses_loglikelihood and spec.declared.requests is not None:  # type: ignore[union-attr]
        out["requests"] = [list(pair) for pair in built.requests]
    if built.messages:
        out["messages"] = [{"role": role, "content": content} for role, content in built.messages]
    return out


def stored_requests(spec: T.H6Task, record: Mapping[str, Any]) -> T.DocRequests | None:
    """A record's :class:`~thai_eval_utils.h6.tasks.DocRequests` from what it stores (:func:`sent_fields` and its
    ``doc_row``), when its hash is the stored ``prompt_sha256``; None for a record stored before records carried
    what was sent (or one that does not hash as stored)."""
    doc, context = record.get("doc_row"), record.get("context")
    if not isinstance(doc, Mapping) or not isinstance(context, str):
        return None
    if "requests" in record:
        pairs = tuple((str(c), str(x)) for c, x in record["requests"])
    elif spec.uses_loglikelihood:
        pairs = tuple((context, P.TARGET_DELIMITER + c) for c in spec.choices(doc))
    else:
        pairs = ()
    messages = tuple((str(m["role"]), str(m["content"])) for m in record.get("messages") or ())
    built = T.DocRequests(context, pairs, messages=messages)
    return built if built.sha256 == record.get("prompt_sha256") else None


def record_gold(spec: T.H6Task, doc: Mapping[str, Any]) -> int | str:
    """The gold answer a record stores: the correct choice's index (TruthfulQA: MC1's true target, as
    ``mc1_targets.labels`` marks it; generative-mc: in the order asked), GSM8K's reference answer text."""
    if spec.options is not None:
        return spec.options(doc)[1]
    if spec.kind == "generation":
        return str(P.get(doc, "answer"))
    return spec.gold(doc)


def _table(spec: T.H6Task, records: list[dict[str, Any]]) -> pd.DataFrame:
    """Per-item table of the stored records (computed once, when each document finished), metric columns last;
    the stored document row (``doc_row``) and what was sent stay in ``items.jsonl`` (``doc`` indexes the data)."""
    rows = [
        {
            **{k: v for k, v in rec.items() if k not in spec.metrics and k not in ("doc_row", *SENT_FIELDS)},
            **{k: v for k, v in rec.items() if k in spec.metrics},
        }
        for rec in records
    ]
    return pd.DataFrame(rows)


def evaluate_tasks(
    model: Model,
    source: str | Path,
    tasks: Sequence[str] | str = TASKS,
    protocol: H6Protocol = LEADERBOARD,
    *,
    limit: int | None = None,
    limits: Mapping[str, int | None] | None = None,
    chunk_size: int = 32,
    outputs: str | Path | None = None,
    progress: bool = True,
) -> dict[str, H6Result]:
    """:func:`evaluate` each task in ``tasks`` on the data folder ``source`` under ``protocol``, in the paper's order.

    Args:
        tasks: task names (a comma- or space-separated string works too).
        limit: documents per task (None = all); ``limits`` overrides it per task, e.g.
            ``{"th_gsm8k": 1}`` (generation is slow on a CPU); a task's None there means ``limit``.

    Returns:
        task -> :class:`H6Result`, keyed by the task that ran (a variant's own name when ``protocol.variants``
        applies to a task: never a paper task's key).
    """
    if isinstance(tasks, str):  # "th_arc,th_gsm8k" or "th_arc th_gsm8k" (e.g. from a command line)
        tasks = tasks.replace(",", " ").split()
    names = [T.get_task(t).name for t in tasks]
    out = {}
    for name in [t for t in TASKS if t in names]:
        task_limit = (limits or {}).get(name)
        task_limit = limit if task_limit is None else task_limit
        res = evaluate(
            model, name, source, protocol, limit=task_limit, chunk_size=chunk_size, outputs=outputs, progress=progress
        )
        out[res.task] = res
    return out


#: The columns of :func:`scores_frame`.
_SCORE_COLUMNS = "task metric value stderr n headline thai_rate thai_n n_thinking_unclosed signature".split()


def scores_frame(results: Mapping[str, H6Result] | Iterable[H6Result]) -> pd.DataFrame:
    """Every score of every task as a tidy table (task, metric, value and stderr x 100, n, headline, signature);
    GSM8K's rows also show the answers-in-Thai rate (x 100), its n and the replies whose thinking never closed
    (empty for the log-likelihood tasks). A variant's rows name it (``th_gsm8k (chat)``)."""
    rows = []
    for res in results.values() if isinstance(results, Mapping) else results:
        head, replies = V.get_spec(res.task).headline, stats_columns(res.replies)
        replies["thai_rate"] = _x100(replies["thai_rate"])
        rows += [
            {"task": V.label(res.task), "metric": metric, "value": 100 * s.value, "stderr": _x100(s.stderr), "n": s.n}
            | {"headline": metric == head, **replies, "signature": s.signature}
            for metric, s in res.scores.items()
        ]
    return pd.DataFrame(rows, columns=_SCORE_COLUMNS)
