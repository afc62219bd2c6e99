"""Dialect benchmark runs: exact prompts per dialect and task, shipped samples, generation with a fake
model (paper settings, resume after a crash, greedy/API settings), prompt cap, scoring."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from fakes import FakeModel

from thai_eval_utils.dialect import generation as D
from thai_eval_utils.dialect.data import load_dialect

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "data" / "dialect"


@pytest.fixture(scope="module")
def prompts() -> D.DialectPrompts:
    return D.load_prompts(REPO / "thai_eval_utils" / "dialect" / "prompts" / "dialect_prompts.json")


def test_prompt_file_keeps_its_source(prompts):
    assert prompts.source.startswith("mrpeerat/Thai_local_benchmark @b5597ba")
    assert prompts.language_names == {
        "east": "ภาษาอีสาน",
        "center": "ภาษาไทย",
        "north": "ภาษาเหนือ",
        "south": "ภาษาใต้",
        "eng": "ภาษาอังกฤษ",
    }
    assert D.load_prompts().source == prompts.source  # the default path is the shipped file (package data)
    assert not (SAMPLES / "dialect_prompts.json").exists()  # one copy: the package's


# Expected prompts written out by hand from the benchmark's templates (typos included).
QA_ITEM = {"context": "  บริบท ก\n", "question": " ถาม ข ", "text_1": None}
EXPECTED_QA = {
    "center": "โปรดอ้างอิงถึงข้อความด้านล่างนี้และตอบคำถามต่อไปนี้ โดยตอบโดยใช้แค่ข้อความที่อยู่ในบทความ:\nข้อความ: บริบท ก\nคำถาม: ถาม ข\nคำตอบ:",
    "east": "โปรดอ้างอิงถึงข้อความทางลุมพี้และตอบคำถามต่อไปนี้เป็นภาษาอีสาน ให้ตอบโดยใช้แค่ข้อความที่อยู่ในบทความ:\nข้อความ:บริบท ก:\nคำถาม: ถาม ข\nคำตอบ:",
    "north": "โปรดอ้างอิงถึงข้อความตางล่างนี้และตอบคำถามต่อไปนี้หื้อเป็นภาษาเหนือ หื้อตอบโดยใช้ก่าข้อความตี้อยู่ในบทความ:\nข้อความ: บริบท ก\nคำถาม: ถาม ข\nคำตอบ:",
    "south": "ช่วยใช้ข้อความข้างล่างนี้ตอบคำถามเป็นภาษาใต้โดยตอบแค่คำตอบที่มีอยู๋ในบทความ:\nข้อความ: บริบท ก\nคำถาม: ถาม ข\nคำตอบ:",
}
EXPECTED_TRANSLATION = {
    (
        "east",
        "translation_eng_east",
    ): "แปลข้อความต่อไปนี้จาก ภาษาอังกฤษ เป็น ภาษาอีสาน ให้เจ้าแปลโดยตรงโดยบ่ต้องมีข้อมูลเพิ่มเติมใดๆ\nข้อความ: Hello.\nคำแปล:",
    (
        "east",
        "translation_east_eng",
    ): "แปลข้อความต่อไปนี้จาก ภาษาอีสาน เป็น ภาษาอังกฤษ ให้เจ้าแปลโดยตรงโดยบ่ต้องมีข้อมูลเพิ่มเติมใดๆ\nข้อความ: Hello.\nคำแปล:",
    (
        "center",
        "translation_eng_center",
    ): "แปลข้อความต่อไปนี้จาก ภาษาอังกฤษ เป็น ภาษาไทย ให้การแปลของคุณโดยตรงโดยไม่ต้องมีข้อมูลเพิ่มเติมใดๆ\nข้อความ: Hello.\nคำแปล:",
    (
        "center",
        "translation_center_eng",
    ): "แปลข้อความต่อไปนี้จาก ภาษาไทย เป็น ภาษาอังกฤษ ให้การแปลของคุณโดยตรงโดยไม่ต้องมีข้อมูลเพิ่มเติมใดๆ\nข้อความ: Hello.\nคำแปล:",
    (
        "north",
        "translation_eng_north",
    ): "แปลข้อความต่อไปนี้จาก ภาษาอังกฤษ เป๋น ภาษาเหนือ หื้อตั๋วแปลโดยตรงโดยตี้บะต้องมีข้อมูลเพิ่มเติมใดๆ\nข้อความ: Hello.\nคำแปล:",
    (
        "north",
        "translation_north_eng",
    ): "แปลข้อความต่อไปนี้จาก ภาษาเหนือ เป๋น ภาษาอังกฤษ หื้อตั๋วแปลโดยตรงโดยตี้บะต้องมีข้อมูลเพิ่มเติมใดๆ\nข้อความ: Hello.\nคำแปล:",
    (
        "south",
        "translation_eng_south",
    ): "แปลข้อความต่อจากนี้ ภาษาอังกฤษ เป็น ภาษาใต้ ให้การแปลของเติ้ลแปลตรงตัวเลย ไม่ต้องไสข้อมูลเพิ่มเติมไหร\nข้อความ: Hello.\nคำแปล:",
    (
        "south",
        "translation_south_eng",
    ): "แปลข้อความต่อจากนี้ ภาษาใต้ เป็น ภาษาอังกฤษ ให้การแปลของเติ้ลแปลตรงตัวเลย ไม่ต้องไสข้อมูลเพิ่มเติมไหร\nข้อความ: Hello.\nคำแปล:",
}
EXPECTED_OTHER = {
    ("center", "summarization"): "จงสรุปข้อความด้านล่าง\nข้อความ: ข่าว\nสรุป:",
    ("east", "summarization"): "จงสรุปข้อความทางลุ่มเป็นภาษาอีสาน\nข้อความ: ข่าว\nสรุป:",
    ("north", "summarization"): "หื้อสรุปข้อความตางล่างหือเป็นภาษาเหนือ\nข้อความ: ข่าว\nสรุป:",
    ("south", "summarization"): "ให้สรุปข้อความข้างล่างเป็นภาษาใต้\nข้อความ:ข่าว\nสรุปว่า:",
    ("center", "conversation"): "จงสร้างบทสนทนาของคนภาคกลาง โดยพูดคุยเกี่ยวกับ ข่าว บทสนทนาไม่ควรเกิน 5 turns",
    ("east", "conversation"): "จงเขียนบทเว่าของคนภาคอีสาน โดยเว่าเกี่ยวกับ ข่าว บทสนทนาบ่ควรเกิน 5 turns",
    ("north", "conversation"): "จงสร้างบทสนหื้อเขียนกำอู้ของคนเหนือ โดยอู้เกี่ยวกับ ข่าว บทสนทนาบะควรเกิน 5 turns",
    ("south", "conversation"): "ให้เขียนบทพูดของคนใต้ โดยแหลงเกี่ยวกับ ข่าว บทพูดไม่ควรเกิน 5 ตา",
    ("center", "food"): "จงเขียนวิธีทำ ข่าว",
    ("east", "food"): "จงเขียนวิธีเฮ็ด ข่าว เป็นภาษาอีสาน",
    ("north", "food"): "หื้อเขียนวิธียะ ข่าว หื้อเป๋นภาษาเหนือ",
    ("south", "food"): "ให้เขียนวิธีทำ ข่าว เป็นภาษาใต้",
}


@pytest.mark.parametrize("dialect", sorted(EXPECTED_QA))
def test_qa_prompt(prompts, dialect):
    item = {"dialect": dialect, "task": "qa", "id": "0", **QA_ITEM}
    assert D.build_prompt(item, prompts) == EXPECTED_QA[dialect]


@pytest.mark.parametrize("dialect,task", sorted(EXPECTED_TRANSLATION))
def test_translation_prompt(prompts, dialect, task):
    item = {"dialect": dialect, "task": task, "id": "0", "text_1": "\n Hello. \n"}
    assert D.build_prompt(item, prompts) == EXPECTED_TRANSLATION[(dialect, task)]


@pytest.mark.parametrize("dialect,task", sorted(EXPECTED_OTHER))
def test_other_prompts(prompts, dialect, task):
    item = {"dialect": dialect, "task": task, "id": "0", "text_1": " ข่าว\n"}
    assert D.build_prompt(item, prompts) == EXPECTED_OTHER[(dialect, task)]


def test_a_food_prompt_and_translation_languages(prompts):
    item = {"dialect": "center", "task": "food", "id": "1", "text_1": "ต้มยำกุ้ง"}
    assert D.build_prompt(item, prompts) == "จงเขียนวิธีทำ ต้มยำกุ้ง"
    assert D.translation_languages("translation_eng_east") == ("eng", "east")
    with pytest.raises(ValueError):
        D.build_prompt({"dialect": "west", "task": "qa", "id": "0"}, prompts)


def test_shipped_samples_follow_the_benchmark_layout(prompts):
    df = load_dialect(SAMPLES)
    assert sorted(df["dialect"].unique()) == ["center", "east", "north", "south"]
    assert (df.groupby(["dialect", "task"]).size() == 3).all() and len(df) == 72
    assert set(df[df["task"].isin(["conversation", "food"])]["text_2"]) == {"."}
    summ = df[df["task"] == "summarization"].groupby("id")["text_1"].nunique()
    assert (summ == 1).all()  # the same Central article in every dialect
    eng = df[df["task"].str.startswith("translation_eng_")].groupby("id")["text_1"].nunique()
    assert (eng == 1).all()
    for item in df.to_dict("records"):
        prompt = D.build_prompt(item, prompts)
        assert "[" not in prompt and prompt.strip()


class CharTokenizer:
    """One token per character (enough to test the prompt cap)."""

    def __call__(self, text, add_special_tokens=False):
        return SimpleNamespace(input_ids=[ord(c) for c in text])

    def decode(self, ids, skip_special_tokens=True):
        return "".join(chr(i) for i in ids)


def chat_model(name="fake-local", *, local=True, fail_on_call=None, reply=None) -> FakeModel:
    """A scripted chat model; ``local``: with a character tokenizer and a 10-character chat template."""
    reply = reply or (lambda messages: "ตอบ " + messages[-1]["content"][-6:])
    if not local:
        return FakeModel(name, reply=reply, fail_on_call=fail_on_call)
    return FakeModel(
        name,
        reply=reply,
        fail_on_call=fail_on_call,
        tokenizer=CharTokenizer(),
        render_chat=lambda messages: "<u>" + messages[0]["content"] + "</u><m>",
    )


def chats(model: FakeModel) -> list[dict]:
    """The model's chat calls: batch size, settings and the conversations sent."""
    return [
        {**settings, "messages": batch} for (kind, settings), batch in zip(model.calls, model.inputs) if kind == "chat"
    ]


