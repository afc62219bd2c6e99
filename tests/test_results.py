"""Results store: resume after a kill, settings never mix, no secrets, safe slugs, Score."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from thai_eval_utils.core.provenance import Score, redact, slugify
from thai_eval_utils.core.runs import list_runs
from thai_eval_utils.core.store import RunStore

CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from thai_eval_utils.core.store import RunStore
    out, kill_after = sys.argv[1], int(sys.argv[2])
    store = RunStore.open("org/model", "thai_h6/th_arc", {"shots": 25}, outputs=out)
    done = store.completed()
    for i in range(10):
        key = f"doc-{i}"
        if key in done:
            continue
        with open(os.path.join(out, "computed.log"), "a") as fh:
            fh.write(key + "\\n")
        store.append(key, {"doc": i, "acc": i % 2, "text": "ภาษาไทย"})
        if i == kill_after:
            with open(store.items_path, "a") as fh:   # a record cut off mid-write
                fh.write('{"key": "doc-99", "acc"')
            os.kill(os.getpid(), signal.SIGKILL)
    store.write_summary({"n": len(store.completed())})
    """
)


def _run_child(out: Path, kill_after: int) -> int:
    return subprocess.run([sys.executable, "-c", CHILD, str(out), str(kill_after)], capture_output=True).returncode


def test_killed_run_resumes_without_losing_or_redoing_work(tmp_path):
    assert _run_child(tmp_path, kill_after=5) != 0  # killed
    assert _run_child(tmp_path, kill_after=-1) == 0  # resumed to the end
    computed = (tmp_path / "computed.log").read_text().split()
    assert computed == [f"doc-{i}" for i in range(10)]  # each item computed exactly once
    (run,) = list_runs(tmp_path)
    records = [json.loads(line) for line in (run.dir / "items.jsonl").read_text().splitlines()]
    assert [r["key"] for r in records] == [f"doc-{i}" for i in range(10)]
    assert records[3]["text"] == "ภาษาไทย"
    assert run.summary["n"] == 10
    assert len(run.card["resumed_at"]) == 1


def test_different_settings_never_mix(tmp_path):
    a = RunStore.open("m", "thai_h6/th_arc", {"shots": 25}, outputs=tmp_path)
    b = RunStore.open("m", "thai_h6/th_arc", {"shots": 0}, outputs=tmp_path)
    c = RunStore.open(
        "m",
        "thai_h6/th_arc",
        {"shots": 25},
        model_identity={"name": "m", "weights_fingerprint": "ab"},
        outputs=tmp_path,
    )
    a.append("x", {"v": 1})
    assert a.root != b.root and a.root != c.root
    assert b.completed() == {} and c.completed() == {}
    assert RunStore.open("m", "thai_h6/th_arc", {"shots": 25}, outputs=tmp_path).completed()["x"]["v"] == 1


def test_data_and_template_hashes_are_recorded_and_keyed(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text('{"q": "ก"}\n', encoding="utf-8")
    s1 = RunStore.open("m", "b", {}, data_files=[data], prompt_templates={"judge": "v1"}, outputs=tmp_path / "o")
    card = json.loads(s1.card_path.read_text())
    import hashlib

    assert card["data_files"][str(data)] == hashlib.sha256(data.read_bytes()).hexdigest()
    assert card["prompt_template_sha256"]["judge"] == hashlib.sha256(b"v1").hexdigest()
    assert card["package_versions"]["torch"] and card["package_versions"]["python"].startswith("3.")
    data.write_text('{"q": "ข"}\n', encoding="utf-8")
    assert (
        RunStore.open("m", "b", {}, data_files=[data], prompt_templates={"judge": "v1"}, outputs=tmp_path / "o").root
        != s1.root
    )
    s3 = RunStore.open("m", "b", {}, data_files=[data], prompt_templates={"judge": "v2"}, outputs=tmp_path / "o")
    assert s3.root != s1.root


def test_secrets_never_written(tmp_path):
    key = "sk-" + "test-SECRET0123456789abcdef"  # a fake key, built at run time
    store = RunStore.open(
        "openai:gpt-4o",
        "thaicli/judge",
        {"api_key": key, "base_url": "http://x", "max_tokens": 9},
        model_identity={"name": "gpt-4o", "OPENAI_API_KEY": key},
        outputs=tmp_path,
    )
    store.append("i", {"answer": f"the key is {key}", "authorization": f"Bearer {key}"})
    store.write_summary({"note": key})
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert "SECRET" not in path.read_text(encoding="utf-8"), path
    assert store.card["config"] == {"base_url": "http://x", "max_tokens": 9}


def test_redact_keeps_token_counts():
    kept = {"max_new_tokens": 5, "prompt_tokens": 3, "add_bos_token": False, "stop_tokens": ["x"]}
    secret = {
        "api_key": "x",
        "OPENAI_API_KEY": "x",
        "hf_token": "y",
        "token": "z",
        "access_token": "a",
        "client_secret": "c",
        "Authorization": "Bearer x",
    }
    assert redact({**kept, **secret, "nested": [{"password": 1}]}) == {**kept, "nested": [{}]}


@pytest.mark.parametrize(
    "name, slug",
    [
        ("../../etc/passwd", "etc_passwd"),
        ("openai:gpt-4o-2024-05-13", "openai_gpt-4o-2024-05-13"),
        ("/abs/path/Qwen2-72B", "abs_path_Qwen2-72B"),
        ("..", "model"),
        ("โมเดล ไทย", "model"),
    ],
)
def test_slugify_cannot_escape(name, slug, tmp_path):
    assert slugify(name) == slug
    store = RunStore.open(name, "../x", {}, outputs=tmp_path)
    assert tmp_path.resolve() in store.root.resolve().parents


def test_long_names_keep_a_hash():
    a, b = slugify("x" * 200 + "a"), slugify("x" * 200 + "b")
    assert len(a) == 80 and a != b


def test_score_mean_and_stderr():
    s = Score.mean("th_arc/acc_norm", [1, 0, 1, 1])
    assert s.value == 0.75 and s.n == 4
    assert s.stderr == pytest.approx((0.25 / 4) ** 0.5)  # sample std 0.5 / sqrt(4)
    assert str(s) == "th_arc/acc_norm = 0.7500 ± 0.2500 (n=4)"
    assert json.loads(json.dumps(s.to_dict()))["n"] == 4
    assert Score.mean("x", [3.0]).stderr is None


def test_a_short_registered_secret_does_not_unmask_a_longer_key():
    """Found by test order: with ``sk-test`` registered, a longer ``sk-test-...`` key must still be masked whole."""
    from thai_eval_utils.core.provenance import register_secret, scrub

    short, long_key = "sk-" + "test", "sk-" + "test-SECRET0123456789abcdef"
    register_secret(short)
    masked = scrub(f"keys {long_key} and {short}")
    assert "SECRET" not in masked and "sk-test" not in masked and masked == "keys <redacted> and <redacted>"
