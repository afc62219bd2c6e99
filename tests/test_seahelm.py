"""SEA-HELM v1.2.1 Thai (spec ``seahelm_thai.md``): prompts byte for byte, answer extraction, the metric
classes' numbers by hand on Thai, the standard error over runs, repeated runs that resume, and the command line on
the embedded model."""

from __future__ import annotations

import json
import math
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.fakes import FakeModel
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.seahelm import Protocol, run_seahelm_task, task_config
from thai_eval_utils.core.benchmark import SeahelmRun, SeahelmTask
from thai_eval_utils.export.seahelm import results_document
from thai_eval_utils.seahelm.aggregate import AGGREGATION_SEED, language_over_runs, task_over_runs
from thai_eval_utils.seahelm.config import SEEDS, task_configs
from thai_eval_utils.seahelm.data import DEFAULT_DATA, hf_files_to_task_files, load_task_data
from thai_eval_utils.seahelm.extract import NULL_LABEL, extract_choice, extract_text
from thai_eval_utils.seahelm.metrics import f1_acc_metrics, qa_metrics, rouge_l, rouge_tokens, summarization_metrics
from thai_eval_utils.seahelm.prompts import build_messages, render_base
from thai_eval_utils.tasks.thinking import ThinkingOption

REPO = Path(__file__).resolve().parents[1]
TAG = "คำตอบ:"

# ------------------------------------------------------------------------------------------------ prompts
#: Spec 2.5, the worked example (Wisesight row 543), byte for byte.
WORKED_EXAMPLE = (
    "ประโยคดังต่อไปนี้มีความรู้สึกอย่างไร? ตอบได้แค่ตัวเลือกดังต่อไปนี้: แง่บวก, แง่ลบ, หรือเฉยๆ\n\n"
    'จงตอบตามรูปแบบดังต่อไปนี้:\n"คำตอบ: ANSWER"\nโดยแค่แทนที่ ANSWER ด้วยตัวเลือกของคุณ\n\n'
    "ประโยค:\n```\nนี่คือรูปกุ้งที่ไปทานในวันนั้น ทั้งเน่า ทั้งเหม็น ทั้งดำ ทั้งหมด3ตัว เสิร์ฟมาแมลงวัน พนักงานก็ไม่สนใจ "
    "ต้องการให้ทางเอ็มเค ชี้แจงด้วย\n```"
)


def test_worked_example_byte_for_byte():
    task = task_config("sentiment")
    data = load_task_data(task)
    row = next(r for r in data.rows if r["id"] == 543)
    assert row["label"] == "แง่ลบ"
    assert build_messages(task, row) == [{"role": "user", "content": WORKED_EXAMPLE}]


def test_config_pieces_verbatim():
    """Spec 1.3: the typos stay, ThaiExam's four 5-option exams share one prompt, the answer tags and max_tokens."""
    t = task_configs()
    assert "ควรควรตอบด้วยตัวอักษร Y" in t["toxicity"].preamble
    assert "อาจะเป็นจริงหรือไม่เป็นจริงก็ได้" in t["nli"].preamble
    assert t["causal"].task_template.startswith("จากสถานการณ์ที่กำลังจะยกให้ ตัวเลือกใดต่อไปนี้ตรงกับ{question_translated}มากที่สุด?")
    for exam in ("onet", "tgat", "tpat1"):
        assert t[f"thai_exam_{exam}"].templates() == t["thai_exam_a_level"].templates()
    assert t["thai_exam_ic"].task_template.endswith("C: {c}\nD: {d}")
    assert {k: t[k].answer_tag for k in ("qa", "translation-en-xx", "abssum")} == {
        "qa": "คำตอบ:",
        "translation-en-xx": "คำแปล:",
        "abssum": "บทสรุป:",
    }
    assert {
        k: t[k].max_tokens
        for k in (
            "sentiment",
            "qa",
            "toxicity",
            "translation-xx-en",
            "abssum",
            "causal",
            "nli",
            "thai_exam_ic",
            "belebele-qa-mc",
            "if-eval",
            "mt-bench-judge",
        )
    } == {
        "sentiment": 32,
        "qa": 256,
        "toxicity": 64,
        "translation-xx-en": 256,
        "abssum": 512,
        "causal": 128,
        "nli": 128,
        "thai_exam_ic": 32,
        "belebele-qa-mc": 16,
        "if-eval": 4096,
        "mt-bench-judge": 4096,
    }
    assert (
        t["translation-en-xx"].aggregation_group == "translations"
        and t["thai_exam_tgat"].aggregation_group == "thai_exam"
    )
    twin = t["sentiment-logprobs"]
    assert twin.max_n_runs == 1 and twin.templates() == t["sentiment"].templates() and twin.runs(8) == [0]
    assert t["sentiment"].runs(8) == list(range(8)) and twin.runs(8, reasoning=True) == list(range(8))
    assert SEEDS == (25008113, 42008474, 15226423, 28126671, 19128282, 39305000, 17765035, 23194592)


