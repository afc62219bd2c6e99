"""MT-Bench Thai as the Thai LLM Leaderboard's runner runs it (spec thai_llm_leaderboard.md 4;
scbdatax/seacrowd-eval @9de9392 ``evaluation/main_llm_judge_batch.py``), through the package's one judge.

1. Answers (:func:`generate_answers`, ``:70-151, 263-267``): round 1 answers every question's first turn; round 2
   answers the second turn after the model's own first answer (``[user, assistant, user]``). Local models sample as
   the NLG tasks (T = 0.2, 512 new tokens: :mod:`.generation`); the dataset's ``generation_kwargs`` are ignored, as
   the runner ignores them (faithful). ``temperatures="fastchat"`` uses each question's own ``generation_kwargs``
   temperature, else FastChat's per-category table (``fastchat/llm_judge/common.py:40-50``), greedy below 1e-4.
2. Judgements (:func:`judge_answers`, ``:153-228``): one per (question, turn) with FastChat's single-answer
   templates (:mod:`thai_eval_utils.judging.mt_bench`): ``single-v1`` for turn 1, ``single-v1-multi-turn`` for
   turn 2, the ``single-math-v1`` forms when the row has a ``reference`` (whatever its category; FastChat chooses by
   category). Judge ``gpt-4o-2024-05-13``, temperature 0, 2048 tokens, one call; any chat model may judge.
3. Rating (``:20-23, 196-208``): ``[[n]]``, else the backup ``[n]`` anywhere, unclamped; no match -> -1
   (``judging.mt_bench.MT_BENCH_PARSER``). The runner's ``ast.literal_eval`` crashes on ``[[07]]`` or Thai digits;
   we read them as numbers.
4. Aggregation (``:230-261``): per category the mean over both turns with -1 included (``"faithful"``, the
   published numbers'); ``"fastchat"`` drops -1 (``fastchat/llm_judge/show_result.py:20``). A judgement whose
   request failed (the runner's ``"$ERROR$"``, rated -1 there) stays unjudged here, is counted and left out.

The rendered judge messages are judged through one pass-through rubric (fields ``system`` and ``user``), so the
four templates share one run store, cache, resume and repeats; the filled texts key each judgement and the four
templates' hashes key the run.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from thai_eval_utils.backend.models import load_judge, load_model
from thai_eval_utils.backend.openai_client import stable_model_identity
from thai_eval_utils.core.errors import JudgeError, ThaiEvalDataError
from thai_eval_utils.core.protocols import ChatModel
from thai_eval_utils.core.provenance import Score, canonical_json, redact, sha256_text
from thai_eval_utils.core.records import read_records, require_text
from thai_eval_utils.core.runloop import RunOutcome
from thai_eval_utils.core.store import RunStore
from thai_eval_utils.judging import Judge, JudgementCache, JudgeParams, JudgeRubric, judge_items
from thai_eval_utils.judging.batch import BatchMode
from thai_eval_utils.judging.run import ROW_FIELDS, JudgeOutcome, default_record
from thai_eval_utils.judging.mt_bench import MT_BENCH_PARSER, MT_BENCH_RUBRICS, NO_RATING, template_name
from thai_eval_utils.tasks.declared import GenerationTask
from thai_eval_utils.tasks.metrics import Metric
from thai_eval_utils.tasks.runner import RunLayout, run_task
from thai_eval_utils.tasks.thinking import ThinkingOption, split_reply
from thai_eval_utils.thai_llm_leaderboard.generation import SUITE_NAME, GenerationOptions, generate_replies
from thai_eval_utils.thai_llm_leaderboard.nlg_metrics import item_interval

#: main_llm_judge_batch.py:48: the runner's judge (an OpenAI model id: ``load_model("openai:" + this)``).
DEFAULT_JUDGE = "gpt-4o-2024-05-13"
#: main_llm_judge_batch.py:182-185: temperature 0, max_tokens 2048, n=1, no seed; one call (16 tries on transport
#: errors are the client's retries here, never a second judgement).
JUDGE_PARAMS = JudgeParams(max_tokens=2048, temperature=0.0, seed=None, max_calls=1)
#: FastChat common.py:40-50 ``temperature_config`` (categories in lower case; any other category: 0.7).
FASTCHAT_TEMPERATURES = {
    **dict.fromkeys(("writing", "roleplay"), 0.7),
    **dict.fromkeys(("extraction", "math", "coding", "reasoning", "arena-hard-200"), 0.0),
    **dict.fromkeys(("stem", "humanities"), 0.1),
}
FASTCHAT_DEFAULT_TEMPERATURE = 0.7
#: Aggregations of the ratings: the runner's (-1 averaged in) and FastChat's (-1 dropped).
AGGREGATIONS = ("faithful", "fastchat")
ANSWERS_BENCHMARK = f"{SUITE_NAME}/mt_bench_thai_answers"
JUDGE_BENCHMARK = f"{SUITE_NAME}/mt_bench_thai"
CACHE_NAME = "mt_bench_thai_judgements.jsonl"
#: The rendered messages judged as they are (the FastChat template chosen and filled before): one rubric for all four.
PASS_THROUGH = JudgeRubric.declare(
    "thai_llm_leaderboard_mt_bench",
    "fastchat-single-rendered",
    system="${system}",
    user="${user}",
    fields=("system", "user"),
    parser=MT_BENCH_PARSER,
    params=JUDGE_PARAMS,
)
#: The summary's note on its overall number.
OVERALL_NOTE = (
    "overall = unweighted mean of the category means (the runner computes none; the Space's reading is unverified)"
)
#: Fields of an item stored with its judgement (never in the shared cache: they are the item's, not the judge's).
_ITEM_FIELDS = ("question_id", "turn", "category", "template")
_ROW_FIELDS = (*ROW_FIELDS, *_ITEM_FIELDS)
#: The offline judge's reply budget (the embedded model; the runner's 2048 is for gpt-4o).
OFFLINE_JUDGE_MAX_TOKENS = 256


def judge_params_for(judge_model: str | None, max_tokens: int | None = None) -> JudgeParams:
    """The runner's judge settings (:data:`JUDGE_PARAMS`) with the reply budget asked, else the runner's 2048 for a
    real judge and :data:`OFFLINE_JUDGE_MAX_TOKENS` for the offline embedded one (``judge_model`` None).

    Example:
        >>> judge_params_for(None).max_tokens, judge_params_for("gpt-4o-2024-05-13").max_tokens
        (256, 2048)
    """
    budget = max_tokens or (OFFLINE_JUDGE_MAX_TOKENS if judge_model is None else JUDGE_PARAMS.max_tokens)
    return replace(JUDGE_PARAMS, max_tokens=budget)


def open_judge(judge_model: str | None = None, *, base_url: str | None = None) -> ChatModel:
    """The MT-Bench judge: None the embedded model in-process (offline demo); ``"local:<spec>"`` any local model
    ``load_model`` reads; else an OpenAI-compatible model id (``openai:`` optional; the runner's is
    :data:`DEFAULT_JUDGE`) at ``base_url`` (default the OpenAI API), its key from ``$THAI_EVAL_JUDGE_API_KEY`` if
    set, else the client's default (``$OPENAI_API_KEY``). Loaded with its own defaults, not the evaluated model's."""
    if judge_model is None:
        return load_model("embedded")
    return load_judge(judge_model.removeprefix("openai:"), base_url=base_url)


@dataclass(frozen=True)
class Question:
    """One MT-Bench Thai row (spec 1.4): two Thai turns, an optional two-string reference, its category."""

    question_id: int
    turns: tuple[str, str]
    reference: tuple[str, str] | None
    category: str
    generation_kwargs: Mapping[str, Any]


def load_questions(path: str | Path) -> list[Question]:
    """The questions of a local MT-Bench Thai file (a JSON array, as ``mt_bench_thai_full.json``; also JSONL),
    validated whole: ``question_id`` an int, unique; ``turns`` two non-empty texts; ``reference`` null or two
    texts; ``category`` a non-empty text; ``generation_kwargs`` an object or absent."""
    path = Path(path)
    rows = read_records(path, {"question_id": int, "turns": list, "category": str})
    out, seen = [], {}
    for i, row in enumerate(rows):
        bad = functools.partial(ThaiEvalDataError, path=path, row=i)  # an error naming this row
        qid, turns, ref = row["question_id"], row["turns"], row.get("reference")
        if isinstance(qid, bool):
            raise bad(f"question_id must be an integer, got {qid!r}", field="question_id")
        if qid in seen:
            raise bad(f"question_id {qid} also on row {seen[qid]}", field="question_id")
        seen[qid] = i
        if len(turns) != 2:
            raise bad(f"expected 2 turns, got {len(turns)}", field="turns")
        for t in turns:
            require_text(t, path=path, row=i, field="turns")
        if ref is not None and (not isinstance(ref, list) or len(ref) != 2):
            why = "reference must be null or a list of 2 texts (the runner reads reference[1] for turn 2)"
            raise bad(why, field="reference")
        for t in ref or ():
            require_text(t, path=path, row=i, field="reference", allow_empty=True)
        require_text(row["category"], path=path, row=i, field="category")
        kwargs = row.get("generation_kwargs") or {}
        if not isinstance(kwargs, dict):
            raise bad(f"generation_kwargs must be an object, got {kwargs!r:.40}", field="generation_kwargs")
        out.append(
            Question(qid, (turns[0], turns[1]), None if ref is None else (ref[0], ref[1]), row["category"], kwargs)
        )
    return out


def temperature_of(question: Question, mode: str, options: GenerationOptions) -> float:
    """A question's sampling temperature: ``"runner"`` the runner's one temperature for all (``options``);
    ``"fastchat"`` the question's ``generation_kwargs["temperature"]``, else FastChat's table by category (lower
    case), else 0.7; below 1e-4 greedy (FastChat gen_model_answer.py)."""
    if mode == "runner":
        return options.sampling_temperature
    if mode != "fastchat":
        raise ValueError(f"temperatures must be 'runner' or 'fastchat', got {mode!r}")
    t = question.generation_kwargs.get("temperature")
    if not isinstance(t, (int, float)) or isinstance(t, bool):
        t = FASTCHAT_TEMPERATURES.get(question.category.lower(), FASTCHAT_DEFAULT_TEMPERATURE)
    return 0.0 if t < 1e-4 else float(t)


# ------------------------------------------------------------------------------------------------ answers
class JudgeRating(Metric):
    """The answers' metric: each (question, turn) rated 1-10 by the judge through FastChat's four templates, in a
    run of its own (:func:`judge_answers`, keyed by the answers' run), never by the answers' run."""

    name, scale = "avg_rating", 10.0

    def parameters(self) -> dict[str, Any]:
        return {"templates": {n: r.sha256 for n, r in MT_BENCH_RUBRICS.items()}, "judge": DEFAULT_JUDGE}


def answers_task(options: GenerationOptions, temperatures: str) -> GenerationTask:
    """The answers as a declared chat: round 1 the question's first turn alone, round 2 its second turn after the
    model's own first answer (:func:`_item`); the decoding of ``options`` (``temperatures="fastchat"``: each
    question's own temperature), judged by :class:`JudgeRating`."""
    return GenerationTask(
        name="mt_bench_thai_answers",
        data="",  # the items come from load_questions (items=)
        prompt=[{"role": "user", "content": "{turn_1}"}],
        reference="reference",
        metrics=(JudgeRating(),),
        max_new_tokens=options.max_new_tokens,
        temperature=options.sampling_temperature,
        seed=options.seed,
        title="MT-Bench Thai answers (two turns, judged 1-10)",
        version="seacrowd-eval-9de9392",
        extra={"temperatures": temperatures, "turns": 2},
    )


def _answer_key(qid: int, turn: int) -> str:
    """The store key of a question's turn (its answer and its judgement): ``<question_id>:<turn>``."""
    return f"{qid}:{turn}"


def _item(q: Question, turn: int, first: str | None = None) -> dict[str, Any]:
    """The item of a question's turn: its conversation as main_llm_judge_batch.py:70-83 ``_get_conversations``
    builds it (turn 2: after the model's ``first`` answer)."""
    messages = [{"role": "user", "content": q.turns[0]}]
    if turn == 2:
        messages += [{"role": "assistant", "content": first or ""}, {"role": "user", "content": q.turns[1]}]
    return {"id": _answer_key(q.question_id, turn), "question": q, "turn": turn, "messages": messages}


def _answer_call(model: ChatModel, options: GenerationOptions, temperatures: str):
    """The answers' model call: the chunk's items grouped by sampling temperature, one ``generate_replies`` each."""

    def call(chunk: list[dict[str, Any]]) -> list[dict[str, Any]]:
        temps = [temperature_of(it["question"], temperatures, options) for it in chunk]
        replies: list[tuple[str, bool]] = [("", False)] * len(chunk)
        for temp in dict.fromkeys(temps):
            idx = [i for i, t in enumerate(temps) if t == temp]
            opts = replace(options, greedy=temp == 0.0, temperature=temp if temp > 0 else options.temperature)
            for i, reply in zip(idx, generate_replies(model, [chunk[i]["messages"] for i in idx], opts), strict=True):
                replies[i] = reply
        return [
            {
                "id": it["id"],
                "question_id": it["question"].question_id,
                "turn": it["turn"],
                "messages": it["messages"],  # the chat as sent (round 2: with round 1's reply)
                "output": text,
                "temperature": temp,
                "truncated": cut,
            }
            for it, temp, (text, cut) in zip(chunk, temps, replies, strict=True)
        ]

    return call


@dataclass
class Answers:
    """Both rounds' raw answers: ``(question_id, turn) -> record`` (``output`` raw, as generated), the questions,
    the run's config id and identity."""

    questions: list[Question]
    records: dict[tuple[int, int], dict[str, Any]]
    config_id: str
    model_identity: dict[str, Any]
    thinking: ThinkingOption

    def scored(self, qid: int, turn: int) -> str | None:
        """The answer the judge sees: the reply after the thinking rule (None: not generated)."""
        rec = self.records.get((qid, turn))
        return None if rec is None else split_reply(rec["output"], self.thinking).scored


def generate_answers(
    model: ChatModel,
    questions: Sequence[Question],
    *,
    options: GenerationOptions = GenerationOptions(),
    temperatures: str = "runner",
    thinking: ThinkingOption = ThinkingOption(),
    outputs: str | Path | None = None,
    data_files: Sequence[str | Path] = (),
    batch_size: int | None = None,
    progress: bool = True,
) -> Answers:
    """Both rounds of answers, resumable, on the one task runner (``tasks.runner.run_task``, the answers' stored
    layout): round 1 every question's first turn, then round 2 (``RunLayout.rounds``) the second turn of each
    question whose first answer is stored, after that answer with its thinking cut. A call that fails after the
    client's retries (an ``ApiError``) leaves its items unanswered; a rerun answers them."""
    config = {
        "generation": options.record(),
        "temperatures": temperatures,
        "thinking": thinking.record(),
        "questions_sha256": sha256_text(canonical_json([q.question_id for q in questions])),
    }
    identity = stable_model_identity(model)
    stored: dict[tuple[int, int], dict[str, Any]] = {}

    def second(done: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Round 2: the questions whose first answer is stored."""
        keys = [(q, _answer_key(q.question_id, 1)) for q in questions]
        return [_item(q, 2, split_reply(done[k]["output"], thinking).scored) for q, k in keys if k in done]

    def summarize(records: list[dict[str, Any]], support: Any, run: RunOutcome) -> dict[str, Any]:
        """The summary these runs always had (the answers the store holds, read back as the judge will see them)."""
        store = run.store
        assert store is not None  # run_task's outcome names the store it ran on
        stored.update({(r["question_id"], r["turn"]): r for r in store.completed().values()})
        counts = {"n_questions": len(questions), "n_answers": len(stored)}
        return {**counts, "generation": options.record(), "temperatures": temperatures}

    layout = RunLayout(
        ANSWERS_BENCHMARK,
        config,
        lambda item, record: record,  # the call's records: the raw reply stored whole
        {"output": str},
        summarize,
        call=_answer_call(model, options, temperatures),
        data_files=data_files,
        model_identity=identity,
        thinking_settings=False,  # the reply as the model gave it, as these runs always stored it
        judged=False,  # judge_answers judges the answers in a run of its own
        rounds=(second,),
    )
    task, items = answers_task(options, temperatures), [_item(q, 1) for q in questions]
    run = run_task(model, task, items=items, layout=layout, batch_size=batch_size, outputs=outputs, progress=progress)
    return Answers(list(questions), stored, run.config_id, identity, thinking)


# ------------------------------------------------------------------------------------------------ judging
def judge_messages(
    q: Question, turn: int, answer_1: str, answer_2: str | None = None
) -> tuple[str, list[dict[str, str]]]:
    """The FastChat template the runner picks (by the row's reference, not its category) and its two messages
    (main_llm_judge_batch.py:153-190)."""
    name = template_name(math=q.reference is not None, multi_turn=turn == 2)
    fields: dict[str, str]
    if turn == 1:
        fields = {"question": q.turns[0], "answer": answer_1}
    else:
        fields = {"question_1": q.turns[0], "question_2": q.turns[1], "answer_1": answer_1, "answer_2": answer_2 or ""}
    if q.reference is not None:  # the reference answers up to this turn
        fields |= dict(zip(("ref_answer_1", "ref_answer_2"), q.reference[:turn]))
    return name, MT_BENCH_RUBRICS[name].messages(fields)


def _judge_items(answers: Answers) -> tuple[list[dict[str, Any]], dict[int, str]]:
    """One item per (question, turn), in the runner's order (question order, turn 1 then 2), and the skipped ones."""
    items, skip = [], {}
    for q in answers.questions:
        a1, a2 = answers.scored(q.question_id, 1), answers.scored(q.question_id, 2)
        for turn in (1, 2):
            name, (system, user) = judge_messages(q, turn, a1 or "", a2)
            if a1 is None or (turn == 2 and a2 is None):
                skip[len(items)] = f"no answer: turn {turn} of question {q.question_id} was not generated"
                system, user = {"content": ""}, {"content": ""}
            ids = {"id": _answer_key(q.question_id, turn), "question_id": q.question_id, "turn": turn}
            texts = {"system": system["content"], "user": user["content"]}
            items.append({**ids, "category": q.category, "template": name, **texts})
    return items, skip


def rating_of(record: Mapping[str, Any] | None) -> float | None:
    """A stored judgement's rating: the parsed number, -1 for a reply without one, None when unjudged."""
    if record is None or record.get("status") not in MT_BENCH_PARSER.final_statuses:
        return None
    return float(record["score"])


def category_ratings(
    items: Sequence[Mapping[str, Any]], ratings: Sequence[float | None], aggregation: str
) -> dict[str, list[float]]:
    """Per category (first-seen order, as the runner's dict fills), the ratings that count: both turns pooled; -1
    kept (``"faithful"``) or dropped (``"fastchat"``); unjudged (None) never."""
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    out: dict[str, list[float]] = {}
    for it, r in zip(items, ratings, strict=True):
        values = out.setdefault(it["category"], [])
        if r is not None and not (aggregation == "fastchat" and r == NO_RATING):
            values.append(r)
    return out


def avg_rating(per_category: Mapping[str, Sequence[float]]) -> dict[str, float | None]:
    """``sum / len`` per category (main_llm_judge_batch.py:255-260); None where no rating counts."""
    return {c: (sum(v) / len(v) if v else None) for c, v in per_category.items()}


@dataclass
class MtBenchRun:
    """A judged MT-Bench Thai run: one record per (question, turn), the summary (``metrics_llm`` as the runner writes
    it, scores per category with n, interval and signature, both aggregations), where it is stored."""

    records: list[dict[str, Any]]
    summary: dict[str, Any]
    run_dir: Path
    config_id: str

    @property
    def avg_rating(self) -> dict[str, float | None]:
        return dict(self.summary["metrics_llm"]["avg_rating"])


def _category_scores(per_category: Mapping[str, Sequence[float]], signature: str) -> dict[str, dict[str, Any]]:
    """Per category: its mean rating's Score (value None without ratings) and percentile bootstrap interval."""
    return {
        cat: {
            **Score.mean(f"mt_bench_thai/{cat}", values, signature).to_dict(),
            **({} if values else {"value": None}),
            "interval": item_interval(np.asarray(values, dtype=float), cat),
        }
        for cat, values in per_category.items()
    }


def judge_answers(
    answers: Answers,
    judge_model: ChatModel,
    *,
    model_name: str,
    params: JudgeParams = JUDGE_PARAMS,
    aggregation: str = "faithful",
    repeats: int = 1,
    outputs: str | Path | None = None,
    batch_size: int | None = None,
    progress: bool = True,
    batch: BatchMode | None = None,
) -> MtBenchRun:
    """Judge every (question, turn) through ``judging.judge_items`` (store, shared cache, resume, repeats) and
    aggregate per category (``aggregation``: the headline; the other is in the summary beside it).
    ``batch_size``: judgements per ``chat`` call of an in-process judge (``judging.Judge``; a failed call leaves all
    of its judgements unjudged). ``batch``: judge through batches (``tasks.judged.judge_batch_mode``; the OpenAI
    Batch API or offline files): a judgement still waiting is unjudged (never a rating, counted) and
    ``summary["batch"]`` says what batch mode did; the same call later collects it.

    Raises:
        JudgeError: a fatal judge error (after the finished judgements and the summary are written).
    """
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    items, skip = _judge_items(answers)
    judge = Judge(PASS_THROUGH, judge_model, params=params, batch_size=batch_size)
    tmpl = {name: r.text for name, r in MT_BENCH_RUBRICS.items()}
    config = {"judge_model": judge.label, "judge_params": params.to_dict(), "answers_run": answers.config_id}
    config |= {"repeats": repeats, "rubric": PASS_THROUGH.sha256}
    with RunStore.open(
        model_name,
        JUDGE_BENCHMARK,
        config,
        model_identity=answers.model_identity,
        prompt_templates=tmpl,
        outputs=outputs,
    ) as store:
        cache = JudgementCache(store.shared_file(CACHE_NAME), statuses=MT_BENCH_PARSER.final_statuses)
        ids = [it["id"] for it in items]
        base = default_record(ids, judge, _ROW_FIELDS)

        def record(j: Any, judgement: Mapping[str, Any]) -> dict[str, Any]:
            """The stored judgement, with its item's category, turn and template."""
            return {**base(j, judgement), **{k: items[j.row][k] for k in _ITEM_FIELDS}}

        opts = {"repeats": repeats, "skip": skip, "record": record, "row_fields": _ROW_FIELDS, "progress": progress}
        outcome = judge_items(judge, items, store, cache, ids=ids, batch=batch, **opts)
        records, ratings = [], []
        for i, it in enumerate(items):
            reps = [outcome.record(j) for j in outcome.plan if j.row == i]
            values = [v for v in map(rating_of, reps) if v is not None]
            ratings.append(sum(values) / len(values) if values else None)
            records.append({**{k: it[k] for k in ("id", *_ITEM_FIELDS)}, "rating": ratings[-1], "judgements": reps})
        summary = _summary(answers, judge, items, ratings, aggregation, repeats, outcome)
        store.write_summary(summary)
    if outcome.fatal is not None:
        raise JudgeError(str(outcome.fatal))
    return MtBenchRun(records, summary, store.root, store.config_id)


def _summary(
    answers: Answers,
    judge: Judge,
    items: list[dict[str, Any]],
    ratings: list[float | None],
    aggregation: str,
    repeats: int,
    outcome: JudgeOutcome,
) -> dict[str, Any]:
    """The judge run's summary: per category the mean rating and its Score under both aggregations (``aggregation``
    the headline), the counts, the judge's usage, the fatal error and the batch mode's state when there are."""
    hashes = ",".join(f"{n}@{r.sha256[:8]}" for n, r in MT_BENCH_RUBRICS.items())
    p = judge.settings
    base = (
        f"judge:{judge.label}|templates:{hashes}|temp:{p.temperature}|max_tokens:{p.max_tokens}"
        f"|answers:{answers.config_id}|{answers.thinking.signature()}" + (f"|repeats:{repeats}" if repeats != 1 else "")
    )
    both = {a: category_ratings(items, ratings, a) for a in AGGREGATIONS}
    scores = {a: _category_scores(both[a], f"{base}|agg:{a}") for a in AGGREGATIONS}
    means = {a: avg_rating(both[a]) for a in AGGREGATIONS}
    defined = [v for v in means[aggregation].values() if v is not None]
    return {
        "metrics_llm": {"avg_rating": means[aggregation]},
        "aggregation": aggregation,
        "scores": scores[aggregation],
        "by_aggregation": {a: {"avg_rating": means[a], "scores": scores[a]} for a in AGGREGATIONS},
        "overall_unweighted_mean_of_categories": (sum(defined) / len(defined)) if defined else None,
        "n_judgements": len(items) * repeats,
        "n_no_rating": sum(1 for r in ratings if r is not None and r == NO_RATING),
        "n_unjudged": sum(1 for r in ratings if r is None),
        "templates_used": {n: sum(1 for it in items if it["template"] == n) for n in MT_BENCH_RUBRICS},
        "judge_usage": dict(outcome.usage),
        "signature": f"{base}|agg:{aggregation}",
        "note": OVERALL_NOTE if defined else "no rating counts",
        **({} if outcome.fatal is None else {"fatal_error": str(outcome.fatal)}),
        **({} if outcome.batch is None else {"batch": redact(outcome.batch)}),
    }
