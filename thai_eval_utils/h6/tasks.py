"""The six Thai-H6 tasks and their labelled variants as a run uses them (spec: Tasks, shots, metrics; Prompt
assembly; LB ``lm_eval/tasks/{arc,hellaswag,hendrycks_test,truthfulqa,winogrande,gsm8k}.py``): an :class:`H6Task`
applies what a run's protocol sets to a task's declaration (:mod:`.declarations`, :mod:`.variants`).
``h6.evaluate`` runs them with ``tasks.runner.run_task``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

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
from thai_eval_utils.h6.protocol import GSM8K_STOPS_H, GSM8K_STOPS_LB, LEADERBOARD, VARIANTS, H6Protocol
from thai_eval_utils.tasks import generative_mc as MC
from thai_eval_utils.tasks.declared import GenerationTask, MultipleChoiceTask
from thai_eval_utils.tasks.shaping import FirstN
from thai_eval_utils.tasks.thinking import config_entry, option_of, split_reply

DocError = P.DocError
GSM8K_CHAT, GENERATIVE_MC = VARIANTS
#: doc, templates -> the query text of one document.
DocText = Callable[[Mapping[str, Any], Mapping[str, str]], str]
#: A few-shot pool: a list of docs, or (MMLU) subject -> list of docs.
Pool = Sequence[Mapping[str, Any]] | Mapping[str, Sequence[Mapping[str, Any]]] | None


@dataclass(frozen=True)
class DocRequests:
    """What one document asks of the model.

    ``requests`` are ``(context, continuation)`` pairs for ``loglikelihood`` (empty for GSM8K; TruthfulQA: the MC1
    targets, then the MC2 targets); ``prompt`` is the shared context (GSM8K: the generation prompt). ``messages``: the
    chat a variant sends (``(role, content)`` turns, :mod:`.variants`; empty for the paper's tasks).
    """

    prompt: str
    requests: tuple[tuple[str, str], ...] = ()
    messages: tuple[tuple[str, str], ...] = ()

    @property
    def sha256(self) -> str:
        """Hash of everything sent to the model: the prompt and every request (and a variant's chat turns)."""
        parts: list[Any] = [self.prompt, self.requests, *([self.messages] if self.messages else [])]
        blob = json.dumps(parts, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True, kw_only=True)
class H6Task:
    """A Thai-H6 task as a run uses it: its declaration (``declared``: a :class:`~thai_eval_utils.tasks.declared.
    MultipleChoiceTask` or :class:`~thai_eval_utils.tasks.declared.GenerationTask`, :mod:`.declarations` and
    :mod:`.variants`) says its data, choices, gold, per-document requests, few-shot sampler and metrics; this adds
    what the protocol sets per run (templates, shots, sampler seed, GSM8K's stops and budget, mc2's variant) and
    Thai-H6's stored run layout (config, signature, record fields).

    Attributes:
        declared: the task's declaration.
        text: doc, templates -> the query text (a generative-mc variant: the question).
        templates: the LB templates (each can be overridden per run).
        by_subject: MMLU: ``limit``, the few-shot pool, the description and the average go per subject.
        fewshot_target: a few-shot example's answer when it is not the gold choice (Winogrande: the sentence after
            the blank).
        variant: the labelled variant the task is (``protocol.VARIANTS``), None for the paper's six.
        options: a generative-mc variant's doc -> (choices in the order asked, gold index).
        order: a generative-mc variant's choice order (recorded in its config).
    """

    declared: MultipleChoiceTask | GenerationTask
    text: DocText
    templates: Mapping[str, str] = field(default_factory=dict)
    by_subject: bool = False
    fewshot_target: Callable[[Mapping[str, Any]], str] | None = None
    variant: str | None = None
    options: Callable[[Mapping[str, Any]], tuple[list[str], int]] | None = None
    order: str = "as in the data"

    # --- what the declaration says --------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The paper's Table 4 column (``th_arc`` ...), or a variant's own name (``th_gsm8k.chat``)."""
        return self.declared.name

    @property
    def num_fewshot(self) -> int:
        """LB's shots."""
        return self.declared.fewshot.n if self.declared.fewshot is not None else 0

    @property
    def metrics(self) -> tuple[str, ...]:
        """The metrics reported, the headline (the Thai-H6 average's) first."""
        return self.declared.metric_names

    @property
    def shots(self) -> str:
        """``sampled`` (the protocol's sampler), ``first_n`` (the first shots of the pool) or ``none``."""
        fewshot = self.declared.fewshot
        if fewshot is None:
            return "none"
        return "first_n" if isinstance(fewshot.chooser, FirstN) else "sampled"

    @property
    def kind(self) -> str:
        """How the runner (``tasks.runner.run_task``) scores it: ``multiple_choice`` (log-likelihoods) or
        ``generation``."""
        return self.declared.kind

    @property
    def uses_loglikelihood(self) -> bool:
        """Whether the task scores by log-likelihood (False: it generates)."""
        return self.kind == "multiple_choice"

    @property
    def chat(self) -> bool:
        """Whether the model gets a chat (``model.chat``; a variant's) rather than a plain prompt."""
        return self.variant is not None

    @property
    def data_task(self) -> str:
        """The Thai-H6 task whose data it scores (a variant: its paper task's)."""
        return self.name.partition(".")[0]

    @property
    def label(self) -> str:
        """Its name in tables (a variant: ``th_gsm8k (chat)``, ``th_arc (generative-mc)``)."""
        if self.variant is None:
            return self.name
        return f"{self.data_task} ({'chat' if self.variant == GSM8K_CHAT else self.variant})"

    @property
    def headline(self) -> str:
        """The metric that enters the Thai-H6 average."""
        return self.metrics[0]

    @property
    def truthfulqa(self) -> bool:
        """Whether its metrics read TruthfulQA's MC1 / MC2 targets (gold: MC1's true target)."""
        return any(isinstance(m, M.TruthfulQAMetric) for m in self.declared.scorers)

    def choices(self, doc: Mapping[str, Any]) -> list[str]:
        """The texts the log-likelihoods score (without the leading space), in request order."""
        return [str(c) for c in self.declared.choices(doc)]  # type: ignore[union-attr,operator]

    def gold(self, doc: Mapping[str, Any]) -> int:
        """The gold choice's index."""
        return int(self.declared.gold(doc))  # type: ignore[union-attr,operator]

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
                why = (
                    "(one user turn per question)"
                    if self.variant == GENERATIVE_MC
                    else "only (the QA preamble is fixed)"
                )
                raise ValueError(f"{self.name} is zero-shot {why}; got num_fewshot={k}")
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
        if self.fewshot_target is not None:
            return self.fewshot_target(doc)
        if self.kind == "generation":
            return self.declared.reference(doc)  # type: ignore[union-attr,operator]
        return self.choices(doc)[self.gold(doc)]

    def context(self, doc: Mapping[str, Any], shots: Sequence[Mapping[str, Any]], templates: Mapping[str, str]) -> str:
        """``description + "\\n\\n"`` (by subject), examples ``text + " " + target`` joined by ``"\\n\\n"``, the query."""
        parts = [self.text(ex, templates) + P.TARGET_DELIMITER + self.target(ex) for ex in shots]
        parts.append(self.text(doc, templates))
        desc = P.mmlu_description(doc, templates) + P.FEWSHOT_DELIMITER if "description" in templates else ""
        return desc + P.FEWSHOT_DELIMITER.join(parts)

    def requests(
        self, doc: Mapping[str, Any], shots: Sequence[Mapping[str, Any]], templates: Mapping[str, str]
    ) -> DocRequests:
        """The requests of ``doc`` given its few-shot examples ``shots`` (in prompt order): log-likelihood pairs, a
        prompt to generate from, or a variant's chat (GSM8K: the examples as user and assistant turns;
        generative-mc: the question and its lettered choices in one user turn)."""
        if self.variant == GENERATIVE_MC:
            text = MC.prompt(self.text(doc, templates), self.options(doc)[0], templates[GENERATIVE_MC])  # type: ignore[misc]
            return DocRequests(text, messages=(("user", text),))
        if self.variant == GSM8K_CHAT:
            turns = [
                turn for ex in shots for turn in (("user", self.text(ex, templates)), ("assistant", self.target(ex)))
            ]
            query = self.text(doc, templates)
            return DocRequests(query, messages=(*turns, ("user", query)))
        ctx = self.context(doc, shots, templates)
        if self.kind == "generation":
            return DocRequests(ctx)
        if self.declared.requests is not None:  # type: ignore[union-attr]
            return DocRequests(ctx, tuple(self.declared.requests(doc, ctx)))  # type: ignore[union-attr]
        return DocRequests(ctx, tuple((ctx, P.TARGET_DELIMITER + c) for c in self.choices(doc)))

    # --- running and scoring -------------------------------------------------------------------------------
    def model_call(self, model: Model, protocol: H6Protocol) -> Callable[[list[Any]], list[Any]]:
        """The model method that answers :meth:`model_inputs` (a generating task's; the runner sends a log-likelihood
        task's requests to ``model.loglikelihood`` itself)."""
        if self.variant == GENERATIVE_MC:
            return partial(model.chat, max_new_tokens=protocol.max_new_tokens, temperature=0.0)
        method = model.chat if self.chat else model.generate
        return partial(method, max_new_tokens=protocol.max_new_tokens, stop=list(self.stops(protocol)), temperature=0.0)

    def model_inputs(self, batch: Sequence[DocRequests]) -> list[Any]:
        """What one model call gets for a batch of documents (a generating task's prompts or chats)."""
        if self.chat:
            return [[{"role": role, "content": content} for role, content in r.messages] for r in batch]
        return [r.prompt for r in batch]

    def stops(self, protocol: H6Protocol) -> tuple[str, ...]:
        """GSM8K's stop strings: the protocol's; in chat, LB's completion stops (whose ``":"`` would cut a chat
        reply at its first colon) become lm-eval 0.4.13's (``Question:``, ``</s>``, ``<|im_end|>``), the stops
        ``lm_eval --apply_chat_template`` sends with ``gsm8k``."""
        if self.chat and protocol.gsm8k_stops == GSM8K_STOPS_LB:
            return GSM8K_STOPS_H
        return protocol.gsm8k_stops

    def score(self, doc: Mapping[str, Any], output: Mapping[str, Any], protocol: H6Protocol) -> dict[str, Any]:
        """Metric values (and gold, predictions) of one document from its model output, by the metric objects."""
        if self.variant == GENERATIVE_MC:  # the letter read after the thinking block; accuracy against the gold
            choices, gold = self.options(doc)  # type: ignore[misc]
            return MC.score(output["generation"], gold, len(choices), protocol.thinking)
        metrics = self.declared.scorers
        if self.truthfulqa:
            mc2 = {"mc2": M.MC2(protocol.mc2)}
            values = {m.name: mc2.get(m.name, m).score_document(doc, output["lls"]) for m in metrics}  # type: ignore[attr-defined]
            return {k: values[k] for k in ("mc1", "mc2", "mc2_lb", "mc2_mask")}
        if self.kind == "multiple_choice":
            return self._choice_scores(doc, output["lls"])
        return self._gsm8k(doc, output["generation"], protocol)

    def _choice_scores(self, doc: Mapping[str, Any], lls: Sequence[float]) -> dict[str, Any]:
        """gold, each accuracy and its prediction (``pred`` / ``pred_norm`` / ``pred_bytes``), in the stored order."""
        choices, gold = self.choices(doc), self.gold(doc)
        out: dict[str, Any] = {"gold": gold}
        for m in self.declared.scorers:
            out[m.name] = m.score_choices(lls, choices, gold)  # type: ignore[attr-defined]
            out[_PRED[m.name]] = m.predict(lls, choices)  # type: ignore[attr-defined]
        # Winogrande's record: gold, pred, acc
        keys = ("pred", "acc") if self.fewshot_target is not None else (*_PRED, *_PRED.values())
        return {"gold": gold, **{k: out[k] for k in keys}}

    def _gsm8k(self, doc: Mapping[str, Any], generation: str, protocol: H6Protocol) -> dict[str, Any]:
        """Exact match of the completion with its thinking cut (a failed answer extracts nothing)."""
        try:
            answer, reply = self.target(doc), split_reply(generation, protocol.thinking).scored
            out = M.gsm8k(reply, answer)
            out.update({m.name: m.score_item(reply, answer) for m in self.declared.scorers})
            return out
        except ValueError as exc:
            raise DocError(str(exc), "answer") from None

    def scores(
        self, table: pd.DataFrame, signature: str, protocol: H6Protocol
    ) -> tuple[dict[str, Score], dict[str, Score]]:
        """(metric -> Score, headline first; subject -> accuracy Score, by subject only)."""
        return M.task_scores(
            self.name, self.metrics, table, signature, by_subject=self.by_subject, average=protocol.mmlu_average
        )

    def config(self, protocol: H6Protocol) -> dict[str, Any]:
        """The protocol options, beyond shots, sampler and BOS, that change this task's numbers (GSM8K's thinking
        option only when not the default: the config ids of earlier runs)."""
        if self.truthfulqa:
            return {"mc2": protocol.mc2}
        subject = {"mmlu_average": protocol.mmlu_average} if self.by_subject else {}
        decoding = {"max_new_tokens": protocol.max_new_tokens, "decoding": "greedy", **config_entry(protocol.thinking)}
        if self.variant == GENERATIVE_MC:
            mc = {"variant": GENERATIVE_MC, "format": "chat, zero-shot, letter", "choice_order": self.order}
            return {**subject, **mc, **decoding}
        if self.kind == "multiple_choice":
            return subject
        chat = {"variant": GSM8K_CHAT, "format": "chat, few-shot as turns"} if self.chat else {}
        return {"gsm8k_stops": list(self.stops(protocol)), **decoding, **chat}

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
        if self.truthfulqa:
            return f"|mc2:{config['mc2']}"
        avg = f"|avg:{config['mmlu_average']}" if self.by_subject else ""
        if self.kind == "multiple_choice":
            return avg
        thinking = f"|max_new:{config['max_new_tokens']}|{option_of(config).signature()}"
        if self.variant == GENERATIVE_MC:
            return f"|variant:{GENERATIVE_MC}{avg}{thinking}"
        stops = f"|stops:{'+'.join(config['gsm8k_stops'])}"
        return (f"|variant:{GSM8K_CHAT}" if self.chat else "") + stops + thinking


#: A choice metric's stored prediction field.
_PRED = {"acc": "pred", "acc_norm": "pred_norm", "acc_bytes": "pred_bytes"}


TASK_SPECS: dict[str, H6Task] = {
    s.name: s
    for s in (
        H6Task(declared=D.TH_ARC, text=P.question_text, templates=dict(D.QA_TEMPLATES)),
        H6Task(declared=D.TH_HELLASWAG, text=P.hellaswag_text, templates=dict(D.HELLASWAG_TEMPLATES)),
        H6Task(declared=D.TH_MMLU, text=P.mmlu_text, templates=dict(D.MMLU_TEMPLATES), by_subject=True),
        H6Task(declared=D.TH_TRUTHFULQA, text=P.truthfulqa_text, templates=dict(D.TRUTHFULQA_TEMPLATES)),
        H6Task(declared=D.TH_WINOGRANDE, text=P.winogrande_prompt, fewshot_target=P.winogrande_target),
        H6Task(declared=D.TH_GSM8K, text=P.question_text, templates=dict(D.QA_TEMPLATES)),
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


def get_task(name: str) -> H6Task:
    """The task named ``name`` (``th_arc`` ..., also ``th_arc_challenge``, ``arc``, ``gsm8k`` ...)."""
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in TASK_SPECS:
        raise ValueError(f"unknown Thai-H6 task {name!r}; expected one of {TASKS}")
    return TASK_SPECS[key]


def templates_for(spec: H6Task, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The task's templates with ``overrides`` applied (unknown names are an error)."""
    out = dict(spec.templates)
    for key, value in (overrides or {}).items():
        if key not in out:
            raise ValueError(f"{spec.name} has no template {key!r}; it has {sorted(out)}")
        out[key] = value
    return out


# --- functions over a spec (the lm-eval parity benchmark and the GPU benchmarks call these) --------------------
def gold(spec: H6Task, doc: Mapping[str, Any]) -> int:
    """Index of the correct choice (ARC, HellaSwag, MMLU, Winogrande)."""
    if not spec.uses_loglikelihood or spec.truthfulqa:
        raise ValueError(f"{spec.name} has no gold index")
    return spec.gold(doc)


def build_requests(
    spec: H6Task, doc: Mapping[str, Any], shots: Sequence[Mapping[str, Any]], templates: Mapping[str, str]
) -> DocRequests:
    """See :meth:`H6Task.requests`."""
    return spec.requests(doc, shots, templates)


def process_results(
    spec: H6Task, doc: Mapping[str, Any], output: Any, *, protocol: H6Protocol = LEADERBOARD
) -> dict[str, Any]:
    """Metric values of one document from the model's output: the list of log-likelihoods (one per request) or,
    for GSM8K, the generated text."""
    return spec.score(doc, {"generation" if not spec.uses_loglikelihood else "lls": output}, protocol)
