"""ThaiCLI judge: prompt construction, reply parser, half-up rounding, aggregation (hand-computed values)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from thai_eval_utils.backend.openai_client import estimate_cost
from thai_eval_utils.core.provenance import sha256_text
from thai_eval_utils.core.tables import round_half_up
from thai_eval_utils.thaicli import judge
from thai_eval_utils.thaicli.judge import thaicli_scores
from thai_eval_utils.thaicli.judge_prompt import build_messages, parse_judgement

SARA_AM = "\u0e33"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("<score>8</score><explanation>คำตอบถูกต้องและสุภาพ</explanation>", (8.0, "คำตอบถูกต้องและสุภาพ")),
        # extra text around the tags, whitespace inside them
        (
            "Here is my verdict.\n<score> 7 </score>\n<explanation>\n ดีมาก ครับ \n</explanation>\nThanks!",
            (7.0, "ดีมาก ครับ"),
        ),
        ("< score >6< / score >", (6.0, "")),
        # uppercase / mixed-case tags
        ("<SCORE>9</SCORE><EXPLANATION>ok</Explanation>", (9.0, "ok")),
        # two score tags: the first numeric one decides
        ("<score>3</score> on reflection <score>9</score>", (3.0, "")),
        ("<score>N/A</score><score>6</score>", (6.0, "")),
        # bounds and decimals
        ("<score>1</score>", (1.0, "")),
        ("<score>10</score>", (10.0, "")),
        ("<score>7.5</score>", (7.5, "")),
        # Thai digits are read digit by digit
        ("<score>๗</score>", (7.0, "")),
        ("<score>๑๐</score><explanation>ถูก</explanation>", (10.0, "ถูก")),
        ("<score>๗.๕</score>", (7.5, "")),
        # an explanation cut off by max_tokens runs to the end of the reply
        ("<score>4</score><explanation>คำตอบผิดเพราะ", (4.0, "คำตอบผิดเพราะ")),
        # Thai text is kept as written (SARA AM is not decomposed)
        (f"<score>5</score><explanation>น{SARA_AM}้</explanation>", (5.0, f"น{SARA_AM}้")),
    ],
)
def test_parse_valid(text, expected):
    assert parse_judgement(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "score: 8",
        "<score>0</score>",  # below the scale
        "<score>11</score>",  # above the scale
        "<score>10.5</score>",
        "<score>-3</score>",
        "<score>0</score><score>8</score>",  # the first numeric pair is out of range: invalid, no fallback to the next
        "<score>7",  # missing closing tag
        "<score>7</explanation>",
        "<score>7/10</score>",
        "<score>8.</score>",
        "<score>seven</score><explanation>ดี</explanation>",
    ],
)
def test_parse_invalid(text):
    assert parse_judgement(text) is None


def test_build_messages_layout_and_verbatim_text():
    q, c, r = "พระมหากษัตริย์พระองค์ใดทรงสร้างกรุงเทพฯ", "พระบาทสมเด็จพระพุทธยอดฟ้าจุฬาโลก", "ไม่ทราบ"
    answer = f"ร.๑ ทรงสร้าง ${{chosen}} {{question}} น{SARA_AM}้"
    msgs = build_messages(q, c, r, answer)
    assert [m["role"] for m in msgs] == ["system", "user"]
    user = msgs[1]["content"]
    for tag, text in (("question", q), ("chosen_answer", c), ("rejected_answer", r), ("model_answer", answer)):
        assert f"<{tag}>\n{text}\n</{tag}>" in user
    assert "<score>N</score>" in user and "<explanation>" in user
    assert "judge" in msgs[0]["content"]
    assert "[[" not in user and "#" not in msgs[0]["content"][:1]


def test_template_hash_is_the_file_hash():
    from importlib.resources import files

    text = (files("thai_eval_utils") / "templates" / "judge_v1.txt").read_text(encoding="utf-8")
    assert judge.TEMPLATE_SHA256 == sha256_text(text)
    assert "RECONSTRUCTION" in text.splitlines()[2]


@pytest.mark.parametrize(
    "value, expected",
    [
        (7.305, 7.31),
        ((7.56 + 7.05) / 2, 7.31),
        (56.105, 56.11),
        (2.675, 2.68),
        (7.3049, 7.3),
        (8.39, 8.39),
        (-1.005, -1.01),
    ],
)
def test_round_half_up_as_table5_prints(value, expected):
    assert float(round_half_up(value, 2)) == expected


def _items(rows):
    return pd.DataFrame(rows, columns=["format", "theme", "score", "status", "attempts"])


def test_thaicli_scores_hand_computed():
    items = _items(
        [
            ("factoid", "Culture", 8.0, "scored", 1),
            ("factoid", "Culture", 6.0, "scored", 3),
            ("factoid", "Religion", 0.0, "fallback_zero", 16),
            ("factoid", "Religion", math.nan, "unjudged", 0),
            ("instruction", "Culture", 9.0, "scored", 2),
            ("instruction", "Culture", 5.0, "scored", 1),
        ]
    )
    s = thaicli_scores(items, signature="sig")
    # factoid: (8 + 6 + 0) / 3; sample variance ((10/3)^2 + (4/3)^2 + (14/3)^2) / 2 = 52/3; se = sqrt(52/9)
    assert s.factoid.value == pytest.approx(4.666667, abs=1e-6)
    assert s.factoid.n == 3
    assert s.factoid.stderr == pytest.approx(2.403701, abs=1e-6)
    # instruction: (9 + 5) / 2 = 7; variance 8; se = sqrt(8 / 2) = 2
    assert s.instruction.value == 7.0 and s.instruction.stderr == pytest.approx(2.0)
    # ThaiCLI = (14/3 + 7) / 2 = 35/6; se = sqrt(52/9 + 4) / 2
    assert s.thaicli.value == pytest.approx(5.833333, abs=1e-6)
    assert s.thaicli.stderr == pytest.approx(1.563472, abs=1e-6)
    assert s.thaicli.n == 5
    fmt = s.by_format.set_index("format")
    assert fmt.loc["factoid", "n_zero_fallback"] == 1
    assert fmt.loc["factoid", "n_parse_retries"] == 0 + 2 + 15
    assert fmt.loc["factoid", "n_unjudged"] == 1
    assert fmt.loc["instruction", "n_parse_retries"] == 1
    theme = s.by_theme.set_index(["format", "theme"])
    assert theme.loc[("factoid", "Culture"), "mean"] == 7.0
    assert theme.loc[("factoid", "Religion"), "n"] == 1 and theme.loc[("factoid", "Religion"), "mean"] == 0.0
    assert s.table5_row() == {
        "thaicli": 5.83,
        "thaicli_stderr": 1.56,
        "factoid": 4.67,
        "factoid_stderr": 2.4,
        "instruction": 7.0,
        "instruction_stderr": 2.0,
    }
    assert str(s).splitlines()[0] == "thaicli = 5.8333 ± 1.5635 (n=5) | sig"


def test_thaicli_paper_rounding_case():
    # GPT-4 Turbo in Table 5: factoid 7.56, instruction 7.05 -> ThaiCLI printed 7.31
    items = _items([("factoid", "Culture", 7.56, "scored", 1), ("instruction", "Culture", 7.05, "scored", 1)])
    assert thaicli_scores(items).table5_row()["thaicli"] == 7.31


def test_estimate_cost_from_price_table():
    # gpt-4o-2024-05-13: $5 / 1M input, $15 / 1M output
    assert estimate_cost(["gpt-4o-2024-05-13"], 1_000_000, 200_000) == pytest.approx(8.0)
    assert estimate_cost(["some-local-model", "gpt-4o-mini"], 2_000_000, 1_000_000) == pytest.approx(0.9)
    assert estimate_cost(["some-local-model"], 10, 10) is None
