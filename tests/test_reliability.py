"""Reliability: no record lost, no reply mis-scored, no secret on disk, no bad value accepted silently.

Concurrency cases run real processes; API cases run against the scripted server in ``fake_openai_server``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import traceback
import urllib.parse
from pathlib import Path

import pandas as pd
import pytest
from fake_openai_server import (
    MALFORMED_REPLIES,
    Fail,
    FakeOpenAIServer,
    PerAnswerScript,
    Raw,
    Reply,
    Slow,
)

from thai_eval_utils.core.errors import JudgeError, ThaiEvalDataError
from thai_eval_utils.backend.openai_client import ApiError, ApiModel, reply_problem
from thai_eval_utils.core.provenance import scrub
from thai_eval_utils.core.store import RunLockedError, RunStore
from thai_eval_utils.dialect import human_eval as H
from thai_eval_utils.dialect import metrics as M
from thai_eval_utils.dialect.data import load_dialect
from thai_eval_utils.thaicli.answers import generate_answers
from thai_eval_utils.thaicli.data import load_thaicli
from thai_eval_utils.thaicli.judge import judge_answers, thaicli_scores
from thai_eval_utils.judging.cache import JudgementCache

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}
KEY = "sk-" + "proj-ECHOED-key-0123456789abcdefXYZ"  # built at run time: a fake key
PASSWORD = "pw@/Gr33n!Mango-77"  # needs percent-encoding inside a URL


def frame(answers: list[str]) -> pd.DataFrame:
    n = len(answers)
    return pd.DataFrame(
        {
            "id": [f"{i:032x}" for i in range(n)],
            "format": ["factoid", "instruction"] * (n // 2) + ["factoid"] * (n % 2),
            "theme": ["Culture"] * n,
            "question": [f"คำถามที่ {i}" for i in range(n)],
            "chosen": ["คำตอบที่ดี"] * n,
            "rejected": ["คำตอบที่ไม่ดี"] * n,
            "answer": answers,
        }
    )


def spawn(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        env=ENV,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def fast_dir(tmp_path):
    """A folder on tmpfs when there is one (fsync is free there: 3,000 appends in about a second)."""
    if Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK):
        with tempfile.TemporaryDirectory(dir="/dev/shm") as d:
            yield Path(d)
    else:
        yield tmp_path


# ------------------------------------------------------------------------------------------- the store

WRITER = """
    import sys
    from thai_eval_utils.core.store import RunStore
    store = RunStore.open("m", "stress/run", {"n": 3000}, outputs=sys.argv[1])
    open(sys.argv[2], "w").write("opened")
    record = {"text": "ก" * 1000}  # 3 KB of UTF-8
    for i in range(3000):
        store.append(f"item-{i}", record)
    store.close()
    open(sys.argv[3], "w").write("done")
"""
REOPENER = """
    import os, sys, time
    from thai_eval_utils.core.store import RunLockedError, RunStore
    root, opened, done = sys.argv[1], sys.argv[2], sys.argv[3]
    while not os.path.exists(opened):
        time.sleep(0.001)
    refused, repairs, store = 0, 0, None
    while not os.path.exists(done):
        try:
            RunStore.open("m", "stress/run", {"n": 3000}, outputs=root).close()
        except RunLockedError as exc:
            refused += 1
            message = str(exc)
        if store is None:  # the repair open() runs, without the writer lock: as the old open() did
            card_path = next(iter(__import__("pathlib").Path(root).rglob("run_card.json")))
            store = RunStore(root=card_path.parent, card={})
        store.repair_tail()
        repairs += 1
    print(refused, repairs, message)
"""


def test_3000_appends_while_another_process_reopens_the_run_lose_nothing(fast_dir):
    opened, done = fast_dir / "opened", fast_dir / "done"
    reader = spawn(REOPENER, str(fast_dir), str(opened), str(done))
    writer = spawn(WRITER, str(fast_dir), str(opened), str(done))
    assert writer.wait(60) == 0, writer.stderr.read()
    out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, err
    refused, repairs, message = out.split(" ", 2)
    assert int(refused) > 10 and int(repairs) > 10  # the two really overlapped
    assert f"pid {writer.pid} on" in message and "stress/run" in message
    store = RunStore.open("m", "stress/run", {"n": 3000}, outputs=fast_dir)
    keys = [r["key"] for r in store.iter_records()]
    assert keys == [f"item-{i}" for i in range(3000)]  # all kept, in order, none torn


HOLDER = """
    import sys, time
    from thai_eval_utils.core.store import RunStore
    store = RunStore.open("m", "lock/run", {}, outputs=sys.argv[1])
    print("open", flush=True)
    sys.stdin.readline()
