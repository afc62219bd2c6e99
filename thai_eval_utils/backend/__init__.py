"""The inference backend: the engines and model clients behind the :mod:`~thai_eval_utils.core.protocols`.

A reader can skip this package: the benchmarks need only the protocols (``Model``, ``LoglikelihoodModel``) and
``load_model``. It imports :mod:`thai_eval_utils.core` only.

- ``models``: ``load_model(spec, **options)``, the one entry; ``model_sources``: where weights come from.
- ``local_model``: ``LocalModel`` (transformers): ``loglikelihood`` on ``loglikelihood`` (the prefix-sharing
  engine: ``prefix_tree``, ``decoder``, ``packed_attention``), ``generate`` / ``chat`` on ``generation``
  (continuous batching; ``decode_cache``, ``prefill_plan``, ``stops``).
- ``encoding``: ``encode_pairs`` / ``encode_pair`` and ``fed_tokens``, lm-eval's context/continuation encoding,
  shared by ``loglikelihood`` and ``served``.
- ``openai_client``: the OpenAI-compatible chat client and ``ApiModel``; ``client_options`` (endpoint, key,
  timeout, retries), ``api_replies`` (usable replies, API errors); ``served``: ``ServedModel`` on vLLM / SGLang / llama-cpp-python servers.

Submodules are imported where used; importing this package loads nothing heavy.
"""
