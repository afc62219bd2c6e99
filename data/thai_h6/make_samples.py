"""Rebuild the ThaiExam- and MGSM-derived Thai-H6 sample files (ARC, MMLU, GSM8K test) from the source extracts.

Provenance record for data/README.md: the item ids below are the exact selection shipped. Run from the
repository root: ``python data/thai_h6/make_samples.py <real-data dir>`` where the folder holds
``thai_exam.jsonl`` (ThaiExam, Apache-2.0) and ``mgsm_th.jsonl`` (MGSM, CC BY 4.0). Items written by
the thai-eval authors (HellaSwag, TruthfulQA, Winogrande, GSM8K train) are edited by hand, not here.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "h6"

# ARC-style: short ThaiExam items (no figures, no multi-question passages); 25 few-shot + 12 scored.
# onet_test_0 and onet_test_48 contain decomposed SARA AM (U+0E4D U+0E32) as in the source: kept.
ARC_VALIDATION = [
    "a_level_test_31", "a_level_test_92", "a_level_test_120", "a_level_test_107", "tgat_test_9",
    "tpat1_test_0", "tgat_test_0", "a_level_test_50", "tgat_test_1", "onet_test_64",
    "a_level_test_34", "a_level_test_3", "tpat1_test_104", "onet_test_52", "tpat1_test_34",
    "tgat_test_8", "tgat_test_3", "a_level_test_22", "a_level_test_60", "tgat_test_11",
    "tpat1_test_2", "tpat1_test_5", "onet_test_89", "a_level_test_53", "onet_test_149",
]
ARC_TEST = [
    "onet_test_0", "onet_test_48", "onet_test_109", "tpat1_test_14", "onet_test_72",
    "onet_test_28", "tgat_test_6", "a_level_test_114", "a_level_test_0", "a_level_test_28",
    "onet_test_153", "a_level_test_111",
]
# MMLU-style subjects: 4-choice ThaiExam items. (subject, few-shot split, few-shot ids, test ids)
MMLU = [
    ("derivatives_markets", "train",
     ["ic_test_0", "ic_test_2", "ic_test_4", "ic_test_9", "ic_test_11"],
     ["ic_test_14", "ic_test_16", "ic_test_19", "ic_test_21", "ic_test_23"]),
    ("investment_fundamentals", "train",
     ["ic_test_26", "ic_test_28", "ic_test_30", "ic_test_33", "ic_test_35"],
     ["ic_test_38", "ic_test_40", "ic_test_42", "ic_test_45", "ic_test_47", "ic_test_49"]),
    ("management", "validation",
     ["tgat_test_22", "tgat_test_24", "tgat_test_26", "tgat_test_27", "tgat_test_29"],
     ["tgat_test_30", "tgat_test_34", "tgat_test_35", "tgat_test_58"]),
]
# GSM8K test: MGSM Thai items (gold as "#### N"); the train rationales are hand-written.
GSM8K_TEST = [18, 248, 167, 33, 113, 105, 120, 3, 50, 23, 141, 238]


def _choices(item: dict) -> list[str]:
    return [item["choices"][k] for k in "abcde" if item["choices"].get(k)]


def _arc(item: dict) -> dict:
    texts = _choices(item)
    labels = list("ABCDE")[: len(texts)]
    key = item["answer"].upper()
    assert key in labels, item["id"]
    return {"id": item["id"], "question": item["question"], "choices": {"text": texts, "label": labels}, "answerKey": key}


def _mmlu(item: dict, subject: str) -> dict:
    texts = _choices(item)
    assert len(texts) == 4, item["id"]
    return {"id": item["id"], "question": item["question"], "subject": subject, "choices": texts,
            "answer": "abcd".index(item["answer"])}


def _write(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")


def main(real_data: Path) -> None:
    exam = {r["id"]: r for r in map(json.loads, open(real_data / "thai_exam.jsonl", encoding="utf-8"))}
    mgsm = {r["id"]: r for r in map(json.loads, open(real_data / "mgsm_th.jsonl", encoding="utf-8"))}
    arc = OUT / "th_arc_challenge"
    _write(arc / "th_arc_challenge_validation.jsonl", [_arc(exam[i]) for i in ARC_VALIDATION])
    _write(arc / "th_arc_challenge_test.jsonl", [_arc(exam[i]) for i in ARC_TEST])
    for subject, split, shots, tests in MMLU:
        folder = OUT / "th_mmlu" / subject
        _write(folder / f"th_mmlu_{subject}_{split}.jsonl", [_mmlu(exam[i], subject) for i in shots])
        _write(folder / f"th_mmlu_{subject}_test.jsonl", [_mmlu(exam[i], subject) for i in tests])
    _write(OUT / "th_gsm8k" / "th_gsm8k_test.jsonl",
           [{"id": f"mgsm_th/{i}", "question": mgsm[i]["question"], "answer": f"#### {mgsm[i]['answer_number']}"}
            for i in GSM8K_TEST])


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/real-data"))
