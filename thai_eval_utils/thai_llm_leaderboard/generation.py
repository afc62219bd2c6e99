"""The Thai LLM Leaderboard's four generation tasks (spec thai_llm_leaderboard.md 3; scbdatax/seacrowd-eval @9de9392
``evaluation/main_nlg_prompt_batch.py``): prompts filled as its ``to_prompt`` fills them, one user message through
the model's chat template, sampling as ``HFModel.predict_generation`` samples (T = 0.2, 512 new tokens, its
terminators) with one seeded generator per item, the raw reply stored whole and scored through the thinking rule
(``tasks.thinking.split_reply``), the runner's metrics (:mod:`.nlg_metrics`). Resumable: ``RunStore`` +
``run_items`` as ``tasks/runner.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from thai_eval_utils.backend.generation import LOOKUP_TOKENS, eos_ids, generate
from thai_eval_utils.backend.openai_client import stable_model_identity
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.protocols import ChatModel
from thai_eval_utils.core.records import read_records, require_text
from thai_eval_utils.tasks.declared import GenerationTask
from thai_eval_utils.tasks.runner import RunLayout, TaskRun, run_task
from thai_eval_utils.tasks.shaping import OfTableEntry
from thai_eval_utils.tasks.thinking import ThinkingOption, split_reply
from thai_eval_utils.thai_llm_leaderboard.prompts import runner_prompts, template
from thai_eval_utils.thai_llm_leaderboard.nlg_metrics import NLG_METRIC_OBJECTS, ROUGE_SEED, nlg_scores

#: evaluation/model_utils.py:28 ``MAX_GENERATION_LENGTH``; :454-462 the sampling temperature.
MAX_NEW_TOKENS, TEMPERATURE = 512, 0.2
#: transformers.set_seed(42) once per script (main_nlg_prompt_batch.py:100); here each item's own generator.
SEED = 42
#: evaluation/model_utils.py:351 ``model_max_length = min(derived, 8192)``.
RUNNER_MAX_LENGTH = 8192
#: evaluation/model_utils.py:407-416: terminators added to the tokenizer's EOS where they exist.
RUNNER_TERMINATORS = ("<|eot_id|>", "<|im_start|>", "<|im_end|>")
#: Layout of the records and summary (in each run's config).
RECORD_FORMAT = 1
#: The run card's benchmark prefix (``<suite>/<task>``).
SUITE_NAME = "thai_llm_leaderboard"


@dataclass(frozen=True)
class NlgTask:
    """One generation task: the runner's key, its task value (SUM / MT / QA), the split scored, what the transform
    uploads (scripts/transform_result.py:75-80) and which key the leaderboard displays (spec 3.3 end)."""

    key: str
    task_type: str
    split: str
    uploaded: tuple[str, ...]
    displayed: str

    @property
    def template(self) -> str:
        """The runner's template of the task value (evaluation/prompt_utils.py:51 SUM, :46 MT, :21 QA; package data)."""
        return template(self.task_type)

    @property
    def data_file(self) -> str:
        """The runner's file name: ``{task_key}_{split}.jsonl`` (data_utils.py:149-159)."""
        return f"{self.key}_{self.split}.jsonl"


_ROUGE = ("ROUGE1", "ROUGE2", "ROUGEL")
_TRANSLATION = ("BLEU", "SacreBLEU", "chrF++")
#: The four tasks in the runner's ``NLG_TASK_LIST`` order (data_utils.py:135-140): the ROUGE RNG replay needs it.
NLG_TASKS: dict[str, NlgTask] = {
    t.key: t
    for t in (
        NlgTask("xl_sum_tha_seacrowd_t2t", "SUM", "test", _ROUGE, "ROUGEL"),
        NlgTask("flores200_eng_Latn_tha_Thai_seacrowd_t2t", "MT", "devtest", _TRANSLATION, "SacreBLEU"),
        NlgTask("flores200_tha_Thai_eng_Latn_seacrowd_t2t", "MT", "devtest", _TRANSLATION, "SacreBLEU"),
        NlgTask("iapp_squad_seacrowd_qa", "QA", "test", _ROUGE, "ROUGEL"),
    )
}


