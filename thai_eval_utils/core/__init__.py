"""The contract every benchmark shares, with no benchmark logic and no inference engine in it.

- ``errors``: the exception types (data errors name file, row and field).
- ``records``: record readers for JSONL / JSON / CSV / Parquet.
- ``provenance``: :class:`Score` (value, n, stderr, signature), content hashes, package versions, ``redact``.
- ``store``: the results store (``RunStore``: items.jsonl, run card, summary); ``runs``: stored runs as readers see
  them (``StoredRun``, ``list_runs``, ``latest_finished``); ``run_files``: the store's file formats, read
  defensively; ``migrate``: the store format version and the one migration of older run cards.
- ``benchmark``: the suite contract; ``registry``: names -> suites.
- ``runloop``: ``run_items`` / ``run_items_async``, the one run loop; ``async_bridge``: ``run_sync`` (async code
  from synchronous code, also inside Jupyter's running loop).
- ``protocols``: what a model is (``ChatModel``, ``Model``, ``LoglikelihoodModel``), as typing protocols.
- ``tables``: CSV / Markdown / LaTeX tables and the papers' rounding.

The models themselves (``load_model``, the log-likelihood and generation engines, the API and served clients)
are in :mod:`thai_eval_utils.backend`, which imports this package and never the other way.

Submodules are imported where used (``from thai_eval_utils.core.store import RunStore``); importing this
package loads nothing heavy.
"""