"""


def test_a_second_writer_process_is_refused_naming_the_folder_and_pid(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLDER), str(tmp_path)],
        env=ENV,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "open"
    with pytest.raises(RunLockedError) as exc:
        RunStore.open("m", "lock/run", {}, outputs=tmp_path)
    run_dir = next(tmp_path.rglob("run_card.json")).parent
    assert str(run_dir) in str(exc.value) and f"pid {holder.pid} on" in str(exc.value)
    holder.communicate("\n", timeout=30)  # the holder exits: the lock is free
    first = RunStore.open("m", "lock/run", {}, outputs=tmp_path)
    second = RunStore.open("m", "lock/run", {}, outputs=tmp_path)  # the same process shares its lock
    assert second.root == first.root
    first.close(), second.close()


def test_repair_drops_only_a_torn_last_line(tmp_path):
    store = RunStore.open("m", "torn/run", {}, outputs=tmp_path)
    store.append("a", {"v": 1})
    with open(store.items_path, "ab") as fh:
        fh.write(b'{"key": "b", "v"')  # a crash mid-write
    store.close()
    again = RunStore.open("m", "torn/run", {}, outputs=tmp_path)
    assert list(again.completed()) == ["a"] and again.repair_tail() == 0


JUDGE_PROC = """
    import sys
    import pandas as pd
    from thai_eval_utils.backend.openai_client import ApiModel
    from thai_eval_utils.core.store import RunLockedError
    from thai_eval_utils.thaicli.judge import judge_answers
    df = pd.read_json(sys.argv[2], orient="records", dtype=False)
    judge = ApiModel("fake-judge", base_url=sys.argv[1], api_key="k", concurrency=4, max_retries=0)
    try:
        run = judge_answers(df, judge, model_name="m", outputs=sys.argv[3], progress=False)
        print("judged", run.summary["n_judged"])
    except RunLockedError as exc:
        print("refused", exc)
"""
ANSWER_PROC = """
    import sys
    import pandas as pd
    from thai_eval_utils.backend.openai_client import ApiModel
    from thai_eval_utils.core.store import RunLockedError
    from thai_eval_utils.thaicli.answers import generate_answers
    df = pd.read_json(sys.argv[2], orient="records", dtype=False)
    model = ApiModel("fake-model", base_url=sys.argv[1], api_key="k", concurrency=2, max_retries=0)
    try:
        print("generated", len(generate_answers(model, df, outputs=sys.argv[3], progress=False)))
    except RunLockedError as exc:
        print("refused", exc)
