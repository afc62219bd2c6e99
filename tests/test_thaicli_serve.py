"""Integration: answer and judge one ThaiCLI item through a real ``transformers serve`` of the embedded model.

The embedded Gemma 3 270M cannot judge; this only proves the path end to end (server start, chat
completions, parsing, the call budget, the cache, server stop). Few tokens per call keep it to a minute or so.
"""

from __future__ import annotations

import pandas as pd

from thai_eval_utils.backend.model_sources import embedded_model_dir
from thai_eval_utils.backend.openai_client import ApiModel
from thai_eval_utils.thaicli.answers import generate_answers
from thai_eval_utils.thaicli.demo_judge_server import serve_model, served_model_ids
from thai_eval_utils.thaicli.judge import JudgeParams, judge_answers


def test_answer_and_judge_through_transformers_serve(tmp_path):
    model_dir = embedded_model_dir()
    df = pd.DataFrame(
        [
            {
                "id": "0" * 32,
                "format": "factoid",
                "theme": "Culture",
                "question": "เมืองหลวงของประเทศไทยคือเมืองใด",
                "chosen": "กรุงเทพมหานคร",
                "rejected": "เชียงใหม่",
            }
        ]
    )
    with serve_model(model_dir) as url:
        served = ApiModel(str(model_dir), base_url=url, concurrency=1, timeout=900.0, max_retries=0)
        assert served.list_models() == [str(model_dir)] == served_model_ids(url)
        answers = generate_answers(served, df, outputs=tmp_path, max_new_tokens=4, progress=False)
        assert isinstance(answers["answer"][0], str)
        params = JudgeParams(max_tokens=4, max_calls=2)
        res = judge_answers(answers, served, outputs=tmp_path, params=params, progress=False)
        item = res.items.iloc[0]
        assert item["status"] in ("scored", "fallback_zero")
        if item["status"] == "fallback_zero":
            assert (item["score"], item["attempts"]) == (0.0, 2)
        else:
            assert 1 <= item["score"] <= 10 and item["attempts"] <= 2
        assert res.summary["judge_calls_this_run"] == item["attempts"]
        assert res.summary["served_models"] == [str(model_dir)]
        assert res.summary["token_usage_this_run"]["completion"] <= 4 * item["attempts"]
        assert res.summary["token_usage_this_run"]["prompt"] > 100  # the whole judge prompt went in
        before = served.usage["requests"]
        again = judge_answers(answers, served, outputs=tmp_path, params=params, progress=False)
        assert served.usage["requests"] == before and again.items["score"][0] == item["score"]
    assert served_model_ids(url) is None  # the server is gone
