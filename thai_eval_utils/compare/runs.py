"""Compare two models' stored runs on every headline score: one row per score with the paired
difference, its bootstrap interval, a test (exact McNemar for 0/1 items, sign-flip otherwise, paired bootstrap
for corpus metrics, stratified for the suites' averages over tasks) and Holm-adjusted p-values across the rows.
A labelled variant's runs (``Suite.variants``) are paired like the published protocol's, in rows of their own
outside the averages.
What a row is, its order and the averages come from the suites (:mod:`thai_eval_utils.core.registry`).
Methods and defaults: ``docs/statistics.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from thai_eval_utils.compare.items import Headline, headlines
from thai_eval_utils.compare.load import RunSelection, select_runs
from thai_eval_utils.core import registry
from thai_eval_utils.core.benchmark import Average
from thai_eval_utils.core.tables import save_table
from thai_eval_utils.stats.align import check_same_data
from thai_eval_utils.stats.bootstrap import DEFAULT_RESAMPLES, signature
from thai_eval_utils.stats.corpus import corpus_paired_bootstrap
from thai_eval_utils.stats.paired import PairedResult, compare_paired, with_holm
from thai_eval_utils.stats.stratified import stratified_paired_bootstrap


@dataclass
class Comparison:
    """The rows of a comparison (Holm-adjusted across them), how the runs were chosen and what was left out."""

    label_a: str
    label_b: str
    rows: list[PairedResult]
    scales: dict[str, float]
    level: float
    n_resamples: int
    seed: int
    notes: list[str] = field(default_factory=list)
    headlines_a: dict[str, Headline] = field(default_factory=dict, repr=False)
    headlines_b: dict[str, Headline] = field(default_factory=dict, repr=False)

    @property
    def caption(self) -> str:
        return (
            f"{self.label_a} (A) vs {self.label_b} (B): diff = A - B on paired items, {100 * self.level:g}% paired "
            f"bootstrap CI ({self.n_resamples} resamples, seed {self.seed}; BCa where scipy gives it, else "
            "percentile: see method); p: exact McNemar for 0/1 items, sign-flip permutation otherwise, paired "
            f"bootstrap for corpus BLEU, stratified for averages; p_holm: Holm-adjusted across the {len(self.rows)} "
            f"rows. {_scale_notes()}{signature('mixed', self.level, self.n_resamples, self.seed)}"
        )

    def table(self, digits: int | None = None) -> pd.DataFrame:
        """One row per headline score on its published scale (``digits``: round numbers for display)."""
        recs = []
        for r in self.rows:
            s = self.scales.get(r.metric, 1.0)
            recs.append(
                {
                    "score": r.metric,
                    "n_paired": r.n_paired,
                    "only_a": r.n_only_a,
                    "only_b": r.n_only_b,
                    "mean_a": s * r.mean_a,
                    "mean_b": s * r.mean_b,
                    "diff": s * r.diff,
                    "ci_low": s * r.ci_low,
                    "ci_high": s * r.ci_high,
                    "method": r.method,
                    "test": r.test,
                    "p_value": r.p_value,
                    "p_holm": r.p_holm,
                    "signature": r.signature,
                    "note": r.note,
                }
            )
        df = pd.DataFrame(recs)
        if digits is not None and len(df):
            num = ["mean_a", "mean_b", "diff", "ci_low", "ci_high"]
            df[num] = df[num].round(digits)
            df[["p_value", "p_holm"]] = df[["p_value", "p_holm"]].map(lambda p: float(f"{p:.3g}"))
        return df

    def unmatched(self) -> pd.DataFrame:
        """Every item left out of a row because only one run has it: score, side, key."""
        recs = [
            {"score": r.metric, "only_in": side, "key": k}
            for r in self.rows
            for side, keys in (("A", r.only_in_a), ("B", r.only_in_b))
            for k in keys
        ]
        return pd.DataFrame(recs, columns=["score", "only_in", "key"])

    def save(self, path_without_suffix: str | Path, digits: int = 4) -> list[Path]:
        """The table as CSV, Markdown and LaTeX (``core.tables.save_table``) with the caption."""
        return save_table(self.table(digits), path_without_suffix, caption=self.caption)


def _scale_notes() -> str:
    """The suites' scales for the caption (``Suite.scale_note``), in registry order."""
    notes = [s.scale_note for s in registry.suites().values() if getattr(s, "scale_note", "")]
    return ", ".join(notes) + ". " if notes else ""


def _resolve(side: RunSelection | str, benchmarks: Sequence[str] | None, outputs: str | Path | None) -> RunSelection:
    return side if isinstance(side, RunSelection) else select_runs(side, benchmarks=benchmarks, outputs=outputs)


