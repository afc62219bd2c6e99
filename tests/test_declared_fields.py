"""A declared task's fields and every ``stop`` argument: one stop string given as a string is one stop string (never
its characters) in a declaration, the local engine, the OpenAI and served clients' requests, batch request bodies
and Thai-H6's GSM8K stops; anything but strings is refused by name. Every field of ``FewShot``,
``MultipleChoiceTask`` and ``GenerationTask`` is checked for its type and range when declared (the field named,
what was expected and what was found); a bad declaration in a task file names the file, and ``thai-eval run``
prints it as one line, no traceback, exit status 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fake_completions_server import FakeCompletionsServer
from fake_openai_server import FakeOpenAIServer, Reply
from fakes import FakeModel

from thai_eval_utils.backend.openai_client import ApiModel
from thai_eval_utils.backend.served import ServedModel
from thai_eval_utils.backend.stops import StopScanner, cut_at_stop
from thai_eval_utils.core import registry
from thai_eval_utils.core.batch_files import chat_body
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.protocols import stop_strings
from thai_eval_utils.h6.protocol import H6Protocol
from thai_eval_utils.tasks import FewShot, GenerationTask, MultipleChoiceTask, run_task

REPO = Path(__file__).resolve().parents[1]
MC = {"name": "t", "data": "d.jsonl", "prompt": "{q}", "choices": "c", "gold": "g"}
GEN = {"name": "g", "data": "d.jsonl", "prompt": "{q}", "reference": "r"}
BAD_STOP = "expected a stop string or a list of stop strings, got "


# ------------------------------------------------------------------------------------------------ stop strings
def test_stop_strings_means_one_string_as_one_stop():
    assert stop_strings("###") == ("###",) and stop_strings(["###", "\n"]) == ("###", "\n")
    assert stop_strings(("\n",)) == ("\n",) and stop_strings(None) == () and stop_strings(["", "x", ""]) == ("x",)
    with pytest.raises(ThaiEvalDataError) as err:
        stop_strings({"#"})
    assert err.value.field == "stop" and err.value.reason == BAD_STOP + "set {'#'}"


def test_a_declared_stop_string_is_one_stop(tmp_path):
    (tmp_path / "g.jsonl").write_text('{"id": "a", "q": "หนึ่งบวกหนึ่ง", "r": "สอง"}\n', encoding="utf-8")
    task = GenerationTask(name="g", data="g.jsonl", prompt="{q}", reference="r", stop="###").bind(tmp_path)
    assert task.stop == ("###",) and task.declaration()["stop"] == ("###",)
    model = FakeModel(complete=lambda prompt: "สอง")
    run_task(model, task, outputs=tmp_path / "out", progress=False)
    assert model.calls[0][1]["stop"] == ["###"]  # not ["#", "#", "#"]: every reply cut at its first "#"
    assert GenerationTask(**GEN, stop=["###", "\n"]).stop == ("###", "\n")
    assert GenerationTask(**GEN, stop=("\n",)).stop == ("\n",) and GenerationTask(**GEN).stop == ()


def test_the_stop_cut_and_scanner_take_one_string():
    assert cut_at_stop("ตอบ #1 ### ต่อ", "###") == "ตอบ #1 " and cut_at_stop("ตอบ #1", "###") == "ตอบ #1"
    assert StopScanner(lambda ids: "", "###").stops == ("###",)
    for bad, found in ((5, "int 5"), (["#", 1], "a list holding int 1")):
        with pytest.raises(ThaiEvalDataError) as err:
            cut_at_stop("ตอบ", bad)
        assert err.value.field == "stop" and err.value.reason == BAD_STOP + found


def test_the_local_engine_takes_one_stop_string(tiny_local_model):
    prompt = "คำถาม: น้ำเดือดที่อุณหภูมิเท่าไร\nคำตอบ:"
    free = tiny_local_model.generate([prompt], max_new_tokens=24)[0]
    stop = free[3:6]  # three characters that certainly occur in the greedy output
    assert tiny_local_model.generate([prompt], max_new_tokens=24, stop=stop) == [free[: free.index(stop)]]
    chat = lambda p, **kw: tiny_local_model.chat([[{"role": "user", "content": p[0]}]], **kw)  # noqa: E731
    for call in (tiny_local_model.generate, chat):
        with pytest.raises(ThaiEvalDataError, match="field 'stop': expected a stop string"):
            call([prompt], max_new_tokens=4, stop=7)


def test_batch_request_bodies_take_one_stop_string():
    body = chat_body(
        "m", [{"role": "user", "content": "x"}], max_tokens=4, temperature=0.0, top_p=1.0, seed=None, stop="###"
    )
    assert body["stop"] == ["###"]
    with pytest.raises(ThaiEvalDataError) as err:
        chat_body("m", [], max_tokens=4, temperature=0.0, top_p=1.0, seed=None, stop=["###", None])
    assert err.value.reason == BAD_STOP + "a list holding NoneType None"


def test_the_openai_client_sends_one_stop_string_and_refuses_others():
    with FakeOpenAIServer(lambda body: Reply("ตอบ #1 ### ต่อ")) as srv:
        model = ApiModel("fake-model", base_url=srv.base_url, api_key="none")
        assert model.generate(["คำถาม"], stop="###", max_new_tokens=8) == ["ตอบ #1 "]
        assert srv.bodies[0]["stop"] == ["###"]
        with pytest.raises(ThaiEvalDataError, match="field 'stop'"):
            model.chat([[{"role": "user", "content": "x"}]], stop=["###", 3])
        assert len(srv.bodies) == 1  # refused before any request


def test_the_served_client_sends_one_stop_string_and_refuses_others(tiny_llama, tiny_model_dir):
    model, tok = tiny_llama
    with FakeCompletionsServer(model, tok) as srv:
        m = ServedModel("tiny", base_url=srv.base_url, tokenizer=str(tiny_model_dir))
        assert m.generate(["คำถาม: 6 x 7\nคำตอบ:"], max_new_tokens=10, stop="\n\n") == ["ตอบ 42"]
        assert [b for b in srv.bodies if "prompt" in b][-1]["stop"] == ["\n\n"]
        sent = len(srv.bodies)
        for call in (m.generate, lambda p, **kw: m.chat([[{"role": "user", "content": p[0]}]], **kw)):
            with pytest.raises(ThaiEvalDataError, match="field 'stop'"):
                call(["x"], max_new_tokens=4, stop=5)
        assert len(srv.bodies) == sent


def test_gsm8k_stops_refuse_what_is_not_a_string():
    assert H6Protocol(gsm8k_stops=["Q:", "\n\n"]).gsm8k_stops == ("Q:", "\n\n")
    with pytest.raises(ThaiEvalDataError) as err:
        H6Protocol(gsm8k_stops=["Q:", 3])
    assert err.value.field == "gsm8k_stops" and err.value.reason == BAD_STOP + "a list holding int 3"


# ------------------------------------------------------------------------------------------ declaration fields
TEXT = "expected non-empty text, got "
ANY_TEXT = "expected text, got "
NAME = "expected a task name without '/' or surrounding spaces, got "
FEWSHOT = "expected FewShot(file, n) or None, got "
COMMON = [  # the fields both kinds have: (field, bad value, the message)
    ("name", 5, NAME + "int 5"),
    ("name", "a/b", NAME + "str 'a/b'"),
    ("name", " t", NAME + "str ' t'"),
    ("data", None, ANY_TEXT + "NoneType None"),
    ("target_delimiter", 0, ANY_TEXT + "int 0"),
    ("fewshot", 1, FEWSHOT + "int 1"),
    ("fewshot", {"file": "train.jsonl", "n": 1}, FEWSHOT + "dict {'file': 'train.jsonl', 'n': 1}"),
    ("id_field", 3, "expected non-empty text or None, got int 3"),
    ("id_field", "", "expected non-empty text or None, got str ''"),
    ("title", None, ANY_TEXT + "NoneType None"),
    ("version", 2, TEXT + "int 2"),
    ("base_dir", 1, "expected non-empty text or None, got int 1"),
    ("process_docs", "rows", "expected a function (rows -> rows) or None, got str 'rows'"),
]
MC_ONLY = [
    ("prompt", 5, TEXT + "int 5"),
    ("prompt", ["{q}"], TEXT + "list ['{q}']"),
    ("choices", 4, "expected a field name or a list of at least 2 field names, got int 4"),
    ("choices", ("a",), "expected a field name or a list of at least 2 field names, got tuple ('a',)"),
    ("choices", ["a", 1], "expected a field name or a list of at least 2 field names, got list ['a', 1]"),
    ("choices", "", "expected a field name or a list of at least 2 field names, got str ''"),
    ("gold", 0, TEXT + "int 0"),
    ("metrics", 5, "expected a metric name or a list of them, got int 5"),
    ("metrics", (), "expected a metric name or a list of them, got tuple ()"),
    ("metrics", ("f1",), "unknown multiple-choice metric(s) ['f1']; choose from acc, acc_norm"),
    ("labels", "ABCD", """expected a list of labels (e.g. ("A", "B", "C", "D")), got str 'ABCD'"""),
    ("labels", [1, 2], """expected a list of labels (e.g. ("A", "B", "C", "D")), got list [1, 2]"""),
    ("ties", "max", "expected one of ('first', 'split'), got str 'max'"),
    ("ties", None, "expected one of ('first', 'split'), got NoneType None"),
    ("requests", "fill", "expected a function (doc, context -> (context, continuation) pairs) or None, got str 'fill'"),
]
NUMBER = "expected a number >= 0, got "
TOP_P = "expected a number in (0, 1], got "
PROMPT = 'expected a template text or a list of chat messages ({"role": ..., "content": ...}), got '
GEN_ONLY = [
    ("prompt", 5, PROMPT + "int 5"),
    ("prompt", [], PROMPT + "list []"),
    ("prompt", ["{q}"], PROMPT + "list ['{q}']"),
    ("prompt", " ", TEXT + "str ' '"),
    (
        "prompt",
        [{"role": "user"}],
        "expected chat messages with exactly 'role' and 'content' text, got dict {'role': 'user'}",
    ),
    ("reference", None, TEXT + "NoneType None"),
    ("metrics", 5, "expected a metric name or a list of them, got int 5"),
    ("metrics", ("meteor",), "unknown generation metric(s) ['meteor']; choose from exact_match, rougeL, chrf, bleu"),
    ("max_new_tokens", "6", "expected an integer >= 1, got str '6'"),
    ("max_new_tokens", 6.0, "expected an integer >= 1, got float 6.0"),
    ("max_new_tokens", 0, "expected an integer >= 1, got int 0"),
    ("max_new_tokens", -5, "expected an integer >= 1, got int -5"),
    ("max_new_tokens", True, "expected an integer >= 1, got bool True"),
    ("stop", 5, BAD_STOP + "int 5"),
    ("stop", ["###", 1], BAD_STOP + "a list holding int 1"),
    ("temperature", "0", NUMBER + "str '0'"),
    ("temperature", -0.1, NUMBER + "float -0.1"),
    ("temperature", float("nan"), NUMBER + "float nan"),
    ("temperature", False, NUMBER + "bool False"),
    ("top_p", 0, TOP_P + "int 0"),
    ("top_p", 1.5, TOP_P + "float 1.5"),
    ("top_p", "1", TOP_P + "str '1'"),
    ("seed", "1", "expected an integer >= 0 or None, got str '1'"),
    ("seed", -1, "expected an integer >= 0 or None, got int -1"),
    ("seed", 1.5, "expected an integer >= 0 or None, got float 1.5"),
    ("extra", [], "expected a mapping with text keys, got list []"),
    ("extra", {1: "x"}, "expected a mapping with text keys, got dict {1: 'x'}"),
    ("filters", "####", "expected a reply filter or a list of them (RegexExtract, AnswerTag), got str '####'"),
]
FEWSHOT_FIELDS = [
    ("file", 5, "fewshot.file", TEXT + "int 5"),
    ("file", "", "fewshot.file", TEXT + "str ''"),
    ("n", "1", "fewshot.n", "expected an integer >= 0, got str '1'"),
    ("n", -1, "fewshot.n", "expected an integer >= 0, got int -1"),
    ("n", 1.0, "fewshot.n", "expected an integer >= 0, got float 1.0"),
    ("n", True, "fewshot.n", "expected an integer >= 0, got bool True"),
    ("delimiter", None, "fewshot.delimiter", ANY_TEXT + "NoneType None"),
    (
        "sampler",
        "random",
        "fewshot.sampler",
        "expected a Sampler (FirstN(), RandomSample(seed)) or None, got str 'random'",
    ),
]
CASES = [pytest.param(MultipleChoiceTask, MC, f, v, m, id=f"mc-{f}-{v!r}") for f, v, m in COMMON + MC_ONLY] + [
    pytest.param(GenerationTask, GEN, f, v, m, id=f"gen-{f}-{v!r}") for f, v, m in COMMON + GEN_ONLY
]


@pytest.mark.parametrize("kind, base, name, value, message", CASES)
def test_each_declared_field_is_checked(kind, base, name, value, message):
    with pytest.raises(ThaiEvalDataError) as err:
        kind(**{**base, name: value})
    assert err.value.field == name and err.value.reason == message and err.value.path is None
    assert str(err.value) == f"field {name!r}: {message}"


@pytest.mark.parametrize(
    "name, value, field, message", FEWSHOT_FIELDS, ids=[f"{f}-{v!r}" for f, v, _, _ in FEWSHOT_FIELDS]
)
def test_each_fewshot_field_is_checked(name, value, field, message):
    with pytest.raises(ThaiEvalDataError) as err:
        FewShot(**{"file": "train.jsonl", "n": 1, name: value})
    assert err.value.field == field and err.value.reason == message


def test_every_field_of_each_kind_is_tried():
    """The cases above try every field of the three declarations (a new field needs its case)."""
    from dataclasses import fields  # noqa: PLC0415

    assert {f for f, _, _ in COMMON + MC_ONLY} == {f.name for f in fields(MultipleChoiceTask)}
    assert {f for f, _, _ in COMMON + GEN_ONLY} == {f.name for f in fields(GenerationTask)}
    assert {f for f, _, _, _ in FEWSHOT_FIELDS} == {f.name for f in fields(FewShot)}


def test_good_declarations_are_kept_as_plain_values():
    task = GenerationTask(
        **{**GEN, "prompt": [{"role": "user", "content": "{q}"}]},
        metrics="chrf",
        max_new_tokens=np.int64(6),
        temperature=np.float32(0.5),
        top_p=1,
        seed=None,
        extra={"note": "x"},
    )
    assert task.metrics == ("chrf",) and task.max_new_tokens == 6 and type(task.max_new_tokens) is int
    assert task.temperature == 0.5 and type(task.temperature) is float and task.seed is None
    assert task.top_p == 1 and type(task.top_p) is int  # as given: the declaration keys the task's runs
    assert json.dumps(task.declaration())  # the run card records it: plain JSON values only
    mc = MultipleChoiceTask(
        **{**MC, "choices": ["a", "b"], "data": ""},
        labels=["A", "B"],
        metrics="acc_norm",
        fewshot=FewShot("train.jsonl", np.int32(0)),
        id_field=None,
    )
    assert mc.choices == ("a", "b") and mc.labels == ("A", "B") and mc.metrics == ("acc_norm",)
    assert mc.fewshot.n == 0 and type(mc.fewshot.n) is int
    with pytest.raises(ThaiEvalDataError) as err:
        MultipleChoiceTask(**{**MC, "choices": ["a", "b"]}, labels=["A", "B", "C"])
    assert err.value.field == "labels" and err.value.reason == "expected one label per choice field (2), got 3 labels"


# --------------------------------------------------------------------------------------- task files, command
BAD_FILE = """from thai_eval_utils.tasks import GenerationTask

