"""The Thai LLM Leaderboard runner's log-likelihood protocol as named options (spec thai_llm_leaderboard.md sections
2.4 and 6): every quirk that moves a number is an explicit setting, recorded in each score's signature.

Defaults reproduce the protocol that produced the published numbers (the 2024 results, transformers 4.43/4.45):

- ``sum_precision="fp32"`` (quirk 1): float32 log-softmax and float32 sum. ``"bf16"`` rounds each label's summed
  log-probability to bfloat16 before the argmax, as the runner's ``.float()`` of a bf16 total does at HEAD
  (transformers >= 4.46 returns bf16 logits): it reproduces the ties and flips of that final rounding (spacing 2
  nats at |S| in 256-512), not the bf16 per-token log-softmax error or bf16 weights (run the model in bfloat16 for
  those, ``--dtype bfloat16``).
- ``sums="labels"`` (quirk 4's decision, at less cost): each label's terms after the tokens its item's labels all
  share. Those shared terms (the prompt's) are the same for every label, so the argmax, ties included, is the
  runner's, and the output layer (most of a small model's weights) runs only where the labels differ. The sums
  stored are then the label parts, not the runner's totals; ``"whole"`` sums every token but the first, as the
  runner does (the parity fixtures compare those). ``"labels"`` needs token-id scoring (a local model) and the
  float32 totals: with ``sum_precision="bf16"`` (the rounding depends on the total) or a served model the run
  uses ``"whole"`` (:meth:`NLUProtocol.for_model`), and the signature says which.
- ``truncation="runner"`` (quirk 3): right truncation of each sequence at ``model_max_length - 512`` tokens
  (``evaluation/model_utils.py:377-383``), the label included when it falls past the cut; truncated items are
  counted and listed in the run's summary. ``"none"``: no truncation (an over-long sequence is an error).
- ties go to the first label (quirk 4, ``np.argmax`` at ``evaluation/model_utils.py:404``); fixed, not an option.
- the XNLI label names (quirk 5) and M3Exam's unscored ``e`` (quirk 6) are decided per task: the runner's task key
  scores as the runner does, the corrected variants have their own task names (:mod:`.tasks`).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

import numpy as np

from thai_eval_utils.core.errors import ThaiEvalError

SumPrecision = Literal["fp32", "bf16"]
Truncation = Literal["runner", "none"]
Sums = Literal["labels", "whole"]

#: ``MAX_GENERATION_LENGTH`` (``evaluation/model_utils.py:28``): NLU sequences are truncated to the model length
#: minus this.
GENERATION_RESERVE = 512
#: ``min(_get_and_verify_max_len(config), 8192)`` (``evaluation/model_utils.py:351``).
MAX_LENGTH_CAP = 8192
#: The config keys the runner reads, smallest wins (``evaluation/model_utils.py:144-159``, copied from vLLM).
LENGTH_KEYS = tuple(
    "max_position_embeddings n_positions max_seq_len seq_length model_max_length max_sequence_length max_seq_length"
    " seq_len".split()
)
#: No key found: the runner assumes 2048 (``evaluation/model_utils.py:185``).
DEFAULT_LENGTH = 2048
#: Rope types whose factor does not scale the length (``evaluation/model_utils.py:204``).
UNSCALED_ROPE = ("su", "longrope", "llama3", "default")


@dataclass(frozen=True)
class NLUProtocol:
    """The options of the log-likelihood tasks (module docstring); the defaults are the published numbers'."""

    sum_precision: SumPrecision = "fp32"
    truncation: Truncation = "runner"
    sums: Sums = "labels"

    def __post_init__(self) -> None:
        if self.sum_precision not in ("fp32", "bf16"):
            raise ThaiEvalError(f"sum_precision must be 'fp32' or 'bf16', not {self.sum_precision!r}")
        if self.truncation not in ("runner", "none"):
            raise ThaiEvalError(f"truncation must be 'runner' or 'none', not {self.truncation!r}")
        if self.sums not in ("labels", "whole"):
            raise ThaiEvalError(f"sums must be 'labels' or 'whole', not {self.sums!r}")
        if self.sum_precision == "bf16":  # the bf16 rounding depends on the whole total: label parts cannot mimic it
            object.__setattr__(self, "sums", "whole")

    def for_model(self, model: object) -> NLUProtocol:
        """The protocol a run on ``model`` uses: ``sums="labels"`` becomes ``"whole"`` on a model that cannot score
        token ids from a given position (``loglikelihood_tokens(..., scored_from=)``: a served model). (Under
        ``sum_precision="bf16"`` it is ``"whole"`` from the start.)"""
        by_tokens = getattr(model, "loglikelihood_tokens", None)
        takes_start = callable(by_tokens) and "scored_from" in inspect.signature(by_tokens).parameters
        if self.sums == "labels" and not takes_start:
            return replace(self, sums="whole")
        return self

    def to_dict(self) -> dict[str, Any]:
        """The options as the run card records them (part of the run's config id)."""
        fixed = {"ties": "first", "generation_reserve": GENERATION_RESERVE, "max_length_cap": MAX_LENGTH_CAP}
        return {**asdict(self), **fixed}

    def signature(self) -> str:
        """The options in a score's signature, e.g. ``sum:fp32|trunc:runner@-512|ties:first|sums:labels``."""
        trunc = f"runner@-{GENERATION_RESERVE}" if self.truncation == "runner" else "none"
        return f"sum:{self.sum_precision}|trunc:{trunc}|ties:first|sums:{self.sums}"

    def round_sums(self, sums: np.ndarray) -> np.ndarray:
        """The per-label totals as the argmax sees them: float32, or rounded to bfloat16 (``"bf16"``)."""
        x = np.asarray(sums, dtype=np.float32)
        if self.sum_precision == "fp32":
            return x
        import torch  # bfloat16 rounding exactly as torch's .to(torch.bfloat16) (round to nearest even)

        return torch.from_numpy(x.copy()).to(torch.bfloat16).float().numpy()


