"""How the Thai dialect benchmark shows in compare and the report: its headline scores per item, its items,
its leaderboard cells and figures: the display hooks of :class:`thai_eval_utils.core.benchmark.Suite`
(Limkonchotiwat et al. 2025, Table 1: ROUGE-L per sentence, corpus BLEU, ΔDiff).

Items are keyed by the store key ``<dialect>/<task>/<id>``; references (``text_2``) are read from the data the run
was made on, refused when its files do not hash as the run card says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd

from thai_eval_utils.core.benchmark import Headline, Interval, ItemView, Kind, LeaderboardTable
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.provenance import sha256_file
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.dialect.data import load_dialect
from thai_eval_utils.dialect.generation import item_key
from thai_eval_utils.dialect.intervals import delta_diff_interval
from thai_eval_utils.dialect.metrics import (
    DIALECT_NAMES,
    PAPER_BLEU,
    TABLE1_TASKS,
    bleu,
    delta_diff,
    rouge_l_scores,
    table_task,
)
from thai_eval_utils.dialect.plots import delta_heatmap
from thai_eval_utils.stats import cells
from thai_eval_utils.stats.align import DataMismatchError
from thai_eval_utils.stats.corpus import corpus_delta_diff_interval
from thai_eval_utils.tasks.language import stats_note
from thai_eval_utils.tasks.thinking import option_of, split_reply

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: The suite's name (its runs' ``benchmark`` prefix), the run holding the outputs, the leaderboard table's key.
NAME = "dialect"
GENERATION_RUN = f"{NAME}/generation"
TABLE = "dialect_auto"
CENTRAL = "center"


def dialect_references(run: StoredRun, data_source: str | Path | None = None) -> pd.DataFrame:
    """The items (with reference ``text_2``) a dialect run was made on, keyed by the store key.

    Read from ``data_source`` (the dialect data folder) or else from where the run card says the files were; the
    first of them that holds every file hash of the run card is taken.

    Raises:
        ThaiEvalDataError: no data folder found; DataMismatchError: the files differ from the run's.
    """
    # the run card's folders <source> of <source>/<dialect>/<task>.jsonl that exist
    listed = sorted({Path(p).parent.parent for p in (run.card.get("data_files") or {}) if Path(p).exists()})
    sources = list(dict.fromkeys([*([Path(data_source)] if data_source else []), *listed]))
    card = run.dir / "run_card.json"
    if not sources:
        message = "the run's dialect data files are not found from here; pass the data folder (data_dir)"
        raise ThaiEvalDataError(message, path=card, field="data_files")
    first_missing = None
    for source in sources:
        df = load_dialect(source)
        have = {sha256_file(p) for p in df.attrs["files"]}
        missing = [p for p, h in (run.card.get("data_files") or {}).items() if h not in have]
        if not missing:
            return df.assign(key=[item_key(r) for r in df.to_dict("records")]).set_index("key")
        first_missing = first_missing or (source, missing[0])
    folder, file = first_missing
    message = (
        f"{folder} does not hold the data the run used (e.g. {file} differs): its references would not be the run's"
    )
    raise DataMismatchError(message, path=card, field="data_files")


def dialect_items(h: Headline) -> list[ItemView]:
    """One item per generated sentence of a (dialect, task): prompt, output, reference and its score (ROUGE-L;
    translation: the sentence's own BLEU, for ranking: the task's BLEU is a corpus score)."""
    items = h.items
    values = items["value"] if "value" in items else [bleu([x], [r]) for x, r in zip(items["hyp"], items["ref"])]
    inputs = items["input"] if "input" in items else [""] * len(items)
    return [
        ItemView(task=h.stratum, key=str(k), value=float(v), question=str(q or ""), output=str(x), reference=str(r))
        for k, v, q, x, r in zip(items["key"], values, inputs, items["hyp"], items["ref"])
    ]


def _texts(h: Headline) -> tuple[dict[str, str], dict[str, str]]:
    """A corpus headline's hypotheses and references by item key (what a corpus bootstrap pairs)."""
    return dict(zip(h.items["key"], h.items["hyp"])), dict(zip(h.items["key"], h.items["ref"]))