"""


@pytest.mark.parametrize("script", [JUDGE_PROC, ANSWER_PROC], ids=["judge", "answers"])
def test_two_processes_on_the_same_run_make_each_call_once(tmp_path, script):
    df = frame([f"คำตอบ {i}" for i in range(6)])
    df.to_json(tmp_path / "items.json", orient="records", force_ascii=False)
    release = threading.Event()  # the server answers nothing until the second process has been refused

    def held(body):
        release.wait(60)
        return Reply("<score>7</score>")

    with FakeOpenAIServer(held) as srv:
        procs = [spawn(script, srv.base_url, str(tmp_path / "items.json"), str(tmp_path / "out")) for _ in range(2)]
        deadline = time.monotonic() + 120
        while all(p.poll() is None for p in procs) and time.monotonic() < deadline:
            time.sleep(0.05)  # the lock holder waits on its first reply; the other one is refused and exits
        release.set()
        outs = sorted(p.communicate(timeout=120)[0].strip() for p in procs)
    assert outs[0].split()[:2] in (["generated", "6"], ["judged", "6"]), outs
    assert outs[1].startswith("refused") and "being written by another process (pid" in outs[1]
    assert srv.n_chat_calls == 6  # every item called once, not twice


# ------------------------------------------------------------------------------- malformed replies


@pytest.mark.parametrize("name", sorted(MALFORMED_REPLIES))
def test_a_malformed_reply_is_a_failed_call_never_a_score(tmp_path, name):
    bad = MALFORMED_REPLIES[name]
    good = Reply("<score>7</score>")
    script = PerAnswerScript({"always-bad": [bad] * 10, "bad-once": [bad, good]}, default=good)
    with FakeOpenAIServer(script) as srv:
        judge = ApiModel("fake-judge", base_url=srv.base_url, api_key="k", concurrency=3, max_retries=2)
        run = judge_answers(
            frame(["always-bad", "bad-once", "fine"]), judge, model_name="m", outputs=tmp_path, progress=False
        )
    items = run.items.set_index("answer")
    # retried like a 5xx (1 + max_retries calls), then unjudged and reported; the run went on
    assert script.calls == {"always-bad": 3, "bad-once": 2, "fine": 1}
    assert items.loc["always-bad", "status"] == "unjudged" and pd.isna(items.loc["always-bad", "score"])
    assert "malformed reply" in items.loc["always-bad", "error"]
    # the malformed reply was not one of the 16 parse attempts
    assert (items.loc["bad-once", "status"], items.loc["bad-once", "attempts"], items.loc["bad-once", "score"]) == (
        "scored",
        1,
        7.0,
    )
    assert run.summary["n_unjudged"] == 1 and run.scores.thaicli.n == 2
    lines = [json.loads(x) for x in run.store.items_path.read_text(encoding="utf-8").splitlines()]
    assert [r["status"] for r in lines] == ["unjudged", "scored", "scored"]
    assert json.loads(run.store.summary_path.read_text(encoding="utf-8"))["unjudged_ids"] == [
        items.loc["always-bad", "id"]
    ]


def test_reply_problem_names_each_malformed_shape():
    def problem(raw: Raw) -> str | None:
        return reply_problem("chat", raw.content_type, raw.body)

    assert {k: problem(v) for k, v in MALFORMED_REPLIES.items()} == {
        "not_json": "body is not JSON (JSONDecodeError: Expecting value: line 1 column 1 (char 0))",
        "html_page": "content type 'text/html', not JSON",
        "json_list": "body is a JSON list, not an object",
        "message_null": "choices[0].message is null, not an object",
        "choices_empty": "choices is [], not a non-empty list",
        "choices_missing": "no choices",
        "content_null": "choices[0].message.content is null, not text",
    }
    ok = {"choices": [{"message": {"content": ""}}]}
    assert reply_problem("chat", "application/json; charset=utf-8", json.dumps(ok).encode()) is None
    assert reply_problem("completions", "application/json", b'{"choices": [{"text": "x"}]}') is None
    assert (
        reply_problem("completions", "application/json", b'{"choices": [{"text": null}]}')
        == "choices[0].text is null, not text"
    )


def test_chat_raises_a_named_api_error_after_retrying_a_malformed_reply():
    with FakeOpenAIServer(lambda body: MALFORMED_REPLIES["choices_empty"]) as srv:
        model = ApiModel("fake-model", base_url=srv.base_url, api_key="k", max_retries=1)
        with pytest.raises(ApiError, match=r"HTTP 502.*malformed reply: choices is \[\]"):
            model.chat([[{"role": "user", "content": "สวัสดี"}]])
    assert srv.n_chat_calls == 2


def test_a_fatal_error_still_writes_the_finished_items_and_the_summary(tmp_path):
    script = PerAnswerScript({"refused": [Slow(0.3, Fail(401, message="bad key"))]}, default=Reply("<score>6</score>"))
    with FakeOpenAIServer(script) as srv:
        judge = ApiModel("fake-judge", base_url=srv.base_url, api_key="k", concurrency=1, max_retries=0)
        with pytest.raises(JudgeError, match="HTTP 401"):
            judge_answers(frame(["fine", "refused", "later"]), judge, model_name="m", outputs=tmp_path, progress=False)
    summary = json.loads(next(tmp_path.rglob("summary.json")).read_text(encoding="utf-8"))
    assert summary["n_judged"] == 1 and "HTTP 401" in summary["fatal_error"]
    lines = [json.loads(x) for x in next(tmp_path.rglob("items.jsonl")).read_text(encoding="utf-8").splitlines()]
    assert [(r["status"], r["score"]) for r in lines] == [("scored", 6.0), ("unjudged", None), ("unjudged", None)]


# ---------------------------------------------------------------------------------------- secrets


def echo_responder(body: dict) -> object:
    """Answers echo the caller's Authorization header; the judge fails item 0 with it and echoes it in replies."""
    text = body["messages"][-1]["content"]
    if body["model"] == "fake-model":
        return Reply("คำตอบ (server saw {authorization})")
    if "คำถามที่ 0" in text:
        return Fail(500, message="upstream rejected credentials {authorization}")
    return Reply("<score>7</score><explanation>checked with {authorization}</explanation>")


