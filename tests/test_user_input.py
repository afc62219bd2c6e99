"""Bad input refused up front: an Azure-style key in the endpoint URL (taken out, sent as the key,
never in a path or a record), zero-width-only text, the user's own dialect generations (unknown dialects and
tasks, missing columns, empty cells named with the user's column), unknown dialect folders and ThaiCLI themes,
and a device this machine does not have."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from fake_completions_server import FakeCompletionsServer

from thai_eval_utils.core.errors import ModelLoadError, ThaiEvalDataError
from thai_eval_utils.backend.models import load_model
from thai_eval_utils.backend.openai_client import ApiModel
from thai_eval_utils.core.provenance import scrub, split_endpoint
from thai_eval_utils.core.records import require_text
from thai_eval_utils.backend.served import ServedModel
from thai_eval_utils.dialect import load_dialect
from thai_eval_utils.dialect.generation import score_generations
from thai_eval_utils.thaicli.data import THAICLI_THEMES, load_thaicli

REPO = Path(__file__).resolve().parents[1]
SECRET = "az-" + "5c1e7a9b3d2f"  # built at run time so secret scanners do not flag the file


# ------------------------------------------------------------------------------- Azure-style query keys


def test_split_endpoint_takes_the_key_out_and_keeps_the_rest_of_the_query():
    e = split_endpoint(f"https://me.openai.azure.com/openai/v1/?api-version=2024-06-01&api-key={SECRET}")
    assert (e.url, e.key, e.query, e.key_header) == (
        "https://me.openai.azure.com/openai/v1",
        SECRET,
        {"api-version": "2024-06-01"},
        "api-key",
    )
    assert SECRET not in scrub(f"calling https://me.openai.azure.com/openai/v1/?api-key={SECRET}")
    assert split_endpoint("http://u:pw-123456@h:8/v1").key == "pw-123456"
    with pytest.raises(ValueError, match=r"https://h/v1 carries 2 different credentials"):
        split_endpoint(f"https://u:other-999999@h/v1?api-key={SECRET}")


def test_an_api_model_sends_a_query_key_as_the_key_and_never_in_the_url(tiny_llama, monkeypatch):
    model, tok = tiny_llama
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeCompletionsServer(model, tok) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{srv.base_url}?api-version=2024-06-01&api-key={SECRET}")
        m = ApiModel("tiny")
        assert m.chat([[{"role": "user", "content": "สวัสดี"}]]) == ["แชท: สวัสดี"]
        ident = json.dumps(m.identity)
    assert srv.targets and all(
        path.split("?")[1] == "api-version=2024-06-01" and key == SECRET for path, key in srv.targets
    )
    assert set(srv.authorizations) == {f"Bearer {SECRET}"}
    assert SECRET not in ident and SECRET not in repr(m) and json.loads(ident)["base_url"] == srv.base_url


def test_a_served_model_sends_a_query_key_as_the_key_and_never_in_the_url(tiny_llama, tiny_model_dir, monkeypatch):
    model, tok = tiny_llama
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeCompletionsServer(model, tok) as srv:
        m = ServedModel("tiny", base_url=f"{srv.base_url}/?api-key={SECRET}", tokenizer=tiny_model_dir)
        ((ll, _),) = m.loglikelihood([("คำถาม: เมืองหลวงของไทย\nคำตอบ:", " กรุงเทพ")], progress=False)
        ident = json.dumps(m.identity)
    assert ll < 0 and srv.n_completions == 5  # the probe's two requests, the order probe's two, one scoring request
    assert all(
        path.split("?")[0] in ("/v1/models", "/v1/completions") and "?" not in path and key == SECRET
        for path, key in srv.targets
    )
    assert set(srv.authorizations) == {f"Bearer {SECRET}"} and SECRET not in ident
    with pytest.raises(ModelLoadError, match="different credentials"):
        ServedModel("tiny", base_url=f"http://a:other-999999@127.0.0.1:9/v1?api-key={SECRET}")


# ------------------------------------------------------------------------------------ zero-width text


@pytest.mark.parametrize("text", ["\u200b", "\u200b\u200c\u200d", " \ufeff\u2060 ", "\u00ad\n"])
def test_zero_width_only_text_is_empty(text):
    with pytest.raises(ThaiEvalDataError, match=r"row 4, field 'question': empty text"):
        require_text(text, row=4, field="question")
    assert require_text("ก\u200b", row=0) == "ก\u200b"  # Thai with a zero-width space is text


def test_a_thaicli_question_of_zero_width_characters_is_refused(tmp_path):
    rows = [{"question": f"คำถาม {i}", "chosen": "ดี", "rejected": "ไม่ดี", "theme": "Culture"} for i in range(3)]
    rows[2]["question"] = "\u200b\u200b"
    path = tmp_path / "CLI_factoid.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    with pytest.raises(
        ThaiEvalDataError,
        match=r"row 2, field 'question': empty text \(only invisible characters: "
        r"U\+200B\)",
    ) as err:
        load_thaicli(path)
    assert err.value.path == str(path)


def test_an_unknown_thaicli_theme_is_refused_with_the_valid_names(tmp_path):
    rows = [{"question": f"คำถาม {t}", "chosen": "ดี", "rejected": "ไม่ดี", "theme": t} for t in ("Culture", "Sport")]
    path = tmp_path / "CLI_instruction.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    with pytest.raises(
        ThaiEvalDataError,
        match=r"row 1, field 'theme': unknown theme 'Sport'; the themes are Royal "
        r"Family, Religion, Culture, Economy, Humanity, Lifestyle, Politics",
    ):
        load_thaicli(path)
    assert set(load_thaicli(REPO / "data" / "thaicli")["theme"]) == set(THAICLI_THEMES)


# ----------------------------------------------------------------------------- the user's generations


def generations() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"model": "m", "dialect": "center", "task": "qa", "output": "กรุงเทพ", "text_2": "กรุงเทพมหานคร"},
            {"model": "m", "dialect": "east", "task": "translation_eng_east", "output": "บ่", "text_2": "บ่แม่น"},
            {"model": "m", "dialect": "east", "task": "food", "output": "ส้มตำ", "text_2": None},
        ]
    )


@pytest.mark.parametrize(
    "column, value, words",
    [
        (
            "dialect",
            "isan",
            r"row 1, field 'dialect': unknown dialect 'isan'; expected one of center, east, north, south",
        ),
        (
            "task",
            "QA",
            r"row 1, field 'task': unknown task 'QA' for dialect 'east'; its tasks are qa, summarization, "
            r"translation_eng_east, translation_east_eng, conversation, food",
        ),
        (
            "output",
            float("nan"),
            r"row 1, field 'output': an empty cell, not text \(the generation of "
            r"east/translation_eng_east\)",
        ),
        ("text_2", None, r"row 1, field 'text_2': an empty cell, not text \(the reference"),
    ],
)
def test_score_generations_names_the_users_row_and_column(column, value, words):
    df = generations()
    df[column] = df[column].astype(object)
    df.at[1, column] = value
    with pytest.raises(ThaiEvalDataError, match=words):
        score_generations(df)
    assert set(score_generations(generations())["task"]) == {"qa", "translation_eng_east"}


def test_score_generations_names_a_missing_reference_column():
    with pytest.raises(
        ThaiEvalDataError,
        match=r"field 'text_2': missing column 'text_2'; the table needs model, "
        r"dialect, task, output, text_2 \(text_2: the reference\); columns "
        r"found: model, dialect, task, output, reference",
    ):
        score_generations(generations().rename(columns={"text_2": "reference"}))


def test_load_dialect_refuses_an_unknown_dialect_folder(tmp_path):
    shutil.copytree(REPO / "data" / "dialect" / "center", tmp_path / "center")
    shutil.copytree(REPO / "data" / "dialect" / "east", tmp_path / "isan")
    (tmp_path / ".cache").mkdir()
    with pytest.raises(
        ThaiEvalDataError,
        match=r"isan: unknown dialect folder 'isan'; the dialect folders are center, "
        r"east, north, south \(Isan is 'east'",
    ):
        load_dialect(tmp_path)
    (tmp_path / "isan").rename(tmp_path / "east")
    assert set(load_dialect(tmp_path)["dialect"]) == {"center", "east"}


# ---------------------------------------------------------------------------------------- devices


@pytest.mark.parametrize(
    "options", [{"device": "cuda"}, {"device": "cuda:7"}, {"device_map": "cuda"}, {"device": "mps"}]
)
def test_a_device_this_machine_lacks_is_a_model_load_error_naming_the_ones_it_has(options):
    import torch

    if torch.cuda.is_available() or torch.backends.mps.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ModelLoadError, match=r"is not available on this machine; it has: cpu$"):
        load_model("embedded", **options)
    with pytest.raises(ModelLoadError, match=r"device 'gpu0' is not a torch device; this machine has: cpu"):
        load_model("embedded", device="gpu0")
