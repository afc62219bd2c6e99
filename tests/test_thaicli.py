"""ThaiCLI answer generation (resume, recorded settings) and the judge-free log-likelihood variant."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from fakes import FakeModel

from thai_eval_utils.thaicli.answers import answers_task, generate_answers
from thai_eval_utils.thaicli.judge_free import (
    LL_CONTEXT_TEMPLATE,
    judge_free_scores,
)
from thai_eval_utils.thaicli.judge_prompt import ThaiCLIJudged, thaicli_metric
from thai_eval_utils.thaicli.judge_free import loglikelihood_preferences


def items(n_factoid=2, n_instruction=1) -> pd.DataFrame:
    rows = []
    for fmt, n in (("factoid", n_factoid), ("instruction", n_instruction)):
        for i in range(n):
            rows.append(
                {
                    "id": f"{fmt}{i}",
                    "format": fmt,
                    "theme": "Culture",
                    "question": f"คำถาม {fmt} ข้อ {i} คืออะไร",
                    "chosen": "คำตอบที่ดี",
                    "rejected": "คำตอบที่ไม่ดี",
                }
            )
    return pd.DataFrame(rows)


def echo(fail_on_call: int | None = None) -> FakeModel:
    """A chat model that answers "ตอบ: <question>"; call ``fail_on_call`` crashes."""
    return FakeModel("echo-chat", reply=lambda messages: f"ตอบ: {messages[-1]['content']}", fail_on_call=fail_on_call)


def test_generate_answers_stores_and_resumes(tmp_path):
    df = items(2, 2)
    crashing = echo(fail_on_call=2)
    with pytest.raises(RuntimeError, match="simulated crash"):
        generate_answers(crashing, df, outputs=tmp_path, batch_size=2, max_new_tokens=64, seed=7, progress=False)
    model = echo()
    out = generate_answers(model, df, outputs=tmp_path, batch_size=2, max_new_tokens=64, seed=7, progress=False)
    assert len(model.calls) == 1  # the first batch survived the crash; only the second was generated
    assert [m[-1]["content"] for m in model.inputs[0]] == df["question"].tolist()[2:]
    assert out["answer"].tolist() == [f"ตอบ: {q}" for q in df["question"]]
    assert out[["id", "format", "question"]].equals(df[["id", "format", "question"]])
    assert model.calls[0] == ("chat", {"n": 2, "max_new_tokens": 64, "temperature": 0.0, "top_p": 1.0, "seed": 7})
    run_dir = tmp_path / "runs" / "echo-chat" / "thaicli" / "answers" / out.attrs["config_id"]
    assert out.attrs["run_dir"] == str(run_dir) and out.attrs["model_name"] == "echo-chat"
    card = json.loads((run_dir / "run_card.json").read_text())
    assert card["config"]["generation"] == {"max_new_tokens": 64, "temperature": 0.0, "top_p": 1.0, "seed": 7}
    assert json.loads((run_dir / "summary.json").read_text())["n_generated_this_run"] == 2
    # a rerun generates nothing; a different setting is a different run
    again = echo()
    generate_answers(again, df, outputs=tmp_path, batch_size=2, max_new_tokens=64, seed=7, progress=False)
    assert again.calls == []
    other = echo()
    out2 = generate_answers(other, df, outputs=tmp_path, batch_size=8, max_new_tokens=32, seed=7, progress=False)
    assert len(other.calls) == 1 and out2.attrs["config_id"] != out.attrs["config_id"]


def test_generate_answers_system_prompt(tmp_path):
    model = echo()
    out = generate_answers(model, items(1, 0), outputs=tmp_path, system_prompt="ตอบเป็นภาษาไทย", progress=False)
    sent = [{"role": "system", "content": "ตอบเป็นภาษาไทย"}, {"role": "user", "content": "คำถาม factoid ข้อ 0 คืออะไร"}]
    assert model.inputs[0][0] == sent
    # the stored record keeps the chat as sent beside the reply
    [record] = [json.loads(line) for line in (Path(out.attrs["run_dir"]) / "items.jsonl").read_text().splitlines()]
    assert record["messages"] == sent and record["answer"] == "ตอบ: คำถาม factoid ข้อ 0 คืออะไร"


def test_the_answers_task_is_judged_by_thaicli_judge_up_to_16_calls_else_0():
    """The declaration: each question one user turn after the system prompt (its braces literal), judged by
    ThaiCLI's judge (the paper's model named; a run names its own) with 16 calls, else 0 counted in the means."""
    task = answers_task({"max_new_tokens": 512, "temperature": 0.0, "top_p": 1.0, "seed": 1234}, "ระบบ {x}")
    assert task.prompt == ({"role": "system", "content": "ระบบ {{x}}"}, {"role": "user", "content": "{question}"})
    (metric,) = task.scorers
    assert isinstance(metric, ThaiCLIJudged) and metric.label == "gpt-4o-2024-05-13"
    assert (metric.params.max_calls, metric.unparsed_score, metric.name) == (16, 0.0, "thaicli")
    assert metric.value({"status": "fallback_zero", "score": 0.0}) == 0.0
    assert metric.value({"status": "scored", "score": 7.0}) == 7.0
    assert metric.value({"status": "unjudged", "score": None}) is None
    texts = {"question": "ถาม", "chosen": "ดี", "rejected": "แย่"}
    assert metric.texts(texts, "ตอบ") == {**texts, "answer": "ตอบ"}


def test_the_thaicli_judge_is_its_metrics_and_keeps_every_key():
    """The ThaiCLI judge is the metric's judge: the keys (repeat 0 and 1) and the unjudged reason are the ones
    judgements were always cached under (computed with the judge before it was the metric's)."""
    judge = thaicli_metric(FakeModel("j")).as_judge()
    item = {"question": "ถาม", "chosen": "ดี", "rejected": "แย่", "answer": "ตอบ"}
    assert judge.key(item) == "fe8719391a6d272abe6518693eb586e411af32c87a6ae4db2329aae3ceaa4d5a"
    assert judge.key(item, 1) == "63849b9bed3dce61c6c9f4af3b8e41a372e26eab9109598bdbbdd9125c8d31e5"
    assert judge.settings.max_calls == 16 and judge.describe(RuntimeError("x")) == "unexpected RuntimeError: x"


def test_generate_answers_with_a_local_model(tmp_path, tiny_local_model):
    df = items(1, 1)
    out = generate_answers(tiny_local_model, df, outputs=tmp_path, max_new_tokens=4, progress=False)
    assert out["answer"].map(type).tolist() == [str, str]
    again = generate_answers(tiny_local_model, df, outputs=tmp_path, max_new_tokens=4, progress=False)
    assert again["answer"].tolist() == out["answer"].tolist()
    summary = json.loads(
        (tmp_path / "runs" / "tiny-llama" / "thaicli" / "answers" / out.attrs["config_id"] / "summary.json").read_text()
    )
    assert summary["n_generated_this_run"] == 0


# id, format, theme, chosen, ll(chosen), rejected, ll(rejected)
PREFS = [
    ("f1", "factoid", "Culture", "ดี", -3.0, "ไม่ดีเลย", -6.0),  # raw: win; per char -3/2 < -6/8: loss
    ("f2", "factoid", "Religion", "ก", -2.0, "ขค", -2.0),  # raw: tie (0.5); per char -2/1 < -2/2: loss
    ("f3", "factoid", "Religion", "ถูกต้อง", -4.0, "ผิด", -8.0),  # win, win
    ("i1", "instruction", "Culture", "abc", -10.0, "x", -1.0),  # loss, loss
    ("i2", "instruction", "Culture", "yes!", -1.0, "no", -3.0),  # win, win
]


def test_judge_free_variant_with_known_loglikelihoods(tmp_path):
    df = pd.DataFrame(
        [
            {"id": i, "format": f, "theme": t, "question": f"คำถาม {i}", "chosen": c, "rejected": r}
            for i, f, t, c, _, r, _ in PREFS
        ]
    )
    table = {" " + c: lc for *_, c, lc, _, _ in PREFS} | {" " + r: lr for *_, r, lr in PREFS}
    model = FakeModel(
        "table-model", score=lambda ctx, cont: (table[cont], False)
    )  # log-likelihoods looked up by continuation
    prefs = loglikelihood_preferences(model, df, outputs=tmp_path, batch_size=2, progress=False)
    assert [c for c, _ in model.calls] == ["loglikelihood"] * 3 and [len(r) for r in model.inputs] == [4, 4, 2]
    assert model.inputs[0][:2] == [("คำถาม: คำถาม f1\nคำตอบ:", " ดี"), ("คำถาม: คำถาม f1\nคำตอบ:", " ไม่ดีเลย")]
    assert LL_CONTEXT_TEMPLATE.format(question="q") == "คำถาม: q\nคำตอบ:"
    assert prefs["win_raw"].tolist() == [1.0, 0.5, 1.0, 0.0, 1.0]
    assert prefs["win_norm"].tolist() == [0.0, 0.0, 1.0, 0.0, 1.0]
    # lm-eval's acc_norm: per character of the answer alone, the delimiter not counted; here the five
    # verdicts are the same either way (f1: -3/2 < -6/8; f2: -2/1 < -2/2; f3: -4/7 > -8/3; i1: -10/3 < -1/1;
    # i2: -1/4 > -3/2); tests/test_tasks.py has an item where they differ
    assert prefs["chars_chosen"].tolist() == [2, 1, 7, 3, 4]
    s = judge_free_scores(prefs)
    fmt = s.by_format.set_index("format")
    assert fmt.loc["factoid", "win_raw"] == pytest.approx(2.5 / 3) and fmt.loc["factoid", "win_norm"] == pytest.approx(
        1 / 3
    )
    # factoid raw wins 1, 0.5, 1: sample variance 1/12, stderr sqrt(1/12 / 3) = 1/6
    assert fmt.loc["factoid", "win_raw_stderr"] == pytest.approx(1 / 6)
    assert fmt.loc["instruction", "win_raw"] == 0.5 and fmt.loc["instruction", "n"] == 2
    assert s.win_raw.value == pytest.approx((2.5 / 3 + 0.5) / 2)
    assert s.win_norm.value == pytest.approx((1 / 3 + 0.5) / 2)
    assert s.win_raw.n == 5
    theme = s.by_theme.set_index(["format", "theme"])
    assert (
        theme.loc[("factoid", "Religion"), "win_raw"] == 0.75 and theme.loc[("factoid", "Religion"), "win_norm"] == 0.5
    )
    # resumed: nothing recomputed
    model2 = FakeModel("table-model", score=lambda ctx, cont: (table[cont], False))
    again = loglikelihood_preferences(model2, df, outputs=tmp_path, progress=False)
    assert model2.calls == [] and again["win_raw"].tolist() == prefs["win_raw"].tolist()
    summary = json.loads(
        (
            tmp_path / "runs" / "table-model" / "thaicli" / "loglik" / prefs.attrs["config_id"] / "summary.json"
        ).read_text()
    )
    assert summary["scores"]["win_raw"]["value"] == pytest.approx(s.win_raw.value)


def test_judge_free_variant_matches_the_model_loglikelihood(tmp_path, tiny_local_model):
    pytest.importorskip(
        "thai_eval_utils.backend.loglikelihood",
        reason="LocalModel.loglikelihood needs thai_eval_utils.backend.loglikelihood (not landed yet)",
    )
    df = items(1, 1)
    prefs = loglikelihood_preferences(tiny_local_model, df, outputs=tmp_path, progress=False)
    ctx = LL_CONTEXT_TEMPLATE.format(question=df["question"][0])
    (ll_c, _), (ll_r, _) = tiny_local_model.loglikelihood([(ctx, " คำตอบที่ดี"), (ctx, " คำตอบที่ไม่ดี")])
    assert prefs["ll_chosen"][0] == pytest.approx(ll_c, abs=1e-4)
    assert prefs["ll_rejected"][0] == pytest.approx(ll_r, abs=1e-4)
    assert prefs["win_raw"][0] == (1.0 if ll_c > ll_r else 0.0)


def test_figures_report_counts():
    import matplotlib

    matplotlib.use("Agg")
    from thai_eval_utils.thaicli import plots as cli_plots

    judged = pd.DataFrame(
        {
            "format": ["factoid", "factoid", "instruction", "instruction"],
            "theme": ["Culture"] * 4,
            "score": [8.0, 0.0, float("nan"), 6.0],
            "status": ["scored", "fallback_zero", "unjudged", "scored"],
        }
    )
    fig = cli_plots.score_distribution(judged, title="m by j")
    hist, theme = fig.axes[:2]
    assert hist.get_title() == "score distribution (n=3, 1 zero fallbacks, 1 unjudged)"
    assert fig._suptitle.get_text() == "m by j"
    heights = sorted(round(p.get_height()) for p in hist.patches if p.get_height() > 0)
    assert heights == [50, 50, 100]  # factoid: 0 and 8 at 50% each; instruction: 6 at 100%
    prefs = pd.DataFrame(
        {
            "format": ["factoid", "instruction"],
            "theme": ["Culture", "Culture"],
            "win_raw": [1.0, 0.0],
            "win_norm": [0.0, 1.0],
        }
    )
    ax = cli_plots.judge_free_rates(prefs).axes[0]
    widths = [p.get_width() for p in ax.patches if p.get_height() > 0]
    assert sorted(widths) == [0.0, 0.0, 1.0, 1.0]  # factoid raw 1 / per char 0; instruction raw 0 / per char 1
