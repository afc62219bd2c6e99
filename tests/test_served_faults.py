"""Attacks on a served Thai-H6 run, on the fault server (tests/fake_completions_server.py: one switch
per fault, loopback only, bounded in requests and time): every malformed echo, a held-back or trickled reply,
and a worker failing for any reason end by themselves in a named ``ApiError``, never a hang and never a score;
what the run stored before the fault is kept and is exactly the clean run's."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from pathlib import Path

import pytest
from fake_completions_server import REPLY_FAULTS, FakeCompletionsServer, switch

from thai_eval_utils import h6
from thai_eval_utils.backend.client_options import ClientOptions
from thai_eval_utils.backend.openai_client import ApiError
from thai_eval_utils.backend.served import ServedModel
from thai_eval_utils.backend.served.replicas import Pool

DATA = "data/thai_h6/h6"
PROTOCOL = h6.LEADERBOARD.replace(num_fewshot=0)
PROBE_REQUESTS = 2  # a text-only server: the probe's text request and its refused token-id request
#: These attacks count requests to reach the scoring path; the order probe (its own requests, refused the same way
#: when malformed: tests/test_served_order_probe.py) is off.
SCORING_ONLY = {"order_probe": False}

#: fault -> the words of the named error it must end in (after max_retries=1: 2 attempts)
ATTACKS = {
    "no_logprobs": r"the reply has no logprobs",
    "null_in_top_logprobs": r"top_logprobs\[\d+\]\[.*\] is None, not a finite log-probability",
    "nan_in_top_logprobs": r"top_logprobs\[\d+\]\[.*\] is nan, not a finite log-probability",
    "null_text_offset": r"text_offset\[\d+\] is None, not a character offset",
    "text_offset_zz": r"text_offset\[\d+\] is 'zz', not a character offset",
    "minus_inf_logprob": r"token_logprobs\[\d+\] is -inf, not a finite log-probability",
    "positive_logprob": r"token_logprobs\[\d+\] is 0.5, not a finite log-probability <= 0",
    "string_logprob": r"token_logprobs\[\d+\] is '-0.1', not a finite log-probability",
    "short_echo": r"does not cover the text",
    "repeated_offsets": r"text_offset repeats after token 0",
    "another_model": r"the reply is from model 'another-model', not 'tiny'",
}


@contextlib.contextmanager
def must_end_within(seconds: int):
    """Fail (instead of hanging the suite) when the block has not ended after ``seconds``: a guard, not a
    measurement; every attack ends in well under a second of server time."""

    def hung(*_):
        raise AssertionError(f"still running after {seconds} s: the client hangs")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def strict_records(root: Path) -> list[dict]:
    """Every record of the run's items.jsonl, read as standard JSON (NaN / Infinity refused)."""
    path = root / "items.jsonl"
    if not path.exists():
        return []

    def refuse(name):
        raise AssertionError(f"non-standard JSON constant {name} in {path}")

    return [json.loads(line, parse_constant=refuse) for line in path.read_text(encoding="utf-8").splitlines()]


def run_dir(outputs: Path) -> Path:
    (card,) = outputs.rglob("run_card.json")
    return card.parent


@pytest.fixture(scope="module")
def text_server(tiny_llama, tiny_model_dir, tmp_path_factory):
    """One text-only fault server and its probed model for every attack (each test sets the server's fault), and
    the clean run of two ARC documents, one per chunk (its records are what a faulty run may keep)."""
    model, tok = tiny_llama
    out = tmp_path_factory.mktemp("clean")
    with FakeCompletionsServer(model, tok, ids=False, lists=False, max_requests=400) as srv:
        m = ServedModel("tiny", base_url=srv.base_url, tokenizer=tiny_model_dir, max_retries=1, **SCORING_ONLY)
        res = h6.evaluate(m, "th_arc", DATA, PROTOCOL, limit=2, chunk_size=1, outputs=out, progress=False)
        assert srv.n_completions == PROBE_REQUESTS + sum(len(r["lls"]) for r in strict_records(res.run_dir))
        yield srv, m, strict_records(res.run_dir)


