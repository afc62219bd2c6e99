"""ApiModel against a scripted OpenAI-compatible server: explicit parameters, retries, usage, event loops."""

from __future__ import annotations

import asyncio

import pytest
from fake_openai_server import Fail, FakeOpenAIServer, Reply, Slow

from thai_eval_utils.core.errors import ModelLoadError
from thai_eval_utils.backend.openai_client import (
    ApiError,
    ApiModel,
    cut_at_stop,
    public_base_url,
    stable_identity,
)

KEY = "sk-" + "test-SECRET-abcdefghijklmnop"  # built at run time: a fake key, not a leaked one


class Sequence_:
    """Responder playing a fixed list of actions, then ``default``."""

    def __init__(self, actions, default=Reply("สวัสดีครับ")):
        self.actions, self.default = list(actions), default

    def __call__(self, body):
        return self.actions.pop(0) if self.actions else self.default


def model(srv, **kw):
    return ApiModel("fake-model", base_url=srv.base_url, api_key=KEY, **kw)


def test_chat_sends_explicit_parameters_and_collects_usage():
    def echo(body):  # the reply names the question, so the order of the replies can be checked
        text = body["messages"][-1]["content"]
        return Reply(f"ตอบ {text}", prompt_tokens=len(text), completion_tokens=3)

    with FakeOpenAIServer(echo) as srv:
        m = model(srv)
        out = m.chat(
            [[{"role": "user", "content": "กรุงเทพฯ คืออะไร"}], [{"role": "user", "content": "ข้อสอง"}]],
            max_new_tokens=77,
            seed=5,
        )
    assert out == ["ตอบ กรุงเทพฯ คืออะไร", "ตอบ ข้อสอง"]
    bodies = sorted(srv.bodies, key=lambda b: b["messages"][0]["content"])
    assert bodies[0]["messages"] == [{"role": "user", "content": "กรุงเทพฯ คืออะไร"}]
    assert {(b["model"], b["temperature"], b["top_p"], b["max_tokens"], b["seed"]) for b in bodies} == {
        ("fake-model", 0.0, 1.0, 77, 5)
    }
    assert srv.auth_headers == {f"Bearer {KEY}"}
    assert m.usage == {"requests": 2, "prompt_tokens": 16 + 6, "completion_tokens": 3 + 3}
    ident = m.identity
    assert ident["served_models"] == ["fake-judge-2024-01-01"] and ident["system_fingerprints"] == ["fp_fake123"]
    assert stable_identity(ident) == {
        "name": "fake-model",
        "source": "openai-compatible",
        "model_id": "fake-model",
        "base_url": srv.base_url,
    }
    assert KEY not in repr(m) and KEY not in str(ident)


def test_generate_is_one_user_message_and_honours_stop():
    with FakeOpenAIServer(Sequence_([Reply("ตอบ 42\n\nคำถาม: ต่อไป")])) as srv:
        out = model(srv).generate(["คำถาม: 6 x 7\nคำตอบ:"], stop=["\n\n"], max_new_tokens=10)
    assert out == ["ตอบ 42"]
    assert srv.bodies[0]["messages"] == [{"role": "user", "content": "คำถาม: 6 x 7\nคำตอบ:"}]
    assert srv.bodies[0]["stop"] == ["\n\n"]


@pytest.mark.parametrize(
    "failure",
    [Fail(429, {"retry-after-ms": "20"}), Fail(500, {"retry-after-ms": "20"}), Fail(503), Slow(3.0)],
    ids=["429-retry-after-ms", "500", "503-backoff", "timeout"],
)
def test_transport_errors_are_retried_by_the_client(failure):
    with FakeOpenAIServer(Sequence_([failure, failure])) as srv:
        out = model(srv, timeout=0.5, max_retries=3).chat([[{"role": "user", "content": "x"}]])
    assert out == ["สวัสดีครับ"]
    assert srv.n_chat_calls == 3  # two failures, then the answer


def test_persistent_failure_raises_after_the_retries():
    with FakeOpenAIServer(Sequence_([], default=Fail(500, {"retry-after-ms": "1"}))) as srv:
        with pytest.raises(ApiError, match=r"HTTP 500"):
            model(srv, max_retries=2).chat([[{"role": "user", "content": "x"}]])
    assert srv.n_chat_calls == 3


