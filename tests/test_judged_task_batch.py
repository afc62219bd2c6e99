"""A declared task's judged metric in batch mode (``run_task(judge_batch=...)``, ``thai-eval run --batch``) and where
its judgements live (``<run>/judgements/<metric>/``): the OpenAI Batch API (a fake one on 127.0.0.1, through the real
``openai`` client) scores what live calls score, with no live judge call; two judged tasks write their requests to
one offline file and each reads its own replies back; a batch still running is listed by ``thai-eval batch
status``; records judged before judgements had a folder of their own are read back, never asked for again."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from fake_batch_server import FakeBatchServer
from fake_openai_server import FakeOpenAIServer, PerAnswerScript, Reply
from fakes import FakeModel
from test_judged_task import FAKE_KEY, JUDGED_TASK_FILE, ROWS, RUBRIC, _judge, write_jsonl

from thai_eval_utils.cli import main
from thai_eval_utils.cli.commands import batch_messages
from thai_eval_utils.core import registry
from thai_eval_utils.core.runs import list_runs
from thai_eval_utils.tasks import GenerationTask, run_task
from thai_eval_utils.tasks.judged import JudgedMetric

#: The judge's replies by answer ("A<n>" answers item n): A1 parses at the second call, A3 never within two calls.
SCRIPT = {"A1": ["ไม่แน่ใจ", "<score>8</score>"], "A2": ["<score>4</score>"], "A3": ["ไม่รู้", "ไม่รู้"]}


def _replies() -> PerAnswerScript:
    return PerAnswerScript({k: [Reply(t) for t in v] for k, v in SCRIPT.items()}, default=Reply("<score>6</score>"))


def _task(folder: Path, name: str = "j") -> GenerationTask:
    write_jsonl(folder / f"{name}.jsonl", ROWS)
    metric = JudgedMetric(RUBRIC, "task-file-judge", max_calls=2, scale=10.0, name="quality")
    return GenerationTask(name=name, data=f"{name}.jsonl", prompt="{q}", reference="a", metrics=metric).bind(folder)


def _reply_to(request: dict) -> Reply:
    """The scripted reply to one batch request: its answer's reply at the request's attempt (``#a<n>``), as a
    stand-in for ``vllm run-batch``."""
    answer = re.search(r"<model_answer>(.*?)</model_answer>", request["body"]["messages"][-1]["content"]).group(1)
    attempt = int(re.search(r"#a(\d+)t", request["custom_id"]).group(1))
    replies = SCRIPT.get(answer, [])
    return Reply(replies[attempt - 1] if attempt <= len(replies) else "<score>6</score>")


def _answering_model() -> FakeModel:
    return FakeModel(complete=lambda p: "A" + p[-1])  # "ข้อ 1" -> "A1"


def _judgements(run) -> list[dict]:
    """The judgements on the run's records, without the time they were made."""
    return [{k: v for k, v in r["quality_judgement"].items() if k != "judged_at"} for r in run.records]


def test_the_batch_api_scores_what_live_calls_score_without_a_live_judge_call(tmp_path):
    task = _task(tmp_path)
    with FakeOpenAIServer(_replies()) as live_srv:
        live = run_task(_answering_model(), task, outputs=tmp_path / "live", progress=False, judge=_judge(live_srv))
    with FakeBatchServer(_replies()) as srv:
        batch = {"submit": True, "wait_s": 30, "poll_s": 0.01}
        run = run_task(
            _answering_model(), task, outputs=tmp_path / "b", progress=False, judge=_judge(srv), judge_batch=batch
        )
        assert len(srv.batches) == 2  # round 1: every item's first call; round 2: A1's and A3's second
        assert sorted(srv.answered.values()) == [1] * 6  # 4 + 2 requests, none answered twice
    assert [r["quality"] for r in run.records] == [r["quality"] for r in live.records] == [8.0, 4.0, None, 6.0]
    assert _judgements(run) == _judgements(live)
    assert run.records[2]["quality_judgement"]["status"] == "unparsed"
    assert run.scores["quality"] == live.scores["quality"]
    judged = run.summary["judged"]["quality"]
    assert judged["judge_calls_this_run"] == live.summary["judged"]["quality"]["judge_calls_this_run"] == 6
    assert judged["batch"]["running"] is None and judged["batch"]["batch_ids"] == ["batch_1", "batch_2"]
    part = run.run_dir / "judgements" / "quality"
    first = json.loads((part / "batch_input.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert first["custom_id"].startswith(f"{run.config_id}#quality/")  # this run's requests in a shared file
    assert len((part / "items.jsonl").read_text(encoding="utf-8").splitlines()) == 4  # one record per judgement
    assert not (part / "run_card.json").exists()  # a part of the run, not a run: listings show the task's run only


def test_two_judged_tasks_share_one_offline_file_and_each_reads_its_own_replies(tmp_path):
    """``--batch-file-out``: each task keeps the other's lines in the file; the answered file (``vllm run-batch``'s
    output, here made by the fake server's line writer) gives each task its replies. The judge is never called."""
    never = FakeModel("never-called-judge")  # any call raises; offline files take any judge
    tasks = [_task(tmp_path, "j"), _task(tmp_path, "k")]
    requests, replies = tmp_path / "requests.jsonl", tmp_path / "replies.jsonl"
    out = tmp_path / "out"
    for round_ in range(3):
        opts = {"file_out": str(requests), **({"file_in": str(replies)} if replies.exists() else {})}
        runs = [
            run_task(_answering_model(), t, outputs=out, progress=False, judge=never, judge_batch=opts) for t in tasks
        ]
        if not requests.exists():
            break
        lines = [json.loads(x) for x in requests.read_text(encoding="utf-8").splitlines()]
        prefixes = sorted({ln["custom_id"].split("/", 1)[0] for ln in lines})
        assert prefixes == sorted(f"{r.config_id}#quality" for r in runs)  # both tasks' requests kept in one file
        assert len(lines) == (8 if round_ == 0 else 4)  # round 2: A1's and A3's second call, in each task
        with replies.open("a", encoding="utf-8") as fh:
            for ln in lines:
                fh.write(json.dumps(FakeBatchServer.answer_line(ln, _reply_to(ln), "j-1", "r")[1]) + "\n")
        requests.unlink()
    assert round_ == 2
    for run in runs:
        assert [r["quality"] for r in run.records] == [8.0, 4.0, None, 6.0]
        assert run.scores["quality"]["value"] == 6.0 and run.scores["quality"]["n"] == 3  # (8 + 4 + 6) / 3
        judged = run.summary["judged"]["quality"]
        assert (judged["n_judged"], judged["n_unparsed"], judged["n_unjudged"]) == (3, 1, 0)


def test_a_batch_still_running_is_unjudged_and_listed_by_batch_status(tmp_path, capsys):
    task = _task(tmp_path)
    with FakeBatchServer(_replies(), polls_to_finish=1000) as srv:
        run = run_task(
            _answering_model(),
            task,
            outputs=tmp_path,
            progress=False,
            judge=_judge(srv),
            judge_batch={"submit": True, "wait_s": 0},
        )
        assert [r["quality"] for r in run.records] == [None] * 4
        assert [r["quality_judgement"]["status"] for r in run.records] == ["unjudged"] * 4
        assert run.records[0]["quality_judgement"]["error"] == "waiting for batch batch_1"
        assert run.scores["quality"]["n"] == 0 and run.scores["quality"]["n_unjudged"] == 4
        assert run.summary["judged"]["quality"]["batch"]["running"] == "batch_1"
        capsys.readouterr()
        assert main(["batch", "status", "--outputs", str(tmp_path)]) == 0
        listing = capsys.readouterr().out
        assert f"j/j/{run.config_id}/judgements/quality" in listing and "submitted" in listing
        said = batch_messages(tmp_path, since="")
        assert any(
            m == f"fake-model/j/j/{run.config_id}/judgements/quality: batch batch_1: 4 requests submitted" for m in said
        ), said


def test_judgements_on_records_stored_before_judgement_folders_are_never_asked_again(tmp_path):
    """A run stored before judgements had a folder of their own: its records hold the judgements (and the shared
    cache may be gone). The rerun reads them back and asks the judge for nothing."""
    task = _task(tmp_path)
    with FakeOpenAIServer(_replies()) as srv:
        first = run_task(_answering_model(), task, outputs=tmp_path / "o", progress=False, judge=_judge(srv))
    shutil.rmtree(first.run_dir / "judgements")
    (tmp_path / "o" / "cache" / "task_judgements_answer_quality.jsonl").unlink()
    with FakeOpenAIServer(PerAnswerScript(default=Reply("<score>1</score>"))) as srv2:
        again = run_task(FakeModel(), task, outputs=tmp_path / "o", progress=False, judge=_judge(srv2))
        assert srv2.n_chat_calls == 0
    assert [r["quality"] for r in again.records] == [8.0, 4.0, None, 6.0]
    assert again.summary["judged"]["quality"]["judge_calls_this_run"] == 0
    assert len((again.run_dir / "judgements" / "quality" / "items.jsonl").read_text().splitlines()) == 4


def test_the_commands_batch_file_options_reach_a_judged_task(tmp_path, tiny_model_dir, monkeypatch, capsys):
    """``thai-eval run --batch-file-out F`` on a declared judged task writes its judge's requests to F (the local
    model's answers are made live); answered, ``--batch-file-in`` scores them. No judge is ever called live (the
    task file's judge is at an address where nothing answers)."""
    folder = tmp_path / "my_tasks"
    folder.mkdir()
    write_jsonl(folder / "judged_answers.jsonl", ROWS[:2])
    (folder / "judged_answers.py").write_text(
        'BASE_URL = "http://127.0.0.1:9/v1"\n' + JUDGED_TASK_FILE, encoding="utf-8"
    )
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv(registry.TASKS_ENV, "")
    monkeypatch.setattr(registry, "_included", [])
    monkeypatch.setattr(registry, "_suites", None)
    out, requests, replies = tmp_path / "outputs", tmp_path / "requests.jsonl", tmp_path / "replies.jsonl"
    args = ["run", "--model", str(tiny_model_dir), "--tasks-dir", str(folder), "--benchmarks", "judged_answers"]
    args += ["--limit", "2", "--no-paper", "--outputs", str(out)]
    assert main([*args, "--batch-file-out", str(requests)]) == 0, capsys.readouterr()
    (stored,) = [r for r in list_runs(out) if r.family == "judged_answers"]
    assert stored.summary["judged"]["quality"]["n_unjudged"] == 2 and stored.summary["scores"]["quality"]["n"] == 0
    lines = [json.loads(x) for x in requests.read_text(encoding="utf-8").splitlines()]
    assert [ln["custom_id"].split("/")[0] for ln in lines] == [f"{stored.dir.name}#quality"] * 2
    assert {ln["body"]["model"] for ln in lines} == {"fake-judge"} and FAKE_KEY not in requests.read_text()
    replies.write_text(
        "".join(
            json.dumps(FakeBatchServer.answer_line(ln, Reply("<score>9</score>"), "j", "r")[1]) + "\n" for ln in lines
        )
    )
    assert main([*args, "--batch-file-in", str(replies)]) == 0, capsys.readouterr()
    (stored,) = [r for r in list_runs(out) if r.family == "judged_answers"]
    score = stored.summary["scores"]["quality"]
    assert (score["value"], score["n"], stored.summary["judged"]["quality"]["n_unjudged"]) == (9.0, 2, 0)
    assert stored.summary["judged"]["quality"]["judge_calls_this_run"] == 2  # the two replies read from the file


def test_a_limited_rerun_judges_its_items_and_keeps_every_stored_record(tmp_path):
    """A run of the first N items in a run folder that holds more (a later full run adds the rest, so an earlier full
    run's records are the run's too): judging the N keeps every stored record."""
    task = _task(tmp_path)
    with FakeOpenAIServer(_replies()) as srv:
        full = run_task(_answering_model(), task, outputs=tmp_path / "o", progress=False, judge=_judge(srv))
        first = run_task(FakeModel(), task, outputs=tmp_path / "o", progress=False, judge=_judge(srv), limit=2)
        assert srv.n_chat_calls == 6  # the full run's; the limited run asks for nothing
    assert [r["quality"] for r in first.records] == [8.0, 4.0]
    stored = [json.loads(x) for x in (full.run_dir / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(r["id"], r["quality"]) for r in stored] == [("1", 8.0), ("2", 4.0), ("3", None), ("4", 6.0)]


def test_submission_needs_an_api_judge_and_offline_files_take_any(tmp_path, capsys):
    from thai_eval_utils.tasks.judged import judge_batch, judge_batch_mode

    local = FakeModel("a-local-judge")
    with pytest.raises(ValueError, match=r"batch submission needs an API model \(openai:<model-id>\), not FakeModel"):
        judge_batch(local)
    offline = judge_batch(local, file_out=tmp_path / "requests.jsonl")
    assert offline.transport is None and offline.file_out == tmp_path / "requests.jsonl"
    assert judge_batch_mode(local, submit=True) is None and judge_batch_mode(local) is None  # --batch: live, said so
    assert "judge a-local-judge: not an API model, so it judges live" in capsys.readouterr().out


def test_a_judging_run_without_a_prefix_keeps_the_other_runs_lines_of_a_shared_file(tmp_path):
    """ThaiCLI's judging run writes its requests with no prefix: it replaces its own older lines (a previous round's
    request of one of its judgements) and keeps another run's lines in the same ``--batch-file-out`` file."""
    from thai_eval_utils.core.store import RunStore
    from thai_eval_utils.judging import Judge, JudgementCache, judge_items
    from thai_eval_utils.judging.batch import BatchMode

    judge = Judge(RUBRIC, FakeModel("offline-judge"))
    texts = [{"question": f"ข้อ {i}", "prediction": f"A{i}", "reference": f"ref{i}"} for i in (1, 2)]
    requests = tmp_path / "requests.jsonl"
    stale = f"1:{judge.key(texts[0])[:16]}#a1t0"  # this run's own request, from an older round
    foreign = {"custom_id": "another-run/7:0123456789abcdef#a1t0", "method": "POST", "url": "/v1/chat/completions"}
    lines = [{**foreign, "body": {"model": "x"}}, {**foreign, "custom_id": stale, "body": {"old": True}}]
    requests.write_text("".join(json.dumps(ln) + "\n" for ln in lines), encoding="utf-8")
    with RunStore.open("m", "judged/prefixless", {"n": 1}, outputs=tmp_path) as store:
        cache = JudgementCache(store.shared_file("c.jsonl"))
        mode = BatchMode(file_out=requests, progress=False, echo=lambda _: None)
        done = judge_items(judge, texts, store, cache, ids=["1", "2"], progress=False, batch=mode)
    written = [json.loads(x) for x in requests.read_text(encoding="utf-8").splitlines()]
    assert [ln["custom_id"] for ln in written] == [foreign["custom_id"], stale, f"2:{done.plan[1].key[:16]}#a1t0"]
    assert written[0]["body"] == {"model": "x"} and written[1]["body"]["model"] == "offline-judge"  # stale: replaced
