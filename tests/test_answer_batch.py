"""API models' answers in batch mode (``backend/batch_model.py``) against a fake OpenAI Batch API on
127.0.0.1, through the real ``openai`` client: dialect generations and ThaiCLI answers in batch mode equal the same
runs made live; a kill -9 after upload, after create and mid-poll, then a rerun: one batch in total, no request
answered twice; per-request errors, malformed replies and an expiry end retried or ungenerated, never scored; a round
over the per-batch limits is split; ``thai-eval batch cancel`` / ``status``; the offline file round trip."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from answer_run import Echo, answer_run
from fake_batch_server import FakeBatchServer
from fake_openai_server import MALFORMED_REPLIES, Fail, FakeOpenAIServer, Reply
from test_judge import FAKE_KEY

from thai_eval_utils.backend.batch_model import BatchChatModel, BatchPending, batch_mode, run_answers
from thai_eval_utils.backend.openai_client import ApiModel
from thai_eval_utils.core.batch_files import split_lines
from thai_eval_utils.core.batch_rounds import MAX_EXPIRED
from thai_eval_utils.dialect import generation as D
from thai_eval_utils.dialect.data import load_dialect
from thai_eval_utils.thaicli.answers import generate_answers, select_items
from thai_eval_utils.thaicli.data import load_thaicli

REPO = Path(__file__).resolve().parents[1]
#: Fields of a stored record that say when it was written (not what): left out of the comparisons.
TIMING = ("written_at", "at", "time")


def api_model(srv: FakeOpenAIServer) -> ApiModel:
    return ApiModel("fake-model", base_url=srv.base_url, api_key=FAKE_KEY, concurrency=4, timeout=5.0, max_retries=0)


def mode(model: ApiModel, **kw: Any):
    return batch_mode(model, submit=True, **{"wait_s": 30.0, "poll_s": 0.01, "progress": False, **kw})


def stored(run_dir: str | Path) -> list[dict]:
    lines = (Path(run_dir) / "items.jsonl").read_text(encoding="utf-8").splitlines()
    return [{k: v for k, v in json.loads(x).items() if k not in TIMING} for x in lines]


def no_key_anywhere(root: Path) -> None:
    for p in root.rglob("*"):
        if p.is_file():
            assert FAKE_KEY not in p.read_text(encoding="utf-8", errors="replace"), p


@pytest.fixture(scope="module")
def dialect_items() -> pd.DataFrame:
    df = load_dialect(REPO / "data" / "dialect", dialects=["center", "east"])
    return D.select_items(df, tasks=["qa", "translation_en_to_dialect"], limit=2)  # 8 items, real Thai data


@pytest.fixture(scope="module")
def thaicli_items() -> pd.DataFrame:
    return select_items(load_thaicli(REPO / "data" / "thaicli"), 2)  # 2 factoid + 2 instruction


def dialect_run(model: Any, items: pd.DataFrame, out: Path) -> pd.DataFrame:
    return D.run_generation(model, items, outputs=out, progress=False)


def test_dialect_generation_in_batch_mode_equals_live(dialect_items, tmp_path):
    with FakeOpenAIServer(Echo()) as live_srv:
        live = dialect_run(api_model(live_srv), dialect_items, tmp_path / "live")
    with FakeBatchServer(Echo()) as srv:
        model = api_model(srv)
        res = run_answers(
            model,
            lambda m: dialect_run(m, dialect_items, tmp_path / "batch"),
            submit=True,
            wait_s=30,
            poll_s=0.01,
            progress=False,
        )
        assert len(srv.batches) == 1 and sum(srv.answered.values()) == len(dialect_items) == 8
        assert max(srv.answered.values()) == 1
        assert srv.auth_headers == {f"Bearer {FAKE_KEY}"}
    assert live_srv.n_chat_calls == 8
    assert list(res["output"]) == list(live["output"]) and res["output"].notna().all()
    assert res.attrs["run_dir"].replace(str(tmp_path / "batch"), "") == live.attrs["run_dir"].replace(
        str(tmp_path / "live"), ""
    )
    assert stored(res.attrs["run_dir"]) == stored(live.attrs["run_dir"])
    summary = json.loads((Path(res.attrs["run_dir"]) / "summary.json").read_text(encoding="utf-8"))
    live_summary = json.loads((Path(live.attrs["run_dir"]) / "summary.json").read_text(encoding="utf-8"))
    assert summary["scores"] == live_summary["scores"] and summary["delta_diff"] == live_summary["delta_diff"]
    assert summary["n_items"] == 8 and summary["n_ungenerated"] == 0
    # the request file: one line per item, custom_id <config id>/<store key>#a1t0, the live request's body
    run_dir = Path(res.attrs["run_dir"])
    first = json.loads((run_dir / "batch_input.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert first["custom_id"] == f"{run_dir.name}/center/qa/0#a1t0"
    assert first["body"] == {
        **{k: v for k, v in live_srv.bodies[0].items() if k in first["body"]},
        "messages": first["body"]["messages"],
    }
    assert set(first["body"]) == {"model", "messages", "max_tokens", "temperature", "top_p", "seed"}
    assert (first["body"]["temperature"], first["body"]["seed"], first["body"]["max_tokens"]) == (0.0, 42, 3000)
    no_key_anywhere(tmp_path)
    # a rerun asks nothing: every item is stored
    with FakeBatchServer(Echo()) as srv2:
        again = run_answers(
            api_model(srv2),
            lambda m: dialect_run(m, dialect_items, tmp_path / "batch"),
            submit=True,
            wait_s=0,
            progress=False,
        )
        assert not srv2.batches and srv2.n_chat_calls == 0
    assert list(again["output"]) == list(res["output"])


def thaicli_run(model: Any, items: pd.DataFrame, out: Path) -> pd.DataFrame:
    return generate_answers(model, items, outputs=out, max_new_tokens=64, progress=False)


def test_thaicli_answers_in_batch_mode_equal_live(thaicli_items, tmp_path):
    with FakeOpenAIServer(Echo()) as live_srv:
        live = thaicli_run(api_model(live_srv), thaicli_items, tmp_path / "live")
    with FakeBatchServer(Echo()) as srv:
        res = run_answers(
            api_model(srv),
            lambda m: thaicli_run(m, thaicli_items, tmp_path / "batch"),
            submit=True,
            wait_s=30,
            poll_s=0.01,
            progress=False,
        )
        assert len(srv.batches) == 1 and max(srv.answered.values()) == 1 and sum(srv.answered.values()) == 4
    assert list(res["answer"]) == list(live["answer"]) == [Echo.text(q) for q in thaicli_items["question"]]
    assert stored(res.attrs["run_dir"]) == stored(live.attrs["run_dir"])
    assert res.attrs["config_id"] == live.attrs["config_id"] and res.attrs["ungenerated"] == []
    no_key_anywhere(tmp_path)


def test_not_waiting_says_so_and_a_later_run_collects(thaicli_items, tmp_path, capsys):
    with FakeBatchServer(Echo(), polls_to_finish=3) as srv:
        model = api_model(srv)

        def again():
            return run_answers(
                model,
                lambda m: thaicli_run(m, thaicli_items, tmp_path),
                submit=True,
                wait_s=0,
                poll_s=0.01,
                progress=False,
            )

        with pytest.warns(UserWarning, match="4 of 4 answers not generated"):
            first = again()
        assert first["answer"].isna().all() and len(first.attrs["ungenerated"]) == 4
        summary = json.loads((Path(first.attrs["run_dir"]) / "summary.json").read_text(encoding="utf-8"))
        assert set(summary["ungenerated"].values()) == {"waiting for batch batch_1"}
        out = capsys.readouterr().out
        assert "batch batch_1: 4 requests submitted" in out
        assert "batch batch_1: 0/4 done (in_progress); run the same command again to collect" in out
        with pytest.warns(UserWarning):
            again()  # poll 2: still running
        third = again()
        assert third["answer"].notna().all() and len(srv.batches) == 1 and srv.n_chat_calls == 4
    from thai_eval_utils.cli.commands import batch_messages

    lines = batch_messages(tmp_path, since="")
    assert lines[0].startswith("fake-model/thaicli/answers/") and lines[0].endswith("4 requests submitted")
    assert lines[-1].endswith("batch batch_1 completed: 4 replies collected")


KILLER = textwrap.dedent("""
    import json, os, signal, sys
    sys.path.insert(0, {tests!r})
    from answer_run import Echo, answer_run
    from thai_eval_utils.backend.openai_client import ApiModel
    from thai_eval_utils.backend.batch_model import run_answers
    model = ApiModel("fake-model", base_url={url!r}, api_key={key!r}, max_retries=0)
    def die(state):
        os.kill(os.getpid(), signal.SIGKILL)
    run_answers(model, lambda m: answer_run(m, json.loads({questions!r}), {out!r}), submit=True, wait_s=30,
                poll_s=0.01, progress=False, max_requests={max_requests}, hooks={{{point!r}: die}})
