"""Thai dialect benchmark generation runs (arXiv 2504.05898, section 3.1; its
``evaluation/main_local_prompt_batch.py`` and ``prompt_utils.py``): prompts, the tasks' declarations, runs, scoring.

Every item becomes one zero-shot user turn (no system prompt) built from the benchmark's own prompt
strings (``thai_eval_utils/dialect/prompts/dialect_prompts.json``, package data). Each dialect's scored task is a
declared generation task (:func:`dialect_task`, with the paper's metric objects); a run of many dialects and tasks
is one declaration (:func:`generation_task`) run by :func:`~thai_eval_utils.tasks.runner.run_task` in one store
(each reply appended as soon as it arrives, so an interrupted run resumes). The run's ``summary.json`` holds its
scores per dialect and task and the ΔDiff values (see :func:`summary_scores`).
"""

from __future__ import annotations

import importlib.resources
import json
import math
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import pandas as pd

from thai_eval_utils.backend.openai_client import stable_identity
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.protocols import Model, TokenizingModel
from thai_eval_utils.core.provenance import Score
from thai_eval_utils.core.runloop import RunOutcome
from thai_eval_utils.dialect.data import check_dialect, dialect_tasks
from thai_eval_utils.dialect.metrics import (
    DIALECT_NAMES,
    TABLE1_TASKS,
    delta_diff,
    table_task,
    task_metrics,
    task_scores,
)
from thai_eval_utils.dialect.tokenizers import DEFAULT_TOKENIZER, pythainlp_version
from thai_eval_utils.tasks.declared import GenerationTask
from thai_eval_utils.tasks.language import group_columns, reply_columns, reply_stats_by
from thai_eval_utils.tasks.metrics import qualified_name
from thai_eval_utils.tasks.runner import RunLayout, reply_summary, run_task
from thai_eval_utils.tasks.thinking import DEFAULT as DEFAULT_THINKING
from thai_eval_utils.tasks.thinking import ThinkingOption, config_entry

#: The prompt file shipped with the toolkit (verbatim prompt strings of the benchmark, with their source): package
#: data, so an installed wheel has it (its origin and licence: ``prompts/README.md`` beside it).
DEFAULT_PROMPTS_PATH = importlib.resources.files("thai_eval_utils.dialect") / "prompts" / "dialect_prompts.json"
#: The benchmark name under which generations are stored.
BENCHMARK = "dialect/generation"
#: Tasks without a reference: they go to human evaluation, not to BLEU/ROUGE-L.
UNSCORED_TASKS = ("conversation", "food")
#: Paper settings (section 3.1 and its model_utils.py): open models sample at T=0.2 with seed 42, up to
#: 3000 new tokens, prompt capped at 3000 tokens; API models run at temperature 0, seed 42, max_tokens 3000.
PAPER_LOCAL_TEMPERATURE = 0.2
PAPER_API_TEMPERATURE = 0.0
PAPER_SEED = 42
PAPER_MAX_NEW_TOKENS = 3000
PAPER_MAX_PROMPT_TOKENS = 3000


@dataclass(frozen=True)
class DialectPrompts:
    """The benchmark's prompt strings: ``prompts[dialect][family]``, Thai ``language_names`` and ``source``."""

    prompts: dict[str, dict[str, str]]
    language_names: dict[str, str]
    source: str
    path: str = ""


def load_prompts(path: str | os.PathLike[str] | Traversable = DEFAULT_PROMPTS_PATH) -> DialectPrompts:
    """Read a prompt file (``{"source", "language_names", "prompts": {dialect: {family: template}}}``); the default
    is the benchmark's own, shipped in the package."""
    path = Path(path) if isinstance(path, str | os.PathLike) else path
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ThaiEvalDataError("prompt file not found", path=path) from None
    except json.JSONDecodeError as exc:
        raise ThaiEvalDataError(f"invalid JSON: {exc.msg} (line {exc.lineno})", path=path) from None
    for key in ("source", "language_names", "prompts"):
        if key not in obj:
            raise ThaiEvalDataError("missing key", path=path, field=key)
    for dialect, templates in obj["prompts"].items():
        for family in ("qa", "summarization", "translation", "conversation", "food"):
            if not isinstance(templates.get(family), str):
                where = f"prompts.{dialect}.{family}"
                raise ThaiEvalDataError(f"dialect {dialect!r} has no {family!r} template", path=path, field=where)
    return DialectPrompts(obj["prompts"], obj["language_names"], obj["source"], str(path))


