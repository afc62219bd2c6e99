"""Tests for the benchmark loaders (h6.data, thaicli.data, dialect.data): Thai-H6, ThaiCLI and dialect loaders on official layouts, flat files,
the shipped samples, and every kind of bad input (the message names file, row and field)."""

from __future__ import annotations

import hashlib
import json
import pickle
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from thai_eval_utils.core.errors import ThaiEvalDataError, ThaiEvalError
from thai_eval_utils.core.records import write_jsonl
from thai_eval_utils.dialect.data import DIALECTS, convert_dialect_pickle, dialect_tasks, load_dialect
from thai_eval_utils.h6.data import H6_TASKS, H6TaskData, load_h6_task
from thai_eval_utils.thaicli.data import load_thaicli

REPO = Path(__file__).resolve().parents[1]
SARA_AM_DECOMPOSED = "\u0e4d\u0e32"

# ------------------------------------------------------------------ tiny fakes of each task

ARC = [
    {
        "id": "a1",
        "question": "ข้อใดเป็นสัตว์",
        "choices": {"text": ["แมว", "หิน", "น้ำ", "ลม"], "label": ["A", "B", "C", "D"]},
        "answerKey": "A",
    },
    {
        "id": "a2",
        "question": "ข้อใดเป็นพืช",
        "choices": {"text": ["รถ", "ข้าว", "เหล็ก"], "label": ["1", "2", "3"]},
        "answerKey": "2",
    },
]
HELLASWAG = [
    {
        "ind": 1,
        "activity_label": "ทำอาหาร",
        "ctx_a": "เขาตั้งกระทะ",
        "ctx_b": "เขา",
        "ctx": "เขาตั้งกระทะ เขา",
        "endings": ["ผัดผัก", "นอน", "ร้องเพลง", "วิ่ง"],
        "label": "0",
    },
]
MMLU = {  # subject -> (few-shot split, few-shot rows, test rows)
    "zoology": (
        "validation",
        [{"question": "สัตว์ใดบินได้", "choices": ["นก", "ปลา", "หมู", "วัว"], "answer": 0}],
        [
            {"question": "สัตว์ใดว่ายน้ำ", "choices": ["นก", "ปลา", "หมู", "วัว"], "answer": 1},
            {"question": "สัตว์ใดร้องเหมียว", "choices": ["นก", "ปลา", "แมว", "วัว"], "answer": 2},
        ],
    ),
    "astronomy": (
        "train",
        [{"question": "ดาวใดใกล้โลกที่สุด", "choices": ["ดวงอาทิตย์", "ดาวอังคาร", "ดาวพุธ", "ดาวเสาร์"], "answer": 0}],
        [{"question": "โลกโคจรรอบอะไร", "choices": ["ดวงจันทร์", "ดาวอังคาร", "ดวงอาทิตย์", "ดาวเสาร์"], "answer": 2}],
    ),
}
TRUTHFULQA = [
    {
        "question": "ค้างคาวตาบอดไหม",
        "mc1_targets": {"choices": ["ไม่", "ใช่"], "labels": [1, 0]},
        "mc2_targets": {"choices": ["ใช่", "ไม่", "มองเห็นได้"], "labels": [0, 1, 1]},
    },
]
WINOGRANDE = [{"sentence": "แก้วตกบนพรมแต่ไม่แตกเพราะ _ นุ่ม", "option1": "แก้ว", "option2": "พรม", "answer": "2"}]
GSM8K = [{"question": "มีส้ม 3 ผล กินไป 1 ผล เหลือกี่ผล", "answer": "3 - 1 = <<3-1=2>>2\n#### 2"}]


def _write_official_parquet(root: Path) -> Path:
    """The UpstageAI/ThaiCLI_H6 layout under root/h6 as Parquet (nested columns become structs/lists)."""
    h6 = root / "h6"

    def put(folder: str, stem: str, rows: list[dict]) -> None:
        (h6 / folder).mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_parquet(h6 / folder / f"{stem}.parquet", index=False)

    put("th_arc_challenge", "th_arc_challenge_test", ARC)
    put("th_arc_challenge", "th_arc_challenge_validation", ARC[:1])
    put("th_hellaswag", "th_hellaswag_validation", HELLASWAG)
    put("th_hellaswag", "th_hellaswag_train", HELLASWAG)
    for subject, (split, shots, tests) in MMLU.items():
        put(f"th_mmlu/{subject}", f"th_mmlu_{subject}_test", tests)
        put(f"th_mmlu/{subject}", f"th_mmlu_{subject}_{split}", shots)
    put("th_truthfulqa", "th_truthfulqa_validation", TRUTHFULQA)
    put("th_winogrande", "th_winogrande_validation", WINOGRANDE)
    put("th_winogrande", "th_winogrande_train", WINOGRANDE)
    put("th_gsm8k", "th_gsm8k_test", GSM8K)
    put("th_gsm8k", "th_gsm8k_train", GSM8K)
    return root