""")


def killed(srv: FakeBatchServer, tmp_path: Path, questions: list[str], point: str, max_requests: int = 50_000) -> None:
    """Run the small generation run (``answer_run.py``) in batch mode in a subprocess, SIGKILLed at ``point``."""
    code = KILLER.format(
        tests=str(REPO / "tests"),
        url=srv.base_url,
        key=FAKE_KEY,
        point=point,
        out=str(tmp_path),
        questions=json.dumps(questions, ensure_ascii=False),
        max_requests=max_requests,
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


def resumed(srv: FakeBatchServer, tmp_path: Path, questions: list[str], **kw: Any) -> list[str | None]:
    return run_answers(
        api_model(srv),
        lambda m: answer_run(m, questions, tmp_path),
        submit=True,
        wait_s=30,
        poll_s=0.01,
        progress=False,
        **kw,
    )


@pytest.mark.parametrize("point", ["after_upload", "created", "after_create", "poll"])
def test_kill_then_resume_one_batch(thaicli_items, tmp_path, point):
    questions = list(thaicli_items["question"])
    script = Echo({questions[1]: [Fail(500)]})  # one question's first request fails: a follow-up batch of one
    with FakeBatchServer(script, polls_to_finish=2) as srv:
        killed(srv, tmp_path, questions, point)
        if point == "after_create":
            state = json.loads(next(tmp_path.rglob("batch.json")).read_text())
            assert state["state"] == "submitted" and state["parts"][0]["batch_id"] == "batch_1"
        answers = resumed(srv, tmp_path, questions)
        sizes = [len(srv.files[b["input_file_id"]].splitlines()) for b in srv.batches.values()]
        assert sizes == [4, 1]  # one batch per round, however the first run died
        assert max(srv.answered.values()) == 1 and sum(srv.answered.values()) == 5
    assert answers == [Echo.text(q) for q in questions]
    items = (next(tmp_path.rglob("items.jsonl"))).read_text(encoding="utf-8").splitlines()
    assert len(items) == 4  # every item stored once
    no_key_anywhere(tmp_path)


def test_errors_malformed_and_expiry_are_retried_or_left_unanswered(dialect_items, tmp_path, capsys):
    prompts = [D.build_prompt(it, D.load_prompts()) for it in dialect_items.to_dict("records")]
    marks = prompts
    assert len(set(marks)) == 8
    err = Fail(500, message="boom {authorization}")
    script = Echo(
        {
            marks[0]: [err],  # retried in the follow-up batch, then answered
            marks[1]: [err, err, err],  # 3 failed tries: ungenerated
            marks[2]: [MALFORMED_REPLIES["content_null"]] * 3,
        }
    )  # malformed bodies: ungenerated
    with FakeBatchServer(script) as srv:
        srv.expire_next = 6  # the first batch answers its first 6 lines, then expires: the last 2 are sent once more
        with pytest.warns(UserWarning, match="2 of 8 dialect items not generated"):
            res = run_answers(
                api_model(srv),
                lambda m: dialect_run(m, dialect_items, tmp_path),
                submit=True,
                wait_s=30,
                poll_s=0.01,
                progress=False,
            )
        assert max(srv.answered.values()) == 1 and len(srv.batches) == 3
    out = list(res["output"])
    assert out[0] == Echo.text(prompts[0]) and pd.isna(out[1]) and pd.isna(out[2])
    assert out[3:] == [Echo.text(p) for p in prompts[3:]]
    first = srv.batches["batch_1"]
    error_file = srv.files[first["error_file_id"]].decode()
    codes = [(json.loads(x)["error"] or {}).get("code") for x in error_file.splitlines()]
    assert codes.count("batch_expired") == 2  # the real API's lines for the 2 requests it never ran (and 2 errors)
    printed = capsys.readouterr().out
    message = "batch batch_1 expired: 6 of 8 requests came back; the other 2 are sent once more"
    assert message in printed
    log = [json.loads(x)["message"] for x in (Path(res.attrs["run_dir"]) / "batch_log.jsonl").read_text().splitlines()]
    assert any(m.startswith(message) for m in log) and not any("8 replies collected" in m for m in log)
    summary = json.loads((Path(res.attrs["run_dir"]) / "summary.json").read_text(encoding="utf-8"))
    assert summary["n_ungenerated"] == 2 and summary["n_items"] == 6
    reasons = list(summary["ungenerated"].values())
    assert all("batch request failed 3 times" in r for r in reasons)
    assert "<redacted>" in reasons[0] + reasons[1] and FAKE_KEY not in json.dumps(summary)
    for row in (1, 2):  # a failed item is never scored: its group's n counts only the generated items
        dialect, task = dialect_items.iloc[row][["dialect", "task"]]
        group = (dialect_items["dialect"] == dialect) & (dialect_items["task"] == task)
        assert summary["scores"][f"{dialect}/{task}/rougeL"]["n"] == int((group & res["output"].notna()).sum()) == 1
    no_key_anywhere(tmp_path)


def test_a_request_expired_every_time_is_sent_twice_then_ungenerated(thaicli_items, tmp_path, capsys):
    """Every batch expires without running anything: each answer's request is sent in exactly MAX_EXPIRED (2)
    batches (a failed try would be sent 3 times), then the item is ungenerated, never scored."""
    with FakeBatchServer(Echo()) as srv:

        def expire(state):  # every batch expires without running a request
            srv.expire_next = 0

        with pytest.warns(UserWarning, match="4 of 4 answers not generated"):
            res = run_answers(
                api_model(srv),
                lambda m: thaicli_run(m, thaicli_items, tmp_path),
                submit=True,
                wait_s=30,
                poll_s=0.01,
                progress=False,
                hooks={"after_create": expire},
            )
        assert len(srv.batches) == MAX_EXPIRED == 2 and srv.n_chat_calls == 0
        assert sorted(srv.sent().values()) == [2, 2, 2, 2]
    assert res["answer"].isna().all()
    summary = json.loads((Path(res.attrs["run_dir"]) / "summary.json").read_text(encoding="utf-8"))
    assert summary["n_ungenerated"] == 4 and summary["n_generated_this_run"] == 0
    assert set(summary["ungenerated"].values()) == {
        "batch request not answered twice: not answered: batch batch_2 expired"
    }
    printed = capsys.readouterr().out
    for bid in ("batch_1", "batch_2"):
        assert f"batch {bid} expired: 0 of 4 requests came back; the other 4 are sent once more" in printed
    assert "replies collected" not in printed


def test_a_round_over_the_limits_is_split_and_resumed_together(thaicli_items, tmp_path):
    data = b"".join(json.dumps({"custom_id": f"k{i}"}).encode() + b"\n" for i in range(5))
    assert split_lines(data, max_requests=2) == [(0, 2), (2, 2), (4, 1)]
    line = len(data.splitlines(keepends=True)[0])
    assert split_lines(data, max_bytes=2 * line) == [(0, 2), (2, 2), (4, 1)]
    assert split_lines(data, max_bytes=1) == [(i, 1) for i in range(5)]  # a line over the limit: a part of its own
    questions = list(thaicli_items["question"])
    with FakeBatchServer(Echo(), polls_to_finish=2) as srv:
        killed(srv, tmp_path, questions, "after_create", max_requests=3)  # dies after the first of two parts' create
        state = json.loads(next(tmp_path.rglob("batch.json")).read_text())
        assert state["state"] == "uploading" and [p["count"] for p in state["parts"]] == [3, 1]
        assert state["parts"][0]["batch_id"] == "batch_1" and state["parts"][1]["batch_id"] is None
        answers = resumed(srv, tmp_path, questions, max_requests=3)
        assert [len(srv.files[b["input_file_id"]].splitlines()) for b in srv.batches.values()] == [3, 1]
        assert max(srv.answered.values()) == 1 and sum(srv.answered.values()) == 4
    assert answers == [Echo.text(q) for q in questions]
    state = json.loads(next(tmp_path.rglob("batch.json")).read_text())
    assert state["state"] == "collected" and [h["batch_id"] for h in state["history"]] == ["batch_1", "batch_2"]


def test_cancel_keeps_what_came_back_and_status_lists_it(thaicli_items, tmp_path, monkeypatch, capsys):
    from thai_eval_utils.cli import main

    with FakeBatchServer(Echo(), polls_to_finish=1000) as srv:
        with pytest.warns(UserWarning):
            run_answers(
                api_model(srv), lambda m: thaicli_run(m, thaicli_items, tmp_path), submit=True, wait_s=0, progress=False
            )
        capsys.readouterr()
        assert main(["batch", "status", "--outputs", str(tmp_path)]) == 0
        listing = capsys.readouterr().out
        assert "fake-model/thaicli/answers/" in listing and "submitted" in listing and "batch_1" in listing
        monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
        assert main(["batch", "cancel", "--outputs", str(tmp_path), "--wait", "5"]) == 0
        printed = capsys.readouterr().out
        assert srv.batches["batch_1"]["status"] == "cancelled"
        assert "batch batch_1: cancel requested" in printed
        assert "batch batch_1 cancelled: 0 of 4 requests came back; the other 4 are sent once more" in printed
        srv.polls_to_finish = 1
        res = run_answers(
            api_model(srv),
            lambda m: thaicli_run(m, thaicli_items, tmp_path),
            submit=True,
            wait_s=30,
            poll_s=0.01,
            progress=False,
        )
        assert len(srv.batches) == 2 and max(srv.answered.values()) == 1
    assert res["answer"].notna().all()
    no_key_anywhere(tmp_path)


STAND_IN = textwrap.dedent("""
    # answers a batch input file as `vllm run-batch` would: one output line per request (the stand-in model's reply)
    import json, sys
    sys.path.insert(0, {tests!r})
    from fake_batch_server import FakeBatchServer
    from answer_run import Echo
    with open(sys.argv[1], encoding="utf-8") as fin, open(sys.argv[2], "w", encoding="utf-8") as fout:
        for n, raw in enumerate(fin):
            req = json.loads(raw)
            kind, line = FakeBatchServer.answer_line(req, Echo()(req["body"]), "fake-model-2024", f"req-{{n}}")
            fout.write(json.dumps(line, ensure_ascii=False) + "\\n")
