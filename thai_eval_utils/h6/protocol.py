"""Thai-H6 protocol options as one object (spec ``thai_h6.md``: Few-shot sampling, Metrics, GSM8K; docs/protocol_notes.md):
every option that changes a number, with the Open LLM Leaderboard preset (LB, the paper's protocol) and the
lm-evaluation-harness 0.4.13 preset.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from thai_eval_utils.core.protocols import stop_strings
from thai_eval_utils.h6.fewshot import SAMPLERS
from thai_eval_utils.tasks.thinking import DEFAULT as THINKING_DEFAULT
from thai_eval_utils.tasks.thinking import ThinkingOption

#: GSM8K stop strings of LB (``gsm8k.py`` ``greedy_until``; ":" cuts Thai rationales at their first colon).
GSM8K_STOPS_LB = (":", "Question:", "Question")
#: GSM8K stop strings of lm-eval 0.4.13 (``gsm8k.yaml`` ``generation_kwargs.until``).
GSM8K_STOPS_H = ("Question:", "</s>", "<|im_end|>")
#: GSM8K generation budget (LB and lm-eval: at most 256 new tokens).
GSM8K_MAX_NEW_TOKENS = 256
#: Labelled variants for today's instruct and reasoning models (``h6.variants``; docs/protocol_notes.md): GSM8K in
#: the model's chat template, and the five choice tasks asked for a letter. Not the paper's protocol: each runs under
#: its own task name and signature and never enters the H6 average or the paper tables.
VARIANTS = ("gsm8k-chat", "generative-mc")


def gsm8k_stops(option: str | Sequence[str]) -> tuple[str, ...]:
    """Stop strings for ``option``: "lb", "h" (a string names a preset), or a list or tuple of strings (anything
    else is a ``ThaiEvalDataError`` naming ``gsm8k_stops``)."""
    if isinstance(option, str):
        if option == "lb":
            return GSM8K_STOPS_LB
        if option == "h":
            return GSM8K_STOPS_H
        raise ValueError(f"gsm8k_stops must be 'lb', 'h' or a list of strings, not {option!r}")
    return stop_strings(option, field="gsm8k_stops")


def variant_names(option: str | Sequence[str] | None) -> tuple[str, ...]:
    """The variants ``option`` names: None or ``""`` none, ``"a,b"`` or a list; each one of :data:`VARIANTS`."""
    if option is None:
        return ()
    names = option.replace(",", " ").split() if isinstance(option, str) else list(option)
    unknown = [v for v in names if v not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown Thai-H6 variant {unknown[0]!r}; expected one of {VARIANTS}")
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class H6Protocol:
    """How a Thai-H6 task is scored: every option that changes a number (each is recorded in the run card).

    Attributes:
        num_fewshot: shots for every task; None: the task's LB count (25, 10, 5, 0, 5, 5).
        sampler: few-shot draws, "lb" (seed 42, shuffled doc order) or "h" (lm-eval 0.4.13: seed 1234, dataset
            order); MMLU always takes the first shots of its subject's dev split, TruthfulQA none.
        fewshot_seed: overrides the sampler's seed; None: its own (42 or 1234).
        add_bos_token: BOS before every context; None: the model's own setting (``load_model``: off, as LB).
            The model's setting is restored after the run.
        gsm8k_stops: GSM8K stop strings ("lb" and "h" are resolved to :data:`GSM8K_STOPS_LB` / ``_H``).
        max_new_tokens: GSM8K generation budget.
        mc2: TruthfulQA headline, "lb" (probability mass before the first false label) or "mask" (lm-eval's
            label mask).
        mmlu_average: "macro" (LB: mean of the subject accuracies) or "micro" (lm-eval's group: all questions).
        templates: template overrides by name (see ``tasks.TASK_SPECS[task].templates``); None: the LB templates.
        thinking: GSM8K's thinking cut (:mod:`thai_eval_utils.tasks.thinking`): the stored ``generation``
            is the raw completion, exact match reads it with the thinking cut (a never-closed block scores 0).
        variants: labelled variants run instead of the paper's tasks they apply to (:data:`VARIANTS`; a string or a
            list; default none): ``"gsm8k-chat"`` runs ``th_gsm8k.chat``, ``"generative-mc"`` runs
            ``<task>.generative-mc`` for ARC, HellaSwag, MMLU, TruthfulQA and Winogrande (``h6.variants``).
    """

    num_fewshot: int | None = None
    sampler: str = "lb"
    fewshot_seed: int | None = None
    add_bos_token: bool | None = None
    gsm8k_stops: tuple[str, ...] = GSM8K_STOPS_LB
    max_new_tokens: int = GSM8K_MAX_NEW_TOKENS
    mc2: str = "lb"
    mmlu_average: str = "macro"
    templates: Mapping[str, str] | None = None
    thinking: ThinkingOption = THINKING_DEFAULT
    variants: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.mc2 not in ("lb", "mask"):
            raise ValueError(f"mc2 must be 'lb' or 'mask', not {self.mc2!r}")
        if self.mmlu_average not in ("macro", "micro"):
            raise ValueError(f"mmlu_average must be 'macro' or 'micro', not {self.mmlu_average!r}")
        if self.sampler not in SAMPLERS:
            raise ValueError(f"unknown few-shot sampler {self.sampler!r}; expected one of {SAMPLERS}")
        object.__setattr__(self, "gsm8k_stops", gsm8k_stops(self.gsm8k_stops))
        object.__setattr__(self, "variants", variant_names(self.variants))
        if self.num_fewshot is not None:
            object.__setattr__(self, "num_fewshot", int(self.num_fewshot))

    def replace(self, **changes: Any) -> H6Protocol:
        """A copy with ``changes`` applied (validated like the original)."""
        return dataclasses.replace(self, **changes)


#: The Open LLM Leaderboard's harness (LB, commit b281b09): the paper's protocol and the default.
LEADERBOARD = H6Protocol()
#: lm-evaluation-harness 0.4.13's own defaults: its sampler (seed 1234, dataset order), its GSM8K stops, the
#: label-mask mc2 and the micro-averaged MMLU group (BOS stays an option: the parity runs use add_bos_token=False).
LM_EVAL = H6Protocol(sampler="h", gsm8k_stops=GSM8K_STOPS_H, mc2="mask", mmlu_average="micro")
#: Preset names accepted by :func:`protocol_from`.
PRESETS: dict[str, H6Protocol] = {"lb": LEADERBOARD, "lm_eval": LM_EVAL}


def protocol_from(preset: str | H6Protocol = "lb", **overrides: Any) -> H6Protocol:
    """A preset ("lb" or "lm_eval") with every override that is not None applied (notebook parameters).

    Example: ``protocol_from("lm_eval", num_fewshot=0, mc2=None)`` is :data:`LM_EVAL` with zero shots.
    """
    if isinstance(preset, str):
        if preset not in PRESETS:
            raise ValueError(f"unknown Thai-H6 protocol preset {preset!r}; expected one of {sorted(PRESETS)}")
        preset = PRESETS[preset]
    return preset.replace(**{k: v for k, v in overrides.items() if v is not None})
