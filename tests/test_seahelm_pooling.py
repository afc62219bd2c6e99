"""Several SEA-HELM tasks per engine call (``seahelm.pooling``, for speed): the stored records and the
scores equal the per-task path's, run by run, with sampling on (the tiny model's defaults: vLLM's T=1, top-p 1);
one call per run instead of one per task and run; a killed pooled run resumes without loss or duplicates."""

from __future__ import annotations

import json

import pytest

from tests.fakes import FakeModel
from thai_eval_utils.seahelm import Protocol, run_suite
from thai_eval_utils.seahelm.pooling import can_pool, pool_replies

#: Four budgets (sentiment 32, causal 128, thai_exam_ic 32, belebele-qa-mc 16) and a -logprobs twin.
TASKS = ["sentiment", "causal", "thai_exam_ic", "belebele-qa-mc"]


class CountingModel:
    """The tiny LocalModel, counting its chat calls (and failing on the ``fail_on``-th, to simulate a kill)."""

    def __init__(self, model, fail_on: int | None = None) -> None:
        self._model, self.calls, self.fail_on = model, [], fail_on

    def __getattr__(self, name):
        return getattr(self._model, name)

    def chat(self, messages_list, **kwargs):
        self.calls.append((len(messages_list), kwargs["max_new_tokens"], kwargs["seed"]))
        if self.fail_on is not None and len(self.calls) == self.fail_on:
            raise RuntimeError("simulated kill")
        return self._model.chat(messages_list, **kwargs)


def _records(outputs, task):
    (items,) = [p for p in (outputs / "runs").rglob("items.jsonl") if f"/seahelm/{task}/" in p.as_posix()]
    recs = [json.loads(line) for line in items.read_text(encoding="utf-8").splitlines()]
    return items.parent.name, {r["key"]: r for r in recs}, len(recs)


def test_pooled_records_and_scores_equal_the_per_task_path(tiny_local_model, tmp_path):
    per_task, pooled = CountingModel(tiny_local_model), CountingModel(tiny_local_model)
    a = run_suite(per_task, TASKS, runs=2, limit=2, outputs=tmp_path / "a", progress=False, pool=False)
    b = run_suite(pooled, TASKS, runs=2, limit=2, outputs=tmp_path / "b", progress=False)
    assert len(per_task.calls) == 2 * len(TASKS)  # one chat call per task and run
    # one call per run, each prompt with its task's budget (longest first), each run with its own seed
    assert pooled.calls == [
        (8, [128, 128, 32, 32, 32, 32, 16, 16], 25008113),
        (8, [128, 128, 32, 32, 32, 32, 16, 16], 42008474),
    ]
    for task in TASKS:
        folder_a, recs_a, n_a = _records(tmp_path / "a", task)
        folder_b, recs_b, n_b = _records(tmp_path / "b", task)
        assert folder_a == folder_b and n_a == n_b == 4  # the same config id; 2 runs x 2 items, once each
        assert recs_a == recs_b  # the same raw replies, scored texts and prompts, item by item
        assert a[task].summary["over_runs"] == b[task].summary["over_runs"]
        assert a[task].summary["signature"] == b[task].summary["signature"]
    assert any(r["reply"] for t in TASKS for r in _records(tmp_path / "b", t)[1].values())  # it did generate
    assert len({r["reply"] for r in _records(tmp_path / "b", "sentiment")[1].values()}) > 1  # seeds differ by run


def test_a_killed_pooled_run_resumes_without_loss_or_duplicates(tiny_local_model, tmp_path):
    with pytest.raises(RuntimeError, match="simulated kill"):
        run_suite(CountingModel(tiny_local_model, fail_on=2), TASKS, runs=2, limit=2, outputs=tmp_path, progress=False)
    assert all(_records(tmp_path, t)[2] == 2 for t in TASKS)  # run 0 of every task was stored before the kill
    model = CountingModel(tiny_local_model)
    assert pool_replies(model, TASKS, runs=2, limit=2, outputs=tmp_path, progress=False) == 8  # run 1 only
    assert [c[2] for c in model.calls] == [42008474]
    done = run_suite(model, TASKS, runs=2, limit=2, outputs=tmp_path, progress=False)
    assert len(model.calls) == 1 and all(r.computed == 0 for r in done.values())
    for task in TASKS:
        _, recs, n = _records(tmp_path, task)
        assert n == 4 and sorted(k.split("/")[0] for k in recs) == ["r0", "r0", "r1", "r1"]


def test_what_is_not_pooled(tiny_local_model, tmp_path):
    assert can_pool(tiny_local_model, Protocol())
    assert not can_pool(tiny_local_model, Protocol(base=True))  # base models: two phases, a stop per phase
    fake = FakeModel(reply=lambda m: "คำตอบ: A")
    assert not can_pool(fake, Protocol())  # one budget per call: per task, as before
    assert pool_replies(fake, TASKS, runs=1, limit=1, outputs=tmp_path, progress=False) == 0