def all_files(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}


def assert_no_secret(files: dict[Path, bytes], *secrets: str) -> None:
    forms = {s2 for s in secrets for s2 in (s, urllib.parse.quote(s, safe=""), json.dumps(s)[1:-1])}
    leaks = [(str(p), f) for p, data in files.items() for f in forms if f.encode() in data]
    assert not leaks


def test_url_credentials_are_sent_as_a_bearer_key_and_never_as_basic_auth():
    with FakeOpenAIServer(PerAnswerScript()) as srv:
        url = srv.base_url.replace("http://", f"http://alice-admin:{urllib.parse.quote(PASSWORD, safe='')}@")
        model = ApiModel("fake-judge", base_url=url)
        assert model.base_url == srv.base_url and PASSWORD not in repr(model) and "alice" not in str(model.identity)
        model.chat([[{"role": "user", "content": "x"}]])
        ApiModel("fake-judge", base_url=url, api_key=KEY).chat([[{"role": "user", "content": "x"}]])
    assert srv.auth_headers == {f"Bearer {PASSWORD}", f"Bearer {KEY}"}
    # the user name is masked too; values under 6 characters are not (masking "abc" everywhere corrupts text)
    assert scrub(f"a {PASSWORD} b alice-admin c alice") == "a <redacted> b <redacted> c alice"


def test_keys_echoed_by_the_server_reach_no_file_and_no_message(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeOpenAIServer(echo_responder) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        answers = generate_answers(
            ApiModel("fake-model"), frame(["-"] * 4).drop(columns="answer"), outputs=tmp_path, progress=False
        )
        url = srv.base_url.replace("http://", f"http://u:{urllib.parse.quote(PASSWORD, safe='')}@")
        judge = ApiModel("fake-judge", base_url=url, max_retries=1)
        run = judge_answers(answers, judge, outputs=tmp_path, progress=False)
        assert run.summary["n_unjudged"] == 1 and run.summary["n_judged"] == 3
        assert "<redacted>" in run.summary["unjudged_errors"][0]
        refused = ApiModel("fake-judge", base_url=url, max_retries=0)
        with FakeOpenAIServer(lambda body: Fail(401, message="key {authorization} is revoked")) as srv401:
            refused.base_url = srv401.base_url
            with pytest.raises(JudgeError) as exc:
                judge_answers(answers.assign(answer="other"), refused, outputs=tmp_path, progress=False)
    message = "".join(traceback.format_exception(exc.value))
    assert "revoked" in message and PASSWORD not in message and KEY not in message
    assert {f"Bearer {KEY}", f"Bearer {PASSWORD}"} <= srv.auth_headers  # the secrets were really echoed
    assert not any(h.startswith("Basic") for h in srv.auth_headers)
    assert_no_secret(all_files(tmp_path), KEY, PASSWORD)


def test_the_batch_runner_writes_no_secret(tmp_path, monkeypatch):
    from thai_eval_utils.notebook_runs import run_models

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeOpenAIServer(echo_responder) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        url = srv.base_url.replace("http://", f"http://u:{urllib.parse.quote(PASSWORD, safe='')}@")
        report = run_models(
            ["openai:fake-model"],
            notebooks=["thaicli.ipynb"],
            limit=1,
            judge="fake-judge",
            judge_base_url=url,
            outputs=tmp_path,
            notebooks_dir=REPO / "notebooks",
            paper_notebook=None,
            verbose=False,
        )
    assert report.ok, report.summary()
    assert f"Bearer {PASSWORD}" in srv.auth_headers and f"Bearer {KEY}" in srv.auth_headers
    files = all_files(tmp_path)
    assert any(p.name == "thaicli.ipynb" for p in files) and any(p.name == "batch_report.json" for p in files)
    assert (
        json.loads((tmp_path / "notebooks" / "batch_report.json").read_text())["runs"][0]["parameters"][
            "judge_base_url"
        ]
        == srv.base_url
    )
    assert_no_secret(files, KEY, PASSWORD)


# ------------------------------------------------------------------------------ identity, not address


def test_moving_the_server_keeps_resuming_the_same_runs(tmp_path):
    df = frame(["-"] * 4).drop(columns="answer")
    with FakeOpenAIServer(lambda body: Reply("คำตอบ")) as first:
        a = generate_answers(
            ApiModel("fake-model", base_url=first.base_url, api_key="k"), df, outputs=tmp_path, progress=False
        )
    with FakeOpenAIServer(lambda body: Reply("อื่น")) as moved:  # another port
        b = generate_answers(
            ApiModel("fake-model", base_url=moved.base_url, api_key="k"), df, outputs=tmp_path, progress=False
        )
        card = json.loads((Path(b.attrs["run_dir"]) / "run_card.json").read_text())
    assert first.n_chat_calls == 4 and moved.n_chat_calls == 0
    assert a.attrs["config_id"] == b.attrs["config_id"] and list(b["answer"]) == ["คำตอบ"] * 4
    assert card["model"]["base_url"] == moved.base_url  # recorded, not keyed


# ------------------------------------------------------------------------------------- bad values


def test_empty_thaicli_texts_are_named(tmp_path):
    rows = [{"question": "คำถาม", "chosen": "ดี", "rejected": "ไม่ดี", "theme": "Culture"} for _ in range(3)]
    for field, value in [("question", ""), ("chosen", "   "), ("rejected", "")]:
        bad = [dict(r) for r in rows]
        bad[1][field] = value
        path = tmp_path / "CLI_factoid.jsonl"
        path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in bad), encoding="utf-8")
        with pytest.raises(ThaiEvalDataError) as exc:
            load_thaicli(path)
        assert (exc.value.path, exc.value.row, exc.value.field, exc.value.reason) == (str(path), 1, field, "empty text")


