"""save_table: CSV, Markdown and LaTeX files that keep the printed cells."""

import math

import pandas as pd
import pytest

from thai_eval_utils.core.tables import read_table_csv, save_table


@pytest.fixture
def table():
    return pd.DataFrame(
        {
            "model": ["Qwen2-72B-Instruct", "A & B_c|d"],
            "thai_h6_avg": ["68.80", "6.0"],
            "score": [68.808, math.nan],
        }
    )


def test_three_files_written_next_to_each_other(tmp_path, table):
    paths = save_table(table, tmp_path / "sub" / "thai_h6")
    assert [p.name for p in paths] == ["thai_h6.csv", "thai_h6.md", "thai_h6.tex"]
    assert all(p.exists() for p in paths)


def test_csv_round_trip_keeps_printed_strings(tmp_path, table):
    save_table(table, tmp_path / "t")
    back = read_table_csv(tmp_path / "t.csv")
    assert list(back.columns) == ["model", "thai_h6_avg", "score"]
    assert back["thai_h6_avg"].tolist() == ["68.80", "6.0"]
    assert back["score"].tolist() == ["68.808", ""]
    assert back["model"].tolist() == ["Qwen2-72B-Instruct", "A & B_c|d"]


def test_markdown_keeps_trailing_zeros_and_escapes_pipes(tmp_path, table):
    save_table(table, tmp_path / "t", caption="Thai-H6")
    lines = (tmp_path / "t.md").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "**Thai-H6**"
    header = [c.strip() for c in lines[2].strip("|").split("|")]
    assert header == ["model", "thai_h6_avg", "score"]
    assert [c.strip() for c in lines[4].strip("|").split("|")] == ["Qwen2-72B-Instruct", "68.80", "68.808"]
    assert [c.strip() for c in lines[5].strip("|").split(" | ")] == ["A & B_c\\|d", "6.0", ""]
    assert "nan" not in "\n".join(lines)


def test_latex_escapes_and_captions(tmp_path, table):
    save_table(table, tmp_path / "t", caption="Thai-H6 scores")
    tex = (tmp_path / "t.tex").read_text(encoding="utf-8")
    assert "\\caption{Thai-H6 scores}" in tex
    assert "\\begin{tabular}{lll}" in tex
    assert "Qwen2-72B-Instruct & 68.80 & 68.808 \\\\" in tex
    assert "A \\& B\\_c|d & 6.0 &  \\\\" in tex
    assert "nan" not in tex


def test_dotted_name_keeps_its_dot(tmp_path, table):
    paths = save_table(table, tmp_path / "qwen2.5", formats=("csv",))
    assert [p.name for p in paths] == ["qwen2.5.csv"]


def test_unknown_format_rejected(tmp_path, table):
    with pytest.raises(ValueError, match="unknown table format"):
        save_table(table, tmp_path / "t", formats=("xlsx",))
