"""Stop strings never cut inside an open thinking block when the run says the model thinks (``stop_after_thinking``):
the text rules (``backend.stops``), the option, and every generation path that sends stop strings: Thai-H6 GSM8K
through the local engine, a served completions model and an API chat model; declared generation tasks; SEA-HELM's
base-model answer tag. The paths that send no stop strings (ThaiCLI answers, dialect generation, the Thai LLM
Leaderboard's generation) are checked to send none. Off, every cut is lm-eval's, as before."""

from __future__ import annotations

import json

import pytest
from fakes import FakeModel

from thai_eval_utils.backend.generation import Engine
from thai_eval_utils.backend.stops import StopScanner, cut_at_stop, first_stop, opens_thinking, thinking_spans
from thai_eval_utils.h6 import evaluation as h6
from thai_eval_utils.h6.protocol import LEADERBOARD
from thai_eval_utils.tasks.thinking import NOT_SUPPORTED, ThinkingOption, apply_to_model, thinking_option

TAGS = ("<think>", "</think>")
#: A reasoning model's GSM8K reply: LB's stops (":", "Question:", "Question") occur inside its thinking.
REPLY = "<think>ขั้นที่ 1: 10 - 4 = 6 Question ตรวจแล้ว</think> เหลือ 6 ฟอง #### 6\n\nQuestion: ข้อถัดไป"
#: What lm-eval's cut keeps (the first ":" is inside the block: the answer is lost, the block never closes).
CUT_LMEVAL = "<think>ขั้นที่ 1"
#: What the cut keeps when stop strings wait for the block to close.
CUT_AFTER = "<think>ขั้นที่ 1: 10 - 4 = 6 Question ตรวจแล้ว</think> เหลือ 6 ฟอง #### 6\n\n"
DOCS = [{"question": "ไข่ 10 ฟอง แตก 4 ฟอง เหลือกี่ฟอง", "answer": "#### 6"}]
ON = thinking_option("strip", stop_after_thinking=True)


def _protocol(thinking: ThinkingOption = ThinkingOption()):
    return LEADERBOARD.replace(num_fewshot=0, thinking=thinking)


# ------------------------------------------------------------------------------------------------- the text rules
def test_cut_skips_stops_inside_thinking_blocks():
    assert cut_at_stop(REPLY, [":", "Question:", "Question"]) == CUT_LMEVAL  # lm-eval's cut, unchanged
    assert cut_at_stop(REPLY, [":", "Question:", "Question"], think_tags=TAGS) == CUT_AFTER
    assert cut_at_stop("<think>a: b", ":", think_tags=TAGS) == "<think>a: b"  # open to the end: nothing cut
    assert cut_at_stop("a: b</think>c: d", ":", think_tags=TAGS) == "a: b</think>c"  # a close with no open
    assert cut_at_stop("a: b</think>c: d", ":", think_tags=TAGS, starts_open=True) == "a: b</think>c"
    assert cut_at_stop("a: b", ":", think_tags=TAGS, starts_open=True) == "a: b"  # the prompt opened the block
    assert cut_at_stop("คำตอบ: 5 <think>x: y</think>", ":", think_tags=TAGS) == "คำตอบ"  # outside any block: cut
    assert (
        cut_at_stop("<think>1: 2</think>A<think>3: 4</think>B: C", ":", think_tags=TAGS)
        == "<think>1: 2</think>A<think>3: 4</think>B"
    )  # a reply that thinks twice
    assert thinking_spans("<think>a</think>b<think>c", TAGS) == [(0, 16), (17, 25)]
    assert first_stop("no stop here", [":"], TAGS) is None
    assert opens_thinking("<start>user\nq<end>\n<think>\n", TAGS) and not opens_thinking("<think>x</think>", TAGS)


def test_scanner_waits_for_the_block_to_close():
    decode = "".join  # one character per token
    plain, waiting = StopScanner(decode, ":"), StopScanner(decode, ":", TAGS)
    inside = list("<think>a: b")
    assert plain.hit(inside) and not waiting.hit(inside)
    assert not waiting.hit(list("<think>a: b</think>42"))
    assert waiting.hit(list("<think>a: b</think>42:"))
    assert not waiting.hit(list("a: b"), starts_open=True) and waiting.hit(list("a: b"))


# ------------------------------------------------------------------------------------------------- the option
def test_option_is_off_by_default_labelled_and_keeps_config_ids():
    assert ThinkingOption().stop_after_thinking is False
    assert "stop_after_thinking" not in ThinkingOption().record()  # earlier runs' configs keep their ids
    assert ON.record()["stop_after_thinking"] is True
    assert ON.signature() == "think:strip(<think>,</think>,stops:after-think)"
    assert ThinkingOption(**ON.record()) == ON
    with pytest.raises(ValueError, match="thinking 'off' has none"):
        thinking_option("off", stop_after_thinking=True)


