"""The machinery every benchmark shares, with no benchmark logic in it.

- ``errors``: the exception types (data errors name file, row and field).
- ``records``: record readers for JSONL / JSON / CSV / Parquet.
- ``provenance``: :class:`Score` (value, n, stderr, signature), content hashes, package versions, ``redact``.
- ``store``: the results store (``RunStore``: items.jsonl, run card, summary) ; ``runs``: stored runs as readers see them (``StoredRun``, ``list_runs``, ``latest_finished``); ``benchmark``: the suite contract; ``registry``: names -> suites; ``run_files``: its
  file formats, read defensively; ``migrate``: the store format version and the one migration of older run cards.
- ``protocols``: what a model is (``Model``, ``LoglikelihoodModel``), as typing protocols.
- ``model_sources``, ``local_model``, ``models``: where weights come from, the transformers model, ``load_model``.
- ``openai_client``: the OpenAI-compatible chat client and ``ApiModel`` (chat models, judges); ``client_options``
  (endpoint, key, timeout, retries: shared with ``served``), ``api_replies`` (usable replies, API errors),
  ``async_bridge`` (``run_sync``); ``served``: ``ServedModel`` on vLLM / SGLang / llama-cpp-python servers.
- ``loglikelihood`` (the prefix-sharing log-likelihood engine and its loop), ``prefix_tree`` (its radix tree and
  schedule of forward calls), ``decoder`` (the decoder call and the output layer), ``packed_attention``.
- ``stops``: stop strings; ``tables``: CSV / Markdown / LaTeX tables and the papers' rounding.

Submodules are imported where used (``from thai_eval_utils.core.store import RunStore``); importing this
package loads nothing heavy.
"""
