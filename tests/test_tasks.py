"""Declared tasks: validation errors name file, row and field; lm-eval's acc / acc_norm hand-computed
(and the one implementation Thai-H6 uses); generation metrics; a run resumed after a crash; the suite hooks on a
stored run; the judge-free ThaiCLI variant as a two-choice task with lm-eval's acc_norm."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from fakes import FakeModel

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.h6 import metrics as h6_metrics
from thai_eval_utils.h6.declarations import ACC_BYTES, TH_ARC
from thai_eval_utils.tasks import FewShot, GenerationTask, MultipleChoiceTask, load_items, run_task
from thai_eval_utils.tasks import metrics as M
from thai_eval_utils.thaicli.judge_free import JUDGE_FREE_TASK, loglikelihood_preferences

ROWS = [
    {"id": "a", "q": "สีของท้องฟ้า", "choices": ["ฟ้า", "เขียวมาก"], "answer": 0},
    {"id": "b", "q": "หนึ่งบวกหนึ่ง", "choices": ["สาม", "สอง"], "answer": "สอง"},
    {"id": "c", "q": "ข้อใดเป็นผลไม้", "choices": ["มะม่วง", "ก้อนหิน"], "answer": 0},
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def mc_task(tmp_path: Path, rows: list[dict] = ROWS, **options) -> MultipleChoiceTask:
    write_jsonl(tmp_path / "mc.jsonl", rows)
    return MultipleChoiceTask(
        name="mc", data="mc.jsonl", prompt="Q: {q}\nA:", choices="choices", gold="answer", **options
    ).bind(tmp_path / "mc.py")


# -------------------------------------------------------------------------------------------------- metrics
def test_acc_and_acc_norm_hand_computed():
    # lls -3 ("ab", 2 chars) and -4 ("abcdef", 6 chars): acc picks 0; per char -1.5 vs -0.667 picks 1
    acc = M.ACC.score_choices
    acc_norm = M.ACC_NORM.score_choices
    assert acc([-3.0, -4.0], ["ab", "abcdef"], 0) == 1.0 and acc_norm([-3.0, -4.0], ["ab", "abcdef"], 0) == 0.0
    assert acc_norm([-3.0, -4.0], ["ab", "abcdef"], 1) == 1.0
    # Thai: "ก่า" is 3 code points (consonant, tone mark, vowel), never bytes (9) or graphemes (2)
    assert M.normalised([-3.0], ["ก่า"]) == [-1.0]
    # ties: lm-eval's argmax takes the first; "split" counts 1/k
    assert acc([-1.0, -1.0], ["a", "b"], 1) == 0.0 and acc([-1.0, -1.0], ["a", "b"], 0) == 1.0
    assert (
        acc([-1.0, -1.0], ["a", "b"], 1, "split") == 0.5 and acc([-1.0, -1.0, -2.0], ["a", "b", "c"], 2, "split") == 0.0
    )
    # the delimiter is not counted: " ab" would be 3 characters and flip this item
    assert acc_norm([-3.0, -7.0], ["ab", "abcde"], 0) == 0.0  # -1.5 < -1.4
    assert -3.0 / 3 > -7.0 / 6  # with " " counted, chosen would have won


def test_thai_h6_uses_the_one_acc_norm():
    lls, choices = [-3.0, -4.0, -9.5], ["ab", "abcdef", "ก่าข"]
    out = M.multiple_choice(lls, choices, 1)
    assert (out["acc"], out["acc_norm"], out["pred"], out["pred_norm"]) == (0.0, 1.0, 0, 1)
    # Thai-H6 declares the very objects (not copies): the one implementation
    assert [id(m) for m in TH_ARC.metrics] == [id(M.ACC_NORM), id(M.ACC), id(ACC_BYTES)]
    assert h6_metrics.argmax_first is M.argmax_first
    assert ACC_BYTES.predict(lls, choices) == 1  # -3/2, -4/6, -9.5/12 bytes


def test_generation_metrics():
    assert M.exact_match(" โตเกียว\n", "โตเกียว") == 1.0 and M.exact_match("โตเกียว!", "โตเกียว") == 0.0
    assert M.thai_words("ฉันชอบแมว") == ["ฉัน", "ชอบ", "แมว"] and M.thai_words("แมว กิน") == ["แมว", "กิน"]
    # ROUGE-L on words: hyp [ฉัน, ชอบ, แมว] vs ref [ฉัน, ชอบ, หมา]: LCS 2, P = R = 2/3
    assert M.rouge_l("ฉันชอบแมว", "ฉันชอบหมา") == pytest.approx(200 / 3)
    same = "ฉันชอบแมว ฉันกินปลา"  # 6 words: 4-grams exist
    assert M.corpus_bleu([same], [same]) == pytest.approx(100.0)
    assert M.corpus_chrf(["abc"], ["abc"]) == pytest.approx(100.0)
    import sacrebleu  # noqa: PLC0415

    hyps, refs = ["ไปโรงเรียน", "กินข้าว"], ["ไปโรงเรียนแล้ว", "กินข้าวเช้า"]
    assert M.corpus_chrf(hyps, refs) == pytest.approx(sacrebleu.corpus_chrf(hyps, [refs]).score)
    assert 0 < M.corpus_chrf(["ปารีส"], ["ปารีสฝรั่งเศส"]) < 100


# ----------------------------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "row, field, words",
    [
        ({"id": "x", "choices": ["ก", "ข"], "answer": 0}, "q", "missing field"),
        ({"id": "x", "q": "  ", "choices": ["ก", "ข"], "answer": 0}, "q", "empty text"),
        ({"id": "x", "q": "ค", "choices": ["ก", "ข"], "answer": 2}, "answer", "out of range"),
        ({"id": "x", "q": "ค", "choices": ["ก", "ข"], "answer": "ง"}, "answer", "unknown gold"),
        ({"id": "x", "q": "ค", "choices": ["ก", ""], "answer": 0}, "choices[1]", "empty text"),
        ({"id": "x", "q": "ค", "choices": "ก", "answer": 0}, "choices", "list of at least 2"),
        ({"id": "a", "q": "ค", "choices": ["ก", "ข"], "answer": 0}, "id", "duplicate"),
    ],
)
def test_bad_rows_name_file_row_and_field(tmp_path, row, field, words):
    task = mc_task(tmp_path, [ROWS[0], row])
    with pytest.raises(ThaiEvalDataError) as err:
        run_task(FakeModel(score=lambda c, x: (0.0, False)), task, outputs=tmp_path / "out", progress=False)
    assert err.value.row == 1 and err.value.field == field and words in str(err.value)
    assert str(tmp_path / "mc.jsonl") in str(err.value)
    assert not (tmp_path / "out").exists()  # nothing written before every row is valid


def test_labels_fields_and_fewshot(tmp_path):
    rows = [
        {"id": 1, "q": "x", "a": "ก", "b": "ข", "label": "B"},
        {"id": 2, "q": "y", "a": "ค", "b": "ง", "label": "A"},
    ]
    write_jsonl(tmp_path / "d.jsonl", rows)
    write_jsonl(tmp_path / "train.jsonl", [{"id": 9, "q": "z", "a": "จ", "b": "ฉ", "label": "A"}])
    task = MultipleChoiceTask(
        name="lab",
        data="d.jsonl",
        prompt="{q}?",
        choices=("a", "b"),
        gold="label",
        labels=("A", "B"),
        fewshot=FewShot("train.jsonl", 1),
    ).bind(tmp_path)
    items = load_items(task)
    assert [it["gold"] for it in items] == [1, 0] and items[0]["choices"] == ["ก", "ข"] and items[0]["id"] == "1"
    assert items[0]["context"] == "z? จ\n\nx?"
    with pytest.raises(ThaiEvalDataError, match="2 shots asked for"):
        load_items(
            MultipleChoiceTask(
                name="lab",
                data="d.jsonl",
                prompt="{q}?",
                choices=("a", "b"),
                gold="label",
                labels=("A", "B"),
                fewshot=FewShot("train.jsonl", 2),
            ).bind(tmp_path)
        )


def test_bad_declarations():
    with pytest.raises(ThaiEvalDataError, match="unknown multiple-choice metric"):
        MultipleChoiceTask(name="t", data="d.jsonl", prompt="{q}", choices="c", gold="g", metrics=("f1",))
    with pytest.raises(ThaiEvalDataError, match="without '/'"):
        MultipleChoiceTask(name="a/b", data="d.jsonl", prompt="{q}", choices="c", gold="g")
    with pytest.raises(ThaiEvalDataError, match="unknown generation metric"):
        GenerationTask(name="g", data="d.jsonl", prompt="{q}", reference="r", metrics=("meteor",))
    with pytest.raises(ThaiEvalDataError, match="bad prompt template"):
        GenerationTask(name="g", data="d.jsonl", prompt="{q", reference="r")


# ------------------------------------------------------------------------------------------------------ runs
def scorer(context: str, continuation: str) -> tuple[float, bool]:
    """Log-likelihoods by length: -1 per character of the continuation, the longest context adds nothing."""
    return -float(len(continuation)), False


def test_multiple_choice_run_records_and_summary(tmp_path):
    model = FakeModel(score=scorer)
    run = run_task(model, mc_task(tmp_path), outputs=tmp_path / "out", batch_size=2, progress=False)
    assert model.inputs[0][:2] == [("Q: สีของท้องฟ้า\nA:", " ฟ้า"), ("Q: สีของท้องฟ้า\nA:", " เขียวมาก")]
    assert [len(batch) for batch in model.inputs] == [4, 2]  # 2 items x 2 choices, then 1 item
    # lls = -(len + 1): a: -4, -9 -> acc 1; b: -4 "สาม", -4 "สอง" tie -> first (0) != gold 1; c: -7, -8 -> 1
    assert [r["acc"] for r in run.records] == [1.0, 0.0, 1.0]
    # per char: a -4/3 > -9/8? -1.333 < -1.125 -> pred 1, miss; b -4/3 == -4/3 -> first, miss; c -7/6 < -8/7 -> miss
    assert [r["acc_norm"] for r in run.records] == [0.0, 0.0, 0.0]
    s = json.loads((run.run_dir / "summary.json").read_text())
    assert s["scores"]["acc"]["value"] == pytest.approx(2 / 3) and s["scores"]["acc"]["n"] == 3 and s["n_docs"] == 3
    iv = s["scores"]["acc"]["interval"]
    assert 0 <= iv["low"] <= 2 / 3 <= iv["high"] <= 1 and iv["method"] == "percentile"
    assert s["scores"]["acc"]["signature"].startswith("mc:v1|decl:")
    card = json.loads((run.run_dir / "run_card.json").read_text())
    assert card["benchmark"] == "mc/mc" and card["config"]["task"]["prompt"] == "Q: {q}\nA:"
    assert list(card["data_files"]) == [str(tmp_path / "mc.jsonl")] and "prompt" in card["prompt_template_sha256"]
    assert "base_dir" not in card["config"]["task"]


def test_resume_after_a_crash_loses_nothing_and_duplicates_nothing(tmp_path):
    task = mc_task(tmp_path)
    crashing = FakeModel(score=scorer, fail_on_call=2)
    with pytest.raises(RuntimeError, match="simulated crash"):
        run_task(crashing, task, outputs=tmp_path / "out", batch_size=1, progress=False)
    model = FakeModel(score=scorer)
    run = run_task(model, task, outputs=tmp_path / "out", batch_size=1, progress=False)
    assert run.computed == 2 and len(model.calls) == 2  # item a was stored before the crash
    lines = [json.loads(x) for x in (run.run_dir / "items.jsonl").read_text().splitlines()]
    assert sorted(r["key"] for r in lines) == ["a", "b", "c"]
    again = run_task(FakeModel(score=scorer), task, outputs=tmp_path / "out", progress=False)
    assert again.computed == 0 and again.run_dir == run.run_dir


def test_limited_run_then_full_run_share_the_folder(tmp_path):
    task = mc_task(tmp_path)
    first = run_task(FakeModel(score=scorer), task, limit=2, outputs=tmp_path / "out", progress=False)
    assert first.summary["n"] == 2 and "limit:2/3" in first.scores["acc"]["signature"]
    full = run_task(FakeModel(score=scorer), task, outputs=tmp_path / "out", progress=False)
    assert full.run_dir == first.run_dir and full.computed == 1


def gen_task(tmp_path: Path, **options) -> GenerationTask:
    write_jsonl(
        tmp_path / "g.jsonl",
        [{"id": "c1", "country": "ญี่ปุ่น", "capital": "โตเกียว"}, {"id": "c2", "country": "ลาว", "capital": "เวียงจันทน์"}],
    )
    options = {"prompt": "เมืองหลวงของ{country}:", **options}
    return GenerationTask(name="gen", data="g.jsonl", reference="capital", **options).bind(tmp_path)


def test_generation_run(tmp_path):
    model = FakeModel(complete=lambda p: " โตเกียว" if "ญี่ปุ่น" in p else "ปารีส")
    task = gen_task(tmp_path, metrics=("exact_match", "rougeL", "chrf", "bleu"), max_new_tokens=8, stop=("\n",))
    run = run_task(model, task, outputs=tmp_path / "out", progress=False)
    kind, settings = model.calls[0]
    assert (
        kind == "generate"
        and settings["max_new_tokens"] == 8
        and settings["stop"] == ["\n"]
        and settings["seed"] == 1234
    )
    assert [r["exact_match"] for r in run.records] == [1.0, 0.0]
    assert run.scores["exact_match"]["value"] == 0.5 and run.scores["rougeL"]["value"] == pytest.approx(50.0)
    assert run.scores["chrf"]["value"] == pytest.approx(M.corpus_chrf([" โตเกียว", "ปารีส"], ["โตเกียว", "เวียงจันทน์"]))
    assert run.scores["chrf"]["stderr"] is None and run.scores["chrf"]["interval"]["n"] == 2


def test_chat_generation_task(tmp_path):
    model = FakeModel(reply=lambda m: "โตเกียว")
    task = gen_task(
        tmp_path, prompt=[{"role": "system", "content": "ตอบสั้น ๆ"}, {"role": "user", "content": "เมืองหลวงของ{country}"}]
    )
    run = run_task(model, task, outputs=tmp_path / "out", progress=False)
    assert model.calls[0][0] == "chat" and model.inputs[0][1][1] == {"role": "user", "content": "เมืองหลวงของลาว"}
    assert run.scores["exact_match"]["value"] == 0.5


def test_chat_few_shot_examples_are_turns(tmp_path):
    """lm-eval's fewshot_as_multiturn: each example is a user turn (the last message filled with its row) and an
    assistant turn (its reference), after the system prompt and before the item's own turn."""
    model = FakeModel(reply=lambda m: "โตเกียว")
    write_jsonl(
        tmp_path / "shots.jsonl", [{"country": "ไทย", "capital": "กรุงเทพ"}, {"country": "จีน", "capital": "ปักกิ่ง"}]
    )
    task = gen_task(
        tmp_path,
        prompt=[{"role": "system", "content": "ตอบสั้น ๆ"}, {"role": "user", "content": "เมืองหลวงของ{country}"}],
        fewshot=FewShot("shots.jsonl", 2),
    )
    run = run_task(model, task, outputs=tmp_path / "out", progress=False)
    assert model.inputs[0][1] == [
        {"role": "system", "content": "ตอบสั้น ๆ"},
        {"role": "user", "content": "เมืองหลวงของไทย"},
        {"role": "assistant", "content": "กรุงเทพ"},
        {"role": "user", "content": "เมืองหลวงของจีน"},
        {"role": "assistant", "content": "ปักกิ่ง"},
        {"role": "user", "content": "เมืองหลวงของลาว"},
    ]
    assert run.records[1]["question"] == "เมืองหลวงของลาว" and run.scores["exact_match"]["n"] == 2
    assert task.declaration()["fewshot"]["n"] == 2  # the examples key the run


