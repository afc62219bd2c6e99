"""The ThaiCLI judge on the run loop and the store: the async run loop's contract, the store's group
append, compaction and legacy-NaN migration, and a judging run folder written before the judge used the store
(tests/data/thaicli_judge_legacy, written by the previous version) resuming with no judgement lost or repeated."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from fake_openai_server import FakeOpenAIServer, PerAnswerScript, Reply
from test_judge import frame, run

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.run_files import loads_standard
from thai_eval_utils.core.runloop import run_items_async
from thai_eval_utils.core.store import NonFiniteRecordError, RunStore
from thai_eval_utils.judging.cache import JudgementCache

LEGACY = Path(__file__).parent / "data" / "thaicli_judge_legacy"
LEGACY_RUN = Path("runs/m/thaicli/judge/9e0d09b1f3c5")


# --------------------------------------------------------------------------------------- the async run loop


class Boom(Exception):
    pass


class Stop(Exception):
    pass


def test_run_items_async_stores_each_record_and_skips_what_is_done(tmp_path):
    """Items run concurrently; every finished one is appended, a tolerated error leaves its item out, duplicate keys
    are called once, and a stored record that ``done`` rejects is computed again."""
    calls = []

    async def call(x):
        calls.append(x)
        await asyncio.sleep(0.01 * (5 - x))  # later items finish first
        if x == 3:
            raise Boom("item 3 failed")
        return {"y": x * 10}

    with RunStore.open("m", "loop/async", {}, outputs=tmp_path) as store:
        store.append("k0", {"y": 0})
        store.append("k1", {"y": None})  # stored but not done: asked again
        items = [0, 1, 2, 3, 4, 4]
        out = asyncio.run(
            run_items_async(
                store,
                items,
                lambda x: f"k{x}",
                call,
                finish=lambda x, r: {**r, "x": x},
                done=lambda r: r.get("y") is not None,
                desc="t",
                progress=False,
                tolerate=(Boom,),
                describe=lambda e: f"failed: {e}",
            )
        )
        stored = store.completed()
    assert sorted(calls) == [1, 2, 3, 4] and out.computed == 3 and out.fatal is None
    assert out.failed == {"k3": "failed: item 3 failed"}
    assert {k: r["y"] for k, r in stored.items()} == {"k0": 0, "k1": 10, "k2": 20, "k4": 40}
    assert [r["y"] for r in out.in_order()] == [0, 10, 20, 40, 40]


def test_run_items_async_ends_on_a_fatal_error_with_the_finished_records_written(tmp_path):
    async def call(x):
        if x == 2:
            await asyncio.sleep(0.05)
            raise Stop("key refused")
        if x >= 3:
            await asyncio.sleep(10)  # in flight when the run stops: cancelled, never stored
        return {"y": x}

    with RunStore.open("m", "loop/fatal", {}, outputs=tmp_path) as store:
        out = asyncio.run(
            run_items_async(
                store, list(range(6)), str, call, desc="t", progress=False, tolerate=(Exception,), fatal=(Stop,)
            )
        )
        stored = store.completed()
    assert isinstance(out.fatal, Stop) and str(out.fatal) == "key refused"
    assert sorted(stored) == ["0", "1"] and out.computed == 2 and out.failed == {}


def test_run_items_async_raises_a_write_error_after_the_run(tmp_path):
    async def call(x):
        return {"y": float("nan")}

    with RunStore.open("m", "loop/nan", {}, outputs=tmp_path) as store:
        with pytest.raises(NonFiniteRecordError, match="field y is not a finite number"):
            asyncio.run(run_items_async(store, [1], str, call, desc="t", progress=False))
        assert store.completed() == {}


# ------------------------------------------------------------------------------------- store: new methods


def test_append_many_compact_and_shared_file(tmp_path):
    with RunStore.open("m", "a/b", {}, outputs=tmp_path) as store:
        store.append_many([("b", {"v": 1}), ("a", {"v": 2}), ("c", {"v": 3})])
        store.append("b", {"v": 4})  # the last record of a key wins
        with pytest.raises(NonFiniteRecordError):
            store.append_many([("d", {"v": 5}), ("e", {"v": float("inf")})])  # refused whole: no d either
        assert len(store.items_path.read_bytes().splitlines()) == 4
        store.compact(["a", "b", "x"])  # kept in this order; c (not given) and x (no record) left out
        lines = [loads_standard(x) for x in store.items_path.read_text().splitlines()]
        assert lines == [{"key": "a", "v": 2}, {"key": "b", "v": 4}]
        assert store.shared_file("j.jsonl") == tmp_path / "cache" / "j.jsonl"
        assert not list(store.root.glob("items.jsonl.tmp*"))


def test_legacy_nan_is_migrated_only_in_the_named_fields(tmp_path):
    with RunStore.open("m", "a/b", {}, outputs=tmp_path) as store:
        store.append("a", {"v": 1})
        path = store.items_path
    with open(path, "ab") as fh:
        fh.write(b'{"key": "b", "served_model": NaN, "v": 2}\n')
    with RunStore.open("m", "a/b", {}, outputs=tmp_path, legacy_nan_fields=("served_model",)) as store:
        assert store.completed() == {"a": {"key": "a", "v": 1}, "b": {"key": "b", "served_model": None, "v": 2}}
        assert store.migrate_legacy_nan(("served_model",)) == 0  # done once
    with open(path, "ab") as fh:
        fh.write(b'{"key": "c", "served_model": NaN, "v": NaN}\n')  # a NaN elsewhere: still a damaged line
    with RunStore.open("m", "a/b", {}, outputs=tmp_path, legacy_nan_fields=("served_model",)) as store:
        with pytest.raises(ThaiEvalDataError, match="line 3 of the file is not a standard JSON record"):
            store.completed()


# ------------------------------------------------------------------------- a run folder of the previous version


def legacy_outputs(tmp_path, *, with_cache=True):
    shutil.copytree(LEGACY, tmp_path, dirs_exist_ok=True)
    if not with_cache:
        (tmp_path / "cache" / "thaicli_judgements.jsonl").unlink()
    old = (tmp_path / LEGACY_RUN / "items.jsonl").read_bytes()
    assert b"NaN" in old  # the previous version wrote NaN (not standard JSON) for an unjudged item's served model
    return [json.loads(x) for x in old.splitlines()]


@pytest.mark.parametrize("with_cache", [True, False], ids=["with-cache", "cache-deleted"])
def test_a_judging_run_of_the_previous_version_resumes_judging_only_the_unjudged(tmp_path, with_cache):
    """Answers good (8), down (unjudged: the server failed) and bad (5 after two unparsable replies), judged by
    the previous version; the resumed run asks only for ``down``, keeps the stored scores and counts, and leaves
    standard JSON in item order."""
    old = legacy_outputs(tmp_path, with_cache=with_cache)
    script = PerAnswerScript(default=Reply("<score>7</score>"))
    with FakeOpenAIServer(script) as srv:
        res = run(frame(["good", "down", "bad"]), srv, tmp_path, max_retries=1, concurrency=2)
    assert script.calls == {"down": 1} and res.store.root == tmp_path / LEGACY_RUN
    items = res.items.set_index("answer")
    assert items["score"].tolist() == [8.0, 7.0, 5.0] and res.n_unjudged == 0
    assert (items.loc["bad", "attempts"], items.loc["bad", "parse_failures"]) == (3, 2)
    assert items.loc["good", "judgement_key"] == old[0]["judgement_key"]
    lines = [loads_standard(x) for x in res.store.items_path.read_text(encoding="utf-8").splitlines()]
    assert [r["key"] for r in lines] == [r["key"] for r in old]
    assert [(r["status"], r["score"], r["served_model"]) for r in lines] == [
        ("scored", 8.0, "fake-judge-2024-01-01"),
        ("scored", 7.0, "fake-judge-2024-01-01"),
        ("scored", 5.0, "fake-judge-2024-01-01"),
    ]
    s = res.summary
    assert (s["n_from_cache"], s["n_judged_this_run"], s["judge_calls_this_run"]) == (2, 1, 1)
    # all judgements' tokens: the old ones from the cache (the old items held none), the new one from the store
    old_tokens = {"prompt": 100 + 300, "completion": 20 + 60} if with_cache else {"prompt": 0, "completion": 0}
    assert s["token_usage_all_judgements"] == {
        "prompt": old_tokens["prompt"] + 100,
        "completion": old_tokens["completion"] + 20,
    }
    assert items.loc["bad", "last_judgement"] == ("<score>5</score><explanation>ok</explanation>" if with_cache else "")
    assert len(JudgementCache(tmp_path / "cache" / "thaicli_judgements.jsonl")) == 3
