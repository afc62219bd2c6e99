"""``thai-eval export --format seahelm`` (spec seahelm_thai.md 5.1, 6): stored SEA-HELM task runs written as SEA-HELM's
run folders, read back as its aggregation notebook reads them (helpers/results_aggregation.ipynb cells 1-2: the latest
config YAML of run_<r>, then ``<model>/run_<r>/inferences/<lang>/<group or task>/<model>_<task>_<lang>.jsonl``'s
``individual_scores``, ``label`` and IF-Eval's ``metadata.subcategory``), and the results JSON's totals by hand."""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from thai_eval_utils.core import registry
from thai_eval_utils.core.benchmark import SeahelmRun, SeahelmTask, Suite
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.core.store import RunStore
from thai_eval_utils.export import FORMATS, export
from thai_eval_utils.export import seahelm as writer
from thai_eval_utils.seahelm import export as hook

WHEN = datetime(2026, 12, 2, 12, 0, 0, 123456)


def _store(outputs: Path, key: str, task: dict, summary: dict, records: dict) -> StoredRun:
    with RunStore.open("org/tiny-model", f"seahelm/{key}", {"task": task}, outputs=outputs) as store:
        store.append_many(list(records.items()))
        store.write_summary(summary)
    return StoredRun.from_dir(store.root)


def _ifeval_run(outputs: Path) -> StoredRun:
    task = {
        "key": "if-eval",
        "name": "if-eval",
        "competency": "instruction-following",
        "metric": "overall_lang_normalized_acc",
        "max_tokens": 4096,
        "task_template": "{text}",
        "filepath": "x",
    }
    items = [
        {
            "subcategory": "startend:quotation",
            "result": True,
            "correct_language": True,
            "detected_language": "th",
            "lang_normalized_result": True,
            "checked": '"ก"',
        },
        {
            "subcategory": "length_constraints:number_words",
            "result": None,
            "correct_language": None,
            "detected_language": None,
            "lang_normalized_result": None,
            "checked": "ข",
        },
    ]
    metrics = {
        "overall_count": 1,
        "overall_pass": 1,
        "overall_acc": 100.0,
        "correct_language_rate": 1.0,
        "overall_lang_normalized_acc": 100.0,
        "subcategories": {"startend:quotation": 1.0},
    }
    summary = {
        "suite": "seahelm",
        "task": "if-eval",
        "competency": "instruction-following",
        "aggregation_group": None,
        "primary_metric": "overall_lang_normalized_acc",
        "ids": ["1", "2"],
        "runs": {
            str(r): {"seed": s, "metrics": metrics, "per_item": [1.0], "items": items}
            for r, s in ((0, 25008113), (1, 42008474))
        },
    }
    records = {
        f"r{r}/{i}": {"run": r, "id": i, "messages": [{"role": "user", "content": "p"}], "reply": t}
        for r in (0, 1)
        for i, t in (("1", '"ก"'), ("2", "ข"))
    }
    return _store(outputs, "if-eval", task, summary, records)


def _exam_run(outputs: Path, key: str, value: float) -> StoredRun:
    task = {
        "key": key,
        "name": key,
        "competency": "knowledge",
        "metric": "normalized_accuracy",
        "max_tokens": 32,
        "aggregation_group": "thai_exam",
        "answer_tag": "คำตอบ:",
    }
    summary = {
        "suite": "seahelm",
        "task": key,
        "competency": "knowledge",
        "aggregation_group": "thai_exam",
        "primary_metric": "normalized_accuracy",
        "ids": ["0", "1"],
        "runs": {
            "0": {
                "seed": 25008113,
                "metrics": {"normalized_accuracy": value, "null_count": 0},
                "per_item": [1, 0],
                "predictions": ["A", "null"],
            }
        },
    }
    records = {
        f"r0/{i}": {"id": i, "label": lab, "messages": [], "reply": f"คำตอบ: {p}", "scored": f"คำตอบ: {p}"}
        for i, lab, p in (("0", "A", "A"), ("1", "B", "C"))
    }
    return _store(outputs, key, task, summary, records)


class _SeahelmOnly(Suite):
    name = "seahelm"

    def seahelm_results(self, run: StoredRun) -> list[SeahelmTask]:
        return hook.seahelm_results(run)


@pytest.fixture
def seahelm_suite(monkeypatch):
    suite = _SeahelmOnly()
    real = registry.suite_of
    monkeypatch.setattr(registry, "suite_of", lambda b: suite if b.startswith("seahelm/") else real(b))
    return suite


def _read_like_the_notebook(root: Path, model: str, run: int, task: str, lang: str, group: str | None):
    """get_individual_scores (ipynb cell 2), in words: the first key of individual_scores, lists flattened, NaN/None
    as 0.0, IF-Eval's number_words rows skipped for Thai, labels collected when present."""
    path = root / model / f"run_{run}" / "inferences" / lang / (group or task) / f"{model}_{task}_{lang}.jsonl"
    values, labels = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if task == "if-eval" and row["metadata"]["subcategory"] == "length_constraints:number_words":
            continue
        value = row["individual_scores"][next(iter(row["individual_scores"]))]
        for v in value if isinstance(value, list) else [value]:
            values.append(0.0 if v is None or (isinstance(v, float) and math.isnan(v)) else float(v))
        if "label" in row:
            labels.append(row["label"])
    return values, labels