def test_records_carry_what_was_sent_and_the_export_reads_it_not_the_data(tmp_path):
    """Each record keeps the context sent (few-shot block + question) or a task's own per-choice requests; the
    lm-eval export takes them from the record, so it is the same after the data file is gone."""
    write_jsonl(tmp_path / "shots.jsonl", [{"q": "ฝนตกไหม", "choices": ["ตก", "ไม่ตก"], "answer": 0}])
    task = mc_task(tmp_path, fewshot=FewShot("shots.jsonl", 1))
    model = FakeModel(score=lambda c, x: (-1.0 if x.strip() in ("ฟ้า", "สอง", "มะม่วง") else -2.0, False))
    run = run_task(model, task, outputs=tmp_path / "out", progress=False)
    assert run.records[0]["context"] == "Q: ฝนตกไหม\nA: ตก\n\nQ: สีของท้องฟ้า\nA:"
    (tmp_path / "mc.jsonl").unlink()
    (tmp_path / "shots.jsonl").unlink()
    sample = task.as_suite(tmp_path / "mc.py").lm_eval_export(StoredRun.from_dir(run.run_dir)).samples[0]
    assert sample["arguments"]["gen_args_0"] == {"arg_0": "Q: ฝนตกไหม\nA: ตก\n\nQ: สีของท้องฟ้า\nA:", "arg_1": " ฟ้า"}