@pytest.fixture()
def official(tmp_path) -> Path:
    return _write_official_parquet(tmp_path / "ThaiCLI_H6")


def _err(exc: pytest.ExceptionInfo, path: Path, row: int | None, field: str | None) -> str:
    """Assert the error names path, row and field; return the reason."""
    e = exc.value
    assert isinstance(e, ThaiEvalDataError)
    assert (e.path, e.row, e.field) == (str(path), row, field)
    assert str(e).startswith(f"{path}, row {row}, field {field!r}: ")
    return e.reason


# ------------------------------------------------------------------ Thai-H6


def test_official_parquet_layout_all_tasks(official):
    arc = load_h6_task(official, "th_arc")
    assert isinstance(arc, H6TaskData) and arc.task == "th_arc" and arc.source == str(official)
    assert arc.docs == ARC and arc.fewshot_pool == ARC[:1] and arc.fewshot_by_subject is None
    assert type(arc.docs[0]["choices"]["text"]) is list  # not a numpy array
    assert arc.files == [
        official / "h6/th_arc_challenge/th_arc_challenge_test.parquet",
        official / "h6/th_arc_challenge/th_arc_challenge_validation.parquet",
    ]
    hs = load_h6_task(official, "th_hellaswag")
    assert hs.docs == HELLASWAG and hs.fewshot_pool == HELLASWAG
    tqa = load_h6_task(official, "th_truthfulqa")
    assert tqa.docs == TRUTHFULQA and tqa.fewshot_pool == [] and len(tqa.files) == 1
    assert load_h6_task(official, "th_winogrande").docs == WINOGRANDE
    gsm = load_h6_task(official, "th_gsm8k")
    assert gsm.docs == GSM8K and gsm.files[1].name == "th_gsm8k_train.parquet"


def test_official_mmlu_subjects_sorted_train_or_validation(official):
    mmlu = load_h6_task(official, "th_mmlu")
    # astronomy < zoology; zoology's few-shot file is named validation, astronomy's train.
    assert [d["subject"] for d in mmlu.docs] == ["astronomy", "zoology", "zoology"]
    assert mmlu.docs[0] == {**MMLU["astronomy"][2][0], "subject": "astronomy"}
    assert mmlu.docs[2]["choices"] == ["นก", "ปลา", "แมว", "วัว"] and type(mmlu.docs[2]["choices"]) is list
    assert mmlu.fewshot_by_subject == {
        "astronomy": [{**MMLU["astronomy"][1][0], "subject": "astronomy"}],
        "zoology": [{**MMLU["zoology"][1][0], "subject": "zoology"}],
    }
    assert mmlu.fewshot_pool == mmlu.fewshot_by_subject["astronomy"] + mmlu.fewshot_by_subject["zoology"]
    assert [p.name for p in mmlu.files] == [
        "th_mmlu_astronomy_test.parquet",
        "th_mmlu_astronomy_train.parquet",
        "th_mmlu_zoology_test.parquet",
        "th_mmlu_zoology_validation.parquet",
    ]


def test_source_may_be_h6_folder_or_task_folder(official):
    assert load_h6_task(official / "h6", "th_gsm8k").docs == GSM8K
    assert load_h6_task(official / "h6" / "th_gsm8k", "th_gsm8k").docs == GSM8K


def test_flat_jsonl_and_csv_without_h6_prefix(tmp_path):
    write_jsonl(tmp_path / "th_arc_challenge" / "th_arc_challenge_test.jsonl", ARC)
    write_jsonl(tmp_path / "th_arc_challenge" / "th_arc_challenge_validation.jsonl", ARC)
    tqa_dir = tmp_path / "th_truthfulqa"
    tqa_dir.mkdir()
    pd.DataFrame(
        [{k: json.dumps(v, ensure_ascii=False) if isinstance(v, dict) else v for k, v in r.items()} for r in TRUTHFULQA]
    ).to_csv(tqa_dir / "th_truthfulqa_validation.csv", index=False)
    assert load_h6_task(tmp_path, "th_arc").docs == ARC
    assert load_h6_task(tmp_path, "th_truthfulqa").docs == TRUTHFULQA


def test_arc_prefers_train_pool_over_validation(official):
    d = official / "h6" / "th_arc_challenge"
    pd.DataFrame(ARC[1:]).to_parquet(d / "th_arc_challenge_train.parquet")
    assert load_h6_task(official, "th_arc").fewshot_pool == ARC[1:]


