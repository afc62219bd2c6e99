"""``thai-eval run --dry-run``: what a run would compute, per task, before any weights are loaded.

Each suite says what its run would compute (:meth:`~thai_eval_utils.core.benchmark.Suite.dry_run`: documents,
log-likelihood requests and their tokens, generations and their prompt tokens, judge calls); this module loads
the tokenizer, counts (``fed`` as lm-eval feeds requests, one forward per request; ``tree`` as this engine runs
them, shared prefixes once: :func:`thai_eval_utils.backend.encoding.count_tokens`) and adds the total row. Only
the tokenizer is loaded (the model folder's, or ``--tokenizer``); without one, token columns are empty.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thai_eval_utils.core.benchmark import Suite
from thai_eval_utils.backend.encoding import count_tokens
from thai_eval_utils.backend.model_sources import EMBEDDED, embedded_model_dir

#: Columns of the dry-run table.
COLUMNS = [
    "benchmark",
    "task",
    "documents",
    "requests",
    "fed_tokens",
    "tree_tokens",
    "generations",
    "max_new_tokens",
    "judge_calls",
]


@dataclass
class Tokenizer:
    """A tokenizer for counting (``None`` inside: no counts) and where it came from."""

    tokenizer: Any
    source: str

    def count(self, texts: Sequence[str]) -> int | None:
        if self.tokenizer is None or not texts:
            return None if self.tokenizer is None else 0
        return sum(len(ids) for ids in self.tokenizer(list(texts), add_special_tokens=False)["input_ids"])

    def count_requests(
        self, requests: Sequence[tuple[str, str]], *, add_bos_token: bool = False
    ) -> dict[str, int] | None:
        """lm-eval's (``fed``) and this engine's (``tree``) tokens of log-likelihood requests; None without a
        tokenizer."""
        if self.tokenizer is None:
            return None
        return count_tokens(self.tokenizer, list(requests), add_bos_token=add_bos_token, max_length=_max_length(self))

    def count_chats(self, chats: Sequence[Sequence[Mapping[str, str]]]) -> int | None:
        """Prompt tokens of chats (lists of ``{"role", "content"}`` turns) as a local model sends them: each rendered
        through the tokenizer's chat template with the generation prompt (``LocalModel.render_chat``); without a
        template, the turns' contents alone. None without a tokenizer."""
        if self.tokenizer is None:
            return None
        if not getattr(self.tokenizer, "chat_template", None):
            return self.count([str(m["content"]) for chat in chats for m in chat])
        render = self.tokenizer.apply_chat_template
        return self.count([render(list(chat), tokenize=False, add_generation_prompt=True) for chat in chats])


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


def _options(suite: Suite, runs: int | None, variants: Sequence[str]) -> dict[str, Any]:
    """The keywords of ``suite.dry_run`` beyond the common ones, each only when it takes it: ``runs`` (suites that
    repeat their tasks) when given, ``variants`` (the asked ones among :attr:`Suite.variants`) when any applies."""
    takes = inspect.signature(suite.dry_run).parameters
    own = tuple(v for v in suite.variants if v in variants)  # the suite's order
    return {
        **({"runs": runs} if "runs" in takes and runs is not None else {}),
        **({"variants": own} if "variants" in takes and own else {}),
    }


def dry_run_rows(
    suites: Sequence[tuple[Suite, tuple[str, ...]]],
    data: Mapping[str, Path],
    tok: Tokenizer,
    *,
    limit: int | None = None,
    max_new_tokens: int | None = None,
    runs: int | None = None,
    variants: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Every suite's rows (``suites``: (suite, tasks asked for), as :func:`~thai_eval_utils.core.registry.resolve`
    gives them; ``data``: suite name -> its data folder), with a total row (``max_new_tokens``:
    ``run --max-new-tokens``; ``runs``: ``run --runs``; ``variants``: ``run --variant``, each suite given its own;
    the last two only to the suites whose ``dry_run`` takes them)."""
    rows = [
        row
        for suite, tasks in suites
        for row in suite.dry_run(
            data[suite.name],
            tok,
            tasks=tasks,
            limit=limit,
            max_new_tokens=max_new_tokens,
            **_options(suite, runs, variants),
        )
    ]
    total: dict[str, Any] = {"benchmark": "total", "task": ""}
    for col in ("documents", "requests", "fed_tokens", "tree_tokens", "generations"):
        values = [r[col] for r in rows if isinstance(r.get(col), int)]
        total[col] = sum(values) if values else None
    return [*rows, total]