def test_a_tasks_own_requests_are_recorded_and_exported(tmp_path):
    def requests(doc, context):  # each choice its own context, the same continuation (Winogrande's shape)
        return [(f"{context} {c}", " จบ") for c in doc["choices"]]

    task = mc_task(tmp_path, requests=requests)
    run = run_task(FakeModel(score=lambda c, x: (-1.0, False)), task, outputs=tmp_path / "out", progress=False)
    assert run.records[0]["requests"] == [["Q: สีของท้องฟ้า\nA: ฟ้า", " จบ"], ["Q: สีของท้องฟ้า\nA: เขียวมาก", " จบ"]]
    sample = task.as_suite(tmp_path / "mc.py").lm_eval_export(StoredRun.from_dir(run.run_dir)).samples[0]
    assert sample["arguments"]["gen_args_1"] == {"arg_0": "Q: สีของท้องฟ้า\nA: เขียวมาก", "arg_1": " จบ"}


# ----------------------------------------------------------------------------------------------- suite hooks
class Boot:
    level, n_resamples, seed = 0.95, 200, 0


def test_suite_hooks_on_a_stored_run(tmp_path):
    task = mc_task(tmp_path)
    suite = task.as_suite(tmp_path / "mc.py")
    assert suite.name == "mc" and suite.tasks == ("mc",) and suite.notebooks == ("task.ipynb",)
    assert suite.notebook_parameters(()) == {"task": "mc", "tasks_dir": str((tmp_path / "mc.py").resolve())}
    run_dir = run_task(FakeModel(score=scorer), suite.task, outputs=tmp_path / "out", progress=False).run_dir
    stored = StoredRun.from_dir(run_dir)
    assert suite.holds_headlines(stored)
    heads = suite.headlines(stored)
    assert [h.name for h in heads] == ["mc/mc/acc", "mc/mc/acc_norm"] and {h.kind for h in heads} == {"binary"}
    assert heads[0].items["key"].tolist() == ["a", "b", "c"] and heads[0].items["value"].tolist() == [1.0, 0.0, 1.0]
    assert heads[0].items["ref"].tolist() == ["ฟ้า", "สอง", "มะม่วง"] and heads[0].scale == 100.0
    views = suite.item_views(stored, heads, None, {}, [])
    assert views[1].choices == ["สาม", "สอง"] and views[1].gold == 1 and views[1].pred == 0  # first metric: acc
    assert views[1].loglikelihoods == [-4.0, -4.0] and views[0].correct == 1 and views[1].question == "Q: หนึ่งบวกหนึ่ง\nA:"
    cells = suite.leaderboard_cells("fake-model", heads, Boot())
    acc = next(c for c in cells if c["column"] == "acc")
    assert acc["value"] == pytest.approx(200 / 3) and acc["n"] == 3 and acc["table"] == "mc" and acc["items"] == "mc|mc"
    assert 0 <= acc["ci_low"] <= acc["value"] <= acc["ci_high"] <= 100
    assert suite.leaderboard_tables[0].columns == ("acc", "acc_norm")
    assert suite.leaderboard_results(stored) == {"mc": {"acc": pytest.approx(2 / 3), "acc_norm": 0.0}}
    assert suite.lm_eval_task(stored) == "mc"
    lm = suite.lm_eval_export(stored, None)
    sample = lm.samples[0]
    assert sample["arguments"]["gen_args_1"] == {"arg_0": "Q: สีของท้องฟ้า\nA:", "arg_1": " เขียวมาก"}
    assert sample["target"] == "ฟ้า" and sample["acc"] == 1.0 and sample["resps"][0] == [["-4.0", "False"]]
    assert lm.name == "mc" and lm.results["acc,none"] == pytest.approx(2 / 3) and lm.results["sample_len"] == 3
    assert lm.config["output_type"] == "multiple_choice" and lm.num_fewshot == 0 and len(lm.samples) == 3
    rows = suite.detail_rows(stored)
    assert rows[0]["acc"] == 1.0 if "acc" in rows[0] else rows[0]["metrics"]["acc"] == 1.0  # main's / runx's layout

    class Counter:
        tokenizer, source = None, "none"

        def count(self, texts):
            return sum(len(t) for t in texts)

    dry = suite.dry_run(tmp_path, Counter(), limit=2, max_new_tokens=None)
    assert dry[0]["documents"] == 2 and dry[0]["requests"] == 4
    assert (
        dry[0]["fed_tokens"]
        == len("Q: สีของท้องฟ้า\nA: ฟ้า") + len("Q: สีของท้องฟ้า\nA: เขียวมาก") + 2 * len("Q: หนึ่งบวกหนึ่ง\nA:") + 8
    )


