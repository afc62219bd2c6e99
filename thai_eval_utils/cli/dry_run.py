"""``thai-eval run --dry-run``: what a run would compute, per task, before any weights are loaded.

Thai-H6: the documents, their log-likelihood requests (built by :func:`thai_eval_utils.h6.document_requests`
exactly as the run builds them) and the tokens: ``fed`` as lm-eval feeds them (one forward per request), ``tree``
as this engine runs them (shared prefixes once; :func:`thai_eval_utils.backend.loglikelihood.count_tokens`), GSM8K's
prompt tokens and its generation budget. ThaiCLI and the dialects: the questions, the generations and their prompt
tokens, the judge calls (at least one, at most ``max_calls`` per answer). Only the tokenizer is loaded (the model
folder's, or ``--tokenizer``); without one, token columns are empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thai_eval_utils.backend.loglikelihood import count_tokens
from thai_eval_utils.backend.model_sources import EMBEDDED, embedded_model_dir
from thai_eval_utils.dialect.data import load_dialect
from thai_eval_utils.dialect.generation import PAPER_MAX_NEW_TOKENS, build_prompt, load_prompts
from thai_eval_utils.dialect.generation import select_items as select_dialect_items
from thai_eval_utils.h6 import TASKS, document_requests, protocol_from
from thai_eval_utils.h6.tasks import get_task
from thai_eval_utils.thaicli.answers import select_items as select_thaicli_items
from thai_eval_utils.thaicli.data import load_thaicli
from thai_eval_utils.thaicli.judge_free import LL_CONTEXT_TEMPLATE, LL_TARGET_DELIMITER

#: Columns of the dry-run table.
COLUMNS = ["benchmark", "task", "documents", "requests", "fed_tokens", "tree_tokens", "generations", "max_new_tokens",
           "judge_calls"]
#: ThaiCLI answer budget and judge attempts per answer (the notebook's defaults: max_new_tokens, judge_max_calls).
THAICLI_MAX_NEW_TOKENS = 512
JUDGE_MAX_CALLS = 16


@dataclass
class Tokenizer:
    """A tokenizer for counting (``None`` inside: no counts) and where it came from."""

    tokenizer: Any
    source: str

    def count(self, texts: Sequence[str]) -> int | None:
        if self.tokenizer is None or not texts:
            return None if self.tokenizer is None else 0
        return sum(len(ids) for ids in self.tokenizer(list(texts), add_special_tokens=False)["input_ids"])


def load_tokenizer(model: str, tokenizer: str | None = None) -> Tokenizer:
    """The tokenizer of ``--tokenizer`` (``embedded`` or a folder), else of the model spec when it is ``embedded``
    or a local folder; otherwise none (API and served models without ``--tokenizer``). No weights are read."""
    from transformers import AutoTokenizer  # heavy; only a dry run needs it

    spec = tokenizer or model
    if spec == EMBEDDED:
        path = embedded_model_dir()
    elif Path(spec).expanduser().is_dir():
        path = Path(spec).expanduser()
    else:
        return Tokenizer(None, f"none for {spec!r} (pass --tokenizer embedded or a folder to count tokens)")
    return Tokenizer(AutoTokenizer.from_pretrained(str(path)), str(path))


def _max_length(tok: Tokenizer) -> int:
    """The truncation length to count with: the tokenizer's ``model_max_length`` when it is a real one."""
    n = getattr(tok.tokenizer, "model_max_length", None)
    return int(n) if isinstance(n, int) and 0 < n < 1 << 24 else 1 << 30


