"""Select stored runs for a comparison: from ``outputs/runs/<model-slug>/<benchmark>/<config-id>/``
(:mod:`thai_eval_utils.core.store`), by model name (the latest finished run per benchmark) or by run folder.

Runs are told apart by their run card only (``model_name``, ``benchmark``, ``config``, ``data_files``,
``created_at``/``finished_at``), never by specific config key names, so renamed options never break it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from thai_eval_utils.core import registry
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.provenance import slugify
from thai_eval_utils.core.runs import StoredRun, latest_finished, list_runs, recency


@dataclass
class RunSelection:
    """One side of a comparison: benchmark -> run, and how each was chosen (``notes``)."""

    label: str
    runs: dict[str, StoredRun]
    notes: list[str] = field(default_factory=list)

    def families(self) -> set[str]:
        return {r.family for r in self.runs.values()}

    def describe(self) -> str:
        return "\n".join(
            [f"{self.label}:", *(f"  {r}" for r in self.runs.values()), *(f"  note: {n}" for n in self.notes)]
        )


def _wanted(run: StoredRun, benchmarks: Sequence[str]) -> bool:
    """A run of one of ``benchmarks`` (suites) that holds its suite's headline scores (``Suite.holds_headlines``)."""
    suite = registry.suite_of(run.benchmark)
    return run.family in benchmarks and suite is not None and suite.holds_headlines(run)


def _matches(config: Mapping[str, Any], where: Mapping[str, Any] | None) -> bool:
    return all(config.get(k) == v for k, v in (where or {}).items())


def select_runs(
    model: str | None = None,
    *,
    folders: Sequence[str | Path] = (),
    where: Mapping[str, Any] | None = None,
    benchmarks: Sequence[str] | None = None,
    outputs: str | Path | None = None,
    label: str | None = None,
) -> RunSelection:
    """The runs of one side of a comparison.

    Args:
        model: a model name, its folder slug or the spec it was loaded from (``"embedded"``): its latest finished run of every benchmark under
            ``<outputs>/runs``; each choice and the runs passed over are written to ``notes``.
        folders: run folders instead, or folders holding runs (e.g. ``outputs/runs/<model>/<suite>``); at
            most one run per benchmark may be found there.
        where: only runs whose config has these values, e.g. ``{"fewshot_seed": 7}``.
        benchmarks: suites to take (``core.registry`` names; default: every registered suite).
        outputs: the outputs folder (default ``$THAI_EVAL_OUTPUTS`` or ``outputs``).
        label: the side's name in tables (default: the model name or the first folder).

    Raises:
        ThaiEvalDataError: no run found, or several runs of one benchmark among ``folders``.
    """
    known = list(registry.suites())
    benchmarks = known if benchmarks is None else list(benchmarks)
    unknown = set(benchmarks) - set(known)
    if unknown:
        raise ValueError(f"unknown benchmark(s) {sorted(unknown)}; choose from {', '.join(known)}")
    if bool(model) == bool(folders):
        raise ValueError("give either a model name or run folders")
    notes: list[str] = []
    if folders:
        found = [StoredRun.from_dir(p.parent) for f in folders for p in sorted(Path(f).rglob("run_card.json"))]
        runs = [r for r in found if _wanted(r, benchmarks) and _matches(r.card.get("config") or {}, where)]
        chosen: dict[str, StoredRun] = {}
        for r in runs:
            if r.benchmark in chosen:
                raise ThaiEvalDataError(
                    f"two runs of {r.benchmark} among the folders: {chosen[r.benchmark].dir} and {r.dir}; "
                    "name one run folder, or pass `where` to tell them apart",
                    path=r.dir,
                )
            chosen[r.benchmark] = r
        label = label or str(folders[0])
    else:
        every = list_runs(outputs)
        mine = [
            r for r in every if model in (r.model_name, slugify(r.model_name), (r.card.get("model") or {}).get("spec"))
        ]
        runs = [r for r in mine if _wanted(r, benchmarks) and _matches(r.card.get("config") or {}, where)]
        chosen = {}
        latest = {bench: run for (_, bench), run in latest_finished(runs).items()}
        for bench in sorted({r.benchmark for r in runs}):
            cands = sorted((r for r in runs if r.benchmark == bench), key=recency)
            if bench not in latest:
                notes.append(f"{bench}: {len(cands)} unfinished run(s) only, left out")
                continue
            chosen[bench] = taken = latest[bench]
            if len(cands) > 1:
                notes.append(
                    f"{bench}: latest of {len(cands)} runs taken ({taken.dir.name}, {taken.when}); "
                    f"passed over: {', '.join(r.dir.name for r in cands if r is not taken)}"
                )
        label = label or str(model)
    if not chosen:
        raise ThaiEvalDataError(
            f"no finished run of {list(benchmarks)} for {label!r}" + (f" with config {dict(where)}" if where else ""),
            path=outputs,
        )
    return RunSelection(label, dict(sorted(chosen.items())), notes)