def test_mmlu_with_two_fewshot_files_is_ambiguous(official):
    d = official / "h6" / "th_mmlu" / "zoology"
    pd.DataFrame(MMLU["zoology"][1]).to_parquet(d / "th_mmlu_zoology_train.parquet")
    with pytest.raises(
        ThaiEvalDataError,
        match=r"zoology: ambiguous few-shot split \(th_mmlu_zoology_train.parquet, th_mmlu_zoology_validation.parquet\)",
    ):
        load_h6_task(official, "th_mmlu")


def test_unknown_task():
    with pytest.raises(ValueError, match="unknown Thai-H6 task 'th_piqa'"):
        load_h6_task(".", "th_piqa")


def test_missing_h6_file(tmp_path):
    with pytest.raises(ThaiEvalDataError) as exc:
        load_h6_task(tmp_path, "th_gsm8k")
    expected = tmp_path / "h6" / "th_gsm8k" / "th_gsm8k_test"
    assert str(exc.value) == f"{expected}: file not found (tried th_gsm8k_test.{{parquet,jsonl,json,csv}})"


def test_missing_fewshot_file(official):
    (official / "h6/th_gsm8k/th_gsm8k_train.parquet").unlink()
    with pytest.raises(ThaiEvalDataError, match=r"few-shot file not found \(tried train\)"):
        load_h6_task(official, "th_gsm8k")


def test_wrong_columns_name_columns_found(official):
    path = official / "h6/th_gsm8k/th_gsm8k_test.parquet"
    pd.DataFrame([{"question": "q", "solution": "#### 1"}]).to_parquet(path)
    with pytest.raises(ThaiEvalDataError) as exc:
        load_h6_task(official, "th_gsm8k")
    assert _err(exc, path, 0, "answer") == "missing field(s) 'answer'; fields found: question, solution"


def test_wrong_type(tmp_path):
    path = tmp_path / "th_hellaswag" / "th_hellaswag_validation.jsonl"
    write_jsonl(path, HELLASWAG + [{**HELLASWAG[0], "endings": "ผัดผัก"}])
    write_jsonl(tmp_path / "th_hellaswag" / "th_hellaswag_train.jsonl", HELLASWAG)
    with pytest.raises(ThaiEvalDataError) as exc:
        load_h6_task(tmp_path, "th_hellaswag")
    assert _err(exc, path, 1, "endings") == "expected list, got str 'ผัดผัก'"


BAD_GOLD = [
    (
        "th_arc",
        "th_arc_challenge",
        "test",
        ARC[0],
        {"answerKey": "E"},
        "answerKey",
        "answerKey 'E' does not pick one of the 4 choices (labels ['A', 'B', 'C', 'D'])",
    ),
    (
        "th_arc",
        "th_arc_challenge",
        "test",
        ARC[1],
        {"answerKey": "4"},
        "answerKey",
        "answerKey '4' does not pick one of the 3 choices (labels ['1', '2', '3'])",
    ),
    (
        "th_hellaswag",
        "th_hellaswag",
        "validation",
        HELLASWAG[0],
        {"label": "4"},
        "label",
        "label '4' is not an index into 4 endings",
    ),
    (
        "th_hellaswag",
        "th_hellaswag",
        "validation",
        HELLASWAG[0],
        {"label": ""},
        "label",
        "label '' is not an index into 4 endings",
    ),
    (
        "th_winogrande",
        "th_winogrande",
        "validation",
        WINOGRANDE[0],
        {"answer": "3"},
        "answer",
        "answer '3' is not '1' or '2'",
    ),
    (
        "th_winogrande",
        "th_winogrande",
        "validation",
        WINOGRANDE[0],
        {"sentence": "_ และ _"},
        "sentence",
        "sentence must contain exactly one '_' blank, found 2",
    ),
    ("th_gsm8k", "th_gsm8k", "test", GSM8K[0], {"answer": "2"}, "answer", "answer has no '#### <number>' final answer"),
    (
        "th_truthfulqa",
        "th_truthfulqa",
        "validation",
        TRUTHFULQA[0],
        {"mc1_targets": {"choices": ["ใช่", "ไม่"], "labels": [0, 1]}},
        "mc1_targets",
        "mc1 needs exactly one true answer and it must come first (mc1 = argmax is index 0)",
    ),
    (
        "th_truthfulqa",
        "th_truthfulqa",
        "validation",
        TRUTHFULQA[0],
        {"mc2_targets": {"choices": ["ไม่", "ใช่"], "labels": [1, 1]}},
        "mc2_targets",
        "mc2 needs at least one true (1) and one false (0) answer",
    ),
    (
        "th_truthfulqa",
        "th_truthfulqa",
        "validation",
        TRUTHFULQA[0],
        {"mc2_targets": {"choices": ["ไม่", "ใช่"], "labels": [1]}},
        "mc2_targets",
        "mc2_targets.labels must be 2 values 0/1, got [1]",
    ),
]


