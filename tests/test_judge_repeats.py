"""Repeated judgements and the reference order against a fake judge whose score depends on the seed
in the request and on which reference comes first: k calls with distinct seeds, a rerun makes none, repeat 0
keeps today's cache key, the spread and noise floor and the order effect equal hand-computed values."""

from __future__ import annotations

import json
import math
import re

import pandas as pd
import pytest
from fake_openai_server import (
    MALFORMED_REPLIES,
    FakeOpenAIServer,
    PerAnswerScript,
    Reply,
)
from test_judge import FAKE_KEY, frame, run

from thai_eval_utils.stats.noise_floor import noise_floor
from thai_eval_utils.stats.paired import compare_paired
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.backend.openai_client import ApiModel
from thai_eval_utils.core.provenance import sha256_text
from thai_eval_utils.thaicli.judge import JudgeParams
from thai_eval_utils.thaicli.scores import item_means, thaicli_scores
from thai_eval_utils.judging.cache import JudgementCache
from thai_eval_utils.thaicli.judge_order import judge_both_orders
from thai_eval_utils.thaicli.judge_prompt import (
    TEMPLATE_SHA256,
    TEMPLATE_TEXT,
    TEMPLATE_VERSION,
    judge_template,
)

Z95 = 1.959963984540054
_ANSWER = re.compile(r"<model_answer>\s*(.*?)\s*</model_answer>", re.S)
#: Five answers "s<base>": factoid 3, 4, 6 and instruction 5, 2.
ANSWERS = ["s3", "s4", "s6", "s5", "s2"]
FORMATS = ["factoid"] * 3 + ["instruction"] * 2
#: Today's (pre-repeats) cache key of frame(["a"]).iloc[0] judged by "fake-judge" with the default JudgeParams and
#: run folder of frame(["a", "b"]): computed with the code before this change, so old caches and runs resume.
TODAYS_KEY = "29ab411bb88ebdb5c5356f884ba4b66a61574b3320051eb6f9583985b6a6da2b"
TODAYS_CONFIG_ID = "9e0d09b1f3c5"


def _api(srv: FakeOpenAIServer) -> ApiModel:
    return ApiModel("fake-judge", base_url=srv.base_url, api_key=FAKE_KEY, concurrency=4, timeout=5.0, max_retries=3)


def rejected_first(content: str) -> bool:
    return content.index("<rejected_answer>") < content.index("<chosen_answer>")


class SeedJudge:
    """Score = base + (seed - 10) for odd bases (even bases ignore the seed), + 1 when the rejected reference
    comes first and base >= 4. Keeps every (answer, seed, order) it was asked about."""

    def __init__(self, fail: dict[tuple[str, int], list] | None = None) -> None:
        self.asked: list[tuple[str, int, bool]] = []
        self.fail = fail or {}

    def __call__(self, body):
        content = body["messages"][-1]["content"]
        answer, seed = _ANSWER.search(content).group(1), body["seed"]
        self.asked.append((answer, seed, rejected_first(content)))
        if self.fail.get((answer, seed)):
            return self.fail[(answer, seed)].pop(0)
        base = int(answer[1:])
        score = base + (seed - 10) * (base % 2) + (rejected_first(content) and base >= 4)
        return Reply(f"<score>{score}</score><explanation>ข้อ {answer}</explanation>")


