"""``thai-eval run --dry-run`` with prices (the cost before the run): hand-computed costs, counted and estimated
tokens, the prices file, bad prices, and the output without prices unchanged."""

from __future__ import annotations

import json

import pytest
from conftest import REPO

from thai_eval_utils.cli import main
from thai_eval_utils.cli.dry_run import COLUMNS, Tokenizer, dry_run_rows
from thai_eval_utils.cli.dry_run_cost import BATCH_DISCOUNT, CHARS_PER_TOKEN, Price, add_costs, find_price
from thai_eval_utils.core.registry import resolve
from thai_eval_utils.thaicli.answers import select_items
from thai_eval_utils.thaicli.data import load_thaicli
from thai_eval_utils.thaicli.judge_prompt import TEMPLATE_TEXT

DATA = REPO / "data" / "thaicli"


def _rows(tok: Tokenizer, model: Price | None, judge: Price | None) -> dict[str, dict]:
    suites = resolve(["thaicli"])
    rows = dry_run_rows(suites, {"thaicli": DATA}, tok, limit=2)
    return {r["task"] or "total": r for r in add_costs(rows, tokenizer_source=tok.source, model=model, judge=judge)}


def _items():
    return select_items(load_thaicli(DATA), 2)


def test_counted_tokens_and_hand_computed_costs(tiny_model_dir):
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(tiny_model_dir)
    tok = Tokenizer(hf, str(tiny_model_dir))
    rows = _rows(tok, Price(2.0, 8.0, "test"), None)
    items = _items()
    n = len(items)
    counted = sum(len(ids) for ids in hf(list(items["question"]), add_special_tokens=False)["input_ids"])
    answers = rows["answers"]
    assert answers["prompt_tokens"] == counted and answers["tokens_are"] == f"counted ({tiny_model_dir})"
    assert answers["max_output_tokens"] == n * 512
    live = (counted * 2.0 + n * 512 * 8.0) / 1e6
    assert answers["cost_live"] == pytest.approx(live) and answers["cost_batch"] == pytest.approx(live / 2)
    assert "cost_live" not in rows["judge"]  # no judge price: the judge costs nothing here
    assert rows["total"]["cost_live"] == pytest.approx(live)


def test_estimated_tokens_and_judge_bounds():
    rows = _rows(Tokenizer(None, "none"), Price(1.0, 2.0, "test"), Price(5.0, 15.0, "test"))
    items = _items()
    n = len(items)
    answers = rows["answers"]
    assert answers["prompt_tokens"] == round(sum(len(q) for q in items["question"]) / 3.0)
    assert answers["tokens_are"] == "estimated (chars/3.0)" and CHARS_PER_TOKEN == 3.0
    chars = sum(
        len(TEMPLATE_TEXT) + len(q) + len(c) + len(r)
        for q, c, r in zip(items["question"], items["chosen"], items["rejected"])
    )
    judge = rows["judge"]
    per_call = round(chars / 3.0) + n * 512  # template + texts, and each answer at most its 512-token budget
    assert judge["prompt_tokens"] == per_call and judge["tokens_are"].startswith("estimated (chars/3.0")
    assert judge["max_output_tokens"] == n * 16 * 512
    upper = (per_call * 16 * 5.0 + n * 16 * 512 * 15.0) / 1e6
    assert judge["cost_live"] == pytest.approx(upper, abs=1e-6)
    assert judge["cost_batch"] == pytest.approx(upper * BATCH_DISCOUNT, abs=1e-6) and BATCH_DISCOUNT == 0.5
    assert judge["cost_live_min"] == pytest.approx((per_call * 5.0 + n * 512 * 15.0) / 1e6, abs=1e-6)
    assert rows["total"]["cost_live"] == pytest.approx(answers["cost_live"] + judge["cost_live"], abs=1e-6)
    assert "prompt_tokens" not in rows["loglik"] and "cost_live" not in rows["loglik"]


def test_cli_prices_the_api_model_and_states_assumptions(tiny_model_dir, capsys):
    code = main(
        [
            "run",
            "--model",
            "openai:m",
            "--tokenizer",
            str(tiny_model_dir),
            "--benchmarks",
            "thaicli",
            "--limit",
            "2",
            "--dry-run",
            "--price-in",
            "2",
            "--price-out",
            "8",
        ]
    )
    text = capsys.readouterr().out
    assert code == 0
    header = next(line for line in text.splitlines() if line.startswith("benchmark "))
    assert header.split() == [
        *COLUMNS,
        "prompt_tokens",
        "tokens_are",
        "max_output_tokens",
        "cost_live",
        "cost_batch",
        "cost_live_min",
    ]
    assert f"counted ({tiny_model_dir})" in text
    assert "model 2 in / 8 out USD per 1M tokens from --price-in/--price-out" in text
    assert "cost_batch = 0.5 x live" in text and "upper bounds" in text


def test_prices_file_and_shipped_table_for_the_judge(tmp_path, capsys):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"_about": "test", "m": {"input": 3, "output": 6}}))
    code = main(
        [
            "run",
            "--model",
            "openai:m",
            "--benchmarks",
            "thaicli",
            "--limit",
            "2",
            "--dry-run",
            "--prices",
            str(path),
            "--judge",
            "gpt-4o-2024-05-13",
        ]
    )
    text = capsys.readouterr().out
    assert code == 0
    assert "model 3 in / 6 out USD per 1M tokens from --prices (m)" in text
    assert "judge 5 in / 15 out USD per 1M tokens from templates/prices.json (gpt-4o-2024-05-13)" in text
    assert "estimated (chars/3.0)" in text
    # a local model or judge has no price
    assert find_price("embedded-serve", price_in=1, price_out=1, table=None, judge=True) is None
    assert find_price("local:embedded", price_in=1, price_out=1, table=None, judge=True) is None
    assert find_price("embedded", price_in=1, price_out=1, table=None) is None  # a local evaluated model
    assert find_price("openai:unknown", price_in=None, price_out=None, table=None) is None


@pytest.mark.parametrize(
    "args, message",
    [
        (["--price-in", "-1"], "a price is a finite number >= 0"),
        (["--price-out", "abc"], "'abc' is not a number"),
        (["--price-in", "nan"], "a price is a finite number >= 0"),
        (["--prices", "/nonexistent/prices.json"], "prices file /nonexistent/prices.json"),
    ],
)
def test_bad_price_is_an_argparse_error(args, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "--model", "openai:m", "--benchmarks", "thaicli", "--dry-run", *args])
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_bad_prices_file_content(tmp_path, capsys):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"m": {"input": "cheap", "output": 1}}))
    with pytest.raises(SystemExit):
        main(["run", "--model", "openai:m", "--benchmarks", "thaicli", "--dry-run", "--prices", str(path)])
    assert '\'m\' needs "input" and "output", numbers >= 0' in capsys.readouterr().err


def test_output_without_prices_unchanged(capsys):
    code = main(["run", "--model", "openai:m", "--benchmarks", "thaicli", "--limit", "2", "--dry-run"])
    text = capsys.readouterr().out
    assert code == 0
    header = next(line for line in text.splitlines() if line.startswith("benchmark "))
    assert header.split() == COLUMNS
    assert "cost" not in text and "estimated" not in text
    judge = next(line.split() for line in text.splitlines() if line.split()[:2] == ["thaicli", "judge"])
    assert judge == ["thaicli", "judge", "4", "4-64"]