def prompt_family(task: str) -> str:
    """The prompt family of a task name: ``translation_eng_east`` -> ``translation``; others unchanged."""
    return "translation" if task.startswith("translation_") else task


def translation_languages(task: str) -> tuple[str, str]:
    """Source and target keys of a translation task, e.g. ``translation_eng_east`` -> ``("eng", "east")``."""
    parts = task.split("_")
    if len(parts) != 3 or parts[0] != "translation":
        raise ValueError(f"not a translation task name: {task!r}")
    return parts[1], parts[2]


def _missing(value: Any) -> bool:
    """None or NaN (a table's empty cell)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def _text(value: Any) -> str:
    return "" if _missing(value) else str(value)


def build_prompt(item: Mapping[str, Any], prompts: DialectPrompts) -> str:
    """The benchmark's prompt for one item (its ``to_prompt``, zero-shot).

    ``[INPUT]`` <- ``text_1.strip()``; QA: ``[CONTEXT]``/``[QUESTION]`` <- stripped context/question;
    translation: ``[SOURCE]``/``[TARGET]`` <- the Thai language names of the task's two languages.
    """
    dialect, task = item["dialect"], item["task"]
    family = prompt_family(task)
    try:
        prompt = prompts.prompts[dialect][family]
    except KeyError:
        raise ValueError(f"no prompt for dialect {dialect!r}, task {task!r}") from None
    if "[INPUT]" in prompt:
        prompt = prompt.replace("[INPUT]", _text(item.get("text_1")).strip())
    if family == "translation":
        src, tgt = translation_languages(task)
        prompt = prompt.replace("[SOURCE]", prompts.language_names[src]).replace(
            "[TARGET]", prompts.language_names[tgt]
        )
    if family == "qa":
        prompt = prompt.replace("[CONTEXT]", _text(item.get("context")).strip())
        prompt = prompt.replace("[QUESTION]", _text(item.get("question")).strip())
    return prompt


def is_api_model(model: Model) -> bool:
    """True for models whose tokenizer is not at hand (not a
    :class:`~thai_eval_utils.core.protocols.TokenizingModel`: ``openai:`` models): they get the API settings
    (temperature 0, no prompt cap), as the paper's code ran its API models."""
    return not isinstance(model, TokenizingModel)


def cap_prompt(model: Model, content: str, max_tokens: int | None) -> tuple[str, int | None, bool]:
    """Cut the user message so the chat-formatted prompt has at most ``max_tokens`` tokens.

    The paper's code right-truncated the formatted prompt at 3000 tokens (which can cut the template's
    generation prompt); here the message content is cut instead so the template stays intact.
    Returns ``(content, formatted token count before cutting, truncated?)``; API models are not capped.
    """
    if not isinstance(model, TokenizingModel) or not max_tokens:
        return content, None, False
    tok = model.tokenizer
    n_total = len(tok(model.render_chat([{"role": "user", "content": content}]), add_special_tokens=False).input_ids)
    if n_total <= max_tokens:
        return content, n_total, False
    ids = tok(content, add_special_tokens=False).input_ids
    keep = max(0, len(ids) - (n_total - max_tokens))
    return tok.decode(ids[:keep], skip_special_tokens=True), n_total, True