@pytest.mark.parametrize(
    "task,folder,split,good,change,field,reason", BAD_GOLD, ids=[f"{b[0]}-{b[5]}-{i}" for i, b in enumerate(BAD_GOLD)]
)
def test_gold_out_of_range_names_file_row_field(official, task, folder, split, good, change, field, reason):
    path = official / "h6" / folder / f"{folder}_{split}.parquet"
    pd.DataFrame([good, {**good, **change}]).to_parquet(path)
    with pytest.raises(ThaiEvalDataError) as exc:
        load_h6_task(official, task)
    assert _err(exc, path, 1, field) == reason


@pytest.mark.parametrize("answer,reason", [(4, "answer 4 is not 0-3 or A-D"), ("E", "answer 'E' is not 0-3 or A-D")])
def test_mmlu_answer_out_of_range(official, answer, reason):
    path = official / "h6/th_mmlu/zoology/th_mmlu_zoology_test.parquet"
    pd.DataFrame([{**MMLU["zoology"][2][0], "answer": answer}]).to_parquet(path)
    with pytest.raises(ThaiEvalDataError) as exc:
        load_h6_task(official, "th_mmlu")
    assert _err(exc, path, 0, "answer") == reason


def test_mmlu_needs_four_choices(official):
    path = official / "h6/th_mmlu/astronomy/th_mmlu_astronomy_train.parquet"
    pd.DataFrame([{**MMLU["astronomy"][1][0], "choices": ["ก", "ข", "ค"]}]).to_parquet(path)
    with pytest.raises(ThaiEvalDataError) as exc:
        load_h6_task(official, "th_mmlu")
    assert _err(exc, path, 0, "choices") == "choices has 3 item(s), expected at least 4"


def test_mmlu_letter_answers_accepted(tmp_path):
    d = tmp_path / "h6" / "th_mmlu" / "anatomy"
    write_jsonl(d / "th_mmlu_anatomy_test.jsonl", [{**MMLU["zoology"][2][0], "answer": "B"}])
    write_jsonl(d / "th_mmlu_anatomy_dev.jsonl", MMLU["zoology"][1])
    data = load_h6_task(tmp_path, "th_mmlu")
    assert data.docs[0]["answer"] == "B" and data.files[1].name == "th_mmlu_anatomy_dev.jsonl"


def test_non_utf8_h6_file(tmp_path):
    d = tmp_path / "th_gsm8k"
    d.mkdir()
    (d / "th_gsm8k_train.jsonl").write_text(json.dumps(GSM8K[0]) + "\n", encoding="utf-8")
    path = d / "th_gsm8k_test.jsonl"
    path.write_bytes(b'{"question": "' + "สาม".encode("cp874") + b'", "answer": "#### 3"}\n')
    with pytest.raises(ThaiEvalDataError) as exc:
        load_h6_task(tmp_path, "th_gsm8k")
    assert _err(exc, path, 0, "question") == "not valid UTF-8 text (byte(s) ca on line 1)"


def test_empty_h6_file(tmp_path):
    d = tmp_path / "th_truthfulqa"
    d.mkdir()
    path = d / "th_truthfulqa_validation.jsonl"
    path.write_text("", encoding="utf-8")
    with pytest.raises(ThaiEvalDataError) as exc:
        load_h6_task(tmp_path, "th_truthfulqa")
    assert str(exc.value) == f"{path}: file is empty (no records)"


def test_decomposed_sara_am_is_kept(tmp_path):
    question = "ข้อความนี้มีกี่ค" + SARA_AM_DECOMPOSED  # "คํา" with U+0E4D U+0E32
    rec = {
        **ARC[0],
        "question": question,
        "choices": {"text": ["๑ ค" + SARA_AM_DECOMPOSED, "๒ คำ"], "label": ["A", "B"]},
    }
    d = tmp_path / "th_arc_challenge"
    d.mkdir()
    pd.DataFrame([rec]).to_parquet(d / "th_arc_challenge_test.parquet")
    pd.DataFrame([rec]).to_csv(
        d / "th_arc_challenge_validation.csv", index=False
    )  # nested column as Python repr: invalid
    with pytest.raises(ThaiEvalDataError, match="invalid JSON in CSV cell"):
        load_h6_task(tmp_path, "th_arc")
    (d / "th_arc_challenge_validation.csv").unlink()
    write_jsonl(d / "th_arc_challenge_validation.jsonl", [rec])
    data = load_h6_task(tmp_path, "th_arc")
    for doc in data.docs + data.fewshot_pool:
        assert doc["question"] == question and doc["question"].endswith("\u0e04\u0e4d\u0e32")
        assert "\u0e33" not in doc["question"] and doc["choices"]["text"][0] == "๑ ค\u0e4d\u0e32"