""")


def test_offline_files_store_what_live_calls_store(dialect_items, thaicli_items, tmp_path):
    with FakeOpenAIServer(Echo()) as live_srv:
        live_d = dialect_run(api_model(live_srv), dialect_items, tmp_path / "live")
        live_t = thaicli_run(api_model(live_srv), thaicli_items, tmp_path / "live")
    model = ApiModel("fake-model", base_url="http://127.0.0.1:9/v1", api_key=FAKE_KEY, max_retries=0)  # never called
    requests, replies = tmp_path / "requests.jsonl", tmp_path / "replies.jsonl"
    stand_in = tmp_path / "stand_in.py"
    stand_in.write_text(STAND_IN.format(tests=str(REPO / "tests")), encoding="utf-8")

    def both(file_in):
        opts = {"file_out": requests, "file_in": file_in, "progress": False}
        d = run_answers(model, lambda m: dialect_run(m, dialect_items, tmp_path / "offline"), **opts)
        t = run_answers(model, lambda m: thaicli_run(m, thaicli_items, tmp_path / "offline"), **opts)
        return d, t

    with pytest.warns(UserWarning):
        d, t = both(None)
    assert d["output"].isna().all() and t["answer"].isna().all()
    lines = [json.loads(x) for x in requests.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 12  # both runs' requests in the one file (the second run kept the first's lines)
    assert {ln["body"]["model"] for ln in lines} == {"fake-model"} and FAKE_KEY not in requests.read_text()
    subprocess.run(
        [sys.executable, str(stand_in), str(requests), str(replies)],
        check=True,
        cwd=REPO,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    requests.unlink()
    d, t = both(replies)
    assert not requests.exists()  # nothing left to ask
    assert stored(d.attrs["run_dir"]) == stored(live_d.attrs["run_dir"])
    assert stored(t.attrs["run_dir"]) == stored(live_t.attrs["run_dir"])
    no_key_anywhere(tmp_path / "offline")


def test_outside_a_run_loop_the_batch_model_refuses(tmp_path):
    model = ApiModel("fake-model", base_url="http://127.0.0.1:9/v1", api_key=FAKE_KEY, max_retries=0)
    bm = BatchChatModel(model, batch_mode(model, file_out=tmp_path / "x.jsonl"))
    with pytest.raises(ValueError, match="inside a run loop"):
        bm.chat([[{"role": "user", "content": "สวัสดี"}]])
    assert issubclass(BatchPending, ConnectionError)  # an ApiError: every generation run tolerates it
    assert batch_mode(model) is None  # off by default


def test_cli_flags_become_answer_parameters(tmp_path):
    from thai_eval_utils.cli import build_parser
    from thai_eval_utils.cli.run_config import notebook_options
    from thai_eval_utils.notebook_exec import notebook_parameters
    from thai_eval_utils.run_options import run_options

    args = build_parser().parse_args(
        ["run", "--model", "openai:x", "--batch", "--batch-wait", "60", "--batch-file-out", str(tmp_path / "req.jsonl")]
    )
    batch = run_options(notebook_options(args)).batch
    assert batch.answers() == {
        "submit": True,
        "wait_s": 60.0,
        "file_out": str(tmp_path / "req.answers.jsonl"),
        "file_in": None,
    }
    assert batch.judge()["file_out"] == str(tmp_path / "req.jsonl")
    for nb in ("thaicli.ipynb", "dialect_benchmark.ipynb", "task.ipynb", "thai_llm_leaderboard.ipynb"):
        declared = notebook_parameters(REPO / "notebooks" / nb)
        assert declared["options"]["default"] == "{}", nb


def test_a_declared_generation_task_in_batch_mode_equals_live(tmp_path, monkeypatch):
    """The path the new suites' generation tasks take (``tasks.run_task``: ``model.generate`` with stop strings)."""
    from thai_eval_utils.core import registry
    from thai_eval_utils.tasks import run_task, task_named

    # task_named includes the example folder in the registry: this test's alone (test_user_tasks includes it itself)
    monkeypatch.setattr(registry, "_included", list(registry._included))
    monkeypatch.setattr(registry, "_suites", None)
    monkeypatch.setenv(registry.TASKS_ENV, os.environ.get(registry.TASKS_ENV, ""))
    task = task_named("thai_capitals", str(REPO / "docs" / "examples" / "user_tasks"))

    def respond(body: dict) -> Reply:  # a reply running past the task's stop string "\n": cut as live calls cut it
        return Reply(Echo.text(body["messages"][-1]["content"]) + "\nคำถามต่อไป")

    with FakeOpenAIServer(respond) as live_srv:
        live = run_task(api_model(live_srv), task, outputs=tmp_path / "live", progress=False)
    with FakeBatchServer(respond) as srv:
        res = run_answers(
            api_model(srv),
            lambda m: run_task(m, task, outputs=tmp_path / "batch", progress=False),
            submit=True,
            wait_s=30,
            poll_s=0.01,
            progress=False,
        )
        assert len(srv.batches) == 1 and max(srv.answered.values()) == 1
        first = json.loads(srv.files[srv.batches["batch_1"]["input_file_id"]].decode().splitlines()[0])
        assert first["body"]["stop"] == ["\n"] and first["body"]["max_tokens"] == 16
    assert [r["output"] for r in res.records] == [r["output"] for r in live.records]
    assert all("\n" not in r["output"] for r in res.records) and len(res.records) == live.summary["n_docs"]
    assert stored(res.run_dir) == stored(live.run_dir)
    assert res.scores == live.scores and res.summary["n_ungenerated"] == 0


