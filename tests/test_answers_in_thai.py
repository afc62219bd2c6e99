"""The answers-in-Thai rate (thai_eval_utils/tasks/language.py): the Typhoon code-switching rule on hand
cases, the rate's n and Wilson interval, and reply_stats on planted think tags."""

from __future__ import annotations

import pytest

from thai_eval_utils.tasks.language import (
    is_mainly_thai,
    reply_in_thai,
    reply_stats,
    script_counts,
    stats_columns,
    thai_rate,
    thai_share,
    wilson_interval,
)
from thai_eval_utils.tasks.thinking import ThinkingOption


def test_thai():
    text = "คำตอบคือ ๔๒ ครับ"
    c = script_counts(text)
    assert (c.thai, c.english, c.other) == (14, 0, 0)  # Thai digits count as Thai; the two spaces are neutral
    assert thai_share(text) == 1.0 and is_mainly_thai(text)


def test_english():
    assert thai_share("The answer is 42.") == 0.0 and not is_mainly_thai("The answer is 42.")


def test_mixed():
    text = "ใช้ Python ได้"  # 5 Thai (ใ ช ้ ไ ด ้ -> 6), 6 English
    c = script_counts(text)
    assert (c.thai, c.english) == (6, 6)
    assert thai_share(text) == 0.5 and is_mainly_thai(text)  # ties are Thai (thai >= english)
    assert not is_mainly_thai("ใช้ Pythonx ได้")  # 6 Thai, 7 English


def test_digits_and_punctuation_only():
    assert thai_share("42, 3.5 + (7)!") is None
    assert is_mainly_thai("42, 3.5 + (7)!")  # nothing code-switches: the reference counts it as Thai


def test_empty():
    assert thai_share("") is None and is_mainly_thai("")


def test_other_script_is_never_thai():
    assert not is_mainly_thai("คำตอบคือ 答案")
    assert not is_mainly_thai("คำตอบ\u00a0ครับ")  # a no-break space is outside the reference's allowed symbols
    assert is_mainly_thai("ราคา 5 € → ½ ✓ 😀")  # euro, arrow, fraction, dingbat and emoji are neutral


def test_reply_in_thai_cuts_thinking_and_fails_unclosed():
    assert reply_in_thai("<think>Let me think in English for a long while</think>คำตอบคือ 4")
    assert not reply_in_thai("<think>คิด...")  # a failed answer is not an answer in Thai
    assert not reply_in_thai("<think>คิด</think>The answer is four", ThinkingOption())


def test_rate_n_and_interval():
    rate = thai_rate([True, True, False, True])
    assert (rate["value"], rate["n"], rate["n_thai"]) == (0.75, 4, 3)
    low, high = wilson_interval(3, 4)
    assert rate["interval"]["low"] == low and rate["interval"]["high"] == high
    assert low == pytest.approx(0.3006418, abs=1e-6) and high == pytest.approx(0.9544127, abs=1e-6)
    assert thai_rate([])["value"] is None and thai_rate([])["interval"] is None
    one = thai_rate([True])["interval"]
    assert one["high"] == 1.0 and one["low"] == pytest.approx(0.2065493, abs=1e-6)


def test_reply_stats_on_planted_think_tags():
    records = [
        {"output": "<think>reasoning in English</think>คำตอบคือ ๔"},
        {"output": "<think>never closes"},
        {"output": "The answer is 4"},
        {"output": "ตอบ 4"},
        {"output": None},
    ]
    stats = reply_stats(records)
    assert stats["n_replies"] == 4 and stats["n_no_reply"] == 1
    assert (stats["n_thinking"], stats["n_thinking_unclosed"], stats["n_failed"]) == (2, 1, 1)
    assert stats["answers_in_thai"]["n"] == 4 and stats["answers_in_thai"]["value"] == 0.5
    assert stats["thinking"] == "think:strip(<think>,</think>)"
    lighteval = reply_stats(records, option=ThinkingOption(rule="lighteval"))
    assert (lighteval["n_thinking_unclosed"], lighteval["n_failed"]) == (1, 0)
    assert stats_columns(stats) == {"thai_rate": 0.5, "thai_n": 4, "n_thinking_unclosed": 1}
    assert stats_columns(None) == {"thai_rate": None, "thai_n": None, "n_thinking_unclosed": None}