# ------------------------------------------------------------------ shipped samples


SAMPLE_COUNTS = {  # task -> (scored docs, few-shot pool); pools cover LB's shot counts 25/10/5/0/5/5
    "th_arc": (12, 25),
    "th_hellaswag": (10, 10),
    "th_mmlu": (15, 15),
    "th_truthfulqa": (12, 0),
    "th_winogrande": (10, 5),
    "th_gsm8k": (12, 6),
}


@pytest.mark.parametrize("task", list(H6_TASKS))
def test_shipped_h6_samples_load(task):
    data = load_h6_task(REPO / "data" / "thai_h6", task)
    assert (len(data.docs), len(data.fewshot_pool)) == SAMPLE_COUNTS[task]
    assert all(p.suffix == ".jsonl" and p.is_file() for p in data.files)


def test_shipped_samples_content():
    root = REPO / "data" / "thai_h6"
    mmlu = load_h6_task(root, "th_mmlu")
    assert {k: len(v) for k, v in mmlu.fewshot_by_subject.items()} == {
        "derivatives_markets": 5,
        "investment_fundamentals": 5,
        "management": 5,
    }
    assert {p.stem.rsplit("_", 1)[1] for p in mmlu.files} == {"test", "train", "validation"}
    arc = load_h6_task(root, "th_arc")
    assert all(re.fullmatch(r"(onet|tgat|tpat1|a_level)_test_\d+", d["id"]) for d in arc.docs + arc.fewshot_pool)
    assert sum(SARA_AM_DECOMPOSED in json.dumps(d, ensure_ascii=False) for d in arc.docs) == 2
    tqa = load_h6_task(root, "th_truthfulqa")
    assert sum(d["mc2_targets"]["labels"][0] == 0 for d in tqa.docs) >= 2  # LB mc2 != masked mc2 there
    assert all(sum(d["mc2_targets"]["labels"]) >= 2 for d in tqa.docs)
    wino = load_h6_task(root, "th_winogrande")
    assert sum(d["sentence"].endswith("_") for d in wino.docs) == 1
    gsm = load_h6_task(root, "th_gsm8k")
    assert all(d["answer"].startswith("#### ") for d in gsm.docs)
    assert all("<<" in d["answer"] and ":" not in d["answer"] for d in gsm.fewshot_pool)  # ":" is an LB stop


def test_shipped_thaicli_samples():
    df = load_thaicli(REPO / "data" / "thaicli")
    assert list(df.columns) == ["id", "format", "theme", "question", "chosen", "rejected"]
    assert df["format"].value_counts().to_dict() == {"factoid": 14, "instruction": 7}
    themes = {"Royal Family", "Religion", "Culture", "Economy", "Humanity", "Lifestyle", "Politics"}
    assert df[df.format == "factoid"].groupby("theme").size().to_dict() == dict.fromkeys(themes, 2)
    assert df[df.format == "instruction"].groupby("theme").size().to_dict() == dict.fromkeys(themes, 1)
    assert df["id"].str.fullmatch(r"[0-9a-f]{32}").all() and df["id"].is_unique
    assert [p.name for p in df.attrs["files"]] == ["CLI_factoid.jsonl", "CLI_instruction.jsonl"]


def test_shipped_dialect_samples():
    df = load_dialect(REPO / "data" / "dialect")
    assert set(df["dialect"]) == set(DIALECTS)
    for d in DIALECTS:
        assert set(df.loc[df.dialect == d, "task"]) == set(dialect_tasks(d))
    assert df["text_2"].map(lambda v: isinstance(v, str)).all()


# ------------------------------------------------------------------ ThaiCLI

CLI_ROWS = [
    {
        "id": "0123456789abcdef0123456789abcdef",
        "question": {"content": "วันพ่อแห่งชาติคือวันใด", "role": "user"},
        "answers": [{"content": "5 ธันวาคม", "score": 1}, {"content": "1 มกราคม", "score": 0}],
        "theme": "Royal Family",
    },
    {
        "id": "fedcba9876543210fedcba9876543210",
        "question": "ไหว้พระอย่างไร",
        "answers": [{"content": "ผิด", "score": 0}, {"content": "กราบสามครั้ง", "score": 1}],
        "theme": "Religion",
    },
]


