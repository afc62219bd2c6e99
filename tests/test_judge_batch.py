"""Batch mode of the judge against a fake OpenAI Batch API on 127.0.0.1, through the real ``openai``
client: batch equals live, resume after a kill at every step with one batch in total, per-request errors, malformed
bodies and expiry never scored, offline files (``--batch-file-out`` / ``--batch-file-in``), no key in any file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fake_batch_server import FakeBatchServer
from fake_openai_server import MALFORMED_REPLIES, Fail, FakeOpenAIServer, PerAnswerScript, Reply
from test_judge import FAKE_KEY, frame

from thai_eval_utils.backend.openai_client import ApiModel
from thai_eval_utils.core.batch_files import reply_of
from thai_eval_utils.core.batch_rounds import BatchReport, BatchRounds, FailedTries
from thai_eval_utils.judging.batch import MAX_EXPIRED, BatchMode, custom_id
from thai_eval_utils.thaicli.judge import judge_answers, judge_batch

REPO = Path(__file__).resolve().parents[1]
BAD = Reply("ขอโทษครับ ไม่สามารถให้คะแนนได้")  # no <score> tag
TIMING = ("judged_at",)


def scripts() -> dict[str, list]:
    return {
        "a": [BAD, BAD, Reply("<score>6</score><explanation>พอใช้</explanation>")],
        "b": [BAD] * 16,
        "c": [Reply("<score>8</score>", prompt_tokens=50)],
    }


def judge_model(srv) -> ApiModel:
    return ApiModel("fake-judge", base_url=srv.base_url, api_key=FAKE_KEY, concurrency=4, timeout=5.0, max_retries=0)


def run_batch(df, srv, tmp_path, *, wait_s=30.0, **kw):
    judge = judge_model(srv)
    mode = kw.pop("batch", None) or judge_batch(judge, wait_s=wait_s, poll_s=0.01, progress=False)
    return judge_answers(df, judge, model_name="m", outputs=tmp_path, progress=False, batch=mode, **kw)


def records(res) -> list[dict]:
    return [
        {k: v for k, v in json.loads(x).items() if k not in TIMING}
        for x in res.store.items_path.read_text(encoding="utf-8").splitlines()
    ]


def no_key_anywhere(root: Path) -> None:
    for p in root.rglob("*"):
        if p.is_file():
            assert FAKE_KEY not in p.read_text(encoding="utf-8", errors="replace"), p


def test_batch_equals_live(tmp_path):
    df = frame(["a", "b", "c"])
    with FakeOpenAIServer(PerAnswerScript(scripts())) as live_srv:
        live = judge_answers(df, judge_model(live_srv), model_name="m", outputs=tmp_path / "live", progress=False)
    with FakeBatchServer(PerAnswerScript(scripts())) as srv:
        res = run_batch(df, srv, tmp_path / "batch")
        assert srv.n_chat_calls == live_srv.n_chat_calls == 3 + 16 + 1
        assert len(srv.batches) == 16  # one per round: the attempts of "b" go on until the 16th
        assert max(srv.answered.values()) == 1  # no request answered twice
        assert srv.auth_headers == {f"Bearer {FAKE_KEY}"}
    assert records(res) == records(live)
    assert res.scores.factoid.value == live.scores.factoid.value == pytest.approx((6 + 0 + 8) / 3)
    for k in ("judge_calls_this_run", "token_usage_this_run", "n_unjudged", "served_models", "system_fingerprints"):
        assert res.summary[k] == live.summary[k], k
    assert res.summary["batch"]["running"] is None and len(res.summary["batch"]["batch_ids"]) == 16
    body = json.loads((res.store.root / "batch_input.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert body["method"] == "POST" and body["url"] == "/v1/chat/completions"
    assert set(body["body"]) == {"model", "messages", "max_tokens", "temperature", "top_p", "seed"}
    assert body["custom_id"].endswith("#a16t0")
    no_key_anywhere(tmp_path)
    # a rerun asks nothing: every judgement is stored
    with FakeBatchServer(PerAnswerScript(default=Reply("<score>1</score>"))) as srv2:
        again = run_batch(df, srv2, tmp_path / "batch")
        assert srv2.n_chat_calls == 0 and not srv2.batches
    assert again.scores.factoid.value == res.scores.factoid.value


def test_not_waiting_says_so_and_next_run_collects(tmp_path, capsys):
    df = frame(["a", "c"])
    with FakeBatchServer(
        PerAnswerScript({"a": [Reply("<score>4</score>")], "c": [Reply("<score>8</score>")]}), polls_to_finish=3
    ) as srv:
        first = run_batch(df, srv, tmp_path, wait_s=0)
        assert first.n_unjudged == 2 and first.summary["batch"]["running"] == "batch_1"
        assert "batch batch_1: 0/2 done (in_progress); run the same command again to collect" in capsys.readouterr().out
        assert set(first.items["error"]) == {"waiting for batch batch_1"}
        second = run_batch(df, srv, tmp_path, wait_s=0)  # poll 2: still running
        assert second.summary["batch"]["running"] == "batch_1"
        third = run_batch(df, srv, tmp_path, wait_s=0)
        assert third.n_unjudged == 0 and list(third.items["score"]) == [4.0, 8.0]
        assert len(srv.batches) == 1 and srv.n_chat_calls == 2


KILLER = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, {tests!r})
    import pandas as pd
    from thai_eval_utils.backend.openai_client import ApiModel
    from thai_eval_utils.judging.batch import BatchMode
    from thai_eval_utils.backend.batch_api import OpenAIBatchTransport
    from thai_eval_utils.thaicli.judge import judge_answers
    from test_judge import frame
    judge = ApiModel("fake-judge", base_url={url!r}, api_key={key!r}, max_retries=0)
    def die(state):
        os.kill(os.getpid(), signal.SIGKILL)
    hooks = {{{point!r}: die}}
    mode = BatchMode(OpenAIBatchTransport(judge), wait_s=30, poll_s=0.01, progress=False, hooks=hooks)
    judge_answers(frame({answers!r}), judge, model_name="m", outputs={out!r}, progress=False, batch=mode)
""")


