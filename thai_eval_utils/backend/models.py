"""Model loading: ``load_model(spec)`` for the embedded Gemma 3 270M (offline), local HF directories, GGUF files,
Hub ids and OpenAI-compatible endpoints; ``load_judge(spec)`` for an LLM judge (``local:<spec>`` or a model id).

``load_model`` returns a :class:`~thai_eval_utils.core.protocols.Model` (``name``, ``identity``, ``generate``,
``chat``); local models are also :class:`~thai_eval_utils.core.protocols.LoglikelihoodModel` (lm-evaluation-harness's
``(context, continuation) -> (ll, is_greedy)`` contract, implemented in :mod:`thai_eval_utils.backend.loglikelihood`).
"""

from __future__ import annotations

import os
from typing import Any

from thai_eval_utils.backend.local_model import LocalModel
from thai_eval_utils.backend.model_sources import (
    DTYPES,
    EMBEDDED,
    GEMMA3_CHAT_TEMPLATE,
    cache_dir,
    check_device,
    check_dtype,
    convert_gguf,
    embedded_gguf_path,
    embedded_model_dir,
    model_options,
    resolve_spec,
)
from thai_eval_utils.backend.client_options import JUDGE_KEY_ENV, LOCAL_JUDGE
from thai_eval_utils.backend.openai_client import ApiModel
from thai_eval_utils.backend.served import ServedModel


def load_model(spec: str = EMBEDDED, **options: Any) -> LocalModel | ApiModel | ServedModel:
    """Load a model by spec.

    Args:
        spec: ``"embedded"`` (Gemma 3 270M shipped on PyPI), a local HF model directory, a ``.gguf`` file,
            a Hub id, ``"openai:<model-id>"`` (any OpenAI-compatible endpoint, chat only, see
            :mod:`.openai_client`) or ``"completions:<model-id>"`` (vLLM / SGLang / llama-cpp-python servers with
            ``/v1/completions``: log-likelihoods and raw completions too, see :class:`.served.ServedModel`; options
            ``base_url`` (one URL or several replicas), ``tokenizer``, ``prompt``, ``max_length``, ``add_bos_token``...).
        **options: for local models ``dtype`` (one of :data:`DTYPES`; default float32 on CPU, bfloat16 on GPU),
            ``device`` or ``device_map`` (e.g. ``"auto"`` for GPUs; not both), ``max_length``, ``add_bos_token``
            (default False, as the leaderboard ran lm-eval), ``trust_remote_code`` (default False); no batch size: the
            engines choose their own batches (``LocalModel.batch_tokens`` / ``max_rows``). For API and served
            models see :class:`.openai_client.ApiModel` and :class:`.served.ServedModel` (``batch_size``: prompts
            per request). Notebooks build them with :func:`model_options`.

    Returns:
        A :class:`LocalModel`, an :class:`.openai_client.ApiModel` (``openai:``) or a :class:`.served.ServedModel`
        (``completions:``).
    """
    if spec.startswith("openai:"):
        return ApiModel(spec.split(":", 1)[1], **options)
    if spec.startswith("completions:"):  # a served model with log-likelihoods (thai_eval_utils.backend.served)
        return ServedModel(spec.split(":", 1)[1], **options)
    check_device(options.get("device"), options.get("device_map"))  # before any weights are read
    return LocalModel.from_spec(spec, **options)


def load_judge(judge: str, *, base_url: str | None = None, **options: Any) -> LocalModel | ApiModel:
    """A judge model by the spec ``thai-eval run --judge`` takes.

    Args:
        judge: ``"local:<spec>"``, a local model judging in-process (``load_model(spec)``: ``local:embedded``, a
            model folder, a ``.gguf``); else an OpenAI-compatible model id.
        base_url: the model id's endpoint (default ``$OPENAI_BASE_URL``, else OpenAI's).
        **options: the :class:`ApiModel`'s limits (``concurrency``, ``timeout``, ``max_retries``); a local judge
            is loaded with its own defaults.

    The key is never a parameter: ``$THAI_EVAL_JUDGE_API_KEY`` (:data:`JUDGE_KEY_ENV`) when set, else
    ``ApiModel``'s default (the base URL's password, else ``$OPENAI_API_KEY``).
    """
    if judge.startswith(LOCAL_JUDGE):
        return load_model(judge.removeprefix(LOCAL_JUDGE))
    return ApiModel(judge, base_url=base_url, api_key=os.environ.get(JUDGE_KEY_ENV) or None, **options)


__all__ = [
    "DTYPES",
    "EMBEDDED",
    "GEMMA3_CHAT_TEMPLATE",
    "JUDGE_KEY_ENV",
    "LOCAL_JUDGE",
    "LocalModel",
    "cache_dir",
    "check_device",
    "check_dtype",
    "convert_gguf",
    "embedded_gguf_path",
    "embedded_model_dir",
    "load_judge",
    "load_model",
    "model_options",
    "resolve_spec",
]