def test_base_prompt_five_shots():
    """Spec 2.2-2.3: five shots as (user, assistant) pairs, the preamble glued to the first shot (กินแมควนไป กรี๊ดดด,
    เฉยๆ), the test row last; the plain template trims, adds BOS and joins with blank lines."""
    task = task_config("sentiment")
    data = load_task_data(task)
    msgs = build_messages(task, data.rows[0], data.examples[:5])
    assert [m["role"] for m in msgs] == ["user", "assistant"] * 5 + ["user"]
    assert msgs[0]["content"].endswith("ประโยค:\n```\nกินแมควนไป กรี๊ดดด\n```")
    assert msgs[0]["content"].startswith("ประโยคดังต่อไปนี้มีความรู้สึกอย่างไร?")
    assert msgs[1]["content"] == "คำตอบ: เฉยๆ"
    assert msgs[-1]["content"] == "ประโยค:\n```\n" + data.rows[0]["prompts"][0]["text"] + "\n```"
    text = render_base(msgs, "<bos>")
    assert text == "<bos>" + "\n\n".join(m["content"].strip() for m in msgs) + "\n\n"
    assert render_base([{"role": "user", "content": "  ก  "}], None) == "ก\n\n"


def test_empty_exam_option_loses_its_space_zero_shot():
    """Spec 2.4: an empty ThaiExam option renders ``E: `` and, last in a zero-shot prompt, loses the space."""
    task = task_config("thai_exam_tgat")
    row = next(r for r in load_task_data(task).rows if r["prompts"][0]["e"] == "")
    assert build_messages(task, row)[0]["content"].endswith("\nE:")


# --------------------------------------------------------------------------------------------- extraction
@pytest.mark.parametrize(
    "reply, labels, expected",
    [
        ("คำตอบ: แง่ลบ", ["แง่บวก", "แง่ลบ", "เฉยๆ"], "แง่ลบ"),
        ("คำตอบ: **แง่บวก**\nคำตอบ: แง่ลบ", ["แง่บวก", "แง่ลบ", "เฉยๆ"], "แง่บวก"),  # the first tag wins
        ("แง่ลบ.", ["แง่บวก", "แง่ลบ", "เฉยๆ"], "แง่ลบ"),  # no tag: the whole reply, ASCII punctuation stripped
        ("คำตอบ: Because it rains", ["A", "B"], "B"),  # IGNORECASE: an English word starting with a label letter
        ("คำตอบ: AB", ["A", "B"], "B"),  # the repeated group keeps its last repetition
        ("คำตอบ: ค", ["A", "B"], NULL_LABEL),
        ("", ["A", "B"], NULL_LABEL),
        (None, ["Y", "N"], NULL_LABEL),  # a failed generation is ""
        ("คำตอบ: y", ["Y", "N"], "Y"),
    ],
)
def test_extract_choice(reply, labels, expected):
    assert extract_choice(reply, TAG, labels) == expected


