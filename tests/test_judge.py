"""ThaiCLI judging loop against a scripted OpenAI-compatible server: the 16-call rule, transport errors,
resume after an abort or a kill, the cache under concurrent writers, a 2,000-item load, no key in outputs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from fake_openai_server import Fail, FakeOpenAIServer, PerAnswerScript, Reply, Slow

from thai_eval_utils.core.errors import JudgeError
from thai_eval_utils.backend.openai_client import ApiModel
from thai_eval_utils.thaicli.judge import TEMPLATE_SHA256, JudgeParams, judge_answers
from thai_eval_utils.judging.cache import JudgementCache

REPO = Path(__file__).resolve().parents[1]
FAKE_KEY = "sk-" + "test-SECRET-0123456789abcdefXYZ"  # built at run time: a fake key, not a leaked one
BAD = Reply("ขอโทษครับ ไม่สามารถให้คะแนนได้")  # no <score> tag


def frame(answers: list[str], formats: list[str] | None = None) -> pd.DataFrame:
    n = len(answers)
    formats = formats or ["factoid"] * n
    return pd.DataFrame(
        {
            "id": [f"{i:032x}" for i in range(n)],
            "format": formats,
            "theme": ["Culture" if i % 2 else "Religion" for i in range(n)],
            "question": [f"คำถามที่ {i} เกี่ยวกับวัฒนธรรมไทย" for i in range(n)],
            "chosen": ["คำตอบที่ดี"] * n,
            "rejected": ["คำตอบที่ไม่ดี"] * n,
            "answer": answers,
        }
    )


def run(df, srv, tmp_path, *, concurrency=4, timeout=5.0, max_retries=3, **kw):
    judge = ApiModel(
        "fake-judge",
        base_url=srv.base_url,
        api_key=FAKE_KEY,
        concurrency=concurrency,
        timeout=timeout,
        max_retries=max_retries,
    )
    return judge_answers(df, judge, model_name="m", outputs=tmp_path, progress=False, **kw)


def test_fifteen_bad_then_good_and_sixteen_bad(tmp_path):
    script = PerAnswerScript(
        {
            "a": [BAD] * 15 + [Reply("<score>6</score><explanation>พอใช้</explanation>")],
            "b": [BAD] * 16 + [Reply("<score>9</score>")],  # the 17th would parse but is never asked for
            "c": [Reply("<score>8</score>")],
        }
    )
    with FakeOpenAIServer(script) as srv:
        res = run(frame(["a", "b", "c"]), srv, tmp_path)
    items = res.items.set_index("answer")
    assert (items.loc["a", "score"], items.loc["a", "status"], items.loc["a", "attempts"]) == (6.0, "scored", 16)
    assert items.loc["a", "explanation"] == "พอใช้" and items.loc["a", "parse_failures"] == 15
    assert (items.loc["b", "score"], items.loc["b", "status"], items.loc["b", "attempts"]) == (0.0, "fallback_zero", 16)
    assert items.loc["c", "attempts"] == 1
    assert script.calls == {"a": 16, "b": 16, "c": 1}
    assert srv.n_chat_calls == 33
    fmt = res.scores.by_format.set_index("format")
    assert fmt.loc["factoid", "n_parse_retries"] == 15 + 15 + 0
    assert fmt.loc["factoid", "n_zero_fallback"] == 1
    assert res.scores.factoid.value == pytest.approx((6 + 0 + 8) / 3)
    s = res.summary
    assert s["judge_calls_this_run"] == 33 and s["n_unjudged"] == 0
    assert s["token_usage_this_run"] == {"prompt": 3300, "completion": 660}
    assert s["served_models"] == ["fake-judge-2024-01-01"] and s["system_fingerprints"] == ["fp_fake123"]
    assert s["template_sha256"] == TEMPLATE_SHA256 and s["cost_usd_this_run"] is None
    # every request carried temperature 0, the seed and max_tokens explicitly
    assert {(b["temperature"], b["seed"], b["max_tokens"]) for b in srv.bodies} == {(0.0, 0, 512)}
    # rerun: everything from the cache, zero calls
    with FakeOpenAIServer(PerAnswerScript(default=Reply("<score>1</score>"))) as srv2:
        again = run(frame(["a", "b", "c"]), srv2, tmp_path)
    assert srv2.n_chat_calls == 0
    assert again.items["score"].tolist() == [6.0, 0.0, 8.0]
    assert again.summary["n_from_cache"] == 3


def test_transport_errors_are_retried_and_never_counted(tmp_path):
    script = PerAnswerScript(
        {
            "x": [
                Fail(429, {"retry-after-ms": "10"}),
                BAD,
                Fail(500, {"retry-after-ms": "10"}),
                Fail(503),
                BAD,
                Reply("<score>7</score>"),
            ],
            "y": [Slow(3.0), Reply("<score>5</score>")],  # the first request times out (timeout=0.5 s)
        }
    )
    with FakeOpenAIServer(script) as srv:
        res = run(frame(["x", "y"]), srv, tmp_path, timeout=0.5)
    items = res.items.set_index("answer")
    assert (items.loc["x", "score"], items.loc["x", "attempts"], items.loc["x", "parse_failures"]) == (7.0, 3, 2)
    assert (items.loc["y", "score"], items.loc["y", "attempts"]) == (5.0, 1)
    assert script.calls == {"x": 6, "y": 2}
    assert res.summary["judge_calls_this_run"] == 4  # answered requests only


def test_persisting_transport_errors_leave_items_unjudged_and_reported(tmp_path):
    script = PerAnswerScript({"down": [Fail(500, {"retry-after-ms": "1"})] * 3}, default=Reply("<score>8</score>"))
    df = frame(["ok", "down"], ["factoid", "instruction"])
    with FakeOpenAIServer(script) as srv:
        res = run(df, srv, tmp_path, max_retries=2)  # 1 try + 2 retries, all 500
    assert script.calls["down"] == 3
    items = res.items.set_index("answer")
    assert items.loc["down", "status"] == "unjudged" and pd.isna(items.loc["down", "score"])
    assert "InternalServerError" in items.loc["down", "error"] and "500" in items.loc["down", "error"]
    assert res.n_unjudged == 1 and res.summary["unjudged_ids"] == [df["id"][1]]
    assert res.scores.by_format.set_index("format").loc["instruction", "n_unjudged"] == 1
    assert res.scores.instruction.n == 0  # not silently a 0
    cache = JudgementCache(tmp_path / "cache" / "thaicli_judgements.jsonl")
    assert len(cache) == 1  # the failure was not cached
    # the endpoint recovers: a rerun judges only the missing item
    with FakeOpenAIServer(script) as srv2:
        again = run(df, srv2, tmp_path)
    assert srv2.n_chat_calls == 1 and again.n_unjudged == 0
    assert again.items["score"].tolist() == [8.0, 8.0]
    summary = json.loads((again.store.root / "summary.json").read_text())
    assert summary["n_unjudged"] == 0 and summary["n_from_cache"] == 1


def test_abort_mid_run_then_resume_repeats_nothing(tmp_path):
    answers = [f"ans{i}" for i in range(10)]
    # concurrency 1: items are judged in order; the 6th request is refused (bad key) -> the run stops
    first = PerAnswerScript({"ans5": [Fail(401)]}, default=Reply("<score>4</score>"))
    with FakeOpenAIServer(first) as srv, pytest.raises(JudgeError, match="AuthenticationError"):
        run(frame(answers), srv, tmp_path, concurrency=1)
    assert set(first.calls) == {f"ans{i}" for i in range(6)}
    cache_path = tmp_path / "cache" / "thaicli_judgements.jsonl"
    assert len(JudgementCache(cache_path)) == 5
    second = PerAnswerScript(default=Reply("<score>4</score>"))
    with FakeOpenAIServer(second) as srv2:
        res = run(frame(answers), srv2, tmp_path, concurrency=1)
    assert set(second.calls) == {f"ans{i}" for i in range(5, 10)} and srv2.n_chat_calls == 5
    assert res.items["score"].tolist() == [4.0] * 10
    assert len(res.store.completed()) == 10  # every item recorded once in the run's store


KILL_CHILD = """
import sys, pandas as pd
sys.path[:0] = [{repo!r}, {tests!r}]
from test_judge import frame, FAKE_KEY
from thai_eval_utils.backend.openai_client import ApiModel
from thai_eval_utils.thaicli.judge import judge_answers
judge = ApiModel("fake-judge", base_url={url!r}, api_key=FAKE_KEY, concurrency=2)
judge_answers(frame([f"k{{i}}" for i in range(40)]), judge, model_name="m", outputs={out!r}, progress=False)
"""


def stored_lines(tmp_path: Path) -> list[dict]:
    """The records of the judging run's ``items.jsonl`` (the one run under ``tmp_path``), in file order."""
    paths = list((tmp_path / "runs").rglob("items.jsonl")) if (tmp_path / "runs").exists() else []
    return [json.loads(x) for p in paths for x in p.read_bytes().splitlines() if x.endswith(b"}")]