def test_layout_round_trip(tmp_path, seahelm_suite):
    runs = [
        _ifeval_run(tmp_path / "out"),
        _exam_run(tmp_path / "out", "thai_exam_ic", 40.0),
        _exam_run(tmp_path / "out", "thai_exam_onet", 20.0),
    ]
    files = writer.write_seahelm(runs, tmp_path / "exp", when=WHEN)
    model = "tiny-model"  # SEA-HELM's basename of org/tiny-model
    rel = sorted(str(p.relative_to(tmp_path / "exp")) for p in files)
    stamp = "2026-12-02T12:00:00.123456"
    assert rel == sorted(
        [
            f"{model}/run_0/configs/{model}_run_config_{stamp}.yaml",
            f"{model}/run_0/results/{model}_seahelm_results_{stamp}.json",
            f"{model}/run_0/inferences/th/if-eval/{model}_if-eval_th.jsonl",
            f"{model}/run_0/inferences/th/thai_exam/{model}_thai_exam_ic_th.jsonl",
            f"{model}/run_0/inferences/th/thai_exam/{model}_thai_exam_onet_th.jsonl",
            f"{model}/run_1/configs/{model}_run_config_{stamp}.yaml",
            f"{model}/run_1/results/{model}_seahelm_results_{stamp}.json",
            f"{model}/run_1/inferences/th/if-eval/{model}_if-eval_th.jsonl",
        ]
    )
    # the notebook finds the config by the ISO time with microseconds in its name
    assert re.search(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6})", rel[0])
    root = tmp_path / "exp"
    config = yaml.safe_load(
        (root / model / "run_0" / "configs" / f"{model}_run_config_{stamp}.yaml").read_text("utf-8")
    )
    assert config["run_args"] == {"skip_task": []} and config["seed"] == 25008113 and config["run_number"] == 0
    assert config["tasks"]["thai_exam_ic"]["aggregation_group"] == "thai_exam"
    assert config["tasks"]["if-eval"]["competency"] == "instruction-following"
    assert list(config["tasks"]["if-eval"]["languages"]) == ["th"]
    assert "aggregation_group" not in config["tasks"]["if-eval"]
    assert config["thai_eval"]["if-eval"]["benchmark"] == "seahelm/if-eval"
    # per-row files read back as the notebook reads them
    assert _read_like_the_notebook(root, model, 0, "if-eval", "th", None) == ([1.0], [])
    assert _read_like_the_notebook(root, model, 0, "thai_exam_ic", "th", "thai_exam") == ([1.0, 0.0], ["A", "B"])
    line = json.loads(
        (root / model / "run_1/inferences/th/if-eval" / f"{model}_if-eval_th.jsonl").read_text("utf-8").splitlines()[1]
    )
    assert line["individual_scores"] == {"overall_lang_normalized_acc": None}  # NaN written as null, as pandas does
    assert line["responses"] == ["ข"] and "label" not in line
    # results JSON: competency totals, the group mean, the language and overall totals
    results = json.loads((root / model / "run_0/results" / f"{model}_seahelm_results_{stamp}.json").read_text("utf-8"))
    th = results["th"]
    assert th["knowledge"]["thai_exam"] == 30.0 and th["knowledge"]["total"] == 30.0
    assert th["knowledge"]["thai_exam_ic"]["normalized_accuracy"] == 40.0
    assert th["instruction-following"]["total"] == 100.0
    assert th["total"] == 65.0 and results["total"] == 65.0
    results1 = json.loads((root / model / "run_1/results" / f"{model}_seahelm_results_{stamp}.json").read_text("utf-8"))
    assert results1 == {
        "th": {
            "instruction-following": {"if-eval": runs[0].summary["runs"]["1"]["metrics"], "total": 100.0},
            "total": 100.0,
        },
        "total": 100.0,
    }


def test_results_totals_by_hand():
    def entry(key, comp, group, value):
        return (SeahelmTask(key, "th", comp, "m", group, {}, ()), SeahelmRun(0, 1, {"m": value}, []))

    doc = writer.results_document(
        [
            entry("sentiment", "nlu", None, 55.0),
            entry("qa", "nlu", None, 60.0),
            entry("translation-en-xx", "nlg", "translations", 80.0),
            entry("translation-xx-en", "nlg", "translations", 88.0),
            entry("abssum", "nlg", None, 20.0),
        ]
    )
    assert doc["th"]["nlu"]["total"] == 57.5
    assert doc["th"]["nlg"]["translations"] == 84.0 and doc["th"]["nlg"]["total"] == 52.0
    assert doc["th"]["total"] == (57.5 + 52.0) / 2 == doc["total"]


def test_export_command_and_no_run(tmp_path, seahelm_suite):
    assert "seahelm" in FORMATS
    _ifeval_run(tmp_path / "out")
    files = export("seahelm", tmp_path / "exp", outputs=tmp_path / "out")
    assert any(p.name.endswith("_if-eval_th.jsonl") for p in files)
    from thai_eval_utils.core.errors import ThaiEvalError

    with pytest.raises(ThaiEvalError, match="no finished run"):
        export("seahelm", tmp_path / "exp2", outputs=tmp_path / "empty")


def test_model_basename():
    assert writer.model_basename("aisingapore/Llama-SEA-LION-v3-8B-IT") == "Llama-SEA-LION-v3-8B-IT"
    assert writer.model_basename("/models/gemma 3/") == "gemma_3"
    assert writer.model_basename("embedded") == "embedded"