def nlg_task(key: str) -> NlgTask:
    """The task of a runner key. Raises ValueError naming the known keys."""
    if key not in NLG_TASKS:
        raise ValueError(f"unknown Thai LLM Leaderboard generation task {key!r}; known: {', '.join(NLG_TASKS)}")
    return NLG_TASKS[key]


# --------------------------------------------------------------------------------------------- prompts
def fill_prompt(task: NlgTask, row: Mapping[str, Any]) -> str:
    """The runner's ``to_prompt`` (main_nlg_prompt_batch.py:18-56), zero-shot: the same replacements in the same
    order (text inserted earlier is searched by later replacements, as there). QA drops every line holding
    ``[ANSWER_CHOICES]`` and replaces ``[LABEL_CHOICE]`` with ``""``, so the iapp prompt ends in ``"คำตอบ: "``."""
    prompt = task.template
    if "[INPUT]" in prompt:
        prompt = prompt.replace("[INPUT]", row["text_1"].strip())
    if task.task_type == "MT":
        parts = task.key.split("_")
        src, tgt = (parts[-6], parts[-4]) if "flores200" in task.key else (parts[-4], parts[-3])
        names = runner_prompts()["lang_names"]  # prompt_utils.py:1039-1043: the Thai prompt names them in English
        prompt = prompt.replace("[SOURCE]", names[src]).replace("[TARGET]", names[tgt])
    if task.task_type == "QA":
        prompt = prompt.replace("[CONTEXT]", row["context"].strip()).replace("[QUESTION]", row["question"].strip())
        prompt = "\n".join(line for line in prompt.split("\n") if "[ANSWER_CHOICES]" not in line)
        prompt = prompt.replace("[LABEL_CHOICE]", "")
    return prompt


def gold_of(row: Mapping[str, Any]) -> str:
    """The runner's gold, unstripped (quirk 18): ``answer[0]`` when the row has ``answer``, else ``text_2``
    (main_nlg_prompt_batch.py:206-210)."""
    return row["answer"][0] if "answer" in row else row["text_2"]


class NlgPrompt(OfTableEntry[NlgTask]):
    """A task's prompt as a function of a row (:func:`fill_prompt`), recorded as its class and the task's key."""

    def __call__(self, row: Mapping[str, Any]) -> str:
        return fill_prompt(self.task, row)


def nlg_declaration(task: NlgTask, options: GenerationOptions | None = None) -> GenerationTask:
    """The task as a declared generation task: the runner's prompt (sent as one user message through the chat
    template) and gold as functions of a row, the decoding of ``options`` (default: the runner's), the runner's
    metric objects (:data:`~.nlg_metrics.NLG_METRIC_OBJECTS`)."""
    options = options or GenerationOptions()
    return GenerationTask(
        name=task.key,
        data=task.data_file,
        prompt=NlgPrompt(task),
        reference=gold_of,
        metrics=NLG_METRIC_OBJECTS,
        max_new_tokens=options.max_new_tokens,
        temperature=options.sampling_temperature,
        seed=options.seed,
        title=task.key,
        version="seacrowd-eval-9de9392",
    )


def load_nlg_rows(task: NlgTask, path: str | Path) -> list[dict[str, Any]]:
    """The task's rows, validated whole (file, row and field named in every error), in file order.

    t2t rows need ``text_1`` (not empty) and ``text_2`` (text); qa rows need ``context`` (text: the runner strips it,
    a null would crash it), ``question`` (not empty) and ``answer`` (a non-empty list of texts: the runner takes
    ``answer[0]``, which of a plain string would be its first character). ``id`` (optional; default the row
    number) must be unique.
    """
    path = Path(path)
    qa = task.task_type == "QA"
    required = {"context": str, "question": str, "answer": list} if qa else {"text_1": str, "text_2": str}
    rows = read_records(path, required, allow_empty=False)
    seen: dict[str, int] = {}
    for i, row in enumerate(rows):
        for name in required:  # in order; a context may be empty; of the answers, answer[0] must be a text
            if name == "answer" and not row[name]:
                raise ThaiEvalDataError("empty answer list (the runner scores answer[0])", path=path, row=i, field=name)
            value = row[name][0] if name == "answer" else row[name]
            require_text(value, path=path, row=i, field=name, allow_empty=name == "context")
        ident = str(row.get("id", i))
        if ident in seen:
            raise ThaiEvalDataError(f"id {ident!r} also on row {seen[ident]}", path=path, row=i, field="id")
        seen[ident] = i
    return rows