class DialectViews:
    """The display hooks of the Thai dialect suite (mixed into :class:`~.suite.DialectSuite`)."""

    scale_note: ClassVar[str] = "ROUGE-L/BLEU 0-100"
    leaderboard_tables: ClassVar[tuple[LeaderboardTable, ...]] = (
        LeaderboardTable(
            TABLE,
            "Thai dialects (ROUGE-L, BLEU x100 and ΔDiff; Limkonchotiwat et al. Table 1)",
            tuple(c for fam, (_, col) in TABLE1_TASKS.items() for c in (col, f"{fam}_delta")),
            group="dialect",
        ),
    )

    def holds_headlines(self, run: StoredRun) -> bool:
        """The generation runs."""
        return run.benchmark == GENERATION_RUN

    def headlines(self, run: StoredRun, data_dir: Path | None = None) -> list[Headline]:
        """Per (dialect, task): ROUGE-L per sentence (QA, summarisation) or the sentences of corpus BLEU
        (translation), the paper's Table 1 metric of the task family (``TABLE1_TASKS``); references from the data
        root's dialect folder, else where the run card says."""
        refs = dialect_references(run, self.data_path(data_dir))  # type: ignore[attr-defined]
        recs = pd.DataFrame(run.records())
        out: list[Headline] = []
        if recs.empty:
            return out
        option = option_of(run.card.get("config") or {})  # the replies as the run scored them
        recs["output"] = [split_reply(t, option).scored if isinstance(t, str) else t for t in recs["output"]]
        for (dialect, task), group in recs.groupby(["dialect", "task"], sort=True):
            if table_task(task) not in TABLE1_TASKS:  # conversation and food: no reference, not scored
                continue
            metric = TABLE1_TASKS[table_task(task)][0]
            if missing := [k for k in group["key"] if k not in refs.index]:
                message = f"no reference for item {missing[0]!r}"
                raise ThaiEvalDataError(message, path=run.dir / "items.jsonl", field="key")
            items = pd.DataFrame(
                {
                    "key": group["key"].tolist(),
                    "hyp": group["output"].fillna("").tolist(),
                    "ref": refs.loc[group["key"], "text_2"].fillna("").tolist(),
                    "input": group["prompt"].tolist() if "prompt" in group else None,
                }
            )
            kind: Kind = "mean" if metric == "rougeL" else "corpus"
            if kind == "mean":
                items["value"] = rouge_l_scores(items["hyp"].tolist(), items["ref"].tolist())
            corpus, stratum = PAPER_BLEU if kind == "corpus" else None, f"{dialect}/{task}"
            out.append(
                Headline(f"{NAME}/{stratum}/{metric}", NAME, stratum, kind, 1.0, items, run, corpus_metric=corpus)
            )
        return out

    def item_views(
        self,
        run: StoredRun,
        heads: Sequence[Headline],
        data_dir: Path | None,
        pools: dict[str, list[str]],
        notes: list[str],
    ) -> list[ItemView]:
        """Every scored sentence of the run's headlines (none when the references were not at hand: a note)."""
        if not self.holds_headlines(run):
            return []
        new = [it for h in heads if h.run is run for it in dialect_items(h)]
        if not new:
            notes.append(f"{run.benchmark}: no scored items (references not at hand?)")
        return new

    def leaderboard_cells(self, model: str, heads: Sequence[Headline], boot: Interval) -> list[dict[str, Any]]:
        """Per dialect: each task's score (the run's summary) with its interval, and ΔDiff (Central minus the
        dialect) with its interval, paired when the items are translations of each other."""
        out, by = [], {}  # by: (table task, dialect) -> headline

        def add(h: Headline, column: str, value: Any, n: Any, low: float | None, high: float | None, note: str) -> None:
            """One cell of ``h``'s dialect row."""
            dialect, items = h.stratum.split("/", 1)[0], f"{NAME}|{h.stratum}"
            group = DIALECT_NAMES.get(dialect, dialect)
            out.append(cells.cell(TABLE, model, column, value, n, items, group=group, low=low, high=high, note=note))

        for h in heads:
            dialect, task = h.stratum.split("/", 1)
            fam = table_task(task)
            metric, column = TABLE1_TASKS[fam]
            value, n = cells.summary_value(h.run.summary, f"{dialect}/{task}/{metric}")
            if h.kind == "corpus":
                low, high = cells.corpus_ci(h.items["hyp"].tolist(), h.items["ref"].tolist(), boot, PAPER_BLEU)
            else:
                low, high = cells.mean_ci(h, boot)
            note = stats_note(((h.run.summary or {}).get("replies_by_task") or {}).get(h.stratum))
            add(h, column, value, n, low, high, note)
            by[(fam, dialect)] = h
        for (fam, dialect), h in by.items():
            central = by.get((fam, CENTRAL))
            if dialect == CENTRAL or central is None:
                continue
            opts = dict(level=boot.level, n_resamples=boot.n_resamples, seed=boot.seed)
            if h.kind == "corpus":
                iv = corpus_delta_diff_interval(_texts(central), _texts(h), PAPER_BLEU, **opts)
            else:
                sides = (x.items.assign(value=cells.scaled_values(x)) for x in (central, h))
                iv = delta_diff_interval(*sides, method="percentile", **opts)
            add(h, f"{fam}_delta", iv.estimate, iv.n, iv.low, iv.high, iv.design)
        return out

    def figures(
        self, runs: Mapping[str, Mapping[str, StoredRun]], heads: Mapping[str, Sequence[Headline]]
    ) -> list[tuple[str, Figure | None]]:
        """ΔDiff (Central minus dialect) per model and task, from the runs' summary scores (none without a dialect
        beside Central)."""
        rows = []
        for model, by_bench in runs.items():
            run = by_bench.get(GENERATION_RUN)
            for key, entry in (((run.summary or {}).get("scores") or {}) if run else {}).items():
                if len(parts := key.split("/")) == 3 and entry.get("value") is not None:
                    rows.append([model, *parts, float(entry["value"])])
        scores = pd.DataFrame(rows, columns=["model", "dialect", "task", "metric", "value"])
        fig = None
        if not scores.empty and not set(scores["dialect"]) <= {CENTRAL}:
            deltas = delta_diff(scores)
            fig = delta_heatmap(deltas) if len(deltas) else None
        return [("Thai dialects: ΔDiff (Central minus dialect; > 0 = worse in the dialect)", fig)]
