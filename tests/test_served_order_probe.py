"""The request-order probe of served models (``backend/served/order_probe.py``): a server whose echoed
log-probabilities change with the order of the requests (a prefix cache handing back stale values, values that
depend on a prompt's place in its batch, a replica that computes differently) is refused with the numbers in the
message; an order-independent one passes and the run card records what the probe saw; ``order_probe=False`` is
recorded; generation runs skip the probe; a real llama-cpp-python server on a float32 GGUF passes."""

from __future__ import annotations

import json

import pytest
from fake_completions_server import FakeCompletionsServer

from thai_eval_utils import h6
from thai_eval_utils.backend.served import ServedModel
from thai_eval_utils.backend.served.order_probe import ORDER_PROBE_REQUESTS, SKIPPED, OrderDependentError

DATA = "data/thai_h6/h6"
PROTOCOL = h6.LEADERBOARD.replace(num_fewshot=0)
SHIFT = 0.25  # nats taken off one continuation token when the stand-in's numbers depend on the order
TEXT = {"ids": False, "lists": False}  # a text-only server (llama-cpp-python's shape): one prompt per request


class OrderDependentServer(FakeCompletionsServer):
    """The fake server, except that it takes :data:`SHIFT` off the last prompt token's log-probability of

    * ``mode="seen"``: a prompt it has scored before (a prefix cache handing back other values on a hit);
    * ``mode="not_first"``: a prompt that is not the first of its request's list (values that depend on the batch);
    * ``mode="always"``: every prompt (a replica on other hardware).
    """

    def __init__(self, model, tokenizer, *, mode: str, **kw) -> None:
        super().__init__(model, tokenizer, **kw)
        self.mode, self.seen = mode, set()

    def complete(self, body):
        status, payload = super().complete(body)
        prompt = body.get("prompt")
        batch = prompt if isinstance(prompt, list) and isinstance(prompt[0], (list, str)) else [prompt]
        if status != 200 or not body.get("echo"):
            return status, payload
        for k, (p, choice) in enumerate(zip(batch, payload["choices"])):
            key = json.dumps(p)
            if {"seen": key in self.seen, "not_first": k > 0, "always": True}[self.mode]:
                values = choice["logprobs"]["token_logprobs"]
                values[-2] -= SHIFT  # the last prompt token (a continuation token); the last entry is generated
            self.seen.add(key)
        return status, payload


def served(srv, tok_dir, **kw):
    return ServedModel("tiny", base_url=srv.base_url if hasattr(srv, "base_url") else srv, tokenizer=tok_dir, **kw)


