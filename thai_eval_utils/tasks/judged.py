"""A judged metric of a generation task: each reply scored by an LLM judge (:mod:`thai_eval_utils.judging`: a
:class:`~thai_eval_utils.judging.JudgeRubric` with its reply parser, any chat model, the attempts policy), as
inspect_ai's ``model_graded_qa`` scorer.

The judge's rules are the package's: a reply that does not parse is asked for again, at most ``max_calls`` calls
per item (:func:`~thai_eval_utils.judging.judge.judge_one`); a request that fails after the client's retries (a
429, a 5xx, a malformed 200 reply) is never a score: the item stays **unjudged** (no value, its error recorded)
and a rerun asks again. An item none of whose replies parsed is final but has no value either (status: the
parser's fallback status, never the fallback number) unless the metric says what such an item scores
(``unparsed_score``: ThaiCLI's "up to 16 calls, else 0"). Unjudged items are counted (``n_unjudged`` beside the
score), never averaged.

Judging is the package's one judging run (:func:`~thai_eval_utils.judging.judge_items`: prepare, call, finish) in
a part of the task's run folder, ``judgements/<metric>/`` (one record per judgement, appended as each finishes, so a
kill loses only the calls in flight), live or in batch mode (the OpenAI Batch API, or offline files for ``vllm
run-batch``: :func:`judge_batch_mode`). Each judgement is then copied onto the task's own record
(``<metric>`` the score or None, ``<metric>_judgement`` the judge's record with its key) and shared through the
judgement cache (``<outputs>/cache/``, keyed by the texts, judge model, rubric hash and call settings): a rerun, or
another run judging the same texts, asks for nothing again.
The judge's identity is no part of the task's declaration (the generations are the same whoever judges them):
it is in every judged score's signature and in each judgement's key.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from thai_eval_utils.backend.batch_model import batch_settings
from thai_eval_utils.backend.models import load_judge
from thai_eval_utils.backend.openai_client import FATAL_ERRORS, ApiModel, describe_error
from thai_eval_utils.core.protocols import ChatModel
from thai_eval_utils.core.provenance import redact, scrub, slugify
from thai_eval_utils.core.store import RunStore
from thai_eval_utils.judging import Judge, JudgementCache, JudgeParams, JudgeRubric, judge_items
from thai_eval_utils.judging.batch import BatchMode
from thai_eval_utils.judging.run import Judgement, plan
from thai_eval_utils.tasks.metrics import Metric

#: The texts of an item a rubric may take as its fields: the filled prompt, the reply as scored (thinking cut,
#: filters applied) and the reference.
JUDGED_TEXTS = ("question", "prediction", "reference")
#: Fields of a judgement's record in the run's part that are its place in the plan, not the judge's (left off the
#: copy on the task's record).
PLAN_FIELDS = ("key", "id", "repeat", "seed")


def _describe(exc: BaseException) -> str:
    """Why an item stays unjudged, secrets masked."""
    return scrub(describe_error(exc))


class JudgedMetric(Metric):
    """A generation metric whose per-item value is an LLM judge's score.

    Args:
        rubric: the judge's templates (``${question}``, ``${prediction}``, ``${reference}``: :data:`JUDGED_TEXTS`)
            and its reply parser (``JudgeRubric.declare``).
        judge: the judge model: a chat model object; ``"local:<spec>"``, a local model judging in-process
            (``load_model(spec)``: ``local:embedded``, a model folder, a ``.gguf``); or an OpenAI-compatible model id
            called at ``base_url`` (default ``$OPENAI_BASE_URL``; key ``$THAI_EVAL_JUDGE_API_KEY``, else the URL's
            password or ``$OPENAI_API_KEY``). ``run_task(judge=...)`` replaces it (``thai-eval run --judge``).
        base_url: the judge's endpoint when ``judge`` is a model id.
        params: the call settings (default the rubric's); ``max_calls`` replaces their call budget per item.
        scale: what turns a score into the 0-100 tables (a 1-10 judge: 10).
        name: the metric's name (the records' and the summary's key).
        concurrency: requests in flight when ``judge`` is a model id.
        unparsed_score: the value of an item none of whose ``max_calls`` replies parsed: None (default) no value
            (counted as unparsed, never averaged); a number, that value, averaged with the rest (ThaiCLI: "up to
            16 calls, else 0", so ``max_calls=16, unparsed_score=0.0``).
    """

    kind = "mean"
    #: scored after the generations, by :func:`judge_records` (not by ``score_item``)
    judged = True
    #: the texts :meth:`texts` gives the rubric (a subclass that fills other fields names them here)
    given_texts: tuple[str, ...] = JUDGED_TEXTS

    def __init__(
        self,
        rubric: JudgeRubric,
        judge: str | ChatModel,
        *,
        base_url: str | None = None,
        params: JudgeParams | None = None,
        max_calls: int | None = None,
        scale: float = 1.0,
        name: str = "judge",
        concurrency: int = 8,
        unparsed_score: float | None = None,
    ) -> None:
        unknown = sorted(set(rubric.fields) - set(self.given_texts))
        if unknown:
            raise ValueError(f"rubric {rubric.name!r} takes {unknown}; a judged metric gives {list(self.given_texts)}")
        settings = params or rubric.params
        if max_calls is not None:
            settings = JudgeParams(**{**settings.to_dict(), "max_calls": int(max_calls)})
        self.rubric, self.judge, self.base_url, self.params = rubric, judge, base_url, settings
        self.scale, self.name, self.concurrency = float(scale), name, concurrency
        self.unparsed_score = None if unparsed_score is None else float(unparsed_score)
        self._model: ChatModel | None = None if isinstance(judge, str) else judge

    @property
    def label(self) -> str:
        """The judge model's name (its id): in the signature and every judgement's key."""
        return self.judge if isinstance(self.judge, str) else str(self.judge.name)

    def parameters(self) -> dict[str, Any]:
        """The rubric (name, version, hash), the call settings and an ``unparsed_score`` when set; the judge is in
        the signature, not here."""
        unparsed = {} if self.unparsed_score is None else {"unparsed_score": self.unparsed_score}
        return {
            "rubric": self.rubric.name,
            "rubric_version": self.rubric.version,
            "rubric_sha256": self.rubric.sha256,
            "params": self.params.to_dict(),
            **unparsed,
        }

    def signature(self) -> str:
        p = self.params
        unparsed = "" if self.unparsed_score is None else f"|unparsed:{self.unparsed_score}"
        return (
            f"{self.name}|judge:{self.label}|rubric:{self.rubric.name}@{self.rubric.version}@{self.rubric.sha256[:8]}"
            f"|max_calls:{p.max_calls}|temp:{p.temperature}|seed:{p.seed}|max_tokens:{p.max_tokens}{unparsed}"
        )

    def value(self, judgement: Mapping[str, Any]) -> float | None:
        """A judgement's value: the score of a parsed reply; :attr:`unparsed_score` (None unless set) when none of
        its replies parsed; None for any other status (unjudged: never a value)."""
        if judgement.get("status") == "scored":
            return float(judgement["score"])
        return self.unparsed_score if judgement.get("status") == self.rubric.parser.fallback_status else None

    def describe(self, exc: BaseException) -> str:
        """Why an item stays unjudged after ``exc`` (recorded; secrets masked)."""
        return _describe(exc)

    def score_item(self, prediction: str, reference: str) -> float:
        raise NotImplementedError("a judged metric is scored by the judge after the generations (judge_records)")

    def with_judge(self, judge: str | ChatModel | None, base_url: str | None = None) -> JudgedMetric:
        """This metric with another judge (None: unchanged): what ``thai-eval run --judge`` selects."""
        if judge is None:
            return self
        other = copy.copy(self)  # every setting (and a subclass's kind) kept
        other.base_url = base_url if base_url is not None else (self.base_url if judge == self.judge else None)
        other.judge, other._model = judge, None if isinstance(judge, str) else judge
        return other

    def model(self) -> ChatModel:
        """The judge model, made once (``load_judge``): a local model for ``local:<spec>``, else an ``ApiModel`` for
        a model id."""
        if self._model is None:
            self._model = load_judge(str(self.judge), base_url=self.base_url, concurrency=self.concurrency)
        return self._model

    def as_judge(self) -> Judge:
        """The package's :class:`~thai_eval_utils.judging.Judge`: this rubric, model and settings; a refused key,
        access or model ends the run (``FATAL_ERRORS``)."""
        return Judge(self.rubric, self.model(), self.params, fatal=FATAL_ERRORS, describe=self.describe)

    def texts(self, record: Mapping[str, Any], prediction: str) -> dict[str, str]:
        """The texts the rubric is filled with for one record."""
        return {"question": str(record.get("question", "")), "prediction": prediction, "reference": record["reference"]}


def judged_metrics(metrics: Sequence[Metric]) -> list[JudgedMetric]:
    """The judged ones of a task's metrics."""
    return [m for m in metrics if getattr(m, "judged", False)]


def judge_batch(
    judge: ChatModel,
    *,
    submit: bool = True,
    file_out: str | Path | None = None,
    file_in: str | Path | None = None,
    wait_s: float = 0.0,
    poll_s: float = 10.0,
    progress: bool = True,
) -> BatchMode:
    """The batch mode of a judging run: submit to the judge's endpoint (an ``ApiModel``: the OpenAI Batch API, waiting
    at most ``wait_s`` seconds, polling every ``poll_s``), or write the requests still needed to ``file_out`` (no
    network), after reading the replies of ``file_in`` (a batch output file: ``vllm run-batch``'s). Submission needs
    an API judge (ValueError otherwise); offline files take any judge."""
    return batch_settings(
        judge, submit=submit, file_out=file_out, file_in=file_in, wait_s=wait_s, poll_s=poll_s, progress=progress
    )


def judge_batch_mode(
    judge: ChatModel,
    *,
    submit: bool = False,
    file_out: str | Path | None = None,
    file_in: str | Path | None = None,
    wait_s: float = 0.0,
    poll_s: float = 10.0,
    progress: bool = True,
) -> BatchMode | None:
    """A judging run's batch mode from the run options' ``batch`` (``thai-eval run --batch``, ``--batch-file-out/-in``):
    None when no option asks for batches, or (said so) when submission is asked of a judge that is not an API model
    (a local judge: it judges live); else :func:`judge_batch`."""
    if not (submit or file_out or file_in):
        return None
    if submit and file_out is None and not isinstance(judge, ApiModel):
        print(f"judge {judge.name}: not an API model, so it judges live (batch submission is for API judges)")
        return None
    return judge_batch(
        judge, submit=submit, file_out=file_out, file_in=file_in, wait_s=wait_s, poll_s=poll_s, progress=progress
    )


def _held(record: Mapping[str, Any], field: str, key: str, statuses: tuple[str, ...]) -> dict[str, Any] | None:
    """The final judgement under ``key`` that a task record already holds, else None."""
    mine = record.get(field) or {}
    return dict(mine) if mine.get("judgement_key") == key and mine.get("status") in statuses else None


def _keep_held(
    part: RunStore,
    judgements: Sequence[Judgement],
    held: Sequence[dict[str, Any] | None],
    ids: Sequence[str],
    seed: int,
) -> None:
    """Store in the run's part the final judgements the task's records hold and the part lacks (records judged
    before judgements had a part of their own): they are read back, never asked for again."""
    stored = part.completed()
    missing = [
        (j.store_key, {"id": ids[j.row], **h, "repeat": j.repeat, "seed": seed})
        for j, h in zip(judgements, held, strict=True)
        if h is not None and j.store_key not in stored
    ]
    part.append_many(missing)


def judge_records(
    store: RunStore,
    records: list[dict[str, Any]],
    metric: JudgedMetric,
    predictions: Sequence[str],
    *,
    batch: BatchMode | None = None,
    progress: bool = False,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Judge every record ``metric`` has no final judgement of (under today's key): the package's judging run
    (:func:`~thai_eval_utils.judging.judge_items`, live or ``batch``) in the run's part ``judgements/<metric>``;
    then copy each judgement onto its record, store the records, and say what was done: the records and
    ``{"judge", "n_judged", "n_unjudged", "n_unparsed", "n_from_cache", "judge_calls_this_run",
    "token_usage_this_run"}`` (and ``"batch"``: what batch mode did). A fatal judge error (a refused key, access or
    model) is raised after the records judged so far are stored."""
    judge = metric.as_judge()
    statuses = judge.rubric.parser.final_statuses
    cache = JudgementCache(store.shared_file(f"task_judgements_{slugify(judge.rubric.name)}.jsonl"), statuses=statuses)
    texts = [metric.texts(r, p) for r, p in zip(records, predictions, strict=True)]
    ids = [str(r["id"]) for r in records]
    field = f"{metric.name}_judgement"
    part = store.part("judgements", metric.name)
    judgements = plan(judge, texts, ids)  # judge_items' plan: one judgement per record
    held = [_held(r, field, j.key, statuses) for r, j in zip(records, judgements)]
    _keep_held(part, judgements, held, ids, judge.settings.seed)
    from_cache = sum(h is None and j.key in cache for h, j in zip(held, judgements))
    prefix = f"{store.config_id}#{slugify(metric.name)}/"  # this run's requests in a batch file shared with others
    done = judge_items(judge, texts, part, cache, ids=ids, progress=progress, batch=batch, batch_prefix=prefix)
    out, changed = [], []
    for rec, j in zip(records, done.plan, strict=True):
        judgement = done.record(j)
        entry = {k: v for k, v in judgement.items() if k not in PLAN_FIELDS}
        entry.update(judge_model=judge.label, judgement_key=j.key)
        new = {**rec, metric.name: metric.value(judgement), field: entry}
        if new != rec:
            changed.append((str(rec["id"]), new))
        out.append(new)
    store.append_many(changed)
    store.compact(list(store.completed()))  # every stored item (a limited run's are some of them), superseded lines out
    if done.fatal is not None:
        raise done.fatal
    stats = [r[field].get("status") for r in out]
    return out, {
        "judge": judge.label,
        "n_judged": stats.count("scored"),
        "n_unjudged": sum(s not in statuses for s in stats),
        "n_unparsed": sum(s in statuses and s != "scored" for s in stats),
        "n_from_cache": from_cache,
        "judge_calls_this_run": done.usage["requests"],
        "token_usage_this_run": {"prompt": done.usage["prompt_tokens"], "completion": done.usage["completion_tokens"]},
        **({"batch": redact(done.batch)} if done.batch is not None else {}),
    }
