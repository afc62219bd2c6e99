"""Tests for thai_eval_utils.core.records: record readers for JSONL/JSON/CSV/Parquet and their error messages."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.records import (
    find_data_file,
    read_records,
    sha256_file,
    to_plain,
    write_jsonl,
)

SARA_AM_DECOMPOSED = "\u0e04\u0e4d\u0e32"  # "คํา" as OCR'd in ThaiExam (U+0E4D U+0E32, not U+0E33)


def _write(path, text: str | bytes):
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def test_jsonl_round_trip_keeps_thai_bytes(tmp_path):
    recs = [{"q": "น้ำ" + SARA_AM_DECOMPOSED, "n": 1}, {"q": "คำ", "n": 2, "nested": {"a": [1, 2]}}]
    path = write_jsonl(tmp_path / "sub" / "x.jsonl", recs)
    assert path.read_text(encoding="utf-8").splitlines()[0] == '{"q": "น้ำคํา", "n": 1}'
    assert read_records(path) == recs
    assert read_records(path)[0]["q"].endswith("\u0e4d\u0e32")  # never NFKC/NFC-normalised
    assert not list(path.parent.glob(".*tmp"))  # atomic write leaves no temp file


def test_json_array_and_json_lines_named_json(tmp_path):
    assert read_records(_write(tmp_path / "a.json", '[{"x": 1}, {"x": 2}]')) == [{"x": 1}, {"x": 2}]
    assert read_records(_write(tmp_path / "b.json", '{"x": 1}\n{"x": 2}\n')) == [{"x": 1}, {"x": 2}]
    # A UTF-8 byte-order mark is dropped, blank lines are skipped.
    assert read_records(_write(tmp_path / "c.jsonl", b'\xef\xbb\xbf{"x": 1}\n\n{"x": 2}\n')) == [{"x": 1}, {"x": 2}]


def test_csv_json_fields_and_coercion(tmp_path):
    path = _write(
        tmp_path / "a.csv",
        'question,choices,score,weight,ok,note\n"ถาม ""1""","[""ก"", ""ข""]",3,0.5,true,\n',
    )
    recs = read_records(
        path, {"choices": list, "score": int, "weight": float, "ok": bool, "note": (int, None)}, json_fields=["choices"]
    )
    assert recs == [{"question": 'ถาม "1"', "choices": ["ก", "ข"], "score": 3, "weight": 0.5, "ok": True, "note": None}]
    # Without a type request CSV cells stay text.
    assert read_records(path)[0]["score"] == "3"


def test_parquet_nested_values_are_plain_python(tmp_path):
    df = pd.DataFrame(
        {
            "question": ["ข้อ 1", "ข้อ 2"],
            "choices": [np.array(["ก", "ข"]), np.array(["ค", "ง"])],
            "targets": [{"choices": ["x"], "labels": [1]}, {"choices": ["y", "z"], "labels": [1, 0]}],
        },
        index=[10, 11],
    )
    path = tmp_path / "a.parquet"
    df.to_parquet(path)  # a non-default index is stored as __index_level_0__
    recs = read_records(path, {"choices": list, "targets": dict})
    assert recs == [
        {"question": "ข้อ 1", "choices": ["ก", "ข"], "targets": {"choices": ["x"], "labels": [1]}},
        {"question": "ข้อ 2", "choices": ["ค", "ง"], "targets": {"choices": ["y", "z"], "labels": [1, 0]}},
    ]
    assert type(recs[0]["choices"]) is list and type(recs[1]["targets"]["labels"][0]) is int


def test_to_plain_converts_numpy_and_nan():
    out = to_plain({"a": np.array([1, 2]), "b": np.int64(3), "c": float("nan"), "d": (np.float32(0.5),)})
    assert out == {"a": [1, 2], "b": 3, "c": None, "d": [0.5]}
    assert type(out["b"]) is int


def test_missing_file(tmp_path):
    path = tmp_path / "nope.jsonl"
    with pytest.raises(ThaiEvalDataError) as exc:
        read_records(path)
    assert str(exc.value) == f"{path}: file not found"


def test_unsupported_suffix(tmp_path):
    path = _write(tmp_path / "a.txt", "x")
    with pytest.raises(ThaiEvalDataError, match=r"unsupported file type '\.txt'"):
        read_records(path)


@pytest.mark.parametrize(
    "name,content", [("e.jsonl", "\n\n"), ("e.csv", "a,b\n"), ("e.json", "[]"), ("e.parquet", b"")]
)
def test_empty_file(tmp_path, name, content):
    path = _write(tmp_path / name, content)
    with pytest.raises(ThaiEvalDataError) as exc:
        read_records(path)
    assert str(exc.value).startswith(f"{path}: file is empty")
    assert read_records(path, allow_empty=True) == []


def test_empty_parquet_table(tmp_path):
    path = tmp_path / "e.parquet"
    pq.write_table(pa.table({"a": pa.array([], pa.string())}), path)
    with pytest.raises(ThaiEvalDataError, match="file is empty"):
        read_records(path)


def test_non_utf8_jsonl_names_row_field_and_line(tmp_path):
    path = _write(tmp_path / "bad.jsonl", b'{"q": "ok"}\n{"q": "ok", "a": "\xff\xfe"}\n')
    with pytest.raises(ThaiEvalDataError) as exc:
        read_records(path)
    assert str(exc.value) == f"{path}, row 1, field 'a': not valid UTF-8 text (byte(s) ff on line 2)"
    assert (exc.value.row, exc.value.field) == (1, "a")


