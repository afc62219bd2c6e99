"""H6Protocol: the presets, overrides and their checks; config keys named for what they are (and kept by
redact()); runs stored by the previous version under the old keys resume without recomputing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fakes import FakeModel

from thai_eval_utils.core.provenance import redact
from thai_eval_utils.h6 import evaluation as h6
from thai_eval_utils.h6.protocol import (
    GSM8K_STOPS_H,
    GSM8K_STOPS_LB,
    LEADERBOARD,
    LM_EVAL,
    H6Protocol,
    protocol_from,
)

LEGACY = Path(__file__).parent / "data" / "h6_legacy_runs"


def _arc(q, texts, key):
    return {"question": q, "choices": {"text": texts, "label": list("ABCD"[: len(texts)])}, "answerKey": key}


ARC_DOCS = [_arc("ข้อหนึ่ง", ["ก", "ขขข"], "A"), _arc("ข้อสอง", ["ค", "งง"], "B"), _arc("ข้อสาม", ["จ", "ฉ"], "A")]
ARC_LLS = {" ก": -2.0, " ขขข": -3.0, " ค": -1.0, " งง": -3.0, " จ": -1.0, " ฉ": -4.0}
GSM = [
    {"question": "ไข่ 10 ฟอง แตก 4", "answer": "#### 6"},
    {"question": "เงิน 500 บาท ได้เพิ่ม 500", "answer": "#### 1,000"},
]


def test_presets():
    assert LEADERBOARD == H6Protocol(
        num_fewshot=None,
        sampler="lb",
        fewshot_seed=None,
        add_bos_token=None,
        gsm8k_stops=(":", "Question:", "Question"),
        max_new_tokens=256,
        mc2="lb",
        mmlu_average="macro",
        templates=None,
    )
    assert (LM_EVAL.sampler, LM_EVAL.gsm8k_stops, LM_EVAL.mc2, LM_EVAL.mmlu_average) == (
        "h",
        ("Question:", "</s>", "<|im_end|>"),
        "mask",
        "micro",
    )
    assert LM_EVAL.replace(mc2="lb", sampler="lb", mmlu_average="macro", gsm8k_stops="lb") == LEADERBOARD
    assert H6Protocol(gsm8k_stops="h").gsm8k_stops == GSM8K_STOPS_H and LEADERBOARD.gsm8k_stops == GSM8K_STOPS_LB
    assert H6Protocol(gsm8k_stops=["\n\n"]).gsm8k_stops == ("\n\n",)


def test_protocol_from_parameters_keeps_the_preset_where_none():
    assert protocol_from("lb") == LEADERBOARD
    p = protocol_from("lm_eval", num_fewshot=0, sampler=None, fewshot_seed=7, add_bos_token=None, mc2=None)
    assert p == LM_EVAL.replace(num_fewshot=0, fewshot_seed=7)
    assert protocol_from(LM_EVAL, mmlu_average="macro").mmlu_average == "macro"
    with pytest.raises(ValueError, match="unknown Thai-H6 protocol preset 'leaderboard'"):
        protocol_from("leaderboard")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"mc2": "x"}, "mc2 must be 'lb' or 'mask', not 'x'"),
        ({"mmlu_average": "mean"}, "mmlu_average must be 'macro' or 'micro', not 'mean'"),
        ({"sampler": "random"}, "unknown few-shot sampler 'random'"),
        ({"gsm8k_stops": "lm_eval"}, "gsm8k_stops must be 'lb', 'h' or a list of strings, not 'lm_eval'"),
    ],
)
def test_bad_options_are_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        LEADERBOARD.replace(**changes)


def test_config_keys_survive_redact():
    """The keys are named for what they are; redact() drops secrets, not these."""
    config = {"add_bos_token": True, "max_new_tokens": 32, "gsm8k_stops": [":"], "api_token": "x", "hf_token": "y"}
    assert redact(config) == {"add_bos_token": True, "max_new_tokens": 32, "gsm8k_stops": [":"]}


def test_lm_eval_preset_reaches_config_and_signature(tmp_path):
    model = FakeModel(score=lambda c, x: (ARC_LLS[x], False), complete=lambda p: " #### 6")
    arc = h6.evaluate(model, "th_arc", ARC_DOCS, LM_EVAL.replace(num_fewshot=0), outputs=tmp_path, progress=False)
    assert (arc.config["sampler"], arc.config["fewshot_seed"]) == ("h", 1234)
    gsm = h6.evaluate(
        model, "th_gsm8k", GSM, LM_EVAL.replace(num_fewshot=0, max_new_tokens=8), outputs=tmp_path, progress=False
    )
    assert gsm.config["gsm8k_stops"] == ["Question:", "</s>", "<|im_end|>"] and gsm.config["max_new_tokens"] == 8
    assert model.calls[-1] == (
        "generate",
        {"n": 2, "max_new_tokens": 8, "stop": list(GSM8K_STOPS_H), "temperature": 0.0},
    )
    assert "|stops:Question:+</s>+<|im_end|>|max_new:8|" in gsm.headline.signature
    assert gsm.headline.value == 0.5 and arc.headline.value == pytest.approx(1 / 3)


def test_runs_under_old_config_keys_resume_without_recomputing(tmp_path):
    """Runs written by the previous version (keys add_bos, max_new; tests/data/h6_legacy_runs) are found, moved
    to the new config id and resumed: the model is never called and the numbers are the stored ones."""
    shutil.copytree(LEGACY, tmp_path, dirs_exist_ok=True)
    old = {p.parent.parent.name: p.parent for p in (tmp_path / "runs").rglob("run_card.json")}
    old_cards = {t: json.loads((d / "run_card.json").read_text(encoding="utf-8")) for t, d in old.items()}
    assert old_cards["th_arc"]["config"]["add_bos"] is False and old_cards["th_gsm8k"]["config"]["max_new"] == 32
    model = FakeModel("legacy-fake", fail_on_call=1)  # any call raises: nothing may be recomputed
    arc = h6.evaluate(model, "th_arc", ARC_DOCS, LEADERBOARD.replace(num_fewshot=0), outputs=tmp_path, progress=False)
    gsm = h6.evaluate(
        model, "th_gsm8k", GSM, LEADERBOARD.replace(num_fewshot=0, max_new_tokens=32), outputs=tmp_path, progress=False
    )
    assert model.calls == []
    assert arc.table["acc"].tolist() == [1.0, 0.0, 1.0] and arc.table["acc_norm"].tolist() == [0.0, 0.0, 1.0]
    assert arc.headline.value == pytest.approx(1 / 3) and gsm.headline.value == 0.5
    assert gsm.table["generation"].tolist() == [" ได้ #### 6", " ได้ #### 6"]
    for task, res in (("th_arc", arc), ("th_gsm8k", gsm)):
        card = json.loads((res.run_dir / "run_card.json").read_text(encoding="utf-8"))
        assert card["migrated_from"] == old[task].name != res.run_dir.name
        assert card["config"] == res.config and "add_bos" not in card["config"] and "max_new" not in card["config"]
        assert card["created_at"] == old_cards[task]["created_at"] and not old[task].exists()
    assert gsm.config["max_new_tokens"] == 32 and arc.config["add_bos_token"] is False
