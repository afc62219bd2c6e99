"""``thai-eval run --config FILE`` (cli/run_config.py) and the notebooks' one ``options`` parameter
(thai_eval_utils/run_options.py): the file's schema, the command line's precedence, the errors naming the file and
the key path, no secrets, the resolved configuration recorded and shown, and the typed pieces a notebook reads."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml
from conftest import REPO

from thai_eval_utils.cli import build_parser, commands, main
from thai_eval_utils.cli.run_config import SCHEMA, Key, _keys, load_config, notebook_options
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.notebook_exec import filter_parameters
from thai_eval_utils.run_options import SECTIONS, answers_file, run_options
from thai_eval_utils.thaicli.demo_judge_server import judge_params_for

EXAMPLE = REPO / "docs" / "examples" / "eval.yaml"


def _write(tmp_path, text: str):
    path = tmp_path / "eval.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _resolved(monkeypatch, argv: list[str]) -> tuple[object, dict]:
    """Run ``thai-eval run`` with the notebooks replaced by a recorder: the parsed arguments and the common
    parameters the suites' notebooks would get."""
    seen: dict = {}

    def fake_run_suites(args, models, extra, out):
        seen.update(args=args, models=models, extra=extra)
        return []

    monkeypatch.setattr(commands, "_run_suites", fake_run_suites)
    assert main(["run", *argv, "--no-paper"]) == 0
    return seen["args"], seen


# ----------------------------------------------------------------------------------------------- the file
def test_every_key_sets_an_option_run_takes():
    """Each key of the schema names a ``run`` option (its flag) that exists, and the shared sections hold exactly the
    notebooks' ``options`` keys (``model`` also ``spec``)."""
    run = next(a for a in build_parser()._actions if a.dest == "command").choices["run"]
    flags = {s for a in run._actions for s in a.option_strings}
    options = [key.option for _, key in _keys() if key.option.startswith("--")]
    assert [o for o in options if o not in flags] == []
    assert [k for k in ("suites", "prices") if k in SCHEMA] == ["suites", "prices"]
    for section, keys in SECTIONS.items():
        assert set(SCHEMA[section]) - {"spec"} == set(keys), section
    assert Key("--batch-wait", (float,)).dest == "batch_wait"


def test_the_example_file_loads_and_dry_runs():
    """docs/examples/eval.yaml: checked, and ``thai-eval run --config ... --dry-run`` prints its plan and the resolved
    configuration (the command line's --limit over the file's)."""
    config = load_config(EXAMPLE)
    assert config["model"]["spec"] == "embedded" and config["benchmarks"] == ["thai_h6", "thaicli"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "thai_eval_utils", "run", "--config", str(EXAMPLE), "--dry-run", "--limit", "1"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "dry run for embedded" in proc.stdout and "thaicli" in proc.stdout and "th_arc" in proc.stdout
    shown = yaml.safe_load(proc.stdout.split("when it runs):\n", 1)[1].split("\nservers `thai-eval", 1)[0])
    assert shown["limit"] == 1 and shown["max_new_tokens"] == 48 and shown["greedy"] is True
    assert shown["model"] == {"spec": ["embedded"], "dtype": "float32", "order_probe": True}
    assert shown["suites"] == {"thai_h6": {"protocol_preset": "lb", "gsm8k_limit": 1}}
    assert shown["data"] == "samples" and shown["paper"] is False and shown["outputs"] == "outputs/example"


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ("model:\n  spec: embedded\n  dtipe: float32\n", "model.dtipe", "unknown key; allowed here: spec, dtype, "),
        ("limits: 2\n", "limits", "unknown key; allowed here: model, benchmarks, tasks_dir, data, revision, limit,"),
        ("limit: two\n", "limit", "expected int, got 'two'"),
        ("limit: true\n", "limit", "expected int, got True"),
        ("greedy: 1\n", "greedy", "expected bool, got 1"),
        ("thinking: strip\n", "thinking", "expected a mapping of mode, think_tags, max_thinking_tokens, "),
        ("benchmarks: [thai_h6, 3]\n", "benchmarks", "expected a list of strings, got ['thai_h6', 3]"),
        ("judge:\n  api_key: abc\n", "judge.api_key", "a secret is never read from a run configuration"),
        ("model:\n  base_url: https://u:pw@host/v1\n", "model.base_url", "a secret is never read from a run"),
    ],
)
def test_bad_files_name_the_file_and_the_key(tmp_path, text, field, message):
    path = _write(tmp_path, text)
    with pytest.raises(ThaiEvalDataError) as err:
        load_config(path)
    assert err.value.path == str(path) and err.value.field == field
    assert err.value.reason.startswith(message), err.value.reason