def test_extract_text_keeps_one_line_and_trailing_markdown():
    assert extract_text("ผมคิดว่า\nคำตอบ: ** กรุงเทพ **\nเพราะ", TAG) == "กรุงเทพ **"
    assert extract_text("คำแปล:\n```\nHello", "คำแปล:") == "Hello"
    assert extract_text("ไม่มีแท็ก  ", TAG) == "ไม่มีแท็ก"


# ------------------------------------------------------------------------------------------------ metrics
def test_normalised_accuracy_by_hand():
    """Gold A A A B C C; predicted A A B B null C: recalls A 2/3, B 1, C 1/2 -> balanced 13/18; K = 3 ->
    100 x (13/18 - 1/3) / (2/3) = 58.333..."""
    gold = ["A", "A", "A", "B", "C", "C"]
    replies = ["คำตอบ: A", "A", "คำตอบ: B", "คำตอบ: B", "ไม่รู้", "คำตอบ: C"]
    metrics, per_item, preds = f1_acc_metrics(gold, replies, TAG)
    assert preds == ["A", "A", "B", "B", "null", "C"]
    assert per_item == [1, 1, 0, 1, 0, 1]
    assert metrics["accuracy"] == pytest.approx(100 * 13 / 18, abs=1e-12)
    assert metrics["normalized_accuracy"] == pytest.approx(100 * (13 / 18 - 1 / 3) / (2 / 3), abs=1e-12)
    assert metrics["null_count"] == 1
    # null-weighted F1: macro-F1 over gold labels (A 0.8, B 2/3, C 2/3) x (1 - 1/6)
    assert metrics["null_weighted_f1"] == pytest.approx(100 * (0.8 + 2 / 3 + 2 / 3) / 3 * 5 / 6, abs=1e-12)
    # below chance is 0, not negative
    assert f1_acc_metrics(["A", "B"], ["B", "A"], TAG)[0]["normalized_accuracy"] == 0


def test_qa_f1_on_thai_words():
    """newmm: พรรคแรงงานออสเตรเลีย = พรรค|แรงงาน|ออสเตรเลีย; the reply พรรคแรงงาน = พรรค|แรงงาน -> P 1, R 2/3, F1 0.8."""
    metrics, per_item, preds = qa_metrics([["พรรคแรงงานออสเตรเลีย"], ["สิบ"]], ["คำตอบ: พรรคแรงงาน", "คำตอบ:"], TAG)
    assert preds == ["พรรคแรงงาน", ""]
    assert per_item == pytest.approx([0.8, 0.0], abs=1e-12)
    assert metrics["f1"] == pytest.approx(40.0, abs=1e-12) and metrics["normalized_f1"] == metrics["f1"]
    assert metrics["exact_match"] == 0 and metrics["null_count"] == 1 and metrics["found_in_prediction"] == 0


def test_rouge_l_on_thai_tokens():
    """แมว|นอน|บน|โซฟา against แมว|นอน|บน|เตียง: LCS 3 of 4 -> F 0.75; spaces are tokens; punctuation and U+200B go."""
    assert rouge_tokens("แมวนอนบนโซฟา") == ["แมว", "นอน", "บน", "โซฟา"]
    assert rouge_tokens("แมว นอน") == ["แมว", " ", "นอน"]
    assert rouge_tokens("แมว\u200bนอน!!") == ["แมว", "นอน"]
    assert rouge_l("แมวนอนบนโซฟา", "แมวนอนบนเตียง") == pytest.approx((0.75, 0.75, 0.75), abs=1e-12)
    assert rouge_l("แมว", "") == (0.0, 0.0, 0.0)
    metrics, per_item, _ = summarization_metrics(["แมวนอนบนโซฟา"] * 2, ["บทสรุป: แมวนอนบนเตียง"] * 2, "บทสรุป:")
    assert per_item == pytest.approx([75.0, 75.0], abs=1e-12)
    assert metrics["normalized_rougel_f1"] == pytest.approx(75.0, abs=1e-12)


