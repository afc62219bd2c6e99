"""The options/credentials helper ``ApiModel`` and ``ServedModel`` share (backend/client_options.py): where the key
comes from, that it never shows in a repr, ``asdict``, JSON or an error, and that both models use it alike."""

from __future__ import annotations

import dataclasses
import json

import pytest

from thai_eval_utils.backend.client_options import PLACEHOLDER_API_KEY, ClientOptions, Secret, check_local_only_options
from thai_eval_utils.core.errors import ModelLoadError
from thai_eval_utils.backend.openai_client import ApiModel
from thai_eval_utils.backend.served import ServedModel

KEY = "sk-" + "options-SECRET-0123456789"  # built at run time: a fake key, not a leaked one
PASSWORD = "pw-" + "c0ffee-4242-beef"


def _shows(options: ClientOptions) -> str:
    """Every way the options may be printed or stored, joined."""
    return " ".join(
        [repr(options), str(options), f"{options}", repr(dataclasses.asdict(options)), str(options.public_urls)]
    )


def test_the_key_comes_from_the_argument_then_the_url_then_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    url = f"http://alice:{PASSWORD}@127.0.0.1:9/v1"
    assert ClientOptions.resolve([url], "given-key-123", timeout=5, max_retries=1).api_key.reveal() == "given-key-123"
    assert ClientOptions.resolve([url], timeout=5, max_retries=1).api_key.reveal() == PASSWORD
    from_env = ClientOptions.resolve(["http://127.0.0.1:9/v1"], timeout=5, max_retries=1)
    assert from_env.api_key.reveal() == KEY and from_env.has_key
    monkeypatch.delenv("OPENAI_API_KEY")
    none = ClientOptions.resolve(["http://127.0.0.1:9/v1"], timeout=5, max_retries=1)
    assert none.api_key.reveal() == PLACEHOLDER_API_KEY and not none.has_key


def test_the_key_never_shows_in_a_repr_asdict_json_or_the_urls(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    url = f"https://alice:{PASSWORD}@example.org/openai/v1?api-version=2024-06&api-key={PASSWORD}"
    options = ClientOptions.resolve([url], timeout=5, max_retries=1)
    shown = _shows(options)
    assert PASSWORD not in shown and "alice" not in shown and "<redacted>" in shown
    assert options.urls == ("https://example.org/openai/v1",) and options.queries == ({"api-version": "2024-06"},)
    with pytest.raises(TypeError):
        json.dumps(dataclasses.asdict(options))  # refused, never written
    assert repr(Secret(KEY)) == str(Secret(KEY)) == "<redacted>" and Secret(KEY) == Secret(KEY) != Secret("other")
    kwargs = options.client_kwargs()  # the one place the key is handed out: to the openai client
    assert kwargs == {
        "base_url": "https://example.org/openai/v1",
        "api_key": PASSWORD,
        "timeout": 5.0,
        "max_retries": 1,
        "default_query": {"api-version": "2024-06"},
        "default_headers": {"api-key": PASSWORD},
    }


def test_bad_values_are_refused():
    with pytest.raises(ModelLoadError, match="2 different credentials"):
        ClientOptions.resolve(["http://u:one-secret@h/v1?api-key=another-secret"], timeout=5, max_retries=1)
    for bad in (
        {"timeout": 0, "max_retries": 1},
        {"timeout": 5, "max_retries": -1},
        {"timeout": 5, "max_retries": 1, "concurrency": 0},
    ):
        with pytest.raises(ValueError):
            ClientOptions.resolve(["http://127.0.0.1:9/v1"], **bad)
    check_local_only_options("ServedModel", "m", {"dtype": None, "batch_size": 8})  # unset and ignored ones pass
    with pytest.raises(
        ModelLoadError, match="trust_remote_code=True applies to local weights only, not to the ServedModel"
    ):
        check_local_only_options("ServedModel", "m", {"trust_remote_code": True})
    with pytest.raises(TypeError, match="ApiModel got an unknown option 'colour'"):
        check_local_only_options("ApiModel", "m", {"colour": "red"})


def test_moving_to_another_url_keeps_the_key_and_takes_the_new_query(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = ApiModel("m", base_url=f"http://u:{PASSWORD}@127.0.0.1:9/v1", timeout=7, max_retries=2, concurrency=3)
    model.base_url = "http://127.0.0.1:10/v1?api-version=5"
    assert model.base_url == "http://127.0.0.1:10/v1" and model.options.queries == ({"api-version": "5"},)
    assert model.options.api_key.reveal() == PASSWORD
    assert (model.timeout, model.max_retries, model.concurrency) == (7.0, 2, 3)


def test_both_models_resolve_the_same_options_and_show_no_secret(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    url = f"http://alice:{PASSWORD}@127.0.0.1:9/v1"
    api = ApiModel("m", base_url=url, timeout=30, max_retries=2, concurrency=4)
    served = ServedModel("m", base_url=url, timeout=30, max_retries=2, concurrency=4)
    assert api.options == served.options
    assert served.base_urls == [api.base_url] == ["http://127.0.0.1:9/v1"]
    for text in (repr(api), repr(served), repr(api.options), repr(vars(api)), repr(vars(served))):
        assert PASSWORD not in text and "alice" not in text
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ModelLoadError, match="needs base_url"):
        ServedModel("m")
