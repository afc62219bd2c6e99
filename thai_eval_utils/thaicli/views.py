"""How the ThaiCLI benchmark shows in compare and the report: its headline scores per item, its items,
its leaderboard cells and figures: the display hooks of :class:`thai_eval_utils.core.benchmark.Suite`
(Kim et al. 2024, section 4 and Table 5).

Items are keyed by question ``id`` (the judge run's store key hashes the answer, which differs between models).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd

from thai_eval_utils.core.benchmark import Average, Headline, Interval, ItemView, LeaderboardTable, Sides
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.stats.cells import average_ci, cell, mean_ci, summary_value
from thai_eval_utils.tasks.language import stats_note
from thai_eval_utils.thaicli.data import load_thaicli
from thai_eval_utils.thaicli.plots import score_distribution

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: The suite's name (its runs' ``benchmark`` prefix), the run holding the judge scores, the leaderboard table's key.
NAME = "thaicli"
JUDGE_RUN = f"{NAME}/judge"
TABLE = "thaicli"
FORMATS = ("factoid", "instruction")


def answers_of(judge_run: StoredRun) -> dict[str, str]:
    """The answers (id -> text) of the answers run the judge run names (``config.answers_run``), when that run is
    in the same outputs folder; else {}."""
    answers_id = (judge_run.card.get("config") or {}).get("answers_run")
    folder = judge_run.dir.parent.parent / "answers" / str(answers_id)
    if not answers_id or not (folder / "run_card.json").exists():
        return {}
    return {str(r["id"]): str(r.get("answer", "")) for r in StoredRun.from_dir(folder).records()}


def questions_in(folder: Path | None) -> pd.DataFrame | None:
    """The questions and references (by id) in ``folder``; None when there is no such folder."""
    if folder is None or not folder.exists():
        return None
    return load_thaicli(folder).set_index("id")


def thaicli_items(run: StoredRun, questions: pd.DataFrame | None) -> list[ItemView]:
    """One item per judgement (item x repeat): the question, both references, the answer, the judge's reply."""
    answers = answers_of(run)
    out = []
    for rec in run.records():
        qid = str(rec["id"])
        score = rec.get("score")
        item = ItemView(
            task=str(rec.get("format", "")),
            key=qid,
            question_label="question",
            output_label="the model's answer",
            value=None if score is None else float(score),
            output=answers.get(qid, ""),
            judge_reply=str(rec.get("explanation") or rec.get("error") or ""),
            judge_status=rec.get("status"),
            repeat=rec.get("repeat", 0),
            subject=rec.get("theme"),
        )
        if questions is not None and qid in questions.index:
            q = questions.loc[qid]
            item.question, item.reference = str(q["question"]), f"chosen: {q['chosen']}\n\nrejected: {q['rejected']}"
        else:
            item.note = "question and references not at hand (ThaiCLI data folder not found or has other ids)"
        if not item.output:
            item.note = "; ".join(filter(None, [item.note, "the answers run is not in this outputs folder"]))
        out.append(item)
    return out