def test_judging_validates_every_item_before_calling_or_writing(tmp_path):
    df = frame(["a", "b", "c"])
    df.loc[1, "chosen"] = ""
    with FakeOpenAIServer() as srv:
        judge = ApiModel("fake-judge", base_url=srv.base_url, api_key="k")
        with pytest.raises(ThaiEvalDataError, match="row 1, field 'chosen': empty text"):
            judge_answers(df, judge, model_name="m", outputs=tmp_path, progress=False)
    assert srv.n_chat_calls == 0 and not (tmp_path / "runs").exists()


def test_a_nan_gold_string_is_named(tmp_path):
    (tmp_path / "center").mkdir()
    rows = [{"id": i, "question": "ถาม", "context": "บริบท", "text_2": gold} for i, gold in enumerate(["ตอบ", "NaN"])]
    path = tmp_path / "center" / "qa.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    with pytest.raises(ThaiEvalDataError) as exc:
        load_dialect(tmp_path)
    assert (exc.value.row, exc.value.field) == (1, "text_2") and "'NaN' is a missing value written as text" in str(
        exc.value
    )
    with pytest.raises(ValueError, match="unknown dialect 'isan'"):
        load_dialect(tmp_path, dialects=["isan"])


@pytest.mark.parametrize("score", ["inf", "-Infinity", "1e400", "nan"])
def test_non_finite_judge_scores_are_named(tmp_path, score):
    path = tmp_path / "judge.csv"
    path.write_text(f"dialect,task,item_id,model,judge,score\ncenter,qa,0,m,j,7\ncenter,qa,1,m,j,{score}\n")
    with pytest.raises(ThaiEvalDataError) as exc:
        H.load_judge_scores(path)
    assert (exc.value.row, exc.value.field) == (1, "score")


def test_human_eval_refuses_unknown_dialects_and_bool_labels(tmp_path):
    path = tmp_path / "judge.csv"
    path.write_text("dialect,task,item_id,model,judge,score\ncenter,qa,0,m,j,7\nisan,qa,0,m,j,5\n")
    with pytest.raises(ThaiEvalDataError, match="row 1, field 'dialect': unknown dialect 'isan'"):
        H.load_judge_scores(path)
    with pytest.raises(ValueError, match="item 1: True is not a label"):
        H.cohen_kappa([1.0, True, 0.0], [1.0, 1.0, 0.0])
    # p_o = 2/3; marginals (1/3, 1/3, 1/3) and (0, 2/3, 1/3): p_e = 1/3; kappa = (2/3 - 1/3) / (1 - 1/3)
    assert H.cohen_kappa([1.0, 0.5, 0.0], [1.0, 0.5, 0.5]).value == pytest.approx(0.5)


