"""The local tokenizer a served model's prompts are built and checked with: ``"embedded"`` (the embedded Gemma 3
270M's) or a local Hugging Face directory, with a fingerprint of its files for run cards and the length lm-eval
would truncate token-id prompts to."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thai_eval_utils.core.errors import ModelLoadError
from thai_eval_utils.backend.model_sources import EMBEDDED, default_max_length, embedded_model_dir

#: Truncation length of token-id prompts when the tokenizer directory has no readable model config.
FALLBACK_MAX_LENGTH = 2048


@dataclass(frozen=True)
class LocalTokenizer:
    """A loaded tokenizer, what run cards record of it, and the default truncation length of its model."""

    tokenizer: Any
    identity: dict[str, str]  # {"tokenizer": "embedded" or the resolved directory, "tokenizer_sha256": ...}
    max_length: int  # the directory's max_position_embeddings (lm-eval's rule), else FALLBACK_MAX_LENGTH


def load_tokenizer(spec: str | Path) -> LocalTokenizer:
    """The tokenizer named by ``spec`` (``"embedded"`` or a directory); ModelLoadError if the directory is missing."""
    from transformers import AutoConfig, AutoTokenizer  # heavy: only served models with a tokenizer need it

    spec = str(spec)
    if spec == EMBEDDED:
        path = embedded_model_dir()
    else:
        path = Path(spec).expanduser()
        if not path.is_dir():
            raise ModelLoadError(f"tokenizer directory not found: {path}")
    tokenizer = AutoTokenizer.from_pretrained(path)
    files = sorted(p for p in path.iterdir() if p.name.startswith("tokenizer") or p.name == "config.json")
    digest = hashlib.sha256(b"".join(p.name.encode() + p.read_bytes() for p in files)).hexdigest()[:16]
    try:
        config = AutoConfig.from_pretrained(path)
    except (OSError, ValueError):
        config = None
    max_length = default_max_length(config, tokenizer) if config is not None else FALLBACK_MAX_LENGTH
    return LocalTokenizer(
        tokenizer,
        {"tokenizer": spec if spec == EMBEDDED else str(path.resolve()), "tokenizer_sha256": digest},
        max_length,
    )