def _order(name: str) -> tuple[int, str, int, str]:
    """Rows sort by suite (its position, then name), then as the suite orders them (``Suite.order``), then by name."""
    suite = registry.get_suite(name)
    return suite.position, suite.name, suite.order(name), name


def _member(avg: Average, head: Headline) -> bool:
    """Whether ``head`` enters the average ``avg``: its name has the members' prefix and it is no labelled
    variant's (those have rows of their own only)."""
    return head.name.startswith(avg.members) and not head.variant


def compare_runs(
    a: RunSelection | str,
    b: RunSelection | str,
    benchmarks: Sequence[str] | None = None,
    *,
    level: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    method: str = "BCa",
    allow_different_data: bool = False,
    data_dir: str | Path | None = None,
    outputs: str | Path | None = None,
) -> Comparison:
    """Compare A with B on every headline score both sides have (``diff = A - B``).

    Args:
        a, b: run selections (:func:`~thai_eval_utils.compare.load.select_runs`) or model names (their latest runs).
        benchmarks: suites to compare (``core.registry`` names; default: every registered suite).
        level, n_resamples, seed, method: the bootstrap (``method``: ``BCa`` or ``percentile``; hand-written
            resampling is percentile only).
        allow_different_data: compare runs whose data hashes differ (else ``DataMismatchError``).
        data_dir: a data root holding each suite's data folder (or one suite's folder) for what the records lack,
            e.g. references (default: where the run cards say).

    Returns:
        A :class:`Comparison`; ``notes`` say which runs were taken and what could not be compared.
    """
    sa, sb = _resolve(a, benchmarks, outputs), _resolve(b, benchmarks, outputs)
    notes = [f"A = {n}" for n in sa.notes] + [f"B = {n}" for n in sb.notes]
    pairs, data_notes = [], {}
    for bench in sorted(set(sa.runs) | set(sb.runs)):
        if sa.runs.get(bench) is None or sb.runs.get(bench) is None:
            notes.append(f"{bench}: run only in {'A' if bench in sa.runs else 'B'}, not compared")
            continue
        ra, rb = sa.runs[bench], sb.runs[bench]
        data_notes[bench] = check_same_data(ra.data_hash, rb.data_hash, allow_different_data=allow_different_data)
        pairs.append((ra, rb))
    ha = {h.name: h for h in headlines([p[0] for p in pairs], data_dir=data_dir)}
    hb = {h.name: h for h in headlines([p[1] for p in pairs], data_dir=data_dir)}
    for name in sorted(set(ha) ^ set(hb)):
        notes.append(f"{name}: only in {'A' if name in ha else 'B'}, not compared")
    opts = dict(level=level, n_resamples=n_resamples, seed=seed)
    rows = []
    for name in sorted(set(ha) & set(hb), key=_order):
        x, y = ha[name], hb[name]
        if x.kind == "corpus":
            r = corpus_paired_bootstrap(
                dict(zip(x.items["key"], x.items["hyp"])),
                dict(zip(y.items["key"], y.items["hyp"])),
                {**dict(zip(y.items["key"], y.items["ref"])), **dict(zip(x.items["key"], x.items["ref"]))},
                x.corpus_metric,
                name=name,
                **opts,
            )
        else:
            r = compare_paired(
                x.items,
                y.items,
                metric=name,
                test="mcnemar" if x.kind == "binary" else "permutation",
                method=method,
                **opts,
            )
        extra = [data_notes.get(x.run.benchmark, ""), x.note and f"A: {x.note}", y.note and f"B: {y.note}"]
        rows.append(replace(r, note="; ".join(filter(None, [r.note, *extra]))))
    averages = [avg for suite in registry.suites().values() for avg in suite.averages]
    for avg in averages:
        shared = [n for n in sorted(set(ha) & set(hb), key=_order) if _member(avg, ha[n]) and _member(avg, hb[n])]
        if len(shared) < avg.min_members:
            continue
        frame = {
            k: pd.concat([h[n].items[["key", "value"]].assign(task=h[n].stratum) for n in shared])
            for k, h in (("a", ha), ("b", hb))
        }
        r = stratified_paired_bootstrap(frame["a"], frame["b"], name=avg.name, **opts)
        partial = avg.expected is not None and len(shared) < avg.expected
        rows.append(
            replace(
                r,
                note="; ".join(
                    filter(None, [r.note, f"partial: {len(shared)} of {avg.expected} tasks" if partial else ""])
                ),
            )
        )
    scales = {n: ha[n].scale for n in ha} | {avg.name: avg.scale for avg in averages}
    rows.sort(key=lambda r: _order(r.metric))
    return Comparison(sa.label, sb.label, with_holm(rows), scales, level, n_resamples, seed, notes, ha, hb)