def select_items(df: pd.DataFrame, *, tasks: Sequence[str] | None = None, limit: int | None = None) -> pd.DataFrame:
    """The items of some task families (``qa``, ``summarization``, ``translation_en_to_dialect``,
    ``translation_dialect_to_en``, ``conversation``, ``food``), the first ``limit`` per dialect and task.

    ``df.attrs`` (the data files read) is kept, so the run's config id still hashes them.
    """
    out = df
    if tasks is not None:
        if unknown := set(tasks) - {*TABLE1_TASKS, *UNSCORED_TASKS}:
            raise ValueError(f"unknown task famil(ies) {sorted(unknown)}")
        out = out[out["task"].map(table_task).isin(list(tasks))]
    if limit is not None:
        out = out.groupby(["dialect", "task"], sort=False).head(limit)
    out = out.reset_index(drop=True)
    out.attrs = dict(df.attrs)
    return out


def item_key(item: Mapping[str, Any]) -> str:
    """The results-store key of one item: ``<dialect>/<task>/<id>``."""
    return f"{item['dialect']}/{item['task']}/{item['id']}"


@dataclass(frozen=True)
class AddPrompt:
    """A declaration's ``process_docs``: each row with its prompt (``prompt``: :func:`build_prompt` with
    ``prompts``) for the declaration's one user turn; the row's own dialect and task, or those ``fixed`` names (a
    dialect×task declaration: its file's rows do not name them). Recorded by its class, the prompt file's source and
    ``fixed``."""

    prompts: DialectPrompts
    fixed: Mapping[str, str] = field(default_factory=dict)

    def __call__(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**row, "prompt": build_prompt({**row, **self.fixed}, self.prompts)} for row in rows]

    def declaration(self) -> dict[str, Any]:
        return {"function": qualified_name(type(self)), "source": self.prompts.source, **self.fixed}


#: A declaration's prompt: the row's prompt (:class:`AddPrompt`) as one user turn, no system prompt (the paper's).
USER_TURN = ({"role": "user", "content": "{prompt}"},)


def dialect_task(
    dialect: str, task: str, *, prompts: DialectPrompts | None = None, tokenizer: str = DEFAULT_TOKENIZER
) -> GenerationTask:
    """One dialect's scored task (QA, summarisation, a translation direction) as a declared generation task over its
    file ``<dialect>/<task>.jsonl`` (relative to the data folder it is bound to: ``.bind(folder)``): the benchmark's
    prompt as one user turn, the reference ``text_2``, the paper's metric objects (:func:`~.metrics.task_metrics`)
    and the paper's decoding of a local model. Conversation and food have no reference (human evaluation).

    Raises:
        ValueError: an unknown dialect, or a task that is not one of the dialect's scored ones.
    """
    if task not in dialect_tasks(check_dialect(dialect)) or task in UNSCORED_TASKS:
        raise ValueError(f"no scored task {task!r} for dialect {dialect!r}")
    return GenerationTask(
        name=f"dialect_{dialect}_{task}",
        data=f"{dialect}/{task}.jsonl",
        prompt=USER_TURN,
        reference="text_2",
        metrics=task_metrics(task, tokenizer=tokenizer),
        max_new_tokens=PAPER_MAX_NEW_TOKENS,
        temperature=PAPER_LOCAL_TEMPERATURE,
        seed=PAPER_SEED,
        id_field=None if task.startswith("translation_") else "id",  # translation rows may have no id: the row number
        title=f"{DIALECT_NAMES[dialect]} {task}",
        process_docs=AddPrompt(prompts or load_prompts(), {"dialect": dialect, "task": task}),
    )


def generation_task(prompts: DialectPrompts, config: Mapping[str, Any]) -> GenerationTask:
    """The declaration of a generation run (:func:`run_generation`): every item of every dialect and task in one
    run, each row naming its dialect and task, with the run's decoding (``config``). It declares no metrics of its
    own (the default stands): the run's summary scores each dialect and task by its own set (:func:`score_generations`)."""
    return GenerationTask(
        name="dialect",
        data="",
        prompt=USER_TURN,
        reference="text_2",
        max_new_tokens=config["max_new_tokens"],
        temperature=config["temperature"],
        top_p=config["top_p"],
        seed=config["seed"],
        title="Thai dialects",
        process_docs=AddPrompt(prompts),
    )