def test_repeats_make_k_calls_with_distinct_seeds_and_a_rerun_makes_none(tmp_path):
    judge = SeedJudge()
    params = JudgeParams(seed=10)
    with FakeOpenAIServer(judge) as srv:
        res = run(frame(ANSWERS, FORMATS), srv, tmp_path, params=params, repeats=3)
    assert srv.n_chat_calls == 15
    assert sorted(judge.asked) == sorted((a, s, False) for a in ANSWERS for s in (10, 11, 12))
    items = res.items
    assert (len(items), items["repeat"].tolist()[:6], items["seed"].tolist()[:3]) == (15, [0, 1, 2] * 2, [10, 11, 12])
    got = items.pivot(index="answer", columns="repeat", values="score").loc[ANSWERS].to_numpy().tolist()
    assert got == [[3, 4, 5], [4, 4, 4], [6, 6, 6], [5, 6, 7], [2, 2, 2]]
    # scores: item means 4, 4, 6 | 6, 2 -> factoid 14/3, instruction 4, ThaiCLI 13/3; n counts items, not judgements
    assert (res.scores.factoid.value, res.scores.factoid.n) == (pytest.approx(14 / 3), 3)
    assert (res.scores.instruction.value, res.scores.instruction.n) == (4.0, 2)
    assert res.scores.thaicli.value == pytest.approx(13 / 3)
    assert res.scores.factoid.stderr == pytest.approx(pd.Series([4, 4, 6]).std() / math.sqrt(3))
    assert "|repeats:3" in res.scores.thaicli.signature
    s = res.summary
    assert (s["n_items"], s["n_judgements"], s["n_repeats"], s["seeds"], s["n_unjudged"]) == (5, 15, 3, [10, 11, 12], 0)
    noise = s["judge_noise"]
    spread = noise["item_spread"]
    # per item: std 1, 0, 0, 1, 0 (ddof=1 of 3,4,5 is 1); range 2, 0, 0, 2, 0
    assert [spread["mean_std"], spread["mean_range"], spread["max_range"]] == pytest.approx([0.4, 0.8, 2.0])
    assert spread["n_items_that_vary"] == 2
    assert {r["id"]: r["std"] for r in spread["per_item"]} == dict(zip(res.items["id"][::3], [1.0, 0, 0, 1.0, 0]))
    # plain item mean per repeat: 20/5, 22/5, 24/5 -> sd 0.4
    assert noise["item_mean"]["repeat_means"] == pytest.approx([4.0, 4.4, 4.8])
    assert noise["item_mean"]["sd_of_mean"] == pytest.approx(0.4)
    # ThaiCLI per repeat: (13/3 + 7/2) / 2, (14/3 + 4) / 2, (5 + 9/2) / 2 -> steps of 5/12, sd 5/12
    thaicli = noise["thaicli"]
    assert thaicli["repeat_means"] == pytest.approx([47 / 12, 52 / 12, 57 / 12])
    for r, m in enumerate(thaicli["repeat_means"]):  # each is thaicli_scores of that repeat alone
        assert m == pytest.approx(thaicli_scores(items[items["repeat"] == r]).thaicli.value)
    assert thaicli["sd_of_mean"] == pytest.approx(5 / 12)
    assert thaicli["min_detectable_diff"] == pytest.approx(Z95 * math.sqrt(2) * 5 / 12)
    # pooled: within-item variances 1, 0, 0 (factoid) and 1, 0 (instruction): sqrt(1/3 / 3 + 1/2 / 2) / 2
    assert thaicli["sd_of_mean_pooled"] == pytest.approx(math.sqrt(13) / 12)
    assert thaicli["signature"] == "noise:repeats|level:0.95|repeats:3|items:5|strata:format"
    card = json.loads((res.store.root / "run_card.json").read_text())
    assert card["config"]["repeats"] == 3 and "reference_order" not in card["config"]
    assert json.loads((res.store.root / "summary.json").read_text())["judge_noise"] == json.loads(json.dumps(noise))
    written = [json.loads(line) for line in res.store.items_path.read_text().splitlines()]
    assert [(r["repeat"], r["seed"]) for r in written[:3]] == [(0, 10), (1, 11), (2, 12)]
    with FakeOpenAIServer(SeedJudge()) as srv2:
        again = run(frame(ANSWERS, FORMATS), srv2, tmp_path, params=params, repeats=3)
    assert srv2.n_chat_calls == 0 and again.summary["n_from_cache"] == 15
    assert again.summary["judge_noise"] == noise
    with FakeOpenAIServer(SeedJudge()) as srv3:  # 4 repeats: only the new repeat is asked for
        four = run(frame(ANSWERS, FORMATS), srv3, tmp_path, params=params, repeats=4)
    assert srv3.n_chat_calls == 5 and {b["seed"] for b in srv3.bodies} == {13}
    assert four.summary["judge_noise"]["n_repeats"] == 4