class ThaiCLIViews:
    """The display hooks of the ThaiCLI suite (mixed into :class:`~.suite.ThaiCLISuite`)."""

    scale_note: ClassVar[str] = "ThaiCLI 0-10"
    #: The ThaiCLI score: the unweighted mean of factoid and instruction (Table 5), judge scale 0-10.
    averages: ClassVar[tuple[Average, ...]] = (Average(f"{NAME}/{NAME}", f"{NAME}/", scale=1.0),)
    leaderboard_tables: ClassVar[tuple[LeaderboardTable, ...]] = (
        LeaderboardTable(TABLE, "ThaiCLI (judge score 0-10; Kim et al. Table 5)", ("thaicli_avg", *FORMATS)),
    )

    def holds_headlines(self, run: StoredRun) -> bool:
        """The judge runs (the answers runs hold no score)."""
        return run.benchmark == JUDGE_RUN

    def headlines(self, run: StoredRun, data_dir: Path | None = None) -> list[Headline]:
        """Factoid and instruction judge scores per question id; unjudged judgements are left out and counted.

        A run judged ``repeats`` times holds one record per (item, repeat): an item's value is the mean of its judged
        repeats, as :func:`thai_eval_utils.thaicli.scores.thaicli_scores` scores it.
        """
        recs = run.records()
        unjudged = sum(1 for r in recs if r.get("status") == "unjudged" or r.get("score") is None)
        out = []
        cols = ["key", "value", "status", "explanation", "theme"]
        for fmt in FORMATS:
            judged = [
                (str(r["id"]), float(r["score"]), r.get("status"), r.get("explanation", ""), r.get("theme"))
                for r in recs
                if r.get("format") == fmt and r.get("status") != "unjudged" and r.get("score") is not None
            ]
            rows = pd.DataFrame(judged, columns=cols).groupby("key", sort=False, as_index=False)
            rows = rows.agg(value=("value", "mean"), **{c: (c, "first") for c in cols[2:]})
            note = f"{unjudged} unjudged judgement(s) left out of the run" if unjudged else ""
            out.append(Headline(f"{NAME}/{fmt}", NAME, fmt, "mean", 1.0, rows, run, note))
        return out

    def item_views(
        self,
        run: StoredRun,
        heads: Sequence[Headline],
        data_dir: Path | None,
        pools: dict[str, list[str]],
        notes: list[str],
    ) -> list[ItemView]:
        """Every judgement with its question and references (from the data root's ThaiCLI folder), answer and reply."""
        if not self.holds_headlines(run):
            return []
        try:
            questions = questions_in(self.data_path(data_dir))  # type: ignore[attr-defined]
        except ThaiEvalDataError as exc:
            notes.append(f"{run.benchmark}: ThaiCLI questions not read: {exc}")
            questions = None
        return thaicli_items(run, questions)

    def sides(self, head_a: Headline, head_b: Headline, keys: Sequence[str], data_dir: Path | None) -> list[Sides]:
        """The question and both references (from the data root's ThaiCLI folder), both answers, both judge replies."""
        questions = questions_in(self.data_path(data_dir))  # type: ignore[attr-defined]
        ans_a, ans_b = answers_of(head_a.run), answers_of(head_b.run)
        expl_a, expl_b = (h.items.set_index("key")["explanation"] for h in (head_a, head_b))
        out = []
        for key in keys:
            q = questions.loc[key] if questions is not None and key in questions.index else None
            question = "" if q is None else q["question"]
            refs = "" if q is None else f"chosen: {q['chosen']}\nrejected: {q['rejected']}"
            out.append(Sides(question, refs, ans_a.get(key, ""), ans_b.get(key, ""), expl_a[key], expl_b[key]))
        return out

    def leaderboard_cells(self, model: str, heads: Sequence[Headline], boot: Interval) -> list[dict[str, Any]]:
        """Factoid and instruction (the run's summary scores) with their intervals, and the ThaiCLI average."""
        parts = list(heads)
        out = []
        for h in parts:
            value, n = summary_value(h.run.summary, h.stratum)
            low, high = mean_ci(h, boot)
            replies = stats_note((h.run.summary or {}).get("answers_replies"))  # the answers' language
            note = "; ".join(x for x in (h.note, replies) if x)
            out.append(cell(TABLE, model, h.stratum, value, n, f"{NAME}|{h.stratum}", low=low, high=high, note=note))
        if parts:
            value, n = summary_value(parts[0].run.summary, NAME)
            low, high = average_ci(parts, boot) if len(parts) == 2 else (None, None)
            out.append(cell(TABLE, model, "thaicli_avg", value, n, f"{NAME}|", low=low, high=high, note=parts[0].note))
        return out

    def figures(
        self, runs: Mapping[str, Mapping[str, StoredRun]], heads: Mapping[str, Sequence[Headline]]
    ) -> list[tuple[str, Figure | None]]:
        """Each model's judge-score distribution (per format and theme)."""
        out: list[tuple[str, Figure | None]] = []
        for model, hs in heads.items():
            if hs:
                items = pd.concat(
                    [h.items.assign(format=h.stratum, score=h.items["value"]) for h in hs], ignore_index=True
                )
                items["status"] = items["status"].fillna("scored")
                items["theme"] = items["theme"].fillna("")
                out.append((f"ThaiCLI: {model}", score_distribution(items, title=f"ThaiCLI judge scores: {model}")))
        return out
