"""The embedded Gemma 3 270M GGUF served by a real llama-cpp-python server: Thai-H6 through ``completions:``
against the local engine on the same requests.

Two references. (1) llama.cpp itself, in this process through llama-cpp-python's ``Llama`` (tokenize with BOS,
``eval`` in the batches the server decodes, log-softmax of the continuation rows; see
:class:`LlamaCppReference`): the same arithmetic as the server, so the served numbers must agree to float noise;
this checks the client's parsing (echo, text_offset boundary, hidden BOS) exactly.
(2) The local engine on the same requests: it runs the Q4_K_M weights dequantised to float32, while llama.cpp
multiplies the quantised weights with 8-bit-quantised activations, so the deltas are not float noise (measured:
up to 1.7 nats on a 13-token ARC continuation, 0.13 per token); the bounds below leave headroom over the measured
values and the ranking of choices is compared only where the local margin exceeds the bound.
"""

from __future__ import annotations

import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install -e '.[serve]')")

from thai_eval_utils import h6
from thai_eval_utils.h6 import tasks as T
from thai_eval_utils.backend.models import embedded_gguf_path, load_model
from thai_eval_utils.backend.served import ServedModel
from thai_eval_utils.backend.served.llamacpp import LlamaCppServer

from llamacpp_reference import LlamaCppReference

DATA = "data/thai_h6/h6"
#: Measured on this machine (see docs/benchmarks.md): largest |delta| per continuation token and in total.
PER_TOKEN_TOL = 0.3
TOTAL_TOL = 3.0
SAME_ARITHMETIC_TOL = 1e-3  # served vs llama.cpp in process


#: llama-cpp-python on this Q4_K_M GGUF fails the order probe (0.40 nats: it reuses the previous prompt's KV cache
#: and llama.cpp's quantised kernels depend on the decode batch; tests/test_served_order_probe.py, README); these
#: scoring tests compare with a reference that reproduces that reuse, so they skip the probe (it also costs minutes).
NO_ORDER_PROBE = {"order_probe": False}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("llamacpp") / "server.log"
    with LlamaCppServer(embedded_gguf_path(), alias="gemma-3-270m", n_ctx=4096, n_threads=2, log=log) as srv:
        yield srv


@pytest.fixture(scope="module")
def llama_ref():
    from llama_cpp import Llama

    return Llama(str(embedded_gguf_path()), logits_all=True, n_ctx=1024, n_threads=2, verbose=False)


@pytest.fixture(scope="module")
def local():
    return load_model("embedded", add_bos_token=True)


def test_probe_of_llama_cpp_python(server):
    m = ServedModel("gemma-3-270m", base_url=server.base_url, tokenizer="embedded")
    ident = m.identity
    assert ident["loglikelihood"] == "/v1/completions echo, prompt as text"  # it refuses token-id prompts
    assert ident["add_bos_token"] is True  # the GGUF asks for BOS and the server prepends it to text
    assert ident["generate_endpoint"] == "/v1/completions"
    with pytest.raises(Exception, match="does not serve 'other'"):
        ServedModel("other", base_url=server.base_url, tokenizer="embedded").probe()


#: Documents scored per task: the shortest prompts of the samples (0-shot). llama-cpp-python sorts Gemma 3's
#: 262,144-entry vocabulary in Python for every echoed token (~0.3 s per prompt token on 2 cores, whatever the
#: client), so MMLU (~150 tokens x 4 choices per doc), TruthfulQA (~1,300 echoed tokens per doc) and HellaSwag
#: (four endings on one shared context, as ARC's choices: ~100 s for one document) are left to the benchmark
#: (benchmarks/served_parity_speed.py), and each task here scores one or two short documents: ARC (choices on one
#: context) and Winogrande (one context per choice, a token straddling the boundary).
DOCS = {"th_arc": [6], "th_winogrande": [0, 7], "th_gsm8k": [2]}


def _docs(task):
    from thai_eval_utils.h6.data import load_h6_task

    data = load_h6_task(DATA, task)
    return [data.docs[i] for i in DOCS[task]]


@pytest.mark.parametrize("task", ["th_arc", "th_winogrande"])
def test_h6_tasks_on_the_served_gguf(server, llama_ref, local, task, tmp_path):
    m = ServedModel("gemma-3-270m", base_url=server.base_url, tokenizer="embedded", **NO_ORDER_PROBE)
    kw = dict(fewshot_pool=[], outputs=tmp_path, progress=False)
    zero_shot = h6.LEADERBOARD.replace(num_fewshot=0)
    got = h6.evaluate(m, task, _docs(task), zero_shot, **kw)
    want = h6.evaluate(local, task, _docs(task), zero_shot, **kw)
    assert got.config["add_bos_token"] is want.config["add_bos_token"] is True
    deltas, per_token = [], []
    spec = T.get_task(task)
    reqs = [r for d in _docs(task) for r in T.build_requests(spec, d, [], T.templates_for(spec)).requests]
    n_cont = [len(local.tokenizer(c + x)["input_ids"]) - len(local.tokenizer(c)["input_ids"]) for c, x in reqs]
    flat_g = [v for lls in got.table["lls"] for v in lls]
    flat_w = [v for lls in want.table["lls"] for v in lls]
    greedy_g = [v for g in got.table["is_greedy"] for v in g]
    reference = LlamaCppReference(llama_ref)
    ref = [reference(c, x) for c, x in reqs]
    same = max(abs(a - r[0]) for a, r in zip(flat_g, ref))
    assert same <= SAME_ARITHMETIC_TOL and greedy_g == [r[1] for r in ref]
    for a, b, n in zip(flat_g, flat_w, n_cont):
        deltas.append(abs(a - b))
        per_token.append(abs(a - b) / max(n, 1))
    for lg, lw in zip(got.table["lls"], want.table["lls"]):
        top2 = sorted(lw)[-2:]
        if top2[1] - top2[0] > 2 * TOTAL_TOL:  # a clear local winner must win on the server too
            assert lg.index(max(lg)) == lw.index(max(lw))
    print(
        f"\n{task}: {len(deltas)} requests, served vs llama.cpp in process max {same:.2e}; "
        f"vs local engine |delta| max {max(deltas):.4f} mean {sum(deltas) / len(deltas):.4f}, "
        f"per continuation token max {max(per_token):.4f}; served lls {flat_g}; local {flat_w}"
    )
    assert max(deltas) <= TOTAL_TOL and max(per_token) <= PER_TOKEN_TOL


def test_gsm8k_generates_through_completions(server, tmp_path):
    m = ServedModel("gemma-3-270m", base_url=server.base_url, tokenizer="embedded")
    res = h6.evaluate(
        m,
        "th_gsm8k",
        _docs("th_gsm8k"),
        h6.LEADERBOARD.replace(num_fewshot=0, max_new_tokens=24),
        fewshot_pool=[],
        outputs=tmp_path,
        progress=False,
    )
    assert m.identity["generate_endpoint"] == "/v1/completions"
    assert isinstance(res.table["generation"][0], str) and len(res.table) == 1
    print(f"\nth_gsm8k generation: {res.table['generation'][0]!r}")
