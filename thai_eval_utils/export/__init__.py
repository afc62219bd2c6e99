"""Stored runs in the formats other tools read, from Python or ``thai-eval export``:

- ``lm-eval``: lm-evaluation-harness 0.4.13's ``results_<time>.json`` + ``samples_<task>_<time>.jsonl`` for the
  runs whose suite exports to lm-eval (Thai-H6's tasks; :mod:`.lm_eval`);
- ``thai-llm-leaderboard``: ``<FOLDER>/<model>/results.json`` as the Thai LLM Leaderboard's transform writes them
  (``{"config": {"model_name"}, "results": {task: {metric: value}}}``) for every suite's runs (:mod:`.leaderboard`);
- ``parquet``: one per-item details table per suite (:mod:`.parquet`);
- ``seahelm``: SEA-HELM's run folders (run config, results JSON, per-row inference files) for the runs whose suite
  exports to it, so SEA-HELM's own aggregation reads them (:mod:`.seahelm`).

What a benchmark's runs become in each format is its suite's (the export hooks of
:class:`~thai_eval_utils.core.benchmark.Suite`); this package names none.

Every file carries thai-eval's signature (protocol options, template and data hashes, versions, config ids) and no
secret (:func:`~thai_eval_utils.core.provenance.redact`). Each export reads the latest finished run per model and
benchmark (:func:`.stored.finished_runs`).

Example:
    >>> from thai_eval_utils.export import export
    >>> export("lm-eval", "exports/lm-eval", models=["gemma"])  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tqdm.auto import tqdm

from thai_eval_utils.core.errors import ThaiEvalError
from thai_eval_utils.export.leaderboard import write_leaderboard
from thai_eval_utils.export.lm_eval import exports_lm_eval, lm_eval_suites, write_lm_eval
from thai_eval_utils.export.parquet import write_parquet
from thai_eval_utils.export.seahelm import exports_seahelm, write_seahelm
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.export.stored import finished_runs

FORMATS = ("lm-eval", "thai-llm-leaderboard", "parquet", "seahelm")

__all__ = [
    "FORMATS",
    "StoredRun",
    "export",
    "finished_runs",
    "write_leaderboard",
    "write_lm_eval",
    "write_parquet",
    "write_seahelm",
]


def export(
    fmt: str,
    to: str | Path,
    *,
    outputs: str | Path | None = None,
    models: Sequence[str] = (),
    data: str | Path | None = None,
    progress: bool = False,
) -> list[Path]:
    """Write the stored runs under ``outputs`` (default ``$THAI_EVAL_OUTPUTS`` or ``outputs``) in format ``fmt``
    to the folder ``to``; ``models`` keeps runs whose model name or folder contains one of them; ``data`` is the
    data the lm-eval export rebuilds documents and arguments from (when the run cards' folders moved). Returns the
    files written.

    Raises:
        ThaiEvalError: an unknown format, or no finished run to export.
    """
    if fmt not in FORMATS:
        raise ThaiEvalError(f"unknown export format {fmt!r}; choose from {', '.join(FORMATS)}")
    runs = finished_runs(outputs, models)
    if fmt == "lm-eval":
        runs = [r for r in runs if exports_lm_eval(r)]
    elif fmt == "seahelm":
        runs = [r for r in runs if exports_seahelm(r)]
    if not runs:
        where = Path(outputs) if outputs else "the outputs folder"
        labels = [s.label for s in lm_eval_suites()] if fmt == "lm-eval" else []
        which = " or ".join(labels) + " " if labels else ""
        raise ThaiEvalError(
            f"no finished {which}run to export under {where}" + (f" for models {list(models)}" if models else "")
        )
    with tqdm(total=1, desc=f"export {fmt}", disable=not progress) as bar:
        if fmt == "lm-eval":
            files = write_lm_eval(runs, to, data=data)
        elif fmt == "thai-llm-leaderboard":
            files = write_leaderboard(runs, to)
        elif fmt == "seahelm":
            files = write_seahelm(runs, to)
        else:
            files = write_parquet(runs, to)
        bar.update()
    return files