@pytest.mark.parametrize("point", ["after_upload", "created", "after_create", "poll"])
def test_kill_then_resume_one_batch(tmp_path, point):
    answers = ["a", "c", "d"]
    script = PerAnswerScript({"a": [BAD, Reply("<score>3</score>")]}, default=Reply("<score>7</score>"))
    with FakeBatchServer(script, polls_to_finish=2) as srv:
        code = KILLER.format(
            tests=str(REPO / "tests"), url=srv.base_url, key=FAKE_KEY, point=point, answers=answers, out=str(tmp_path)
        )
        proc = subprocess.run(
            [sys.executable, "-c", code],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
        if point == "after_create":  # killed after create: batch.json says so
            state = json.loads(next(tmp_path.rglob("batch.json")).read_text())
            assert state["state"] == "submitted"
        res = run_batch(frame(answers), srv, tmp_path)
        # round 1 (3 requests) and round 2 (a's second attempt): exactly one batch each, however the first run died
        sizes = [len(srv.files[b["input_file_id"]].splitlines()) for b in srv.batches.values()]
        assert sizes == [3, 1]
        assert max(srv.answered.values()) == 1 and srv.n_chat_calls == 4
    assert res.n_unjudged == 0 and list(res.items["score"]) == [3.0, 7.0, 7.0]
    assert list(res.items["attempts"]) == [2, 1, 1]
    no_key_anywhere(tmp_path)


def test_errors_malformed_and_expiry_are_never_scored(tmp_path, capsys):
    err = Fail(500, message="boom {authorization}")
    script = PerAnswerScript(
        {
            "err-once": [err, Reply("<score>5</score>")],  # retried in the follow-up batch, then scored
            "err-always": [err, err, err],  # 3 failed tries: unjudged
            "malformed": [MALFORMED_REPLIES["content_null"]] * 3,  # malformed bodies: unjudged, not an attempt
            "bad-then-ok": [BAD, Reply("<score>9</score>")],  # a reply that does not parse: an attempt
        },
        default=Reply("<score>7</score>"),
    )
    answers = ["err-once", "err-always", "malformed", "bad-then-ok", "late-1", "late-2"]
    with FakeBatchServer(script) as srv:
        srv.expire_next = 4  # the first batch answers its first 4 lines, then expires
        res = run_batch(frame(answers), srv, tmp_path)
        assert max(srv.answered.values()) == 1
    items = res.items.set_index("answer")
    assert items.loc["err-once", "score"] == 5.0 and items.loc["err-once", "attempts"] == 1
    assert items.loc["bad-then-ok", "score"] == 9.0 and items.loc["bad-then-ok", "attempts"] == 2
    for a in ("err-always", "malformed"):
        assert items.loc[a, "status"] == "unjudged" and items.loc[a, "score"] != items.loc[a, "score"]  # NaN
        assert "batch request failed 3 times" in items.loc[a, "error"]
    assert list(items.loc[["late-1", "late-2"], "score"]) == [7.0, 7.0]  # sent once more after the expiry
    out = capsys.readouterr().out
    assert "batch_1 expired: 4 of 6 requests came back; the other 2 are sent once more" in out
    assert res.n_unjudged == 2
    assert "<redacted>" in items.loc["err-always", "error"] and FAKE_KEY not in items.loc["err-always", "error"]
    no_key_anywhere(tmp_path)


def test_expired_twice_is_unjudged(tmp_path, capsys):
    with FakeBatchServer(PerAnswerScript(default=Reply("<score>7</score>"))) as srv:
        judge = judge_model(srv)

        def expire(state):  # every batch expires without answering anything
            srv.expire_next = 0

        mode = BatchMode(
            judge_batch(judge).transport, wait_s=30, poll_s=0.01, progress=False, hooks={"after_create": expire}
        )
        res = judge_answers(frame(["x", "y"]), judge, model_name="m", outputs=tmp_path, progress=False, batch=mode)
        assert len(srv.batches) == 2 and srv.n_chat_calls == 0
        # each error file holds the two batch_expired lines; each judgement's request is sent in exactly
        # MAX_EXPIRED (2) batches, as docs/batch_mode.md says (a failed try would be sent 3 times)
        codes = [
            json.loads(x)["error"]["code"]
            for b in srv.batches.values()
            for x in srv.files[b["error_file_id"]].decode().splitlines()
        ]
        assert codes == ["batch_expired"] * 4
        assert sorted(srv.sent().values()) == [MAX_EXPIRED, MAX_EXPIRED] == [2, 2]
    assert res.n_unjudged == 2 and res.items["score"].isna().all()
    assert all(
        e.startswith("batch request not answered twice: not answered: batch batch_2 expired")
        for e in res.items["error"]
    )
    out = capsys.readouterr().out
    for bid in ("batch_1", "batch_2"):
        assert (
            f"batch {bid} expired: 0 of 2 requests came back; the other 2 are sent once more (a second time "
            "unanswered: never scored)"
        ) in out
    assert "replies collected" not in out


def test_expiry_counts_the_requests_not_run(tmp_path, capsys):
    """An expired batch's error file lists the requests it never ran (``batch_expired``): they are not replies. Of
    7 requests 5 came back; the 2 others are sent once more, once each, as the next try, and then scored."""
    answers = [f"x{i}" for i in range(7)]
    with FakeBatchServer(PerAnswerScript(default=Reply("<score>7</score>"))) as srv:
        srv.expire_next = 5  # the first batch runs 5 of its 7 requests, then expires
        res = run_batch(frame(answers), srv, tmp_path)
        inputs = [
            [json.loads(x)["custom_id"] for x in srv.files[b["input_file_id"]].decode().splitlines()]
            for b in srv.batches.values()
        ]
        assert [len(i) for i in inputs] == [7, 2] and sum(srv.answered.values()) == 7
        assert inputs[1] == [cid.replace("#a1t0", "#a1t1") for cid in inputs[0][5:]]  # the next try, not an attempt
        assert sorted(srv.sent().values()) == [1] * 5 + [2] * 2
    message = (
        "batch batch_1 expired: 5 of 7 requests came back; the other 2 are sent once more (a second time "
        "unanswered: never scored)"
    )
    assert message in capsys.readouterr().out
    root = res.store.root
    assert message in [json.loads(x)["message"] for x in (root / "batch_log.jsonl").read_text().splitlines()]
    history = json.loads((root / "batch.json").read_text())["history"]
    assert [(h["batch_id"], h["status"], h["requests"], h["returned"]) for h in history] == [
        ("batch_1", "expired", 7, 5),
        ("batch_2", "completed", 2, 2),
    ]
    kept = [json.loads(x) for x in (root / "batch_replies.jsonl").read_text().splitlines()]
    assert [(e["custom_id"], e["status"]) for e in kept if e.get("expired")] == [(c, "expired") for c in inputs[0][5:]]
    assert res.n_unjudged == 0 and list(res.items["score"]) == [7.0] * 7
    assert list(res.items["attempts"]) == [1] * 7


def test_not_run_lines_of_an_offline_file_are_unanswered(tmp_path):
    """A downloaded error file given as ``--batch-file-in``: its ``batch_expired`` / ``batch_cancelled`` lines are
    requests never run (not replies, sent once more, MAX_EXPIRED batches in all), its HTTP 500 line a failed try."""
    path = tmp_path / "errors.jsonl"
    lines = [
        {
            "id": "batch_req_1",
            "custom_id": "run/k1#a1t0",
            "response": None,
            "error": {
                "code": "batch_expired",
                "message": "This request could not be executed before the completion window expired.",
            },
        },
        {
            "id": "batch_req_2",
            "custom_id": "run/k2#a1t0",
            "response": None,
            "error": {"code": "batch_cancelled", "message": "cancelled"},
        },
        {
            "id": "batch_req_3",
            "custom_id": "run/k3#a1t0",
            "error": None,
            "response": {"status_code": 500, "body": {"error": {"message": "boom"}}},
        },
    ]
    path.write_text("".join(json.dumps(ln) + "\n" for ln in lines), encoding="utf-8")
    said: list[str] = []
    (tmp_path / "run").mkdir()
    rounds = BatchRounds(tmp_path / "run", BatchMode(file_in=path, echo=said.append), BatchReport(), 0.0, prefix="run/")
    rounds.read_file_in()
    assert said == [f"batch file {path}: 1 replies read, 3 new; 2 requests its batch never ran are sent once more"]
    kept = rounds.folder.replies()
    for cid, status in (("run/k1#a1t0", "expired"), ("run/k2#a1t0", "cancelled")):
        with pytest.raises(ValueError, match=f"^not answered: batch file:errors.jsonl {status}$"):
            reply_of(kept[cid])
        tries = FailedTries(max_failures=3)
        assert tries.give_up(kept[cid], ValueError("x")) is None and (tries.expired, tries.failures) == (1, 0)
        assert tries.give_up(kept[cid], ValueError("x")) == "batch request not answered twice: x"
    tries = FailedTries(max_failures=3)
    with pytest.raises(ValueError, match="^request error: HTTP 500 boom$"):
        reply_of(kept["run/k3#a1t0"])
    assert tries.give_up(kept["run/k3#a1t0"], ValueError("x")) is None and (tries.expired, tries.failures) == (0, 1)


STAND_IN = textwrap.dedent("""
    # answers a batch input file as `vllm run-batch` would: one output line per request, the scripted reply of
    # its answer's attempt (the custom_id's "#a<n>"), appended to the one output file the run reads back
    import json, re, sys
    sys.path.insert(0, {tests!r})
    from fake_batch_server import FakeBatchServer
    from fake_openai_server import Reply
    script = json.loads(sys.argv[3])
    with open(sys.argv[1], encoding="utf-8") as fin, open(sys.argv[2], "a", encoding="utf-8") as fout:
        for raw in fin:
            req = json.loads(raw)
            answer = re.search(r"<model_answer>\\s*(.*?)\\s*</model_answer>", req["body"]["messages"][-1]["content"], re.S).group(1)
            attempt = int(re.search(r"#a(\\d+)t", req["custom_id"]).group(1))
            todo = script.get(answer, [])
            action = Reply(todo[attempt - 1] if attempt <= len(todo) else "<score>7</score>")
            kind, line = FakeBatchServer.answer_line(req, action, "fake-judge-2024-01-01", f"req-{{attempt}}")
            fout.write(json.dumps(line, ensure_ascii=False) + "\\n")
""")


OFFLINE = {"a": [BAD.text, BAD.text, "<score>6</score><explanation>พอใช้</explanation>"], "c": ["<score>8</score>"]}


def test_offline_files_store_what_live_calls_store(tmp_path):
    df = frame(["a", "c"])
    script = PerAnswerScript({k: [Reply(t) for t in v] for k, v in OFFLINE.items()})
    with FakeOpenAIServer(script) as live_srv:
        judge = judge_model(live_srv)
        live = judge_answers(df, judge, model_name="m", outputs=tmp_path / "live", progress=False)
    judge = ApiModel("fake-judge", base_url="http://127.0.0.1:9/v1", api_key=FAKE_KEY, max_retries=0)  # never called
    stand_in = tmp_path / "stand_in.py"
    stand_in.write_text(STAND_IN.format(tests=str(REPO / "tests")), encoding="utf-8")
    requests, replies = tmp_path / "requests.jsonl", tmp_path / "replies.jsonl"
    rounds = 0
    res = None
    while True:
        mode = judge_batch(judge, file_out=requests, file_in=replies if replies.exists() else None, progress=False)
        if requests.exists():
            requests.unlink()
        res = judge_answers(df, judge, model_name="m", outputs=tmp_path / "offline", progress=False, batch=mode)
        if not requests.exists():
            break
        text = requests.read_text(encoding="utf-8")
        assert FAKE_KEY not in text
        first = json.loads(text.splitlines()[0])
        assert first["url"] == "/v1/chat/completions" and first["body"]["model"] == "fake-judge"
        # the stand-in answers the file as `vllm run-batch` would (appends to the one output file we read back)
        subprocess.run(
            [sys.executable, str(stand_in), str(requests), str(replies), json.dumps(OFFLINE)],
            check=True,
            cwd=REPO,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        rounds += 1
        assert rounds <= 4
    assert rounds == 3
    assert records(res) == records(live)
    assert res.scores.factoid.value == live.scores.factoid.value
    no_key_anywhere(tmp_path / "offline")


def test_custom_id_names_store_key_and_attempt():
    assert custom_id("id1:abcdef0123456789", 3, 1) == "id1:abcdef0123456789#a3t1"
    with pytest.raises(ValueError):
        from thai_eval_utils.judging.batch import run_batch as rb

        rb(None, [], None, [], BatchMode(), None, None, {}, False)  # type: ignore[arg-type]


def test_cli_flags_become_thaicli_notebook_parameters(tmp_path):
    from thai_eval_utils.cli import build_parser
    from thai_eval_utils.cli.run_config import notebook_options
    from thai_eval_utils.notebook_exec import notebook_parameters
    from thai_eval_utils.run_options import run_options

    args = build_parser().parse_args(
        ["run", "--model", "embedded", "--batch", "--batch-wait", "60", "--batch-file-out", str(tmp_path / "req.jsonl")]
    )
    options = notebook_options(args)
    assert options == {"batch": {"submit": True, "wait_s": 60.0, "file_out": str(tmp_path / "req.jsonl")}}
    assert run_options(options).batch.judge() == {  # answers' file: tests/test_answer_batch.py
        "submit": True,
        "wait_s": 60.0,
        "file_out": str(tmp_path / "req.jsonl"),
        "file_in": None,
    }
    assert notebook_options(build_parser().parse_args(["run", "--model", "embedded"])) is None  # off by default
    assert not run_options(None).batch.active
    declared = notebook_parameters(REPO / "notebooks" / "thaicli.ipynb")
    assert declared["options"]["default"] == "{}"


def test_polling_shows_a_progress_bar(tmp_path, capsys):
    with FakeBatchServer(PerAnswerScript(default=Reply("<score>7</score>")), polls_to_finish=3) as srv:
        judge = judge_model(srv)
        mode = judge_batch(judge, wait_s=30, poll_s=0.01, progress=True)
        res = judge_answers(frame(["x", "y"]), judge, model_name="m", outputs=tmp_path, progress=False, batch=mode)
    assert res.n_unjudged == 0 and srv.polls["batch_1"] == 3
    err = capsys.readouterr().err
    assert "batch batch_1" in err and "2/2" in err


def test_an_endpoint_without_batches_ends_the_run_as_a_judge_error(tmp_path):
    from thai_eval_utils.core.errors import JudgeError

    with FakeOpenAIServer(PerAnswerScript()) as srv:  # chat only: POST /v1/files is a 404
        with pytest.raises(JudgeError, match="batch") as info:
            run_batch(frame(["x"]), srv, tmp_path)
        assert srv.n_chat_calls == 0
    assert FAKE_KEY not in str(info.value)
    summary = json.loads(next(tmp_path.rglob("summary.json")).read_text(encoding="utf-8"))
    assert "batch" in summary["fatal_error"] and summary["n_unjudged"] == 1
    no_key_anywhere(tmp_path)


def test_a_kill_while_collecting_adds_no_reply_twice(tmp_path):
    from thai_eval_utils.judging.batch import BatchFolder

    df = frame(["a", "c"])
    script = PerAnswerScript({"a": [BAD, Reply("<score>3</score>")]}, default=Reply("<score>7</score>"))
    with FakeBatchServer(script) as srv:
        judge = judge_model(srv)

        def die(state):  # the replies are appended, batch.json not yet "collected": as a kill there leaves it
            raise KeyboardInterrupt

        mode = BatchMode(judge_batch(judge).transport, wait_s=30, poll_s=0.01, progress=False, hooks={"collected": die})
        with pytest.raises(KeyboardInterrupt):
            judge_answers(df, judge, model_name="m", outputs=tmp_path, progress=False, batch=mode)
        res = run_batch(df, srv, tmp_path)
        assert len(srv.batches) == 2 and max(srv.answered.values()) == 1
    assert list(res.items["score"]) == [3.0, 7.0]
    folder = BatchFolder(res.store.root)
    lines = folder.replies_path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len({json.loads(x)["custom_id"] for x in lines}) == 3


def test_run_command_prints_what_the_batches_said(tmp_path):
    from thai_eval_utils.cli.commands import batch_messages
    from thai_eval_utils.core.provenance import now_utc

    start = now_utc()
    with FakeBatchServer(PerAnswerScript(default=Reply("<score>7</score>")), polls_to_finish=5) as srv:
        run_batch(frame(["x", "y"]), srv, tmp_path, wait_s=0)
    lines = batch_messages(tmp_path, since=start)
    assert len(lines) == 2 and lines[0].startswith("m/thaicli/judge/")
    assert lines[0].endswith("batch batch_1: 2 requests submitted")
    assert lines[1].endswith("batch batch_1: 0/2 done (in_progress); run the same command again to collect")
    assert batch_messages(tmp_path, since="9999") == []