def run_generation(
    model: Model,
    df: pd.DataFrame,
    *,
    prompts: DialectPrompts | str | Path | None = None,
    outputs: str | Path | None = None,
    temperature: float | None = None,
    top_p: float = 1.0,
    seed: int | None = PAPER_SEED,
    max_new_tokens: int = PAPER_MAX_NEW_TOKENS,
    max_prompt_tokens: int | None = PAPER_MAX_PROMPT_TOKENS,
    greedy: bool = False,
    batch_size: int | None = None,
    progress: bool = True,
    thinking: ThinkingOption = DEFAULT_THINKING,
) -> pd.DataFrame:
    """Generate one reply per item with the paper's settings and store each as it finishes; reruns resume.

    The run's declaration (:func:`generation_task`) runs on :func:`~thai_eval_utils.tasks.runner.run_task` in this
    benchmark's stored layout (one store for every dialect and task; records keyed ``<dialect>/<task>/<id>``). A batch
    whose request fails after the client's retries (an ``ApiError``) stays ungenerated (``output`` None, listed in the
    summary, a warning) and the run goes on; scores and ΔDiff are computed on the generated items, with their n (a
    rerun generates what is missing).

    Args:
        model: any :class:`~thai_eval_utils.core.protocols.Model` (:func:`~thai_eval_utils.backend.models.load_model`);
            a :class:`~thai_eval_utils.core.protocols.TokenizingModel` is local (its prompts are capped).
        df: items as returned by :func:`thai_eval_utils.dialect.data.load_dialect` (``dialect, task, id,
            text_1, question, context``; ``df.attrs["files"]`` are hashed into the run's config id).
        prompts: a :class:`DialectPrompts` or a prompt file (default: the shipped one).
        outputs: the outputs folder (default ``$THAI_EVAL_OUTPUTS`` or ``outputs``).
        temperature: None = the paper's: 0.2 for local models, 0 for API models.
        top_p, seed, max_new_tokens: sampling settings (paper: 1.0, 42, 3000).
        max_prompt_tokens: cap of the chat-formatted prompt for local models (paper: 3000; None: no cap).
        greedy: decode greedily (temperature 0) instead of the paper's sampling.
        batch_size: conversations per ``chat`` call; results are stored after each call (None: the model's
            ``concurrency``, the rows a local model decodes together or an API model's requests in flight, else 8).
        progress: show a tqdm bar.
        thinking: the thinking option (:mod:`thai_eval_utils.tasks.thinking`): the record's ``output`` is the raw
            reply, the metrics read it cut; summary ``replies`` and ``replies_by_task`` (``<dialect>/<task>``).

    Returns:
        A copy of ``df`` with ``model``, ``prompt``, ``output`` (cut), ``raw_output``, ``thinking_unclosed``,
        ``answer_in_thai`` and ``prompt_truncated`` columns;
        ``attrs["run_dir"]`` is the run folder and ``attrs["config"]`` the recorded settings.
    """
    if not isinstance(prompts, DialectPrompts):
        prompts = load_prompts(prompts or DEFAULT_PROMPTS_PATH)
    api = is_api_model(model)
    if greedy:
        temperature, top_p = 0.0, 1.0
    elif temperature is None:  # the paper's: 0.2 local, 0 API
        temperature = PAPER_API_TEMPERATURE if api else PAPER_LOCAL_TEMPERATURE
    config = {
        "decoding": "greedy" if temperature == 0 else "sampling",
        "temperature": float(temperature),
        "top_p": float(top_p),
        "seed": seed,
        "max_new_tokens": int(max_new_tokens),
        "max_prompt_tokens": None if api else max_prompt_tokens,
        "model_kind": "api" if api else "local",
        "system_prompt": None,
        "n_shot": 0,
        "prompt_source": prompts.source,
        **config_entry(thinking),
    }
    task = generation_task(prompts, config)
    rows = task.process_docs(df.to_dict("records"))
    docs = [{"dialect": r["dialect"], "task": r["task"], "id": str(r["id"])} for r in rows]
    items = [{"id": item_key(d), "row": i, "doc": d, "prompt": r["prompt"]} for i, (d, r) in enumerate(zip(docs, rows))]
    frames: list[pd.DataFrame] = []  # the per-item table the summary is computed from (returned)

    def summarize(records: list[dict[str, Any]], support: Mapping[str, str], run: RunOutcome) -> dict[str, Any]:
        frame, summary = _summarize(df, model.name, config, thinking, run, support)
        frames.append(frame)
        return summary

    layout = RunLayout(
        BENCHMARK,
        config,
        _record,
        {"output": str},
        summarize,
        call=_chat_call(model, task, config["max_prompt_tokens"]),
        data_files=[str(p) for p in df.attrs.get("files", [])],
        templates=_templates(df, prompts),
        model_identity=stable_identity(dict(model.identity)) if api else dict(model.identity),
    )
    run = run_task(
        model,
        task,
        items=items,
        layout=layout,
        outputs=outputs,
        batch_size=batch_size,
        progress=progress,
        thinking=thinking,
    )
    out = frames[-1]
    if run.summary["ungenerated"]:
        warnings.warn(
            f"{len(run.summary['ungenerated'])} of {len(out)} dialect items not generated (the server failed; rerun to "
            f"retry); scores use the {run.summary['n_items']} generated: {next(iter(run.summary['ungenerated'].values()))}",
            stacklevel=2,
        )
    out.attrs.update({"run_dir": str(run.run_dir), "config": config})
    return out


