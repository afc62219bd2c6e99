"""The six Thai-H6 tasks and how each is run (spec: Tasks, shots, metrics; Prompt assembly; LB
``lm_eval/tasks/{arc,hellaswag,hendrycks_test,truthfulqa,winogrande,gsm8k}.py``).

A :class:`TaskSpec` carries a task's behaviour: which documents ``limit`` keeps, where each document's few-shot
examples come from, how one document plus its examples becomes :class:`DocRequests` (``(context,
continuation)`` log-likelihood pairs, or a prompt to generate from), which model call answers a batch, which
protocol options enter its config, and how one document's output is scored. Four kinds differ in requests and
scoring (:class:`ChoiceTask`, :class:`TruthfulQATask`, :class:`WinograndeTask`, :class:`GenerationSpec`);
MMLU is a choice task whose limit, few-shot pool, description and average go per subject (``by_subject``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar, cast

import pandas as pd

from thai_eval_utils import __version__
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.protocols import LoglikelihoodModel, Model
from thai_eval_utils.core.provenance import Score
from thai_eval_utils.h6 import metrics as M
from thai_eval_utils.h6 import prompts as P
from thai_eval_utils.h6.data import H6TaskData
from thai_eval_utils.h6.fewshot import default_seed, draw_shots
from thai_eval_utils.h6.protocol import LEADERBOARD, H6Protocol
from thai_eval_utils.tasks.thinking import config_entry, option_of, split_reply

DocError = P.DocError
#: doc, templates -> the query text of one document.
DocText = Callable[[Mapping[str, Any], Mapping[str, str]], str]
#: A few-shot pool: a list of docs, or (MMLU) subject -> list of docs.
Pool = Sequence[Mapping[str, Any]] | Mapping[str, Sequence[Mapping[str, Any]]] | None


@dataclass(frozen=True)
class DocRequests:
    """What one document asks of the model.

    ``requests`` are ``(context, continuation)`` pairs for ``loglikelihood`` (empty for GSM8K);
    ``prompt`` is the shared context (GSM8K: the generation prompt); TruthfulQA's first ``n_mc1``
    requests are the MC1 targets, the rest MC2. ``messages``: the chat a variant sends (``(role, content)`` turns,
    :mod:`.variants`; empty for the paper's tasks).
    """

    prompt: str
    requests: tuple[tuple[str, str], ...] = ()
    n_mc1: int = 0
    messages: tuple[tuple[str, str], ...] = ()

    @property
    def sha256(self) -> str:
        """Hash of everything sent to the model: the prompt and every request (and a variant's chat turns)."""
        parts: list[Any] = [self.prompt, self.requests, *([self.messages] if self.messages else [])]
        blob = json.dumps(parts, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True, kw_only=True)
class TaskSpec:
    """A Thai-H6 task: its data, default shots, metrics (headline first) and behaviour.

    Attributes:
        name: the paper's Table 4 column (``th_arc`` ...).
        data_name: folder of the official release, e.g. ``th_arc_challenge``.
        num_fewshot: LB's shots.
        metrics: the metrics reported, the headline (the Thai-H6 average's) first.
        text: doc, templates -> the query text.
        templates: the LB templates (each can be overridden per run).
        shots: "sampled" (the protocol's sampler), "first_n" (the first shots of the pool) or "none".
        by_subject: MMLU: ``limit``, the few-shot pool, the description and the average go per subject.
    """

    name: str
    data_name: str
    num_fewshot: int
    metrics: tuple[str, ...]
    text: DocText
    templates: Mapping[str, str] = field(default_factory=dict)
    shots: str = "sampled"
    by_subject: bool = False
    #: whether the task scores by log-likelihood (False: it generates).
    uses_loglikelihood: ClassVar[bool] = True
    #: whether the model gets a chat (``model.chat``; a variant's) rather than a plain prompt.
    chat: ClassVar[bool] = False
    #: the labelled variant the task is (``protocol.VARIANTS``), None for the paper's six.
    variant: ClassVar[str | None] = None

    @property
    def data_task(self) -> str:
        """The Thai-H6 task whose data it scores (a variant: its paper task's)."""
        return self.name

    @property
    def label(self) -> str:
        """Its name in tables (a variant: ``th_gsm8k (chat)``)."""
        return self.name

    @property
    def headline(self) -> str:
        """The metric that enters the Thai-H6 average."""
        return self.metrics[0]

    # --- documents and few-shot examples (spec: Few-shot sampling) ----------------------------------------
    def select(self, docs: Sequence[Mapping[str, Any]], limit: int | None) -> list[int]:
        """The first ``limit`` documents (by subject: the first ``limit`` of each, as LB's per-subject tasks)."""
        if limit is None:
            return list(range(len(docs)))
        if not self.by_subject:
            return list(range(min(limit, len(docs))))
        seen: dict[str, int] = {}
        out = []
        for i, doc in enumerate(docs):
            s = doc.get("subject", "")
            if seen.get(s, 0) < limit:
                seen[s] = seen.get(s, 0) + 1
                out.append(i)
        return out

    def pool_of(self, data: H6TaskData) -> Pool:
        """The few-shot pool of loaded task data (by subject: subject -> pool)."""
        return data.fewshot_by_subject if self.by_subject else data.fewshot_pool

    def pool_for(self, pool: Pool, doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """The pool ``doc``'s examples are drawn from (by subject: its subject's)."""
        if pool is None:
            return []
        if isinstance(pool, Mapping):
            return list(pool.get(doc.get("subject", ""), [])) if self.by_subject else []
        return list(pool)

    def sampler(self, protocol: H6Protocol) -> tuple[str, int | None]:
        """(sampler, seed) this task uses under ``protocol`` (MMLU first_n and TruthfulQA none, whatever it says)."""
        name = protocol.sampler if self.shots == "sampled" else self.shots
        if protocol.fewshot_seed is not None or name not in ("lb", "h"):
            return name, protocol.fewshot_seed
        return name, default_seed(name)

    def draw(self, docs: Sequence[Mapping[str, Any]], pool: Pool, k: int, protocol: H6Protocol) -> list[list[int]]:
        """Few-shot pool indices of every document (of the whole split: ``limit`` never changes them)."""
        if self.shots == "none":
            if k:
                raise ValueError(f"{self.name} is zero-shot only (the QA preamble is fixed); got num_fewshot={k}")
            return [[] for _ in docs]
        if self.shots == "first_n":
            for i, doc in enumerate(docs):
                n_pool = len(self.pool_for(pool, doc))
                if n_pool < k:
                    raise ThaiEvalDataError(
                        f"{k} shots requested, the few-shot pool of subject {doc.get('subject')!r} has {n_pool}",
                        row=i,
                        field="subject",
                    )
            return [list(range(k)) for _ in docs]
        n_pool = len(pool or [])
        if n_pool < k:
            raise ThaiEvalDataError(
                f"{self.name}: {k} shots requested from a few-shot pool of {n_pool} (pass num_fewshot)"
            )
        name, seed = self.sampler(protocol)
        return draw_shots(name, len(docs), n_pool, k, seed)

    # --- prompts (LB base.py fewshot_context) --------------------------------------------------------------
    def target(self, doc: Mapping[str, Any]) -> str:
        """A few-shot example's answer (without the leading space)."""
        raise ValueError(f"{self.name} has no few-shot target")

    def context(self, doc: Mapping[str, Any], shots: Sequence[Mapping[str, Any]], templates: Mapping[str, str]) -> str:
        """``description + "\\n\\n"`` (by subject), examples ``text + " " + target`` joined by ``"\\n\\n"``, the query."""
        parts = [self.text(ex, templates) + P.TARGET_DELIMITER + self.target(ex) for ex in shots]
        parts.append(self.text(doc, templates))
        desc = P.mmlu_description(doc, templates) + P.FEWSHOT_DELIMITER if "description" in templates else ""
        return desc + P.FEWSHOT_DELIMITER.join(parts)

    def requests(
        self, doc: Mapping[str, Any], shots: Sequence[Mapping[str, Any]], templates: Mapping[str, str]
    ) -> DocRequests:
        """The requests of ``doc`` given its few-shot examples ``shots`` (in prompt order)."""
        raise NotImplementedError

    # --- running and scoring -------------------------------------------------------------------------------
    def config(self, protocol: H6Protocol) -> dict[str, Any]:
        """The protocol options, beyond shots, sampler and BOS, that change this task's numbers."""
        return {"mmlu_average": protocol.mmlu_average} if self.by_subject else {}

    def model_call(self, model: Model, protocol: H6Protocol) -> Callable[[list[Any]], list[Any]]:
        """The model method that answers :meth:`model_inputs` (``loglikelihood``; GSM8K: ``generate``)."""
        return cast(LoglikelihoodModel, model).loglikelihood  # evaluate() checked the capability

    def model_inputs(self, batch: Sequence[DocRequests]) -> list[Any]:
        """What one model call gets for a batch of documents: every ``(context, continuation)`` pair, in order."""
        return [pair for r in batch for pair in r.requests]

    def outputs(self, batch: Sequence[DocRequests], results: Sequence[Any]) -> list[dict[str, Any]]:
        """The model's answers to :meth:`model_inputs` split per document: ``lls`` and ``is_greedy``."""
        if len(results) != sum(len(r.requests) for r in batch):
            raise RuntimeError(
                f"model returned {len(results)} log-likelihoods for {sum(len(r.requests) for r in batch)} requests"
            )
        out, pos = [], 0
        for r in batch:
            part = results[pos : pos + len(r.requests)]
            pos += len(r.requests)
            out.append({"lls": [float(ll) for ll, _ in part], "is_greedy": [bool(g) for _, g in part]})
        return out

    def score(self, doc: Mapping[str, Any], output: Mapping[str, Any], protocol: H6Protocol) -> dict[str, Any]:
        """Metric values (and gold, predictions) of one document from its model output."""
        raise NotImplementedError

    def scores(
        self, table: pd.DataFrame, signature: str, protocol: H6Protocol
    ) -> tuple[dict[str, Score], dict[str, Score]]:
        """(metric -> Score, headline first; subject -> accuracy Score, by subject only)."""
        return M.task_scores(
            self.name, self.metrics, table, signature, by_subject=self.by_subject, average=protocol.mmlu_average
        )

    def signature(self, config: Mapping[str, Any], limit: int | None = None) -> str:
        """A sacrebleu-style signature of the options behind a score, e.g.
        ``th_arc|shots:25|sampler:lb|seed:42|bos:no|thai-eval:0.1.0`` (``limit:N`` when not the whole split)."""
        sig = f"{self.name}|shots:{config['num_fewshot']}|sampler:{config['sampler']}"
        if config.get("fewshot_seed") is not None:
            sig += f"|seed:{config['fewshot_seed']}"
        sig += f"|bos:{'yes' if config['add_bos_token'] else 'no'}"
        sig += self._signature_extra(config)
        if limit is not None:
            sig += f"|limit:{limit}"
        return sig + f"|thai-eval:{__version__}"

    def _signature_extra(self, config: Mapping[str, Any]) -> str:
        return f"|avg:{config['mmlu_average']}" if self.by_subject else ""


@dataclass(frozen=True, kw_only=True)
class ChoiceTask(TaskSpec):
    """ARC, HellaSwag, MMLU: one request per answer choice after the shared context; acc, acc_norm, acc_bytes."""

    choices: Callable[[Mapping[str, Any]], list[str]]
    gold: Callable[[Mapping[str, Any]], int]

    def target(self, doc: Mapping[str, Any]) -> str:
        return self.choices(doc)[self.gold(doc)]

    def requests(self, doc, shots, templates) -> DocRequests:
        ctx = self.context(doc, shots, templates)
        return DocRequests(ctx, tuple((ctx, P.TARGET_DELIMITER + c) for c in self.choices(doc)))

    def score(self, doc, output, protocol) -> dict[str, Any]:
        return {"gold": self.gold(doc), **M.multiple_choice(output["lls"], self.choices(doc), self.gold(doc))}


@dataclass(frozen=True, kw_only=True)
class TruthfulQATask(TaskSpec):
    """TruthfulQA MC: the MC1 targets then the MC2 targets after the fixed QA preamble; mc1, mc2 (both variants)."""

    def requests(self, doc, shots, templates) -> DocRequests:
        ctx = self.context(doc, shots, templates)
        mc1 = list(P.get(P.get(doc, "mc1_targets"), "choices"))
        mc2 = list(P.get(P.get(doc, "mc2_targets"), "choices"))
        return DocRequests(ctx, tuple((ctx, P.TARGET_DELIMITER + c) for c in mc1 + mc2), n_mc1=len(mc1))

    def score(self, doc, output, protocol) -> dict[str, Any]:
        """``mc2`` is the protocol's variant; both are always returned as ``mc2_lb`` and ``mc2_mask``."""
        lls = output["lls"]
        n1 = len(P.get(doc, "mc1_targets")["choices"])
        labels = list(P.get(P.get(doc, "mc2_targets"), "labels"))
        lb, mask = M.mc2_lb(lls[n1:], labels), M.mc2_mask(lls[n1:], labels)
        return {"mc1": M.mc1(lls[:n1]), "mc2": lb if protocol.mc2 == "lb" else mask, "mc2_lb": lb, "mc2_mask": mask}

    def config(self, protocol: H6Protocol) -> dict[str, Any]:
        return {"mc2": protocol.mc2}

    def _signature_extra(self, config: Mapping[str, Any]) -> str:
        return f"|mc2:{config['mc2']}"


@dataclass(frozen=True, kw_only=True)
class WinograndeTask(TaskSpec):
    """Winogrande partial scoring: each option fills the blank in the context; the rest of the sentence is scored."""

    def target(self, doc: Mapping[str, Any]) -> str:
        return P.winogrande_target(doc)

    def requests(self, doc, shots, templates) -> DocRequests:
        # LB ``append_context``: split the prompt on "\n\n", drop the query filled with the correct
        # option, and put each option's partial context in its place.
        ctx = self.context(doc, shots, templates)
        prefix = ctx.split(P.FEWSHOT_DELIMITER)[:-1]
        target = P.TARGET_DELIMITER + P.winogrande_target(doc)
        options = (P.get(doc, "option1"), P.get(doc, "option2"))
        return DocRequests(
            ctx, tuple((P.FEWSHOT_DELIMITER.join([*prefix, P.winogrande_context(doc, o)]), target) for o in options)
        )

    def score(self, doc, output, protocol) -> dict[str, Any]:
        g, pred = P.winogrande_gold(doc), M.argmax_first(output["lls"])
        return {"gold": g, "pred": pred, "acc": float(pred == g)}


@dataclass(frozen=True, kw_only=True)
class GenerationSpec(TaskSpec):
    """GSM8K: greedy generation with the protocol's stops and budget; strict and flexible exact match."""

    uses_loglikelihood: ClassVar[bool] = False

    def target(self, doc: Mapping[str, Any]) -> str:
        return P.get(doc, "answer")

    def requests(self, doc, shots, templates) -> DocRequests:
        return DocRequests(self.context(doc, shots, templates))

    def model_call(self, model: Model, protocol: H6Protocol) -> Callable[[list[Any]], list[Any]]:
        return partial(
            model.generate, max_new_tokens=protocol.max_new_tokens, stop=list(protocol.gsm8k_stops), temperature=0.0
        )

    def model_inputs(self, batch: Sequence[DocRequests]) -> list[Any]:
        return [r.prompt for r in batch]

    def outputs(self, batch: Sequence[DocRequests], results: Sequence[Any]) -> list[dict[str, Any]]:
        if len(results) != len(batch):
            raise RuntimeError(f"model returned {len(results)} generations for {len(batch)} prompts")
        return [{"generation": t} for t in results]

    def score(self, doc, output, protocol) -> dict[str, Any]:
        """Exact match of the completion with its thinking cut (a failed answer extracts nothing)."""
        try:
            return M.gsm8k(split_reply(output["generation"], protocol.thinking).scored, P.get(doc, "answer"))
        except ValueError as exc:
            raise DocError(str(exc), "answer") from None

    def config(self, protocol: H6Protocol) -> dict[str, Any]:
        """Stops, budget, decoding; the thinking option only when not the default (config ids of earlier runs)."""
        return {
            "gsm8k_stops": list(protocol.gsm8k_stops),
            "max_new_tokens": protocol.max_new_tokens,
            "decoding": "greedy",
            **config_entry(protocol.thinking),
        }

    def _signature_extra(self, config: Mapping[str, Any]) -> str:
        return (
            f"|stops:{'+'.join(config['gsm8k_stops'])}|max_new:{config['max_new_tokens']}"
            f"|{option_of(config).signature()}"
        )


_QA = {"query": P.QUESTION_ANSWER_TEMPLATE}
TASK_SPECS: dict[str, TaskSpec] = {
    s.name: s
    for s in (
        ChoiceTask(
            name="th_arc",
            data_name="th_arc_challenge",
            num_fewshot=25,
            metrics=("acc_norm", "acc", "acc_bytes"),
            text=P.question_text,
            choices=P.arc_choices,
            gold=P.arc_gold,
            templates=_QA,
        ),
        ChoiceTask(
            name="th_hellaswag",
            data_name="th_hellaswag",
            num_fewshot=10,
            metrics=("acc_norm", "acc", "acc_bytes"),
            text=P.hellaswag_text,
            choices=P.hellaswag_choices,
            gold=P.hellaswag_gold,
            templates={"query": P.HELLASWAG_TEMPLATE},
        ),
        ChoiceTask(
            name="th_mmlu",
            data_name="th_mmlu",
            num_fewshot=5,
            metrics=("acc", "acc_norm", "acc_bytes"),
            text=P.mmlu_text,
            choices=P.mmlu_choices,
            gold=P.mmlu_gold,
            shots="first_n",
            by_subject=True,
            templates={"description": P.MMLU_DESCRIPTION, "query": P.MMLU_TEMPLATE, "option": P.MMLU_OPTION_TEMPLATE},
        ),
        TruthfulQATask(
            name="th_truthfulqa",
            data_name="th_truthfulqa",
            num_fewshot=0,
            metrics=("mc2", "mc1", "mc2_lb", "mc2_mask"),
            text=P.truthfulqa_text,
            shots="none",
            templates={"preamble": P.TRUTHFULQA_QA_PROMPT, "query": P.TRUTHFULQA_TEMPLATE},
        ),
        WinograndeTask(
            name="th_winogrande", data_name="th_winogrande", num_fewshot=5, metrics=("acc",), text=P.winogrande_text
        ),
        GenerationSpec(
            name="th_gsm8k",
            data_name="th_gsm8k",
            num_fewshot=5,
            metrics=("exact_match", "flexible_match"),
            text=P.question_text,
            templates=_QA,
        ),
    )
}
#: The six tasks in the paper's Table 4 order.
TASKS = tuple(TASK_SPECS)
#: Metrics each task reports (the headline first).
TASK_METRICS = {name: spec.metrics for name, spec in TASK_SPECS.items()}
_ALIASES = {
    "th_arc_challenge": "th_arc",
    "arc": "th_arc",
    "arc_challenge": "th_arc",
    "hellaswag": "th_hellaswag",
    "mmlu": "th_mmlu",
    "truthfulqa": "th_truthfulqa",
    "winogrande": "th_winogrande",
    "gsm8k": "th_gsm8k",
}


def get_task(name: str) -> TaskSpec:
    """The task named ``name`` (``th_arc`` ..., also ``th_arc_challenge``, ``arc``, ``gsm8k`` ...)."""
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in TASK_SPECS:
        raise ValueError(f"unknown Thai-H6 task {name!r}; expected one of {TASKS}")
    return TASK_SPECS[key]


def templates_for(spec: TaskSpec, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The task's templates with ``overrides`` applied (unknown names are an error)."""
    out = dict(spec.templates)
    for key, value in (overrides or {}).items():
        if key not in out:
            raise ValueError(f"{spec.name} has no template {key!r}; it has {sorted(out)}")
        out[key] = value
    return out


# --- functions over a spec (the lm-eval parity benchmark and the tests call these) -----------------------------
def choices(spec: TaskSpec, doc: Mapping[str, Any]) -> list[str]:
    """Answer choices of a multiple-choice task (without the leading space)."""
    if not isinstance(spec, ChoiceTask):
        raise ValueError(f"{spec.name} is not a multiple-choice task")
    return spec.choices(doc)


def gold(spec: TaskSpec, doc: Mapping[str, Any]) -> int:
    """Index of the correct choice (ARC, HellaSwag, MMLU, Winogrande)."""
    if isinstance(spec, ChoiceTask):
        return spec.gold(doc)
    if isinstance(spec, WinograndeTask):
        return P.winogrande_gold(doc)
    raise ValueError(f"{spec.name} has no gold index")


def fewshot_context(
    spec: TaskSpec, doc: Mapping[str, Any], shots: Sequence[Mapping[str, Any]], templates: Mapping[str, str]
) -> str:
    """See :meth:`TaskSpec.context`."""
    return spec.context(doc, shots, templates)


def build_requests(
    spec: TaskSpec, doc: Mapping[str, Any], shots: Sequence[Mapping[str, Any]], templates: Mapping[str, str]
) -> DocRequests:
    """See :meth:`TaskSpec.requests`."""
    return spec.requests(doc, shots, templates)


def process_results(
    spec: TaskSpec, doc: Mapping[str, Any], output: Any, *, protocol: H6Protocol = LEADERBOARD
) -> dict[str, Any]:
    """Metric values of one document from the model's output: the list of log-likelihoods (one per request) or,
    for GSM8K, the generated text."""
    return spec.score(doc, {"generation" if not spec.uses_loglikelihood else "lls": output}, protocol)
