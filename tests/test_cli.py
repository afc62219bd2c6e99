"""The ``thai-eval`` command: its entry point, help and version, ``--dry-run``'s counts (hand-checked
token counts), and ``run`` / ``runs`` / ``export`` end to end through ``python -m thai_eval_utils`` on the tiny random
model (Thai-H6, limit 1), including a failing run's exit code."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tomllib

import pytest
from conftest import REPO

from thai_eval_utils import h6
from thai_eval_utils.cli import build_parser, main
from thai_eval_utils.backend.encoding import count_tokens

SUBCOMMANDS = ("run", "runs", "compare", "tables", "export")


def _thai_eval(*args: str, cwd=REPO, timeout: int = 900) -> subprocess.CompletedProcess:
    """``python -m thai_eval_utils ARGS`` with this checkout first on the path (as the installed command runs)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "thai_eval_utils", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_entry_point_names_main():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    module, _, attr = scripts["thai-eval"].partition(":")
    assert getattr(importlib.import_module(module), attr) is main


def test_help_version_and_an_example_per_subcommand(capsys):
    proc = _thai_eval("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == "thai-eval 0.1.0"
    proc = _thai_eval("--help")
    assert proc.returncode == 0 and all(f"    {c} " in proc.stdout for c in SUBCOMMANDS)
    for command in SUBCOMMANDS:
        with pytest.raises(SystemExit) as exit_:
            build_parser().parse_args([command, "--help"])
        assert exit_.value.code == 0
        assert f"thai-eval {command}" in capsys.readouterr().out.split("examples:")[1]
    with pytest.raises(SystemExit) as exit_:  # --model is required: a usage error
        main(["run"])
    assert exit_.value.code == 2


class CharTokenizer:
    """One token per character; no BOS, EOS id 0 (enough for lm-eval's encoding rules)."""

    bos_token_id, eos_token_id = None, 0

    def __call__(self, texts, add_special_tokens=False):
        return {"input_ids": [[ord(c) for c in t] for t in texts]}

    def decode(self, ids):
        return "".join(map(chr, ids))


def test_count_tokens_by_hand():
    # ("ab", " c"): whole "ab c", context "ab" -> fed "ab " (3 tokens), scored " c" (2); same for " d";
    # ("x", " y"): fed "x " (2), scored 2. Fed 3 + 3 + 2 = 8; the tree runs "ab " once and "x ": 3 + 2 = 5.
    assert count_tokens(CharTokenizer(), [("ab", " c"), ("ab", " d"), ("x", " y")]) == {
        "requests": 3,
        "fed": 8,
        "tree": 5,
        "scored": 6,
    }
    # trailing whitespace of the context moves to the continuation: ("ab ", "c") is ("ab", " c")
    assert count_tokens(CharTokenizer(), [("ab ", "c")]) == {"requests": 1, "fed": 3, "tree": 3, "scored": 2}
    # left truncation to max_length + 1 before the last token is dropped
    assert count_tokens(CharTokenizer(), [("abcdef", " g")], max_length=4)["fed"] == 4


def test_dry_run_counts_without_weights(tiny_model_dir, tmp_path, capsys):
    from transformers import AutoTokenizer

    code = main(
        [
            "run",
            "--model",
            str(tiny_model_dir),
            "--benchmarks",
            "thai_h6",
            "--limit",
            "1",
            "--dry-run",
            "--outputs",
            str(tmp_path / "out"),
        ]
    )
    text = capsys.readouterr().out
    assert code == 0 and not (tmp_path / "out").exists()  # nothing computed, nothing written
    rows = {line.split()[1]: line.split()[2:] for line in text.splitlines() if line.startswith("thai_h6 ")}
    docs = h6.document_requests("th_arc", REPO / "data" / "thai_h6", limit=1)
    pairs = [p for d in docs for p in d.requests.requests]
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    counts = count_tokens(tok, pairs, max_length=tok.model_max_length if tok.model_max_length < 1 << 24 else 1 << 30)
    assert rows["th_arc"] == [str(len(docs)), str(len(pairs)), str(counts["fed"]), str(counts["tree"])]
    assert rows["th_mmlu"][0] == "3"  # limit 1 per subject, three subjects in the samples
    assert rows["th_gsm8k"][:1] == ["1"] and rows["th_gsm8k"][-2:] == ["1", "256"]  # 1 generation of up to 256 tokens
    assert "tokenizer: " + str(tiny_model_dir) in text


def test_run_runs_export_end_to_end(tiny_model_dir, tmp_path):
    """thai-eval run on the tiny model (Thai-H6, limit 1, no paper notebook), then runs and export read its store."""
    out = tmp_path / "outputs"
    proc = _thai_eval(
        "run",
        "--model",
        str(tiny_model_dir),
        "--benchmarks",
        "thai_h6",
        "--limit",
        "1",
        "--no-paper",
        "--outputs",
        str(out),
        "--dtype",
        "float32",
        "--max-new-tokens",
        "4",
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "1/1 notebook runs succeeded." in proc.stdout and "runs written or resumed by this command" in proc.stdout
    assert "benchmarks: 100%" in proc.stderr  # the progress bar
    summary = proc.stdout.split("runs written or resumed by this command")[1]
    assert all(t in summary for t in h6.TASKS)

    gsm8k = json.loads(next((out / "runs").rglob("th_gsm8k/*/run_card.json")).read_text(encoding="utf-8"))
    assert gsm8k["config"]["max_new_tokens"] == 4 and gsm8k["model"]["dtype"] == "float32"  # the options reached it

    proc = _thai_eval("runs", "--outputs", str(out), "--csv", str(tmp_path / "runs.csv"))
    assert proc.returncode == 0 and "6 runs under" in proc.stdout
    import pandas as pd

    runs = pd.read_csv(tmp_path / "runs.csv")
    assert sorted(runs["task"]) == sorted(h6.TASKS) and runs["finished"].all() and (runs["limit"] == 1).all()
    arc = runs[runs["task"] == "th_arc"].iloc[0]
    assert (arc["items"], arc["total"], arc["partial"]) == (1, 12, True)

    proc = _thai_eval("export", "--format", "lm-eval", "--outputs", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    exported = sorted((out / "exports" / "lm-eval").rglob("*.json*"))
    assert len(exported) == 7  # results + six samples files
    results = json.loads(next(p for p in exported if p.name.startswith("results_")).read_text(encoding="utf-8"))
    assert sorted(results["results"]) == sorted(h6.TASKS)

    # a model that cannot load: the notebook fails, the command says so and exits 1
    bad = _thai_eval(
        "run",
        "--model",
        str(tmp_path / "no-such-model"),
        "--benchmarks",
        "thai_h6",
        "--no-paper",
        "--outputs",
        str(out),
    )
    assert bad.returncode == 1 and "[ failed]" in bad.stdout and "0/1 notebook runs succeeded." in bad.stdout
    # an export with nothing to export fails with a message, not a traceback
    empty = _thai_eval("export", "--format", "parquet", "--outputs", str(tmp_path / "empty"))
    assert empty.returncode == 1 and "no finished run to export" in empty.stderr and "Traceback" not in empty.stderr