# --------------------------------------------------------------------------------------- over runs, totals
def test_standard_error_over_runs_by_hand():
    """Two runs, items scored 0 in run 0 and 1 in run 1 (not multiple choice, values <= 1 -> x100): replicate b
    = 100 x mean over items of the run drawn for it; the SE is sd(replicates)/sqrt(30), not the sd."""
    replay = np.random.default_rng(AGGREGATION_SEED).integers(0, 2, size=(30, 3))
    expected = [100 * row.mean() for row in replay]
    out = task_over_runs([[0, 0, 0], [1, 1, 1]], [[], []], np.random.default_rng(AGGREGATION_SEED))
    assert out.branch == "mean" and out.mean_list == pytest.approx(expected, abs=1e-9)
    assert out.mean == pytest.approx(statistics.mean(expected), abs=1e-9)
    assert out.stderr == pytest.approx(statistics.stdev(expected) / math.sqrt(30), abs=1e-9)
    same = task_over_runs([[0.5, 1.0], [0.5, 1.0]], [[], []], np.random.default_rng(1))
    assert same.mean == pytest.approx(75.0) and same.stderr == 0


def test_standard_error_multiple_choice_branch():
    """Labels with duplicates: each replicate's predictions are the label where the drawn run was right, else "",
    scored by normalised balanced accuracy."""
    labels = ["A", "A", "B", "B"]
    runs = [[1, 0, 1, 0], [1, 1, 0, 0]]
    replay = np.random.default_rng(AGGREGATION_SEED).integers(0, 2, size=(30, 4))
    expected = []
    for row in replay:
        right = [runs[r][i] for i, r in enumerate(row)]
        recall_a, recall_b = (right[0] + right[1]) / 2, (right[2] + right[3]) / 2
        expected.append(max(((recall_a + recall_b) / 2 - 0.5) / 0.5, 0) * 100)
    out = task_over_runs(runs, [labels, labels], np.random.default_rng(AGGREGATION_SEED))
    assert out.branch == "balanced accuracy" and out.mean_list == pytest.approx(expected, abs=1e-9)
    assert out.stderr == pytest.approx(statistics.stdev(expected) / math.sqrt(30), abs=1e-9)


def test_run_totals_spec_example():
    """Spec 6.4: the th total of the worked results JSON is 52.785714285714285."""
    primary = {
        "sentiment": 55.0,
        "qa": 60.0,
        "translation-en-xx": 80.0,
        "translation-xx-en": 88.0,
        "abssum": 20.0,
        "causal": 80.0,
        "nli": 40.0,
        "toxicity": 30.0,
        "if-eval": 70.0,
        "thai_exam_a_level": 40.0,
        "thai_exam_ic": 50.0,
        "thai_exam_onet": 30.0,
        "thai_exam_tgat": 20.0,
        "thai_exam_tpat1": 35.0,
        "mt-bench-judge": 65.0,
    }
    comp = {k: task_config(k).competency for k in primary}
    group = {k: task_config(k).aggregation_group for k in primary}
    entries = [
        (SeahelmTask(k, "th", comp[k], "m", group[k], {}, ()), SeahelmRun(0, None, {"m": v}, []))
        for k, v in primary.items()
    ]
    th = results_document(entries)["th"]  # the results JSON the seahelm export writes
    groups = {g: th[comp[k]][g] for k, g in group.items() if g}
    assert groups == {"translations": 84.0, "thai_exam": 35.0}
    assert th["nlg"]["total"] == 52.0 and th["total"] == pytest.approx(52.785714285714285, abs=1e-12)
    lists = {k: task_over_runs([[v / 100]], [[]], np.random.default_rng(0)) for k, v in primary.items()}
    lang = language_over_runs(lists, comp, group)
    assert lang["language"]["mean"] == pytest.approx(52.785714285714285, abs=1e-9)


