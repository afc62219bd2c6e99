"""The stored runs a report shows: every model's latest finished run of each benchmark under
``<outputs>/runs`` (:func:`thai_eval_utils.compare.load.select_runs`, so the report and ``compare`` pick the same
runs), labelled by model name, never by path."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from thai_eval_utils.compare.load import RunSelection, select_runs
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.runs import StoredRun, list_runs


@dataclass
class ReportRuns:
    """Model name -> its selected runs (benchmark -> run), in display order, and how they were chosen."""

    outputs: Path
    selections: dict[str, RunSelection]
    notes: list[str] = field(default_factory=list)

    @property
    def models(self) -> list[str]:
        return list(self.selections)

    def runs(self) -> list[tuple[str, StoredRun]]:
        """(model, run) for every selected run, models in order, benchmarks sorted."""
        return [(m, r) for m, sel in self.selections.items() for r in sel.runs.values()]


def stored_models(outputs: str | Path) -> list[str]:
    """The model names of every run under ``<outputs>/runs``, sorted."""
    return sorted({str(r.model_name) for r in list_runs(outputs)} - {""})


def _differences(a: RunSelection, b: RunSelection) -> list[str]:
    """``key=value`` of ``b``'s config where it differs from ``a``'s on a benchmark both ran (sorted)."""
    out = set()
    for bench in set(a.runs) & set(b.runs):
        ca, cb = a.runs[bench].card.get("config") or {}, b.runs[bench].card.get("config") or {}
        out |= {f"{k}={cb.get(k)}" for k in set(ca) | set(cb) if ca.get(k) != cb.get(k)}
    return sorted(out)


def _distinct_label(name: str, first: RunSelection, other: RunSelection, folder: Path) -> tuple[str, str]:
    """Labels for two selections of one model name: the config values that tell them apart (e.g.
    ``embedded (fewshot_seed=7)``), else the outputs folder's name."""
    da, db = _differences(other, first), _differences(first, other)
    if db:
        return f"{name} ({', '.join(da)})", f"{name} ({', '.join(db)})"
    return name, f"{name} ({folder.name})"


def collect_runs(
    outputs: str | Path | Sequence[str | Path],
    models: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
) -> ReportRuns:
    """The runs of ``models`` (names, folder slugs or specs such as ``embedded``; default: every stored model).

    ``outputs`` may list several outputs folders (e.g. ``outputs`` and ``outputs/demo_compare``); a model stored in
    two of them appears twice, labelled by the config values that differ (``embedded (fewshot_seed=7)``).
    ``benchmarks``: the suites to show (default: every registered suite).

    Raises:
        ThaiEvalDataError: no run at all, or a model named that has no finished run.
    """
    folders = [Path(outputs)] if isinstance(outputs, (str, Path)) else [Path(o) for o in outputs]
    selections: dict[str, RunSelection] = {}
    notes: list[str] = []
    for folder in folders:
        names = list(models) if models else stored_models(folder)
        for name in names:
            try:
                sel = select_runs(name, benchmarks=benchmarks, outputs=folder)
            except ThaiEvalDataError:
                if models and len(folders) == 1:  # asked for by name: say so
                    raise
                notes.append(f"{name}: no finished run in {folder.name}, left out")
                continue
            label = next(iter(sel.runs.values())).model_name or name  # the stored model name, not the spec or slug
            if label in selections:  # the same model in another outputs folder: tell the two apart
                first_label, label = _distinct_label(label, selections[label], sel, folder)
                selections = {
                    (first_label if k == sel.runs[next(iter(sel.runs))].model_name else k): v
                    for k, v in selections.items()
                }
                selections[first_label].label = first_label
            sel.label = label
            selections[label] = sel
            notes += [f"{label}: {n}" for n in sel.notes]
    if not selections:
        raise ThaiEvalDataError("no finished run: run a benchmark first (make demo)", path=folders[0] / "runs")
    return ReportRuns(folders[0], selections, notes)
