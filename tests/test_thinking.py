"""The thinking cut (thai_eval_utils/tasks/thinking.py): each rule against the reference functions' own
outputs (tests/data/thinking/reference_cuts.json, made by benchmarks/thinking_reference.py from lighteval 3fd1526 and
lm-eval 4e7e0d4), the strict rule's failed answers, the stored raw reply untouched, options and signatures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from thai_eval_utils.tasks.thinking import (
    DEFAULT,
    NOT_SUPPORTED,
    ThinkingOption,
    apply_to_model,
    config_entry,
    option_of,
    split_reply,
    thinking_option,
)

REFERENCE = json.loads((Path(__file__).parent / "data" / "thinking" / "reference_cuts.json").read_text("utf-8"))
CASES = REFERENCE["cases"]

#: The strict rule (the default) on every reference case: the scored text, or None for a failed answer.
STRICT = {
    "closed": "คำตอบคือ 4",
    "closed_newlines": "\n\nThe answer is 4",  # lighteval keeps the whitespace around a block
    "unclosed": None,  # lighteval would score "<think>คิดไปเรื่อย ๆ แต่ไม่จบ"
    "twice": "ตอบหนึ่ง ตอบสอง",
    "close_without_open": "คำตอบ",  # lighteval would score "เหตุผลในใจ</think>คำตอบ"
    "close_then_block": "yw",
    "closed_then_unclosed": None,
    "nested": "c</think>d",
    "no_thinking": "คำตอบคือ 42",
    "empty": "",
    "empty_block": "ตอบ",
    "text_before_block": "ก่อน  หลัง",
}


def test_reference_fixture_names_its_commits():
    assert REFERENCE["lighteval"]["commit"].startswith("3fd15266")
    assert REFERENCE["lm-eval"]["commit"].startswith("4e7e0d47")
    assert set(CASES) == set(STRICT)


@pytest.mark.parametrize("name", sorted(CASES))
def test_lighteval_rule_is_lightevals_function(name):
    case = CASES[name]
    split = split_reply(case["raw"], ThinkingOption(rule="lighteval"))
    assert split.answer == case["lighteval"] and not split.failed


@pytest.mark.parametrize("name", sorted(CASES))
def test_lm_eval_rule_is_lm_evals_function(name):
    case = CASES[name]
    assert split_reply(case["raw"], ThinkingOption(rule="lm-eval")).answer == case["lm-eval"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_strict_rule(name):
    case = CASES[name]
    split = split_reply(case["raw"], DEFAULT)
    assert split.answer == STRICT[name]
    assert split.failed == (STRICT[name] is None)
    assert split.scored == (STRICT[name] or "")
    assert split.raw == case["raw"]  # the raw reply is carried whole
    # where lighteval closes every block it opens and no close stands alone, strict and lighteval agree
    if "</think>" not in case["raw"].split("<think>")[0] and not split.unclosed:
        assert split.answer == case["lighteval"]


def test_think_and_close_keeps_the_thinking_apart():
    split = split_reply("<think>คิด 1</think>ตอบ<think>คิด 2</think>!")
    assert (split.answer, split.thinking, split.unclosed, split.has_thinking) == ("ตอบ!", "คิด 1\nคิด 2", False, True)


def test_unclosed_is_counted_under_every_rule_and_fails_only_strict():
    raw = "<think>a</think>คำตอบ<think>ยังคิด"
    for rule, failed in (("strict", True), ("lighteval", False), ("lm-eval", False)):
        split = split_reply(raw, ThinkingOption(rule=rule))
        assert split.unclosed and split.failed == failed, rule
    strict = split_reply(raw)
    assert strict.thinking == "a\nยังคิด" and strict.scored == ""


def test_no_thinking_is_untouched_and_not_counted():
    split = split_reply("ตอบเลย 7")
    assert (split.answer, split.thinking, split.unclosed, split.has_thinking) == ("ตอบเลย 7", "", False, False)


def test_off_scores_the_raw_reply():
    raw = "<think>x"
    split = split_reply(raw, ThinkingOption(strip=False))
    assert split.answer == raw and not split.failed and split.thinking == ""


def test_own_tags():
    option = thinking_option("strip", "[THINK],[/THINK]")
    assert split_reply("[THINK]hmm[/THINK] ตอบ", option).answer == " ตอบ"
    assert split_reply("<think>x</think>y", option).answer == "<think>x</think>y"


def test_signatures():
    assert DEFAULT.signature() == "think:strip(<think>,</think>)"
    assert ThinkingOption(strip=False).signature() == "think:off"
    assert thinking_option("lighteval").signature() == "think:lighteval(<think>,</think>)"
    assert (
        thinking_option("lm-eval", max_thinking_tokens=512, enable_thinking=False).signature()
        == "think:lm-eval(<think>,</think>,budget:512,enable:False)"
    )
    assert thinking_option("off", enable_thinking=True).signature() == "think:off(enable:True)"


def test_config_entry_keeps_default_config_ids():
    assert config_entry(DEFAULT) == {} and config_entry(thinking_option(None)) == {}
    off = thinking_option("off")
    assert config_entry(off) == {"thinking": off.record()}
    assert option_of(config_entry(off)) == off and option_of({}) == DEFAULT


def test_bad_options_name_the_problem():
    with pytest.raises(ValueError, match="thinking must be one of"):
        thinking_option("maybe")
    with pytest.raises(ValueError, match="two tags"):
        thinking_option("strip", "<think>")
    with pytest.raises(ValueError, match="different non-empty"):
        ThinkingOption(open_tag="x", close_tag="x")
    with pytest.raises(ValueError, match=">= 0"):
        ThinkingOption(max_thinking_tokens=-1)
    with pytest.raises(ValueError, match="unknown thinking rule"):
        ThinkingOption(rule="vibes")


class _Templated:
    def __init__(self):
        self.chat_template_kwargs = {"x": 1}
        self.thinking_budget = None
        self.thinking_budget_method = "two-phase"


class _Plain:
    pass


def test_apply_to_model_sets_and_restores():
    model = _Templated()
    option = thinking_option("strip", max_thinking_tokens=64, enable_thinking=False)
    with apply_to_model(model, option) as support:
        assert model.chat_template_kwargs == {"x": 1, "enable_thinking": False}
        assert model.thinking_budget == (64, "</think>")
    assert support == {"enable_thinking": "chat_template_kwargs", "max_thinking_tokens": "two-phase"}
    assert model.chat_template_kwargs == {"x": 1} and model.thinking_budget is None
    with apply_to_model(_Plain(), option) as support:
        pass
    assert support == {"enable_thinking": NOT_SUPPORTED, "max_thinking_tokens": NOT_SUPPORTED}
    with apply_to_model(_Plain(), DEFAULT) as support:
        pass
    assert support == {}


def test_cli_flags_become_the_notebooks_parameters():
    from thai_eval_utils.cli import build_parser
    from thai_eval_utils.cli.thinking_args import thinking_parameters as _thinking_parameters

    parser = build_parser()
    args = parser.parse_args(["run", "--model", "embedded"])
    assert _thinking_parameters(args) == {}  # unset: the notebooks keep their defaults (and the config ids)
    args = parser.parse_args(
        [
            "run",
            "--model",
            "embedded",
            "--thinking",
            "lighteval",
            "--think-tags",
            "<r>,</r>",
            "--max-thinking-tokens",
            "128",
            "--no-enable-thinking",
        ]
    )
    assert _thinking_parameters(args) == {
        "thinking": "lighteval",
        "think_tags": "<r>,</r>",
        "max_thinking_tokens": 128,
        "enable_thinking": False,
    }
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "--model", "embedded", "--thinking", "maybe"])
    bad = parser.parse_args(["run", "--model", "embedded", "--think-tags", "<r>"])
    with pytest.raises(ValueError, match="two tags"):
        _thinking_parameters(bad)