def test_thaicli_official_parquet_root_and_cli_folder(tmp_path):
    cli = tmp_path / "cli"
    cli.mkdir()
    pd.DataFrame(CLI_ROWS[:1] + [{**CLI_ROWS[1], "question": {"content": "ไหว้พระอย่างไร", "role": "user"}}]).to_parquet(
        cli / "CLI_factoid.parquet"
    )
    pd.DataFrame(CLI_ROWS[1:]).to_parquet(cli / "CLI_instruction.parquet")  # question as a plain string
    for source in (tmp_path, cli):
        df = load_thaicli(source)
        assert df.to_dict("records") == [
            {
                "id": CLI_ROWS[0]["id"],
                "format": "factoid",
                "theme": "Royal Family",
                "question": "วันพ่อแห่งชาติคือวันใด",
                "chosen": "5 ธันวาคม",
                "rejected": "1 มกราคม",
            },
            {
                "id": CLI_ROWS[1]["id"],
                "format": "factoid",
                "theme": "Religion",
                "question": "ไหว้พระอย่างไร",
                "chosen": "กราบสามครั้ง",
                "rejected": "ผิด",
            },
            {
                "id": CLI_ROWS[1]["id"],
                "format": "instruction",
                "theme": "Religion",
                "question": "ไหว้พระอย่างไร",
                "chosen": "กราบสามครั้ง",
                "rejected": "ผิด",
            },
        ]
    assert [p.name for p in df.attrs["files"]] == ["CLI_factoid.parquet", "CLI_instruction.parquet"]


def test_thaicli_flat_csv_with_format_column(tmp_path):
    path = tmp_path / "my_triplets.csv"
    pd.DataFrame(
        [
            {"question": "ข้อหนึ่ง", "chosen": "ดี", "rejected": "ไม่ดี", "theme": "Culture", "format": "Factoid"},
            {"question": "ข้อสอง", "chosen": "ดี", "rejected": "ไม่ดี", "theme": "Economy", "format": "instruction"},
        ]
    ).to_csv(path, index=False)
    df = load_thaicli(path)
    assert df["format"].tolist() == ["factoid", "instruction"]
    assert df["id"].tolist()[0] == hashlib.md5("factoid\nข้อหนึ่ง".encode()).hexdigest()


def test_thaicli_single_official_csv_json_cells(tmp_path):
    path = tmp_path / "CLI_instruction.csv"
    pd.DataFrame(
        [{k: json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v for k, v in CLI_ROWS[0].items()}]
    ).to_csv(path, index=False)
    df = load_thaicli(path)
    assert df.loc[0, ["format", "question", "chosen"]].tolist() == ["instruction", "วันพ่อแห่งชาติคือวันใด", "5 ธันวาคม"]


def test_thaicli_two_chosen_answers_rejected(tmp_path):
    path = tmp_path / "CLI_factoid.jsonl"
    bad = {**CLI_ROWS[1], "answers": [{"content": "ก", "score": 1}, {"content": "ข", "score": 1}]}
    write_jsonl(path, [CLI_ROWS[0], bad])
    with pytest.raises(ThaiEvalDataError) as exc:
        load_thaicli(path)
    assert _err(exc, path, 1, "answers") == (
        "expected exactly one chosen (score 1) and one rejected (score 0) answer, found 2 chosen, 0 rejected and 0 other"
    )


def test_thaicli_bad_rows(tmp_path):
    path = tmp_path / "CLI_factoid.jsonl"
    write_jsonl(path, [CLI_ROWS[0], {**CLI_ROWS[1], "id": CLI_ROWS[0]["id"]}])
    with pytest.raises(ThaiEvalDataError) as exc:
        load_thaicli(path)
    assert _err(exc, path, 1, "id") == f"duplicate id {CLI_ROWS[0]['id']!r} (also row 0)"
    write_jsonl(path, [{**CLI_ROWS[0], "question": {"role": "user"}}])
    with pytest.raises(ThaiEvalDataError) as exc:
        load_thaicli(path)
    assert _err(exc, path, 0, "question") == "question must be a string or a {'content', 'role'} message"
    write_jsonl(path, [{k: v for k, v in CLI_ROWS[0].items() if k != "theme"}])
    with pytest.raises(ThaiEvalDataError) as exc:
        load_thaicli(path)
    assert _err(exc, path, 0, "theme") == "missing field(s) 'theme'; fields found: id, question, answers"
    flat = tmp_path / "triplets.jsonl"
    write_jsonl(flat, [{"question": "ก", "chosen": "ข", "rejected": "ค", "theme": "Culture"}])
    with pytest.raises(ThaiEvalDataError) as exc:
        load_thaicli(flat)
    assert (
        _err(exc, flat, 0, "format") == "no format: name the file CLI_factoid/CLI_instruction or add a 'format' column"
    )
    flat2 = tmp_path / "CLI_factoid_flat.jsonl"
    write_jsonl(flat2, [{"question": "ก", "chosen": "ข", "theme": "Culture"}])
    with pytest.raises(ThaiEvalDataError) as exc:
        load_thaicli(flat2)
    assert _err(exc, flat2, 0, "rejected") == "missing field 'rejected'; fields found: question, chosen, theme"


