"""The six Thai-H6 tasks and how each is run (spec: Tasks, shots, metrics; Prompt assembly; LB
``lm_eval/tasks/{arc,hellaswag,hendrycks_test,truthfulqa,winogrande,gsm8k}.py``).

Each task is declared in :mod:`.declarations` (its choices, gold, per-document requests, sampler and metric
objects); a :class:`PaperTask` applies what a run's protocol sets to it. A :class:`TaskSpec` (the base the
labelled variants share) carries a task's run behaviour: which documents ``limit`` keeps, where each document's
few-shot examples come from, how one document plus its examples becomes :class:`DocRequests` (``(context,
continuation)`` log-likelihood pairs, or a prompt to generate from), a generating task's model call, which protocol
options enter its config, and how one document's output is scored. MMLU's limit, few-shot pool, description and
average go per subject (``by_subject``). ``h6.evaluate`` runs them with ``tasks.runner.run_task``.
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
from thai_eval_utils.core.protocols import Model
from thai_eval_utils.core.provenance import Score
from thai_eval_utils.h6 import declarations as D
from thai_eval_utils.h6 import metrics as M
from thai_eval_utils.h6 import prompts as P
from thai_eval_utils.h6.data import H6TaskData
from thai_eval_utils.h6.fewshot import default_seed, sampler_object
from thai_eval_utils.h6.protocol import LEADERBOARD, H6Protocol
from thai_eval_utils.tasks.declared import GenerationTask, MultipleChoiceTask
from thai_eval_utils.tasks.shaping import FirstN
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
    def kind(self) -> str:
        """How the runner (``tasks.runner.run_task``) scores it: ``multiple_choice`` (log-likelihoods) or
        ``generation``."""
        return "multiple_choice" if self.uses_loglikelihood else "generation"

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
        return sampler_object(name, seed).choose(n_pool, k, [None] * len(docs))

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
        """The model method that answers :meth:`model_inputs` (a generating task's; the runner sends a log-likelihood
        task's requests to ``model.loglikelihood`` itself)."""
        raise NotImplementedError

    def model_inputs(self, batch: Sequence[DocRequests]) -> list[Any]:
        """What one model call gets for a batch of documents (a generating task's prompts or chats)."""
        raise NotImplementedError

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
class PaperTask(TaskSpec):
    """One of the paper's six tasks: its declaration (``declared``, a :class:`~thai_eval_utils.tasks.declared.
    MultipleChoiceTask` or :class:`~thai_eval_utils.tasks.declared.GenerationTask`) says its choices, gold, per-document
    requests, few-shot sampler and metric objects; this adds what the protocol sets per run (templates, shots,
    sampler seed) and Thai-H6's stored run layout. ``fewshot_target``: a few-shot example's answer when it is not
    the gold choice (Winogrande: the sentence after the blank)."""

    declared: MultipleChoiceTask | GenerationTask
    fewshot_target: Callable[[Mapping[str, Any]], str] | None = None

    @property
    def uses_loglikelihood(self) -> bool:  # type: ignore[override]
        return self.declared.kind == "multiple_choice"

    @property
    def truthfulqa(self) -> bool:
        """Whether its metrics read TruthfulQA's MC1 / MC2 targets (gold: MC1's true target)."""
        return any(isinstance(m, M.TruthfulQAMetric) for m in self.declared.scorers)

    def choices(self, doc: Mapping[str, Any]) -> list[str]:
        """The texts the log-likelihoods score (without the leading space), in request order."""
        return [str(c) for c in self.declared.choices(doc)]  # type: ignore[union-attr,operator]

    def gold(self, doc: Mapping[str, Any]) -> int:
        """The gold choice's index."""
        return int(self.declared.gold(doc))  # type: ignore[operator]

    def target(self, doc: Mapping[str, Any]) -> str:
        if self.fewshot_target is not None:
            return self.fewshot_target(doc)
        if self.declared.kind == "generation":
            return self.declared.reference(doc)  # type: ignore[union-attr,operator]
        return self.choices(doc)[self.gold(doc)]

    def requests(self, doc, shots, templates) -> DocRequests:
        ctx = self.context(doc, shots, templates)
        if self.declared.kind == "generation":
            return DocRequests(ctx)
        if self.declared.requests is not None:  # type: ignore[union-attr]
            return DocRequests(ctx, tuple(self.declared.requests(doc, ctx)))  # type: ignore[union-attr]
        n_mc1 = len(P.get(P.get(doc, "mc1_targets"), "choices")) if self.truthfulqa else 0
        return DocRequests(ctx, tuple((ctx, P.TARGET_DELIMITER + c) for c in self.choices(doc)), n_mc1=n_mc1)

    def score(self, doc, output, protocol) -> dict[str, Any]:
        """Every declared metric's value of one document (and its predictions), by the metric objects."""
        metrics = self.declared.scorers
        if self.truthfulqa:
            mc2 = {"mc2": M.MC2(protocol.mc2)}
            values = {m.name: mc2.get(m.name, m).score_document(doc, output["lls"]) for m in metrics}  # type: ignore[attr-defined]
            return {k: values[k] for k in ("mc1", "mc2", "mc2_lb", "mc2_mask")}
        if self.declared.kind == "multiple_choice":
            return self._choice_scores(doc, output["lls"])
        return self._gsm8k(doc, output["generation"], protocol)

    def _choice_scores(self, doc: Mapping[str, Any], lls: Sequence[float]) -> dict[str, Any]:
        """gold, each accuracy and its prediction (``pred`` / ``pred_norm`` / ``pred_bytes``), in the stored order."""
        choices, gold = self.choices(doc), self.gold(doc)
        out: dict[str, Any] = {"gold": gold}
        preds: dict[str, int] = {}
        for m in self.declared.scorers:
            out[m.name] = m.score_choices(lls, choices, gold)  # type: ignore[attr-defined]
            preds[_PRED[m.name]] = m.predict(lls, choices)  # type: ignore[attr-defined]
        if self.fewshot_target is not None:  # Winogrande's record: gold, pred, acc
            return {"gold": gold, "pred": preds["pred"], "acc": out["acc"]}
        return {
            **{k: out[k] for k in ("gold", "acc", "acc_norm", "acc_bytes")},
            **{k: preds[k] for k in ("pred", "pred_norm", "pred_bytes")},
        }

    def _gsm8k(self, doc: Mapping[str, Any], generation: str, protocol: H6Protocol) -> dict[str, Any]:
        """Exact match of the completion with its thinking cut (a failed answer extracts nothing)."""
        try:
            answer, reply = self.target(doc), split_reply(generation, protocol.thinking).scored
            out = M.gsm8k(reply, answer)
            out.update({m.name: m.score_item(reply, answer) for m in self.declared.scorers})
            return out
        except ValueError as exc:
            raise DocError(str(exc), "answer") from None

    def config(self, protocol: H6Protocol) -> dict[str, Any]:
        return {"mc2": protocol.mc2} if self.truthfulqa else super().config(protocol)

    def _signature_extra(self, config: Mapping[str, Any]) -> str:
        return f"|mc2:{config['mc2']}" if self.truthfulqa else super()._signature_extra(config)


#: A choice metric's stored prediction field.
_PRED = {"acc": "pred", "acc_norm": "pred_norm", "acc_bytes": "pred_bytes"}


@dataclass(frozen=True, kw_only=True)
class GenerationSpec(PaperTask):
    """GSM8K: greedy generation with the protocol's stops and budget; strict and flexible exact match."""

    def model_call(self, model: Model, protocol: H6Protocol) -> Callable[[list[Any]], list[Any]]:
        return partial(
            model.generate, max_new_tokens=protocol.max_new_tokens, stop=list(protocol.gsm8k_stops), temperature=0.0
        )

    def model_inputs(self, batch: Sequence[DocRequests]) -> list[Any]:
        return [r.prompt for r in batch]

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


def _paper(
    declared: MultipleChoiceTask | GenerationTask,
    text: DocText,
    templates: Mapping[str, str],
    *,
    by_subject: bool = False,
    fewshot_target: Callable[[Mapping[str, Any]], str] | None = None,
) -> PaperTask:
    """The paper task of a declaration, with its query text over the (overridable) templates."""
    fewshot = declared.fewshot
    sampler = fewshot.chooser if fewshot is not None else None
    shots = "none" if fewshot is None else "first_n" if isinstance(sampler, FirstN) else "sampled"
    kind = GenerationSpec if declared.kind == "generation" else PaperTask
    return kind(
        name=declared.name,
        data_name=declared.data,
        num_fewshot=fewshot.n if fewshot is not None else 0,
        metrics=declared.metric_names,
        text=text,
        templates=dict(templates),
        shots=shots,
        by_subject=by_subject,
        declared=declared,
        fewshot_target=fewshot_target,
    )


TASK_SPECS: dict[str, TaskSpec] = {
    s.name: s
    for s in (
        _paper(D.TH_ARC, P.question_text, D.QA_TEMPLATES),
        _paper(D.TH_HELLASWAG, P.hellaswag_text, D.HELLASWAG_TEMPLATES),
        _paper(D.TH_MMLU, P.mmlu_text, D.MMLU_TEMPLATES, by_subject=True),
        _paper(D.TH_TRUTHFULQA, P.truthfulqa_text, D.TRUTHFULQA_TEMPLATES),
        _paper(D.TH_WINOGRANDE, P.winogrande_text, {}, fewshot_target=P.winogrande_target),
        _paper(D.TH_GSM8K, P.question_text, D.QA_TEMPLATES),
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
    """Answer choices of a multiple-choice task (without the leading space): ARC, HellaSwag, MMLU."""
    if not is_choice_task(spec):
        raise ValueError(f"{spec.name} is not a multiple-choice task")
    return cast(PaperTask, spec).choices(doc)


def gold(spec: TaskSpec, doc: Mapping[str, Any]) -> int:
    """Index of the correct choice (ARC, HellaSwag, MMLU, Winogrande)."""
    if not isinstance(spec, PaperTask) or not spec.uses_loglikelihood or spec.truthfulqa:
        raise ValueError(f"{spec.name} has no gold index")
    return spec.gold(doc)


def is_choice_task(spec: TaskSpec) -> bool:
    """ARC, HellaSwag, MMLU: one request per answer choice after the shared context (not TruthfulQA's MC1 + MC2
    targets, not Winogrande's partial scoring)."""
    return (
        isinstance(spec, PaperTask)
        and spec.uses_loglikelihood
        and not spec.truthfulqa
        and spec.declared.requests is None  # type: ignore[union-attr]
    )


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