def _chat_call(model: Model, task: GenerationTask, max_prompt_tokens: int | None) -> Callable[[list[dict]], list]:
    """The run's model call: each item's prompt capped (:func:`cap_prompt`) and sent as one user turn with the
    task's decoding; per item ``(prompt sent, formatted token count, truncated?, reply)``."""

    def call(chunk: list[dict[str, Any]]) -> list[tuple[str, int | None, bool, str]]:
        capped = [cap_prompt(model, it["prompt"], max_prompt_tokens) for it in chunk]
        replies = model.chat(
            [[{"role": "user", "content": content}] for content, _, _ in capped],
            max_new_tokens=task.max_new_tokens,
            temperature=task.temperature,
            top_p=task.top_p,
            seed=task.seed,
        )
        return [(*cap, reply) for cap, reply in zip(capped, replies)]

    return call


def _record(item: Mapping[str, Any], answer: tuple[str, int | None, bool, str]) -> dict[str, Any]:
    """The stored record of one item: its dialect, task and id, the prompt sent, its token count, whether it was
    cut, and the raw reply."""
    content, n_tokens, cut, reply = answer
    return {**item["doc"], "prompt": content, "prompt_len": n_tokens, "prompt_truncated": cut, "output": reply}


def _summarize(
    df: pd.DataFrame,
    model: str,
    config: Mapping[str, Any],
    thinking: ThinkingOption,
    run: RunOutcome,
    support: Mapping[str, str],
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """``df`` with the run's columns (an item not generated: None; ``output`` the reply its metrics read, thinking
    cut) and the run's summary: the counts, the failed calls, the config, the scores and ΔDiff of the generated items
    (:func:`summary_scores`), the thinking and answers-in-Thai entries, overall and per ``<dialect>/<task>``."""
    done = [run.records.get(key, {}) for key in run.keys]
    raw = [r.get("output") for r in done]
    cut = reply_columns(raw, thinking)
    out = df.assign(
        model=model,
        prompt=[r.get("prompt") for r in done],
        output=cut["scored"],
        raw_output=raw,
        thinking_unclosed=cut["unclosed"],
        answer_in_thai=cut["in_thai"],
        prompt_truncated=[bool(r.get("prompt_truncated")) for r in done],
    )
    generated, records = out[out["output"].notna()], run.in_order()
    scores, deltas = (
        summary_scores(score_generations(generated, thinking=thinking))
        if "text_2" in out.columns and len(generated)
        else ({}, {})
    )
    return out, {
        "n_items": len(generated),
        "n_generated": run.computed,
        "n_ungenerated": len(run.failed),
        "ungenerated": run.failed,
        "config": config,
        "scores": scores,
        "delta_diff": deltas,
        **reply_summary(records, thinking, support),
        "replies_by_task": reply_stats_by(records, lambda r: f"{r['dialect']}/{r['task']}", "output", thinking),
    }


def _templates(df: pd.DataFrame, prompts: DialectPrompts) -> dict[str, str]:
    """The prompt templates the run uses, ``{"<dialect>/<family>": template}`` (their hashes key the run)."""
    used = sorted({f"{d}/{prompt_family(t)}" for d, t in zip(df["dialect"], df["task"])})
    return {k: prompts.prompts[k.split("/")[0]][k.split("/")[1]] for k in used if k.split("/")[0] in prompts.prompts}


def score_generations(
    df: pd.DataFrame, *, tokenizer: str = DEFAULT_TOKENIZER, thinking: ThinkingOption | None = None
) -> pd.DataFrame:
    """BLEU, ROUGE-L, sacrebleu BLEU and chrF per (model, dialect, task) of generated outputs.

    Args:
        df: rows with ``model, dialect, task, output`` and the reference ``text_2`` (as returned by
            :func:`run_generation`); conversation and food rows are skipped (no reference).
        tokenizer: the word tokenizer of BLEU, ROUGE-L and sacrebleu's pretokenisation (a name of
            :mod:`~thai_eval_utils.dialect.tokenizers`; default newmm, the paper's).
        thinking: the run's thinking option, whose signature joins each score's; None: none.

    Raises:
        ThaiEvalDataError: before anything is scored (:func:`check_generations`), naming the row and the column
            of ``df``: a missing column, an unknown dialect or task (the valid names listed), an output or
            reference cell that is not text (an empty cell).

    Returns:
        Tidy rows ``model, dialect, task, table_task, metric, value, n, stderr, signature, pythainlp`` where
        ``metric`` is ``rougeL`` / ``bleu`` (the paper's, x100), ``sacrebleu`` or ``chrf`` (``stderr``: only
        ROUGE-L, the mean of per-item scores, has one); with :func:`run_generation`'s reply columns also
        ``thai_rate``, ``thai_n``, ``n_thinking_unclosed``.
    """
    check_generations(df)
    rows = []
    scored = df[~df["task"].isin(UNSCORED_TASKS)]
    replies = "answer_in_thai" in df.columns and "thinking_unclosed" in df.columns
    think = f"|{thinking.signature()}" if thinking is not None else ""
    for (model, dialect, task), group in scored.groupby(["model", "dialect", "task"], sort=False):
        extra = group_columns(group["answer_in_thai"], group["thinking_unclosed"]) if replies else {}
        for score in task_scores(task, list(group["output"]), list(group["text_2"]), tokenizer=tokenizer):
            rows.append(
                {
                    "model": model,
                    "dialect": dialect,
                    "task": task,
                    "table_task": table_task(task),
                    "metric": score.name,
                    "value": score.value,
                    "n": score.n,
                    "stderr": score.stderr,
                    "signature": score.signature + think,
                    "pythainlp": pythainlp_version(),
                    **extra,
                }
            )
    cols = ["model", "dialect", "task", "table_task", "metric", "value", "n", "stderr", "signature", "pythainlp"]
    return pd.DataFrame(rows, columns=cols + (["thai_rate", "thai_n", "n_thinking_unclosed"] if replies else []))


#: The columns :func:`score_generations` reads.
GENERATION_COLUMNS = ("model", "dialect", "task", "output", "text_2")


def check_generations(df: pd.DataFrame) -> None:
    """Refuse a generations table :func:`score_generations` cannot score honestly, naming the row (0-based
    position in ``df``) and the user's own column: a missing column, an unknown dialect, a task that is not one
    of the dialect's (:func:`~thai_eval_utils.dialect.data.dialect_tasks`), an ``output`` or ``text_2`` cell
    that is not text (an empty cell is NaN: it is no generation, and an empty string is scored as one)."""
    if missing := [c for c in GENERATION_COLUMNS if c not in df.columns]:
        raise ThaiEvalDataError(
            f"missing column{'s' * (len(missing) > 1)} {', '.join(map(repr, missing))}; the table "
            f"needs {', '.join(GENERATION_COLUMNS)} (text_2: the reference); columns found: "
            f"{', '.join(map(str, df.columns))}",
            field=missing[0],
        )
    for i, (dialect, task, output, ref) in enumerate(zip(df["dialect"], df["task"], df["output"], df["text_2"])):
        check_dialect(dialect, row=i)
        if task not in dialect_tasks(dialect):
            known = ", ".join(dialect_tasks(dialect))
            message = f"unknown task {task!r} for dialect {dialect!r}; its tasks are {known}"
            raise ThaiEvalDataError(message, row=i, field="task")
        if task in UNSCORED_TASKS:
            continue
        for column, value in (("output", output), ("text_2", ref)):
            if not isinstance(value, str):
                what = "an empty cell" if _missing(value) else f"{type(value).__name__} {value!r:.40}"
                whose = "the generation" if column == "output" else "the reference"
                raise ThaiEvalDataError(f"{what}, not text ({whose} of {dialect}/{task})", row=i, field=column)


def score_key(dialect: str, task: str, metric: str) -> str:
    """The summary key of one score: ``<dialect>/<task>/<metric>``, e.g. ``east/translation_eng_east/bleu``
    (ΔDiff keys use the Table 1 task family: ``east/translation_en_to_dialect/bleu``)."""
    return f"{dialect}/{task}/{metric}"


def summary_scores(scores: pd.DataFrame) -> tuple[dict[str, dict], dict[str, dict]]:
    """A run's scores as its ``summary.json`` holds them: ``(scores, delta_diff)``, each ``{key: Score dict}``.

    Args:
        scores: one model's rows from :func:`score_generations`.

    Returns:
        ``scores``: every metric per dialect and task (x100; keys :func:`score_key` with the benchmark's task
        name, e.g. ``center/qa/rougeL``); ``delta_diff``: ΔDiff = Central minus dialect
        (:func:`thai_eval_utils.dialect.metrics.delta_diff`) per non-Central dialect, Table 1 task family and metric,
        with the dialect's item count as ``n`` (keys with the family, e.g. ``east/qa/rougeL``).
    """
    out: dict[str, dict] = {}
    for r in scores.itertuples(index=False):
        key = score_key(r.dialect, r.task, r.metric)
        stderr = None if r.stderr is None or pd.isna(r.stderr) else float(r.stderr)
        out[key] = Score(key, float(r.value), int(r.n), stderr, r.signature).to_dict()
    deltas: dict[str, dict] = {}
    if len(scores):
        by_family = scores.set_index(["dialect", "table_task", "metric"])
        for r in delta_diff(scores).itertuples(index=False):
            key = score_key(r.dialect, r.task, r.metric)
            n, signature = by_family.loc[(r.dialect, r.task, r.metric), ["n", "signature"]]
            signature = f"delta_diff|central-minus-dialect|{signature}"
            deltas[key] = Score(key, float(r.delta), int(n), None, signature).to_dict()
    return out, deltas


def example_outputs(df: pd.DataFrame, n: int = 1, *, max_chars: int = 300) -> pd.DataFrame:
    """The first ``n`` outputs per (dialect, task), shortened to ``max_chars``, for display."""
    cols = ["dialect", "task", "id", "output", "text_2"]
    head = df.groupby(["dialect", "task"], sort=False).head(n)[cols].copy()
    for c in ("output", "text_2"):
        head[c] = head[c].map(lambda s: _text(s)[:max_chars] + ("…" if len(_text(s)) > max_chars else ""))
    return head.reset_index(drop=True)
