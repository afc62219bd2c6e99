"""Rebuild the Thai LLM Leaderboard sample files that come from licensed extracts (see SOURCES.md).

The runner (scbdatax/seacrowd-eval @9de9392, evaluation/data_utils.py:149-159) reads one JSONL per task and split,
``{task_key}_{split}.jsonl``, from the HF dataset ``kunato/thaillm-leaderboard-dataset``, and the whole HF dataset
``kunato/thai-exam-seacrowd`` (one file, ``thai_exam.jsonl``, split ``train``). The rows are SEACrowd schema rows
(spec thai_llm_leaderboard.md 1.2); this script maps the shared extracts into them as spec section 7 says, keeping
each source row's id (as a string, the SEACrowd schemas' ``id`` type). Run from the repository root:
``python data/thai_llm_leaderboard/make_samples.py <real-data dir>``. The illustrative files written by the
thai-eval authors (XNLI, M3Exam, XL-Sum, MT-Bench Thai) are edited by hand, not here.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent

# SEACrowd ClassLabel order of wisesight_thai_sentiment (seacrowd-datahub @960a371): pos, neu, neg, q.
WISESIGHT_LABELS = {"positive": 0, "neutral": 1, "negative": 2, "question": 3}


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(name: str, rows: list[dict]) -> None:
    with (OUT / name).open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def _qa(row_id: str, context: str | None, question: str, choices: list[str], answer: list[str]) -> dict:
    """A SEACrowd ``qa`` schema row (seacrowd/utils/schemas/qa.py: id, question_id, document_id, question, type,
    choices, context, answer, meta)."""
    return {"id": row_id, "question_id": row_id, "document_id": row_id, "question": question,
            "type": "multiple_choice" if choices else "extractive", "choices": choices, "context": context,
            "answer": answer, "meta": {}}


def wisesight(src: Path) -> list[dict]:
    return [{"id": str(r["id"]), "text": r["text"], "label": WISESIGHT_LABELS[r["label"]]}
            for r in _read(src / "wisesight_sentiment_th.jsonl")]


def xcopa(src: Path) -> list[dict]:
    # The cause/effect flag goes only to meta (SEACrowd xcopa loader), never to the prompt.
    out = []
    for r in _read(src / "xcopa_th.jsonl"):
        choices = [r["choice1"], r["choice2"]]
        row = _qa(str(r["id"]), r["premise"], "", choices, [choices[r["label"]]])
        row["meta"] = {"reasoning_type": r["question"]}
        out.append(row)
    return out


def belebele(src: Path) -> list[dict]:
    return [_qa(str(r["id"]), r["passage"], r["question"], list(r["choices"]), [r["choices"][r["answer_index"]]])
            for r in _read(src / "belebele_th.jsonl")]


def thaiexam(src: Path) -> list[dict]:
    # Choices: the dict values in key order a..e (ic has a..d), empty strings kept as in the source.
    out = []
    for r in _read(src / "thai_exam.jsonl"):
        choices = [r["choices"][k] for k in "abcde" if k in r["choices"]]
        row = _qa(r["id"], "", r["question"], choices, [r["choices"][r["answer"]]])
        row["meta"] = {"exam": r["exam"], "subject": r["subject"], "year": r["year"], "no": r["no"]}
        out.append(row)
    return out


def iapp(src: Path) -> list[dict]:
    return [_qa(r["id"], r["context"], r["question"], [], list(r["answers"]["text"]))
            for r in _read(src / "iapp_wiki_qa_test.jsonl")]


def flores(src: Path, english_first: bool) -> list[dict]:
    rows = _read(src / "flores200_devtest_en_th.jsonl")
    if english_first:
        return [{"id": str(r["id"]), "text_1": r["en"], "text_2": r["th"], "text_1_name": "eng_Latn",
                 "text_2_name": "tha_Thai"} for r in rows]
    return [{"id": str(r["id"]), "text_1": r["th"], "text_2": r["en"], "text_1_name": "tha_Thai",
             "text_2_name": "eng_Latn"} for r in rows]


def main(src: Path) -> None:
    _write("wisesight_thai_sentiment_seacrowd_text_test.jsonl", wisesight(src))
    _write("xcopa_tha_seacrowd_qa_test.jsonl", xcopa(src))
    _write("belebele_tha_thai_seacrowd_qa_test.jsonl", belebele(src))
    _write("thai_exam.jsonl", thaiexam(src))
    _write("iapp_squad_seacrowd_qa_test.jsonl", iapp(src))
    _write("flores200_eng_Latn_tha_Thai_seacrowd_t2t_devtest.jsonl", flores(src, english_first=True))
    _write("flores200_tha_Thai_eng_Latn_seacrowd_t2t_devtest.jsonl", flores(src, english_first=False))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