#: The protocol of the published numbers.
LEADERBOARD = NLUProtocol()


def _rope_scaling(config: Any) -> Mapping[str, Any] | None:
    """The config's ``rope_scaling`` as the runner's transformers (4.53) held it. transformers 5 nests the settings
    per layer type (``{"full_attention": {...}, "sliding_attention": {...}}``; spec quirk 19): the full-attention
    entry is what 4.53 called ``rope_scaling``, and a ``"default"`` rope type there means no scaling."""
    rope = getattr(config, "rope_scaling", None)
    if isinstance(rope, Mapping) and rope and all(isinstance(v, Mapping) for v in rope.values()):
        rope = rope.get("full_attention")
    return rope if isinstance(rope, Mapping) and rope else None


def runner_max_length(config: Any) -> int:
    """The runner's ``model_max_length``: ``min(_get_and_verify_max_len(config), 8192)``
    (``evaluation/model_utils.py:136-223, 351``): the smallest of :data:`LENGTH_KEYS` in the config (2048 if none),
    times ``rope_scaling.factor`` unless the rope type is in :data:`UNSCALED_ROPE` (yarn scales
    ``original_max_position_embeddings``), capped at 8192."""
    cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
    found = [getattr(cfg, k, None) for k in LENGTH_KEYS]
    lengths = [v for v in found if isinstance(v, (int, float)) and not isinstance(v, bool)]
    derived: float = min(lengths) if lengths else DEFAULT_LENGTH
    rope = _rope_scaling(cfg)
    if rope is not None:
        rope_type = rope.get("type", rope.get("rope_type"))
        if rope_type is None:
            raise ThaiEvalError("rope_scaling must have a 'type' or 'rope_type' key (the runner raises here too)")
        if rope_type not in UNSCALED_ROPE and "factor" in rope:
            if rope_type == "yarn":
                derived = rope["original_max_position_embeddings"]
            derived *= rope["factor"]
    return int(min(int(derived), MAX_LENGTH_CAP))


def truncation_length(config: Any) -> int:
    """Tokens kept per NLU sequence: ``model_max_length - 512`` (``evaluation/model_utils.py:382``)."""
    return runner_max_length(config) - GENERATION_RESERVE
