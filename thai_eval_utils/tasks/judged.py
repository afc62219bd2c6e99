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

Judgements are stored on the task's own records (``<metric>`` the score or None, ``<metric>_judgement`` the
judge's record with its key) and in the shared judgement cache (``<outputs>/cache/``, keyed by the texts, judge
model, rubric hash and call settings): a rerun, or another run judging the same texts, asks for nothing again.
The judge's identity is no part of the task's declaration (the generations are the same whoever judges them):
it is in every judged score's signature and in each judgement's key.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping, Sequence
from typing import Any

from thai_eval_utils.backend.models import load_judge
from thai_eval_utils.backend.openai_client import FATAL_ERRORS, describe_error
from thai_eval_utils.core.async_bridge import run_sync
from thai_eval_utils.core.errors import JudgeError
from thai_eval_utils.core.protocols import ChatModel
from thai_eval_utils.core.provenance import scrub, slugify
from thai_eval_utils.core.store import RunStore
from thai_eval_utils.judging import Judge, JudgementCache, JudgeParams, JudgeRubric, judge_one, open_session
from thai_eval_utils.judging.judge import new_usage
from thai_eval_utils.tasks.metrics import Metric

#: The texts of an item a rubric may take as its fields: the filled prompt, the reply as scored (thinking cut,
#: filters applied) and the reference.
JUDGED_TEXTS = ("question", "prediction", "reference")
#: The status of an item whose judge requests kept failing (not final: a rerun asks again).
UNJUDGED = "unjudged"


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


def _ask(judge: Judge, texts: Sequence[Mapping[str, str]], usage: dict[str, int]) -> list[dict[str, Any]]:
    """One judgement per text, together (an API judge's semaphore bounds the requests in flight): the judge's
    record, or an unjudged one with the reason when a request failed after the client's retries."""
    rubric, settings = judge.rubric, judge.settings

    async def main() -> list[dict[str, Any]]:
        async with open_session(judge.model, batch_size=judge.batch_size) as session:

            async def one(item: Mapping[str, str]) -> dict[str, Any]:
                try:
                    return await judge_one(session, rubric.messages(item), settings, rubric.parser, usage)
                except judge.fatal as exc:
                    raise JudgeError(f"judge {judge.label}: {judge.describe(exc)}") from None
                except Exception as exc:  # noqa: BLE001 - a failed request leaves the item unjudged, never scored
                    return {"status": UNJUDGED, "score": None, "error": judge.describe(exc)}

            return list(await asyncio.gather(*(one(t) for t in texts)))

    return run_sync(main)


def judge_records(
    store: RunStore,
    records: list[dict[str, Any]],
    metric: JudgedMetric,
    predictions: Sequence[str],
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Judge every record ``metric`` has no final judgement of (under today's key), store the records with their
    judgements, and say what was done: the records and ``{"judge", "signature", "n_judged", "n_unjudged",
    "n_unparsed", "n_from_cache", "judge_calls_this_run", "token_usage_this_run"}``."""
    judge = metric.as_judge()
    statuses = judge.rubric.parser.final_statuses
    cache = JudgementCache(store.shared_file(f"task_judgements_{slugify(judge.rubric.name)}.jsonl"), statuses=statuses)
    texts = [metric.texts(r, p) for r, p in zip(records, predictions, strict=True)]
    keys = [judge.key(t) for t in texts]
    field = f"{metric.name}_judgement"

    def held(i: int) -> dict[str, Any] | None:
        mine = records[i].get(field) or {}
        if mine.get("judgement_key") == keys[i] and mine.get("status") in statuses:
            return mine
        return cache.get(keys[i])

    todo = [i for i in range(len(records)) if held(i) is None]
    usage = new_usage()
    asked = dict(zip(todo, _ask(judge, [texts[i] for i in todo], usage))) if todo else {}
    cache.append_many([{**j, "key": keys[i]} for i, j in asked.items() if j.get("status") in statuses])
    out, changed, from_cache = [], [], 0
    for i, rec in enumerate(records):
        judgement = asked.get(i) or held(i) or {}
        from_cache += i not in asked and rec.get(field, {}).get("judgement_key") != keys[i]
        entry = {
            **{k: v for k, v in judgement.items() if k != "key"},
            "judge_model": judge.label,
            "judgement_key": keys[i],
        }
        new = {**rec, metric.name: metric.value(judgement), field: entry}
        if new != rec:
            changed.append((str(rec["id"]), new))
        out.append(new)
    store.append_many(changed)
    store.compact([str(r["id"]) for r in out])
    stats = [r[field].get("status") for r in out]
    return out, {
        "judge": judge.label,
        "n_judged": stats.count("scored"),
        "n_unjudged": sum(s not in statuses for s in stats),
        "n_unparsed": sum(s in statuses and s != "scored" for s in stats),
        "n_from_cache": from_cache,
        "judge_calls_this_run": usage["requests"],
        "token_usage_this_run": {"prompt": usage["prompt_tokens"], "completion": usage["completion_tokens"]},
    }