def test_chat_inside_a_running_event_loop():
    """A Jupyter cell runs inside an event loop: chat must still work (it moves to a worker thread)."""
    with FakeOpenAIServer(Sequence_([])) as srv:
        m = model(srv)

        async def cell():
            return m.chat([[{"role": "user", "content": "x"}]])

        assert asyncio.run(cell()) == ["สวัสดีครับ"]


def test_list_models():
    with FakeOpenAIServer(Sequence_([])) as srv:
        assert model(srv).list_models() == ["fake-judge-2024-01-01"]


def test_options_and_keys(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ModelLoadError, match="OPENAI_API_KEY"):
        ApiModel("gpt-4o-2024-05-13")
    local = ApiModel(
        "m", base_url="http://127.0.0.1:9/v1", dtype=None, device=None, batch_size=32, trust_remote_code=False
    )
    assert local.concurrency == 16 and local.timeout == 60.0 and local.max_retries == 6
    with pytest.raises(ModelLoadError, match="dtype"):
        ApiModel("m", base_url="http://127.0.0.1:9/v1", dtype="bfloat16")
    with pytest.raises(TypeError, match="colour"):
        ApiModel("m", base_url="http://127.0.0.1:9/v1", colour="red")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    env = ApiModel("m")
    assert env.base_url == "http://127.0.0.1:9/v1" and env.options.api_key.reveal() == KEY


def test_public_base_url_and_cut_at_stop():
    assert (
        public_base_url("https://user:sk-secret@api.example.com:8443/v1/?key=abc#x")
        == "https://api.example.com:8443/v1"
    )
    assert public_base_url("https://api.openai.com/v1") == "https://api.openai.com/v1"
    assert cut_at_stop("a<end>b<stop>c", ["<stop>", "<end>"]) == "a"
    assert cut_at_stop("abc", None) == "abc" and cut_at_stop("abc", "z") == "abc"


def test_interrupt_inside_a_running_loop_cancels_the_work():
    """Jupyter's stop button raises KeyboardInterrupt in the main thread: the worker loop must be cancelled
    (not left judging in the background) and the interrupt must reach the caller."""
    import os
    import signal
    import threading

    from thai_eval_utils.backend.openai_client import run_sync

    started, cancelled = threading.Event(), threading.Event()

    async def slow():
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def cell():
        threading.Thread(target=lambda: (started.wait(), os.kill(os.getpid(), signal.SIGINT)), daemon=True).start()
        return run_sync(slow)

    loop = asyncio.new_event_loop()  # like ipykernel: a loop without asyncio.run's own SIGINT handling
    # Python's own handler, as in a kernel: a shell that starts pytest in the background has SIGINT ignored
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(cell())
    finally:
        signal.signal(signal.SIGINT, previous)
        loop.close()
    assert cancelled.is_set()


@pytest.mark.parametrize("owner, sent", [("me", {"repeat_penalty": 1.0}), ("vllm", None), ("fake", None)])
def test_chat_undoes_the_servers_sampling_defaults(owner, sent):
    """llama-cpp-python's server (``owned_by: "me"``) defaults repeat_penalty to 1.1, so temperature 0 would not
    be greedy: every chat request then carries repeat_penalty 1.0, and the identity (the config id) says so from
    the start. Other servers get nothing extra. /v1/models is asked once per model, not per request."""
    with FakeOpenAIServer(lambda body: Reply("ok"), owned_by=owner) as srv:
        m = model(srv)
        before = m.identity  # asks the server before any chat request
        m.chat([[{"role": "user", "content": "ก"}]] * 3)
        m.generate(["ข"])
    assert srv.n_model_lists == 1 and len(srv.bodies) == 4
    assert {b.get("repeat_penalty") for b in srv.bodies} == {sent["repeat_penalty"] if sent else None}
    assert before.get("sampling_overrides") == sent and stable_identity(m.identity) == stable_identity(before)
    assert before.get("server") == {"me": "llama-cpp-python", "vllm": "vLLM", "fake": None}[owner]


def test_an_endpoint_without_models_list_still_chats(monkeypatch):
    """A server whose /v1/models fails (here: nothing listens there for GET) is simply not named."""
    with FakeOpenAIServer(lambda body: Reply("ok")) as srv:
        monkeypatch.setattr(srv._httpd.RequestHandlerClass, "do_GET", lambda self: self._send(404, {"error": {}}))
        m = model(srv)
        assert m.chat([[{"role": "user", "content": "ก"}]]) == ["ok"]
    assert m.server is None and "server" not in m.identity and "repeat_penalty" not in srv.bodies[0]
