"""Which stored runs the paper tables show, and why each other run is left out.

A researcher's store holds unfinished runs, several runs of one model and benchmark (another judge, dtype or
data), several limits and several models. The paper tables show one run per *cell*: a model's benchmark at one
:func:`run_setting` (runs with another setting are other table rows, never merged). A cell shows its latest
finished run (:func:`thai_eval_utils.core.runs.latest_finished`, the one definition of it); a cell none of whose
runs has finished shows its latest unfinished run, as progress (partial, no score). :func:`skipped_table` names
every other run and says why it is left out (:data:`SKIP_REASONS`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from thai_eval_utils.core.runs import StoredRun, latest_finished, recency
from thai_eval_utils.h6.fewshot import default_seed
from thai_eval_utils.h6.tasks import TASK_SPECS
from thai_eval_utils.h6.variants import is_variant

#: Why a run is not in the tables: a later finished run of its cell is shown; it has not finished and another
#: run of its cell is shown; it is of a benchmark no paper table holds.
SKIP_REASONS = ("superseded by a later run", "unfinished", "not in the papers' tables")
SKIPPED_COLUMNS = [
    "model",
    "benchmark",
    "setting",
    "config_id",
    "limit",
    "items",
    "finished",
    "when",
    "reason",
    "detail",
    "run_dir",
]
#: A table cell of runs: (model name, benchmark, setting).
Cell = tuple[str, str, str]


def run_setting(card: Mapping[str, Any]) -> str:
    """How a run's protocol departs from the paper's, in a few words (``""`` when it does not): Thai-H6 shots other
    than the task's, a non-default few-shot seed or sampler, BOS. Runs with different settings are different table
    rows (never merged into one); the limit is not a setting (a limited run is ``partial``, its samples say how many)."""
    config, bench = card.get("config") or {}, str(card.get("benchmark", ""))
    spec = TASK_SPECS.get(bench.split("/")[-1]) if bench.startswith("thai_h6/") else None
    if spec is None:
        return ""
    parts = []
    if config.get("num_fewshot") is not None and config["num_fewshot"] != spec.num_fewshot:
        parts.append(f"shots:{config['num_fewshot']}")
    sampler = config.get("sampler")
    if sampler == "h":
        parts.append("sampler:h")
    if sampler in ("lb", "h") and config.get("fewshot_seed") not in (None, default_seed(sampler)):
        parts.append(f"seed:{config['fewshot_seed']}")
    if config.get("add_bos_token"):
        parts.append("bos")
    return " ".join(parts)


def count_items(run_dir: str | Path) -> int:
    """The records a run folder's ``items.jsonl`` holds (non-empty lines; 0 without the file)."""
    path = Path(run_dir) / "items.jsonl"
    if not path.exists():
        return 0
    with open(path, encoding="utf-8") as fh:
        return sum(1 for line in fh if line.strip())


def in_tables(run: StoredRun, families: Collection[str]) -> bool:
    """Whether ``run`` can fill a paper table's cell: its family is one of ``families`` and it is no labelled variant
    (a Thai-H6 variant, ``h6.variants``: not the paper's protocol, never in its tables)."""
    return run.family in families and not (run.family == "thai_h6" and is_variant(run.task))


def cell_of(run: StoredRun) -> Cell:
    """The table cell a run fills: its model name, benchmark and setting."""
    return run.model_name, run.benchmark, run_setting(run.card)


def shown_runs(runs: Iterable[StoredRun], families: Collection[str]) -> dict[Cell, StoredRun]:
    """Cell -> the run the tables show for it, of the runs whose benchmark family is one of ``families``: the latest
    finished run of the cell, else (none finished) its latest unfinished run, both by
    :func:`~thai_eval_utils.core.runs.recency`."""
    by_setting: dict[str, list[StoredRun]] = defaultdict(list)
    for run in runs:
        if in_tables(run, families):
            by_setting[run_setting(run.card)].append(run)
    shown: dict[Cell, StoredRun] = {}
    for setting, group in by_setting.items():
        shown.update({(model, bench, setting): run for (model, bench), run in latest_finished(group).items()})
        for run in sorted((r for r in group if not r.finished), key=recency):  # later ones replace earlier ones
            if not shown.get(cell := cell_of(run), run).finished:
                shown[cell] = run
    return shown


def _limit(run: StoredRun) -> Any:
    """The run's limit as its summary records it (None: unlimited, unfinished, or a suite without limits)."""
    return (run.summary or {}).get("limit")


def _why(run: StoredRun, shown: StoredRun | None) -> tuple[str, str]:
    """(reason, detail) of a run the tables leave out; ``shown`` is the run shown in its cell (None: no cell)."""
    if shown is None:
        if run.family == "thai_h6" and is_variant(run.task):
            return SKIP_REASONS[2], f"{run.task} is a labelled variant, not the paper's protocol"
        return SKIP_REASONS[2], f"no paper table reads {run.family} runs"
    shown_text = f"{shown.card.get('config_id')} ({shown.when})"
    if not run.finished:
        if shown.finished:
            return SKIP_REASONS[1], f"the finished run {shown_text} is shown"
        return SKIP_REASONS[1], (
            f"the later unfinished run {shown_text} is shown; no run of this model, benchmark and setting has finished"
        )
    detail = f"the later finished run {shown_text} is shown"
    if _limit(run) != _limit(shown):
        detail += f"; other limit: {_limit(run) or 'none'} here, {_limit(shown) or 'none'} there"
    return SKIP_REASONS[0], detail


def skipped_table(runs: Iterable[StoredRun], families: Collection[str]) -> pd.DataFrame:
    """Every run the tables leave out (:data:`SKIPPED_COLUMNS`), with its reason (:data:`SKIP_REASONS`) and a
    detail naming the run shown instead; sorted by model, benchmark, setting and time."""
    runs = list(runs)
    shown = shown_runs(runs, families)
    shown_dirs = {run.dir for run in shown.values()}
    rows = []
    for run in runs:
        if run.dir in shown_dirs:
            continue
        reason, detail = _why(run, shown.get(cell_of(run)) if in_tables(run, families) else None)
        rows.append(
            {
                "model": run.model_name,
                "benchmark": run.benchmark,
                "setting": run_setting(run.card),
                "config_id": run.card.get("config_id"),
                "limit": _limit(run),
                "items": count_items(run.dir),
                "finished": run.finished,
                "when": run.when,
                "reason": reason,
                "detail": detail,
                "run_dir": str(run.dir),
            }
        )
    table = pd.DataFrame(rows, columns=SKIPPED_COLUMNS)
    return table.sort_values(["model", "benchmark", "setting", "when"], kind="stable").reset_index(drop=True)