def test_thaicli_scores_without_status_and_with_bad_scores():
    plain = pd.DataFrame(
        {"format": ["factoid", "factoid", "instruction"], "theme": ["a", "a", "b"], "score": [6, 8, 5]}
    )
    s = thaicli_scores(plain)  # no status/attempts: every row judged, one call each
    assert (s.factoid.value, s.instruction.value, s.thaicli.value) == (7.0, 5.0, 6.0)
    assert s.by_format["n_parse_retries"].tolist() == [0, 0]
    with pytest.raises(ThaiEvalDataError, match=r"lack column\(s\) \['score'\]"):
        thaicli_scores(plain.drop(columns="score"))
    for bad in (float("inf"), float("-inf"), float("nan")):
        with pytest.raises(ThaiEvalDataError, match="row 1, field 'score'"):
            thaicli_scores(plain.assign(score=[6.0, bad, 5.0]))


def test_judgement_cache_refuses_non_finite_scores(tmp_path):
    path = tmp_path / "cache.jsonl"
    path.write_text(
        '{"key": "a", "status": "scored", "score": Infinity}\n{"key": "b", "status": "scored", "score": 7}\n'
    )
    cache = JudgementCache(path)
    assert "a" not in cache and cache.get("b")["score"] == 7 and cache.n_bad_lines == 1
    with pytest.raises(ValueError, match="finite score"):
        cache.append({"key": "c", "status": "scored", "score": float("nan")})


def test_nan_hypothesis_and_duplicate_central_rows_are_named():
    with pytest.raises(ThaiEvalDataError, match="row 1, field 'hypothesis': expected text or None, got float nan"):
        M.task_scores("qa", ["สวัสดี", float("nan")], ["สวัสดี", "ครับ"])
    rows = [("center", 50.0), ("center", 40.0), ("east", 30.0)]
    scores = pd.DataFrame([{"model": "m", "dialect": d, "task": "qa", "metric": "rougeL", "value": v} for d, v in rows])
    with pytest.raises(ThaiEvalDataError, match=r"row 1, field 'model': duplicate row .*also row 0"):
        M.delta_diff(scores)
    assert M.delta_diff(scores.drop(index=1))["delta"].tolist() == [20.0]
    with pytest.raises(ThaiEvalDataError, match="unknown dialect 'centre'"):
        M.delta_diff(scores.drop(index=1).replace("center", "centre"))


def test_a_run_keyed_with_its_address_before_is_migrated_and_resumed(tmp_path, monkeypatch):
    """A run keyed with its address (before) is found under the same address, renamed, then survives a move."""
    from thai_eval_utils.core import store as S

    identity = {"name": "fake-model", "source": "openai-compatible", "base_url": "http://10.0.0.1:8000/v1"}
    monkeypatch.setattr(S, "UNKEYED_IDENTITY_KEYS", ("loaded_at", "load_seconds"))  # how runs were keyed before
    with RunStore.open("m", "thaicli/answers", {"t": 0}, model_identity=identity, outputs=tmp_path) as old:
        old.append("q1", {"answer": "คำตอบ"})
    monkeypatch.undo()
    with RunStore.open("m", "thaicli/answers", {"t": 0}, model_identity=identity, outputs=tmp_path) as new:
        assert new.card["migrated_from"] == old.config_id != new.config_id and not old.root.exists()
    moved = {**identity, "base_url": "http://10.0.0.2:9000/v1"}
    with RunStore.open("m", "thaicli/answers", {"t": 0}, model_identity=moved, outputs=tmp_path) as again:
        assert again.root == new.root and again.completed()["q1"]["answer"] == "คำตอบ"
        assert again.card["model"]["base_url"] == moved["base_url"]


