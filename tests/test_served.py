"""ServedModel against a fake completions server backed by the tiny random model: log-likelihoods equal the
local engine's on the token-id and text paths, the straddling-token rule, the probe's refusals, malformed
replies, replicas (sharding, a replica dying mid-run, mismatched model ids) and generate via /v1/completions."""

from __future__ import annotations

import json

import pytest
from fake_completions_server import FakeCompletionsServer

from thai_eval_utils import h6
from thai_eval_utils.backend.openai_client import ApiError
from thai_eval_utils.core.errors import ModelLoadError
from thai_eval_utils.backend.models import load_model
from thai_eval_utils.backend.served import ServedModel

DOCS = [  # (context, choices): a document's choices share the context, as Thai-H6 sends them
    ("คำถาม: กรุงเทพมหานครเป็นเมืองหลวงของประเทศอะไร\nคำตอบ:", [" ประเทศไทย", " ลาว", " The quick brown fox"]),
    ("แม่ซื้อส้มมาสามผล แล้วแบ่งให้ลูกหนึ่งผล เหลือส้มกี่ผล ", ["2", "สอง", " #### 2"]),
    ("Question: What is the capital of Thailand?\nAnswer:", [" Bangkok", " Lanna"]),
    ("เด็กนักเรียนอ่านหนังสือ", ["ในห้องสมุด", " ทุกวัน"]),
]
REQUESTS = [(ctx, c) for ctx, choices in DOCS for c in choices]


def served(srv, tok_dir, **kw):
    return ServedModel("tiny", base_url=srv.base_url, tokenizer=tok_dir, **kw)


def assert_close(got, want, tol=1e-4):
    assert len(got) == len(want)
    for (a, ga), (b, gb) in zip(got, want):
        assert abs(a - b) <= tol, (a, b)
        assert ga == gb


@pytest.mark.parametrize("bos", [False, True])
def test_token_ids_match_the_local_engine(tiny_llama, tiny_model_dir, tiny_local_model, bos):
    model, tok = tiny_llama
    with FakeCompletionsServer(model, tok) as srv:
        m = served(srv, tiny_model_dir, add_bos_token=bos, batch_size=4)
        got = m.loglikelihood(REQUESTS + [("ว่าง", "")], progress=False)
        ident = m.identity
    tiny_local_model.add_bos_token = bos
    try:
        want = tiny_local_model.loglikelihood(REQUESTS, progress=False) + [(0.0, True)]
    finally:
        tiny_local_model.add_bos_token = False
    assert_close(got, want)
    assert ident["loglikelihood"] == "/v1/completions echo, prompt as token ids"
    assert ident["add_bos_token"] is bos and ident["max_length"] == 1024 and ident["base_urls"] == [srv.base_url]
    # the probe's text and id requests, then the order probe's 6 requests in order and reversed, batched as the run
    # batches (a document's choices together, at most 4 per request): [A1-A4], [B1, B2], then [B2, B1], [A4-A1]
    assert [len(b["prompt"]) for b in srv.bodies[2:6]] == [4, 2, 2, 4]
    scoring = srv.bodies[6:]
    assert all(
        b["echo"] is True and b["logprobs"] == 1 and b["max_tokens"] == 1 and b["temperature"] == 0 for b in scoring
    )
    # documents packed whole into requests of at most 4 prompts: [3], [3], [2, 2]
    assert sorted(len(b["prompt"]) if isinstance(b["prompt"][0], list) else 1 for b in scoring) == [3, 3, 4]


def test_left_truncation_matches_the_local_engine(tiny_llama, tiny_model_dir, tiny_local_model):
    from thai_eval_utils.backend.loglikelihood import loglikelihood

    model, tok = tiny_llama
    with FakeCompletionsServer(model, tok) as srv:
        with pytest.warns(UserWarning, match="left-truncated"):  # (the order probe's requests do not fit 12 tokens)
            got = served(srv, tiny_model_dir, max_length=12, order_probe=False).loglikelihood(REQUESTS, progress=False)
    with pytest.warns(UserWarning, match="left-truncated"):
        want = loglikelihood(model, tok, REQUESTS, max_length=12, progress=False)
    assert_close(got, want)
    assert max(len(b["prompt"][0]) for b in srv.bodies[2:] if isinstance(b["prompt"][0], list)) == 13


