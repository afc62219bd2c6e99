"""A researcher's store for the paper tables, written through ``core.store.RunStore`` with tiny summaries: three
models at two limits (3 and 5), an older Thai-H6 ARC run at another limit, a 0-shot ARC run beside the
leaderboard's 25 shots (two configurations of one task), older finished runs superseded by later ones (Thai-H6
and the ThaiCLI judge), unfinished runs, a model with nothing finished, and a run of a benchmark no paper table
reads. The store's clock ticks one second per stamp, so "latest" is the order the runs are written in here."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from thai_eval_utils.core.provenance import Score
from thai_eval_utils.core.store import RunStore

H6_HEADLINES = {
    "th_arc": "acc_norm",
    "th_hellaswag": "acc_norm",
    "th_mmlu": "acc",
    "th_truthfulqa": "mc2",
    "th_winogrande": "acc",
    "th_gsm8k": "exact_match",
}
LB_SHOTS = {"th_arc": 25, "th_hellaswag": 10, "th_mmlu": 5, "th_truthfulqa": 0, "th_winogrande": 5, "th_gsm8k": 5}
#: The shown runs' Thai-H6 scores (0-1), task order as H6_HEADLINES: small-a averages 43.33 (260 / 6), small-b 50.00.
SMALL_A = (0.50, 0.40, 0.30, 0.60, 0.70, 0.10)
SMALL_B = (0.25, 0.35, 0.45, 0.55, 0.65, 0.75)


class Clock:
    """``now_utc`` for the store: one second later at every call, from 2030-01-01."""

    def __init__(self) -> None:
        self.time = datetime(2030, 1, 1, tzinfo=timezone.utc)

    def __call__(self) -> str:
        self.time += timedelta(seconds=1)
        return self.time.isoformat(timespec="seconds")


def _run(out: Path, model: str, bench: str, config: dict, summary: dict | None, *, rev: str, items: int) -> str:
    """Write one run (``items`` records; finished when ``summary`` is given); returns its config id."""
    store = RunStore.open(model, bench, config, model_identity={"name": model, "revision": rev}, outputs=out)
    for i in range(items):
        store.append(str(i), {"doc": i})
    if summary is not None:
        store.write_summary(summary)
    store.close()
    return store.config_id


def h6_run(
    out: Path,
    model: str,
    task: str,
    value: float,
    limit: int,
    *,
    rev: str,
    shots: int | None = None,
    finished: bool = True,
) -> str:
    """A Thai-H6 run of ``limit`` documents scoring ``value`` (unfinished: one record, no summary)."""
    config = {"task": task, "num_fewshot": LB_SHOTS[task] if shots is None else shots, "sampler": "lb"}
    metric = H6_HEADLINES[task]
    summary = {
        "task": task,
        "n": limit,
        "n_docs": limit,
        "limit": limit,
        "scores": {metric: Score(f"{task}/{metric}", value, limit).to_dict()},
    }
    return _run(
        out, model, f"thai_h6/{task}", config, summary if finished else None, rev=rev, items=limit if finished else 1
    )


def judge_run(out: Path, model: str, judge: str, factoid: float, instruction: float) -> str:
    """A finished ThaiCLI judge run of three answers (two factoid, one instruction)."""
    scores = {
        "thaicli": Score("thaicli", (factoid + instruction) / 2, 3).to_dict(),
        "factoid": Score("factoid", factoid, 2).to_dict(),
        "instruction": Score("instruction", instruction, 1).to_dict(),
    }
    return _run(
        out, model, "thaicli/judge", {"judge": {"model": judge}}, {"n_unjudged": 0, "scores": scores}, rev="r1", items=3
    )


def add_mixed_runs(out: Path, monkeypatch: Any) -> dict[str, str]:
    """Write the mixed store's runs under ``out/runs`` (the store's clock patched); returns name -> config id of the
    runs the tests name."""
    monkeypatch.setattr("thai_eval_utils.core.store.now_utc", Clock())
    ids = {"a_arc_old": h6_run(out, "small-a", "th_arc", 0.20, 2, rev="r1")}  # superseded, and limit 2
    for task, value in zip(H6_HEADLINES, SMALL_A):
        ids[f"a_{task}"] = h6_run(out, "small-a", task, value, 3, rev="r2")
    ids["a_arc_0shot"] = h6_run(out, "small-a", "th_arc", 0.90, 3, rev="r2", shots=0)  # another configuration
    ids["a_gsm8k_rerun"] = h6_run(out, "small-a", "th_gsm8k", 0.0, 3, rev="r3", finished=False)  # unfinished rerun
    ids["b_mmlu_old"] = h6_run(out, "small-b", "th_mmlu", 0.95, 5, rev="r1")  # superseded, same limit
    for task, value in zip(H6_HEADLINES, SMALL_B):
        ids[f"b_{task}"] = h6_run(out, "small-b", task, value, 5, rev="r2")
    ids["c_arc_old"] = h6_run(out, "small-c", "th_arc", 0.0, 5, rev="r1", finished=False)
    ids["c_arc"] = h6_run(out, "small-c", "th_arc", 0.0, 5, rev="r2", finished=False)  # nothing of small-c finished
    ids["a_judge"] = judge_run(out, "small-a", "judge-1", 6.5, 5.5)
    ids["b_judge_old"] = judge_run(out, "small-b", "judge-1", 9.5, 8.5)  # superseded by another judge's run
    ids["b_judge"] = judge_run(out, "small-b", "judge-2", 4.5, 3.5)
    ids["a_other"] = _run(out, "small-a", "other/bench", {}, {"x": 1}, rev="r1", items=1)
    return ids