# ------------------------------------------------------------------------------------------ generation
@dataclass(frozen=True)
class GenerationOptions:
    """How replies are generated (everything here keys the run).

    Args:
        temperature: sampling temperature (the runner's 0.2); ignored when ``greedy``.
        greedy: argmax decoding instead (a text-equality check; the runner always samples, quirk 8).
        max_new_tokens: the runner's 512.
        seed: every item's own generator is seeded with it (the runner seeds once per script, so its draws depend
            on the batch; ours depend only on the item's prompt).
        double_bos: local models: tokenize the rendered chat template with the tokenizer's special tokens, as the
            runner does, so templates that already hold BOS get a second one (quirk 14, faithful); False: the
            rendered template as is (corrected, our default).
        truncation: a prompt longer than ``min(max_length, 8192) - max_new_tokens`` tokens loses its end
            (``"right"``: the runner's, quirk 3, which cuts the generation cue) or its start (``"left"``, default).
        runner_terminators: stop exactly at the runner's terminators: the tokenizer's EOS and those of
            ``<|eot_id|>``, ``<|im_start|>``, ``<|im_end|>`` that exist (model_utils.py:407-416), which replace the
            model's generation config's EOS ids (faithful: for Gemma 3 that drops ``<end_of_turn>``, so a reply
            runs on past its turn). False (default): those terminators added to the model's own EOS ids.
        enable_thinking: passed to chat templates that take it (None: not passed).
    """

    temperature: float = TEMPERATURE
    greedy: bool = False
    max_new_tokens: int = MAX_NEW_TOKENS
    seed: int = SEED
    double_bos: bool = False
    truncation: str = "left"
    runner_terminators: bool = False
    enable_thinking: bool | None = None

    def __post_init__(self) -> None:
        if self.truncation not in ("left", "right"):
            raise ValueError(f"truncation must be 'left' or 'right', got {self.truncation!r}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")

    @property
    def sampling_temperature(self) -> float:
        return 0.0 if self.greedy else float(self.temperature)

    def signature(self) -> str:
        decode = "greedy" if self.greedy else f"sample(T:{self.temperature},seed:{self.seed}/item)"
        return (
            f"{decode}|max_new:{self.max_new_tokens}|bos:{'double' if self.double_bos else 'template'}"
            f"|trunc:{self.truncation}|eos:{'runner' if self.runner_terminators else 'runner+model'}"
        )

    def record(self) -> dict[str, Any]:
        return asdict(self)


@contextlib.contextmanager
def _eos_ids(hf_model: Any, ids: list[int]) -> Iterator[None]:
    """The model's generation config's EOS ids replaced by ``ids`` for one call (the runner passes
    ``eos_token_id=terminators`` to ``generate``, which overrides the config the same way), then restored."""
    config = hf_model.generation_config
    old = config.eos_token_id
    config.eos_token_id = list(ids)
    try:
        yield
    finally:
        config.eos_token_id = old


def stop_ids(hf_model: Any, tokenizer: Any, options: GenerationOptions) -> list[int]:
    """The token ids that end a reply: the runner's terminators, plus (unless ``options.runner_terminators``) the
    model's generation config's EOS ids (``backend.generation.eos_ids``)."""
    ids = terminator_ids(tokenizer)
    return ids if options.runner_terminators else sorted(set(ids) | eos_ids(hf_model, tokenizer))


def terminator_ids(tokenizer: Any) -> list[int]:
    """model_utils.py:407-416 ``_get_terminator``: the tokenizer's EOS id, then each of
    :data:`RUNNER_TERMINATORS` that converts to an id other than the unknown token's."""
    found = [tokenizer.convert_tokens_to_ids(t) for t in RUNNER_TERMINATORS]
    out = [tokenizer.eos_token_id, *(t for t in found if isinstance(t, int) and t != tokenizer.unk_token_id)]
    return [t for t in out if t is not None]