@pytest.mark.parametrize("ids_status", [422, 500])
def test_text_prompts_find_the_boundary_from_text_offset(tiny_llama, tiny_model_dir, tiny_local_model, ids_status):
    """A text-only server (llama-cpp-python: 500 on ids, one prompt per request, hidden BOS): same numbers as
    the local engine with BOS, since these continuations start at token boundaries."""
    model, tok = tiny_llama
    spaced = [r for r in REQUESTS if r[1].startswith(" ") or r[0].endswith(" ")]  # no token crosses the boundary
    with FakeCompletionsServer(model, tok, ids=False, lists=False, ids_status=ids_status) as srv:
        m = served(srv, tiny_model_dir)
        got = m.loglikelihood(spaced, progress=False)
        assert m.add_bos_token is True  # the server's choice, found by the probe
        with pytest.raises(AttributeError, match="prepends BOS"):
            m.add_bos_token = False
        with pytest.raises(ValueError, match="cannot be changed"):
            h6.evaluate(
                m,
                "th_arc",
                [{"question": "ก", "choices": {"text": ["ข", "ค"], "label": ["A", "B"]}, "answerKey": "A"}],
                h6.LEADERBOARD.replace(num_fewshot=0, add_bos_token=False),
                progress=False,
            )
        ident = m.identity
    tiny_local_model.add_bos_token = True
    try:
        want = tiny_local_model.loglikelihood(spaced, progress=False)
    finally:
        tiny_local_model.add_bos_token = False
    assert_close(got, want)
    assert ident["loglikelihood"] == "/v1/completions echo, prompt as text" and ident["add_bos_token"] is True
    assert "straddling" in ident["boundary"]
    assert all(isinstance(b["prompt"], str) for b in srv.bodies[2:])  # after the probe (text; ids refused, once)
    assert m.concurrency == 1 and sum(isinstance(b["prompt"], list) for b in srv.bodies) == 1


def test_a_straddling_token_is_scored_with_the_continuation(tiny_llama, tiny_model_dir):
    model, tok = tiny_llama
    text = "สวัสดีครับ วันนี้อากาศดีมาก"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    starts = [len(tok.decode(ids[:j]).rstrip("\ufffd")) for j in range(len(ids))] + [len(text)]
    k = next(j for j in range(1, len(ids)) if starts[j + 1] - starts[j] >= 2)  # a token of >= 2 characters
    cut = starts[k] + 1  # the boundary falls inside token k
    with FakeCompletionsServer(model, tok, ids=False, lists=False) as srv:
        m = served(srv, tiny_model_dir)
        with pytest.warns(UserWarning, match="straddling"):
            ((ll, _),) = m.loglikelihood([(text[:cut], text[cut:])], progress=False)
        echo, _ = srv.echo(ids, True, text)
    assert ll == pytest.approx(sum(echo["token_logprobs"][k : len(ids)]), abs=1e-9)
    assert m.observed["straddled"] == 1


def test_probe_refuses_a_server_scoring_only_generated_tokens(tiny_llama, tiny_model_dir):
    model, tok = tiny_llama
    with FakeCompletionsServer(model, tok, style="generated_only") as srv:
        url = srv.base_url.replace("http://", "http://user:hunter2@")
        m = ServedModel("tiny", base_url=url, tokenizer=tiny_model_dir)
        with pytest.raises(ModelLoadError) as err:
            m.loglikelihood(REQUESTS[:1])
    msg = str(err.value)
    assert srv.base_url in msg and "hunter2" not in msg and "only generated tokens" in msg and "llama-server" in msg