def test_thaicli_missing(tmp_path):
    with pytest.raises(ThaiEvalDataError) as exc:
        load_thaicli(tmp_path)
    assert str(exc.value) == f"{tmp_path}: no ThaiCLI file found (expected CLI_factoid.* and/or CLI_instruction.*)"
    with pytest.raises(ThaiEvalDataError, match="file or folder not found"):
        load_thaicli(tmp_path / "nope")


# ------------------------------------------------------------------ dialects

DIALECT_DATA = {
    "center": {
        "qa": [{"id": 7, "question": "ใคร", "context": "สมชายไปตลาด", "text_2": "สมชาย"}],
        "translation_eng_center": [{"text_1": "Hello", "text_2": "สวัสดี"}, {"text_1": "Thanks", "text_2": "ขอบคุณ"}],
        "food": [{"id": "f1", "text_1": "ส้มตำ"}],
    },
    "east": {
        "qa": [{"id": 0, "question": "ไผ", "context": "สมชายไปตลาด", "text_2": None}],
        "summarization": [{"id": 0, "text_1": "บทความ", "text_2": "สรุป"}],
        "conversation": [{"id": 0, "text_1": "หัวข้อ", "text_2": "."}],
    },
}


def _write_dialects(root: Path) -> Path:
    for d, tasks in DIALECT_DATA.items():
        for t, rows in tasks.items():
            write_jsonl(root / d / f"{t}.jsonl", rows)
    return root


def test_load_dialect_rows_and_nulls(tmp_path):
    df = load_dialect(_write_dialects(tmp_path))
    assert list(df.columns) == ["dialect", "task", "id", "text_1", "text_2", "question", "context"]
    assert df.to_dict("records") == [
        {
            "dialect": "center",
            "task": "qa",
            "id": "7",
            "text_1": None,
            "text_2": "สมชาย",
            "question": "ใคร",
            "context": "สมชายไปตลาด",
        },
        {
            "dialect": "center",
            "task": "translation_eng_center",
            "id": "0",
            "text_1": "Hello",
            "text_2": "สวัสดี",
            "question": None,
            "context": None,
        },
        {
            "dialect": "center",
            "task": "translation_eng_center",
            "id": "1",
            "text_1": "Thanks",
            "text_2": "ขอบคุณ",
            "question": None,
            "context": None,
        },
        {
            "dialect": "center",
            "task": "food",
            "id": "f1",
            "text_1": "ส้มตำ",
            "text_2": ".",
            "question": None,
            "context": None,
        },
        {
            "dialect": "east",
            "task": "qa",
            "id": "0",
            "text_1": None,
            "text_2": "",
            "question": "ไผ",
            "context": "สมชายไปตลาด",
        },
        {
            "dialect": "east",
            "task": "summarization",
            "id": "0",
            "text_1": "บทความ",
            "text_2": "สรุป",
            "question": None,
            "context": None,
        },
        {
            "dialect": "east",
            "task": "conversation",
            "id": "0",
            "text_1": "หัวข้อ",
            "text_2": ".",
            "question": None,
            "context": None,
        },
    ]
    assert len(df.attrs["files"]) == 6
    assert load_dialect(tmp_path, dialects=["east"])["dialect"].unique().tolist() == ["east"]


def test_load_dialect_parquet_and_errors(tmp_path):
    (tmp_path / "north").mkdir()
    pd.DataFrame([{"id": 0, "text_1": "ก", "text_2": "ข"}]).to_parquet(tmp_path / "north" / "summarization.parquet")
    assert load_dialect(tmp_path)["text_2"].tolist() == ["ข"]
    path = tmp_path / "north" / "qa.jsonl"
    write_jsonl(path, [{"id": 0, "question": "ก", "text_2": "ข"}])
    with pytest.raises(ThaiEvalDataError) as exc:
        load_dialect(tmp_path)
    assert _err(exc, path, 0, "context") == "missing field(s) 'context'; fields found: id, question, text_2"
    write_jsonl(path, [{"id": 0, "question": "ก", "context": "ค", "text_2": 5}])
    with pytest.raises(ThaiEvalDataError) as exc:
        load_dialect(tmp_path)
    assert _err(exc, path, 0, "text_2") == "expected str or None, got int 5"
    write_jsonl(
        path,
        [
            {"id": 0, "question": "ก", "context": "ค", "text_2": "ง"},
            {"id": "0", "question": "ก", "context": "ค", "text_2": "ง"},
        ],
    )
    with pytest.raises(ThaiEvalDataError) as exc:
        load_dialect(tmp_path)
    assert _err(exc, path, 1, "id") == "duplicate id '0' (also row 0)"
    with pytest.raises(ValueError, match="unknown dialect 'west'"):
        load_dialect(tmp_path, dialects=["west"])
    with pytest.raises(ThaiEvalDataError, match="dialect folder not found"):
        load_dialect(tmp_path, dialects=["south"])
    with pytest.raises(ThaiEvalDataError, match="no dialect task files found"):
        load_dialect(tmp_path / "north")