@pytest.fixture()
def items() -> pd.DataFrame:
    df = load_dialect(SAMPLES, dialects=["center", "east"])
    return df[df["task"].isin(["qa", "food"])].reset_index(drop=True)  # 12 items


def test_run_generation_paper_settings_and_resume(items, tmp_path):
    model = chat_model()
    out = D.run_generation(model, items, outputs=tmp_path, batch_size=5, progress=False)
    assert [c["n"] for c in chats(model)] == [5, 5, 2]
    assert {(c["temperature"], c["seed"], c["max_new_tokens"], c["top_p"]) for c in chats(model)} == {
        (0.2, 42, 3000, 1.0)
    }
    first = chats(model)[0]["messages"][0]
    assert len(first) == 1 and first[0]["role"] == "user"
    assert list(out["output"]) == ["ตอบ " + p[-6:] for p in out["prompt"]]
    card = json.loads((Path(out.attrs["run_dir"]) / "run_card.json").read_text(encoding="utf-8"))
    assert card["config"]["decoding"] == "sampling" and card["config"]["temperature"] == 0.2
    assert (
        card["config"]["seed"] == 42
        and card["config"]["max_new_tokens"] == 3000
        and card["config"]["max_prompt_tokens"] == 3000
    )
    assert card["package_versions"]["pythainlp"] == "5.0.4"
    again = chat_model()
    out2 = D.run_generation(again, items, outputs=tmp_path, batch_size=5, progress=False)
    assert again.calls == [] and list(out2["output"]) == list(out["output"])


