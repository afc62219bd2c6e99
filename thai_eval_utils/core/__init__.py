"""The contract every benchmark shares, with no benchmark logic and no inference engine in it.

- ``errors``: the exception types (data errors name file, row and field).
- ``records``: record readers for JSONL / JSON / CSV / Parquet.
- ``provenance``: :class:`Score` (value, n, stderr, signature), content hashes, package versions, ``redact``.
- ``store``: the results store (``RunStore``: items.jsonl, run card, summary) and ``list_runs``; ``run_files``: its
  file formats, read defensively; ``migrate``: the store format version and the one migration of older run cards.
- ``runloop``: ``run_items`` / ``run_items_async``, the one run loop.
- ``protocols``: what a model is (``Model``, ``LoglikelihoodModel``), as typing protocols.
- ``tables``: CSV / Markdown / LaTeX tables and the papers' rounding.

The models themselves (``load_model``, the log-likelihood and generation engines, the API and served clients)
are in :mod:`thai_eval_utils.backend`, which imports this package and never the other way.

Submodules are imported where used (``from thai_eval_utils.core.store import RunStore``); importing this
package loads nothing heavy.
"""