def render(tokenizer: Any, conversation: list[dict[str, str]], options: GenerationOptions) -> str:
    """``apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)`` (model_utils.py:422-437)."""
    extra = {} if options.enable_thinking is None else {"enable_thinking": options.enable_thinking}
    return tokenizer.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False, **extra)


def encode(tokenizer: Any, text: str, room: int, options: GenerationOptions) -> tuple[list[int], bool]:
    """The prompt's token ids (special tokens added only with ``double_bos``), cut to ``room`` tokens on the side
    ``options.truncation`` names; (ids, whether it was cut)."""
    ids = list(tokenizer(text, add_special_tokens=options.double_bos).input_ids)
    if len(ids) <= room:
        return ids, False
    return (ids[:room] if options.truncation == "right" else ids[-room:]), True


def generate_replies(
    model: ChatModel,
    conversations: Sequence[list[dict[str, str]]],
    options: GenerationOptions,
    *,
    progress: bool = False,
) -> list[tuple[str, bool]]:
    """One raw reply per conversation and whether its prompt was truncated.

    A local model is driven as the runner drives ``HFModel.predict_generation``: the chat template rendered to
    text, tokenized again (``double_bos``), truncated to ``min(max_length, 8192) - max_new_tokens``, sampled with
    the model's generation config's top_k / top_p (transformers' defaults 50 / 1.0), stopped at the runner's
    terminators, decoded without special tokens. Each row draws from its own generator seeded ``options.seed``
    (``backend.generation``), so its text does not depend on the rows beside it. Any other chat model (API,
    served) gets ``model.chat`` with the same temperature, budget and seed.
    """
    if not (hasattr(model, "hf_model") and hasattr(model, "tokenizer")):  # not a transformers model in this process
        texts = model.chat(
            list(conversations),
            max_new_tokens=options.max_new_tokens,
            temperature=options.sampling_temperature,
            seed=options.seed,
        )
        return [(t, False) for t in texts]
    tok, hf = model.tokenizer, model.hf_model
    room = max(1, min(int(model.max_length), RUNNER_MAX_LENGTH) - options.max_new_tokens)
    encoded = [encode(tok, render(tok, conv, options), room, options) for conv in conversations]
    top_p = getattr(hf.generation_config, "top_p", None) or 1.0
    with _eos_ids(hf, stop_ids(hf, tok, options)):
        texts, stats = generate(
            hf,
            tok,
            [ids for ids, _ in encoded],
            max_new_tokens=options.max_new_tokens,
            temperature=options.sampling_temperature,
            top_p=float(top_p),
            seed=options.seed,
            kv_budget=getattr(model, "kv_budget", None),
            max_rows=getattr(model, "max_rows", None),
            lookup=getattr(model, "lookup_tokens", LOOKUP_TOKENS),
            progress=progress,
            desc="thai_llm_leaderboard",
        )
    model.last_generation = stats
    return [(t, cut) for t, (_, cut) in zip(texts, encoded, strict=True)]


# ------------------------------------------------------------------------------------------------ runs
@dataclass
class NlgRun(TaskRun):
    """A finished (or resumed) run of one generation task (a declared task's run,
    :class:`~thai_eval_utils.tasks.runner.TaskRun`: records in item order, the scores, the summary, where it is
    stored), with the notes on what the runner's metrics could not compute here."""

    notes: list[str] = field(default_factory=list)