TASK = GenerationTask(name="bad_task", data="d.jsonl", prompt="{q}", reference="r", fewshot=1)
"""


@pytest.fixture
def bad_task_file(tmp_path, monkeypatch):
    """A task folder whose one file declares ``fewshot=1``; the registry and environment restored after."""
    folder = tmp_path / "my_tasks"
    folder.mkdir()
    (folder / "bad_task.py").write_text(BAD_FILE, encoding="utf-8")
    (folder / "d.jsonl").write_text('{"id": "a", "q": "x", "r": "y"}\n', encoding="utf-8")
    monkeypatch.setenv(registry.TASKS_ENV, "")
    monkeypatch.setattr(registry, "_included", [])
    monkeypatch.setattr(registry, "_suites", None)
    return folder.resolve() / "bad_task.py"


def test_a_bad_field_in_a_task_file_names_the_file(bad_task_file):
    registry.include_path(bad_task_file.parent)
    with pytest.raises(ThaiEvalDataError) as err:
        registry.suites()
    assert err.value.path == str(bad_task_file) and err.value.field == "fewshot"
    assert str(err.value) == f"{bad_task_file}, field 'fewshot': {FEWSHOT}int 1"


def test_the_command_prints_a_bad_declaration_as_one_line(bad_task_file, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.pop(registry.TASKS_ENV, None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "thai_eval_utils",
            "run",
            "--model",
            "embedded",
            "--tasks-dir",
            str(bad_task_file.parent),
            "--benchmarks",
            "bad_task",
            "--dry-run",
            "--outputs",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in said, said[-3000:]
    assert done.stderr.strip().splitlines()[-1] == (
        f"thai-eval run: error: ThaiEvalDataError: {bad_task_file}, field 'fewshot': {FEWSHOT}int 1"
    )
    assert not (tmp_path / "out").exists()