def test_a_bad_file_is_an_error_of_the_command(tmp_path, capsys):
    key = "sk-" + "abcdefghijklmnopqrstuvwxyz0123"  # built here, so no key-shaped text is in the repository
    path = _write(tmp_path, f"model:\n  spec: embedded\n  api_key: {key}\n")
    assert main(["run", "--config", str(path), "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert f"{path}, field 'model.api_key': a secret is never read" in err and "sk-abcdefghijklmnop" not in err


def test_suites_options_are_checked_against_their_notebooks(tmp_path, capsys):
    path = _write(tmp_path, "model: {spec: embedded}\nsuites: {thai_h6: {gsm8k_max_new_tokens: 3}}\n")
    assert main(["run", "--config", str(path), "--dry-run"]) == 1
    assert "field 'suites.thai_h6.gsm8k_max_new_tokens': unknown key; allowed here: " in capsys.readouterr().err
    path = _write(tmp_path, "model: {spec: embedded}\nsuites: {no_such_suite: {limit: 3}}\n")
    assert main(["run", "--config", str(path), "--dry-run"]) == 1
    assert "field 'suites.no_such_suite': unknown suite; allowed: thai_h6, " in capsys.readouterr().err


# ------------------------------------------------------------------------------------- precedence and record
def test_the_command_line_overrides_the_file(tmp_path, monkeypatch):
    """Each option given on the command line wins, even at its default value (--tp 1 over the file's 2); the file
    fills the rest; --model replaces the file's models rather than adding to them."""
    out = tmp_path / "out"
    path = _write(
        tmp_path,
        "model: {spec: [embedded, /models/b], dtype: bfloat16}\nbenchmarks: thai_h6\nlimit: 3\n"
        "servers: {tp: 2, prefix_caching: off}\nthinking: {mode: lighteval}\nmax_new_tokens: 7\n"
        f"suites: {{thai_h6: {{max_new_tokens: 5, protocol_preset: lm_eval}}}}\noutputs: {out}\n",
    )
    args, seen = _resolved(monkeypatch, ["--config", str(path), "--limit", "1", "--tp", "1", "--model", "embedded"])
    assert (args.limit, args.tp, args.prefix_caching, args.dtype) == (1, 1, "off", "bfloat16")
    assert seen["models"] == ["embedded"] and args.benchmarks == ["thai_h6"]
    assert seen["extra"]["max_new_tokens"] == 7 and args.suite_options["thai_h6"]["max_new_tokens"] == 5
    assert seen["extra"]["options"] == {"model": {"dtype": "bfloat16"}, "thinking": {"mode": "lighteval"}}
    recorded = yaml.safe_load((out / "run_config.yaml").read_text(encoding="utf-8"))
    assert recorded["limit"] == 1 and recorded["servers"] == {"tp": 1, "prefix_caching": "off", "deadline_s": 1800.0}
    assert recorded["model"]["spec"] == ["embedded"] and recorded["thinking"] == {"mode": "lighteval"}
    assert (out / "run_config.yaml").read_text(encoding="utf-8").startswith("# thai-eval run, resolved configuration")
    assert load_config(out / "run_config.yaml")["limit"] == 1  # the record is itself a run configuration


def test_the_suites_options_reach_their_notebooks(tmp_path, monkeypatch):
    """``suites.<name>`` over the suite's own parameters, for that suite's notebooks only."""
    captured = []
    monkeypatch.setattr(
        commands.notebook_runs, "run_models", lambda models, **kw: captured.append(kw) or _report(kw["outputs"])
    )
    path = _write(
        tmp_path, f"model: {{spec: embedded}}\nsuites: {{thai_h6: {{max_new_tokens: 5}}}}\noutputs: {tmp_path}\n"
    )
    assert main(["run", "--config", str(path), "--benchmarks", "thai_h6,thaicli", "--no-paper"]) == 0
    per = {tuple(kw["notebooks"]): kw["per_notebook"] for kw in captured}
    assert per[("thai_h6.ipynb",)]["thai_h6.ipynb"] == {"max_new_tokens": 5}
    assert "max_new_tokens" not in per[("thaicli.ipynb",)]["thaicli.ipynb"]


def _report(outputs):
    return commands.notebook_runs.NotebookRunsReport([], str(outputs))


def test_secrets_never_reach_the_record(tmp_path, monkeypatch):
    out = tmp_path / "out"
    monkeypatch.setenv("THAI_EVAL_JUDGE_API_KEY", "")
    args, _ = _resolved(
        monkeypatch,
        [
            "--model",
            "embedded",
            "--judge",
            "j",
            "--judge-base-url",
            "https://me:hunter22@judge/v1",
            "--outputs",
            str(out),
        ],
    )
    text = (out / "run_config.yaml").read_text(encoding="utf-8")
    assert "hunter22" not in text and yaml.safe_load(text)["judge"] == {"model": "j", "base_url": "https://judge/v1"}


def test_run_without_a_model_is_a_usage_error(tmp_path):
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--config", str(_write(tmp_path, "limit: 2\n"))])
    assert exit_.value.code == 2


# ------------------------------------------------------------------------------------ the options parameter
def test_run_options_returns_the_typed_pieces():
    opts = run_options(
        {
            "model": {"dtype": "bfloat16", "base_url": "http://gpu/v1", "tokenizer": "embedded", "order_probe": False},
            "thinking": {"mode": "lm-eval", "think_tags": "<r>,</r>", "stop_after_thinking": True},
            "batch": {"submit": True, "wait_s": 5, "file_out": "/tmp/req.jsonl"},
        }
    )
    assert opts.load_options("/models/local", add_bos_token=False) == {"dtype": "bfloat16", "add_bos_token": False}
    assert opts.load_options("openai:x") == {"dtype": "bfloat16", "base_url": "http://gpu/v1"}
    assert opts.load_options("completions:x") == {
        "dtype": "bfloat16",
        "base_url": "http://gpu/v1",
        "tokenizer": "embedded",
        "order_probe": False,
    }
    assert (opts.thinking.rule, opts.thinking.open_tag, opts.thinking.stop_after_thinking) == ("lm-eval", "<r>", True)
    assert opts.batch.active and opts.batch.answers() == {
        "submit": True,
        "wait_s": 5.0,
        "file_out": "/tmp/req.answers.jsonl",
        "file_in": None,
    }
    assert opts.batch.judge()["file_out"] == "/tmp/req.jsonl"
    assert run_options({"thinking": {"stop_after_thinking": True}}, stop_after_thinking=False).thinking == (
        run_options({}).thinking
    )
    default = run_options(None)
    assert default.load_options("embedded") == {} and not default.batch.active and default.thinking.rule == "strict"
    assert answers_file("out/x") == "out/x.answers.jsonl"


@pytest.mark.parametrize(
    ("options", "field", "message"),
    [
        ({"modle": {}}, "modle", "unknown key; allowed: model, thinking, batch"),
        ({"model": {"dtipe": "x"}}, "model.dtipe", "unknown key; allowed: dtype, device_map, base_url, "),
        ({"batch": {"submit": "yes"}}, "batch.submit", "expected bool, got 'yes'"),
        ({"thinking": {"max_thinking_tokens": True}}, "thinking.max_thinking_tokens", "expected int, got True"),
        ({"thinking": {"mode": "maybe"}}, "thinking", "thinking must be one of"),
    ],
)
def test_run_options_refuses_bad_keys(options, field, message):
    with pytest.raises(ThaiEvalDataError) as err:
        run_options(options)
    assert err.value.field == field and err.value.reason.startswith(message)


def test_a_replaced_parameter_names_its_key():
    """``papermill -p dtype bfloat16`` (injected whether or not declared) is refused, naming the key now."""
    with pytest.raises(ThaiEvalDataError) as err:
        run_options({}, namespace={"model": "x", "dtype": "bfloat16", "judge_batch": True})
    assert err.value.field == "dtype"
    assert "dtype -> options['model']['dtype'], judge_batch -> options['batch']['submit']" in str(err.value)


def test_notebook_options_from_the_command_line(tmp_path):
    args = build_parser().parse_args(
        [
            "run",
            "--model",
            "m",
            "--dtype",
            "float16",
            "--batch-file-in",
            str(tmp_path / "in.jsonl"),
            "--thinking",
            "off",
        ]
    )
    assert notebook_options(args) == {
        "model": {"dtype": "float16"},
        "thinking": {"mode": "off"},
        "batch": {"file_in": str(tmp_path / "in.jsonl")},
    }
    assert notebook_options(args, {"base_url": "http://a,http://b", "tokenizer": None})["model"] == {
        "dtype": "float16",
        "base_url": "http://a,http://b",
    }


def test_a_secret_inside_options_is_refused():
    with pytest.raises(ValueError, match=r"secret-looking parameter\(s\) \['options'\]"):
        filter_parameters({"options": {}}, {"options": {"model": {"base_url": "https://u:pw@host/v1"}}})
    assert filter_parameters({"options": {}}, {"options": {"model": {"dtype": "float32"}}})[0] == {
        "options": {"model": {"dtype": "float32"}}
    }


def test_the_demo_judge_is_capped():
    """The greedy 270M demo judge gets 2 calls of 8 tokens (it repeats itself); any other judge what was asked."""
    demo = judge_params_for("embedded-serve", max_tokens=512, max_calls=16)
    assert (demo.max_tokens, demo.max_calls) == (8, 2)
    assert (judge_params_for("embedded-serve", max_tokens=4, max_calls=1).max_tokens, 1) == (4, 1)
    real = judge_params_for("gpt-4o-2024-05-13", max_tokens=512, max_calls=16)
    assert (real.max_tokens, real.max_calls, real.temperature, real.seed) == (512, 16, 0.0, 0)