def test_killed_run_resumes_without_losing_or_repeating(tmp_path):
    cache_path = tmp_path / "cache" / "thaicli_judgements.jsonl"
    first = PerAnswerScript(default=Slow(0.05, Reply("<score>3</score>")))
    with FakeOpenAIServer(first) as srv:
        code = KILL_CHILD.format(repo=str(REPO), tests=str(REPO / "tests"), url=srv.base_url, out=str(tmp_path))
        child = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 120  # wait for progress, not a timing assertion
            while time.monotonic() < deadline and child.poll() is None:
                if len(stored_lines(tmp_path)) >= 6:  # judgements reach the run's store as they finish
                    break
                time.sleep(0.02)
            assert child.poll() is None, child.stderr.read().decode()
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.wait()
            child.stderr.close()
    stored = [r["judgement_key"] for r in stored_lines(tmp_path)]
    assert 6 <= len(stored) < 40 and len(set(stored)) == len(stored)  # each judgement stored once
    assert not cache_path.exists()  # the shared cache is filled when a run finishes: resume reads the store
    second = PerAnswerScript(default=Reply("<score>3</score>"))
    df = frame([f"k{i}" for i in range(40)])
    with FakeOpenAIServer(second) as srv2:
        res = run(df, srv2, tmp_path)
    assert srv2.n_chat_calls == 40 - len(stored)  # none repeated
    judged_before = set(res.items.loc[res.items["judgement_key"].isin(stored), "answer"])
    assert judged_before.isdisjoint(second.calls)  # nothing judged twice
    assert res.n_unjudged == 0 and res.items["score"].tolist() == [3.0] * 40  # nothing lost
    lines = stored_lines(tmp_path)  # the store holds each judgement once, in item order, and so does the cache
    assert [r["id"] for r in lines] == df["id"].tolist() and len({r["key"] for r in lines}) == 40
    assert {r["key"] for r in JudgementCache(cache_path)} == set(res.items["judgement_key"])