def h6_rows(data: str | Path, tok: Tokenizer, *, limit: int | None = None, tasks: Sequence[str] = TASKS,
            protocol_preset: str = "lb", add_bos_token: bool = False, max_new_tokens: int | None = None) -> list[dict[str, Any]]:
    """One row per Thai-H6 task (the notebook's defaults: LB protocol, no BOS)."""
    protocol = protocol_from(protocol_preset, add_bos_token=add_bos_token, max_new_tokens=max_new_tokens)
    rows = []
    for task in tasks:
        spec = get_task(task)
        docs = document_requests(spec.name, data, protocol, limit=limit)
        row: dict[str, Any] = {"benchmark": "thai_h6", "task": spec.name, "documents": len(docs)}
        if spec.uses_loglikelihood:
            requests = [pair for d in docs for pair in d.requests.requests]
            row["requests"] = len(requests)
            if tok.tokenizer is not None:
                counts = count_tokens(tok.tokenizer, requests, add_bos_token=add_bos_token, max_length=_max_length(tok))
                row.update(fed_tokens=counts["fed"], tree_tokens=counts["tree"])
        else:
            row.update(generations=len(docs), max_new_tokens=protocol.max_new_tokens,
                       fed_tokens=tok.count([d.requests.prompt for d in docs]))
        rows.append(row)
    return rows


def thaicli_rows(data: str | Path, tok: Tokenizer, *, limit: int | None = None, judge: bool = True,
                 max_new_tokens: int | None = None) -> list[dict[str, Any]]:
    """ThaiCLI: answers to generate, the judge-free log-likelihood pairs, the judge calls."""
    items = select_thaicli_items(load_thaicli(data), limit)
    n = len(items)
    answers = {"benchmark": "thaicli", "task": "answers", "documents": n, "generations": n,
               "max_new_tokens": max_new_tokens or THAICLI_MAX_NEW_TOKENS, "fed_tokens": tok.count(list(items["question"]))}
    requests = [(LL_CONTEXT_TEMPLATE.format(question=q), LL_TARGET_DELIMITER + a)
                for q, c, r in zip(items["question"], items["chosen"], items["rejected"]) for a in (c, r)]
    loglik: dict[str, Any] = {"benchmark": "thaicli", "task": "loglik", "documents": n, "requests": len(requests)}
    if tok.tokenizer is not None:
        counts = count_tokens(tok.tokenizer, requests, max_length=_max_length(tok))
        loglik.update(fed_tokens=counts["fed"], tree_tokens=counts["tree"])
    rows = [answers, loglik]
    if judge:
        rows.append({"benchmark": "thaicli", "task": "judge", "documents": n, "judge_calls": f"{n}-{n * JUDGE_MAX_CALLS}"})
    return rows


def dialect_rows(data: str | Path, tok: Tokenizer, *, limit: int | None = None,
                 max_new_tokens: int | None = None) -> list[dict[str, Any]]:
    """The dialect benchmark: one generation per item, per task (all dialects together)."""
    items = select_dialect_items(load_dialect(data), limit=limit)
    prompts = load_prompts()
    rows = []
    for task, group in items.groupby("task", sort=False):
        texts = [build_prompt(item, prompts) for item in group.to_dict("records")]
        rows.append({"benchmark": "dialect", "task": str(task), "documents": len(group), "generations": len(group),
                     "max_new_tokens": max_new_tokens or PAPER_MAX_NEW_TOKENS, "fed_tokens": tok.count(texts)})
    return rows


def dry_run_rows(benchmarks: Sequence[str], data: dict[str, Path], tok: Tokenizer, *, limit: int | None = None,
                 judge: bool = True, max_new_tokens: int | None = None) -> list[dict[str, Any]]:
    """Every benchmark's rows, with a total row (``max_new_tokens``: ``run --max-new-tokens``)."""
    builders = {"thai_h6": lambda: h6_rows(data["thai_h6"], tok, limit=limit, max_new_tokens=max_new_tokens),
                "thaicli": lambda: thaicli_rows(data["thaicli"], tok, limit=limit, judge=judge, max_new_tokens=max_new_tokens),
                "dialect": lambda: dialect_rows(data["dialect"], tok, limit=limit, max_new_tokens=max_new_tokens)}
    rows = [row for b in benchmarks for row in builders[b]()]
    total: dict[str, Any] = {"benchmark": "total", "task": ""}
    for col in ("documents", "requests", "fed_tokens", "tree_tokens", "generations"):
        values = [r[col] for r in rows if isinstance(r.get(col), int)]
        total[col] = sum(values) if values else None
    return [*rows, total]