def _card(result):
    return json.loads((result.run_dir / "run_card.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("mode, shape", [("seen", "ids"), ("not_first", "ids"), ("seen", "text")])
def test_a_server_whose_numbers_change_with_the_order_is_refused(tiny_llama, tiny_model_dir, tmp_path, mode, shape):
    model, tok = tiny_llama
    kw = TEXT if shape == "text" else {}
    with FakeCompletionsServer(model, tok, **kw) as clean:  # the same arithmetic, order-independent
        plain = served(clean, tiny_model_dir, order_probe=False)
        want = plain.loglikelihood(list(ORDER_PROBE_REQUESTS), progress=False)
    with OrderDependentServer(model, tok, mode=mode, **kw) as srv:
        with pytest.raises(OrderDependentError) as info:
            h6.evaluate(
                served(srv, tiny_model_dir), "th_arc", DATA, PROTOCOL, limit=1, outputs=tmp_path, progress=False
            )
    err, n = info.value, len(ORDER_PROBE_REQUESTS)
    i = ORDER_PROBE_REQUESTS.index(err.request)
    a, b = err.values
    # one of the two scorings is the server's true value, the other SHIFT lower ("seen": the reversed pass)
    assert want[i][0] in (a, b) and abs(a - b) == pytest.approx(SHIFT, abs=1e-9)
    if mode == "seen":
        assert (a, b) == (want[i][0], pytest.approx(want[i][0] - SHIFT, abs=1e-9))
    assert err.difference == abs(a - b) and err.tolerance == 0.01 and err.servers == (srv.base_url, srv.base_url)
    message = str(err)
    assert message.startswith(
        f"order probe: 'tiny' scored request {i + 1} of {n} ({err.request[0]!r} + "
        f"{err.request[1]!r}) {a:.6f} in order on {srv.base_url} and {b:.6f} in reverse order "
        f"on {srv.base_url}: a difference of 0.25 nats > order_tolerance 0.01. Likely cause: the "
        "server's prefix cache"
    )
    assert "--no-enable-prefix-caching (vLLM) or --disable-radix-cache (SGLang)" in message
    assert "order_probe=False (thai-eval run --no-order-probe)" in message and "different servers" not in message
    # refused before any run folder or document request: the probe's 2 requests, then 2 passes
    assert not (tmp_path / "runs").exists()
    assert srv.n_completions == 2 + (2 * n if shape == "text" else 2)


def test_an_order_independent_server_passes_and_the_card_records_it(tiny_llama, tiny_model_dir, tmp_path):
    """Two replicas: each scores the probe in order and reversed (one request each: a document's choices go
    together); the run card records the largest difference (0.0), the tolerance and the requests; a second task
    on the same model does not probe again; the same model with ``order_probe=False`` resumes the same run, its
    card saying the probe was skipped, and sends no probe request."""
    model, tok = tiny_llama
    with FakeCompletionsServer(model, tok) as a, FakeCompletionsServer(model, tok) as b:
        m = served([a.base_url, b.base_url], tiny_model_dir)
        arc = h6.evaluate(m, "th_arc", DATA, PROTOCOL, limit=1, outputs=tmp_path, progress=False)
        recorded = _card(arc)["model"]["order_probe"]
        for srv in (a, b):  # after the probe's two requests: the whole list in order, then reversed
            assert [[tok.decode(p) for p in body["prompt"]] for body in srv.bodies[2:4]] == [
                [c + x for c, x in ORDER_PROBE_REQUESTS],
                [c + x for c, x in reversed(ORDER_PROBE_REQUESTS)],
            ]
        sent = a.n_completions + b.n_completions
        h6.evaluate(m, "th_hellaswag", DATA, PROTOCOL, limit=1, outputs=tmp_path, progress=False)
        assert not any(body["prompt"] == srv.bodies[2]["prompt"] for srv in (a, b) for body in srv.bodies[4:])
        assert a.n_completions + b.n_completions > sent
        skipped = served([a.base_url, b.base_url], tiny_model_dir, order_probe=False)
        before = a.n_completions + b.n_completions
        again = h6.evaluate(skipped, "th_arc", DATA, PROTOCOL, limit=1, outputs=tmp_path, progress=False)
        assert a.n_completions + b.n_completions == before + 4  # the probe's two requests per server only
    assert recorded == {"requests": 6, "max_abs_diff": 0.0, "tolerance": 0.01}
    assert m.identity["order_probe"] == {"requests": 6, "max_abs_diff": 0.0, "tolerance": 0.01}
    assert again.run_dir == arc.run_dir  # the probe's outcome is not part of the config id
    assert (
        _card(again)["model"]["order_probe"]
        == SKIPPED
        == {"skipped": "order_probe=False: log-likelihoods not checked for request-order dependence"}
    )


def test_a_replica_that_computes_differently_is_named(tiny_llama, tiny_model_dir):
    model, tok = tiny_llama
    with FakeCompletionsServer(model, tok) as a, OrderDependentServer(model, tok, mode="always") as b:
        with pytest.raises(OrderDependentError) as info:
            served([a.base_url, b.base_url], tiny_model_dir).check_order()
    err = info.value
    assert err.servers == (a.base_url, b.base_url) and err.difference == pytest.approx(SHIFT, abs=1e-9)
    assert f"in order on {a.base_url} and " in str(err) and f"on {b.base_url}: a difference of 0.25 nats" in str(err)
    assert "The two values come from different servers" in str(err)


def test_order_tolerance(tiny_llama, tiny_model_dir):
    model, tok = tiny_llama
    with OrderDependentServer(model, tok, mode="seen") as srv:
        m = served(srv, tiny_model_dir, order_tolerance=0.3)
        result = m.check_order()
        assert m.check_order() is result and srv.n_completions == 4  # once
    assert result.max_abs_diff == pytest.approx(SHIFT, abs=1e-9) and result.tolerance == 0.3
    assert m.identity["order_probe"] == {"requests": 6, "max_abs_diff": result.max_abs_diff, "tolerance": 0.3}
    for bad in (-0.1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="order_tolerance must be a finite number of nats >= 0"):
            ServedModel("tiny", base_url="http://127.0.0.1:9/v1", order_tolerance=bad)


def test_a_probe_that_cannot_run_is_a_named_load_error(tiny_llama, tiny_model_dir):
    from fake_completions_server import switch

    from thai_eval_utils.core.errors import ModelLoadError

    model, tok = tiny_llama
    with FakeCompletionsServer(model, tok, fault=switch("no_logprobs", after=2)) as srv:
        with pytest.raises(ModelLoadError, match=rf"^order probe of {srv.base_url} failed: the reply has no logprobs$"):
            served(srv, tiny_model_dir).check_order()
    with FakeCompletionsServer(model, tok) as srv:  # a max_length shorter than the probe's continuations
        with pytest.raises(
            ModelLoadError,
            match=r"^order probe of .*: request \d+: continuation of \d+ tokens exceeds "
            r"max_length 12; order_probe=False skips it$",
        ):
            served(srv, tiny_model_dir, max_length=12).check_order()


def test_generation_runs_skip_the_probe(tiny_llama, tiny_model_dir, tmp_path):
    model, tok = tiny_llama
    with FakeCompletionsServer(model, tok) as srv:
        m = served(srv, tiny_model_dir)
        res = h6.evaluate(
            m, "th_gsm8k", DATA, PROTOCOL.replace(max_new_tokens=4), limit=1, outputs=tmp_path, progress=False
        )
    assert [b.get("echo", False) for b in srv.bodies] == [True, True, False]  # the probe's two, one generation
    assert "order_probe" not in _card(res)["model"] and "order_probe" not in m.identity


def test_cli_flags_become_served_parameters():
    from conftest import REPO

    from thai_eval_utils.cli import build_parser
    from thai_eval_utils.cli.run_config import notebook_options
    from thai_eval_utils.notebook_exec import notebook_parameters
    from thai_eval_utils.run_options import run_options

    run = ["run", "--model", "completions:x", "--base-url", "http://gpu:8000/v1"]
    assert notebook_options(build_parser().parse_args(run)) == {"model": {"base_url": "http://gpu:8000/v1"}}
    args = build_parser().parse_args(run + ["--order-tolerance", "0.05", "--no-order-probe"])
    model = notebook_options(args)["model"]
    assert model == {"base_url": "http://gpu:8000/v1", "order_tolerance": 0.05, "order_probe": False}
    assert run_options({"model": model}).load_options("completions:x") == model  # what load_model gets
    assert run_options({"model": model}).load_options("/models/local") == {}  # a local model takes none of them
    for nb in ("thai_h6.ipynb", "task.ipynb", "thai_llm_leaderboard.ipynb", "seahelm.ipynb"):
        assert "options" in notebook_parameters(REPO / "notebooks" / nb), nb


def test_llama_cpp_python_on_a_float32_gguf_passes(tmp_path):
    """A real llama-cpp-python server (it reuses the previous prompt's KV cache) on a float32 GGUF: the same numbers
    in either order. (On the embedded Q4_K_M Gemma they differ by up to 0.40 nats and the probe refuses it.)"""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install -e '.[serve]')")
    from thai_eval_utils.backend.served.llamacpp import LlamaCppServer
    from tiny_gguf import h6_sample_texts, write_tiny_gguf

    gguf = write_tiny_gguf(tmp_path / "tiny.gguf", h6_sample_texts(DATA), n_ctx=512)
    with LlamaCppServer(gguf, alias="tiny-thai", n_ctx=512, n_threads=2, log=tmp_path / "server.log") as srv:
        m = ServedModel("tiny-thai", base_url=srv.base_url, tokenizer=None)
        assert m.check_order().max_abs_diff == 0.0
    assert m.identity["server"] == "llama-cpp-python" and m.identity["order_probe"]["max_abs_diff"] == 0.0