class _FakeDataset:
    """Stands in for datasets.Dataset: records only through to_list()."""

    def __init__(self, rows):
        self._rows = rows

    def to_list(self):
        return list(self._rows)


def _pickle(tmp_path: Path) -> Path:
    obj = {
        "center": {
            "qa": list(DIALECT_DATA["center"]["qa"]),
            "translation_eng_center": {"text_1": ["Hello", "Thanks"], "text_2": ["สวัสดี", "ขอบคุณ"]},
            "food": _FakeDataset(DIALECT_DATA["center"]["food"]),
        },
        "east": {t: list(rows) for t, rows in DIALECT_DATA["east"].items()},
    }
    path = tmp_path / "dataset.pkl"
    path.write_bytes(pickle.dumps(obj))
    return path


def test_convert_dialect_pickle_refuses_by_default(tmp_path):
    path = _pickle(tmp_path)
    with pytest.raises(ThaiEvalError) as exc:
        convert_dialect_pickle(path, tmp_path / "out")
    assert isinstance(exc.value, ValueError) and "allow_pickle=True" in str(exc.value)
    assert str(exc.value).startswith(f"{path}: refusing to unpickle: loading a pickle runs code stored in it")
    assert not (tmp_path / "out").exists()


def test_convert_dialect_pickle_round_trip(tmp_path):
    path = _pickle(tmp_path)
    out = tmp_path / "out"
    with pytest.warns(UserWarning, match="runs code stored in the file"):
        written = convert_dialect_pickle(path, out, allow_pickle=True)
    assert [p.relative_to(out).as_posix() for p in written] == [
        "center/qa.jsonl",
        "center/translation_eng_center.jsonl",
        "center/food.jsonl",
        "east/qa.jsonl",
        "east/summarization.jsonl",
        "east/conversation.jsonl",
    ]
    assert (
        json.loads((out / "east/qa.jsonl").read_text(encoding="utf-8")) == DIALECT_DATA["east"]["qa"][0]
    )  # null kept in JSONL
    expected = load_dialect(_write_dialects(tmp_path / "direct"))
    pd.testing.assert_frame_equal(load_dialect(out), expected)


def test_convert_dialect_pickle_bad_content(tmp_path):
    path = tmp_path / "x.pkl"
    path.write_bytes(pickle.dumps({"center": {"qa": [1, 2]}}))
    with pytest.warns(UserWarning), pytest.raises(ThaiEvalDataError) as exc:
        convert_dialect_pickle(path, tmp_path / "out", allow_pickle=True)
    assert str(exc.value) == f"{path}, field 'center/qa': cannot read records: records must be mappings"
    path.write_bytes(pickle.dumps({"../evil": {"qa": []}}))
    with pytest.warns(UserWarning), pytest.raises(ThaiEvalDataError, match="expected dialect name -> dict of tasks"):
        convert_dialect_pickle(path, tmp_path / "out", allow_pickle=True)
    assert not (tmp_path / "out").exists()
    with pytest.raises(ThaiEvalDataError, match="file not found"):
        convert_dialect_pickle(tmp_path / "missing.pkl", tmp_path / "out", allow_pickle=True)


def test_numpy_nested_values_from_pandas_are_plain(tmp_path):
    # pandas hands nested Parquet values back as numpy arrays; the loaders must not.
    cli = tmp_path / "CLI_factoid.parquet"
    pd.DataFrame([{**CLI_ROWS[0], "answers": np.array(CLI_ROWS[0]["answers"], dtype=object)}]).to_parquet(cli)
    assert load_thaicli(cli).loc[0, "chosen"] == "5 ธันวาคม"


def test_each_benchmark_subpackage_exports_its_loaders():
    import thai_eval_utils
    from thai_eval_utils import dialect, h6, thaicli
    from thai_eval_utils.dialect import data as data_dialect
    from thai_eval_utils.h6 import data as data_h6
    from thai_eval_utils.thaicli import data as data_thaicli

    exported = {
        h6: (data_h6, ["load_h6_task", "H6TaskData", "H6_TASKS"]),
        thaicli: (data_thaicli, ["load_thaicli", "THAICLI_FORMATS"]),
        dialect: (data_dialect, ["load_dialect", "dialect_tasks", "convert_dialect_pickle", "DIALECTS"]),
    }
    for package, (module, names) in exported.items():
        for name in names:
            assert getattr(package, name) is getattr(module, name), name
    assert (
        thai_eval_utils.load_dialect is data_dialect.load_dialect and thai_eval_utils.H6TaskData is data_h6.H6TaskData
    )