def test_an_endpoint_without_batches_fails_the_run_with_a_named_error(thaicli_items, tmp_path):
    from thai_eval_utils.backend.api_replies import ApiError

    questions = list(thaicli_items["question"])
    with FakeOpenAIServer(Echo()) as srv:  # chat only: POST /v1/files is a 404
        with pytest.raises(ApiError, match="batch upload") as info:
            run_answers(api_model(srv), lambda m: answer_run(m, questions, tmp_path), submit=True, progress=False)
        assert srv.n_chat_calls == 0
    assert FAKE_KEY not in str(info.value)
    state = json.loads(next(tmp_path.rglob("batch.json")).read_text(encoding="utf-8"))
    assert state["state"] == "uploading" and state["requests"] == 4  # written before the upload: a rerun retries it
    no_key_anywhere(tmp_path)


def test_an_offline_file_answered_by_the_embedded_model_stores_its_live_answers(thaicli_items, tmp_path):
    """A stand-in for ``vllm run-batch``: the batch file answered by the embedded model (greedy) gives the
    answers the same model gives live."""
    from answer_run import run_batch_file

    from thai_eval_utils.backend.models import load_model

    items = thaicli_items.groupby("format", sort=False).head(1).reset_index(drop=True)  # one question per format
    lm = load_model("embedded")
    live = generate_answers(lm, items, outputs=tmp_path / "live", max_new_tokens=16, progress=False)
    model = ApiModel("gemma-3-270m", base_url="http://127.0.0.1:9/v1", api_key=FAKE_KEY, max_retries=0)  # never called
    requests, replies = tmp_path / "requests.jsonl", tmp_path / "replies.jsonl"

    def offline(file_in):
        return run_answers(
            model,
            lambda m: generate_answers(m, items, outputs=tmp_path / "offline", max_new_tokens=16, progress=False),
            file_out=requests,
            file_in=file_in,
            progress=False,
        )

    with pytest.warns(UserWarning):
        offline(None)
    assert run_batch_file(lm, requests, replies) == 2
    requests.unlink()
    res = offline(replies)
    assert not requests.exists() and res["answer"].notna().all()
    assert list(res["answer"]) == list(live["answer"])
    assert all(a.strip() for a in live["answer"])