def run_nlg_task(
    model: ChatModel,
    task_key: str,
    data: str | Path,
    *,
    limit: int | None = None,
    options: GenerationOptions = GenerationOptions(),
    thinking: ThinkingOption = ThinkingOption(),
    rouge: str = "mean",
    rouge_seed: int = ROUGE_SEED,
    outputs: str | Path | None = None,
    batch_size: int | None = None,
    progress: bool = True,
) -> NlgRun:
    """Run one generation task on ``model`` (resuming what its run stored), score it and write the summary.

    Args:
        model: a loaded model (``backend.models.load_model``) that can ``chat``.
        task_key: the runner's key (:data:`NLG_TASKS`).
        data: the task's JSONL file, or the folder holding ``{task_key}_{split}.jsonl``.
        limit: the first N items (the same run folder: a later full run adds the rest).
        options: generation settings (they key the run).
        thinking: how a thinking block is cut before scoring (the raw reply is stored whole).
        rouge: ``"mean"`` (default) or ``"bootstrap_median"`` (the runner's aggregator replayed).
        rouge_seed: the seed numpy is reset to for the bootstrap median (``nlg_metrics.ROUGE_SEED``).
        outputs: the outputs folder.
        batch_size: items per engine call and store flush (default the model's ``concurrency``, else 8).

    Raises:
        ThaiEvalDataError: a bad row (file, row and field) before any run folder is made or any call.
    """
    task = nlg_task(task_key)
    path = Path(data)
    path = path / task.data_file if path.is_dir() else path
    all_items = [
        {"id": str(r.get("id", i)), "row": i, "prompt": fill_prompt(task, r), "reference": gold_of(r)}
        for i, r in enumerate(load_nlg_rows(task, path))
    ]
    items = all_items if limit is None else all_items[: max(0, int(limit))]
    config = {
        "task": task.key,
        "template": task.template,
        "generation": options.record(),
        "record_format": RECORD_FORMAT,
    }

    def call(chunk: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The model's raw replies to the chunk's prompts (each one user message), stored whole with the item."""
        replies = generate_replies(model, [[{"role": "user", "content": it["prompt"]}] for it in chunk], options)
        return [
            {"id": it["id"], "row": it["row"], "prompt": it["prompt"]}
            | {"output": text, "reference": it["reference"], "truncated": cut}
            for it, (text, cut) in zip(chunk, replies, strict=True)
        ]

    def summarize(records: list[dict[str, Any]], support: Any, run: Any) -> dict[str, Any]:
        """Every runner metric on the scored texts (the thinking rule applied to each raw reply; a reply whose
        thinking never closed scores as ``""`` and is counted), what the leaderboard uploads and displays, the counts,
        the failed calls (ungenerated items, never scored), notes."""
        split = [split_reply(r["output"], thinking) for r in records]
        n, n_docs = len(records), len(all_items)
        part = f"{task.key}|{options.signature()}|{thinking.signature()}" + (
            f"|limit:{n}/{n_docs}" if n < n_docs else ""
        )
        if records:
            hyps, refs = [s.scored for s in split], [r["reference"] for r in records]
            scores, notes = nlg_scores(hyps, refs, run_part=part, rouge=rouge, rouge_seed=rouge_seed)
        else:  # nothing generated yet (every call failed, or a batch round not back): nothing to score
            scores, notes = {}, ["no item generated yet: no score"]
        return {
            "task": task.key,
            "n": n,
            "n_docs": n_docs,
            "scores": scores,
            "leaderboard": {k: scores[k]["value"] for k in task.uploaded if k in scores},
            "displayed": task.displayed,
            "missing_leaderboard_keys": [k for k in task.uploaded if k not in scores],
            "rouge_aggregation": rouge,
            "rouge_seed": rouge_seed if rouge == "bootstrap_median" else None,
            "thinking": thinking.record(),
            "n_thinking_failed": sum(s.failed for s in split),
            "n_truncated": sum(bool(r.get("truncated")) for r in records),
            "notes": notes,
            "limit": limit,
            "n_computed_this_run": run.computed,
            "generation": options.record(),
            "n_ungenerated": len(run.failed),
            "ungenerated": run.failed,
        }

    layout = RunLayout(
        f"{SUITE_NAME}/{task.key}",
        config,
        lambda it, record: record,  # the call's records: the raw reply stored whole
        {"output": str},
        summarize,
        call=call,
        data_files=[str(path)],
        templates={task.task_type: task.template},
        model_identity=stable_model_identity(model),
        thinking_settings=False,  # the server's reply content as it came, as these runs always stored it
    )
    # a call that fails after the client's retries (an ApiError, RunLayout's default; in batch mode also a reply not
    # back yet) leaves its items ungenerated, named in the summary
    decl = nlg_declaration(task, options)
    run = run_task(model, decl, items=items, layout=layout, batch_size=batch_size, outputs=outputs, progress=progress)
    return NlgRun(**vars(run), notes=run.summary["notes"])
