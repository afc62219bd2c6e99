"""SEA-HELM wired into the toolkit: the thinking option and the answers-in-Thai rate in every SEA-HELM run's
summary and tables, ``thai-eval run``'s thinking flags reaching ``notebooks/seahelm.ipynb``, the dry run's numbers
under ``--runs``, ``thai-eval runs``' items and total counting the same thing, MT-Bench's item view, and the
self-judged MT-Bench budget. Fake models only: seconds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import FakeModel

from thai_eval_utils.cli import build_parser
from thai_eval_utils.cli.dry_run import dry_run_rows
from thai_eval_utils.cli.runs_table import runs_table
from thai_eval_utils.cli.run_config import notebook_options
from thai_eval_utils.cli.thinking_args import thinking_parameters
from thai_eval_utils.core import registry
from thai_eval_utils.core.runs import list_runs
from thai_eval_utils.notebook_exec import notebook_parameters
from thai_eval_utils.seahelm import mt_bench_run, run_seahelm_task, task_config
from thai_eval_utils.seahelm.data import load_task_data
from thai_eval_utils.seahelm.prompts import build_messages
from thai_eval_utils.seahelm.runner import Protocol
from thai_eval_utils.stats.cells import Bootstrap
from thai_eval_utils.tasks.thinking import ThinkingOption

REPO = Path(__file__).resolve().parents[1]
SUITE = registry.suites()["seahelm"]

#: Four causal rows' planted replies: closed thinking then Thai; thinking that never closes; Thai with one Latin
#: letter (5 Thai >= 1 English: Thai); mostly English (11 English > 5 Thai: not Thai).
PLANTED = ("<think>คิดก่อน</think>คำตอบ: A", "<think>ยังคิดไม่จบ", "คำตอบ: B", "The answer คำตอบ: A")


def _planted_model() -> FakeModel:
    task = task_config("causal")
    rows = load_task_data(task).rows[:4]
    by_prompt = {build_messages(task, row)[-1]["content"]: reply for row, reply in zip(rows, PLANTED, strict=True)}
    return FakeModel(reply=lambda messages: by_prompt[messages[-1]["content"]])


def test_planted_thinking_counts_and_thai_rate_in_summary_and_table(tmp_path):
    run = run_seahelm_task(_planted_model(), "causal", runs=2, limit=4, outputs=tmp_path, progress=False)
    s = run.summary
    r = s["replies"]
    # per run: 4 replies, 2 think, 1 never closes (a failed answer), Thai: rows 1 and 3 -> over 2 runs 8, 4, 2, 2, 4/8
    assert (r["n_replies"], r["n_thinking"], r["n_thinking_unclosed"], r["n_failed"]) == (8, 4, 2, 2)
    thai = r["answers_in_thai"]
    assert (thai["n"], thai["n_thai"], thai["value"]) == (8, 4, 0.5)
    # Wilson 95% of 4/8 by hand: centre 0.5, half = 1.96 * sqrt(0.25/8 + 1.96^2/256) / (1 + 1.96^2/8) = 0.28479
    assert thai["interval"]["low"] == pytest.approx(0.21521, abs=1e-4)
    assert thai["interval"]["high"] == pytest.approx(0.78479, abs=1e-4)
    assert {k: v["n_thinking_unclosed"] for k, v in s["replies_by_run"].items()} == {"0": 1, "1": 1}
    assert s["thinking"]["signature"] == "think:strip(<think>,</think>)" and s["thinking"]["support"] == {}
    assert s["scores"][s["primary_metric"]]["signature"].endswith("|think:strip(<think>,</think>)|limit:4/200")
    assert s["failed_thinking"] == 2
    assert str(run).endswith("; answers in Thai 50.0% (n=8); thinking unclosed 2")  # what the notebook prints
    (stored,) = [x for x in list_runs(tmp_path) if x.family == "seahelm"]
    (head,) = SUITE.headlines(stored)
    cells = {c["column"]: c for c in SUITE.leaderboard_cells("fake", [head], Bootstrap())}
    assert cells["answers_in_thai"]["value"] == 50.0 and cells["answers_in_thai"]["n"] == 8
    assert cells["answers_in_thai"]["ci_low"] == pytest.approx(21.521, abs=1e-2)
    assert cells["thinking_unclosed"]["value"] == 2
    assert "answers in Thai 50.0% (n=8); thinking unclosed 2" in cells["score"]["note"]
    (table,) = SUITE.leaderboard_tables
    assert {"answers_in_thai", "thinking_unclosed"} <= set(table.columns)
    # the lighteval rule keeps the unclosed block in the scored text: counted, not failed
    lax = run_seahelm_task(
        _planted_model(),
        "causal",
        runs=1,
        limit=4,
        outputs=tmp_path,
        progress=False,
        protocol=Protocol(thinking=ThinkingOption(rule="lighteval")),
    )
    assert lax.run_dir != run.run_dir
    assert (lax.summary["replies"]["n_thinking_unclosed"], lax.summary["replies"]["n_failed"]) == (1, 0)
    assert lax.summary["replies"]["answers_in_thai"]["n_thai"] == 3  # "<think>ยังคิดไม่จบ" is Thai text then


def test_enable_thinking_reaches_the_model_and_is_restored(tmp_path):
    seen = []
    model = _planted_model()
    model.chat_template_kwargs = None
    inner = model._reply
    model._reply = lambda m: (seen.append(dict(model.chat_template_kwargs or {})), inner(m))[1]
    run = run_seahelm_task(
        model,
        "causal",
        runs=1,
        limit=4,
        outputs=tmp_path,
        progress=False,
        protocol=Protocol(thinking=ThinkingOption(enable_thinking=False, max_thinking_tokens=64)),
    )
    assert seen and all(x == {"enable_thinking": False} for x in seen) and model.chat_template_kwargs is None
    assert run.summary["thinking"]["support"] == {
        "enable_thinking": "chat_template_kwargs",
        "max_thinking_tokens": "not supported by this backend",
    }
    assert "think:strip(<think>,</think>,budget:64,enable:False)" in run.summary["signature"]


def test_cli_thinking_flags_reach_the_notebook_and_its_protocol():
    args = build_parser().parse_args(
        [
            "run",
            "--model",
            "embedded",
            "--benchmarks",
            "seahelm",
            "--thinking",
            "lm-eval",
            "--think-tags",
            "<r>,</r>",
            "--max-thinking-tokens",
            "10",
            "--no-enable-thinking",
        ]
    )
    params = thinking_parameters(args)
    assert params == {
        "thinking": "lm-eval",
        "think_tags": "<r>,</r>",
        "max_thinking_tokens": 10,
        "enable_thinking": False,
    }
    options = notebook_options(args)  # the notebooks' one options parameter
    assert options == {
        "thinking": {"mode": "lm-eval", "think_tags": "<r>,</r>", "max_thinking_tokens": 10, "enable_thinking": False}
    }
    path = REPO / "notebooks" / "seahelm.ipynb"
    assert "options" in notebook_parameters(path)  # batch passes a parameter to the notebooks declaring it
    code = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
    scope: dict = {}
    exec("".join(code[0]["source"]), scope)  # the parameters cell, then papermill's injected values
    scope["options"] = options
    exec("".join(code[1]["source"]), scope)  # the setup cell builds the protocol
    assert scope["protocol"].thinking == ThinkingOption(
        open_tag="<r>", close_tag="</r>", max_thinking_tokens=10, enable_thinking=False, rule="lm-eval"
    )
    assert 'stats_columns(s.get("replies"))' in "".join(code[4]["source"])  # the score table's Thai-rate columns


class _Tok:
    """A counter: one token per character (so token counts are checkable by hand)."""

    def count(self, texts):
        return sum(len(t) for t in texts)

    def count_requests(self, requests, *, add_bos_token=False):
        return None


def test_dry_run_counts_runs_ifeval_and_mt_bench_by_hand():
    data = REPO / "data" / "seahelm"
    rows = dry_run_rows(
        [(SUITE, ("sentiment", "if-eval", "mt-bench-judge"))], {"seahelm": data}, _Tok(), limit=2, runs=2
    )
    by = {r["task"]: r for r in rows}
    # sentiment: 2 rows x 2 runs, SEA-HELM's 32 tokens; prompts' characters x 2 runs
    task = task_config("sentiment")
    prompts = [build_messages(task, r)[0]["content"] for r in load_task_data(task).rows[:2]]
    assert (by["sentiment"]["documents"], by["sentiment"]["generations"], by["sentiment"]["max_new_tokens"]) == (
        2,
        4,
        32,
    )
    assert by["sentiment"]["fed_tokens"] == 2 * sum(len(p) for p in prompts)
    assert (by["if-eval"]["documents"], by["if-eval"]["generations"], by["if-eval"]["max_new_tokens"]) == (2, 4, 4096)
    # MT-Bench: 2 rows x 2 turns x 2 runs answers; one judge call per criterion per run
    mt = by["mt-bench-judge"]
    assert (mt["documents"], mt["generations"], mt["max_new_tokens"]) == (2, 8, 4096)
    raw = [json.loads(x) for x in (data / "mt-bench-judge.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    criteria = sum(
        len(r["criteria"]) if isinstance(r["criteria"], list) else sum(len(v) for v in r["criteria"].values())
        for r in raw[:2]
    )
    judge = by["mt-bench-judge (judge)"]
    assert judge["judge_calls"] == 2 * criteria and judge["judge_max_tokens"] == 16384
    total = rows[-1]
    assert total["benchmark"] == "total" and total["generations"] == 4 + 4 + 8
    # --runs omitted: SEA-HELM's eight; --max-new-tokens caps the answers and the judge
    eight = dry_run_rows(
        [(SUITE, ("sentiment", "mt-bench-judge"))], {"seahelm": data}, _Tok(), limit=2, max_new_tokens=64
    )
    by8 = {r["task"]: r for r in eight}
    assert by8["sentiment"]["generations"] == 16 and by8["sentiment"]["max_new_tokens"] == 32
    assert by8["mt-bench-judge (judge)"]["judge_calls"] == 8 * criteria
    assert by8["mt-bench-judge (judge)"]["judge_max_tokens"] == 64 and by8["mt-bench-judge"]["max_new_tokens"] == 64
    # a suite whose dry_run takes no runs is unaffected by --runs
    other = registry.suites()["thaicli"]
    folders = {"thaicli": REPO / "data" / other.data_folder}
    assert dry_run_rows([(other, ("answers",))], folders, _Tok(), limit=2, runs=2) == dry_run_rows(
        [(other, ("answers",))], folders, _Tok(), limit=2
    )


def test_runs_table_items_and_total_count_stored_replies(tmp_path):
    run_seahelm_task(_planted_model(), "causal", runs=2, limit=4, outputs=tmp_path, progress=False)
    table = runs_table(tmp_path)
    (row,) = table.to_dict("records")
    assert (row["items"], row["per_item"], row["total"]) == (8, 2, 400)  # 4 rows x 2 runs; 200 documents x 2 runs
    assert row["partial"] is True and row["limit"] == 4


def _mt_model() -> FakeModel:
    return FakeModel("fake-model", reply=lambda m: f"<think>x</think>คำตอบรอบ{len(m) // 2 + 1}")


def test_mt_bench_item_view_shows_both_turns_and_self_judge_is_capped(tmp_path):
    model = _mt_model()
    run = mt_bench_run.run_mt_bench(model, runs=1, limit=1, outputs=tmp_path, progress=False)
    s = run.summary
    assert s["judge"]["self_judged"] and s["judge"]["max_tokens"] == mt_bench_run.SELF_JUDGE_MAX_TOKENS == 512
    assert "judge_max_tokens:512" in s["signature"] and "judge budget 512" in s["judge"]["note"]
    # the fake's replies carry no classification: SEA-HELM's 0, final and cached (this used to raise in the cache)
    assert {d["status"] for d in s["runs"]["0"]["rows"][0]["criteria"].values()} == {"no_classification"}
    judge_calls = [c for c in model.calls if c[1].get("max_new_tokens") == 512]
    assert judge_calls and all(c[1]["max_new_tokens"] in (512, 4096) for c in model.calls)
    assert (s["replies"]["n_replies"], s["replies"]["n_thinking"]) == (2, 2)  # one row, two turns, both think
    assert s["replies"]["answers_in_thai"]["value"] == 1.0 and s["records_per_item"] == 1
    (stored,) = [x for x in list_runs(tmp_path) if x.benchmark == "seahelm/mt-bench-judge"]
    heads = SUITE.headlines(stored)
    (view,) = SUITE.item_views(stored, heads, None, {}, [])
    assert view.output == "[turn 1]\n<think>x</think>คำตอบรอบ1\n\n[turn 2]\n<think>x</think>คำตอบรอบ2"
    assert view.question.startswith("[turn 1]\n") and "\n\n[turn 2]\n" in view.question and view.reference is None
    cells = {c["column"]: c for c in SUITE.leaderboard_cells("fake", heads, Bootstrap())}
    assert "self-judged" in cells["score"]["note"] and cells["answers_in_thai"]["value"] == 100.0
    # a judge given: SEA-HELM's budget
    judged = mt_bench_run.run_mt_bench(
        _mt_model(),
        runs=1,
        limit=1,
        outputs=tmp_path / "j",
        progress=False,
        judge=FakeModel("fake-judge", reply=lambda m: "<classification>CLASS_UNMET</classification>"),
    )
    assert judged.summary["judge"]["max_tokens"] == 16384
