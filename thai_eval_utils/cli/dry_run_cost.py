"""``thai-eval run --dry-run --price-in/--price-out/--prices``: the cost before the run.

Prices are US dollars per 1 million tokens (input, output), as ``templates/prices.json``. A row's cost is
``prompt_tokens * input + max_output_tokens * output`` over 1e6, for the generations of API models (``openai:``) and
API judges only; local and served models and log-likelihood rows cost nothing (empty cells). Output tokens are a budget (every generation to ``max_new_tokens``), and the
judge row assumes every answer takes all ``max_calls`` attempts: the costs are upper bounds (``cost_live_min``: the
judge at one call per answer).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thai_eval_utils.backend.client_options import LOCAL_JUDGE
from thai_eval_utils.backend.openai_client import load_prices

#: The OpenAI Batch API's price as a share of live requests: "50% cost discount compared to synchronous APIs"
#: (https://platform.openai.com/docs/guides/batch).
BATCH_DISCOUNT = 0.5
#: Characters per token of an estimate where no tokenizer counts (Thai text: about 3 characters a token).
CHARS_PER_TOKEN = 3.0
#: Columns added to ``cli.dry_run.COLUMNS`` when a price is known.
COST_COLUMNS = ["prompt_tokens", "tokens_are", "max_output_tokens", "cost_live", "cost_batch", "cost_live_min"]
#: Judges that run on this machine (no price).
LOCAL_JUDGES = ("embedded-serve", LOCAL_JUDGE)


@dataclass(frozen=True)
class Price:
    """US dollars per 1 million input and output tokens, and where the numbers came from."""

    input: float
    output: float
    source: str

    def cost(self, tokens_in: float, tokens_out: float) -> float:
        return (tokens_in * self.input + tokens_out * self.output) / 1e6


def price_arg(text: str) -> float:
    """argparse type of ``--price-in``/``--price-out``: a finite number >= 0 (USD per 1M tokens)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number (US dollars per 1 million tokens)") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a price is a finite number >= 0 (US dollars per 1 million tokens)")
    return value


def prices_file_arg(text: str) -> dict[str, dict[str, float]]:
    """argparse type of ``--prices``: a JSON object ``{model id: {"input": USD, "output": USD}}`` (keys starting
    with ``_`` are comments), every price a number >= 0."""
    try:
        table = json.loads(Path(text).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"prices file {text}: {exc}") from None
    if not isinstance(table, dict):
        raise argparse.ArgumentTypeError(f"prices file {text}: not a JSON object of model id -> prices")
    out = {}
    for model, p in table.items():
        if model.startswith("_"):
            continue
        if not isinstance(p, dict) or any(
            not isinstance(p.get(k), (int, float)) or isinstance(p.get(k), bool) or not math.isfinite(p[k]) or p[k] < 0
            for k in ("input", "output")
        ):
            raise argparse.ArgumentTypeError(
                f'prices file {text}: {model!r} needs "input" and "output", numbers >= 0 '
                "(US dollars per 1 million tokens)"
            )
        out[model] = {"input": float(p["input"]), "output": float(p["output"])}
    return out


def model_id(spec: str | None, *, judge: bool = False) -> str | None:
    """The API model id of a model spec (``openai:gpt-4o`` -> ``gpt-4o``; other specs are local or served: None) or
    of a judge (``judge``: any id but the local ones)."""
    if not spec or (judge and spec.startswith(LOCAL_JUDGES)) or (not judge and not spec.startswith("openai:")):
        return None
    return spec.removeprefix("openai:")


def find_price(
    spec: str | None,
    *,
    price_in: float | None,
    price_out: float | None,
    table: dict[str, dict[str, float]] | None,
    judge: bool = False,
    shipped: bool = True,
) -> Price | None:
    """The price of an API model: ``--price-in``/``--price-out`` (both given; one alone prices the other side at 0),
    else its line in ``--prices``, else (``shipped``) in the package's ``templates/prices.json``; None when unknown
    or local."""
    ident = model_id(spec, judge=judge)
    if ident is None:
        return None
    if price_in is not None or price_out is not None:
        return Price(price_in or 0.0, price_out or 0.0, "--price-in/--price-out")
    for name, source in ((table, "--prices"), (load_prices() if shipped else None, "templates/prices.json")):
        if name and ident in name:
            return Price(name[ident]["input"], name[ident]["output"], f"{source} ({ident})")
    return None