def test_polling_split_batches_shows_one_progress_bar(thaicli_items, tmp_path, capsys):
    questions = list(thaicli_items["question"])
    with FakeBatchServer(Echo(), polls_to_finish=2) as srv:
        answers = run_answers(
            api_model(srv),
            lambda m: answer_run(m, questions, tmp_path),
            submit=True,
            wait_s=30,
            poll_s=0.01,
            progress=True,
            max_requests=2,
        )
        assert len(srv.batches) == 2 and srv.polls["batch_1"] == srv.polls["batch_2"] == 2
    assert answers == [Echo.text(q) for q in questions]
    captured = capsys.readouterr()
    assert "batches batch_1..batch_2" in captured.err and "4/4" in captured.err  # done / total over both parts
    assert "batch batch_1: 2 requests submitted (part 1 of 2)" in captured.out
    assert "batch batch_2: 2 requests submitted (part 2 of 2)" in captured.out


def test_a_thai_llm_leaderboard_generation_task_in_batch_mode_equals_live(tmp_path):
    """The Thai LLM Leaderboard's generation tasks take the same batch mode: iApp QA on 3 real items, live
    and in batch rounds, give the same stored records and scores; one batch, no request sent twice."""
    from thai_eval_utils.thai_llm_leaderboard.generation import run_nlg_task

    data = REPO / "data" / "thai_llm_leaderboard"

    def run(model: Any, out: Path):
        return run_nlg_task(model, "iapp_squad_seacrowd_qa", data, limit=3, outputs=out, progress=False)

    with FakeOpenAIServer(Echo()) as live_srv:
        live = run(api_model(live_srv), tmp_path / "live")
    with FakeBatchServer(Echo()) as srv:
        res = run_answers(
            api_model(srv), lambda m: run(m, tmp_path / "batch"), submit=True, wait_s=30, poll_s=0.01, progress=False
        )
        assert len(srv.batches) == 1 and sum(srv.answered.values()) == 3 and max(srv.answered.values()) == 1
    assert [r["output"] for r in res.records] == [r["output"] for r in live.records]
    assert stored(res.run_dir) == stored(live.run_dir)
    assert res.scores == live.scores and res.summary["n_ungenerated"] == 0 == live.summary["n_ungenerated"]