@pytest.mark.parametrize("fault", sorted(ATTACKS))
def test_a_malformed_echo_ends_in_a_named_error_and_stores_nothing_wrong(fault, text_server, tmp_path):
    """The first document is answered cleanly, then every reply carries the fault: the run ends with a named
    error after the retries, the first document's record is the clean run's, the second is not stored."""
    srv, m, clean = text_server
    first = len(clean[0]["lls"])  # the first document's requests (one text prompt per request)
    start = srv.n_completions
    srv.fault = switch(fault, after=start + first)
    try:
        with (
            must_end_within(60),
            pytest.raises(ApiError, match=r"malformed reply after 2 attempts: .*" + ATTACKS[fault]),
        ):
            h6.evaluate(m, "th_arc", DATA, PROTOCOL, limit=2, chunk_size=1, outputs=tmp_path, progress=False)
    finally:
        srv.fault = None
    assert srv.n_completions == start + first + 2  # two attempts at the second document's first prompt
    stored = strict_records(run_dir(tmp_path))
    assert [r["key"] for r in stored] == [clean[0]["key"]]
    assert stored[0]["lls"] == pytest.approx(clean[0]["lls"], abs=1e-9)
    assert stored[0]["acc_norm"] == clean[0]["acc_norm"]


def test_all_reply_faults_are_attacked():
    assert set(ATTACKS) == set(REPLY_FAULTS) - {"no_choices"}  # no_choices: test_served.py


@pytest.mark.parametrize("fault", ["minus_inf_logprob", "nan_in_top_logprobs", "short_echo", "another_model"])
def test_token_id_prompts_refuse_the_same_faults(fault, tiny_llama, tiny_model_dir):
    """The token-id path (vLLM, SGLang): the same named errors, the probe's two requests answered cleanly."""
    model, tok = tiny_llama
    words = {"short_echo": r"echoed tokens for a prompt of \d+ tokens"}.get(fault, ATTACKS[fault])
    with FakeCompletionsServer(model, tok, max_requests=20, fault=switch(fault, after=2)) as srv:
        m = ServedModel("tiny", base_url=srv.base_url, tokenizer=tiny_model_dir, max_retries=1, **SCORING_ONLY)
        with must_end_within(60), pytest.raises(ApiError, match=r"malformed reply after 2 attempts: .*" + words):
            m.loglikelihood([("คำถาม: เมืองหลวงของไทย\nคำตอบ:", " กรุงเทพ")], progress=False)
    assert m.identity["loglikelihood"] == "/v1/completions echo, prompt as token ids"


@pytest.mark.parametrize(
    "fault, timeout, deadline, words",
    [
        # a server that accepts the request and never answers: the read timeout, no retry left, the replica dropped
        ("hold", 1.0, 30.0, r"every server failed \(http://127\.0\.0\.1:\d+/v1: APITimeoutError"),
        # one byte every 0.25 s never trips a 5 s read timeout: the per-request deadline ends it
        ("trickle", 5.0, 1.5, r"every server failed .*no complete reply within the 1\.5 s deadline per request"),
    ],
)
def test_a_reply_held_back_or_trickled_ends_by_itself(tiny_llama, tiny_model_dir, fault, timeout, deadline, words):
    model, tok = tiny_llama
    with FakeCompletionsServer(model, tok, ids=False, lists=False, hold_s=20, fault=switch(fault, after=2)) as srv:
        m = ServedModel(
            "tiny",
            base_url=srv.base_url,
            tokenizer=tiny_model_dir,
            timeout=timeout,
            max_retries=0,
            deadline=deadline,
            **SCORING_ONLY,
        )
        with must_end_within(60), pytest.raises(ApiError, match=words):
            m.loglikelihood([("คำถาม: เมืองหลวงของไทย\nคำตอบ:", " กรุงเทพ")], progress=False)
    assert srv.n_completions == PROBE_REQUESTS + 1


def test_a_worker_failing_for_any_reason_requeues_its_request_then_names_the_error():
    """Jobs raising exceptions no parser foresaw: re-queued (the flaky one then succeeds), then a named error."""
    calls = {"flaky": 0, "broken": 0}

    async def flaky(client):
        calls["flaky"] += 1
        if calls["flaky"] == 1:
            raise TypeError("'NoneType' object is not subscriptable")
        return "ok"

    async def broken(client):
        calls["broken"] += 1
        raise KeyError("key")

    async def fine(client):
        return "fine"

    async def go(jobs):
        options = ClientOptions.resolve(["http://127.0.0.1:9/v1"], timeout=60.0, max_retries=2)
        async with Pool(options, concurrency=2) as pool:
            return await pool.run(jobs)

    assert asyncio.run(go([flaky, fine, fine])) == ["ok", "fine", "fine"] and calls["flaky"] == 2
    with pytest.raises(ApiError, match=r"http://127\.0\.0\.1:9/v1: malformed reply after 3 attempts: KeyError: 'key'"):
        asyncio.run(go([fine, broken]))
    assert calls["broken"] == 3