def test_probe_refuses_a_mismatched_tokenizer(tiny_llama, tiny_model_dir, tmp_path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer, tk.decoder = pre_tokenizers.ByteLevel(add_prefix_space=False), decoders.ByteLevel()
    tk.train_from_iterator(
        ["ภาษาไทย ทดสอบ น้ำเดือด"] * 3,
        trainer=trainers.BpeTrainer(
            vocab_size=300,
            special_tokens=["<pad>", "<eos>", "<bos>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    PreTrainedTokenizerFast(
        tokenizer_object=tk, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>"
    ).save_pretrained(tmp_path)
    model, tok = tiny_llama
    for prompt in ("auto", "text"):
        with FakeCompletionsServer(model, tok) as srv:
            with pytest.raises(ModelLoadError, match="wrong tokenizer"):
                served(srv, tmp_path, prompt=prompt).probe()


def test_malformed_replies_are_retried_then_refused(tiny_llama, tiny_model_dir, tiny_local_model):
    model, tok = tiny_llama
    flaky = {3: "no_logprobs", 4: "no_choices"}  # the first two scoring requests (after the two probes)
    with FakeCompletionsServer(model, tok, fault=lambda body, n: flaky.get(n)) as srv:  # (order probe: its own test)
        got = served(srv, tiny_model_dir, concurrency=1, order_probe=False).loglikelihood(REQUESTS, progress=False)
    assert_close(got, tiny_local_model.loglikelihood(REQUESTS, progress=False))
    with FakeCompletionsServer(model, tok, fault=lambda body, n: "no_logprobs" if n > 2 else None) as srv:
        with pytest.raises(ApiError, match="malformed reply after 3 attempts: the reply has no logprobs"):
            served(srv, tiny_model_dir, max_retries=2, order_probe=False).loglikelihood(REQUESTS, progress=False)


def test_replicas_share_the_work_and_take_over_from_a_failing_one(tiny_llama, tiny_model_dir, tiny_local_model):
    model, tok = tiny_llama
    many = REQUESTS * 4
    want = tiny_local_model.loglikelihood(many, progress=False)
    with FakeCompletionsServer(model, tok) as a, FakeCompletionsServer(model, tok) as b:
        m = ServedModel(
            "tiny", base_url=f"{a.base_url}, {b.base_url}", tokenizer=tiny_model_dir, batch_size=1, concurrency=2
        )
        assert_close(m.loglikelihood(many, progress=False), want)
        assert set(m.observed["replicas"]) == {a.base_url, b.base_url}
        assert all(n > 0 for n in m.observed["replicas"].values())
        assert m.identity["base_urls"] == [a.base_url, b.base_url]
    with (
        FakeCompletionsServer(model, tok) as a,
        FakeCompletionsServer(model, tok, fault=lambda body, n: "die" if n > 4 else None) as b,
    ):
        m = ServedModel(
            "tiny",
            base_url=[a.base_url, b.base_url],
            tokenizer=tiny_model_dir,
            batch_size=1,
            concurrency=2,
            max_retries=1,
            order_probe=False,
        )  # b dies after 4 scoring requests
        assert_close(m.loglikelihood(many, progress=False), want)
        assert m.observed["replicas"][b.base_url] <= 2 and m.observed["replicas"][a.base_url] >= len(many) - 2


def test_replicas_serving_different_models_are_refused(tiny_llama, tiny_model_dir):
    model, tok = tiny_llama
    with FakeCompletionsServer(model, tok) as a, FakeCompletionsServer(model, tok, served_model="other") as b:
        with pytest.raises(ModelLoadError, match="replicas serve different models"):
            ServedModel("tiny", base_url=[a.base_url, b.base_url], tokenizer=tiny_model_dir).probe()
        with pytest.raises(ModelLoadError, match="does not serve 'nope'"):
            ServedModel("nope", base_url=a.base_url, tokenizer=tiny_model_dir).probe()


def test_generate_uses_completions_and_chat_uses_chat(tiny_llama, tiny_model_dir):
    model, tok = tiny_llama
    with FakeCompletionsServer(model, tok) as srv:
        m = load_model("completions:tiny", base_url=srv.base_url, tokenizer=str(tiny_model_dir))
        assert isinstance(m, ServedModel)
        out = m.generate(["คำถาม: 6 x 7\nคำตอบ:"], max_new_tokens=10, stop=["\n\n"])
        assert m.chat([[{"role": "user", "content": "สวัสดี"}]]) == ["แชท: สวัสดี"]
    assert out == ["ตอบ 42"]
    body = [b for b in srv.bodies if "prompt" in b][-1]
    assert body["prompt"] == tok("คำถาม: 6 x 7\nคำตอบ:", add_special_tokens=False)["input_ids"]
    assert body["max_tokens"] == 10 and body["stop"] == ["\n\n"] and "echo" not in body
    assert m.identity["generate_endpoint"] == "/v1/completions"


@pytest.mark.parametrize(
    "owner, server, sent",
    [("me", "llama-cpp-python", {"repeat_penalty": 1.0}), ("vllm", "vLLM", {}), ("fake", None, {})],
)
def test_generation_undoes_the_servers_sampling_defaults(tiny_llama, tiny_model_dir, owner, server, sent):
    """llama-cpp-python's server defaults repeat_penalty to 1.1 (not greedy at temperature 0): it gets 1.0 with
    every completion and chat request; other servers get no extra field (docs/protocol_notes.md)."""
    model, tok = tiny_llama
    with FakeCompletionsServer(model, tok, owned_by=owner) as srv:
        m = load_model("completions:tiny", base_url=srv.base_url, tokenizer=str(tiny_model_dir))
        m.generate(["คำถาม: 6 x 7\nคำตอบ:"], max_new_tokens=10)
        m.chat([[{"role": "user", "content": "สวัสดี"}]])
        ident = m.identity
    gen, chat = srv.bodies[-2:]
    assert "messages" in chat and "prompt" in gen
    for body in (gen, chat):
        assert {k: body[k] for k in ("repeat_penalty",) if k in body} == sent
    assert ident.get("server") == server and ident.get("sampling_overrides", {}) == sent


def test_h6_evaluate_through_a_served_model(tiny_llama, tiny_model_dir, tiny_local_model, tmp_path):
    model, tok = tiny_llama
    data = "data/thai_h6/h6"
    with FakeCompletionsServer(model, tok) as srv:
        m = served(srv, tiny_model_dir)
        res = h6.evaluate(
            m, "th_arc", data, h6.LEADERBOARD.replace(num_fewshot=1), limit=2, outputs=tmp_path, progress=False
        )
    ref = h6.evaluate(
        tiny_local_model,
        "th_arc",
        data,
        h6.LEADERBOARD.replace(num_fewshot=1),
        limit=2,
        outputs=tmp_path,
        progress=False,
    )
    for a, b in zip(res.table["lls"], ref.table["lls"]):
        assert a == pytest.approx(b, abs=1e-4)
    assert res.scores["acc_norm"].value == ref.scores["acc_norm"].value
    card = json.loads((res.run_dir / "run_card.json").read_text())
    assert card["model"]["loglikelihood"] == "/v1/completions echo, prompt as token ids"
    assert card["model"]["base_urls"] == [srv.base_url] and card["model"]["max_length"] == 1024


def test_url_credentials_become_the_bearer_key_and_reach_no_identity(tiny_llama, tiny_model_dir, monkeypatch):
    """A replica URL with userinfo: the password is sent as the Bearer key (never Basic auth) and neither the
    user nor the password appears in the identity or in error text."""
    from thai_eval_utils.core.provenance import scrub

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model, tok = tiny_llama
    secret = "pw-" + "7f3a9c2e1d"  # built at run time so secret scanners do not flag the file
    with FakeCompletionsServer(model, tok) as srv:
        url = srv.base_url.replace("http://", f"http://alice:{secret}@")
        m = ServedModel("tiny", base_url=url, tokenizer=tiny_model_dir)
        m.loglikelihood(REQUESTS[:2], progress=False)
        ident = json.dumps(m.identity)
    assert srv.authorizations and set(srv.authorizations) == {f"Bearer {secret}"}
    assert secret not in ident and "alice" not in ident
    assert secret not in scrub(f"error from {url}")