def test_h6_with_a_bad_document_in_the_middle_writes_nothing(tmp_path):
    """In-memory docs are all checked before the run folder exists: a bad middle document is named and no
    half-run (records without a summary) is left behind."""
    from fakes import FakeModel

    from thai_eval_utils import h6

    def arc(q, key):
        return {"question": q, "choices": {"text": ["ก", "ข"], "label": ["A", "B"]}, "answerKey": key}

    docs = [arc("ข้อหนึ่ง", "A"), {"question": "ข้อสอง", "answerKey": "A"}, arc("ข้อสาม", "B")]  # doc 1 has no choices
    model = FakeModel("careful", score=lambda ctx, cont: (-1.0, False))
    with pytest.raises(ThaiEvalDataError, match="doc 1") as err:
        h6.evaluate(model, "th_arc", docs, h6.LEADERBOARD.replace(num_fewshot=0), outputs=tmp_path, progress=False)
    assert err.value.row == 1
    assert not (tmp_path / "runs").exists() and model.calls == []


def test_answers_and_dialect_generation_survive_a_failing_server(tmp_path):
    """A request that keeps failing (a malformed reply) leaves its item ungenerated and reported; the others are
    generated and stored, the summary is written, the run is not aborted, and a rerun asks only for what is missing."""
    from thai_eval_utils.dialect import generation as D

    bad = next(iter(MALFORMED_REPLIES.values()))
    failing: set[str] = set()
    seen: list[str] = []

    def responder(body):
        text = body["messages"][-1]["content"]
        if "<model_answer>" in text:  # the judge
            return Reply("<score>7</score>")
        seen.append(text)
        return bad if text in failing else Reply("ตอบแล้ว")

    questions = pd.DataFrame(
        [
            {"id": f"q{i}", "format": "factoid", "theme": "Culture", "question": q, "chosen": "ดี", "rejected": "ไม่ดี"}
            for i, q in enumerate(["ข้อดีคืออะไร", "ข้อเสียคืออะไร"])
        ]
    )
    items = D.select_items(
        load_dialect(Path(__file__).resolve().parents[1] / "data" / "dialect", dialects=["center"]),
        tasks=["qa"],
        limit=2,
    )
    second_prompt = D.build_prompt(items.iloc[1].to_dict(), D.load_prompts())
    failing.update({"ข้อเสียคืออะไร", second_prompt})
    with FakeOpenAIServer(responder) as srv:
        model = ApiModel("fake-judge-2024-01-01", base_url=srv.base_url, api_key="k", concurrency=1, max_retries=1)
        with pytest.warns(UserWarning, match="1 of 2 answers not generated"):
            out = generate_answers(model, questions, outputs=tmp_path, batch_size=1, progress=False)
        summary = json.loads((Path(out.attrs["run_dir"]) / "summary.json").read_text(encoding="utf-8"))
        judged = judge_answers(out, model, model_name="m", outputs=tmp_path, progress=False).items
        with pytest.warns(UserWarning, match="1 of 2 dialect items not generated"):
            gen = D.run_generation(model, items, outputs=tmp_path, batch_size=1, progress=False)
        gen_summary = json.loads((Path(gen.attrs["run_dir"]) / "summary.json").read_text(encoding="utf-8"))
        failing.clear()
        n_seen = len(seen)
        again = generate_answers(model, questions, outputs=tmp_path, batch_size=1, progress=False)
        regen = D.run_generation(model, items, outputs=tmp_path, batch_size=1, progress=False)
    assert out["answer"].iloc[0] == "ตอบแล้ว" and out["answer"].isna().tolist() == [False, True]
    assert len(out.attrs["ungenerated"]) == 1
    # the ungenerated answer is never judged nor scored: unjudged, with the reason
    assert judged["status"].tolist() == ["scored", "unjudged"] and judged["score"].iloc[0] == 7.0
    assert judged["score"].isna().tolist() == [False, True] and "not generated" in judged["error"].iloc[1]
    assert summary["n_ungenerated"] == 1 and "malformed reply" in next(iter(summary["ungenerated"].values()))
    assert gen["output"].tolist()[0] == "ตอบแล้ว" and gen["output"].isna().tolist() == [False, True]
    assert gen_summary["n_ungenerated"] == 1 and gen_summary["n_items"] == 1
    # the rerun asked only for the two missing items, and now every item has its text
    assert len(seen) == n_seen + 2 and seen[-2:] == ["ข้อเสียคืออะไร", second_prompt]
    assert list(again["answer"]) == ["ตอบแล้ว", "ตอบแล้ว"] and regen["output"].notna().all()
