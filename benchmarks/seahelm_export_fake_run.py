"""Stored SEA-HELM runs from a scripted model, exported with ``--format seahelm``: the input of
benchmarks/seahelm_export_check.py (SEA-HELM's own aggregation notebook on the export).

The scripted model answers ThaiExam with the gold letter 70% of the time (the shipped samples' labels), IF-Eval with
one of a few replies, and grades mt-bench-judge criteria at random (seeded): numbers that are neither 0 nor 100, so the
comparison means something. Four tasks in the suite's order (IF-Eval, ThaiExam IC and O-NET: a group, mt-bench-judge),
2 runs, 40 rows:

    PYTHONPATH=. .venv/bin/python benchmarks/seahelm_export_fake_run.py /tmp/e2e_out /tmp/e2e_exp
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from fakes import FakeModel  # noqa: E402

from thai_eval_utils.export import export  # noqa: E402
from thai_eval_utils.seahelm import run_suite  # noqa: E402

TASKS = ["if-eval", "thai_exam_ic", "thai_exam_onet", "mt-bench-judge"]


def main() -> None:
    outputs, to = sys.argv[1], sys.argv[2]
    rng = random.Random(7)
    gold = {}
    for name in ("thai_exam_ic", "thai_exam_onet"):
        for line in (REPO / "data" / "seahelm" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            gold[row["prompts"][0]["question"]] = row["label"]

    def reply(messages: list[dict[str, str]]) -> str:
        last = messages[-1]["content"]
        if "<CRITERION>" in last:
            return (
                "<classification>"
                + rng.choice(["CLASS_EXACTLY_MET", "CLASS_UNMET", "CLASS_MODERATELY_MET"])
                + "</classification>"
            )
        for text, label in gold.items():
            if text and text in last:
                return "คำตอบ: " + (label if rng.random() < 0.7 else rng.choice("ABCDE"))
        return rng.choice(
            [
                last + "\nสวัสดีครับ",
                "คำตอบแรก\n******\nคำตอบที่สอง",
                "[ก] [ข] [ค] [ง] [จ] [ฉ] [ช]",
                "สวัสดีครับ",
                "Hello there my friend",
            ]
        )

    done = run_suite(
        FakeModel("org/fake-e2e", reply=reply),
        TASKS,
        runs=2,
        limit=40,
        outputs=outputs,
        progress=False,
        options={"judge": FakeModel("fake-judge", reply=reply)},
    )
    for run in done.values():
        print(run)
    print(len(export("seahelm", to, outputs=outputs)), "files written under", to)


if __name__ == "__main__":
    main()
