"""evaluate() on a fake model with known log-likelihoods: hand-computed scores, chunked calls, resume
through the results store, ``limit`` keeping the full run's few-shot draws, and the Thai-H6 average."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from fakes import FakeModel, _refuse

from thai_eval_utils.core.provenance import Score
from thai_eval_utils.h6 import evaluation as h6
from thai_eval_utils.h6.average import thai_h6_score
from thai_eval_utils.h6.fewshot import lb_draws
from thai_eval_utils.h6.protocol import LEADERBOARD, H6Protocol


def fake(score=None, reply=None, **kwargs) -> FakeModel:
    """The shared fake model with ``score(context, continuation) -> ll`` (never greedy) and ``reply(prompt)``."""
    return FakeModel(score=(lambda c, x: (float(score(c, x)), False)) if score else _refuse, complete=reply, **kwargs)


def shots(k, **options) -> H6Protocol:
    """The leaderboard protocol with ``k`` shots (and ``options``)."""
    return LEADERBOARD.replace(num_fewshot=k, **options)


def n_calls(model) -> int:
    return len(model.calls)


def _arc(q, texts, key):
    labels = "1234" if key.isdigit() else "ABCD"
    return {"question": q, "choices": {"text": texts, "label": list(labels[: len(texts)])}, "answerKey": key}


ARC_DOCS = [
    _arc("ข้อหนึ่ง", ["ก", "ขขข"], "A"),  # lls -2, -3: acc 1; per char -2 vs -1: acc_norm 0
    _arc("ข้อสอง", ["ค", "งง"], "2"),  # lls -1, -3: acc 0; per char -1 vs -1.5: acc_norm 0
    _arc("ข้อสาม", ["จ", "ฉ"], "A"),  # lls -1, -4: acc 1, acc_norm 1
]
ARC_LLS = {" ก": -2.0, " ขขข": -3.0, " ค": -1.0, " งง": -3.0, " จ": -1.0, " ฉ": -4.0}


def test_arc_zero_shot_hand_computed(tmp_path):
    model = fake(score=lambda c, x: ARC_LLS[x])
    res = h6.evaluate(model, "th_arc", ARC_DOCS, shots(0), outputs=tmp_path, progress=False)
    assert n_calls(model) == 1 and len(model.requests) == 6  # every doc in one call
    assert res.table["acc"].tolist() == [1.0, 0.0, 1.0]
    assert res.table["acc_norm"].tolist() == [0.0, 0.0, 1.0]
    assert res.table["gold"].tolist() == [0, 1, 0]
    assert res.table["lls"].tolist() == [[-2.0, -3.0], [-1.0, -3.0], [-1.0, -4.0]]
    # mean 2/3 and 1/3; sample stderr sqrt(1/3)/sqrt(3) = 1/3 for both
    assert res.scores["acc"].value == pytest.approx(2 / 3) and res.scores["acc"].stderr == pytest.approx(1 / 3)
    assert res.headline is res.scores["acc_norm"]
    assert res.headline.value == pytest.approx(1 / 3) and res.headline.stderr == pytest.approx(1 / 3)
    assert list(res.scores)[0] == "acc_norm"
    assert "shots:0" in res.headline.signature and "bos:no" in res.headline.signature
    card = json.loads((res.run_dir / "run_card.json").read_text(encoding="utf-8"))
    assert card["config"]["sampler"] == "lb" and card["config"]["add_bos_token"] is False
    assert card["benchmark"] == "thai_h6/th_arc"
    summary = json.loads((res.run_dir / "summary.json").read_text(encoding="utf-8"))
    assert summary["scores"]["acc_norm"]["value"] == pytest.approx(1 / 3)
    assert res.items_path.exists() and len(res.items_path.read_text(encoding="utf-8").splitlines()) == 3


def _numbered_arc(n):
    return [_arc(f"คำถามที่ {i}", [f"ตอบ{i}ก", f"ตอบ{i}ข"], "AB"[i % 2]) for i in range(n)]


def _hash_score(context, continuation):
    # deterministic, depends on both strings
    return -((sum(map(ord, context[-40:])) * 31 + sum(map(ord, continuation))) % 97) / 10.0


def test_resume_after_crash_does_not_recompute(tmp_path):
    docs = _numbered_arc(5)
    pool = _numbered_arc(8)
    crashing = fake(score=_hash_score, fail_on_call=2)
    with pytest.raises(RuntimeError, match="simulated crash"):
        h6.evaluate(
            crashing, "th_arc", docs, shots(2), fewshot_pool=pool, chunk_size=2, outputs=tmp_path, progress=False
        )
    assert n_calls(crashing) == 2  # docs 0-1 finished, the chunk of docs 2-3 crashed
    resumed = fake(score=_hash_score)
    res = h6.evaluate(
        resumed, "th_arc", docs, shots(2), fewshot_pool=pool, chunk_size=2, outputs=tmp_path, progress=False
    )
    assert n_calls(resumed) == 2  # docs 2-3 and doc 4 only
    assert len(resumed.requests) == 6
    assert all("คำถามที่ 0\n" not in c.rsplit("\n\n", 1)[-1] for c, _ in resumed.requests)
    fresh = fake(score=_hash_score)
    full = h6.evaluate(
        fresh, "th_arc", docs, shots(2), fewshot_pool=pool, chunk_size=2, outputs=tmp_path / "other", progress=False
    )
    assert n_calls(fresh) == 3
    pd.testing.assert_frame_equal(res.table.drop(columns="key"), full.table.drop(columns="key"))
    again = fake(score=_hash_score)
    h6.evaluate(again, "th_arc", docs, shots(2), fewshot_pool=pool, chunk_size=2, outputs=tmp_path, progress=False)
    assert n_calls(again) == 0


def test_limit_keeps_full_run_shots(tmp_path):
    docs, pool = _numbered_arc(9), _numbered_arc(12)
    full = h6.evaluate(
        fake(score=_hash_score), "th_arc", docs, shots(3), fewshot_pool=pool, outputs=tmp_path / "a", progress=False
    )
    part = h6.evaluate(
        fake(score=_hash_score),
        "th_arc",
        docs,
        shots(3),
        limit=4,
        fewshot_pool=pool,
        outputs=tmp_path / "b",
        progress=False,
    )
    assert part.table["shots"].tolist() == full.table["shots"].tolist()[:4] == lb_draws(9, 12, 3)[:4]
    assert part.table["prompt_sha256"].tolist() == full.table["prompt_sha256"].tolist()[:4]
    assert "limit:4" in part.headline.signature and "limit" not in full.headline.signature
    # the first shot of doc 0 is the pool item LB draws for it
    first = pool[lb_draws(9, 12, 3)[0][0]]["question"]
    model = fake(score=_hash_score)
    h6.evaluate(model, "th_arc", docs, shots(3), limit=1, fewshot_pool=pool, outputs=tmp_path / "c", progress=False)
    assert model.requests[0][0].startswith(f"Question: {first}\nAnswer: ")
    # a limited run shares the store with the full run: the full run reuses its items
    reuse = fake(score=_hash_score)
    h6.evaluate(
        reuse, "th_arc", docs, shots(3), fewshot_pool=pool, outputs=tmp_path / "b", progress=False, chunk_size=4
    )
    assert len(reuse.requests) == 2 * 5


def test_h_sampler_and_options_change_the_run(tmp_path):
    docs, pool = _numbered_arc(4), _numbered_arc(6)
    lb = h6.evaluate(
        fake(score=_hash_score), "th_arc", docs, shots(2), fewshot_pool=pool, outputs=tmp_path, progress=False
    )
    h = h6.evaluate(
        fake(score=_hash_score),
        "th_arc",
        docs,
        shots(2, sampler="h"),
        fewshot_pool=pool,
        outputs=tmp_path,
        progress=False,
    )
    assert lb.run_dir != h.run_dir
    assert h.config["sampler"] == "h" and h.config["fewshot_seed"] == 1234
    assert lb.config["fewshot_seed"] == 42
    with pytest.raises(ValueError, match="mc2 must be"):
        shots(0, mc2="x")


def test_truthfulqa_mc2_variants(tmp_path):
    doc = {
        "question": "ถาม",
        "mc1_targets": {"choices": ["จริง", "เท็จ"], "labels": [1, 0]},
        "mc2_targets": {"choices": ["จริงหนึ่ง", "เท็จหนึ่ง", "จริงสอง"], "labels": [1, 0, 1]},
    }
    lls = {" จริง": -1.0, " เท็จ": -0.5, " จริงหนึ่ง": math.log(0.2), " เท็จหนึ่ง": math.log(0.5), " จริงสอง": math.log(0.3)}
    res = h6.evaluate(fake(score=lambda c, x: lls[x]), "th_truthfulqa", [doc], outputs=tmp_path, progress=False)
    assert res.scores["mc1"].value == 0.0
    assert res.headline.name == "th_truthfulqa/mc2" and res.headline.value == pytest.approx(0.2)
    assert res.scores["mc2_mask"].value == pytest.approx(0.5)
    masked = h6.evaluate(
        fake(score=lambda c, x: lls[x]),
        "th_truthfulqa",
        [doc],
        LEADERBOARD.replace(mc2="mask"),
        outputs=tmp_path,
        progress=False,
    )
    assert masked.headline.value == pytest.approx(0.5) and "mc2:mask" in masked.headline.signature
    with pytest.raises(ValueError, match="zero-shot only"):
        h6.evaluate(fake(score=lambda c, x: 0.0), "th_truthfulqa", [doc], shots(1), outputs=tmp_path, progress=False)


def test_mmlu_macro_micro_and_per_subject_limit(tmp_path):
    def mmlu(subject, i, answer):
        return {"question": f"{subject} ข้อ {i}", "choices": ["w", "x", "y", "z"], "answer": answer, "subject": subject}

    docs = [mmlu("anatomy", 0, 0), mmlu("anatomy", 1, 1)] + [mmlu("virology", i, "A") for i in range(3)]
    pools = {"anatomy": [mmlu("anatomy", 9, 2)], "virology": [mmlu("virology", 9, 3)]}
    always_a = fake(score=lambda c, x: 0.0 if x == " A" else -1.0)
    res = h6.evaluate(always_a, "th_mmlu", docs, shots(1), fewshot_pool=pools, outputs=tmp_path, progress=False)
    # anatomy 1/2 (se 0.5), virology 3/3 (se 0): macro 0.75, se sqrt(0.25)/2; micro 4/5
    assert res.headline.value == pytest.approx(0.75) and res.headline.stderr == pytest.approx(0.25)
    assert res.scores["acc_micro"].value == pytest.approx(0.8)
    assert res.subject_scores["anatomy"].value == pytest.approx(0.5)
    assert res.subject_table()["acc"].tolist() == pytest.approx([50.0, 100.0])
    assert always_a.requests[0][0].startswith(
        "The following are multiple choice questions (with answers) about anatomy.\n\nanatomy ข้อ 9\nA. w"
    )
    micro = h6.evaluate(
        fake(score=lambda c, x: 0.0 if x == " A" else -1.0),
        "th_mmlu",
        docs,
        shots(1, mmlu_average="micro"),
        fewshot_pool=pools,
        outputs=tmp_path,
        progress=False,
    )
    assert micro.headline.value == pytest.approx(0.8)
    limited = h6.evaluate(
        fake(score=lambda c, x: 0.0),
        "th_mmlu",
        docs,
        shots(1),
        limit=1,
        fewshot_pool=pools,
        outputs=tmp_path,
        progress=False,
    )
    assert limited.table["doc"].tolist() == [0, 2]  # the first of each subject


def test_winogrande_blank_at_end_runs(tmp_path):
    docs = [
        {"sentence": "ฉันชอบ_", "option1": "แมว", "option2": "หมา", "answer": "2"},
        {"sentence": "_ วิ่งเร็วกว่าเต่า", "option1": "กระต่าย", "option2": "เต่า", "answer": "1"},
    ]
    model = fake(score=lambda c, x: -1.0 if x == " " else (-2.0 if c.endswith("กระต่าย") else -5.0))
    res = h6.evaluate(model, "th_winogrande", docs, shots(0), outputs=tmp_path, progress=False)
    assert model.requests[:2] == [("ฉันชอบแมว", " "), ("ฉันชอบหมา", " ")]
    assert res.table["pred"].tolist() == [0, 0]  # tie -> first option
    assert res.headline.value == pytest.approx(0.5)


def test_gsm8k_generation_strict_and_flexible(tmp_path):
    docs = [
        {"question": "ไข่ 10 ฟอง แตก 4", "answer": "10-4=<<10-4=6>>6\n#### 6"},
        {"question": "เงิน 500 บาท ได้เพิ่ม 500", "answer": "#### 1,000"},
    ]
    replies = {"ไข่ 10 ฟอง แตก 4": " เหลือ 6 ฟอง #### 6", "เงิน 500 บาท ได้เพิ่ม 500": " รวม 1,000 บาท"}
    model = fake(reply=lambda p: replies[p.rsplit("Question: ", 1)[1].split("\n")[0]])
    res = h6.evaluate(model, "th_gsm8k", docs, shots(0), outputs=tmp_path, progress=False)
    assert model.calls == [
        ("generate", {"n": 2, "max_new_tokens": 256, "stop": [":", "Question:", "Question"], "temperature": 0.0})
    ]
    assert res.table["strict"].tolist() == ["6", "[invalid]"]
    assert res.table["flexible"].tolist() == ["6", "1000"]
    assert res.headline.value == pytest.approx(0.5) and res.scores["flexible_match"].value == pytest.approx(1.0)
    h_model = fake(reply=lambda p: "")
    h_res = h6.evaluate(
        h_model, "th_gsm8k", docs, shots(0, gsm8k_stops="h", max_new_tokens=32), outputs=tmp_path, progress=False
    )
    assert h_model.calls[0][1]["stop"] == ["Question:", "</s>", "<|im_end|>"]
    assert h_res.config["max_new_tokens"] == 32 and "stops:Question:+</s>+<|im_end|>" in h_res.headline.signature


def test_bad_doc_names_row_and_field(tmp_path):
    from thai_eval_utils.core.errors import ThaiEvalDataError

    docs = ARC_DOCS + [{"question": "x", "choices": {"text": ["a"], "label": ["A"]}, "answerKey": "Z"}]
    with pytest.raises(ThaiEvalDataError, match="row 3, field 'answerKey'"):
        h6.evaluate(fake(score=lambda c, x: 0.0), "th_arc", docs, shots(0), outputs=tmp_path, progress=False)
    with pytest.raises(ThaiEvalDataError, match="25 shots requested from a few-shot pool of 0"):
        h6.evaluate(fake(score=lambda c, x: 0.0), "th_arc", ARC_DOCS, outputs=tmp_path, progress=False)


def test_thai_h6_average_full_and_partial():
    s = {
        t: Score(f"{t}/x", v, 100, 0.01 * (i + 1))
        for i, (t, v) in enumerate(zip(h6.TASKS, [0.4, 0.5, 0.6, 0.3, 0.7, 0.2]))
    }
    full = thai_h6_score(s)
    assert full.value == pytest.approx(45.0) and not full.partial
    # 100 * sqrt(0.01^2 (1+4+9+16+25+36)) / 6
    assert full.stderr == pytest.approx(100 * 0.01 * math.sqrt(91) / 6)
    row = full.row("gemma")
    assert list(row.columns[:8]) == [
        "model",
        "thai_h6_avg",
        "th_arc",
        "th_hellaswag",
        "th_mmlu",
        "th_truthfulqa",
        "th_winogrande",
        "th_gsm8k",
    ]
    assert row.loc[0, "th_mmlu"] == pytest.approx(60.0) and row.loc[0, "th_gsm8k_stderr"] == pytest.approx(6.0)
    part = thai_h6_score({"th_arc": s["th_arc"], "gsm8k": s["th_gsm8k"]})
    assert part.partial and part.missing == ("th_hellaswag", "th_mmlu", "th_truthfulqa", "th_winogrande")
    assert part.value == pytest.approx(30.0)
    assert math.isnan(part.row()["th_mmlu"].iloc[0]) and bool(part.row()["partial"].iloc[0])
    no_se = thai_h6_score({"th_arc": Score("a", 0.5, 1)})  # one document: no stderr
    assert no_se.stderr is None and math.isnan(no_se.row()["thai_h6_avg_stderr"].iloc[0])
    assert "partial" in str(part)


def test_thai_h6_average_from_results(tmp_path):
    res = h6.evaluate(
        fake(score=lambda c, x: ARC_LLS[x]), "th_arc", ARC_DOCS, shots(0), outputs=tmp_path, progress=False
    )
    score = thai_h6_score([res])
    assert score.value == pytest.approx(100 / 3) and score.missing == h6.TASKS[1:]


def test_evaluate_tasks_and_scores_frame(tmp_path):
    """On a data folder in the official layout (read by data.load_h6_task), with a per-task limit."""
    import json as _json

    root = tmp_path / "h6"
    (root / "th_arc_challenge").mkdir(parents=True)
    (root / "th_winogrande").mkdir(parents=True)

    def write(path, rows):
        path.write_text("".join(_json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")

    write(root / "th_arc_challenge" / "th_arc_challenge_test.jsonl", ARC_DOCS)
    write(root / "th_arc_challenge" / "th_arc_challenge_validation.jsonl", _numbered_arc(2))
    wino = [{"sentence": f"ฉันเห็น_ตัวที่ {i}", "option1": "แมว", "option2": "หมา", "answer": "1"} for i in range(3)]
    write(root / "th_winogrande" / "th_winogrande_validation.jsonl", wino)
    write(root / "th_winogrande" / "th_winogrande_train.jsonl", wino)
    model = fake(score=lambda c, x: ARC_LLS.get(x, -2.0 if c.endswith("แมว") else -3.0))
    res = h6.evaluate_tasks(
        model,
        tmp_path,
        ["th_winogrande", "arc"],
        shots(0),
        limits={"th_winogrande": 2},
        outputs=tmp_path / "out",
        progress=False,
    )
    assert list(res) == ["th_arc", "th_winogrande"]
    assert len(res["th_arc"].table) == 3 and len(res["th_winogrande"].table) == 2
    assert res["th_winogrande"].headline.value == 1.0
    # a task's None in limits means limit (the notebook passes {"th_gsm8k": gsm8k_limit} as it is)
    one = h6.evaluate_tasks(
        model, tmp_path, ["th_winogrande"], shots(0), limit=1, limits={"th_winogrande": None}, outputs=tmp_path / "out"
    )
    assert len(one["th_winogrande"].table) == 1
    card = json.loads((res["th_arc"].run_dir / "run_card.json").read_text(encoding="utf-8"))
    assert any(p.endswith("th_arc_challenge_test.jsonl") for p in card["data_files"])
    frame = h6.scores_frame(res)
    head = frame[frame["headline"]].set_index("task")["value"]
    assert head["th_arc"] == pytest.approx(100 / 3) and head["th_winogrande"] == pytest.approx(100.0)
    assert set(frame[frame["task"] == "th_arc"]["metric"]) == {"acc_norm", "acc", "acc_bytes"}


def test_tiny_model_chunking_does_not_change_lls(tmp_path, tiny_local_model):
    """With a real (tiny random) model: per-doc log-likelihoods are the same whatever the chunk size, and
    equal to scoring each doc's requests alone."""
    from thai_eval_utils.h6 import tasks as T

    docs, pool = _numbered_arc(4), _numbered_arc(6)
    one = h6.evaluate(
        tiny_local_model,
        "th_arc",
        docs,
        shots(2),
        fewshot_pool=pool,
        chunk_size=1,
        outputs=tmp_path / "a",
        progress=False,
    )
    many = h6.evaluate(
        tiny_local_model,
        "th_arc",
        docs,
        shots(2),
        fewshot_pool=pool,
        chunk_size=32,
        outputs=tmp_path / "b",
        progress=False,
    )
    for a, b in zip(one.table["lls"], many.table["lls"]):
        assert a == pytest.approx(b, abs=1e-4)
    spec = T.get_task("th_arc")
    draws = lb_draws(4, 6, 2)
    alone = T.build_requests(spec, docs[3], [pool[j] for j in draws[3]], spec.templates)
    direct = [ll for ll, _ in tiny_local_model.loglikelihood(list(alone.requests))]
    assert many.table["lls"].iloc[3] == pytest.approx(direct, abs=1e-4)
    assert many.table["prompt_sha256"].iloc[3] == alone.sha256