WRITER = """
import sys
sys.path.insert(0, {repo!r})
from thai_eval_utils.judging.cache import JudgementCache
cache = JudgementCache({path!r})
for i in range(300):
    cache.append({{"key": "{tag}-%d" % i, "status": "scored", "score": 5.0, "explanation": "คำอธิบายภาษาไทย " * 40}})
"""


def test_cache_under_two_concurrent_writer_processes(tmp_path):
    path = tmp_path / "cache.jsonl"
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER.format(repo=str(REPO), path=str(path), tag=t)]) for t in "AB"
    ]
    assert [p.wait() for p in procs] == [0, 0]
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 600
    keys = {json.loads(line)["key"] for line in lines}
    assert keys == {f"{t}-{i}" for t in "AB" for i in range(300)}
    cache = JudgementCache(path)
    assert len(cache) == 600 and cache.n_bad_lines == 0


def test_cache_tolerates_a_torn_last_line(tmp_path):
    path = tmp_path / "cache.jsonl"
    cache = JudgementCache(path)
    cache.append({"key": "k1", "status": "scored", "score": 7.0})
    with open(path, "ab") as fh:
        fh.write(b'{"key": "k2", "status": "sco')  # a writer died mid-line
    reread = JudgementCache(path)
    assert len(reread) == 1 and reread.get("k1")["score"] == 7.0
    reread.append({"key": "k3", "status": "fallback_zero", "score": 0.0})
    final = JudgementCache(path)
    assert sorted(r["key"] for r in final) == ["k1", "k3"] and final.n_bad_lines == 1
    with pytest.raises(ValueError, match="only final"):
        final.append({"key": "k4", "status": "unjudged"})