def test_generation_suite_corpus_headline(tmp_path):
    task = gen_task(tmp_path, metrics=("exact_match", "chrf"))
    suite = task.as_suite(tmp_path / "g.py")
    run = run_task(FakeModel(complete=lambda p: "โตเกียว"), suite.task, outputs=tmp_path / "out", progress=False)
    heads = suite.headlines(StoredRun.from_dir(run.run_dir))
    assert [h.kind for h in heads] == ["binary", "corpus"]
    chrf = heads[1]
    hyps, refs = chrf.items["hyp"].tolist(), chrf.items["ref"].tolist()
    assert chrf.corpus_metric(hyps, refs) == pytest.approx(run.scores["chrf"]["value"])
    # by sufficient statistics (stats.corpus.CorpusMetric): the same number from summed rows
    assert chrf.corpus_metric.score(chrf.corpus_metric.statistics(hyps, refs).sum(axis=0)) == pytest.approx(
        run.scores["chrf"]["value"]
    )
    assert "value" not in chrf.items and chrf.scale == 1.0
    cells = suite.leaderboard_cells("m", heads, Boot())
    assert [c["column"] for c in cells] == ["exact_match", "chrf"] and cells[0]["value"] == 50.0


# ------------------------------------------------------------------------------------ judge-free ThaiCLI
def test_judge_free_thaicli_is_a_two_choice_task_with_lm_evals_acc_norm(tmp_path):
    df = pd.DataFrame(
        [
            {"id": "f1", "format": "factoid", "theme": "Culture", "question": "ก", "chosen": "ab", "rejected": "abcde"},
            {
                "id": "i1",
                "format": "instruction",
                "theme": "Culture",
                "question": "ข",
                "chosen": "ดี",
                "rejected": "ไม่ดี",
            },
        ]
    )
    table = {" ab": -3.0, " abcde": -7.0, " ดี": -2.0, " ไม่ดี": -2.0}
    model = FakeModel("m", score=lambda ctx, cont: (table[cont], False))
    prefs = loglikelihood_preferences(model, df, outputs=tmp_path, progress=False)
    assert model.requests[:2] == [("คำถาม: ก\nคำตอบ:", " ab"), ("คำถาม: ก\nคำตอบ:", " abcde")]
    # f1: raw -3 > -7 win; per char (lm-eval) -3/2 = -1.5 < -7/5 = -1.4: loss (judge_free.py's " "+answer: -1 > -1.17, a win)
    # i1: raw tie (0.5); per char -2/2 = -1 < -2/5 = -0.4: loss
    assert prefs["win_raw"].tolist() == [1.0, 0.5] and prefs["win_norm"].tolist() == [0.0, 0.0]
    assert prefs["chars_chosen"].tolist() == [2, 2] and prefs["ll_rejected"].tolist() == [-7.0, -2.0]
    summary = json.loads((Path(prefs.attrs["run_dir"]) / "summary.json").read_text())
    assert (
        summary["scores"]["win_raw"]["value"] == pytest.approx(0.75) and summary["scores"]["win_norm"]["value"] == 0.0
    )
    assert summary["scores"]["by_format"][0]["format"] == "factoid" and "thaicli/loglik" in prefs.attrs["run_dir"]
    assert JUDGE_FREE_TASK.target_delimiter == " " and JUDGE_FREE_TASK.ties == "split"
    again = FakeModel("m", score=lambda ctx, cont: (table[cont], False))
    assert loglikelihood_preferences(again, df, outputs=tmp_path, progress=False)["win_raw"].tolist() == [1.0, 0.5]
    assert again.calls == []


def test_a_data_folder_replaces_the_files_beside_the_task_file_only_when_it_holds_them(tmp_path):
    task = mc_task(tmp_path)
    other = tmp_path / "elsewhere"
    other.mkdir()
    assert task.with_data_folder(other) is task and task.with_data_folder(None) is task
    write_jsonl(other / "mc.jsonl", ROWS[:1])
    moved = task.with_data_folder(other)
    assert moved.data_path == other.resolve() / "mc.jsonl" and [it["id"] for it in load_items(moved)] == ["a"]
    assert moved.declaration() == task.declaration()  # the same task; the data hash tells the runs apart
    assert task.as_suite(tmp_path / "mc.py").data_folder == "mc"