def test_model_without_loglikelihood_is_refused(tmp_path):
    from thai_eval_utils.core.errors import ThaiEvalError

    class ApiLike:
        name, identity, add_bos_token = "api", {"name": "api"}, False

        def generate(self, prompts, **kw):
            return [" #### 6" for _ in prompts]

    with pytest.raises(ThaiEvalError, match="has none"):
        h6.evaluate(ApiLike(), "th_arc", ARC_DOCS, shots(0), outputs=tmp_path, progress=False)
    res = h6.evaluate(
        ApiLike(), "th_gsm8k", [{"question": "q", "answer": "#### 6"}], shots(0), outputs=tmp_path, progress=False
    )
    assert res.headline.value == 1.0


def test_bos_option_is_recorded_and_restored(tmp_path):
    seen = []

    class BosModel(FakeModel):
        def loglikelihood(self, requests):
            seen.append(self.add_bos_token)
            return super().loglikelihood(requests)

    model = BosModel(score=lambda c, x: (ARC_LLS[x], False))
    res = h6.evaluate(model, "th_arc", ARC_DOCS, shots(0, add_bos_token=True), outputs=tmp_path, progress=False)
    assert seen == [True] and model.add_bos_token is False
    assert res.config["add_bos_token"] is True and "bos:yes" in res.headline.signature
    off = h6.evaluate(model, "th_arc", ARC_DOCS, shots(0), outputs=tmp_path, progress=False)
    assert off.run_dir != res.run_dir and seen == [True, False]


def test_calls_from_evaluate_to_the_decoder_forward(tmp_path, tiny_local_model):
    """The frames between h6.evaluate and the decoder's forward: the declared tasks' runner, the run loop, the
    model's loglikelihood, the engine's entry point, its loop over the prefix tree's calls and the one function that
    calls the decoder body (nothing suspended elsewhere); 7 calls down to forward."""
    import traceback

    stacks = []
    handle = tiny_local_model.hf_model.base_model.register_forward_pre_hook(
        lambda module, args: stacks.append(traceback.extract_stack())
    )
    try:
        h6.evaluate(tiny_local_model, "th_arc", ARC_DOCS, shots(0), outputs=tmp_path, progress=False)
    finally:
        handle.remove()
    names = [f.name for f in stacks[-1]]
    path = names[len(names) - 1 - names[::-1].index("evaluate") : names.index("_wrapped_call_impl")]
    assert path == [
        "evaluate",
        "run_task",
        "run_items",
        "loglikelihood",
        "loglikelihood",
        "_score_tokens",
        "model_call",
    ]