def test_load_2000_judgements_at_concurrency_64(tmp_path):
    n = 2000

    def responder(body):  # instant; the score is derived from the item so each result can be checked
        i = int(body["messages"][-1]["content"].split("<model_answer>\n")[1].split("\n")[0].removeprefix("L"))
        return Reply(
            f"<score>{i % 10 + 1}</score><explanation>ข้อ {i}</explanation>", prompt_tokens=50, completion_tokens=10
        )

    df = frame([f"L{i}" for i in range(n)], ["factoid" if i % 4 else "instruction" for i in range(n)])
    with FakeOpenAIServer(responder) as srv:
        res = run(df, srv, tmp_path, concurrency=64)
    assert srv.n_chat_calls == n
    assert res.summary["n_judged"] == n and res.n_unjudged == 0
    assert res.items["score"].tolist() == [float(i % 10 + 1) for i in range(n)]
    assert res.items["explanation"].tolist() == [f"ข้อ {i}" for i in range(n)]
    assert len(JudgementCache(tmp_path / "cache" / "thaicli_judgements.jsonl")) == n
    assert res.summary["token_usage_this_run"] == {"prompt": 50 * n, "completion": 10 * n}


def test_api_key_never_written(tmp_path, monkeypatch):
    from thai_eval_utils.thaicli.answers import generate_answers

    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    script = PerAnswerScript({"": [BAD] * 16}, default=Reply("<score>8</score>"))
    df = frame(["a", "b"]).drop(columns="answer")
    with FakeOpenAIServer(script) as srv:
        model = ApiModel("fake-candidate", base_url=srv.base_url)  # key from the environment
        answers = generate_answers(model, df, outputs=tmp_path, max_new_tokens=16, progress=False)
        judge = ApiModel("fake-judge", base_url=srv.base_url)
        res = judge_answers(answers, judge, outputs=tmp_path, progress=False, params=JudgeParams(max_tokens=32))
    assert srv.auth_headers == {f"Bearer {FAKE_KEY}"}  # the key was used ...
    assert res.summary["n_judged"] == 2
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) >= 7  # answers + judge: items, run cards, summaries; the cache
    for p in written:  # ... and is nowhere on disk
        data = p.read_bytes()
        assert FAKE_KEY.encode() not in data and b"SECRET" not in data, p
    for text in (repr(judge), json.dumps(judge.identity), json.dumps(res.summary, default=str), res.items.to_csv()):
        assert "SECRET" not in text


def test_open_judge_checks_the_endpoint(monkeypatch):
    from thai_eval_utils.thaicli.demo_judge_server import free_port, open_judge

    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with FakeOpenAIServer() as srv, open_judge("fake-judge", base_url=srv.base_url, concurrency=3) as judge:
        assert (judge.model_id, judge.concurrency, judge.base_url) == ("fake-judge", 3, srv.base_url)
    with pytest.raises(JudgeError, match="not usable"):  # nothing listens there
        with open_judge("fake-judge", base_url=f"http://127.0.0.1:{free_port()}/v1"):
            pass
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(JudgeError, match="OPENAI_API_KEY"):  # OpenAI itself without a key: no request is made
        with open_judge("gpt-4o-2024-05-13"):
            pass
