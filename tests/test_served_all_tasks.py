"""Every Thai-H6 task, at the leaderboard's shot counts, through a real llama-cpp-python server.

The server serves :mod:`tiny_gguf`'s random-weight Llama with a Thai vocabulary of about 1,100 pieces, so that
5-shot MMLU and TruthfulQA's preamble fit in the suite's time (with Gemma 3's 262k vocabulary the server spends
~0.3 s per echoed token sorting it; ``tests/test_served_llamacpp.py`` runs the embedded model on short requests).
The tokenizer is llama.cpp's own and thai-eval has no local copy of it (``tokenizer=None``): prompts go as text
and the context/continuation boundary comes from the echoed ``text_offset``.

Reference: llama.cpp run in this process on the same GGUF (:class:`LlamaCppReference`, the server's own arithmetic
and decode batches); the served log-likelihoods must agree within float noise, the greedy flags and every
per-document metric exactly. GSM8K's raw-completion generations must equal in-process greedy completions.
"""

from __future__ import annotations

import openai
import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install -e '.[serve]')")

from thai_eval_utils import h6
from thai_eval_utils.h6 import tasks as T
from thai_eval_utils.h6.data import load_h6_task
from thai_eval_utils.backend.served import TEXT_BOUNDARY_RULE, ServedModel
from thai_eval_utils.backend.served.llamacpp import LlamaCppServer

from llamacpp_reference import LlamaCppReference
from tiny_gguf import h6_sample_texts, write_tiny_gguf

DATA = "data/thai_h6/h6"
LIMIT = 1  # documents per task (MMLU: per subject, three subjects): the long contexts are the point, not their number
#: Winogrande: two documents, so that one has a token straddling the context/continuation boundary.
LIMITS = {"th_winogrande": 2}
N_CTX = 16384  # ARC 25-shot is ~5,000 tokens of this vocabulary (about one per Thai character)


@pytest.fixture(scope="module")
def gguf_file(tmp_path_factory):
    return write_tiny_gguf(tmp_path_factory.mktemp("tiny") / "tiny-thai.gguf", h6_sample_texts(DATA), n_ctx=N_CTX)


@pytest.fixture(scope="module")
def server(gguf_file, tmp_path_factory):
    log = tmp_path_factory.mktemp("llamacpp") / "server.log"
    with LlamaCppServer(gguf_file, alias="tiny-thai", n_ctx=N_CTX, n_threads=2, log=log) as srv:
        yield srv


@pytest.fixture(scope="module")
def llama_ref(gguf_file):
    from llama_cpp import Llama

    return Llama(str(gguf_file), logits_all=True, n_ctx=N_CTX, n_threads=2, verbose=False)


def _card(result):
    import json

    return json.loads((result.run_dir / "run_card.json").read_text(encoding="utf-8"))


def _rebuilt(spec, doc, pool, shots, tmpl):
    """A stored document's requests, rebuilt from its few-shot draw (the run's ``shots`` column)."""
    return spec.requests(doc, [spec.pool_for(pool, doc)[j] for j in shots], tmpl)


def _served(server):
    return ServedModel("tiny-thai", base_url=server.base_url, tokenizer=None)


def test_probe_without_a_local_tokenizer(server):
    ident = _served(server).identity
    assert ident["loglikelihood"] == "/v1/completions echo, prompt as text"
    assert ident["generate_endpoint"] == "/v1/completions"
    assert "tokenizer" not in ident


@pytest.mark.parametrize("task", ["th_arc", "th_hellaswag", "th_mmlu", "th_truthfulqa", "th_winogrande"])
def test_loglikelihood_tasks_at_leaderboard_shots(server, llama_ref, task, tmp_path):
    m = _served(server)
    limit = LIMITS.get(task, LIMIT)
    got = h6.evaluate(m, task, DATA, h6.LEADERBOARD, limit=limit, outputs=tmp_path, progress=False)
    spec = T.get_task(task)
    data = load_h6_task(DATA, spec.name)
    docs, pool = list(data.docs), spec.pool_of(data)
    tmpl = T.templates_for(spec)
    reference = LlamaCppReference(llama_ref)
    n = 0
    for _, row in got.table.iterrows():
        doc = docs[row["doc"]]
        built = _rebuilt(spec, doc, pool, row["shots"], tmpl)
        reqs = built.requests
        assert row["prompt_sha256"] == built.sha256
        ref = [reference(c, x) for c, x in reqs]
        delta = max(abs(a - r[0]) for a, r in zip(row["lls"], ref))
        assert delta <= 1e-3, (row["doc"], delta)
        assert list(row["is_greedy"]) == [r[1] for r in ref]
        want = T.process_results(spec, doc, [r[0] for r in ref])
        for metric in spec.metrics:
            assert row[metric] == pytest.approx(want[metric], abs=1e-9), (row["doc"], metric)
        n += len(reqs)
    assert len(got.table) >= limit and n >= 2 * limit
    card = _card(got)["model"]
    assert card["loglikelihood"] == "/v1/completions echo, prompt as text"
    assert card["boundary"] == TEXT_BOUNDARY_RULE
    if task == "th_winogrande":  # "... เพราะ กระเป๋า" + " ใหญ่เกินไป": the piece "า▁ใ" spans the boundary
        assert reference.straddled >= 1
    print(
        f"\n{task}: {len(got.table)} docs, {n} requests ({reference.straddled} with a straddling token) through "
        "the server, equal to llama.cpp in process"
    )


def test_gsm8k_raw_completions_at_five_shots(server, llama_ref, tmp_path):
    spec = T.get_task("th_gsm8k")
    got = h6.evaluate(_served(server), "th_gsm8k", DATA, h6.LEADERBOARD, limit=LIMIT, outputs=tmp_path, progress=False)
    card = _card(got)["model"]
    assert card["generate_endpoint"] == "/v1/completions"
    assert card["server"] == "llama-cpp-python" and card["sampling_overrides"] == {"repeat_penalty": 1.0}
    data = load_h6_task(DATA, spec.name)
    docs, pool = list(data.docs), spec.pool_of(data)
    tmpl = T.templates_for(spec)
    p = h6.LEADERBOARD
    client, penalised = openai.OpenAI(base_url=server.base_url, api_key="none"), []
    for _, row in got.table.iterrows():
        doc = docs[row["doc"]]
        prompt = _rebuilt(spec, doc, pool, row["shots"], tmpl).prompt
        llama_ref.reset()
        want = llama_ref.create_completion(
            prompt, max_tokens=p.max_new_tokens, temperature=0.0, stop=list(p.gsm8k_stops)
        )["choices"][0]["text"]
        assert row["generation"] == want
        # without the override the server applies its default repeat_penalty of 1.1: not greedy decoding
        plain = (
            client.completions.create(
                model="tiny-thai", prompt=prompt, max_tokens=p.max_new_tokens, temperature=0.0, stop=list(p.gsm8k_stops)
            )
            .choices[0]
            .text
        )
        penalised.append(plain != want)
        assert row["exact_match"] == T.process_results(spec, doc, want)["exact_match"]
    assert any(penalised)