# ---------------------------------------------------------------------------------------------------- data
def test_bad_row_names_file_row_field(tmp_path):
    rows = [json.loads(line) for line in (DEFAULT_DATA / "causal.jsonl").read_text().splitlines()[:3]]
    del rows[2]["prompts"][0]["choice2"]
    (tmp_path / "causal.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    with pytest.raises(ThaiEvalDataError) as err:
        load_task_data(task_config("causal"), tmp_path)
    assert err.value.row == 2 and err.value.field == "prompts[0].choice2" and "causal.jsonl" in str(err.value)
    qa = [json.loads((DEFAULT_DATA / "qa.jsonl").read_text().splitlines()[0])]
    qa[0]["label"] = "plain"
    (tmp_path / "qa.jsonl").write_text(json.dumps(qa[0], ensure_ascii=False) + "\n")
    with pytest.raises(ThaiEvalDataError, match="label\\[0\\]"):
        load_task_data(task_config("qa"), tmp_path)


def test_thai_exam_fewshot_leak_reported():
    data = load_task_data(task_config("thai_exam_tgat"))
    assert data.leaked_ids() == ["0", "1", "3", "4"]  # the test rows 0-4 the sample holds are the few-shot rows


def test_downloaded_hugging_face_files_become_the_task_files_the_loader_reads(tmp_path):
    """The data manifest's converter (``thai-eval data fetch``): typhoon-ai/thai_exam's downloaded ``ic/test`` split
    becomes ``thai_exam_ic.jsonl`` in SEA-HELM's contract (id = row index, label = the answer upper-cased) and its
    first five rows the few-shot file, as SEA-HELM's dataloader takes them; ``load_task_data`` reads the result."""
    split = tmp_path / "ic" / "test.jsonl"
    split.parent.mkdir()
    rows = [
        {"question": f"ข้อ {i}", "a": "1", "b": "2", "c": "3", "d": "4", "answer": "b", "subject": "x"} for i in range(6)
    ]
    split.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "task_files"
    written = hf_files_to_task_files("thai_exam_ic", {"ic/test.jsonl": split}, out)
    assert [p.name for p in written] == ["thai_exam_ic.jsonl", "thai_exam_ic_examples.jsonl"]
    data = load_task_data(task_config("thai_exam_ic"), out)
    assert [r["id"] for r in data.rows] == list(range(6)) and data.rows[0]["label"] == "B"
    assert data.rows[0]["prompts"] == [{"question": "ข้อ 0", "a": "1", "b": "2", "c": "3", "d": "4"}]
    assert len(data.examples) == 5 and data.leaked_ids() == ["0", "1", "2", "3", "4"]


# ------------------------------------------------------------------------------------------- repeated runs
def _fake(fail_on_call=None):
    def reply(messages):
        text = messages[-1]["content"]
        if "สาเหตุ" in text:
            return "<think>คำตอบ: A ไหมนะ</think>คำตอบ: B"
        return "<think>ยังคิดไม่จบ" if "ปลวก" in text else "คำตอบ: A"

    return FakeModel(reply=reply, fail_on_call=fail_on_call)


def test_runs_resume_and_thinking(tmp_path):
    model = _fake()
    run = run_seahelm_task(model, "causal", runs=3, limit=4, outputs=tmp_path, progress=False)
    s = run.summary
    assert sorted(s["runs"]) == ["0", "1", "2"] and [c[1]["seed"] for c in model.calls] == list(SEEDS[:3])
    assert s["failed_thinking"] == 3  # the ปลวก row never closes its thinking, in each run
    recs = [json.loads(x) for x in (run.run_dir / "items.jsonl").read_text().splitlines()]
    assert len(recs) == 12 and len({r["key"] for r in recs}) == 12
    cause = next(r for r in recs if "สาเหตุ" in r["messages"][-1]["content"])
    assert cause["reply"].startswith("<think>") and cause["scored"] == "คำตอบ: B"
    assert "think:strip(<think>,</think>)" in s["signature"] and "runs:3" in s["signature"]
    assert s["over_runs"]["runs"] == 3 and s["over_runs"]["stderr"] == 0  # identical runs: no spread
    again = run_seahelm_task(model, "causal", runs=3, limit=4, outputs=tmp_path, progress=False)
    assert again.computed == 0 and len(model.calls) == 3
    more = run_seahelm_task(model, "causal", runs=4, limit=4, outputs=tmp_path, progress=False)
    assert more.computed == 4 and more.run_dir == run.run_dir and sorted(more.summary["runs"]) == ["0", "1", "2", "3"]
    off = run_seahelm_task(
        model,
        "causal",
        runs=1,
        limit=4,
        outputs=tmp_path,
        progress=False,
        protocol=Protocol(thinking=ThinkingOption(strip=False)),
    )
    assert off.run_dir != run.run_dir and "think:off" in off.summary["signature"]


def test_crash_mid_run_resumes_without_loss_or_duplicates(tmp_path):
    with pytest.raises(RuntimeError, match="simulated crash"):
        run_seahelm_task(
            _fake(fail_on_call=2),
            "toxicity",
            runs=2,
            limit=3,
            outputs=tmp_path,
            progress=False,
            protocol=Protocol(batch_size=3),
        )
    model = _fake()
    run = run_seahelm_task(
        model, "toxicity", runs=2, limit=3, outputs=tmp_path, progress=False, protocol=Protocol(batch_size=3)
    )
    assert run.computed == 3 and len(model.calls) == 1  # run 0 was stored before the crash
    keys = [json.loads(x)["key"] for x in (run.run_dir / "items.jsonl").read_text().splitlines()]
    assert sorted(keys) == sorted(f"r{r}/{i}" for r in (0, 1) for i in (0, 1, 2))


def test_logprobs_twin_runs_once_and_is_labelled(tmp_path):
    model = FakeModel(reply=lambda m: "คำตอบ: A", score=lambda ctx, cont: (math.log(0.25), False))
    run = run_seahelm_task(model, "causal-logprobs", runs=8, limit=2, outputs=tmp_path, progress=False)
    s = run.summary
    assert list(s["runs"]) == ["0"] and "P1" in s["logprobs_note"]
    assert s["runs"]["0"]["metrics"]["average_cumulative_probabilities"] == pytest.approx(25.0)
    assert all(ctx.endswith(TAG) and cont in (" A", " B") for ctx, cont in model.requests)


# ------------------------------------------------------------------------------------ command line, embedded
def test_cli_embedded_runs_and_resumes_after_kill(tmp_path):
    """``thai-eval run --model embedded --benchmarks seahelm/<task> --limit 2 --runs 2`` on the embedded model
    (generations capped at 4 tokens: 2 shared cores), killed with SIGKILL mid-run, then rerun: every (run, item)
    stored exactly once."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    cmd = [
        sys.executable,
        "-m",
        "thai_eval_utils",
        "run",
        "--model",
        "embedded",
        "--benchmarks",
        "seahelm/sentiment seahelm/thai_exam_ic",
        "--limit",
        "2",
        "--runs",
        "2",
        "--max-new-tokens",
        "4",
        "--no-paper",
        "--outputs",
        str(tmp_path),
    ]
    proc = subprocess.Popen(
        cmd, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    items = tmp_path / "runs"
    deadline = time.time() + 900
    while time.time() < deadline and not any(p.stat().st_size for p in items.rglob("items.jsonl")):
        time.sleep(0.2)
    stored = [p for p in items.rglob("items.jsonl") if p.stat().st_size]
    assert stored, "nothing was stored within the deadline"
    writer = int((stored[0].parent / ".writer.lock").read_text().split()[0])  # the notebook kernel writing the run
    os.kill(writer, signal.SIGKILL)  # kill -9 the writer mid-run, then the command line
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for task in ("sentiment", "thai_exam_ic"):
        (folder,) = [p.parent for p in items.rglob("items.jsonl") if f"seahelm/{task}/" in str(p)]
        keys = [json.loads(x)["key"] for x in (folder / "items.jsonl").read_text().splitlines()]
        assert (
            sorted(keys) == sorted(f"r{r}/{i}" for r in (0, 1) for i in ("0", "2"))
            if task == "thai_exam_ic"
            else len(keys) == 4 and len(set(keys)) == 4
        )
        summary = json.loads((folder / "summary.json").read_text())
        assert summary["over_runs"]["runs"] == 2 and summary["n"] == 2


# ---------------------------------------------------------------------------------------------- suite hooks
def test_suite_hooks_show_mean_and_se_over_runs(tmp_path):
    from thai_eval_utils.core import registry
    from thai_eval_utils.core.runs import list_runs
    from thai_eval_utils.notebook_exec import notebook_parameters
    from thai_eval_utils.seahelm.suite import DEMO_TASKS
    from thai_eval_utils.stats.cells import Bootstrap

    suite = registry.suites()["seahelm"]
    assert {"sentiment", "thai_exam_tpat1", "belebele-qa-mc", "mt-bench-judge", "nli-logprobs"} <= set(suite.tasks)
    assert suite.notebook_parameters(()) == {"tasks": None}
    assert suite.notebook_parameters(("qa",), {"runs": 3}) == {"tasks": ["qa"], "runs": 3}
    assert suite.notebook_parameters((), {"demo": True, "runs": 2}) == {"tasks": list(DEMO_TASKS), "runs": 2}
    declared = notebook_parameters(REPO / "notebooks" / "seahelm.ipynb")
    assert {"model", "tasks", "runs", "limit", "data_source", "outputs_dir", "max_new_tokens", "greedy"} <= set(
        declared
    )
    run_seahelm_task(_fake(), "causal", runs=2, limit=4, outputs=tmp_path, progress=False)
    (stored,) = [r for r in list_runs(tmp_path) if r.family == "seahelm"]
    (head,) = suite.headlines(stored)
    assert head.name == "seahelm/causal/normalized_accuracy" and head.scale == 100 and len(head.items) == 4
    summary = stored.summary
    assert head.items["value"].tolist() == summary["item_means"]
    cells = {c["column"]: c for c in suite.leaderboard_cells("fake", [head], Bootstrap())}
    assert (
        cells["score"]["value"] == pytest.approx(summary["over_runs"]["mean"])
        and cells["score"]["group"] == "nlr / causal"
    )
    assert cells["se_over_runs"]["value"] == pytest.approx(summary["over_runs"]["stderr"])
    assert cells["runs"]["value"] == 2 and cells["failed_thinking"]["value"] == 2
    assert cells["score"]["note"].startswith("partial: 4 of 200")
    entry = suite.leaderboard_results(stored)["seahelm_causal"]
    assert entry["normalized_accuracy"] == summary["over_runs"]["mean"] and "stderr_over_runs" in entry
    views = suite.item_views(stored, [head], None, {}, [])
    assert len(views) == 8 and {v.repeat for v in views} == {0, 1}
    rows = suite.detail_rows(stored)
    assert len(rows) == 8 and "run" in rows[0]["inputs"] and "reply" in rows[0]["outputs"]


def test_sampling_is_the_models_generation_config_else_vllm_defaults():
    """Spec 3.1: SEA-HELM sends seed and max_tokens only; vLLM copies the keys the model's generation_config.json sets
    (temperature, top_p), else temperature 1.0 / top-p 1.0; what this engine cannot apply is recorded."""
    from types import SimpleNamespace

    from transformers import GenerationConfig

    from thai_eval_utils.seahelm.generation import model_sampling

    model = SimpleNamespace(hf_model=SimpleNamespace(generation_config=GenerationConfig(temperature=0.6, top_k=20)))
    s = model_sampling(model)
    assert (s.temperature, s.top_p) == (0.6, 1.0) and "top_k=20" in s.source
    plain = model_sampling(SimpleNamespace(hf_model=SimpleNamespace(generation_config=GenerationConfig())))
    assert (plain.temperature, plain.top_p) == (1.0, 1.0) and plain.source.startswith("vLLM defaults")
    assert model_sampling(FakeModel()).temperature == 1.0 and model_sampling(model, greedy=True).temperature == 0.0


def test_ifeval_and_mt_bench_run_through_their_own_runners(tmp_path):
    """``run_seahelm_task`` hands IF-Eval and the MT-Bench judge to their own modules' runners, with the suite's
    arguments and ``options`` (IF-Eval's ``detector``, the MT-Bench judge's ``judge``)."""
    model = FakeModel("fake-model", reply=lambda m: '"ตอบ"')
    grade = FakeModel("fake-judge", reply=lambda m: "<classification>CLASS_MODERATELY_MET</classification>")
    ifeval = run_seahelm_task(
        model, "if-eval", runs=1, limit=2, outputs=tmp_path, progress=False, options={"detector": lambda t: "th"}
    )
    assert ifeval.summary["primary_metric"] == "overall_lang_normalized_acc" and ifeval.summary["n_rows"] == 2
    judged = run_seahelm_task(
        model, "mt-bench-judge", runs=1, limit=1, outputs=tmp_path, progress=False, options={"judge": grade}
    )
    assert judged.summary["judge"]["model"] == "fake-judge" and judged.summary["over_runs"]["mean"] == 50.0


def test_the_thai_total_counts_every_task_of_the_thai_list_and_a_missing_one_as_zero():
    """``runner.thai_totals`` (spec 5.2): the language's mean and SE over SEA-HELM's seven competencies from the tasks'
    30 replicates; a task not run is 0 (the notebook's "no data"). Hand-computed: sentiment alternates 50/70, qa is
    40, abssum 30: nlu alternates 45/55 (mean 50, SE sqrt(750/29/30)); nlg = (translations 0 + abssum 30) / 2 = 15;
    the other five competencies 0; Thai alternates 60/7 and 70/7: mean 65/7, SE (5/7)/sqrt(29)."""
    from types import SimpleNamespace

    from thai_eval_utils.seahelm.aggregate import OverRuns
    from thai_eval_utils.seahelm.runner import thai_totals

    def ran(values):
        over = OverRuns(statistics.mean(values), 0.0, values, 8, False, "runs")
        return SimpleNamespace(summary={"over_runs": over.to_dict()})

    done = {"sentiment": ran([50.0, 70.0] * 15), "qa": ran([40.0] * 30), "abssum": ran([30.0] * 30)}
    rows = {(r["level"], r["name"]): r for r in thai_totals(done)}
    th = rows[("language", "th")]
    assert th["mean"] == pytest.approx(65 / 7) and th["stderr"] == pytest.approx((5 / 7) / math.sqrt(29))
    assert (th["tasks_run"], th["tasks"]) == (3, 15) and th["missing"].startswith("toxicity, translation-en-xx")
    nlu = rows[("competency", "nlu")]
    assert nlu["mean"] == 50.0 and nlu["stderr"] == pytest.approx(math.sqrt(750 / 29 / 30)) and nlu["missing"] == ""
    assert rows[("competency", "nlg")]["mean"] == 15.0 and rows[("competency", "safety")]["mean"] == 0.0
    group = rows[("group", "translations")]
    assert (group["mean"], group["tasks_run"], group["missing"]) == (0.0, 0, "translation-en-xx, translation-xx-en")
    assert [k for k in rows if k[0] == "competency"] == [
        ("competency", c) for c in ("nlu", "safety", "nlg", "nlr", "instruction-following", "knowledge", "multi-turn")
    ]
    assert th["signature"] == "seahelm-thai|language:th|replicates:30|seed:94370244"
