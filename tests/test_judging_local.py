"""A local model as the judge: it judges ThaiCLI answers in-process (no HTTP server) with the same
judgements as through the demo server (``thaicli/demo_judge_server.serve_model``: ``transformers serve``), greedy.

The judge is a tiny hand-wired causal LM whose greedy next token depends only on the current token (one-hot
embeddings, attention and MLP outputs zeroed, ``lm_head`` a lookup table), and whose chat template renders only the
model answer of the judge prompt. So its reply is decided by the answer's last token: ``<score>d</score>`` with a
digit the test chose for that token, or ``<score>0</score>`` (out of range: asked again, then 0) for one answer.
Real scores, retries and the zero fallback, computed by hand, on shipped ThaiCLI items.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch
from conftest import REPO, _train_tiny_tokenizer

from thai_eval_utils.backend.openai_client import ApiModel
from thai_eval_utils.judging.sessions import SessionModel
from thai_eval_utils.thaicli.data import load_thaicli
from thai_eval_utils.thaicli.demo_judge_server import open_judge, serve_model
from thai_eval_utils.thaicli.judge import JudgeParams, judge_answers

#: Renders only the text between the judge prompt's <model_answer> tags (no BOS, no generation prompt).
ANSWER_ONLY_TEMPLATE = "{{ messages[-1]['content'].split('<model_answer>\\n')[1].split('\\n</model_answer>')[0] }}"
#: The judgement fields that must be equal in-process and served (the served model's id and token counts differ).
SAME = ["id", "repeat", "score", "status", "attempts", "parse_failures", "explanation", "last_judgement"]


def _answers() -> pd.DataFrame:
    """Six shipped items (three of each format); the model answered three with the chosen, three with the rejected."""
    data = load_thaicli(REPO / "data" / "thaicli" / "cli")
    df = pd.concat([data[data["format"] == f].head(3) for f in ("factoid", "instruction")], ignore_index=True)
    df["answer"] = [r["chosen"] if i % 2 == 0 else r["rejected"] for i, r in df.iterrows()]
    df.attrs["model_name"] = "shipped-answers"
    return df


def _wired_judge(out: Path, answers: list[str]) -> tuple[Path, list[float]]:
    """Save the hand-wired judge to ``out``; the score each answer gets (0.0: the zero fallback)."""
    tok = _train_tiny_tokenizer(out)
    tok.add_tokens([f"<score>{d}" for d in range(10)] + ["</score>"])
    tok.chat_template = ANSWER_ONLY_TEMPLATE
    vocab, eos, close = len(tok), tok.eos_token_id, tok.convert_tokens_to_ids("</score>")
    last = [tok(a, add_special_tokens=False).input_ids[-1] for a in answers]
    digit = {t: 1 + t % 9 for t in last}
    digit[last[-1]] = 0  # the last answer's reply never parses: <score>0</score> is out of range
    nxt = torch.full((vocab,), eos)
    for t, d in digit.items():
        nxt[t] = tok.convert_tokens_to_ids(f"<score>{d}")
    nxt[[tok.convert_tokens_to_ids(f"<score>{d}") for d in range(10)]] = close
    from transformers import LlamaConfig, LlamaForCausalLM

    hidden = -(-vocab // 4) * 4
    cfg = LlamaConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=8,
        num_hidden_layers=1,
        num_attention_heads=1,
        num_key_value_heads=1,
        max_position_embeddings=4096,
        bos_token_id=tok.bos_token_id,
        eos_token_id=eos,
        pad_token_id=tok.pad_token_id,
    )
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        model.model.embed_tokens.weight.zero_()
        model.model.embed_tokens.weight[torch.arange(vocab), torch.arange(vocab)] = 1.0
        model.model.layers[0].self_attn.o_proj.weight.zero_()
        model.model.layers[0].mlp.down_proj.weight.zero_()
        model.lm_head.weight.zero_()
        model.lm_head.weight[nxt, torch.arange(vocab)] = 1.0
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out, [float(digit[t]) for t in last]


def test_a_local_model_judges_in_process_as_through_the_demo_server(tmp_path):
    answers = _answers()
    model_dir, expected = _wired_judge(tmp_path / "judge", answers["answer"].tolist())
    params = JudgeParams(max_tokens=4, max_calls=2)
    with open_judge(f"local:{model_dir}") as local:  # the notebook's judge_model="local:<spec>": load_model(spec)
        assert not isinstance(local, SessionModel) and local.identity["dtype"] == "float32"  # chat batches in-process
    calls = []
    chat = local.chat
    local.chat = lambda messages_list, **kw: calls.append(len(messages_list)) or chat(messages_list, **kw)
    in_process = judge_answers(answers, local, outputs=tmp_path / "in_process", params=params, progress=False)
    # by hand: each answer's score; the last one asked twice, then the 0 fallback
    assert in_process.items["score"].tolist() == expected and 0.0 < min(expected[:-1])
    assert in_process.items["status"].tolist() == ["scored"] * 5 + ["fallback_zero"]
    assert in_process.items["attempts"].tolist() == [1] * 5 + [2]
    assert in_process.items["last_judgement"].tolist() == [f"<score>{d:.0f}</score>" for d in expected]
    assert calls == [6, 1]  # one batch of every judgement, then the one that did not parse; no HTTP server
    assert in_process.summary["judge_calls_this_run"] == 7 and in_process.summary["judge_model"] == local.name
    assert in_process.summary["served_models"] == [local.name]
    with serve_model(model_dir) as url:
        served = ApiModel(str(model_dir), base_url=url, concurrency=2, timeout=300.0, max_retries=0)
        through_server = judge_answers(answers, served, outputs=tmp_path / "served", params=params, progress=False)
    assert through_server.summary["judge_calls_this_run"] == 7
    pd.testing.assert_frame_equal(in_process.items[SAME], through_server.items[SAME])
    assert in_process.scores.to_dict()["thaicli"]["value"] == pytest.approx(through_server.scores.thaicli.value)
    # resume in-process: everything from the run's store, no call
    calls.clear()
    again = judge_answers(answers, local, outputs=tmp_path / "in_process", params=params, progress=False)
    assert calls == [] and again.summary["n_from_cache"] == 6
    pd.testing.assert_frame_equal(again.items[SAME], in_process.items[SAME])