def test_cli_flag_becomes_the_notebooks_parameter():
    from thai_eval_utils.cli import build_parser
    from thai_eval_utils.cli.thinking_args import thinking_parameters

    parser = build_parser()
    assert "stop_after_thinking" not in thinking_parameters(parser.parse_args(["run", "--model", "embedded"]))
    args = parser.parse_args(["run", "--model", "embedded", "--stop-after-thinking"])
    assert thinking_parameters(args) == {"stop_after_thinking": True}


def test_apply_to_model_sets_restores_and_records(tiny_local_model):
    lm = tiny_local_model
    with apply_to_model(lm, ON) as support:
        assert lm.think_stop_tags == TAGS
    assert lm.think_stop_tags is None and support["stop_after_thinking"].startswith("engine")
    with apply_to_model(FakeModel(), ON) as support:
        pass
    assert support == {"stop_after_thinking": NOT_SUPPORTED}
    with apply_to_model(lm, ThinkingOption()) as support:
        assert lm.think_stop_tags is None
    assert support == {}


# ------------------------------------------------------------------------------------------- the local engine
@pytest.fixture
def scripted(monkeypatch, tiny_llama):
    """A local model whose engine runs the tiny model's forward calls but takes each row's next token from a script:
    row ``i`` writes ``replies[i]`` then EOS (a scripted fake model inside the real engine, stop scanner and cut)."""
    from thai_eval_utils.backend.models import LocalModel

    model, tok = tiny_llama
    lm = LocalModel(model, tok, name="scripted-thinker", identity={"name": "scripted-thinker"})
    lm.min_shared, lm.lookup_tokens = 0, 0  # one prefill per prompt, one position per row and step
    scripts: list[list[int]] = []
    prefill = Engine._prefill

    def scripted_prefill(self, index, ids, chain):
        self._scripted = index
        try:
            return prefill(self, index, ids, chain)
        finally:
            self._scripted = None

    def scripted_logits(self, hidden):
        import torch

        at = (
            [(self._scripted, 0)]
            if getattr(self, "_scripted", None) is not None
            else [(row.index, len(row.tokens)) for row in self.rows]
        )
        out = torch.zeros((len(at), model.config.vocab_size))
        for k, (i, n) in enumerate(at):
            out[k, scripts[i][n] if n < len(scripts[i]) else tok.eos_token_id] = 1e4
        return out

    monkeypatch.setattr(Engine, "_prefill", scripted_prefill)
    monkeypatch.setattr(Engine, "_logits", scripted_logits)

    def script(*replies: str):
        scripts[:] = [tok(r, add_special_tokens=False).input_ids for r in replies]
        assert [tok.decode(s, skip_special_tokens=True) for s in scripts] == list(replies)  # the tokens are the text
        return lm

    return script


def test_local_engine_gsm8k_is_scored_after_the_block(scripted, tmp_path):
    lm = scripted(REPLY)
    off = h6.evaluate(lm, "th_gsm8k", DOCS, _protocol(), outputs=tmp_path, progress=False)
    assert off.table["generation"].tolist() == [CUT_LMEVAL] and off.table["exact_match"].tolist() == [0.0]
    on = h6.evaluate(lm, "th_gsm8k", DOCS, _protocol(ON), outputs=tmp_path, progress=False)
    assert on.table["generation"].tolist() == [CUT_AFTER]  # the row went on past the block's ":" and "Question"
    assert on.table["exact_match"].tolist() == [1.0] and on.run_dir != off.run_dir
    assert on.headline.signature.split("|")[-2] == "think:strip(<think>,</think>,stops:after-think)"
    summary = json.loads((on.run_dir / "summary.json").read_text())
    assert summary["thinking"]["support"]["stop_after_thinking"].startswith("engine")
    assert lm.think_stop_tags is None  # restored after the run


def test_local_engine_chat_whose_template_opens_the_block(scripted, tiny_llama):
    lm = scripted("ขั้นที่ 1: 4 + 2</think> #### 6: จบ")
    saved = lm.tokenizer.chat_template  # the session's tokenizer: its template is put back
    lm.tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}\n<think>\n"
    messages = [[{"role": "user", "content": "4 + 2 ได้เท่าไร"}]]
    try:
        assert lm.chat(messages, stop=":") == ["ขั้นที่ 1"]
        lm.think_stop_tags = TAGS  # the prompt ends inside the block: the reply starts there
        assert lm.chat(messages, stop=":") == ["ขั้นที่ 1: 4 + 2</think> #### 6"]
    finally:
        lm.tokenizer.chat_template = saved


def test_declared_generation_task_is_scored_after_the_block(scripted, tmp_path):
    from thai_eval_utils.tasks import GenerationTask, run_task

    (tmp_path / "g.jsonl").write_text(
        json.dumps({"id": "c1", "country": "ญี่ปุ่น", "capital": "โตเกียว"}, ensure_ascii=False) + "\n", "utf-8"
    )
    task = GenerationTask(
        name="gen",
        data="g.jsonl",
        reference="capital",
        prompt="เมืองหลวงของ{country}:",
        metrics=("exact_match",),
        stop=["\n", ":"],
    ).bind(tmp_path)
    lm = scripted("<think>Japan: capital\nTokyo</think>โตเกียว\nต่อ")
    off = run_task(lm, task, outputs=tmp_path / "out", progress=False)
    on = run_task(lm, task, outputs=tmp_path / "out", progress=False, thinking=ON)
    assert [r["output"] for r in off.records] == ["<think>Japan"] and off.scores["exact_match"]["value"] == 0.0
    assert [r["output"] for r in on.records] == ["<think>Japan: capital\nTokyo</think>โตเกียว"]
    assert on.scores["exact_match"]["value"] == 1.0 and "stops:after-think" in on.scores["exact_match"]["signature"]