def test_non_utf8_csv_names_row_and_field(tmp_path):
    # Thai text encoded as TIS-620 (a common legacy encoding) in the second data row.
    path = _write(tmp_path / "bad.csv", "id,text\n1,ก\n".encode() + "2,".encode() + "ข".encode("tis-620") + b"\n")
    with pytest.raises(ThaiEvalDataError) as exc:
        read_records(path)
    assert str(exc.value) == f"{path}, row 1, field 'text': not valid UTF-8 text (byte(s) a2 on line 3)"


def test_non_utf8_that_breaks_json_still_reports_encoding(tmp_path):
    path = _write(tmp_path / "bad.jsonl", b'{"q": 1}\n\xff{"q": 2}\n')
    with pytest.raises(ThaiEvalDataError) as exc:
        read_records(path)
    assert str(exc.value) == f"{path}, row 1: not valid UTF-8 text (byte(s) ff on line 2)"


def test_invalid_json_line(tmp_path):
    path = _write(tmp_path / "a.jsonl", '{"q": 1}\n\n{"q": 2,}\n')
    with pytest.raises(ThaiEvalDataError) as exc:
        read_records(path)
    assert (
        str(exc.value)
        == f"{path}, row 1: invalid JSON on line 3: Expecting property name enclosed in double quotes (column 9)"
    )


def test_json_line_not_an_object(tmp_path):
    path = _write(tmp_path / "a.jsonl", '{"q": 1}\n[1, 2]\n')
    with pytest.raises(ThaiEvalDataError) as exc:
        read_records(path)
    assert str(exc.value) == f"{path}, row 1: line 2 is a JSON list, expected an object"


def test_missing_fields_list_fields_found(tmp_path):
    path = _write(tmp_path / "a.jsonl", '{"question": "x", "answer": "1"}\n{"question": "y", "ans": "2"}\n')
    with pytest.raises(ThaiEvalDataError) as exc:
        read_records(path, {"question": str, "answer": str, "label": int})
    assert str(exc.value) == f"{path}, row 0, field 'label': missing field(s) 'label'; fields found: question, answer"
    with pytest.raises(ThaiEvalDataError) as exc:
        read_records(path, {"question": str, "answer": str})
    assert str(exc.value) == f"{path}, row 1, field 'answer': missing field(s) 'answer'; fields found: question, ans"


def test_missing_csv_column(tmp_path):
    path = _write(tmp_path / "a.csv", "question,gold\nก,ข\n")
    with pytest.raises(ThaiEvalDataError) as exc:
        read_records(path, {"question": str, "answer": str})
    assert str(exc.value) == f"{path}, row 0, field 'answer': missing field(s) 'answer'; fields found: question, gold"


def test_wrong_type_names_row_and_field(tmp_path):
    path = _write(tmp_path / "a.jsonl", '{"label": 1}\n{"label": [2]}\n')
    with pytest.raises(ThaiEvalDataError) as exc:
        read_records(path, {"label": (int, str)})
    assert str(exc.value) == f"{path}, row 1, field 'label': expected int or str, got list [2]"


def test_bool_is_not_an_int_and_null_needs_none(tmp_path):
    path = _write(tmp_path / "a.jsonl", '{"label": true}\n')
    with pytest.raises(ThaiEvalDataError, match=r"row 0, field 'label': expected int, got bool True"):
        read_records(path, {"label": int})
    path = _write(tmp_path / "b.jsonl", '{"text": "a"}\n{"text": null}\n')
    with pytest.raises(ThaiEvalDataError, match=r"row 1, field 'text': expected str, got NoneType None"):
        read_records(path, {"text": str})
    assert read_records(path, {"text": (str, None)})[1] == {"text": None}


def test_int_accepted_where_float_expected(tmp_path):
    path = _write(tmp_path / "a.jsonl", '{"score": 1}\n{"score": 0.5}\n')
    assert [r["score"] for r in read_records(path, {"score": float})] == [1, 0.5]


def test_csv_structure_errors(tmp_path):
    path = _write(tmp_path / "a.csv", "a,b\n1,2\n3\n")
    with pytest.raises(ThaiEvalDataError) as exc:
        read_records(path)
    assert str(exc.value) == f"{path}, row 1: 1 cells, the header has 2 columns"
    path = _write(tmp_path / "b.csv", "a,b,a\n1,2,3\n")
    with pytest.raises(ThaiEvalDataError) as exc:
        read_records(path)
    assert str(exc.value) == f"{path}, field 'a': duplicate column name(s) in the header: a"
    path = _write(tmp_path / "c.csv", 'choices\n"[1, 2"\n')
    with pytest.raises(ThaiEvalDataError) as exc:
        read_records(path, {"choices": list}, json_fields=["choices"])
    assert str(exc.value).startswith(f"{path}, row 0, field 'choices': invalid JSON in CSV cell")


def test_corrupt_parquet(tmp_path):
    path = _write(tmp_path / "a.parquet", b"not parquet at all")
    with pytest.raises(ThaiEvalDataError, match=r"a\.parquet: not a readable Parquet file"):
        read_records(path)


def test_find_data_file(tmp_path):
    assert find_data_file(tmp_path, "x") is None
    _write(tmp_path / "x.csv", "a\n1\n")
    assert find_data_file(tmp_path, "x") == tmp_path / "x.csv"
    _write(tmp_path / "x.jsonl", '{"a": 1}\n')
    with pytest.raises(ThaiEvalDataError) as exc:
        find_data_file(tmp_path, "x")
    assert str(exc.value) == f"{tmp_path}: ambiguous: several files for 'x' (x.jsonl, x.csv); keep one"


def test_sha256_file_is_the_results_helper(tmp_path):
    path = _write(tmp_path / "a.jsonl", "abc")
    assert sha256_file(path) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
