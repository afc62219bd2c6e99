"""The stored runs a report shows (issue 22): every model's latest finished run of each benchmark under
``<outputs>/runs`` (:func:`thai_eval_utils.compare.load.select_runs`, so the report and ``compare`` pick the same
runs), labelled by model name, never by path."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from thai_eval_utils.compare.load import BENCHMARKS, RunRef, RunSelection, select_runs
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.provenance import slugify
from thai_eval_utils.core.store import list_runs


@dataclass
class ReportRuns:
    """Model name -> its selected runs (benchmark -> run), in display order, and how they were chosen."""

    outputs: Path
    selections: dict[str, RunSelection]
    notes: list[str] = field(default_factory=list)

    @property
    def models(self) -> list[str]:
        return list(self.selections)

    def runs(self) -> list[tuple[str, RunRef]]:
        """(model, run) for every selected run, models in order, benchmarks sorted."""
        return [(m, r) for m, sel in self.selections.items() for r in sel.runs.values()]


def stored_models(outputs: str | Path) -> list[str]:
    """The model names of every run under ``<outputs>/runs``, sorted."""
    return sorted({str(r["card"].get("model_name", "")) for r in list_runs(outputs)} - {""})


def collect_runs(outputs: str | Path, models: Sequence[str] | None = None,
                 benchmarks: Sequence[str] = BENCHMARKS) -> ReportRuns:
    """The runs of ``models`` (names, folder slugs or specs such as ``embedded``; default: every stored model).

    Raises:
        ThaiEvalDataError: no run at all, or a model named that has no finished run.
    """
    outputs = Path(outputs)
    names = list(models) if models else stored_models(outputs)
    if not names:
        raise ThaiEvalDataError("no stored run: run a benchmark first (make demo)", path=outputs / "runs")
    selections: dict[str, RunSelection] = {}
    notes: list[str] = []
    for name in names:
        try:
            sel = select_runs(name, benchmarks=benchmarks, outputs=outputs)
        except ThaiEvalDataError:
            if models:  # asked for by name: say so
                raise
            notes.append(f"{name}: no finished run, left out")
            continue
        label = next(iter(sel.runs.values())).model_name or name  # the stored model name, not the spec or slug
        if label in selections:
            raise ThaiEvalDataError(f"{name!r} and another name select the same model {label!r}", path=outputs / "runs" / slugify(label))
        selections[label] = sel
        notes += [f"{label}: {n}" for n in sel.notes]
    return ReportRuns(outputs, selections, notes)