# ---------------------------------------------------------------------------------------- served and API models
def test_served_model_sends_no_stops_and_cuts_after_the_block(tiny_llama, tiny_model_dir, tmp_path):
    from fake_completions_server import FakeCompletionsServer

    from thai_eval_utils.backend.served import ServedModel

    model, tok = tiny_llama
    with FakeCompletionsServer(model, tok, generation=lambda prompt: REPLY) as srv:
        m = ServedModel("tiny", base_url=srv.base_url, tokenizer=tiny_model_dir)
        off = h6.evaluate(m, "th_gsm8k", DOCS, _protocol(), outputs=tmp_path, progress=False)
        on = h6.evaluate(m, "th_gsm8k", DOCS, _protocol(ON), outputs=tmp_path, progress=False)
        sent = [b for b in srv.bodies if "prompt" in b and not b.get("echo")]
    assert sent[0]["stop"] == [":", "Question:", "Question"] and "stop" not in sent[1]
    assert off.table["exact_match"].tolist() == [0.0] and off.table["generation"].tolist() == [CUT_LMEVAL]
    assert on.table["exact_match"].tolist() == [1.0] and on.table["generation"].tolist() == [CUT_AFTER]
    assert m.think_stop_tags is None


def test_api_model_sends_no_stops_and_cuts_after_the_block(tmp_path):
    from fake_openai_server import FakeOpenAIServer, Reply

    from thai_eval_utils.backend.openai_client import ApiModel

    with FakeOpenAIServer(lambda body: Reply(REPLY), served_model="thinker") as srv:
        m = ApiModel("thinker", base_url=srv.base_url, api_key="not-needed", concurrency=1)
        off = h6.evaluate(m, "th_gsm8k", DOCS, _protocol(), outputs=tmp_path, progress=False)
        on = h6.evaluate(m, "th_gsm8k", DOCS, _protocol(ON), outputs=tmp_path, progress=False)
        bodies = list(srv.bodies)
    assert bodies[0]["stop"] == [":", "Question:", "Question"] and "stop" not in bodies[1]
    assert off.table["exact_match"].tolist() == [0.0]
    assert on.table["exact_match"].tolist() == [1.0] and on.table["generation"].tolist() == [CUT_AFTER]
    support = json.loads((on.run_dir / "summary.json").read_text())["thinking"]["support"]
    assert support["stop_after_thinking"].startswith("stop strings not sent")


# ------------------------------------------------------------------------------------------------- SEA-HELM
class _ThinkingFake(FakeModel):
    """A fake whose stop handling follows ``think_stop_tags`` (as the local, served and API models' do)."""

    think_stop_tags = None


def test_seahelm_base_answer_tag_inside_thinking_is_not_the_answer():
    from thai_eval_utils.seahelm.generation import Sampling, base_replies

    def complete(prompt: str) -> str:  # phase 1 thinks and answers; phase 2 continues its text after the tag
        return " C" if "<think>" in prompt else "<think>คำตอบ: B? ไม่ใช่</think>คำตอบ: C"

    def run(option: ThinkingOption) -> list[str]:
        model = _ThinkingFake(complete=complete)
        with apply_to_model(model, option):
            return base_replies(
                model,
                [[{"role": "user", "content": "ข้อใด"}]],
                max_tokens=64,
                seed=0,
                sampling=Sampling(0.0, 1.0, "test"),
                answer_tag="คำตอบ:",
            )

    assert run(ThinkingOption()) == ["<think>คำตอบ: C"]  # the tag inside the block ends phase 1 (as before)
    assert run(ON) == ["<think>คำตอบ: B? ไม่ใช่</think>คำตอบ: C"]


# ------------------------------------------------------------------------------------- paths with no stop strings
def test_paths_without_stop_strings_send_none(tmp_path):
    import pandas as pd

    from thai_eval_utils.thai_llm_leaderboard.generation import GenerationOptions, generate_replies
    from thai_eval_utils.thaicli.answers import generate_answers

    model = FakeModel("thinker", reply=lambda m: "<think>a: b</think>ตอบ")
    df = pd.DataFrame(
        [{"id": "q0", "format": "factoid", "theme": "x", "question": "หนึ่ง", "chosen": "ก", "rejected": "ข"}]
    )
    generate_answers(model, df, outputs=tmp_path, progress=False, thinking=ON)
    generate_replies(model, [[{"role": "user", "content": "สอง"}]], GenerationOptions())
    assert [kind for kind, _ in model.calls] == ["chat", "chat"]
    assert all(settings.get("stop") is None for _, settings in model.calls)
