"""Declared tasks opened to code where data cannot say it (lm-eval's ``!function``): prompt, choices, gold,
reference and process_docs as functions recorded by qualified name; few-shot samplers (first n as before, byte
for byte; lm-eval's seeded random draw without the item itself); reply filters after the thinking cut (lm-eval's
regex filter, SEA-HELM's answer tag)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from fakes import FakeModel

from thai_eval_utils.core import registry
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.tasks import FewShot, GenerationTask, MultipleChoiceTask, load_items, run_task, task_named
from thai_eval_utils.tasks.shaping import AnswerTag, FirstN, RandomSample, RegexExtract
from thai_eval_utils.tasks.thinking import thinking_option

POOL = [{"id": f"t{i}", "q": f"ข้อ{i}", "choices": ["ใช่", "ไม่"], "answer": i % 2} for i in range(5)]
ROWS = [{"id": f"e{i}", "q": f"ถาม{i}", "choices": ["ใช่", "ไม่"], "answer": 0} for i in range(3)]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def mc(tmp_path: Path, fewshot: FewShot | None = None, **options) -> MultipleChoiceTask:
    write_jsonl(tmp_path / "mc.jsonl", ROWS)
    write_jsonl(tmp_path / "train.jsonl", POOL)
    options = {"prompt": "Q: {q}\nA:", "choices": "choices", "gold": "answer", **options}
    return MultipleChoiceTask(name="mc", data="mc.jsonl", fewshot=fewshot, **options).bind(tmp_path)


# ------------------------------------------------------------------------------------------------- samplers
def test_first_n_keeps_the_prompts_and_the_declaration(tmp_path):
    plain, first_n = mc(tmp_path, FewShot("train.jsonl", 2)), mc(tmp_path, FewShot("train.jsonl", 2, sampler=FirstN()))
    block = "Q: ข้อ0\nA: ใช่\n\nQ: ข้อ1\nA: ไม่\n\n"
    assert [it["context"] for it in load_items(plain)] == [block + f"Q: ถาม{i}\nA:" for i in range(3)]
    assert load_items(first_n) == load_items(plain) and first_n.declaration() == plain.declaration()
    assert plain.declaration()["fewshot"] == {"file": "train.jsonl", "n": 2, "delimiter": "\n\n"}


def test_random_sampler_draws_as_lm_eval_one_generator_item_after_item(tmp_path):
    task = mc(tmp_path, FewShot("train.jsonl", 2, sampler=RandomSample(1234)))
    rnd = random.Random(1234)  # lm-eval: Random(seed).sample(pool, n), the same generator for every item in order
    picks = [rnd.sample(range(5), 2) for _ in range(3)]
    assert picks == [[3, 0], [0, 4], [4, 0]]  # hard-coded: the draws do not depend on Python's hash seed
    contexts = [it["context"] for it in load_items(task)]
    answer = ["ใช่", "ไม่"]
    expected = [
        "".join(f"Q: ข้อ{k}\nA: {answer[k % 2]}\n\n" for k in ks) + f"Q: ถาม{i}\nA:" for i, ks in enumerate(picks)
    ]
    assert contexts == expected
    assert task.declaration()["fewshot"]["sampler"] == {
        "class": "thai_eval_utils.tasks.shaping:RandomSample",
        "seed": 1234,
    }
    assert task.declaration() != mc(tmp_path, FewShot("train.jsonl", 2)).declaration()


def test_random_sampler_from_the_evaluated_data_never_shows_an_item_itself(tmp_path):
    rows = [{"id": f"e{i}", "q": f"ถาม{i}", "choices": ["ใช่", "ไม่"], "answer": 0} for i in range(4)]
    write_jsonl(tmp_path / "mc.jsonl", rows)
    task = MultipleChoiceTask(
        name="mc",
        data="mc.jsonl",
        prompt="{q}",
        choices="choices",
        gold="answer",
        fewshot=FewShot("mc.jsonl", 2, sampler=RandomSample(7)),
    ).bind(tmp_path)
    rnd = random.Random(7)  # n + 1 drawn, the item's own row dropped, the first n kept
    expected = [[k for k in rnd.sample(range(4), 3) if k != i][:2] for i in range(4)]
    items = load_items(task)
    for i, item in enumerate(items):
        shown = [line.split(" ")[0] for line in item["context"].split("\n\n")[:-1]]
        assert shown == [f"ถาม{k}" for k in expected[i]] and f"ถาม{i}" not in shown


# ------------------------------------------------------------------------------------------------ functions
def question_prompt(doc: dict) -> str:
    return f"คำถาม: {doc['q']} ({len(doc['choices'])} ตัวเลือก)"


def reversed_choices(doc: dict) -> list[str]:
    return list(reversed(doc["choices"]))


def gold_after_reversal(doc: dict) -> int:
    return len(doc["choices"]) - 1 - doc["answer"]


def keep_even(rows: list[dict]) -> list[dict]:
    return [r for i, r in enumerate(rows) if i % 2 == 0]


def test_functions_in_place_of_templates_and_fields(tmp_path):
    task = mc(
        tmp_path, prompt=question_prompt, choices=reversed_choices, gold=gold_after_reversal, process_docs=keep_even
    )
    items = load_items(task)
    assert [it["id"] for it in items] == ["e0", "e2"]  # process_docs ran first
    assert (
        items[0]["question"] == "คำถาม: ถาม0 (2 ตัวเลือก)"
        and items[0]["choices"] == ["ไม่", "ใช่"]
        and items[0]["gold"] == 1
    )
    decl = task.declaration()
    assert decl["prompt"] == {"function": f"{__name__}:question_prompt"}
    assert decl["choices"] == {"function": f"{__name__}:reversed_choices"}
    assert decl["gold"] == {"function": f"{__name__}:gold_after_reversal"}
    assert decl["process_docs"] == {"function": f"{__name__}:keep_even"}
    run = run_task(FakeModel(score=lambda c, x: (-len(x), False)), task, outputs=tmp_path / "o", progress=False)
    # " ไม่" (4 chars) -> -4, " ใช่" (4) -> -4: a tie, the first (0) wins; gold 1 -> acc 0
    assert [r["acc"] for r in run.records] == [0.0, 0.0]
    card = json.loads((run.run_dir / "run_card.json").read_text(encoding="utf-8"))
    assert list(card["prompt_template_sha256"]) == ["prompt"]


def test_a_failing_function_names_its_row_and_field(tmp_path):
    task = mc(tmp_path, gold=lambda doc: {"a": 0}[doc["q"]])
    with pytest.raises(ThaiEvalDataError) as err:
        load_items(task)
    assert (err.value.row, err.value.field) == (0, "gold")
    assert err.value.reason == (
        "the gold function 'test_a_failing_function_names_its_row_and_field.<locals>.<lambda>' failed: KeyError: 'ถาม0'"
    )


# -------------------------------------------------------------------------------------------------- filters
def test_filters_hand_computed():
    gsm = RegexExtract()
    assert gsm.apply("คิดว่า 6 x 7 = 42\n#### 42") == "42" and gsm.apply("ตอบ 42") == "[invalid]"
    assert gsm.apply("#### 1,234.\n#### 5") == "1,234."  # take the first match
    assert RegexExtract(r"(\d+)|([a-z]+)", group_select=-1).apply("12 ab") == "ab"  # a tuple: its non-empty group
    assert RegexExtract(r"x(\d)", fallback="").apply("none") == ""
    tag = AnswerTag("คำตอบ:")
    assert tag.apply("เหตุผล...\nคำตอบ: **กรุงเทพ**\nจบ") == "กรุงเทพ**" and tag.apply("  ไม่มีแท็ก ") == "ไม่มีแท็ก"


def test_filters_run_after_the_thinking_cut(tmp_path):
    write_jsonl(tmp_path / "g.jsonl", [{"id": "1", "q": "เลข", "a": "1,234"}])
    task = GenerationTask(
        name="g",
        data="g.jsonl",
        prompt="{q}",
        reference="a",
        filters=(RegexExtract(),),
        metrics="exact_match",
        top_p=0.9,
    ).bind(tmp_path)
    model = FakeModel(complete=lambda p: "<think>#### 1</think>คิดแล้ว\n#### 1,234")
    run = run_task(model, task, outputs=tmp_path / "o", progress=False, thinking=thinking_option("strip"))
    assert run.records[0]["exact_match"] == 1.0 and run.records[0]["output"].startswith("<think>")
    assert model.calls[0][1]["top_p"] == 0.9  # every decoding setting reaches the model
    assert task.declaration()["filters"] == (
        {
            "class": "thai_eval_utils.tasks.shaping:RegexExtract",
            "pattern": r"#### (\-?[0-9\.\,]+)",
            "group_select": 0,
            "fallback": "[invalid]",
        },
    )
    suite = task.as_suite(tmp_path / "g.py")
    export = suite.lm_eval_export(StoredRun.from_dir(run.run_dir))
    sample = export.samples[0]
    assert sample["filtered_resps"] == ["1,234"] and sample["filter"] == "regex"  # the chain's name, as lm-eval's
    assert export.results["exact_match,regex"] == 1.0 and "exact_match,none" not in export.results
    assert export.config["filter_list"] == [
        {
            "name": "regex",
            "filter": [
                {
                    "function": "regex",
                    "regex_pattern": r"#### (\-?[0-9\.\,]+)",
                    "group_select": 0,
                    "fallback": "[invalid]",
                },
                {"function": "take_first"},
            ],
        }
    ]
    assert export.config["fewshot_config"]["sampler"] == "first_n"


def test_the_lm_eval_export_names_the_sampler_as_lm_eval_does():
    from thai_eval_utils.h6.fewshot import LeaderboardSample
    from thai_eval_utils.tasks.declared_suite import _sampler_name

    assert _sampler_name(None) == "first_n" and _sampler_name(FewShot("a.jsonl", 2).chooser) == "first_n"
    assert _sampler_name(RandomSample(7)) == "default"  # lm-eval's seeded draw
    # a sampler lm-eval has no name for is named by its class
    assert _sampler_name(LeaderboardSample()) == "thai_eval_utils.h6.fewshot:LeaderboardSample"


CODE_TASK = '''
"""A generation task whose prompt and reference are functions of the row."""

from thai_eval_utils.tasks import GenerationTask
from thai_eval_utils.tasks.shaping import AnswerTag


def prompt(doc):
    return f"{doc['a']} + {doc['b']} = ? ตอบว่า คำตอบ: N"


def total(doc):
    return str(doc["a"] + doc["b"])


TASK = GenerationTask(name="sums", data="sums.jsonl", prompt=prompt, reference=total, filters=AnswerTag("คำตอบ:"))
'''


def test_a_task_file_with_functions_records_them_by_file_name(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "sums.py").write_text(CODE_TASK, encoding="utf-8")
    write_jsonl(folder / "sums.jsonl", [{"id": "1", "a": 2, "b": 3}, {"id": "2", "a": 4, "b": 4}])
    saved = list(registry._included)
    try:
        registry.include_path(folder)
        task = task_named("sums")
        model = FakeModel(complete=lambda p: "คิด...\nคำตอบ: 5")
        run = run_task(model, task, outputs=tmp_path / "o", progress=False)
    finally:
        registry._included[:] = saved
        registry._suites = None
    assert model.inputs[0] == ["2 + 3 = ? ตอบว่า คำตอบ: N", "4 + 4 = ? ตอบว่า คำตอบ: N"]
    assert [r["exact_match"] for r in run.records] == [1.0, 0.0] and [r["reference"] for r in run.records] == ["5", "8"]
    decl = json.loads((run.run_dir / "run_card.json").read_text(encoding="utf-8"))["config"]["task"]
    assert decl["prompt"] == {"function": "sums.py:prompt"} and decl["reference"] == {"function": "sums.py:total"}
    assert decl["filters"] == [{"class": "thai_eval_utils.tasks.shaping:AnswerTag", "tag": "คำตอบ:"}]


def test_a_generation_budget_is_capped_and_a_choice_task_is_left_as_it_is(tmp_path):
    """``with_max_new_tokens`` (``thai-eval run --max-new-tokens`` in task.ipynb): the smaller of the task's budget and
    the cap; None and multiple-choice tasks unchanged (the same object)."""
    gen = GenerationTask(name="g", data="d.jsonl", prompt="{q}", reference="a", max_new_tokens=64)
    assert gen.with_max_new_tokens(16).max_new_tokens == 16
    assert gen.with_max_new_tokens(128).max_new_tokens == 64
    assert gen.with_max_new_tokens(None) is gen
    mc = MultipleChoiceTask(name="m", data="d.jsonl", prompt="{q}", choices="c", gold="g")
    assert mc.with_max_new_tokens(16) is mc


def test_a_table_function_is_recorded_by_its_class_and_the_entrys_key():
    """The leaderboard's and SEA-HELM's functions of a row share one base: a declaration records the subclass and the
    table entry's key (the config does not change while the code does not), and two functions of the same entry
    compare equal."""
    from thai_eval_utils.tasks.declared import recorded
    from thai_eval_utils.thai_llm_leaderboard.declarations import Gold, Prompt
    from thai_eval_utils.thai_llm_leaderboard.tasks import nlu_task

    task = nlu_task("xcopa_tha_seacrowd_qa")
    assert recorded(Prompt(task)) == {
        "function": "thai_eval_utils.thai_llm_leaderboard.declarations:Prompt",
        "task": "xcopa_tha_seacrowd_qa",
    }
    assert Gold(task) == Gold(nlu_task("xcopa_tha_seacrowd_qa")) and Gold(task) != Prompt(task)
