"""Rebuild ``data/seahelm/`` (SEA-HELM v1.2's Thai tasks in its row contract) from the real-data extracts.

Spec ``seahelm_thai.md`` section 2.1 (the row contract) and section 8 (the row mappings). Every row is
``{"id", "label", "prompts": [{<task template fields>}], "metadata": {"language": "th", ...}}``; QA labels are
lists (pitfall P13). Few-shot rows (``<task>_examples.jsonl``) come from SEA-HELM's own repo-local example files
@80b04b8 for the permissively licensed sets, and are the first five test rows for ThaiExam (SEA-HELM's
``thai_exam_dataloader.py:77-83``: its few-shot split IS the test split). Toxicity, NLI, summarisation and the
MT-Bench judge rows are written by us (``illustrative.py`` beside this file): their sources are non-commercial.

Run from the repository root (needs the shared extracts and a SEA-HELM mirror; the outputs are committed)::

    python data/seahelm/make_samples.py /work/shared/real-data /work/.mirror/aisingapore+SEA-HELM/repo
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent
SEAHELM_DATA_COMMIT = "80b04b8"
SENTIMENT = {"positive": "แง่บวก", "negative": "แง่ลบ", "neutral": "เฉยๆ"}
CAUSAL_QUESTION = {"cause": "สาเหตุ", "effect": "ผล"}
EXAMS = ("a_level", "ic", "onet", "tgat", "tpat1")
#: SEA-HELM @80b04b8 example files (5 rows each) per task, all permissively licensed (see SOURCES.md).
EXAMPLE_FILES = {
    "sentiment": "seahelm_tasks/nlu/sentiment_analysis/data/th_wisesight_examples.jsonl",
    "qa": "seahelm_tasks/nlu/question_answering/data/th_xquad_examples.jsonl",
    "causal": "seahelm_tasks/nlr/causal/data/th_xcopa_examples.jsonl",
    "belebele-qa-mc": "seahelm_tasks/nlu/belebele_mcqa/data/examples/th_belebele.jsonl",
    "translation-en-xx": "seahelm_tasks/nlg/translation/data/flores200_dataset/dev/en_to_tha_Thai_examples.jsonl",
    "translation-xx-en": "seahelm_tasks/nlg/translation/data/flores200_dataset/dev/tha_Thai_to_en_examples.jsonl",
}


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write(name: str, rows: list[dict]) -> None:
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    (OUT / name).write_text(text, encoding="utf-8")
    print(f"{name}: {len(rows)} rows")


def row(id_: object, label: object, prompt: dict, **metadata: object) -> dict:
    return {"id": id_, "label": label, "prompts": [prompt], "metadata": {"language": "th", **metadata}}


def examples_from_seahelm(mirror: Path, task: str) -> list[dict]:
    """SEA-HELM's own 5 example rows @80b04b8, given an ``id`` (their position) where they have none."""
    text = subprocess.run(["git", "--git-dir", str(mirror), "show", f"{SEAHELM_DATA_COMMIT}:{EXAMPLE_FILES[task]}"],
                          check=True, capture_output=True, text=True).stdout
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    out = []
    for i, r in enumerate(rows):
        out.append({"id": r.get("id", i), "label": r["label"], "prompts": r["prompts"],
                    "metadata": r.get("metadata") or {"language": "th"}})
    return out


def main(real: Path, mirror: Path) -> None:
    write("sentiment.jsonl", [row(r["id"], SENTIMENT[r["label"]], {"text": r["text"]})
                              for r in read(real / "wisesight_sentiment_th.jsonl")])
    write("qa.jsonl", [row(r["id"], [r["answer"]], {"text": r["context"], "question": r["question"]})
                       for r in read(real / "xquad_th.jsonl")])
    flores = read(real / "flores200_devtest_en_th.jsonl")
    write("translation-en-xx.jsonl", [row(r["id"], r["th"], {"text": r["en"]}) for r in flores])
    write("translation-xx-en.jsonl", [row(r["id"], r["en"], {"text": r["th"]}) for r in flores])
    write("causal.jsonl", [row(r["id"], "AB"[int(r["label"])],
                               {"premise": r["premise"], "question_translated": CAUSAL_QUESTION[r["question"]],
                                "choice1": r["choice1"], "choice2": r["choice2"]})
                           for r in read(real / "xcopa_th.jsonl")])
    belebele = []
    for r in read(real / "belebele_th.jsonl"):
        choices = ast.literal_eval(r["choices"]) if isinstance(r["choices"], str) else r["choices"]
        belebele.append(row(r["id"], "ABCD"[int(r["answer_index"])],
                            {"text": r["passage"], "question": r["question"],
                             **{f"choice{i + 1}": c for i, c in enumerate(choices)}}))
    write("belebele-qa-mc.jsonl", belebele)
    ifeval = []
    for r in read(real / "ifeval_th.jsonl"):
        kwargs = ast.literal_eval(r["kwargs"]) if isinstance(r["kwargs"], str) else r["kwargs"]
        ifeval.append({"id": r["id"], "prompts": [{"text": r["prompt"]}], "kwargs": kwargs,
                       "metadata": {"language": "th", "category": r["category"], "subcategory": r["instruction_id"]}})
    write("if-eval.jsonl", ifeval)
    exam_rows = read(real / "thai_exam.jsonl")
    for exam in EXAMS:
        rows = []
        for r in (r for r in exam_rows if r["exam"] == exam):
            letters = "abcd" if exam == "ic" else "abcde"
            rows.append(row(int(r["id"].rsplit("_", 1)[1]), r["answer"].upper(),
                            {"question": r["question"], **{k: r["choices"][k] for k in letters}},
                            subject=r["subject"]))
        write(f"thai_exam_{exam}.jsonl", rows)
        # SEA-HELM's few-shot rows for ThaiExam: the first five rows of the test split (ids 0-4), those we have.
        write(f"thai_exam_{exam}_examples.jsonl", [r for r in rows if r["id"] < 5])
    for task in EXAMPLE_FILES:
        write(f"{task}_examples.jsonl", examples_from_seahelm(mirror, task))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