def _estimate(chars: int | None) -> int | None:
    return None if chars is None else round(chars / CHARS_PER_TOKEN)


def add_costs(
    rows: list[dict[str, Any]], *, tokenizer_source: str | None, model: Price | None, judge: Price | None
) -> list[dict[str, Any]]:
    """The rows (the last one the total) with :data:`COST_COLUMNS` filled: ``prompt_tokens`` counted (``fed_tokens``
    of ``tokenizer_source``) or estimated (characters / :data:`CHARS_PER_TOKEN`), output budgets, costs (``model``:
    the evaluated model's price, None when local; ``judge``: the judge's)."""
    *tasks, total = rows
    for row in tasks:
        if "judge_prompt_chars" in row:  # a suite's judge row (its dry_run hook gives the judge's texts and settings)
            calls, n = row["judge_max_calls"], row.get("judge_items", row["documents"])  # judged texts
            row["prompt_tokens"] = _estimate(row["judge_prompt_chars"]) + row["judge_answer_tokens"]  # one call each
            row["tokens_are"] = f"estimated (chars/{CHARS_PER_TOKEN} + answer budget, per call)"
            row["max_output_tokens"] = n * calls * row["judge_max_tokens"]
            if judge is not None:
                live = judge.cost(row["prompt_tokens"] * calls, row["max_output_tokens"])
                row.update(
                    cost_live=live,
                    cost_batch=live * BATCH_DISCOUNT,
                    cost_live_min=judge.cost(row["prompt_tokens"], n * row["judge_max_tokens"]),
                )
            continue
        if isinstance(row.get("fed_tokens"), int):
            row["prompt_tokens"], row["tokens_are"] = row["fed_tokens"], f"counted ({tokenizer_source})"
        elif row.get("prompt_chars") is not None:
            row["prompt_tokens"] = _estimate(row["prompt_chars"])
            row["tokens_are"] = f"estimated (chars/{CHARS_PER_TOKEN})"
        if isinstance(row.get("generations"), int) and isinstance(row.get("max_new_tokens"), int):
            row["max_output_tokens"] = row["generations"] * row["max_new_tokens"]
        # only generations are priced: an API chat model gives no log-likelihoods (those rows run locally or served)
        if model is not None and row.get("prompt_tokens") is not None and "max_output_tokens" in row:
            live = model.cost(row["prompt_tokens"], row.get("max_output_tokens") or 0)
            row.update(cost_live=live, cost_batch=live * BATCH_DISCOUNT, cost_live_min=live)
    for col in ("prompt_tokens", "max_output_tokens", "cost_live", "cost_batch", "cost_live_min"):
        values = [r[col] for r in tasks if isinstance(r.get(col), (int, float))]
        total[col] = sum(values) if values else None
    for row in rows:
        for col in ("cost_live", "cost_batch", "cost_live_min"):
            if isinstance(row.get(col), float):
                row[col] = round(row[col], 6)
    return rows


def assumptions(model: Price | None, judge: Price | None) -> str:
    """The printed line saying what the costs assume."""
    said = [
        f"{who} {p.input:g} in / {p.output:g} out USD per 1M tokens from {p.source}"
        for who, p in (("model", model), ("the judge", judge))
        if p is not None
    ]
    return (
        "costs (USD) assume: " + "; ".join(said or ["no price"]) + f"; cost_batch = {BATCH_DISCOUNT:g} x live "
        "(OpenAI Batch API discount; --batch batches the judge and an openai: model's answers); upper bounds: "
        "every generation to max_new_tokens and every judge answer taking all its attempts (cost_live_min: one judge call each); "
        "local models cost nothing (empty)."
    )


def cost_columns(columns: Sequence[str]) -> list[str]:
    """The dry-run columns with :data:`COST_COLUMNS` after them."""
    return [*columns, *COST_COLUMNS]