def test_repeat_zero_keeps_todays_cache_key_and_run_folder(tmp_path):
    cache = JudgementCache(tmp_path / "cache" / "thaicli_judgements.jsonl")
    cache.append(
        {
            "key": TODAYS_KEY,
            "status": "scored",
            "score": 9.0,
            "attempts": 1,
            "raw_judgements": ["<score>9</score>"],
            "token_usage": {"prompt": 1, "completion": 1},
        }
    )  # (a line an earlier version wrote)
    with FakeOpenAIServer(PerAnswerScript(default=Reply("<score>7</score>"))) as srv:
        once = run(frame(["a", "b"]), srv, tmp_path)
    assert once.items["judgement_key"][0] == TODAYS_KEY and once.items["score"][0] == 9.0
    assert srv.n_chat_calls == 1 and once.store.config_id == TODAYS_CONFIG_ID
    with FakeOpenAIServer(PerAnswerScript(default=Reply("<score>7</score>"))) as srv2:
        twice = run(frame(["a", "b"]), srv2, tmp_path, repeats=2)
    assert srv2.n_chat_calls == 2 and {b["seed"] for b in srv2.bodies} == {1}  # repeat 1 of both; repeat 0 cached
    assert twice.items["judgement_key"][0] == TODAYS_KEY and twice.items["score"].tolist() == [9.0, 7.0, 7.0, 7.0]
    assert len(set(twice.items["judgement_key"])) == 4 and twice.store.config_id != TODAYS_CONFIG_ID


def test_reference_order_swaps_the_prompt_and_its_hash():
    swapped = judge_template("rejected_first")
    assert judge_template().sha256 == TEMPLATE_SHA256 and judge_template().version == TEMPLATE_VERSION
    assert swapped.sha256 == sha256_text(swapped.text) != TEMPLATE_SHA256
    assert swapped.version == "judge_v1+rejected_first"
    normal = judge_template().messages("ถาม", "ดี", "ไม่ดี", "ตอบ")
    messages = swapped.messages("ถาม", "ดี", "ไม่ดี", "ตอบ")
    assert messages[0] == normal[0]
    good, bad = "<chosen_answer>\nดี\n</chosen_answer>", "<rejected_answer>\nไม่ดี\n</rejected_answer>"
    assert messages[1]["content"] == normal[1]["content"].replace(f"{good}\n\n{bad}", f"{bad}\n\n{good}")
    assert rejected_first(messages[1]["content"]) and not rejected_first(normal[1]["content"])
    assert len(swapped.text) == len(TEMPLATE_TEXT)
    with pytest.raises(ValueError, match="reference_order"):
        judge_template("chosen_last")


def test_order_effect_equals_the_hand_computed_paired_difference(tmp_path):
    judge = SeedJudge()
    with FakeOpenAIServer(judge) as srv:
        both = judge_both_orders(
            frame(ANSWERS, FORMATS),
            _api(srv),
            model_name="m",
            outputs=tmp_path,
            progress=False,
            params=JudgeParams(seed=10),
            repeats=2,
        )
    assert srv.n_chat_calls == 20  # 5 items x 2 repeats x 2 orders
    assert sorted(judge.asked) == sorted((a, s, o) for a in ANSWERS for s in (10, 11) for o in (False, True))
    # the prompt of every rejected-first request has the rejected reference first
    assert sum(rejected_first(b["messages"][-1]["content"]) for b in srv.bodies) == 10
    cf, rf = both.chosen_first, both.rejected_first
    assert (
        cf.summary["template_sha256"] == TEMPLATE_SHA256
        and rf.summary["template_sha256"] == judge_template("rejected_first").sha256
    )
    assert rf.summary["reference_order"] == "rejected_first" and set(rf.items["reference_order"]) == {"rejected_first"}
    assert not set(cf.items["judgement_key"]) & set(rf.items["judgement_key"]) and cf.store.root != rf.store.root
    # item means over seeds 10, 11: chosen first 3.5, 4, 6, 5.5, 2; rejected first +1 for bases 4, 6, 5
    e = both.effect
    assert (e.mean_b, e.mean_a) == (pytest.approx(21 / 5), pytest.approx(24 / 5))
    assert (e.diff, e.n_paired) == (pytest.approx(0.6), 5)
    ids = list(frame(ANSWERS, FORMATS)["id"])
    direct = compare_paired(
        dict(zip(ids, [3.5, 5, 7, 6.5, 2])), dict(zip(ids, [3.5, 4, 6, 5.5, 2])), metric="x", test="permutation"
    )
    assert (e.ci_low, e.ci_high, e.p_value) == (direct.ci_low, direct.ci_high, direct.p_value)
    assert e.ci_low <= 0.6 <= e.ci_high
    with FakeOpenAIServer(SeedJudge()) as srv2:  # a rerun of both orders makes no call
        again = judge_both_orders(
            frame(ANSWERS, FORMATS),
            _api(srv2),
            model_name="m",
            outputs=tmp_path,
            progress=False,
            params=JudgeParams(seed=10),
            repeats=2,
        )
    assert srv2.n_chat_calls == 0 and again.effect.diff == e.diff