def test_run_generation_resumes_after_a_crash(items, tmp_path):
    crashing = chat_model(fail_on_call=2)
    with pytest.raises(RuntimeError):
        D.run_generation(crashing, items, outputs=tmp_path / "a", batch_size=4, progress=False)
    resumed = chat_model()
    out = D.run_generation(resumed, items, outputs=tmp_path / "a", batch_size=4, progress=False)
    assert sum(c["n"] for c in chats(resumed)) == 8  # only the items the crash lost
    clean = D.run_generation(chat_model(), items, outputs=tmp_path / "b", batch_size=4, progress=False)
    assert list(out["output"]) == list(clean["output"])
    lines = (Path(out.attrs["run_dir"]) / "items.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 12 and json.loads(lines[0])["key"] == "center/qa/0"


def test_greedy_and_api_settings_are_recorded(items, tmp_path):
    sampled = D.run_generation(chat_model(), items, outputs=tmp_path, progress=False)
    greedy_model = chat_model()
    greedy = D.run_generation(greedy_model, items, outputs=tmp_path, greedy=True, max_new_tokens=48, progress=False)
    assert {c["temperature"] for c in chats(greedy_model)} == {0.0} and {
        c["max_new_tokens"] for c in chats(greedy_model)
    } == {48}
    assert greedy.attrs["run_dir"] != sampled.attrs["run_dir"] and greedy.attrs["config"]["decoding"] == "greedy"
    api = chat_model("fake-api", local=False)
    out = D.run_generation(api, items, outputs=tmp_path, progress=False)
    assert {(c["temperature"], c["seed"], c["max_new_tokens"]) for c in chats(api)} == {(0.0, 42, 3000)}
    assert out.attrs["config"]["model_kind"] == "api" and out.attrs["config"]["max_prompt_tokens"] is None


def test_token_named_settings_survive_in_the_run_card(items, tmp_path):
    """redact() drops secret-looking keys (``token``, ``hf_token``), not ``max_new_tokens``/``max_prompt_tokens``."""
    from thai_eval_utils.core.provenance import redact

    assert redact({"max_new_tokens": 7, "max_prompt_tokens": 9, "hf_token": "x", "token": "y"}) == {
        "max_new_tokens": 7,
        "max_prompt_tokens": 9,
    }
    out = D.run_generation(
        chat_model(), items.head(1), outputs=tmp_path, max_new_tokens=7, max_prompt_tokens=90, progress=False
    )
    run_dir = Path(out.attrs["run_dir"])
    card = json.loads((run_dir / "run_card.json").read_text(encoding="utf-8"))
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    assert (card["config"]["max_new_tokens"], card["config"]["max_prompt_tokens"]) == (7, 90)
    assert (summary["config"]["max_new_tokens"], summary["config"]["max_prompt_tokens"]) == (7, 90)


def test_a_run_stored_under_the_old_config_keys_is_resumed(items, tmp_path):
    """A run folder as thai-eval wrote it before ``max_new``/``prompt_cap`` were renamed: the config dict of that
    version, written through RunStore.open with the same identity, data files and templates, in store format 1 (no
    ``store_format`` in the card). The new run finds it, calls the model for the unfinished items only and records
    ``migrated_from`` in the card."""
    from thai_eval_utils.core.migrate import migrate_card
    from thai_eval_utils.core.store import RunStore

    prompts = D.load_prompts()
    old_config = {
        "decoding": "sampling",
        "temperature": 0.2,
        "top_p": 1.0,
        "seed": 42,
        "max_new": 3000,
        "prompt_cap": 3000,
        "model_kind": "local",
        "system_prompt": None,
        "n_shot": 0,
        "prompt_source": prompts.source,
    }
    templates = {f"{d}/{t}": prompts.prompts[d][t] for d in ("center", "east") for t in ("food", "qa")}
    old = RunStore.open(
        "fake-local",
        "dialect/generation",
        old_config,
        model_identity={"name": "fake-local", "source": "test double"},
        data_files=[str(p) for p in items.attrs["files"]],
        prompt_templates=templates,
        outputs=tmp_path,
    )
    finished = items.head(5).to_dict("records")
    for it in finished:
        old.append(
            D.item_key(it),
            {
                "dialect": it["dialect"],
                "task": it["task"],
                "id": str(it["id"]),
                "prompt": "p",
                "prompt_len": 1,
                "prompt_truncated": False,
                "output": f"old {it['id']}",
            },
        )
    old.close()  # that run ended (its process let go of the run)
    card = json.loads(old.card_path.read_text(encoding="utf-8"))
    del card["store_format"]  # format 1 cards did not record it
    old.card_path.write_text(json.dumps(card), encoding="utf-8")
    model = chat_model()
    out = D.run_generation(model, items, outputs=tmp_path, progress=False)
    sent = [m[0]["content"] for c in chats(model) for m in c["messages"]]
    assert len(sent) == 7 and sent == [D.build_prompt(it, prompts) for it in items.to_dict("records")[5:]]
    assert list(out["output"][:5]) == [f"old {it['id']}" for it in finished]
    run_dir = Path(out.attrs["run_dir"])
    card = json.loads((run_dir / "run_card.json").read_text(encoding="utf-8"))
    assert card["migrated_from"] == old.config_id and run_dir.name == card["config_id"] != old.config_id
    assert not old.root.exists() and card["config"]["max_new_tokens"] == 3000 and "max_new" not in card["config"]
    assert len((run_dir / "items.jsonl").read_text(encoding="utf-8").splitlines()) == 12
    assert migrate_card({"config": old_config})["config"] == out.attrs["config"] and card["store_format"] == 2


def test_local_and_api_models_by_protocol(tiny_local_model):
    """A model is local to the dialect benchmark when it is a TokenizingModel (tokenizer + chat template)."""
    from thai_eval_utils.backend.openai_client import ApiModel
    from thai_eval_utils.core.protocols import LoglikelihoodModel, Model, TokenizingModel

    api = ApiModel("gpt-4o-2024-05-13", base_url="http://127.0.0.1:9/v1", api_key="sk-test")
    assert isinstance(tiny_local_model, TokenizingModel) and not D.is_api_model(tiny_local_model)
    assert isinstance(api, Model) and not isinstance(api, TokenizingModel) and D.is_api_model(api)
    assert isinstance(chat_model(), TokenizingModel) and D.is_api_model(chat_model(local=False))
    assert isinstance(chat_model(local=False), LoglikelihoodModel)  # the one fake satisfies every protocol it can


def test_prompt_cap_keeps_the_template(items, tmp_path):
    model = chat_model()
    content = "ก" * 30
    assert D.cap_prompt(model, content, 20) == ("ก" * 10, 40, True)  # 40 formatted chars -> cut 20 from the message
    assert D.cap_prompt(model, content, 40) == (content, 40, False)
    assert D.cap_prompt(chat_model(local=False), content, 20) == (content, None, False)
    out = D.run_generation(model, items.head(2), outputs=tmp_path, max_prompt_tokens=60, progress=False)
    assert list(out["prompt_truncated"]) == [True, True]
    assert all(len(m[0]["content"]) == 50 for m in chats(model)[0]["messages"])


def test_score_generations_perfect_outputs():
    df = load_dialect(SAMPLES, dialects=["center", "east"])
    df = df.assign(model="m", output=df["text_2"])
    scores = D.score_generations(df)
    assert set(scores["task"]) == {
        "qa",
        "summarization",
        "translation_eng_center",
        "translation_center_eng",
        "translation_eng_east",
        "translation_east_eng",
    }
    assert set(scores["metric"]) == {"rougeL", "bleu", "sacrebleu", "chrf"}
    rouge = scores[scores["metric"] == "rougeL"]
    assert (rouge["value"] == 100.0).all() and (rouge["n"] == 3).all()
    bleu = scores[(scores["metric"] == "bleu") & scores["task"].str.startswith("translation")]
    assert bleu["value"].tolist() == pytest.approx([100.0] * 4)
    assert set(scores["pythainlp"]) == {"5.0.4"}
    assert set(scores[scores["task"] == "translation_east_eng"]["table_task"]) == {"translation_dialect_to_en"}


def test_select_items_by_family_and_limit_keeps_the_file_list():
    df = load_dialect(SAMPLES)
    picked = D.select_items(df, tasks=["translation_dialect_to_en", "food"], limit=2)
    assert sorted(picked["task"].unique()) == [
        "food",
        "translation_center_eng",
        "translation_east_eng",
        "translation_north_eng",
        "translation_south_eng",
    ]
    assert (picked.groupby(["dialect", "task"]).size() == 2).all() and list(picked["id"][:2]) == ["0", "1"]
    assert picked.attrs["files"] == df.attrs["files"] and len(df.attrs["files"]) == 24
    with pytest.raises(ValueError):
        D.select_items(df, tasks=["translation"])


def _summary(out: pd.DataFrame) -> dict:
    return json.loads((Path(out.attrs["run_dir"]) / "summary.json").read_text(encoding="utf-8"))


def _direct(out: pd.DataFrame, dialect: str, task: str) -> tuple[list[str], list[str]]:
    part = out[(out["dialect"] == dialect) & (out["task"] == task)]
    return list(part["output"]), list(part["text_2"])


@pytest.fixture()
def scored_items() -> pd.DataFrame:
    """Two real sample items per dialect and task: Central and Isan QA, English -> dialect, and food (unscored)."""
    df = load_dialect(SAMPLES, dialects=["center", "east"])
    return D.select_items(df, tasks=["qa", "translation_en_to_dialect", "food"], limit=2)  # 12 items


def test_run_summary_holds_the_scores_of_a_tiny_model(tiny_local_model, scored_items, tmp_path):
    """A real generation run: the summary's ROUGE-L / BLEU per dialect and task and its ΔDiff values are
    exactly what the metric functions give on the stored outputs."""
    from thai_eval_utils.dialect import metrics as M

    out = D.run_generation(
        tiny_local_model, scored_items, outputs=tmp_path, greedy=True, max_new_tokens=12, progress=False
    )
    summary = _summary(out)
    tasks = {"center": ("qa", "translation_eng_center"), "east": ("qa", "translation_eng_east")}
    assert set(summary["scores"]) == {
        f"{d}/{t}/{m}" for d, ts in tasks.items() for t in ts for m in ("rougeL", "bleu", "sacrebleu", "chrf")
    }  # no food: no reference
    for d, ts in tasks.items():
        for t in ts:
            hyp, ref = _direct(out, d, t)
            rouge, bleu = summary["scores"][f"{d}/{t}/rougeL"], summary["scores"][f"{d}/{t}/bleu"]
            assert rouge["value"] == pytest.approx(M.rouge_l(hyp, ref)) and rouge["n"] == 2
            assert bleu["value"] == pytest.approx(M.bleu(hyp, ref)) and bleu["n"] == 2
            assert rouge["name"] == f"{d}/{t}/rougeL" and "pythainlp:5.0.4" in rouge["signature"]
    assert set(summary["delta_diff"]) == {
        f"east/{f}/{m}" for f in ("qa", "translation_en_to_dialect") for m in ("rougeL", "bleu", "sacrebleu", "chrf")
    }
    qa_delta = M.rouge_l(*_direct(out, "center", "qa")) - M.rouge_l(*_direct(out, "east", "qa"))
    assert summary["delta_diff"]["east/qa/rougeL"]["value"] == pytest.approx(qa_delta)
    bleu_delta = M.bleu(*_direct(out, "center", "translation_eng_center")) - M.bleu(
        *_direct(out, "east", "translation_eng_east")
    )
    assert summary["delta_diff"]["east/translation_en_to_dialect/bleu"]["value"] == pytest.approx(bleu_delta)
    assert summary["n_items"] == 12 and summary["n_generated"] == 12


def reference_model(items: pd.DataFrame) -> FakeModel:
    """Answers every item with its reference (Central) or the first half of it (other dialects)."""
    prompts = D.load_prompts()
    answers = {
        D.build_prompt(it, prompts): (
            it["text_2"] if it["dialect"] == "center" else it["text_2"][: len(it["text_2"]) // 2]
        )
        for it in items.to_dict("records")
    }
    return chat_model("reference-echo", reply=lambda messages: answers[messages[-1]["content"]])


def test_run_summary_scores_and_deltas_with_known_outputs(scored_items, tmp_path):
    """Central answers = references (100), Isan answers = half references: positive ΔDiff, as computed directly."""
    from thai_eval_utils.dialect import metrics as M

    out = D.run_generation(reference_model(scored_items), scored_items, outputs=tmp_path, progress=False)
    scores, deltas = _summary(out)["scores"], _summary(out)["delta_diff"]
    assert scores["center/qa/rougeL"]["value"] == pytest.approx(100.0)
    assert scores["center/translation_eng_center/bleu"]["value"] == pytest.approx(100.0)
    east_qa = M.rouge_l(*_direct(out, "east", "qa"))
    east_bleu = M.bleu(*_direct(out, "east", "translation_eng_east"))
    assert 0 < east_qa < 100 and 0 < east_bleu < 100
    assert scores["east/qa/rougeL"]["value"] == pytest.approx(east_qa)
    assert scores["east/translation_eng_east/bleu"]["value"] == pytest.approx(east_bleu)
    assert deltas["east/qa/rougeL"]["value"] == pytest.approx(100.0 - east_qa)
    assert deltas["east/translation_en_to_dialect/bleu"]["value"] == pytest.approx(100.0 - east_bleu)
    assert deltas["east/qa/rougeL"]["n"] == 2 and deltas["east/qa/rougeL"]["signature"].startswith(
        "delta_diff|central-minus-dialect|"
    )
    # the same numbers as score_generations + metrics.delta_diff give on the returned table
    table = D.score_generations(out)
    expected = M.delta_diff(table)
    row = expected[(expected["task"] == "qa") & (expected["metric"] == "rougeL")].iloc[0]
    assert deltas["east/qa/rougeL"]["value"] == pytest.approx(row["delta"])
    # a rerun (nothing left to generate) writes the same scores
    again = D.run_generation(reference_model(scored_items), scored_items, outputs=tmp_path, progress=False)
    assert _summary(again)["scores"] == scores and _summary(again)["n_generated"] == 0


def test_the_paper_metrics_are_metric_objects():
    """Each scored task's metrics are metric objects (tasks.metrics.Metric) with the paper's numbers: ROUGE-L per
    item and BLEU over the corpus on newmm words with whitespace kept, sacrebleu BLEU on 13a for English
    references only."""
    import math

    from thai_eval_utils.dialect import metrics as M
    from thai_eval_utils.tasks.metrics import Metric

    qa = {m.name: m for m in M.task_metrics("qa")}
    assert list(qa) == ["rougeL", "bleu", "sacrebleu", "chrf"] and all(isinstance(m, Metric) for m in qa.values())
    # hyp ฉัน _ กิน _ ข้าว (5 tokens), ref ฉัน _ กิน _ ข้าว _ แล้ว (7): LCS 5 -> F = 2 * 5/7 / (12/7) = 10/12
    assert qa["rougeL"].kind == "mean" and qa["rougeL"].score_item("ฉัน กิน ข้าว", "ฉัน กิน ข้าว แล้ว") == pytest.approx(
        100 * 10 / 12
    )
    # every hypothesis n-gram matches; BP = exp(1 - 7/5)
    assert qa["bleu"].kind == "corpus" and qa["bleu"](["ฉัน กิน ข้าว"], ["ฉัน กิน ข้าว แล้ว"]) == pytest.approx(
        100 * math.exp(-0.4)
    )
    assert qa["bleu"] == M.PAPER_BLEU and qa["bleu"].spec() == {
        "metric": "thai_eval_utils.dialect.metrics:PaperBleu",
        "name": "bleu",
        "tokenizer": "newmm",
        "max_order": 4,
    }
    to_english = {m.name: m for m in M.task_metrics("translation_east_eng", tokenizer="longest")}
    assert (qa["sacrebleu"].target_lang, to_english["sacrebleu"].target_lang) == ("th", "en")
    assert "|tok:13a|" in to_english["sacrebleu"].signature() and "tok:none" in qa["sacrebleu"].signature()
    assert to_english["rougeL"].signature() == "rougeL|rouge-score|f1-mean|tok:longest|keep_ws:yes|pythainlp:5.0.4"


def test_a_dialect_task_is_declared_and_run_by_the_task_runner(tmp_path):
    """dialect_task: one dialect's scored task over its own file, run by tasks.runner.run_task: the benchmark's prompt
    as one user turn, and every score what the paper's metric code gives on the same replies."""
    from thai_eval_utils.dialect import metrics as M
    from thai_eval_utils.tasks.runner import run_task

    prompts = D.load_prompts()
    df = load_dialect(SAMPLES, dialects=["east"])
    rows = df[df["task"] == "translation_east_eng"].to_dict("records")
    answers = {D.build_prompt(r, prompts): r["text_2"][: len(r["text_2"]) // 2] for r in rows}
    model = chat_model("half", local=False, reply=lambda messages: answers[messages[-1]["content"]])
    task = D.dialect_task("east", "translation_east_eng", prompts=prompts).bind(SAMPLES)
    run = run_task(model, task, outputs=tmp_path, progress=False)
    assert task.name == "dialect_east_translation_east_eng" and run.task == task.name
    assert [m for c in chats(model) for m in c["messages"]] == [
        [{"role": "user", "content": D.build_prompt(r, prompts)}] for r in rows
    ]
    hyps = [answers[D.build_prompt(r, prompts)] for r in rows]
    expected = M.task_scores("translation_east_eng", hyps, [r["text_2"] for r in rows])
    assert {m: (s["value"], s["n"]) for m, s in run.scores.items()} == {s.name: (s.value, 3) for s in expected}
    assert "|tok:13a|" in run.scores["sacrebleu"]["signature"]
    with pytest.raises(ValueError, match="no scored task 'food' for dialect 'east'"):
        D.dialect_task("east", "food")
    with pytest.raises(ValueError, match="unknown dialect 'west'"):
        D.dialect_task("west", "qa")


def test_a_generation_run_is_one_declaration_with_the_runs_decoding(items, tmp_path):
    """A run of every dialect and task is one declared task: the run's decoding, each row's prompt (its own dialect
    and task) as one user turn; the chat calls carry that decoding."""
    prompts = D.load_prompts()
    model = chat_model()
    out = D.run_generation(model, items, outputs=tmp_path, greedy=True, max_new_tokens=48, progress=False)
    task = D.generation_task(prompts, out.attrs["config"])
    decl = task.declaration()
    assert (decl["temperature"], decl["top_p"], decl["seed"], decl["max_new_tokens"]) == (0.0, 1.0, 42, 48)
    assert decl["prompt"] == ({"role": "user", "content": "{prompt}"},)
    assert decl["process_docs"] == {
        "function": "thai_eval_utils.dialect.generation:AddPrompt",
        "source": prompts.source,
    }
    row = {"dialect": "center", "task": "food", "id": "1", "text_1": "ต้มยำกุ้ง"}
    assert task.process_docs([row]) == [{**row, "prompt": "จงเขียนวิธีทำ ต้มยำกุ้ง"}]
    assert {(c["temperature"], c["top_p"], c["seed"], c["max_new_tokens"]) for c in chats(model)} == {
        (0.0, 1.0, 42, 48)
    }
    assert [m[0]["content"] for c in chats(model) for m in c["messages"]] == list(out["prompt"])