def test_a_failing_repeat_is_unjudged_reported_and_left_out_of_the_noise(tmp_path):
    # repeat 1 of "s3" gets a malformed 200 reply on every try (a failed call, never a score)
    judge = SeedJudge(fail={("s3", 11): [MALFORMED_REPLIES["not_json"]] * 3})
    with FakeOpenAIServer(judge) as srv:
        res = run(frame(ANSWERS, FORMATS), srv, tmp_path, params=JudgeParams(seed=10), repeats=3, max_retries=2)
    s3 = res.items[res.items["answer"] == "s3"].set_index("repeat")
    assert s3["status"].tolist() == ["scored", "unjudged", "scored"] and "502" in s3.loc[1, "error"]
    assert (res.n_unjudged, res.summary["unjudged_ids"]) == (1, [s3["id"].iloc[0]])
    assert (
        res.summary["judge_noise"]["left_out_ids"] == [s3["id"].iloc[0]] and res.summary["judge_noise"]["n_items"] == 4
    )
    assert res.scores.factoid.value == pytest.approx((4 + 4 + 6) / 3)  # s3: mean of its judged repeats 3 and 5
    assert res.scores.by_format.set_index("format").loc["factoid", "n_unjudged"] == 1
    with FakeOpenAIServer(SeedJudge()) as srv2:
        again = run(frame(ANSWERS, FORMATS), srv2, tmp_path, params=JudgeParams(seed=10), repeats=3)
    assert [(b["seed"]) for b in srv2.bodies] == [11] and again.summary["judge_noise"]["n_items"] == 5


def test_repeats_write_no_secret(tmp_path):
    with FakeOpenAIServer(SeedJudge()) as srv:
        run(
            frame(["s3", "s4"]), srv, tmp_path, repeats=2, params=JudgeParams(seed=10), reference_order="rejected_first"
        )
    assert srv.auth_headers == {f"Bearer {FAKE_KEY}"}
    for p in (p for p in tmp_path.rglob("*") if p.is_file()):
        assert FAKE_KEY.encode() not in p.read_bytes(), p


def test_repeat_arguments_and_items_are_checked_before_any_call(tmp_path):
    df = frame(["s3", "s4"])
    with FakeOpenAIServer(SeedJudge()) as srv:
        with pytest.raises(ValueError, match="positive integer"):
            run(df, srv, tmp_path, repeats=0)
        with pytest.raises(ThaiEvalDataError, match="appears twice") as err:
            run(df.assign(id="same"), srv, tmp_path, repeats=2)
        with pytest.raises(ValueError, match="reference_order"):
            run(df, srv, tmp_path, reference_order="random")
    assert err.value.row == 1 and srv.n_chat_calls == 0 and not (tmp_path / "runs").exists()
    rows = pd.DataFrame({"format": ["factoid"] * 2, "theme": ["Culture"] * 2, "score": [5.0, 7.0], "repeat": [0, 1]})
    with pytest.raises(ThaiEvalDataError, match="'id' column"):
        thaicli_scores(rows)
    with pytest.raises(ThaiEvalDataError, match="twice in repeat 1"):
        item_means(rows.assign(id=["x", "x"], repeat=[1, 1]))
    assert thaicli_scores(rows.assign(id=["x", "x"])).factoid.value == 6.0  # one item, mean of its 2 repeats


def test_noise_floor_stratum_errors():
    df = pd.DataFrame(
        {"key": [1, 1, 2, 2], "repeat": [0, 1, 0, 1], "score": [1, 2, 3, 4], "format": ["f", "i", "f", "f"]}
    )
    with pytest.raises(ThaiEvalDataError, match="more than one format"):
        noise_floor(df, stratum="format")
    with pytest.raises(ThaiEvalDataError, match="no column 'theme'"):
        noise_floor(df, stratum="theme")
